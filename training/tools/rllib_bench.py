"""Throughput of the RLlib backend against the MaskablePPO trainer, measured in one run.

``python -m training.tools.rllib_bench [--quick] [--repeats 3] [--json runs/rllib_bench.json]``

For each case (a game, a field of opponents in every seat but the learner's) it measures, in
env steps per second (one env step = one learner decision with the field's moves in between,
what both trainers count):

* ``env``: the bare :class:`DerbyMultiAgentEnv` loop in this process with random legal learner
  actions (the ceiling of one sampling process),
* ``env_pair_over_1``: the same loop in two processes at once, their summed rate over one
  process's rate measured just before (what this machine gives two CPU-bound processes at
  that moment: the reference for RLlib's 2-runner speedup; on a VM whose neighbours load the
  host it swings between about 1.3x and 2x),
* ``rllib_1`` / ``rllib_2``: ``algo.train()`` of multi-agent PPO with 1 and 2 env runners
  (whole iterations: sampling, weight sync, learner update),
* ``sb3``: MaskablePPO ``learn()`` on the Gymnasium view with the same field, batch and epochs,

and where RLlib's iteration time goes (sampling vs learner update), and the CPU the runners
really got (on a shared machine two runners may get less than two cores: env steps per
runner-CPU-second is what carries over to idle cores). Every figure is the median of
``--repeats`` timed windows; ratios are to ``rllib_1`` of the same case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

#: (game, players) of the cases: each against random seats and against its strongest heuristic
PLAYERS = (("kentucky_derby", 5), ("derby", 4), ("demolition_derby", 4))


def all_cases() -> list[tuple[str, int, str]]:
    """(game, players, field) of every case: random seats, then the game's strongest
    heuristic (``agents.registry.strongest_heuristic``)."""
    from agents.registry import strongest_heuristic

    return [(g, n, f) for g, n in PLAYERS for f in ("random", strongest_heuristic(g))]


def env_rate(game: str, n: int, field: str, seconds: float) -> float:
    from derby_envs.core.rllib import DerbyMultiAgentEnv

    env = DerbyMultiAgentEnv({"game": game, "num_players": n, "opponents": field})
    rng = np.random.default_rng(0)

    def step(obs: dict) -> tuple[dict, bool]:
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
        obs, _, terms, truncs, _ = env.step(actions)
        if terms["__all__"] or truncs["__all__"]:
            return env.reset()[0], True
        return obs, False

    # one game untimed: a fresh process's first steps load what the later ones reuse (lazy
    # imports, kernels from numba's cache); timed, they would make a cold process look slow
    obs, ended = env.reset(seed=0)[0], False
    while not ended:
        obs, ended = step(obs)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        obs, _ = step(obs)
        steps += 1
    return steps / (time.perf_counter() - t0)


def _env_rate_worker(args: tuple[str, int, str, float]) -> float:
    return env_rate(*args)


def env_pair_scaling(game: str, n: int, field: str, seconds: float) -> float:
    """Summed env-steps/s of two processes running ``env_rate`` at once over one process's."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # fresh interpreters: nothing of Ray's or torch's state
    args = (game, n, field, seconds)
    with ctx.Pool(2) as pool:
        one = pool.apply(_env_rate_worker, (args,))
        pair = sum(pool.map(_env_rate_worker, [args, args], chunksize=1))
    return pair / one


