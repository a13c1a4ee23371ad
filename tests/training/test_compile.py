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
