"""Observation features and hint parts for a whole batch (``vec_env: batch`` with
``observation_features`` or ``hint``).

The batched counterparts of :class:`training.train.envs.FeaturesWrapper` and
:class:`~training.train.envs.HintWrapper`: a feature set of :mod:`agents.features` computes
rows in, rows out, so one call covers the ``(N, obs_dim)`` observations of a step; the hint
agent's values come from its ``values_batch`` where it has one (the Derby heuristics), else it
decides row by row from each game's observation. Their own module because they subclass
SB3's ``VecEnvWrapper``: the RLlib trainer imports :mod:`training.train.envs` without SB3.
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


class VecHint(VecEnvWrapper):
    """``venv``'s observations followed by the hint agent's view of each game's learner
    decision, as :class:`training.train.envs.HintWrapper` appends it game by game and
    ``agents.ppo.PPOPolicy.network_input`` rebuilds it at play time: ``features="values"``,
    the agent's ``value_features``; ``"action"``, the one-hot of its move (drawn from this
    wrapper's own generator, seeded with ``seed``). The agent reads the game's own part of the
    observation (the first ``width`` entries; observation features, appended before this
    wrapper, come after it) and the row's action mask, so it must decide from observations
    (``needs_state`` agents cannot: the config check refuses them). Terminal observations get
    a zero hint part, as ``HintWrapper`` gives at the end of a game. Value features of an
    agent with ``values_batch`` (the Derby heuristics) come from one call for all the games
    (their compiled race model over the rows, split over threads); otherwise one hint decision
    per game and step, in Python."""

    def __init__(self, venv: VecEnv, hint: Any, features: str, width: int, seed: int) -> None:
        from training.train.envs import with_hint_space

        self.num_actions = int(venv.action_space.n)
        space = with_hint_space(venv.observation_space, self.num_actions, features)
        super().__init__(venv, observation_space=space)
        self.hint, self.features, self.width = hint, features, width
        self.scale = float(getattr(hint, "value_scale", 1.0))
        self.rng = np.random.default_rng(seed)

    def _with_hint(self, obs: np.ndarray) -> np.ndarray:
        from agents.ppo import hint_value_features, value_features

        masks = self.venv.action_masks()
        out = np.zeros((len(obs), obs.shape[1] + self.num_actions), np.float32)
        out[:, : obs.shape[1]] = obs
        part = out[:, obs.shape[1] :]
        if self.features == "values" and hasattr(self.hint, "values_batch"):
            part[:] = hint_value_features(self.hint, out[:, : self.width], masks)
            return out
        for i in range(len(obs)):
            observation, mask = out[i, : self.width], masks[i]
            if self.features == "values":
                values = self.hint.action_values(observation, mask)
                part[i] = value_features(values, mask, self.scale)
            else:
                part[i, int(self.hint.act(observation, mask, self.rng))] = 1.0
        return out

    def reset(self) -> np.ndarray:
        return self._with_hint(self.venv.reset())

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            if "terminal_observation" in info:
                last = info["terminal_observation"]
                info["terminal_observation"] = np.concatenate(
                    [last, np.zeros(self.num_actions, np.float32)]
                )
        return self._with_hint(obs), rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        return self.venv.action_masks()
