"""``derby-envs bench``'s batched rows: the vector envs against the single view and PGX.

Measured in one run, random legal play everywhere (the learner's action drawn uniformly from
the mask the env shows):

* ``vector``: ``gymnasium.make_vec(id, num_envs=N)`` (the native batched env) at each N of
  :data:`SIZES`: learner steps/s and **decisions/s** (every player's move counts as one, as
  PGX counts steps: the learner's and the opponents' moves the engine applied);
* ``sync``: Gymnasium's ``SyncVectorEnv`` over N single views (``vectorization_mode="sync"``),
  the same loop; ``speedup`` = vector steps/s over sync steps/s at the same N;
* ``pgx``: PGX's ``connect_four`` (JAX, ``vmap``-ed ``step`` with auto-reset, one jitted call a
  step) at the same N, where ``pgx`` is installed (the ``bench`` extra; ``make bench``);
  ``ratio_to_pgx`` = our decisions/s over PGX's steps/s;
* ``field``: the vector env at N = 256 against a field of the game's strongest heuristic
  (``agents.registry.strongest_heuristic``; a game without one has no row), and
  the single view against the same field (``speedup`` the ratio);
* ``bytes_per_game``: the batched state (engine, generators, buffers) per game.

Rates are medians of ``repeats`` windows of ``seconds`` each, after one untimed warm-up step.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np

from derby_envs.core import pcg64
from derby_envs.core.batch import random_legal
from derby_envs.core.policy import UniformRandomPolicy
from derby_envs.registry import game_info

SIZES = (1, 64, 1024, 8192)
QUICK_SIZES = (1, 64)
FIELD_SIZE = 256


class _Sampler:
    """Uniform legal actions for N masks from N generator rows (one compiled call)."""

    def __init__(self, n: int, seed: int = 0) -> None:
        self.rows = np.zeros((n, pcg64.WORDS), np.uint64)
        pcg64.seed_rows(self.rows, np.arange(seed, seed + n, dtype=np.uint64), np.ones(n, np.bool_))
        self.players = np.zeros(n, np.int64)
        self.out = np.zeros(n, np.int64)

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        random_legal(np.ascontiguousarray(masks, np.int8), self.players, self.rows, self.out)
        return self.out


def _windows(
    step: Callable[[], int],
    seconds: float,
    repeats: int,
    on_start: Callable[[], None] = lambda: None,
) -> tuple[float, int]:
    """Median units/s over ``repeats`` windows of ``step() -> units`` (after one untimed
    call, then ``on_start()``), and the units of all windows."""
    rates, total = [], 0
    step()
    on_start()
    for _ in range(repeats):
        u = 0
        t0 = time.perf_counter()
        end = t0 + seconds
        while time.perf_counter() < end:
            u += step()
        rates.append(u / (time.perf_counter() - t0))
        total += u
    return statistics.median(rates), total


def _count_moves(env: Any) -> list[int]:
    """Count the moves the batched engine applies (learner's and opponents')."""
    engine = env.unwrapped.batch.engine
    apply = engine.apply
    moves = [0]

    def counted(players: np.ndarray, actions: np.ndarray) -> None:
        moves[0] += int((players >= 0).sum())
        apply(players, actions)

    engine.apply = counted
    return moves


class _CountedRandom(UniformRandomPolicy):
    """Random opponents that go through ``act_batch`` and ``apply`` (the same draws as the
    plain ones, whose moves the engine makes in one uncounted kernel call)."""

    def act_batch(self, engine, players, rngs, out) -> None:
        super().act_batch(engine, players, rngs, out)


def decisions_per_step(game: str, n: int, size: int, steps: int, **kw: Any) -> float:
    """Moves of all players per learner step over ``steps`` steps of the loop
    :func:`vector_rate` times (same seeds, same games), replayed with counted opponents."""
    opponents = kw.pop("opponents", None)
    env = gymnasium.make_vec(
        game_info(game).gym_id,
        num_envs=size,
        num_players=n,
        opponents=_CountedRandom() if opponents is None else opponents,
        **kw,
    )
    sample = _Sampler(size)
    moves = _count_moves(env)
    info = env.reset(seed=0)[1]
    for _ in range(steps):
        info = env.step(sample(info["action_mask"]))[4]
    env.close()
    return moves[0] / (steps * size)


def vector_rate(
    game: str, n: int, size: int, seconds: float, repeats: int, count: bool = True, **kw: Any
) -> dict:
    """The native vector env: learner steps/s and (``count``) decisions/s at ``size`` envs
    (the decisions per step counted in an untimed replay: :func:`decisions_per_step`)."""
    env = gymnasium.make_vec(game_info(game).gym_id, num_envs=size, num_players=n, **kw)
    sample = _Sampler(size)
    _, info = env.reset(seed=0)
    state = {"info": info}

    def step() -> int:
        state["info"] = env.step(sample(state["info"]["action_mask"]))[4]
        return size

    steps, _ = _windows(step, seconds, repeats)
    per_step = decisions_per_step(game, n, size, max(64, 20_000 // size), **kw) if count else 1.0
    engine = env.unwrapped.batch
    nbytes = sum(
        a.nbytes
        for obj in (engine, engine.engine)
        for a in vars(obj).values()
        if isinstance(a, np.ndarray)
    )
    env.close()
    return {
        "steps_per_s": steps,
        "decisions_per_step": per_step,
        "decisions_per_s": steps * per_step,
        "bytes_per_game": nbytes / size,
    }


def sync_rate(game: str, n: int, size: int, seconds: float, repeats: int, **kw: Any) -> float:
    """Gymnasium's SyncVectorEnv over ``size`` single views: learner steps/s."""
    env = gymnasium.make_vec(
        game_info(game).gym_id, num_envs=size, vectorization_mode="sync", num_players=n, **kw
    )
    sample = _Sampler(size)
    _, info = env.reset(seed=0)
    state = {"info": info}

    def step() -> int:
        state["info"] = env.step(sample(state["info"]["action_mask"]).copy())[4]
        return size

    steps, _ = _windows(step, seconds, repeats)
    env.close()
    return steps


