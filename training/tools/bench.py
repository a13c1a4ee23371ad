"""``derby-envs bench``: how fast the engines and envs are, against PettingZoo's classic games.

Everything is timed in one run on the same machine with the same random-legal-play loop:

* per game and player count (its registry record's ``bench_players``): raw engine steps/s
  and games/s (``State.apply_action`` with a uniformly random legal action), the AEC env
  through ``pettingzoo.make`` (the standard ``agent_iter``/``last``/``step`` loop), and the
  Gymnasium single-agent view (random learner actions, random opponents);
* the references: PettingZoo's ``classic/connect_four-v3`` and ``classic/leduc_holdem-v4``
  through ``pettingzoo.make``, same AEC loop;
* each figure's ratio to connect_four-v3's AEC steps/s: every timed window follows a window of
  connect_four, and the ratio is the median of the pairs' ratios (the robust number on a noisy
  machine: a burst of load moves both sides of a pair, not one figure);
* per heuristic of every game and player count: the median and mean time of one decision
  (the observation prebuilt) on 400 positions recorded from seeded random play, and its ratio
  to that game's engine step time; the first call is reported apart (``first_call_ms``, the
  policy's construction included: e.g. loading or compiling numba kernels, self-checks), and for a
  heuristic with an uncompiled twin (dd_tactical's ``fast=False``: the same choices) the same
  figures uncompiled (records made when the Derby heuristics still had their numpy model as an
  option, now the test oracle ``tests/agents/derby_oracle.py``, time it too);
* MaskablePPO training env-steps/s at ``n_envs`` 1 and 8 (DummyVecEnv): connect_four-v3
  (learner vs a random opponent) as the reference, and for Derby 4p, Demolition Derby 2p and
  4p and Kentucky Derby 5p against random seats and against a field of the game's strongest
  heuristic (``ratio_to_random``: the second over the first, same run).

* the batched vector envs (``training.tools.bench_vector``): random play at N = 1, 64, 1,024,
  8,192 against Gymnasium's sync vector env of single views and PGX's connect_four (where the
  ``bench`` extra installed pgx), decisions/s, the strongest-heuristic field at N = 256 against
  the single view, memory per game (``vector``);

* with ``--config FILE ...``: MaskablePPO as each config trains (its vec env, ``n_envs``, PPO
  settings and hint, built by the trainer's own ``make_vec_env`` and ``build_fresh_model``),
  its pool replaced by random seats and then by a field of the game's strongest heuristic,
  self-play off; the steady rate (after one untimed rollout) of alternated pairs, the ratio
  the median of the pairs' ratios (``config_training``), and the learner's ceiling (the same
  learner on a do-nothing vector env of the same shapes). ``make bench`` passes the shipped
  configs and the recipes they replaced; ``--config-only`` times the configs alone.

Figures are medians of ``--repeats`` timed windows of ``--seconds`` each (MaskablePPO: of
``min(repeats, 3)`` runs of 8,192 steps). ``--quick`` is a
seconds-long smoke version (CI runs it).
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pettingzoo

import derby_envs
from derby_envs.registry import GAMES, available_games, game_info, make_game


def player_counts(game: str) -> tuple[int, ...]:
    """The player counts bench measures for ``game``: its registry record's ``bench_players``."""
    return tuple(game_info(game).bench_players)


# MaskablePPO against random seats and against a field of the game's strongest heuristic
# (agents.registry.strongest_heuristic): (game, players)
TRAINING_FIELDS = (
    ("derby", 4),
    ("demolition_derby", 2),
    ("demolition_derby", 4),
    ("kentucky_derby", 5),
)
REFERENCES = ("classic/connect_four_v3", "classic/leduc_holdem_v4")
REFERENCE = "classic/connect_four_v3"


