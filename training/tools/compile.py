"""``derby-envs compile``: compile the numba kernels now and store them in numba's cache.

numba compiles a kernel at its first call and caches the machine code beside the module
(``__pycache__``), so only the first process after an install or a change pays for it. That
first payment is tens of seconds per game, and processes started together pay it together:
a ``SubprocVecEnv`` of fresh workers, an RLlib cluster, or test workers. Compiling once before
starting them makes every one of them load the cache instead. It first drops the caches of
kernels whose sources (their module or a module it imports) changed since they were compiled:
numba itself only notices a change of the kernel's own file.

The kernels are compiled by using them, through the public APIs: for each game the batched
vector env (``gymnasium.make_vec``) against random seats and against each of the game's
heuristics (their ``act_batch`` kernels), the single-game env against each heuristic (the
kernels of their one-game decisions), and a batched game saved to a state and loaded back. Kernels compiled elsewhere (a search's race model,
an unusual parameter set's array types) still compile at their first call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import gymnasium
import numpy as np

import derby_envs  # noqa: F401 - registers the gymnasium ids
from agents.registry import game_policies
from derby_envs.core import kernel_cache
from derby_envs.core.batch import batch_engine
from derby_envs.registry import available_games, game_info, make_game

#: environment steps per compiling run: enough for whole games to end and auto-reset
VECTOR_STEPS = 300
SINGLE_STEPS = 40


def _masked_random(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def _use_vector_env(gym_id: str, opponents: str, rng: np.random.Generator) -> None:
    env = gymnasium.make_vec(gym_id, num_envs=4, opponents=opponents)
    try:
        _, info = env.reset(seed=0)
        for _ in range(VECTOR_STEPS):
            _, _, _, _, info = env.step(_masked_random(rng, info["action_mask"]))
    finally:
        env.close()


def _use_single_env(gym_id: str, opponents: str, rng: np.random.Generator) -> None:
    env = gymnasium.make(gym_id, opponents=opponents)
    try:
        _, info = env.reset(seed=0)
        for _ in range(SINGLE_STEPS):
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                _, info = env.reset()
    finally:
        env.close()


def _use_saved_states(game: str) -> None:
    """A batched game to a reference state and back (the kernels of ``to_state`` /
    ``load_state``)."""
    engine = batch_engine(make_game(game), 2)
    engine.reset(np.arange(2, dtype=np.uint64), np.ones(2, np.bool_))
    engine.load_state(1, engine.to_state(0))


def _use_compiled_playouts(game: str) -> None:
    """The compiled playouts a heuristic offers search agents (ISMCTS's rollout):
    a short one from a fresh game."""
    from agents.registry import make_policy

    g = make_game(game)
    for name in sorted(game_policies(game)):
        make = getattr(make_policy(name, g), "compiled_playouts", None)
        playouts = make() if make is not None else None
        if playouts is not None:
            playouts.returns(g.new_initial_state(0), 4, g.reward_modes[0], np.random.default_rng(0))


def compile_game(game: str) -> float:
    """Compile (or load from the cache) the kernels ``game``'s envs and heuristics use;
    the seconds it took."""
    t0 = time.perf_counter()
    gym_id = game_info(game).gym_id
    rng = np.random.default_rng(0)
    _use_saved_states(game)
    _use_compiled_playouts(game)
    for opponents in ("random", *sorted(game_policies(game))):
        _use_vector_env(gym_id, opponents, rng)
        if opponents != "random":
            _use_single_env(gym_id, opponents, rng)
    return time.perf_counter() - t0


def compile_kernels(
    games: Iterable[str] | None = None, progress: Callable[[str], None] = print
) -> dict[str, float]:
    """Compile every game's kernels (``games``: default all); seconds per game. Caches made
    before a module they depend on changed are dropped first (:mod:`derby_envs.core.kernel_cache`)."""
    for module in kernel_cache.refresh():
        progress(f"  stale cache dropped: {module.parent.name}/{module.name}")
    seconds = {}
    for game in games if games is not None else available_games():
        seconds[game] = compile_game(game)
        progress(f"  {game:<18} {seconds[game]:7.1f} s")
    return seconds
