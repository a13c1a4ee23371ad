"""Are derby_exchange's near-ties free? It plays against itself with its ties broken the other way.

Usage::

    .venv/bin/python scripts/studies/derby_tie_flip.py [--within 0.02] [--deals 500] [--seed 20]

``derby_exchange`` picks the first of its best actions. The ``flip`` seat picks the last of
the actions within ``--within`` ticket points of the best, so it makes a different move
wherever derby_exchange has a near-tie. It plays seat-rotated against three plain
derby_exchange on fresh deals, and the script prints how many of its decisions were flipped,
then the tournament table. A residual policy on derby_exchange's value features
(``hint_features: values``) is free to explore these near-ties. If flipping them changes
nothing, the ordering changes PPO makes there cost nothing; what it changes elsewhere does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.registry import make_policy
from derby_envs.registry import make_game
from training.evaluation.tournament import run_tournament


class TieFlip:
    """derby_exchange, except that among actions within ``within`` points of its best it
    plays the last one (derby_exchange plays the first)."""

    name = "flip"
    needs_state = False

    def __init__(self, game, within: float) -> None:
        self.exchange = make_policy("derby_exchange", game)
        self.within = within
        self.decisions = 0
        self.flipped = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray, rng) -> int:
        legal = np.asarray(action_mask, dtype=bool)
        values = np.where(legal, self.exchange.action_values(observation, action_mask), -np.inf)
        near = np.flatnonzero(values >= values.max() - self.within)
        self.decisions += 1
        self.flipped += int(near[-1] != np.argmax(values))
        return int(near[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--within", type=float, default=0.02, help="ticket points (0: exact ties)")
    ap.add_argument("--deals", type=int, default=500, help="deal seeds (4 games each)")
    ap.add_argument("--seed", type=int, default=20)
    args = ap.parse_args(argv)
    if not args.within >= 0:
        ap.error(f"--within must be >= 0, got {args.within}")
    if args.deals < 1:
        ap.error(f"--deals must be >= 1, got {args.deals}")
    game = make_game("derby", num_players=4)
    flip = TieFlip(game, args.within)
    result = run_tournament(
        game,
        ["flip"] + ["derby_exchange"] * 3,
        args.deals,
        seed=args.seed,
        progress=False,
        policies={"flip": flip, "derby_exchange": make_policy("derby_exchange", game)},
    )
    print(f"within {args.within} points: flipped {flip.flipped:,} of {flip.decisions:,} decisions")
    print(result.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
