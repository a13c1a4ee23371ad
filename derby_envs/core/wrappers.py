"""The versioned entry points every ``<game>_v0`` module exposes, built once here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper
from pettingzoo.utils.wrappers.order_enforcing import (
    AECOrderEnforcingIterable,
    AECOrderEnforcingIterator,
)

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv


class OrderEnforcing(OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with the same checks, minus its per-step cost.

    The generic ``AECEnv.last()`` and the iterator read the agent bookkeeping through two
    ``__getattr__`` hops per attribute: about a tenth of a cheap game's AEC loop. Here they ask
    the wrapped env directly, after the same before-reset / step-in-the-loop checks.
    """

    def last(self, observe: bool = True):
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self.env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)

    def agent_iter(self, max_iter: int = 2**63) -> AECOrderEnforcingIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _Iterable(self, max_iter)

    def __str__(self) -> str:
        return str(self.env)


class _Iterable(AECOrderEnforcingIterable):
    def __iter__(self) -> AECOrderEnforcingIterator:
        return _Iterator(self.env, self.max_iter)


class _Iterator(AECOrderEnforcingIterator):
    def __next__(self) -> str:
        inner = self.env.env
        if not inner.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert self.env._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        self.env._has_updated = False
        return inner.agent_selection


def wrap_aec(env: DerbyAECEnv) -> OrderEnforcing:
    """PettingZoo's order-enforcing checks (errors for step/observe before reset).

    No ``AssertOutOfBoundsWrapper`` and no ``TerminateIllegalWrapper``: the env itself handles
    every bad action (out of range, masked, not an integer) by its ``illegal_action`` option.
    """
    return OrderEnforcing(env)


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
