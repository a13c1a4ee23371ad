"""The compiled engines split each kernel's rows over threads (``derby_envs.core.threads``).

By default a call is split only from 64 rows of work a thread (more for cheap kernels), so the other tests (a few
games per batch) run whole; here the split is forced down to one row and three threads, and
the games must still be exactly the reference games: the engine against reference states
after every move (``batch_battery``), and the vector env (its one-call random-opponent loop,
``advance_random``, and the heuristics' path) against Gymnasium's sync vector env of single
views.
"""

from __future__ import annotations

import pytest

from derby_envs.core import threads
from derby_envs.core.batch import batch_engine
from derby_envs.core.batch_check import batch_battery
from derby_envs.registry import make_game
from tests.envs.test_vector import GAMES, HEURISTICS, _pair, _same_run


@pytest.fixture
def split_everything(monkeypatch):
    monkeypatch.setattr(threads, "MIN_ROWS", 0)  # one row a thread, whatever the kernel
    monkeypatch.setattr(threads, "THREADS", 3)
    assert len(threads.ranges(6)) == 3


@pytest.mark.parametrize("game", GAMES)
def test_engine_split_over_threads_plays_the_reference_games(game, split_everything):
    g = make_game(game, num_players=GAMES[game])
    seeds = range(500, 530)
    engine = batch_engine(g, len(seeds), compiled=True)
    assert batch_battery(g, seeds, compare_states=6, engine=engine) > 0


@pytest.mark.parametrize("opponents", ["random", "heuristic"])
@pytest.mark.parametrize("game", GAMES)
def test_vector_env_split_over_threads_plays_the_single_views(game, opponents, split_everything):
    n = GAMES[game]
    kw = {} if opponents == "random" else {"opponents": HEURISTICS[game][0]}
    native, sync = _pair(game, n, illegal_action="replace", **kw)
    assert _same_run(native, sync, steps=120, seed=5, illegal_share=0.05) > 0


def test_ranges_cover_the_rows_once():
    for rows in (1, 63, 64, 127, 128, 1000, 1025):
        for work in (None, 0, rows // 3):
            parts = threads.ranges(rows, work)
            covered = [i for s in parts for i in range(rows)[s]]
            assert covered == list(range(rows))
            assert len(parts) <= threads.THREADS


def test_run_raises_a_tasks_error_after_all_have_ended():
    done = []

    def ok():
        done.append(1)
        return 1

    def bad():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        threads.run([bad, ok, ok])
    assert len(done) == 2
    assert threads.run([ok, ok]) == [1, 1]


def test_threads_variable_sets_the_count_and_bad_values_are_named():
    import os
    import subprocess
    import sys

    code = "from derby_envs.core import threads; print(threads.THREADS)"
    env = {**os.environ, "DERBY_ENVS_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "1"
    env["DERBY_ENVS_THREADS"] = "many"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "DERBY_ENVS_THREADS='many': expected a whole number of threads" in out.stderr
