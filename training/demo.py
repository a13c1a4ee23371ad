"""The README's main job (``make demo`` -> ``derby-envs demo``)."""

from __future__ import annotations

from derby_envs.registry import make_game
from training.evaluate import run_tournament


def run_demo(quick: bool = False) -> int:
    game = make_game("kentucky_derby", num_players=5)
    deals = 20 if quick else 200
    print(f"Kentucky Derby, 5 players: seat-rotated tournament of the baselines ({deals} deals)")
    for lineup in (
        ["kd_value", "random", "random", "random", "random"],
        ["kd_contrarian", "random", "random", "random", "random"],
        ["kd_value", "kd_contrarian", "kd_contrarian", "kd_contrarian", "kd_contrarian"],
    ):
        result = run_tournament(game, lineup, deals)
        print()
        print(result.markdown())
    return 0
