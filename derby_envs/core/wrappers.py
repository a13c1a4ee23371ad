"""The versioned entry points every ``<game>_v0`` module exposes, built once here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pettingzoo.utils import wrappers

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv


def wrap_aec(env: DerbyAECEnv):
    """PettingZoo's order-enforcing wrapper (errors for step/observe before reset).

    No ``AssertOutOfBoundsWrapper`` and no ``TerminateIllegalWrapper``: the env itself handles
    every bad action (out of range, masked, not an integer) by its ``illegal_action`` option.
    """
    return wrappers.OrderEnforcingWrapper(env)


def entry_points(
    raw_env: type[DerbyAECEnv], raw_parallel_env: type[DerbyParallelEnv]
) -> tuple[Callable[..., Any], Callable[..., DerbyParallelEnv]]:
    """``env()`` and ``parallel_env()`` of a game, with PettingZoo's classic defaults.

    Both default to ``illegal_action="penalize"`` (an illegal move ends the game with a penalty,
    as PettingZoo's ``TerminateIllegalWrapper``), so unmasked samplers such as PettingZoo's own
    seed tests run; pass ``illegal_action="raise"`` for the strict mode that names the legal
    actions and leaves the state unchanged (the ``raw_env`` class default).
    """
    name = raw_env.metadata["name"]

    def env(**kwargs: Any):
        kwargs.setdefault("illegal_action", "penalize")
        return wrap_aec(raw_env(**kwargs))

    def parallel_env(**kwargs: Any) -> DerbyParallelEnv:
        kwargs.setdefault("illegal_action", "penalize")
        return raw_parallel_env(**kwargs)

    env.__doc__ = (
        f"{name}: the AEC env (``{raw_env.__name__}``, order-enforcing wrapper), "
        f"illegal_action='penalize' unless given.\n\n{raw_env.__doc__}"
    )
    parallel_env.__doc__ = (
        f"{name}: the native Parallel env, illegal_action='penalize' unless given.\n\n"
        f"{raw_parallel_env.__doc__}"
    )
    return env, parallel_env