def rllib_rates(
    game: str, n: int, field: str, runners: int, envs: int, batch: int, repeats: int
) -> dict[str, float]:
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    from derby_envs.core.rllib import ppo_config

    config = ppo_config(game, num_players=n, opponents=field, hiddens=(64, 64))
    config.env_runners(
        num_env_runners=runners, num_envs_per_env_runner=envs, num_cpus_per_env_runner=1
    )
    config.training(train_batch_size_per_learner=batch, minibatch_size=batch, num_epochs=1)
    config.debugging(seed=0, log_level="ERROR")
    algo = config.build_algo()

    def runner_cpu() -> float:  # CPU seconds of the sampling processes (remote runners)
        times = algo.env_runner_group.foreach_env_runner(
            lambda r: time.process_time(), local_env_runner=False
        )
        return float(sum(times))

    try:
        algo.train()  # warm-up: actors started, first episodes under way
        rates, sample_share = [], []
        last = None
        cpu0, wall0, steps0 = runner_cpu(), time.perf_counter(), None
        for _ in range(repeats):
            t0 = time.perf_counter()
            result = algo.train()
            dt = time.perf_counter() - t0
            steps = int(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
            if steps0 is None:
                steps0 = steps - batch
            if last is not None:
                rates.append((steps - last) / dt)
            else:
                rates.append(batch / dt)
            last = steps
            timers = result.get("timers", {})
            sample = timers.get("env_runner_sampling_timer")
            learn = timers.get("learner_update_timer")
            if sample is not None and learn is not None:
                sample_share.append(sample / max(sample + learn, 1e-9))
        wall, cpu = time.perf_counter() - wall0, runner_cpu() - cpu0
        return {
            "steps_per_s": statistics.median(rates),
            "sampling_share": statistics.median(sample_share) if sample_share else float("nan"),
            # cores the runners actually got (a shared machine gives less than it has), and
            # what one runner-CPU-second yields: the figure that carries to idle cores
            "runner_cores": cpu / wall,
            "steps_per_runner_cpu_s": (last - steps0) / max(cpu, 1e-9),
        }
    finally:
        algo.stop()


def sb3_rate(game: str, n: int, field: str, envs: int, batch: int, repeats: int) -> float:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from training.train.envs import env_class

    torch.set_num_threads(1)
    cls = env_class(game)
    env = DummyVecEnv([lambda: cls(num_players=n, opponents=field) for _ in range(envs)])
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=batch // envs,
        batch_size=batch,
        n_epochs=1,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
        device="cpu",
    )
    model.learn(batch)  # warm-up
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.learn(batch, reset_num_timesteps=False)
        rates.append(batch / (time.perf_counter() - t0))
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="training.tools.rllib_bench", description=__doc__.split("\n")[0]
    )
    p.add_argument("--quick", action="store_true", help="one case, small batches (smoke run)")
    p.add_argument("--repeats", type=int, default=3, help="timed iterations per figure (median)")
    p.add_argument("--batch", type=int, default=2048, help="env steps per training iteration")
    p.add_argument("--envs", type=int, default=4, help="envs per RLlib env runner")
    p.add_argument("--cases", nargs="*", default=None, metavar="GAME:FIELD")
    p.add_argument("--json", default="runs/rllib_bench.json", help="where to write the figures")
    args = p.parse_args(argv)
    import ray
    import torch

    torch.set_num_threads(1)
    every = all_cases()
    cases = every[:1] if args.quick else every
    if args.cases:
        wanted = {tuple(c.split(":")) for c in args.cases}
        cases = [c for c in every if (c[0], c[2]) in wanted]
    batch = 256 if args.quick else args.batch
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows: list[dict[str, Any]] = []
    try:
        for game, n, field in cases:
            row: dict[str, Any] = {"game": game, "players": n, "field": field}
            row["env"] = env_rate(game, n, field, 1.0 if args.quick else 3.0)
            row["env_pair_over_1"] = env_pair_scaling(game, n, field, 1.0 if args.quick else 3.0)
            for runners in (1, 2):
                r = rllib_rates(game, n, field, runners, args.envs, batch, args.repeats)
                row[f"rllib_{runners}"] = r["steps_per_s"]
                row[f"rllib_{runners}_sampling_share"] = r["sampling_share"]
                row[f"rllib_{runners}_runner_cores"] = r["runner_cores"]
                row[f"rllib_{runners}_steps_per_runner_cpu_s"] = r["steps_per_runner_cpu_s"]
            row["sb3"] = sb3_rate(game, n, field, args.envs, batch, args.repeats)
            row["rllib_2_over_1"] = row["rllib_2"] / row["rllib_1"]
            row["sb3_over_rllib_1"] = row["sb3"] / row["rllib_1"]
            rows.append(row)
            print(
                f"{game} {n}p vs {field}: env {row['env']:.0f}/s (two processes "
                f"{row['env_pair_over_1']:.2f}x one) | RLlib 1 runner "
                f"{row['rllib_1']:.0f}/s (sampling {row['rllib_1_sampling_share']:.0%}), "
                f"2 runners {row['rllib_2']:.0f}/s ({row['rllib_2_over_1']:.2f}x, sampling "
                f"{row['rllib_2_sampling_share']:.0%}) | sb3 {row['sb3']:.0f}/s "
                f"({row['sb3_over_rllib_1']:.2f}x RLlib 1) | runners got "
                f"{row['rllib_1_runner_cores']:.2f} / {row['rllib_2_runner_cores']:.2f} cores, "
                f"{row['rllib_1_steps_per_runner_cpu_s']:.0f} / "
                f"{row['rllib_2_steps_per_runner_cpu_s']:.0f} env steps per runner-CPU-second",
                flush=True,
            )
    finally:
        ray.shutdown()
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"batch": batch, "envs_per_runner": args.envs, "repeats": args.repeats}
    out.write_text(json.dumps({**meta, "rows": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
