"""``derby-envs compile``: the kernels a game's envs and heuristics use end up in numba's cache."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_compile_stores_the_kernels_of_the_batched_engine_and_the_heuristics(tmp_path):
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}  # an empty cache: everything compiles
    cmd = [sys.executable, "-m", "training.cli", "compile", "--games", "kentucky_derby"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    games = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    assert games == ["kentucky_derby"], out.stdout  # only the game asked for
    cached = {p.name.split(".")[0] for p in cache.rglob("*.nbi")}
    # the batched engine's kernels, the generator streams and kd_value's batched decisions
    assert {"batch_kernels", "pcg64", "kentucky_derby"} <= cached, sorted(cached)


def test_compile_refuses_an_unknown_game():
    cmd = [sys.executable, "-m", "training.cli", "compile", "--games", "chess"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "invalid choice: 'chess'" in out.stderr


def test_compile_plays_the_compiled_playouts_search_agents_use(monkeypatch):
    """ISMCTS's compiled dd_greedy playouts compile with the game, not at a first search."""
    from agents.dd_playout import GreedyPlayouts
    from training.tools.compile import _use_compiled_playouts

    played = []
    returns = GreedyPlayouts.returns
    monkeypatch.setattr(
        GreedyPlayouts, "returns", lambda self, *a, **k: played.append(1) or returns(self, *a, **k)
    )
    _use_compiled_playouts("demolition_derby")
    assert played == [1]
    _use_compiled_playouts("kentucky_derby")  # no heuristic of its offers them
    assert played == [1]
