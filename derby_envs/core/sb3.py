"""SuperSuit's vectorised PettingZoo envs for sb3-contrib's MaskablePPO.

MaskablePPO asks a VecEnv for ``env_method("action_masks")`` and ``has_attr("action_masks")``;
SuperSuit's SB3 wrapper (``concat_vec_envs_v1(..., base_class="stable_baselines3")``) has
neither, and its ``seed`` (which SB3 calls when a model is given a seed) fails on SuperSuit's
``ConcatVecEnv``. :class:`VecActionMasks` keeps the masks of the latest observations (read from
``info["action_mask"]`` of the flat view, see :mod:`derby_envs.core.flat`), answers both, and
passes a seed to the next reset::

    import supersuit as ss
    from derby_envs.core.sb3 import VecActionMasks
    vec = ss.pettingzoo_env_to_vec_env_v1(flat_observation_v0(kentucky_derby_v0.parallel_env()))
    vec = VecActionMasks(ss.concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="stable_baselines3"))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper


class VecActionMasks(VecEnvWrapper):
    """An SB3 VecEnv whose ``action_masks`` are the masks in the latest infos."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self._masks = np.ones((self.num_envs, self.action_space.n), dtype=bool)
        self._seed: int | None = None

    def _keep(self, infos: Sequence[dict[str, Any]]) -> None:
        for i, info in enumerate(infos):
            if "action_mask" in info:
                self._masks[i] = np.asarray(info["action_mask"], dtype=bool)

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seed = seed
        return [None if seed is None else seed + i for i in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        inner = getattr(self.venv, "venv", None)  # SuperSuit's ConcatVecEnv, which takes a seed
        if self._seed is not None and inner is not None:
            obs, infos = inner.reset(seed=self._seed)
            self.venv.reset_infos = infos
            self._seed = None
        else:
            obs = self.venv.reset()
        self._keep(getattr(self.venv, "reset_infos", []))
        return obs

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self._keep(infos)
        return obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        return self._masks.copy()

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or self.venv.has_attr(attr_name)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any):
        if method_name == "action_masks":
            return list(self._masks[self._get_indices(indices)])
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)

    def _get_indices(self, indices: Any) -> Any:
        if indices is None:
            return slice(None)
        return [indices] if isinstance(indices, int) else list(indices)
