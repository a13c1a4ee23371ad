"""The benchmark harness runs (its figures are printed, not asserted: speed is measured by
`derby-envs bench`, not by timed unit tests)."""

from __future__ import annotations

import json

from derby_envs.registry import available_games, game_info
from training.cli import main
from training.tools.bench import TRAINING_FIELDS, game_heuristics


def test_bench_quick_runs_and_writes_every_figure(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--seconds", "0.05", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    kinds = {(r["kind"], r["env"]) for r in result["random_play"]}
    for game in available_games():
        assert {("engine", game), ("aec", game), ("gym", game)} <= kinds
        # the player counts measured are the game's registry record's bench_players
        measured = {r["players"] for r in result["random_play"] if r["env"] == game}
        assert measured == set(game_info(game).bench_players)
    assert ("aec", "classic/connect_four_v3") in kinds and (
        "aec",
        "classic/leduc_holdem_v4",
    ) in kinds
    assert all(
        r["steps_per_s"] > 0 and r["ratio_to_connect_four"] > 0 for r in result["random_play"]
    )
    # every game's own heuristics, at every player count, timed on recorded positions
    timed = {(h["game"], h["players"], h["heuristic"]) for h in result["heuristics"]}
    for game in available_games():
        own = game_heuristics(game)
        assert len(own) >= 2
        for n in game_info(game).bench_players:
            assert {(game, n, p) for p in own} <= timed
    for h in result["heuristics"]:
        assert h["positions"] == 40
        assert 0 < h["median_ms"] and 0 < h["mean_ms"] and h["first_call_ms"] > 0
        assert abs(h["median_over_engine_step"] - h["median_ms"] / h["engine_step_ms"]) < 1e-9
        # the Derby heuristics' compiled path is timed beside their numpy model (fast=False)
        assert ("numpy_model_median_ms" in h) == (h["game"] == "derby"), h
    # MaskablePPO against random seats and against each game's strongest heuristic
    trained = {
        (t["env"], t["players"], t["opponents"], t["n_envs"]) for t in result["ppo_training"]
    }
    assert ("classic/connect_four_v3", 2, "random", 8) in trained
    for game, n, strongest in TRAINING_FIELDS:
        assert {(game, n, "random", 8), (game, n, strongest, 8)} <= trained
    for t in result["ppo_training"]:
        assert t["steps_per_s"] > 0 and t["ratio_to_random"] > 0
        if t["opponents"] == "random":
            assert t["ratio_to_random"] == 1.0
    printed = capsys.readouterr().out
    assert "| env | players |" in printed and "| heuristic | game |" in printed
    assert "| MaskablePPO on | players | opponents |" in printed


def test_bench_games_limits_the_rows_to_those_games(tmp_path):
    out = tmp_path / "bench.json"
    args = ["bench", "--quick", "--no-train", "--seconds", "0.02", "--json", str(out)]
    assert main([*args, "--games", "kentucky_derby"]) == 0
    result = json.loads(out.read_text())
    envs = {r["env"] for r in result["random_play"]}
    assert envs == {"kentucky_derby", "classic/connect_four_v3", "classic/leduc_holdem_v4"}
    assert {h["game"] for h in result["heuristics"]} == {"kentucky_derby"}
    assert result["ppo_training"] == []


def test_bench_refuses_an_unknown_game(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["bench", "--quick", "--games", "chess"])
    assert e.value.code == 2
    assert "invalid choice: 'chess'" in capsys.readouterr().err
