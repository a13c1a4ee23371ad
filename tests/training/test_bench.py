"""The benchmark harness runs (its figures are printed, not asserted: speed is measured by
`derby-envs bench`, not by timed unit tests)."""

from __future__ import annotations

import json

from agents.registry import strongest_heuristic
from derby_envs.registry import available_games, game_info
from tests.common import load_script
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
        # a heuristic with an uncompiled twin (dd_tactical's fast=False) is timed beside it;
        # the Derby heuristics have none (their numpy oracle is in tests/agents/)
        assert ("uncompiled_median_ms" in h) == (h["heuristic"] == "dd_tactical"), h
    # MaskablePPO against random seats and against each game's strongest heuristic
    trained = {
        (t["env"], t["players"], t["opponents"], t["n_envs"]) for t in result["ppo_training"]
    }
    assert ("classic/connect_four_v3", 2, "random", 8) in trained
    for game, n in TRAINING_FIELDS:
        assert {(game, n, "random", 8), (game, n, strongest_heuristic(game), 8)} <= trained
    for t in result["ppo_training"]:
        assert t["steps_per_s"] > 0 and t["ratio_to_random"] > 0
        if t["opponents"] == "random":
            assert t["ratio_to_random"] == 1.0
    # the batched vector envs at each quick size, against sync vector envs and PGX, and the
    # strongest-heuristic field against the single view
    from training.tools.bench_vector import QUICK_SIZES

    vec = result["vector"]
    rows = {(r["env"], r["players"], r["num_envs"]) for r in vec["random_play"]}
    for game in available_games():
        for n in game_info(game).bench_players:
            assert {(game, n, size) for size in QUICK_SIZES} <= rows
    for r in vec["random_play"]:
        assert r["steps_per_s"] > 0 and r["sync_steps_per_s"] > 0 and r["bytes_per_game"] > 0
        # the learner's move and the opponents' (made in one kernel call, counted in a replay)
        assert r["decisions_per_step"] > 1.5
        assert r["pgx_steps_per_s"] > 0 and r["ratio_to_pgx"] > 0  # make test installs pgx
    assert {f["env"]: f["field"] for f in vec["field"]} == {
        "kentucky_derby": "kd_value", "derby": "derby_exchange", "demolition_derby": "dd_tactical"
    }  # fmt: skip
    printed = capsys.readouterr().out
    assert "| env | players |" in printed and "| heuristic | game |" in printed
    assert "| MaskablePPO on | players | opponents |" in printed
    assert "| game | players | N | vector steps/s |" in printed


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


_TINY_CONFIG = """\
name: tiny_dd
game: demolition_derby
game_params: {num_players: 2}
seed: 3
n_envs: 1
vec_env: dummy
ppo: {n_steps: 32, batch_size: 32, n_epochs: 1, net_arch: [16]}
opponents:
  pool:
    - {agent: dd_greedy, weight: 1}
  self_play: {enabled: true, every: 64}
evaluation: {every: 0, fields: [random]}
"""


def test_bench_config_times_the_config_against_random_and_its_strongest_field(tmp_path, capsys):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(_TINY_CONFIG)
    out = tmp_path / "bench.json"
    args = ["bench", "--quick", "--no-train", "--seconds", "0.02", "--json", str(out)]
    assert main([*args, "--games", "kentucky_derby", "--config", str(cfg)]) == 0
    (row,) = json.loads(out.read_text())["config_training"]
    assert (row["config"], row["env"], row["players"]) == (str(cfg), "demolition_derby", 2)
    # the game's strongest heuristic, not the config's own pool or evaluation field
    assert row["field"] == "dd_tactical"
    assert (row["vec_env"], row["n_envs"], row["timesteps"]) == ("dummy", 1, 4 * 32)
    assert row["random_steps_per_s"] > 0 and row["field_steps_per_s"] > 0
    (pair,) = row["pair_ratios"]  # --quick: one pair
    assert pair == row["ratio_to_random"]
    assert abs(pair - row["field_steps_per_s"] / row["random_steps_per_s"]) < 1e-12
    # the same learner on a do-nothing env of the same shapes, measured beside it
    assert row["ceiling_steps_per_s"] > 0
    assert row["random_over_ceiling"] == row["random_steps_per_s"] / row["ceiling_steps_per_s"]
    assert "| MaskablePPO as configured |" in capsys.readouterr().out


