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

from typing import Any, Protocol, runtime_checkable

import numpy as np

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.params import Param
from derby_envs.core.policy import UniformRandomPolicy, choose

__all__ = ["Policy", "RandomPolicy", "choose", "legal_actions", "option_policy"]


@runtime_checkable
class Policy(Protocol):
    name: str

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int: ...


#: the ``fast`` option of dd_tactical's playouts: True, False or None (wherever numba is)
FAST = Param(
    "fast", None, bool, "the compiled path (None: wherever numba is installed)", allow_none=True
)


class RandomPolicy(UniformRandomPolicy):
    """Uniformly random legal actions: the floor every agent must beat."""


def legal_actions(action_mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(action_mask)


def option_policy(spec: Any, game: Any, option: str, owner: str) -> Any:
    """A policy a search is given as an option (``rollout``, ``prior``, ``base``...): a name
    (with options, ``"derby_exchange:deny=1"``) or a policy object; ``None`` or ``"random"``
    give ``None``, the search's built-in random play. Another search agent is refused (far too
    slow inside a search), and so is anything that is not a policy, with an
    ``InvalidParameterError`` naming ``owner``'s option."""
    if spec is None or spec == "random":
        return None
    if isinstance(spec, str):
        from agents.registry import is_search, make_policy  # late: the registry imports us

        if is_search(spec, game.name):
            raise InvalidParameterError(
                f"{owner} option {option!r}: {spec!r} is a search agent, far too slow inside "
                "a search; use 'random' or a heuristic"
            )
        try:
            return make_policy(spec, game)
        except (TypeError, InvalidParameterError) as exc:
            raise InvalidParameterError(f"{owner} option {option!r}: {exc}") from None
    if not hasattr(spec, "act") and not hasattr(spec, "act_state"):
        raise InvalidParameterError(
            f"{owner} option {option!r}: {spec!r} is neither a policy name nor a policy object"
        )
    return spec
