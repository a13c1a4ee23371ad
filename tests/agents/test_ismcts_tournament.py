"""Tournaments with search seats in worker processes (training/evaluate.py ``workers``,
``derby-envs evaluate --workers``): the same results as one process."""

from __future__ import annotations

import pytest

from derby_envs.core.errors import InvalidParameterError
from derby_envs.registry import make_game
from training.cli import main as cli_main
from training.evaluation.tournament import run_tournament


def _strip(result):
    rows = [{k: v for k, v in r.items()} for r in result.rows]
    return result.games, rows


@pytest.mark.parametrize(
    "name,n,lineup",
    [
        ("kentucky_derby", 3, ["ismcts:iterations=6", "kd_value", "random"]),
        (
            "demolition_derby",
            2,
            ["ismcts:iterations=4,rollout_depth=10,value_mode=derbies", "dd_greedy"],
        ),
    ],
)
def test_workers_give_the_serial_result(name, n, lineup):
    game = make_game(name, num_players=n)
    records = {1: [], 2: []}
    results = {
        w: run_tournament(
            game, lineup, deals=3, seed=4, progress=False, workers=w, on_game=records[w].append
        )
        for w in (1, 2)
    }
    assert _strip(results[1]) == _strip(results[2])
    strip = [{k: v for k, v in r.items() if k != "scores"} for r in records[1]]
    assert strip == [{k: v for k, v in r.items() if k != "scores"} for r in records[2]]
    assert [list(r["scores"]) for r in records[1]] == [list(r["scores"]) for r in records[2]]


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_bad_worker_counts_are_named(workers):
    game = make_game("kentucky_derby", num_players=3)
    with pytest.raises(InvalidParameterError, match="'workers'"):
        run_tournament(game, ["random"] * 3, deals=1, progress=False, workers=workers)


def test_cli_workers(capsys):
    code = cli_main(
        [
            "evaluate", "--game", "kentucky_derby", "--players", "3", "--deals", "2",
            "--lineup", "ismcts:iterations=5", "kd_value", "--workers", "2", "--quiet",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "ismcts:iterations=5" in out and "kd_value" in out
    with pytest.raises(SystemExit):
        cli_main(["evaluate", "--game", "derby", "--lineup", "random", "--workers", "0"])
    assert "expected an integer >= 1" in capsys.readouterr().err