def test_bench_config_on_the_batched_engine(tmp_path):
    cfg = tmp_path / "batch.yaml"
    cfg.write_text(_TINY_CONFIG.replace("n_envs: 1\nvec_env: dummy", "n_envs: 16\nvec_env: batch"))
    out = tmp_path / "bench.json"
    args = ["bench", "--quick", "--config-only", "--json", str(out)]
    assert main([*args, "--config", str(cfg)]) == 0
    result = json.loads(out.read_text())
    (row,) = result["config_training"]
    assert (row["vec_env"], row["n_envs"], row["field"]) == ("batch", 16, "dd_tactical")
    assert row["random_steps_per_s"] > 0 and row["field_steps_per_s"] > 0
    assert row["ceiling_steps_per_s"] > 0
    # --config-only: nothing else is timed
    assert result["random_play"] == [] and result["heuristics"] == []
    assert result["ppo_training"] == [] and result["vector"] is None


def test_bench_config_only_needs_a_config(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--config-only", "--json", str(out)]) == 2
    assert "--config-only needs --config" in capsys.readouterr().err and not out.exists()


def test_bench_config_variants_change_only_the_opponents(tmp_path):
    from training.tools.bench import config_variants
    from training.train.config import load_config

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(_TINY_CONFIG)
    vs_random, vs_field, field = config_variants(cfg)
    assert field == "dd_tactical"
    assert [m.agent for m in vs_random.opponents.pool] == ["random"]
    assert [m.agent for m in vs_field.opponents.pool] == ["dd_tactical"]
    original = load_config(cfg)
    for variant in (vs_random, vs_field):
        assert not variant.opponents.self_play.enabled
        assert (variant.ppo, variant.n_envs, variant.vec_env, variant.reward_mode) == (
            original.ppo,
            original.n_envs,
            original.vec_env,
            original.reward_mode,
        )


def test_bench_config_refuses_bad_configs_before_timing(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = ["bench", "--quick", "--no-train", "--seconds", "0.02", "--json", str(out)]
    assert main([*args, "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "no such config file" in capsys.readouterr().err
    rllib = tmp_path / "rllib.yaml"
    rllib.write_text("backend: rllib\ngame: derby\n")
    assert main([*args, "--config", str(rllib)]) == 2
    assert "backend: rllib config" in capsys.readouterr().err
    assert not out.exists()  # nothing was timed or written


def _profile_shares(capsys, argv: list[str]) -> dict[str, float]:
    load_script("profile_training").main(argv)
    shares = {}
    for line in capsys.readouterr().out.splitlines():
        if line.endswith("%"):
            label, share = line.rsplit(None, 1)
            shares[label.strip()] = float(share[:-1])
    return shares


def test_the_training_profile_script_names_the_parts(capsys):
    """scripts/profile_training.py (the profile docs/training.md quotes) runs and reports
    the opponents' decisions, the rollouts and the updates of a short run."""
    shares = _profile_shares(capsys, ["--players", "2", "--n-envs", "2", "--timesteps", "256"])
    assert 0 < shares["opponents' decisions (act_state)"] < 100
    assert 0 < shares["dd_tactical kernel call"] < shares["opponents' decisions (act_state)"]
    assert shares["MaskablePPO rollouts"] > 0 and shares["MaskablePPO updates (train)"] > 0


def test_the_training_profile_script_splits_a_derby_decision(capsys):
    """Against derby_exchange it reports the rows docs/training.md's Derby table quotes: each
    kernel, the Python and exps around them, the option choice, all inside the decisions."""
    shares = _profile_shares(
        capsys,
        ["--game", "derby", "--players", "3", "--opponents", "derby_exchange", "--n-envs", "2",
         "--timesteps", "256"],
    )  # fmt: skip
    whole = shares["opponents' decisions (derby_exchange)"]
    parts = [
        "kernel _k_prepare", "kernel _k_z", "kernel _k_values",
        "numpy's exps, Python (_options)", "choosing the option (_card_choice)",
    ]  # fmt: skip
    assert all(shares[p] > 0 for p in parts)
    assert sum(shares[p] for p in parts) <= whole + 0.2  # nested in the decisions (rounding)


def test_the_learners_ceiling_env_feeds_it_ordinary_numbers():
    """The do-nothing env of the ceiling: observations within the game's bounds and not all
    zero, every action legal, and a reward of +1 or -1 where its episodes end (all-zero data
    would leave the network in subnormal arithmetic, slow on some CPUs)."""
    import numpy as np

    from derby_envs.registry import make_game
    from training.tools.bench_vector import null_vec_env

    game = make_game("demolition_derby", num_players=4)
    low, high = game.observation_bounds()
    env = null_vec_env(game, 3, episode=2)
    obs = env.reset()
    assert obs.shape == (3, game.observation_size) and np.count_nonzero(obs) > obs.size // 2
    assert (obs >= low).all() and (obs <= high).all()
    assert env.action_masks().all()
    _, rewards, done, _ = env.step(np.zeros(3, np.int64))
    assert not done.any() and not rewards.any()
    _, rewards, done, infos = env.step(np.zeros(3, np.int64))
    assert done.all() and set(np.abs(rewards)) == {1.0}
    assert all("terminal_observation" in info for info in infos)
