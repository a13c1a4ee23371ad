"""Versioned entry point: ``from derby_envs import derby_v0; env = derby_v0.env()``."""

from derby_envs.core.wrappers import entry_points
from derby_envs.games.derby.env import raw_env, raw_parallel_env

__all__ = ["env", "parallel_env", "raw_env", "raw_parallel_env"]

env, parallel_env = entry_points(raw_env, raw_parallel_env)
