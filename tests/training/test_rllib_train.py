"""The RLlib backend: config validation, export to the suite's policy format, and per game a
short run on local Ray that saves, resumes, exports and plays legal games through
``derby-envs evaluate``."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from training.train.config import ConfigError
from training.train.rllib_config import rllib_config_from_dict
from training.train.rllib_train import (
    checkpoints,
    export_checkpoint,
    export_module,
    main,
    train_rllib,
)

BASE = {
    "backend": "rllib",
    "game": "kentucky_derby",
    "game_params": {"num_players": 4},
    "total_timesteps": 100,
    "opponents": {"pool": [{"agent": "random"}]},
    "evaluation": {"every": 0, "deals": 1, "final_deals": 1, "fields": ["random"]},
    "logging": {"tensorboard": False, "progress_bar": False},
    "rllib": {"num_env_runners": 0, "train_batch_size": 64, "minibatch_size": 32,
              "num_epochs": 1, "hiddens": [16, 16]},
}  # fmt: skip


def _cfg(**changes):
    raw = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        node = raw
        *path, last = dotted.split("__")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return raw


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        (
            {"rllib__num_env_runner": 2},
            "'rllib.num_env_runner' (did you mean 'rllib.num_env_runners'",
        ),
        ({"rllib__num_env_runners": -1}, "'rllib.num_env_runners'"),
        ({"rllib__lr": "fast"}, "'rllib.lr'"),
        ({"rllib__activation": "gelu"}, "'rllib.activation'"),
        ({"rllib__learner_seats": 4}, "'rllib.learner_seats'"),
        ({"rllib__minibatch_size": 128}, "'rllib.minibatch_size'"),
        ({"rllib__address": " "}, "'rllib.address'"),
        ({"backend": "sb3"}, "'backend'"),
        ({"ppo": {"n_steps": 8}}, "'ppo'"),
        ({"opponents__pool": [{"agent": "kd_valu"}]}, "'opponents.pool[0].agent'"),
        ({"game_params": {"num_players": 11}}, "'game_params'"),
        ({"reward_mode": "score"}, "'reward_mode'"),
        ({"rllib__learner_seats": None, "opponents__self_play": {"enabled": True}}, "self_play"),
    ],
)
def test_bad_rllib_config_fails_naming_the_key(changes, named):
    with pytest.raises(ConfigError) as exc:
        rllib_config_from_dict(_cfg(**changes))
    assert named in str(exc.value)


def test_bad_key_fails_fast_from_the_command_line(tmp_path, capsys):
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_cfg(rllib__num_learner=1)))
    run_dir = tmp_path / "run"
    assert main(["--config", str(path), "--run-dir", str(run_dir)]) == 2
    assert "'rllib.num_learner'" in capsys.readouterr().err
    assert not run_dir.exists(), "nothing is created before the config is valid"


def test_export_is_the_same_network_for_every_loader(tmp_path):
    """The exported .zip gives the RLlib module's logits in PPOPolicy (numpy) and sb3."""
    import torch
    from ray.rllib.core.columns import Columns
    from sb3_contrib import MaskablePPO

    from agents.ppo import PPOPolicy
    from derby_envs.core.rllib import DerbyMultiAgentEnv, module_spec

    cfg = rllib_config_from_dict(_cfg(rllib__hiddens=[24, 12], rllib__activation="relu"))
    env = DerbyMultiAgentEnv({"game": "kentucky_derby", "num_players": 4})
    spec = module_spec(hiddens=(24, 12), activation="relu")
    spec.observation_space, spec.action_space = env.observation_spaces["player_0"], env.action_space
    module = spec.build()
    path = export_module(module, cfg, tmp_path / "p.zip", steps=123)
    rng = np.random.default_rng(0)
    obs = rng.random((32, env.game.observation_size)).astype(np.float32)
    ones = np.ones((32, env.game.num_actions), np.float32)
    batch = {Columns.OBS: {"observations": torch.tensor(obs), "action_mask": torch.tensor(ones)}}
    with torch.no_grad():
        expected = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].numpy()
        values = module.compute_values(batch).numpy()
    policy = PPOPolicy.load(path, env.game)
    np.testing.assert_allclose(policy.logits(obs), expected, rtol=1e-5, atol=1e-5)
    assert policy.meta["backend"] == "rllib" and policy.meta["steps"] == 123
    sb3 = MaskablePPO.load(path, device="cpu")  # a genuine sb3 checkpoint too
    with torch.no_grad():
        t = torch.tensor(obs)
        dist = sb3.policy.get_distribution(t)
        np.testing.assert_allclose(
            dist.distribution.logits.numpy(),
            torch.log_softmax(torch.tensor(expected), -1).numpy(),
            atol=1e-5,
        )
        np.testing.assert_allclose(sb3.policy.predict_values(t).numpy().ravel(), values, atol=1e-5)
    game5 = DerbyMultiAgentEnv({"game": "kentucky_derby", "num_players": 5}).game
    from agents.ppo import CheckpointError

    with pytest.raises(CheckpointError, match="another game, player count"):
        PPOPolicy.load(path, game5)


