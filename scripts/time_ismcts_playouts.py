"""ISMCTS's decision time with compiled playouts and with Python ones, on the same positions.

Usage::

    .venv/bin/python scripts/time_ismcts_playouts.py [--game demolition_derby]
        [--players 2 3 4] [--positions 60] [--repeats 3] [--agent ismcts]

For each player count: seeded decision positions (``training.tools.bench.decision_positions``),
each decided by ``--agent`` (default the game's ISMCTS preset) and by the same agent with
``compiled_rollout=false``, alternately, the same generator seed for both; the two must choose
the same move (checked). Prints the mean time of a decision on each path and their ratio, the
medians over ``--repeats`` passes (this machine's noise: compare the ratio, measured in one run).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from derby_envs.core.policy import resolve_policy
from derby_envs.registry import make_game
from training.tools.bench import decision_positions


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="demolition_derby")
    ap.add_argument("--players", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--positions", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--agent", default="ismcts", help="an ismcts spec, e.g. ismcts:iterations=100")
    args = ap.parse_args(argv)
    for n in args.players:
        game = make_game(args.game, num_players=n)
        compiled = resolve_policy(args.agent, game)
        python = resolve_policy(f"{args.agent}{':' if ':' not in args.agent else ','}"
                                "compiled_rollout=false", game)  # fmt: skip
        positions = decision_positions(game, args.positions, seed=21)
        s, p, _, _ = positions[0]
        compiled.act_state(s, p, np.random.default_rng(0))  # loads the kernels: not timed
        passes = []
        for _ in range(args.repeats):
            t_compiled = t_python = 0.0
            for i, (s, p, _, _) in enumerate(positions):
                t0 = time.perf_counter()
                a = compiled.act_state(s, p, np.random.default_rng(i))
                t1 = time.perf_counter()
                b = python.act_state(s, p, np.random.default_rng(i))
                t_python += time.perf_counter() - t1
                t_compiled += t1 - t0
                if a != b:
                    raise SystemExit(f"{n}p position {i}: compiled {a} != Python {b}")
            k = len(positions)
            passes.append((1e3 * t_compiled / k, 1e3 * t_python / k, t_python / t_compiled))
        c, py, ratio = (statistics.median(x) for x in zip(*passes, strict=True))
        print(
            f"{args.game} {n}p {args.agent}: compiled {c:.1f} ms a decision, Python {py:.1f} ms,"
            f" {ratio:.2f}x (median of {args.repeats} passes over {len(positions)} positions)",
            flush=True,
        )


if __name__ == "__main__":
    main()
