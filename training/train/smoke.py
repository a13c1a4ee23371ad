"""Smoke runs: a seconds-long training run per game that checks an installation (the tests use
them too).

The per-game part (the opponent pool and the number of steps) is the game's registry record
(``GAME_INFO.smoke``, :class:`derby_envs.core.info.SmokeRun`); the rest is the same for every
game (:data:`COMMON`). ``configs/smoke/<game>.yaml`` are these configs written out;
``python -m training.train.smoke`` writes the file of any game that has none (a new game), and
a test checks that the shipped files are what the records say.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from derby_envs.core.datafile import read_yaml
from derby_envs.registry import available_games, game_info

SMOKE_DIR = Path(__file__).resolve().parents[2] / "configs" / "smoke"

#: Settings shared by every game's smoke run (small network, short rollouts, no logs).
COMMON: dict[str, Any] = {
    "seed": 3,
    "n_envs": 2,
    "vec_env": "dummy",
    "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 2, "net_arch": [32, 32]},
    "checkpoint": {"every": 512, "keep": 2},
    "evaluation": {"every": 0, "deals": 2, "final_deals": 2, "fields": ["random"]},
    "logging": {"tensorboard": False, "progress_bar": False},
}
_ORDER = ("name", "game", "seed", "total_timesteps", "n_envs", "vec_env", "ppo", "opponents")


def smoke_config(game: str) -> dict[str, Any]:
    """The smoke-run config of ``game`` (a raw config dict) from its registry record."""
    smoke = game_info(game).smoke
    raw = {
        "name": f"smoke_{game}",
        "game": game,
        "total_timesteps": smoke.total_timesteps,
        "opponents": {"pool": smoke.pool()},
        **copy.deepcopy(COMMON),
    }
    order = [*_ORDER, *(k for k in raw if k not in _ORDER)]
    return {k: raw[k] for k in order}


def smoke_yaml(game: str) -> str:
    """:func:`smoke_config` as the text of ``configs/smoke/<game>.yaml``."""
    lines = [
        f"# Smoke run for {game}: trains for a few seconds to check an installation (and the "
        "tests use it).",
        f"# derby-envs train --config configs/smoke/{game}.yaml --run-dir /tmp/smoke_{game}",
    ]
    for key, value in smoke_config(game).items():
        if key == "opponents":
            lines += ["opponents:", "  pool:"]
            lines += [f"    - {_flow(m)}" for m in value["pool"]]
        else:
            lines.append(f"{key}: {_flow(value)}")
    return "\n".join(lines) + "\n"


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1000)
    return text.strip().removesuffix("...").strip()


def load_smoke(game: str, folder: Path = SMOKE_DIR) -> dict[str, Any]:
    """The shipped smoke config of ``game`` if it has a file, else the one its record makes."""
    path = folder / f"{game}.yaml"
    if path.is_file():
        return read_yaml(path, what="smoke config")
    return smoke_config(game)


def write_missing(folder: Path = SMOKE_DIR, games: Sequence[str] | None = None) -> list[Path]:
    """Write ``<folder>/<game>.yaml`` for every game (of ``games``) that has no file yet;
    existing files are left alone. Returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for game in games or available_games():
        path = folder / f"{game}.yaml"
        if not path.exists():
            path.write_text(smoke_yaml(game))
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m training.train.smoke",
        description="Write configs/smoke/<game>.yaml for the games that have none "
        "(from each game's registry record).",
    )
    p.add_argument("--dir", default=str(SMOKE_DIR), help="folder of the smoke configs")
    p.add_argument("games", nargs="*", help="games (default: all registered)")
    args = p.parse_args(argv)
    for path in write_missing(Path(args.dir), args.games or None):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