def _median_rate(fn: Callable[[float], tuple[int, int]], seconds: float, repeats: int) -> dict:
    """Run ``fn(seconds) -> (steps, games)`` ``repeats`` times; medians of the rates."""
    steps_rates, games_rates = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        steps, games = fn(seconds)
        dt = time.perf_counter() - t0
        steps_rates.append(steps / dt)
        games_rates.append(games / dt)
    return {
        "steps_per_s": statistics.median(steps_rates),
        "games_per_s": statistics.median(games_rates),
        "repeats": repeats,
    }


def _paired_rate(
    fn: Callable[[float], tuple[int, int]],
    ref: Callable[[float], tuple[int, int]],
    seconds: float,
    repeats: int,
) -> dict:
    """:func:`_median_rate` of ``fn``, each window right after a window of the reference
    ``ref``: ``ratio_to_connect_four`` is the median of the per-pair ratios, so a burst of load
    on this shared machine moves both sides of a pair instead of one figure."""
    rates, ratios = [], []
    for _ in range(repeats):
        r = _median_rate(ref, seconds, 1)["steps_per_s"]
        m = _median_rate(fn, seconds, 1)
        rates.append(m)
        ratios.append(m["steps_per_s"] / r)
    return {
        "steps_per_s": statistics.median(m["steps_per_s"] for m in rates),
        "games_per_s": statistics.median(m["games_per_s"] for m in rates),
        "repeats": repeats,
        "ratio_to_connect_four": statistics.median(ratios),
    }


def _timed_games(
    play_one: Callable[[int, np.random.Generator], int],
) -> Callable[[float], tuple[int, int]]:
    """``run(seconds) -> (steps, games)``: whole games of ``play_one(seed, rng) -> steps``,
    new seeds each game, until ``seconds`` have passed."""
    rng = np.random.default_rng(0)
    seeds = iter(range(10**9))

    def run(seconds: float) -> tuple[int, int]:
        steps = games = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            steps += play_one(next(seeds), rng)
            games += 1
        return steps, games

    return run


def _random_legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(legal.size)])


def engine_loop(game_name: str, num_players: int) -> Callable[[float], tuple[int, int]]:
    """The raw engine: ``apply_action`` with random legal actions, no env around it."""
    game = make_game(game_name, num_players=num_players)

    def play_one(seed: int, rng: np.random.Generator) -> int:
        state = game.new_initial_state(seed)
        steps = 0
        while not state.is_terminal():
            p = state.current_players()[0]
            state.apply_action(p, _random_legal(state.legal_mask(p), rng))
            steps += 1
        return steps

    return _timed_games(play_one)


def aec_loop(env: Any) -> Callable[[float], tuple[int, int]]:
    """PettingZoo's standard AEC loop with random legal actions."""

    def play_one(seed: int, rng: np.random.Generator) -> int:
        env.reset(seed=seed)
        steps = 0
        for _agent in env.agent_iter():
            obs, _reward, term, trunc, _info = env.last()
            if term or trunc:
                action = None
            else:
                action = _random_legal(obs["action_mask"], rng)
                steps += 1
            env.step(action)
        return steps

    return _timed_games(play_one)


def gym_loop(env: gymnasium.Env) -> Callable[[float], tuple[int, int]]:
    """The single-agent view: random legal learner actions (opponents: the env's)."""

    def play_one(seed: int, rng: np.random.Generator) -> int:
        env.reset(seed=seed)
        steps, done = 0, False
        while not done:
            action = _random_legal(env.unwrapped.action_masks(), rng)
            _, _, term, trunc, _ = env.step(action)
            done = term or trunc
            steps += 1
        return steps

    return _timed_games(play_one)


def game_heuristics(game_name: str) -> list[str]:
    """The game's own heuristics: the ``POLICIES`` of the agents module its registry record
    names (``agents.registry.game_policies``: so a game registered with
    ``derby_envs.registry.register_game`` is seen), not the game-independent random and
    search agents; empty for a game without an agents module."""
    from agents.registry import game_policies

    return sorted(game_policies(game_name))


def record_positions(game_name: str, num_players: int, count: int, seed: int = 0) -> list:
    """``count`` (state, player, observation, mask) decision points (more than one legal
    action) from seeded uniformly random games, each decision kept with probability 1/3 (so
    they spread over whole games and over every kind of decision)."""
    return decision_positions(make_game(game_name, num_players=num_players), count, seed)


