"""Observation features for a whole batch (``vec_env: batch`` with ``observation_features``).

The batched counterpart of :class:`training.train.envs.FeaturesWrapper`: a feature set of
:mod:`agents.features` computes rows in, rows out, so one call covers the ``(N, obs_dim)``
observations of a step. Its own module because it subclasses SB3's ``VecEnvWrapper``: the
RLlib trainer imports :mod:`training.train.envs` without SB3.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper


class VecFeatures(VecEnvWrapper):
    """``venv``'s observations with ``features`` (``agents.features.ObservationFeatures``)
    appended, terminal observations included (SB3 bootstraps truncated episodes from them);
    ``action_masks`` passes through batched."""

    def __init__(self, venv: VecEnv, features: Any) -> None:
        low, high = venv.observation_space.low, venv.observation_space.high
        space = gymnasium.spaces.Box(
            low=np.concatenate([low, features.low]),
            high=np.concatenate([high, features.high]),
            dtype=np.float32,
        )
        super().__init__(venv, observation_space=space)
        self.features = features

    def reset(self) -> np.ndarray:
        return self.features.append(self.venv.reset())

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            if "terminal_observation" in info:
                info["terminal_observation"] = self.features.append(info["terminal_observation"])
        return self.features.append(obs), rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        return self.venv.action_masks()
