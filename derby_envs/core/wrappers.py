"""The standard PettingZoo wrapper stack every ``env()`` entry point applies."""

from __future__ import annotations

from pettingzoo.utils import wrappers

from derby_envs.core.aec import DerbyAECEnv


def wrap_aec(env: DerbyAECEnv):
    """PettingZoo's order-enforcing wrapper (errors for step/observe before reset).

    No ``AssertOutOfBoundsWrapper`` and no ``TerminateIllegalWrapper``: the env itself handles
    every bad action (out of range or masked) by its ``illegal_action`` option, with an error
    that names the legal actions.
    """
    return wrappers.OrderEnforcingWrapper(env)
