"""The policy protocol every agent of the suite follows.

A policy maps what a player sees to a legal action::

    action = policy.act(observation, action_mask, rng)

``observation`` is the float32 vector of the env (decode it with
``game.decode_observation(observation)`` to get the named slices), ``action_mask`` the int8
legal-action mask, ``rng`` a ``numpy.random.Generator`` (all of a policy's randomness comes
from it, so tournaments are reproducible).

A policy that needs the engine state (search) sets ``needs_state = True`` and implements
``act_state(state, player, rng)``; it may only use ``state.resample_hidden(player, rng)`` and
public accessors, never the hidden parts of ``state``. The envs and the tournament call
policies through :func:`derby_envs.core.policy.choose`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from derby_envs.core.policy import UniformRandomPolicy, choose

__all__ = ["Policy", "RandomPolicy", "choose", "legal_actions"]


@runtime_checkable
class Policy(Protocol):
    name: str

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int: ...


class RandomPolicy(UniformRandomPolicy):
    """Uniformly random legal actions: the floor every agent must beat."""


def legal_actions(action_mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(action_mask)