@pytest.fixture(scope="module")
def local_ray():
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("illegal_action", ["raise"])  # penalize/replace: the pre-check tests
def test_ppo_config_trains_every_game_under_every_illegal_action_mode(illegal_action, local_ray):
    """ppo_config(game, illegal_action=...) builds and trains on every game: under "raise" the
    env pre-check's unmasked sample used to trip the strict env for Derby and Demolition Derby
    ("does not abide to the new gymnasium-style API"); the masked module never samples an
    illegal action, so the strict env sees only legal ones."""
    from derby_envs.core.rllib import ppo_config

    for game in ("kentucky_derby", "derby", "demolition_derby"):
        config = ppo_config(game, num_players=3, illegal_action=illegal_action).training(
            train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1
        )
        assert config.disable_env_checking is (illegal_action == "raise")
        algo = config.build_algo()
        try:
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
        finally:
            algo.stop()


RUNS = {
    "kentucky_derby": {"game_params": {"num_players": 4}, "reward_mode": "chips",
                       "opponents": {"pool": [{"agent": "kd_value"}, {"agent": "random"}],
                                     "self_play": {"enabled": True, "every": 60}},
                       # a remote runner: snapshots reach its envs' pools (the driver has none)
                       "rllib": {**BASE["rllib"], "num_env_runners": 1, "num_envs_per_env_runner": 2}},
    "derby": {"game_params": {"num_players": 3},
              "opponents": {"pool": [{"agent": "derby_exchange"}]}},
    "demolition_derby": {"game_params": {"num_players": 4}, "reward_mode": "derbies",
                         "rllib": {**BASE["rllib"], "learner_seats": 2},
                         "opponents": {"pool": [{"agent": "dd_greedy"}]}},
}  # fmt: skip


@pytest.mark.parametrize("game", sorted(RUNS))
def test_short_run_saves_resumes_exports_and_evaluates(game, tmp_path, local_ray, capsys):
    from training.cli import main as cli_main

    raw = {**copy.deepcopy(BASE), "game": game, **copy.deepcopy(RUNS[game])}
    raw["run_dir"] = str(tmp_path / "run")
    raw["logging"] = {"tensorboard": True, "progress_bar": True}
    cfg = rllib_config_from_dict(raw)
    first = train_rllib(cfg)
    run = tmp_path / "run"
    assert first["steps"] >= 64 and first["iterations"] >= 1
    saved = checkpoints(run)
    assert saved and saved[-1][1] == first["steps"] and saved[-1][0] == first["iterations"]
    assert (run / "final.zip").is_file() and any((run / "tb").iterdir())
    with pytest.raises(ConfigError, match="not empty"):
        train_rllib(cfg)
    # resume: the iteration and step counts continue
    longer = rllib_config_from_dict({**raw, "total_timesteps": first["steps"] + 64})
    second = train_rllib(longer, resume=True)
    assert second["iterations"] > first["iterations"] and second["steps"] > first["steps"]
    out = capsys.readouterr().out
    assert (
        f"resumed from {saved[-1][2].name}" in out and f"iter {first['iterations'] + 1:4d}" in out
    )
    assert checkpoints(run)[-1][1] == second["steps"]
    changed = rllib_config_from_dict({**raw, "rllib": {**raw["rllib"], "hiddens": [8]}})
    with pytest.raises(ConfigError, match="rllib.hiddens"):
        train_rllib(changed, resume=True)
    if game == "kentucky_derby":
        _check_restore_gives_the_checkpoint_weights(longer, checkpoints(run)[-1][2])
        # self-play: snapshots exported, listed and loadable
        pool = json.loads((run / "pool.json").read_text())
        assert pool["snapshots"] and all((run / s["path"]).is_file() for s in pool["snapshots"])
        assert "(added to 2 env pool(s))" in out, "each env of the remote runner got it"

    exported = export_checkpoint(run, tmp_path / "exported.zip")
    # evaluate plays whole games with the exported policies (an illegal move would raise)
    n = cfg.num_players
    args = ["evaluate", "--game", game, "--players", str(n), "--deals", "2", "--quiet"]
    assert cli_main([*args, "--lineup", str(run / "final.zip"), "random"]) == 0
    assert cli_main([*args, "--lineup", str(exported), "random"]) == 0
    table = capsys.readouterr().out
    assert "final.zip" in table and "exported.zip" in table
    watch = ["watch", game, "--players", str(n), "--seed", "1", "--delay", "0", "--quiet"]
    assert cli_main([*watch, "--agents", str(run / "final.zip"), "random", "--no-clear"]) == 0
    # the Gymnasium view takes it as an opponent, like any MaskablePPO checkpoint
    import gymnasium

    import derby_envs
    from agents.ppo import PPOPolicy

    opponent = PPOPolicy.load(run / "final.zip", cfg.make_game())
    gym_env = gymnasium.make(derby_envs.GAMES[game].gym_id, opponents=opponent, **cfg.game_params)
    obs, info = gym_env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, _, term, trunc, info = gym_env.step(action)
        assert not info["illegal_action"]
        done = term or trunc