def pgx_rate(size: int, seconds: float, repeats: int) -> float | None:
    """PGX connect_four steps/s at ``size`` games (None where pgx is not installed)."""
    try:
        import jax
        import jax.numpy as jnp
        import pgx
        from pgx.experimental import auto_reset
    except ImportError:
        return None
    env = pgx.make("connect_four")
    init = jax.jit(jax.vmap(env.init))
    step_all = jax.vmap(auto_reset(env.step, env.init))

    @jax.jit
    def one(state, key):
        key, k1, k2 = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(k1, logits, axis=-1)
        return step_all(state, action, jax.random.split(k2, size)), key

    box = {"key": jax.random.PRNGKey(0)}
    box["state"] = init(jax.random.split(box["key"], size))

    def step() -> int:
        box["state"], box["key"] = one(box["state"], box["key"])
        jax.block_until_ready(box["state"])
        return size

    return _windows(step, seconds, repeats)[0]


def single_rate(game: str, n: int, seconds: float, repeats: int, **kw: Any) -> float:
    """The single Gymnasium view (one env, no vector wrapper): learner steps/s."""
    env = gymnasium.make(game_info(game).gym_id, num_players=n, **kw)
    rng = np.random.default_rng(0)
    box = {"done": True}

    def step() -> int:
        if box["done"]:
            env.reset(seed=int(rng.integers(1 << 30)))
        legal = np.flatnonzero(env.unwrapped.action_masks())
        _, _, term, trunc, _ = env.step(int(legal[rng.integers(legal.size)]))
        box["done"] = term or trunc
        return 1

    return _windows(step, seconds, repeats)[0]


