"""Render the README's pictures: one mid-game position per game, ``docs/images/<game>.png``.

    .venv/bin/python scripts/make_images.py            # every registered game
    .venv/bin/python scripts/make_images.py derby      # one game

Each picture is the game's ``rgb_array`` render (``derby_envs/games/<game>/render.py``) of a
position reached by the game's heuristics from a fixed seed, so re-running gives the same
images as long as the engines and agents do not change.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# game -> (parameters, seed, moves to play before the picture)
POSITIONS = {
    "kentucky_derby": ({"num_players": 6, "num_races": 6}, 7, 9),
    "derby": ({"num_players": 4}, 3, 75),
    "demolition_derby": ({"num_players": 4}, 5, 18),
}


def position(game_name: str):
    from derby_envs.core.policy import choose
    from derby_envs.registry import make_game
    from training.tools.play import default_agents, load_agents

    params, seed, moves = POSITIONS.get(game_name, ({}, 0, 10))
    game = make_game(game_name, **params)
    agents = default_agents(game_name)
    lineup = [agents[p % len(agents)] for p in range(game.num_players)]
    policies = load_agents(game, lineup)
    rngs = [np.random.default_rng([seed, p]) for p in range(game.num_players)]
    state = game.new_initial_state(seed)
    for _ in range(moves):
        if state.is_terminal():
            break
        p = state.current_players()[0]
        state.apply_action(p, choose(policies[lineup[p]], state, p, rngs[p]))
    return game, state


def main(argv: list[str]) -> int:
    from PIL import Image

    from derby_envs.core.render import render_rgb
    from derby_envs.registry import available_games

    games = argv or available_games()
    out_dir = ROOT / "docs" / "images"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in games:
        game, state = position(name)
        path = out_dir / f"{name}.png"
        Image.fromarray(render_rgb(game, state)).save(path, optimize=True)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