def decision_positions(game: Any, count: int, seed: int = 0) -> list:
    """:func:`record_positions` of a game object (any parameters)."""
    rng = np.random.default_rng(seed)
    positions: list = []
    game_seed = seed
    while len(positions) < count:
        state = game.new_initial_state(game_seed)
        game_seed += 1
        while not state.is_terminal() and len(positions) < count:
            p = state.current_players()[0]
            mask = state.legal_mask(p)
            if mask.sum() > 1 and rng.random() < 1 / 3:
                positions.append((state.clone(), p, state.observation(p), mask))
            state.apply_action(p, _random_legal(mask, rng))
    return positions


def _decision_times(policy: Any, positions: list, setup_s: float = 0.0) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    on_state = getattr(policy, "needs_state", False)
    times = []
    for state, p, obs, mask in positions:
        t0 = time.perf_counter()
        if on_state:
            policy.act_state(state, p, rng)
        else:
            policy.act(obs, mask, rng)
        times.append(time.perf_counter() - t0)
    return {
        "positions": len(times) - 1,
        # loading / compiling / self-checks, if the policy does, with its construction
        "first_call_ms": (setup_s + times[0]) * 1e3,
        "median_ms": statistics.median(times[1:]) * 1e3,
        "mean_ms": statistics.mean(times[1:]) * 1e3,
    }


def heuristic_times(game_name: str, num_players: int, names: list[str], positions: list) -> list:
    """Per heuristic: first-call, median and mean time (ms) of one decision over
    ``positions`` (``act`` on the prebuilt observation; ``act_state`` for a policy that reads
    the state); for a policy with a ``fast`` option (dd_tactical) also the times of the same
    policy with ``fast=False`` (the Python code it must match, choice for choice)."""
    from agents.registry import make_policy

    game = make_game(game_name, num_players=num_players)
    rows = []
    for name in names:
        t0 = time.perf_counter()
        policy = make_policy(name, game)
        setup_s = time.perf_counter() - t0
        row = {"game": game_name, "players": num_players, "heuristic": name}
        row.update(_decision_times(policy, positions, setup_s))
        if getattr(policy, "fast", False):  # an uncompiled twin: the same positions
            reference = _decision_times(make_policy(name, game, fast=False), positions)
            row["uncompiled_median_ms"] = reference["median_ms"]
            row["uncompiled_mean_ms"] = reference["mean_ms"]
        rows.append(row)
    return rows


class AECvsRandom(gymnasium.Env):
    """Any PettingZoo AEC env with action masks as a single-agent Gymnasium env: the learner
    is the first agent, every other agent plays uniformly random legal moves. Used to train
    MaskablePPO on connect_four-v3 as the speed reference."""

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        self.env = pettingzoo.make("aec", env_id, **kwargs)
        self.env.reset(seed=0)
        self.learner = self.env.possible_agents[0]
        obs_space = self.env.observation_space(self.learner)["observation"]
        self.observation_space = gymnasium.spaces.Box(
            low=0.0, high=1.0, shape=(int(np.prod(obs_space.shape)),), dtype=np.float32
        )
        self.action_space = self.env.action_space(self.learner)
        self._rng = np.random.default_rng(0)
        self._mask = None

    def _advance(self) -> tuple[np.ndarray, float, bool]:
        reward = 0.0
        for agent in self.env.agent_iter():
            obs, rew, term, trunc, _ = self.env.last()
            if agent == self.learner:
                reward += rew
                if term or trunc:
                    return np.zeros(self.observation_space.shape, np.float32), reward, True
                self._mask = obs["action_mask"]
                return obs["observation"].astype(np.float32).ravel(), reward, False
            if term or trunc:
                self.env.step(None)
            else:
                self.env.step(_random_legal(obs["action_mask"], self._rng))
        return np.zeros(self.observation_space.shape, np.float32), reward, True

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.env.reset(seed=seed)
        obs, _, _ = self._advance()
        return obs, {}

    def step(self, action: Any):
        self.env.step(int(action))
        obs, reward, done = self._advance()
        return obs, reward, done, False, {}

    def action_masks(self) -> np.ndarray:
        return np.asarray(self._mask, bool)


