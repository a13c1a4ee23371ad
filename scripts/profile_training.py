"""Where a MaskablePPO training step's time goes, against a field of a game's heuristic.

Usage::

    .venv/bin/python scripts/profile_training.py [--game demolition_derby] [--players 4]
        [--opponents dd_tactical] [--n-envs 8] [--timesteps 8192]

Runs bench's DummyVecEnv training case (``training.tools.bench.ppo_steps_per_s``: bench's
light PPO, one process, the Gymnasium view with ``opponents``) once to load the compiled
kernels, then once under cProfile, and prints each part's share of the profiled wall time
(cumulative time of the functions named, parts absent from the run left out; parts nest,
so the shares do not add up). cProfile
inflates Python against compiled code (each Python call pays the profiler's hook), so read
the shares as an upper bound for the Python parts.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import gymnasium

import derby_envs  # noqa: F401 - registers the Gymnasium ids
from training.tools.bench import GAMES, ppo_steps_per_s

# (label, end of the file's path ("" for any file), function name, own time only: the time
# in the function itself, not in what it calls; numpy's ufuncs, such as exp, count as own time)
PARTS = (
    ("opponents' decisions (act_state)", "", "act_state", False),
    ("  dd_tactical kernel call", "agents/dd_fast.py", "simulate_actions", False),
    ("  dd_tactical packing", "agents/dd_fast.py", "pack", False),
    ("opponents' decisions (derby_exchange)", "agents/derby.py", "act", False),
    ("  kernel _k_prepare", "agents/derby.py", "_k_prepare", False),
    ("  kernel _k_z", "agents/derby.py", "_k_z", False),
    ("  kernel _k_values", "agents/derby.py", "_k_values", False),
    ("  numpy's exps, Python (_options)", "agents/derby.py", "_options", True),
    ("  choosing the option (_card_choice)", "agents/derby.py", "_card_choice", False),
    ("learner's observations", "observer.py", "observation", False),
    ("the Gymnasium view's step", "core/single_agent.py", "step", False),
    ("MaskablePPO rollouts", "ppo_mask.py", "collect_rollouts", False),
    ("  policy forward passes", "policies.py", "forward", False),
    ("MaskablePPO updates (train)", "ppo_mask.py", "train", False),
)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="demolition_derby", choices=sorted(GAMES))
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--opponents", default="dd_tactical")
    ap.add_argument("--n-envs", type=int, default=8)
    ap.add_argument("--timesteps", type=int, default=8192)
    args = ap.parse_args(argv)
    gym_id = GAMES[args.game].gym_id

    def make() -> gymnasium.Env:
        return gymnasium.make(gym_id, num_players=args.players, opponents=args.opponents)

    print(f"warm-up run ({args.game} {args.players}p vs {args.opponents})...", flush=True)
    ppo_steps_per_s(make, args.n_envs, min(1024, args.timesteps))
    profile = cProfile.Profile()
    profile.enable()
    rate = ppo_steps_per_s(make, args.n_envs, args.timesteps)
    profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_tt
    print(f"{rate:,.0f} env-steps/s under the profiler, n_envs={args.n_envs}")
    for label, path, name, own in PARTS:
        share = sum(
            v[2] if own else v[3]
            for k, v in stats.stats.items()
            if k[2] == name and k[0].endswith(path)
        )
        if share:
            print(f"  {label:<40} {100 * share / total:5.1f}%")


if __name__ == "__main__":
    main()