def vector_rows(
    games: list[str],
    players: Callable[[str], tuple[int, ...]],
    quick: bool,
    repeats: int,
    seconds: float,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every batched row (see the module docstring), JSON-ready."""
    sizes = QUICK_SIZES if quick else SIZES
    pgx = {size: pgx_rate(size, seconds, repeats) for size in sizes}
    for size, rate in pgx.items():
        if rate is not None:
            progress(f"  pgx     connect_four             N={size:<5} {rate:>12,.0f} steps/s")
    rows = []
    for g in games:
        for n in players(g):
            for size in sizes:
                v = vector_rate(g, n, size, seconds, repeats)
                s = sync_rate(g, n, size, seconds, repeats)
                row = {
                    "env": g,
                    "players": n,
                    "num_envs": size,
                    **v,
                    "sync_steps_per_s": s,
                    "speedup": v["steps_per_s"] / s,
                    "pgx_steps_per_s": pgx[size],
                    "ratio_to_pgx": None if pgx[size] is None else v["decisions_per_s"] / pgx[size],
                }
                rows.append(row)
                progress(
                    f"  vector  {g:<18} {n:>2}  N={size:<5} {v['steps_per_s']:>11,.0f} steps/s "
                    f"{v['decisions_per_s']:>11,.0f} decisions/s  x{row['speedup']:.0f} sync"
                    + ("" if pgx[size] is None else f"  {row['ratio_to_pgx']:.2f}x pgx")
                )
    from agents.registry import strongest_heuristic

    fields = []
    for g in games:
        field = strongest_heuristic(g)
        if field is None:
            continue
        n = players(g)[len(players(g)) // 2]
        size = 32 if quick else FIELD_SIZE
        v = vector_rate(g, n, size, seconds, repeats, count=False, opponents=field)
        s = single_rate(g, n, seconds, repeats, opponents=field)
        fields.append(
            {
                "env": g,
                "players": n,
                "num_envs": size,
                "field": field,
                "steps_per_s": v["steps_per_s"],
                "single_steps_per_s": s,
                "speedup": v["steps_per_s"] / s,
            }
        )
        progress(
            f"  field   {g:<18} {n:>2}  N={size:<5} vs {field:<15} "
            f"{v['steps_per_s']:>9,.0f} steps/s  x{v['steps_per_s'] / s:.1f} the single view"
        )
    return {"sizes": list(sizes), "random_play": rows, "field": fields}


def null_vec_env(game: Any, n_envs: int, episode: int = 20) -> Any:
    """An SB3 VecEnv of the game's shapes that does nothing (every action legal, episodes of
    ``episode`` steps): what the learner alone can take. Its observations are fixed random
    points within the game's bounds and each episode ends with a random reward of +1 or -1:
    with all-zero inputs and rewards the network's gradients shrink into subnormal numbers,
    which some CPUs compute many times slower (a "ceiling" below the game's own rate)."""
    from stable_baselines3.common.vec_env import VecEnv

    low, high = game.observation_bounds()
    rng = np.random.default_rng(0)

    class NullVecEnv(VecEnv):
        render_mode = None

        def __init__(self) -> None:
            super().__init__(
                n_envs,
                gymnasium.spaces.Box(low=low, high=high, dtype=np.float32),
                gymnasium.spaces.Discrete(game.num_actions),
            )
            self.t = 0
            size = (n_envs, game.observation_size)
            lo = np.where(np.isfinite(low), low, -1.0)  # a game may leave a bound open
            hi = np.where(np.isfinite(high), high, lo + 1.0)
            self.obs = rng.uniform(lo, hi, size).astype(np.float32)
            self.masks = np.ones((n_envs, game.num_actions), bool)

        def reset(self):
            return self.obs.copy()

        def step_async(self, actions):
            pass

        def step_wait(self):
            self.t += 1
            done = np.full(n_envs, self.t % episode == 0)
            infos = [{"terminal_observation": self.obs[0]} if d else {} for d in done]
            rewards = np.where(done, rng.choice([-1.0, 1.0], n_envs), 0.0).astype(np.float32)
            return self.obs.copy(), rewards, done, infos

        def action_masks(self):
            return self.masks

        def close(self):
            pass

        def get_attr(self, name, indices=None):
            return [getattr(self, name)] * n_envs

        def set_attr(self, name, value, indices=None):
            setattr(self, name, value)

        def env_method(self, name, *args, indices=None, **kwargs):
            if name == "action_masks":  # one row per env, as sb3-contrib stacks them
                return list(self.masks)
            raise AttributeError(name)

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * n_envs

        def has_attr(self, name):
            return hasattr(self, name)

    return NullVecEnv()


def ceiling_steps_per_s(cfg: Any, timesteps: int) -> float:
    """The config's learner (network, PPO settings, ``n_envs``) on :func:`null_vec_env`:
    env-steps/s after one untimed rollout."""
    import torch

    from training.train.checkpoints import build_fresh_model

    torch.set_num_threads(cfg.torch_threads)
    game = cfg.make_game()
    model = build_fresh_model(cfg, game, null_vec_env(game, cfg.n_envs), cfg.seed)
    model.learn(total_timesteps=cfg.n_envs * cfg.ppo.n_steps)
    start = model.num_timesteps
    t0 = time.perf_counter()
    model.learn(total_timesteps=timesteps, reset_num_timesteps=False)
    return (model.num_timesteps - start) / (time.perf_counter() - t0)


def markdown(result: dict[str, Any]) -> str:
    """The batched rows as Markdown tables."""
    lines = [
        "| game | players | N | vector steps/s | decisions/s | sync steps/s | vector / sync "
        "| PGX connect_four steps/s | decisions / PGX | bytes per game |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["random_play"]:
        pgx = "–" if r["pgx_steps_per_s"] is None else f"{r['pgx_steps_per_s']:,.0f}"
        ratio = "–" if r["ratio_to_pgx"] is None else f"{r['ratio_to_pgx']:.2f}x"
        lines.append(
            f"| {r['env']} | {r['players']} | {r['num_envs']} | {r['steps_per_s']:,.0f} | "
            f"{r['decisions_per_s']:,.0f} | {r['sync_steps_per_s']:,.0f} | {r['speedup']:.0f}x | "
            f"{pgx} | {ratio} | {r['bytes_per_game']:,.0f} |"
        )
    if result["field"]:
        lines += [
            "",
            "| game | players | field | N | vector steps/s | single view steps/s | vector / single |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for f in result["field"]:
            lines.append(
                f"| {f['env']} | {f['players']} | {f['field']} | {f['num_envs']} | "
                f"{f['steps_per_s']:,.0f} | {f['single_steps_per_s']:,.0f} | {f['speedup']:.1f}x |"
            )
    return "\n".join(lines)
