"""The learner's training environments: the game's Gymnasium view with the opponent pool in the
other seats, the optional observation and hint features, and the vectorised copies MaskablePPO steps.

The learner plays the game's Gymnasium single-agent view (:class:`SingleAgentEnv`) in a random
seat every episode; the other seats are :class:`training.train.pool.PoolSeat` objects drawing
their player from the opponent pool at every reset. ``n_envs`` copies run in a ``DummyVecEnv``
or a ``SubprocVecEnv``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from derby_envs.core.info import GameInfo
from derby_envs.registry import GAMES, register_game
from training.train.config import TrainConfig
from training.train.pool import OpponentPool


def env_class(game: str) -> type:
    module, cls = GAMES[game].gym_entry.split(":")
    return getattr(importlib.import_module(module), cls)


class PoolWrapper(gymnasium.Wrapper):
    """Exposes the opponent pool to ``VecEnv.env_method`` (``add_snapshot``, ``pool_draws``)."""

    def __init__(self, env: Any, pool: OpponentPool) -> None:
        super().__init__(env)
        self.pool = pool

    def add_snapshot(self, path: str, step: int) -> int:
        self.pool.add_snapshot(path, step)
        return len(self.pool.snapshots)

    def pool_draws(self) -> dict[str, int]:
        return dict(self.pool.draws)


def with_hint_space(space: Any, num_actions: int, features: str) -> gymnasium.spaces.Box:
    """``space`` followed by a hint part of ``num_actions`` entries: value features in
    [-1, 0] (``features="values"``) or a one-hot in [0, 1]."""
    lo, hi = (-1.0, 0.0) if features == "values" else (0.0, 1.0)
    return gymnasium.spaces.Box(
        low=np.concatenate([space.low, np.full(num_actions, lo, np.float32)]),
        high=np.concatenate([space.high, np.full(num_actions, hi, np.float32)]),
        dtype=np.float32,
    )


class HintWrapper(gymnasium.ObservationWrapper):
    """Appends the hint agent's view of the learner's decision to its observation.

    ``features="action"``: the one-hot of the hint agent's choice; ``"values"``: its
    ``agents.ppo.value_features`` (one per action, in [-1, 0]). The hint agent decides for the
    learner's seat with the learner's own information (the observation, or for a state-based
    agent the state, which it may only use through ``resample_hidden``); at the end of a game
    the hint part is zero.
    """

    def __init__(self, env: Any, hint: Any, features: str = "action") -> None:
        super().__init__(env)
        self.hint = hint
        self.features = features
        self.num_actions = int(env.action_space.n)
        self.observation_space = with_hint_space(env.observation_space, self.num_actions, features)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        from agents.ppo import with_hint, with_values
        from derby_envs.core.policy import choose

        base = self.env.unwrapped
        state = base.game_state
        if state.is_terminal():
            return np.concatenate([observation, np.zeros(self.num_actions, np.float32)])
        if self.features == "values":
            return with_values(observation, self.hint, state.legal_mask(base.seat))
        h = choose(self.hint, state, base.seat, base.np_random)
        return with_hint(observation, h, self.num_actions)


class FeaturesWrapper(gymnasium.ObservationWrapper):
    """Inserts an observation feature set (:mod:`agents.features`) after the game's observation
    and before any hint part, which stays last (the residual policy reads it there)."""

    def __init__(self, env: Any, features: Any) -> None:
        super().__init__(env)
        self.features = features
        self.width = int(env.unwrapped.observation_space.shape[0])  # the game's own part
        low, high = env.observation_space.low, env.observation_space.high
        w = self.width
        self.observation_space = gymnasium.spaces.Box(
            low=np.concatenate([low[:w], features.low, low[w:]]),
            high=np.concatenate([high[:w], features.high, high[w:]]),
            dtype=np.float32,
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return self.features.append(observation, self.width)


def build_pool(config: Any, game: Any, snapshots: list[dict], root: Path) -> OpponentPool:
    """The opponent pool of a config's ``opponents`` section (MaskablePPO's TrainConfig and
    RLlib's RLlibTrainConfig share it)."""
    sp = config.opponents.self_play
    return OpponentPool(
        game,
        [dataclasses.asdict(m) for m in config.opponents.pool],
        snapshot_weight=sp.weight if sp.enabled else 0.0,
        max_active=sp.max_active,
        sampling=sp.sampling,
        snapshot_deterministic=sp.deterministic,
        snapshots=snapshots,
        root=root,
    )


def make_env(config: TrainConfig, snapshots: list[dict], root: str) -> Any:
    """One training env (top-level so that SubprocVecEnv workers can rebuild it)."""
    import torch
    from stable_baselines3.common.monitor import Monitor

    torch.set_num_threads(1)  # snapshot opponents run numpy; keep workers from oversubscribing
    game = config.make_game()
    pool = build_pool(config, game, snapshots, Path(root))
    env = env_class(config.game)(
        opponents=pool.seats(game.num_players - 1, config.opponents.draw),
        learner_seat=config.learner_seat,
        reward_mode=config.reward_mode,
        **config.game_params,
    )
    if config.hint is not None:
        from agents.registry import make_policy

        env = HintWrapper(env, make_policy(config.hint, game), config.hint_features)
    if config.observation_features is not None:
        from agents.features import ObservationFeatures

        env = FeaturesWrapper(env, ObservationFeatures(game, config.observation_features))
    return Monitor(PoolWrapper(env, pool))