def ppo_steps_per_s(make_env: Callable[[], gymnasium.Env], n_envs: int, timesteps: int) -> float:
    """MaskablePPO env-steps/s over one ``learn`` call (rollouts + updates), DummyVecEnv."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    vec = DummyVecEnv([make_env for _ in range(n_envs)])
    n_steps = max(64, timesteps // n_envs // 2)
    model = MaskablePPO(
        "MlpPolicy",
        vec,
        n_steps=n_steps,
        batch_size=64,
        n_epochs=2,
        seed=0,
        verbose=0,
        device="cpu",
    )
    t0 = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    rate = model.num_timesteps / (time.perf_counter() - t0)
    vec.close()
    return rate


def config_variants(path: str | Path) -> tuple[Any, Any, str]:
    """A MaskablePPO config as it trains, twice: its opponent pool replaced by random seats,
    and by a field of the game's strongest heuristic (``agents.registry.strongest_heuristic``,
    else the config's first evaluation field); self-play off. Everything else (vec env,
    ``n_envs``, PPO settings, hint, reward) is the config's. Returns (vs random, vs field, the
    field's agent)."""
    from agents.registry import strongest_heuristic
    from training.train.config import ConfigError, load_config
    from training.train.rllib_config import is_rllib_config, read_yaml

    if Path(path).is_file() and is_rllib_config(read_yaml(path)):
        raise ConfigError(
            f"{str(path)!r} is a backend: rllib config; bench --config times MaskablePPO "
            "configs (RLlib: python -m training.tools.rllib_bench, docs/scale.md)"
        )

    def variant(agent: str) -> Any:
        pool = f"opponents.pool=[{{agent: {agent}, weight: 1}}]"
        return load_config(path, [pool, "opponents.self_play.enabled=false"])

    vs_random = variant("random")
    field = strongest_heuristic(vs_random.game) or next(iter(vs_random.evaluation.fields), None)
    if field is None:
        raise ConfigError(
            f"{str(path)!r}: no strongest heuristic known for {vs_random.game!r}; give the "
            "config an evaluation field (evaluation.fields)"
        )
    return vs_random, variant(field), field


def config_steps_per_s(cfg: Any, timesteps: int) -> float:
    """Steady MaskablePPO env-steps/s (rollouts and updates) of a model and vec env built as
    ``derby-envs train`` builds them (``make_vec_env``, ``build_fresh_model``). One untimed
    rollout first: the vec env's start-up and first-call costs (numba kernels loading in every
    worker, reported apart as the heuristics' ``first_call_ms``) belong to a run's start,
    not to its rate."""
    import tempfile

    import torch

    from training.train.checkpoints import build_fresh_model
    from training.train.envs import make_vec_env

    torch.set_num_threads(cfg.torch_threads)
    with tempfile.TemporaryDirectory() as root:
        vec = make_vec_env(cfg, [], Path(root))
        try:
            model = build_fresh_model(cfg, cfg.make_game(), vec, cfg.seed)
            model.learn(total_timesteps=cfg.n_envs * cfg.ppo.n_steps)
            start = model.num_timesteps
            t0 = time.perf_counter()
            model.learn(total_timesteps=timesteps, reset_num_timesteps=False)
            return (model.num_timesteps - start) / (time.perf_counter() - t0)
        finally:
            vec.close()