def test_scale_doc_has_the_current_config_reference():
    from pathlib import Path

    from training.train.rllib_config import describe

    text = (Path(__file__).resolve().parents[2] / "docs" / "scale.md").read_text()
    assert text.split("<!-- rllib-config-table -->\n", 1)[1].strip() == describe().strip()


def test_a_new_run_that_fails_before_its_first_checkpoint_leaves_nothing(tmp_path, monkeypatch):
    import training.train.rllib_train as rt

    def no_ray(*args, **kwargs):
        raise ConnectionError("no Ray cluster at the given address")

    monkeypatch.setattr(rt, "start_ray", no_ray)
    raw = {**copy.deepcopy(BASE), "run_dir": str(tmp_path / "run")}
    with pytest.raises(ConnectionError):
        train_rllib(rllib_config_from_dict(raw))
    assert not (tmp_path / "run").exists()
    (tmp_path / "kept").mkdir()  # a directory the user made: kept, emptied of this run's files
    with pytest.raises(ConnectionError):
        train_rllib(rllib_config_from_dict({**raw, "run_dir": str(tmp_path / "kept")}))
    assert (tmp_path / "kept").is_dir()
    assert [p.name for p in (tmp_path / "kept").iterdir()] in ([], [".lock"])


def _check_restore_gives_the_checkpoint_weights(cfg, path):
    """After restore_from_path the learner holds the checkpoint's weights (all of them) and
    the sampling module its actor; the export reads the learner's."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    from training.train.rllib_train import build_algo_config, learner_weights

    saved = RLModule.from_checkpoint(path / "learner_group" / "learner" / "rl_module" / "shared")
    saved = {k: v.numpy() for k, v in saved.state_dict().items()}
    algo = build_algo_config(cfg, [], cfg.run_path).build_algo()
    try:
        fresh = learner_weights(algo)
        algo.restore_from_path(path.resolve())
        restored = learner_weights(algo)
        sampler = {k: v.numpy() for k, v in algo.get_module("shared").state_dict().items()}
    finally:
        algo.stop()
    assert set(restored) == set(saved)
    for k, v in saved.items():
        assert np.allclose(restored[k], v), k
        if "actor" in k or k.startswith("pi."):
            assert np.allclose(sampler[k], v), k
    assert any(not np.allclose(fresh[k], v) for k, v in saved.items())


def test_sigterm_stops_with_a_checkpoint_and_the_export(tmp_path, local_ray):
    import os
    import signal
    import threading

    raw = {**copy.deepcopy(BASE), "run_dir": str(tmp_path / "run"), "total_timesteps": 10**6}
    cfg = rllib_config_from_dict(raw)
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(12.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        summary = train_rllib(cfg)
    finally:
        timer.cancel()
    assert summary["interrupted"] and 0 < summary["steps"] < 10**6
    assert checkpoints(tmp_path / "run")[-1][1] == summary["steps"]
    assert (tmp_path / "run" / "final.zip").is_file()
    assert signal.getsignal(signal.SIGTERM) == before  # the previous handler is back


def test_derby_envs_train_runs_an_rllib_config(tmp_path, local_ray, capsys):
    import yaml

    from training.cli import main as cli_main

    path = tmp_path / "rllib.yaml"
    path.write_text(yaml.safe_dump(_cfg(logging={"tensorboard": False, "progress_bar": True})))
    run = tmp_path / "run"
    assert cli_main(["train", "--config", str(path), "--run-dir", str(run)]) == 0
    assert (run / "final.zip").is_file() and checkpoints(run)
    resumed = ["train", "--resume", "--run-dir", str(run), "--total-timesteps", "200"]
    assert cli_main(resumed) == 0
    assert "resumed from" in capsys.readouterr().out
    path.write_text(yaml.safe_dump(_cfg(rllib__num_env_runner=1)))
    assert cli_main(["train", "--config", str(path), "--run-dir", str(tmp_path / "r2")]) == 2
    assert "'rllib.num_env_runner'" in capsys.readouterr().err
    sb3 = tmp_path / "sb3.yaml"
    sb3.write_text(yaml.safe_dump({"game": "derby", "total_timesteps": 64}))
    assert cli_main(["train", "--config", str(sb3), "--address", "auto"]) == 2
    assert "--address is for backend: rllib" in capsys.readouterr().err


def test_rllib_bench_env_pair_reference_runs_two_processes():
    """The 2-runner reference: two spawned processes step the bare env at once; the ratio is a
    positive rate ratio (each process really stepped: a broken loop gives 0 or raises)."""
    from training.tools.rllib_bench import env_pair_scaling, env_rate

    assert env_rate("kentucky_derby", 3, "random", 0.2) > 0
    ratio = env_pair_scaling("kentucky_derby", 3, "random", 0.3)
    assert 0.2 < ratio < 4.0