def make_worker_env(info: GameInfo, config: TrainConfig, snapshots: list[dict], root: str) -> Any:
    """:func:`make_env` in a fresh worker process: registers the game's record first.

    A ``SubprocVecEnv`` worker re-imports the registry, which knows only the shipped games; a
    game added with ``register_game`` (a plugin) would be unknown there. Registering the same
    record again is a no-op, so the shipped games pass through unchanged.
    """
    register_game(info)
    return make_env(config, snapshots, root)


class BatchPool:
    """The opponent pool for the batched env (``vec_env: batch``): at each episode's start,
    every opponent seat of the game (``draw="per_seat"``) or all of them together
    (``"per_episode"``) get a member drawn with the pool's probabilities; the members' loaded
    policies decide in batches (``derby_envs.core.vector.FixedSeats`` documents the shape).
    Draws come from a generator of its own, seeded from the run's seed."""

    def __init__(self, pool: OpponentPool, num_opponents: int, draw: str, seed: int) -> None:
        self.pool = pool
        self.num_opponents = num_opponents
        self.per_episode = draw == "per_episode"
        self.rng = np.random.default_rng([seed, 0x9E3779B9])
        self.policies: list[Any] = []
        self._index: dict[str, int] = {}  # member key -> index in policies

    def _policy_index(self, member: Any) -> int:
        key = f"{member.spec}|{member.params}"
        k = self._index.get(key)
        if k is None:
            k = self._index[key] = len(self.policies)
            self.policies.append(self.pool.policy(member))
        return k

    def draw(self, which: np.ndarray, members: np.ndarray) -> None:
        rows = np.flatnonzero(which)
        if rows.size == 0:
            return
        pool_members, p = self.pool.members()
        cols = 1 if self.per_episode else self.num_opponents
        picks = self.rng.choice(len(pool_members), size=(rows.size, cols), p=p)
        index = np.array([self._policy_index(m) for m in pool_members], np.int64)
        members[rows] = index[picks]  # one column broadcasts to every seat
        for k, count in zip(*np.unique(picks, return_counts=True), strict=True):
            label = pool_members[k].label
            self.pool.draws[label] = self.pool.draws.get(label, 0) + int(count) * (
                self.num_opponents if self.per_episode else 1
            )

    def add_snapshot(self, path: str, step: int) -> int:
        self.pool.add_snapshot(path, step)
        return len(self.pool.snapshots)

    def pool_draws(self) -> dict[str, int]:
        return dict(self.pool.draws)


def make_batch_vec_env(config: TrainConfig, snapshots: list[dict], root: Path) -> Any:
    """``vec_env: batch``: ``n_envs`` games on the game's batched engine as one SB3 VecEnv
    (``derby_envs.core.sb3.DerbyVecEnv``) with the opponent pool in batches, the observation
    features and the hint part appended as the single-game wrappers append them
    (``training.train.vec_features``), under ``VecMonitor`` (episode statistics, as ``Monitor``
    gives the other vec envs)."""
    from stable_baselines3.common.vec_env import VecMonitor

    from derby_envs.core.sb3 import DerbyVecEnv

    game = config.make_game()
    pool = build_pool(config, game, snapshots, Path(root))
    seats = BatchPool(pool, game.num_players - 1, config.opponents.draw, config.seed)
    env = DerbyVecEnv(
        config.game,
        num_envs=config.n_envs,
        opponents=seats,
        learner_seat=config.learner_seat,
        reward_mode=config.reward_mode,
        seed=config.seed,
        **config.game_params,
    )
    if config.observation_features is not None:
        from agents.features import ObservationFeatures
        from training.train.vec_features import VecFeatures

        env = VecFeatures(env, ObservationFeatures(game, config.observation_features))
    if config.hint is not None:  # last: the residual policy reads the hint part at the end
        from agents.registry import make_policy
        from training.train.vec_features import VecHint

        hint = make_policy(config.hint, game)
        env = VecHint(env, hint, config.hint_features, game.observation_size, config.seed)
    return VecMonitor(env)


def make_vec_env(config: TrainConfig, snapshots: list[dict], root: Path) -> Any:
    """``config.n_envs`` training envs in a ``DummyVecEnv``, (``vec_env: subproc``) a
    ``SubprocVecEnv`` whose workers get the game's :class:`GameInfo` (it pickles) to register,
    or (``vec_env: batch``) the batched engine (:func:`make_batch_vec_env`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if config.vec_env == "batch":
        return make_batch_vec_env(config, snapshots, root)
    if config.vec_env == "subproc":
        info = GAMES[config.game]
        fns = [
            functools.partial(make_worker_env, info, config, list(snapshots), str(root))
            for _ in range(config.n_envs)
        ]
        return SubprocVecEnv(fns)
    fns = [
        functools.partial(make_env, config, list(snapshots), str(root))
        for _ in range(config.n_envs)
    ]
    return DummyVecEnv(fns)
