"""Versioned entry point: ``from derby_envs import derby_v0; env = derby_v0.env()``."""

from derby_envs.core.wrappers import wrap_aec
from derby_envs.games.derby.env import raw_env

__all__ = ["env", "raw_env"]


def env(**kwargs):
    """The AEC env with PettingZoo's standard order-enforcing wrapper."""
    return wrap_aec(raw_env(**kwargs))