def config_training_rows(
    variants: list[tuple[str, tuple[Any, Any, str]]],
    repeats: int,
    progress: Callable[[str], None],
    timesteps: int | None = None,
) -> list[dict[str, Any]]:
    """Per (config path, its ``config_variants``): MaskablePPO env-steps/s against random
    seats and against the strongest heuristic's field, ``repeats`` alternated pairs (random,
    then field); the ratio is the median of the pairs' ratios, robust to load that drifts
    between pairs. ``timesteps`` defaults to four rollouts (4 x ``n_envs`` x
    ``ppo.n_steps``), after one untimed one."""
    from training.tools.bench_vector import ceiling_steps_per_s

    rows: list[dict[str, Any]] = []
    for path, (vs_random, vs_field, field) in variants:
        steps = timesteps or 4 * vs_random.n_envs * vs_random.ppo.n_steps
        rates: dict[str, list[float]] = {"random": [], field: []}
        for _ in range(repeats):
            for name, cfg in (("random", vs_random), (field, vs_field)):
                rates[name].append(config_steps_per_s(cfg, steps))
        ratios = [f / r for r, f in zip(rates["random"], rates[field], strict=True)]
        ceiling = statistics.median(ceiling_steps_per_s(vs_random, steps) for _ in range(repeats))
        row = {
            "config": str(path),
            "env": vs_random.game,
            "players": vs_random.make_game().num_players,
            "vec_env": vs_random.vec_env,
            "n_envs": vs_random.n_envs,
            "timesteps": steps,
            "field": field,
            "random_steps_per_s": statistics.median(rates["random"]),
            "field_steps_per_s": statistics.median(rates[field]),
            "ratio_to_random": statistics.median(ratios),
            "pair_ratios": ratios,
            "ceiling_steps_per_s": ceiling,
            "random_over_ceiling": statistics.median(rates["random"]) / ceiling,
        }
        rows.append(row)
        progress(
            f"  config  {path!s:<34} vs random {row['random_steps_per_s']:>7,.0f}  "
            f"vs {field} {row['field_steps_per_s']:>7,.0f} env-steps/s  "
            f"ratio {row['ratio_to_random']:.2f}  learner ceiling {ceiling:>7,.0f}"
        )
    return rows


def run_bench(
    quick: bool = False,
    repeats: int | None = None,
    seconds: float | None = None,
    train: bool = True,
    games: list[str] | None = None,
    progress: Callable[[str], None] = print,
    configs: list[str] | None = None,
    vector: bool = True,
    only_vector: bool = False,
    only_configs: bool = False,
) -> dict[str, Any]:
    """Measure everything; returns the JSON-ready result (see the module docstring)."""
    from training.tools.bench_vector import vector_rows

    # read now: a bad config fails before minutes of timing, not after
    variants = [(path, config_variants(path)) for path in configs or []]
    repeats = repeats or (1 if quick else 5)
    seconds = seconds or (0.2 if quick else 1.0)
    games = games or available_games()
    progress(f"derby-envs {derby_envs.__version__} bench ({repeats} x {seconds:g} s per figure)")
    if only_configs and not variants:
        raise ValueError("--config-only needs --config FILE ...")
    # --vector-only: the batched rows alone; --config-only: the configs' training rows alone
    full = not (only_vector or only_configs)
    vector = vector and not only_configs
    rows = random_play_rows(games, repeats, seconds, progress) if full else []
    heuristics = heuristic_rows(games, rows, 41 if quick else 401, progress) if full else []
    training = ppo_training_rows(games, quick, repeats, progress) if train and full else []
    as_configured = config_training_rows(variants, min(repeats, 3), progress)
    batched = (
        vector_rows(games, player_counts, quick, repeats, seconds, progress) if vector else None
    )
    return {
        "version": derby_envs.__version__,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "pettingzoo": pettingzoo.__version__,
        "repeats": repeats,
        "seconds": seconds,
        "quick": quick,
        "random_play": rows,
        "heuristics": heuristics,
        "ppo_training": training,
        "config_training": as_configured,
        "vector": batched,
    }


