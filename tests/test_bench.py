"""The benchmark harness runs (its figures are printed, not asserted: speed is measured by
`derby-envs bench`, not by timed unit tests)."""

from __future__ import annotations

import json

from derby_envs.registry import available_games
from training.cli import main


def test_bench_quick_runs_and_writes_every_figure(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--seconds", "0.05", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    kinds = {(r["kind"], r["env"]) for r in result["random_play"]}
    for game in available_games():
        assert {("engine", game), ("aec", game), ("gym", game)} <= kinds
    assert ("aec", "classic/connect_four_v3") in kinds and (
        "aec",
        "classic/leduc_holdem_v4",
    ) in kinds
    assert all(
        r["steps_per_s"] > 0 and r["ratio_to_connect_four"] > 0 for r in result["random_play"]
    )
    trained = {(t["env"], t["n_envs"]) for t in result["ppo_training"]}
    assert ("classic/connect_four_v3", 8) in trained
    assert "| env | players |" in capsys.readouterr().out
