"""Flat-Box views: the observation vector as the observation, the action mask in ``info``.

The suite's envs follow PettingZoo's classic convention (``{"observation", "action_mask"}``
Dict observations). Libraries whose wrappers need a Box observation (SuperSuit's
``flatten_v0``, ``normalize_obs_v0``, ``frame_stack_v1``, ``dtype_v0``...; AgileRL) take these
views instead; the mask travels in ``info["action_mask"]`` (AgileRL's convention, and where
``pettingzoo.test.seed_test`` looks too)::

    from derby_envs import kentucky_derby_v0
    from derby_envs.core.flat import flat_observation_v0
    env = flat_observation_v0(kentucky_derby_v0.parallel_env())      # or an AEC env()
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper, BaseWrapper


def flat_observation_v0(env: AECEnv | ParallelEnv) -> FlatAEC | FlatParallel:
    """The flat-Box view of an AEC or Parallel env of the suite."""
    if isinstance(env, ParallelEnv):
        return FlatParallel(env)
    if isinstance(env, AECEnv):
        return FlatAEC(env)
    raise TypeError(f"expected a PettingZoo AEC or Parallel env, got {type(env).__name__}")


def _box(env: Any, agent: str) -> gymnasium.spaces.Box:
    return env.observation_space(agent)["observation"]


class FlatParallel(BaseParallelWrapper):
    """Parallel env with Box observations; ``info["action_mask"]`` holds each agent's mask."""

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return _box(self.env, agent)

    @staticmethod
    def _split(obs: dict, infos: dict) -> tuple[dict, dict]:
        flat = {a: o["observation"] for a, o in obs.items()}
        infos = {a: {**infos.get(a, {}), "action_mask": o["action_mask"]} for a, o in obs.items()}
        return flat, infos

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._split(obs, infos)

    def step(self, actions: dict[str, Any]):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        obs, infos = self._split(obs, infos)
        return obs, rewards, terms, truncs, infos


class FlatAEC(BaseWrapper):
    """AEC env with Box observations; ``infos[agent]["action_mask"]`` holds the mask."""

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return _box(self.env, agent)

    def observe(self, agent: str) -> np.ndarray:
        return self.env.observe(agent)["observation"]

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        return {
            a: {**info, "action_mask": self.env.observe(a)["action_mask"]}
            for a, info in self.env.infos.items()
        }