def random_play_rows(
    games: list[str], repeats: int, seconds: float, progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Random-play steps/s of the references and of every game's engine, AEC env and Gym view
    at its bench player counts, with each figure's ratio to connect_four's AEC env."""
    rows: list[dict[str, Any]] = []

    def add(kind: str, name: str, players: int | None, rate: dict) -> None:
        rows.append({"kind": kind, "env": name, "players": players, **rate})
        progress(
            f"  {kind:<7} {name:<26} {players or '':>2}  {rate['steps_per_s']:>10,.0f} steps/s"
        )

    ref = aec_loop(pettingzoo.make("aec", REFERENCE))
    for name in REFERENCES:
        loop = ref if name == REFERENCE else aec_loop(pettingzoo.make("aec", name))
        add("aec", name, 2, _paired_rate(loop, ref, seconds, repeats))
    for g in games:
        info = GAMES[g]
        for n in player_counts(g):
            add("engine", g, n, _paired_rate(engine_loop(g, n), ref, seconds, repeats))
            env = pettingzoo.make("aec", info.pz_id, num_players=n)
            add("aec", g, n, _paired_rate(aec_loop(env), ref, seconds, repeats))
            genv = gymnasium.make(info.gym_id, num_players=n)
            add("gym", g, n, _paired_rate(gym_loop(genv), ref, seconds, repeats))
    return rows


def heuristic_rows(
    games: list[str], rows: list[dict[str, Any]], count: int, progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Decision times of every game's heuristics on ``count`` recorded positions (the first
    timed apart), with their ratio to the engine step time measured in ``rows``."""
    heuristics: list[dict[str, Any]] = []
    for g in games:
        names = game_heuristics(g)
        for n in player_counts(g):
            step_ms = 1e3 / next(
                r["steps_per_s"]
                for r in rows
                if r["kind"] == "engine" and r["env"] == g and r["players"] == n
            )
            for h in heuristic_times(g, n, names, record_positions(g, n, count)):
                h["engine_step_ms"] = step_ms
                h["median_over_engine_step"] = h["median_ms"] / step_ms
                h["mean_over_engine_step"] = h["mean_ms"] / step_ms
                heuristics.append(h)
                progress(
                    f"  policy  {g:<18} {h['heuristic']:<16} {n:>2}  median {h['median_ms']:.3f} ms"
                    f"  mean {h['mean_ms']:.3f} ms  ({h['median_over_engine_step']:.0f}x a step;"
                    f" first call {h['first_call_ms']:.0f} ms)"
                )
    return heuristics


def _training_envs(games: list[str]) -> list[tuple[str, int, str, Callable[[], gymnasium.Env]]]:
    """(env, players, opponents, factory) of the MaskablePPO cases: the reference, then each
    TRAINING_FIELDS case of ``games`` against random seats and its strongest heuristic."""
    from agents.registry import strongest_heuristic

    envs: list[tuple[str, int, str, Callable[[], gymnasium.Env]]] = [
        (REFERENCE, 2, "random", lambda: AECvsRandom(REFERENCE))
    ]
    for g, n in TRAINING_FIELDS:
        if g not in games:
            continue
        for opp in ("random", strongest_heuristic(g)):
            envs.append(
                (
                    g,
                    n,
                    opp,
                    lambda g=g, n=n, opp=opp: gymnasium.make(
                        GAMES[g].gym_id, num_players=n, opponents=opp
                    ),
                )
            )
    return envs


def ppo_training_rows(
    games: list[str], quick: bool, repeats: int, progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    """MaskablePPO env-steps/s of each training case, with its ratios to connect_four and to
    the same case against random seats."""
    timesteps = 512 if quick else 8192
    training: list[dict[str, Any]] = []
    for name, n, opp, fn in _training_envs(games):
        for n_envs in (8,) if quick else (1, 8):
            rate = statistics.median(
                ppo_steps_per_s(fn, n_envs, timesteps) for _ in range(min(repeats, 3))
            )
            training.append(
                {"env": name, "players": n, "opponents": opp, "n_envs": n_envs, "steps_per_s": rate}
            )
            progress(
                f"  ppo     {name:<26} {n:>2}  n_envs={n_envs}  vs {opp:<14} "
                f"{rate:>8,.0f} env-steps/s"
            )
    for t in training:
        ref = next(r for r in training if r["env"] == REFERENCE and r["n_envs"] == t["n_envs"])
        t["ratio_to_connect_four"] = t["steps_per_s"] / ref["steps_per_s"]
        rnd = next(
            r
            for r in training
            if (r["env"], r["players"], r["n_envs"], r["opponents"])
            == (t["env"], t["players"], t["n_envs"], "random")
        )
        t["ratio_to_random"] = t["steps_per_s"] / rnd["steps_per_s"]
    return training


def markdown(result: dict[str, Any]) -> str:
    """The result as Markdown tables (c4 = PettingZoo's connect_four-v3 AEC env, same run)."""
    from training.tools import bench_vector

    lines = (
        []
        if not result["random_play"]
        else [
            "| env | players | engine steps/s | engine games/s | engine / c4 | AEC steps/s | AEC / c4 | Gym view steps/s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
    )
    by = {(r["kind"], r["env"], r["players"]): r for r in result["random_play"]}
    keys = sorted({(r["env"], r["players"]) for r in result["random_play"]})
    for env, n in keys:
        eng, aec, gym = (by.get((k, env, n)) for k in ("engine", "aec", "gym"))
        lines.append(
            f"| {env} | {n} | "
            + (
                f"{eng['steps_per_s']:,.0f} | {eng['games_per_s']:,.1f} | {eng['ratio_to_connect_four']:.2f}x"
                if eng
                else "– | – | –"
            )
            + f" | {aec['steps_per_s']:,.0f} | {aec['ratio_to_connect_four']:.2f}x | "
            + (f"{gym['steps_per_s']:,.0f}" if gym else "–")
            + " |"
        )
    if result.get("heuristics"):
        lines += [
            "",
            "| heuristic | game | players | median ms | mean ms | median / engine step "
            "| mean / engine step | first call ms | uncompiled: median, mean ms |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for h in result["heuristics"]:
            lines.append(
                f"| {h['heuristic']} | {h['game']} | {h['players']} | {h['median_ms']:.3f} | "
                f"{h['mean_ms']:.3f} | {h['median_over_engine_step']:.0f}x | "
                f"{h['mean_over_engine_step']:.0f}x | {h['first_call_ms']:.0f} | "
                + (
                    f"{h['uncompiled_median_ms']:.3f}, {h['uncompiled_mean_ms']:.3f} |"
                    if "uncompiled_median_ms" in h
                    else "– |"
                )
            )
    if result["ppo_training"]:
        lines += [
            "",
            "| MaskablePPO on | players | opponents | n_envs | env-steps/s | / connect_four "
            "| / vs random |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for t in result["ppo_training"]:
            lines.append(
                f"| {t['env']} | {t['players']} | {t['opponents']} | {t['n_envs']} | "
                f"{t['steps_per_s']:,.0f} | {t['ratio_to_connect_four']:.2f}x | "
                f"{t['ratio_to_random']:.2f}x |"
            )
    if result.get("config_training"):
        lines += [
            "",
            "| MaskablePPO as configured | game | players | vec env | env-steps/s vs random "
            "| field | env-steps/s vs field | field / random (median of pairs) "
            "| learner ceiling | vs random / ceiling |",
            "|---|---|---:|---|---:|---|---:|---:|---:|---:|",
        ]
        for c in result["config_training"]:
            lines.append(
                f"| {c['config']} | {c['env']} | {c['players']} | {c['vec_env']} x {c['n_envs']} "
                f"| {c['random_steps_per_s']:,.0f} | {c['field']} | {c['field_steps_per_s']:,.0f} "
                f"| {c['ratio_to_random']:.2f}x | "
                + (  # runs recorded before the ceiling was measured have none
                    f"{c['ceiling_steps_per_s']:,.0f} | {c['random_over_ceiling']:.2f} |"
                    if "ceiling_steps_per_s" in c
                    else "– | – |"
                )
            )
    if result.get("vector"):
        lines += ["", bench_vector.markdown(result["vector"])]
    return "\n".join(lines)


def save(result: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path
