"""Stable-Baselines3 ``VecEnv`` faces: the batched envs (:class:`DerbyVecEnv`) and SuperSuit's.

:class:`DerbyVecEnv` is N single-agent views on the game's batched engine
(``derby_envs.core.vector``) as an SB3 ``VecEnv``: ``MaskablePPO("MlpPolicy", DerbyVecEnv(
"derby", num_envs=64, num_players=4, opponents="derby_exchange"))`` trains with no other code.
SB3's contract: the ending step resets the sub-env in the same call, its last observation in
``infos[i]["terminal_observation"]`` (and ``"TimeLimit.truncated"``); ``action_masks()`` (and
``env_method("action_masks")``, which sb3-contrib calls) answer with the whole ``(N, A)`` mask
from memory, no per-env round trip.

SuperSuit's vectorised PettingZoo envs for sb3-contrib's MaskablePPO:

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

from derby_envs.core.vector import LearnerBatch, resolve_seeds


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


class DerbyVecEnv(VecEnv):
    """N single-agent views of a game as an SB3 ``VecEnv`` (same-step autoreset).

    Args:
        game: the game's registry name.
        num_envs: N.
        seed: the first reset's seeds (``seed + i`` for env ``i``); ``VecEnv.seed`` also works.
        **kwargs: as ``derby_envs.core.vector.DerbyVectorEnv`` (opponents, learner_seat,
            reward_mode, illegal_action, illegal_reward, max_cycles, compiled) and the game's
            parameters.
    """

    render_mode = None

    def __init__(
        self, game: str, num_envs: int = 1, seed: int | None = None, **kwargs: Any
    ) -> None:
        import gymnasium

        from derby_envs.registry import make_game

        names = (
            "opponents",
            "learner_seat",
            "reward_mode",
            "illegal_action",
            "illegal_reward",
            "max_cycles",
            "compiled",
        )
        options = {k: kwargs.pop(k) for k in names if k in kwargs}
        g = make_game(game, **kwargs)
        self.batch = LearnerBatch(g, num_envs, **options)
        self.game = g
        low, high = g.observation_bounds()
        super().__init__(
            self.batch.num_envs,
            gymnasium.spaces.Box(low=low, high=high, dtype=np.float32),
            gymnasium.spaces.Discrete(g.num_actions),
        )
        self._actions: np.ndarray | None = None
        self._started = False
        if seed is not None:
            self.seed(seed)

    def reset(self) -> np.ndarray:
        b = self.batch
        if any(s is not None for s in self._seeds) or not self._started:
            b.seed(self._seeds)
        self._reset_seeds()
        self._started = True
        b.illegal[:] = False
        b.start(b._all)
        b.observe()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return b.obs.copy()

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seeds = resolve_seeds(seed, self.num_envs)
        return list(self._seeds)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        b = self.batch
        b.step(self._actions, b._all)
        ended = b.terminated | b.truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if ended.any():
            b.observe()
            for i in np.flatnonzero(ended):
                infos[i]["terminal_observation"] = b.obs[i].copy()
                infos[i]["TimeLimit.truncated"] = bool(b.truncated[i])
                infos[i]["winner"] = bool(b.winner[i])
            b.start(ended)
        b.observe()
        return b.obs.copy(), b.rewards.astype(np.float32), ended, infos

    def action_masks(self) -> np.ndarray:
        """``(N, A)`` bool masks of the latest observations."""
        return self.batch.masks.astype(bool)

    def close(self) -> None:
        pass

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or hasattr(self, attr_name)

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            return [None] * self.num_envs
        value = getattr(self, attr_name)
        return [value] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any):
        """``action_masks`` per env; a method of the opponent seats' provider (a training
        pool's ``add_snapshot``, ``pool_draws``) is called once: its result stands in the first
        env's place (an empty dict, or the same value, in the others)."""
        rows = self._indices(indices)
        if method_name == "action_masks":
            return list(self.batch.masks[rows].astype(bool))
        method = getattr(self.batch.seats, method_name, None)
        if method is None:
            raise AttributeError(f"DerbyVecEnv has no per-env method {method_name!r}")
        result = method(*args, **kwargs)
        rest = {} if isinstance(result, dict) else result
        return [result] + [rest] * (len(rows) - 1)

    def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)
