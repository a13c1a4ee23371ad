"""Training smoke runs: train, save, reload, play legal moves; resume; run-dir safety."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from agents.ppo import PPOPolicy
from derby_envs.registry import available_games, make_game
from training.cli import main
from training.train import checkpoints, export_policy, train
from training.train.config import ConfigError, config_from_dict
from training.train.smoke import load_smoke, smoke_config, smoke_yaml, write_missing

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke"


def tiny(game: str, run_dir: Path, **over) -> dict:
    """The smoke config of ``game`` (a few seconds of training: the shipped file, or for a game
    without one the config its registry record makes), with overrides."""
    raw = load_smoke(game)
    raw["run_dir"] = str(run_dir)
    for key, value in over.items():
        node = raw
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return raw


def play_checked(policy: PPOPolicy, game, games: int, seed: int) -> int:
    """Play whole games with ``policy`` in every seat, asserting each action is legal."""
    rng = np.random.default_rng(seed)
    moves = 0
    for g in range(games):
        state = game.new_initial_state(seed + g)
        while not state.is_terminal():
            p = state.current_players()[0]
            mask = state.legal_mask(p)
            a = policy.act(state.observation(p), mask, rng)
            assert mask[a] == 1, f"illegal action {a}"
            state.apply_action(p, a)
            moves += 1
    return moves


@pytest.mark.parametrize("game_name", available_games())
def test_smoke_train_save_reload_play(game_name, tmp_path):
    run = tmp_path / "run"
    summary = train(config_from_dict(tiny(game_name, run)), progress=False)
    assert summary["steps"] >= 1024
    assert (run / "final.zip").is_file() and (run / "pool.json").is_file()
    assert (run / "summary.json").is_file() and (run / "config.yaml").is_file()
    assert [s for s, _ in checkpoints(run)][-1] == summary["steps"]
    game = make_game(game_name)
    for deterministic in (True, False):
        policy = PPOPolicy.load(run / "final.zip", game, deterministic=deterministic)
        assert policy.meta["game"] == game_name and policy.meta["steps"] == summary["steps"]
        assert play_checked(policy, game, games=2, seed=11) > 0
    final = summary["final_evaluation"]["random"]
    assert sum(r["games"] for r in final["rows"]) == final["games"] * game.num_players
    # shipping: the exported zip plays exactly like final.zip, with a sidecar
    shipped = export_policy(run, tmp_path / "ship" / f"{game_name}.zip", {"note": "test"})
    a, b = PPOPolicy.load(run / "final.zip", game), PPOPolicy.load(shipped, game)
    obs = game.new_initial_state(1).observation(0)
    assert np.array_equal(a.logits(obs), b.logits(obs))
    assert shipped.stat().st_size < (run / "final.zip").stat().st_size
    sidecar = json.loads(shipped.with_suffix(".json").read_text())
    assert sidecar["steps"] == summary["steps"] and sidecar["results"] == {"note": "test"}


def test_resume_continues_steps_and_keeps_the_pool(tmp_path, capsys):
    run = tmp_path / "run"
    raw = tiny(
        "kentucky_derby",
        run,
        **{
            "opponents.self_play": {"enabled": True, "every": 256, "weight": 50},
            "checkpoint.every": 256,
            "logging.tensorboard": True,
        },
    )
    first = train(config_from_dict(raw), progress=False)
    assert first["steps"] == 1024
    pool1 = json.loads((run / "pool.json").read_text())
    snaps1 = [s["step"] for s in pool1["snapshots"]]
    assert snaps1 == [256, 512, 768, 1024]  # between updates and at the end, every 256 steps
    assert any(k.startswith("snapshot@") for k in pool1["draws_this_session"])

    # Resume through the CLI with a larger budget: the step count goes on from 1024.
    cfg_path = tmp_path / "more.yaml"
    cfg_path.write_text(yaml.safe_dump({**raw, "total_timesteps": 2048}))
    assert main(["train", "--config", str(cfg_path), "--resume", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "resuming" in out and "step 1,024 -> 2,048" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2048 and summary["steps_this_session"] == 1024
    pool2 = json.loads((run / "pool.json").read_text())
    snaps2 = [s["step"] for s in pool2["snapshots"]]
    assert snaps2[:4] == snaps1 and snaps2[4:] == [1280, 1536, 1792, 2048]
    # The resumed workers drew the snapshots of the first session (the pool was restored).
    assert any(pool2["draws_this_session"].get(f"snapshot@{s}", 0) for s in snaps1)
    for s in pool2["snapshots"]:
        assert (run / s["path"]).is_file()
    assert [s for s, _ in checkpoints(run)] == [1792, 2048]  # keep: 2
    policy = PPOPolicy.load(run / "final.zip", make_game("kentucky_derby"))
    assert policy.meta["steps"] == 2048
    assert len(list((run / "tb").iterdir())) == 1  # TensorBoard continues the same run

    # Resuming a finished run trains nothing and loses nothing.
    assert main(["train", "--config", str(cfg_path), "--resume", "--no-progress"]) == 0
    assert "already at step 2,048" in capsys.readouterr().out
    assert [s for s, _ in checkpoints(run)] == [1792, 2048]


def test_run_dir_safety(tmp_path, capsys):
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    # --resume without any checkpoint is a clear error.
    assert main(["train", "--config", str(cfg), "--resume"]) == 2
    assert "cannot resume: no checkpoint" in capsys.readouterr().err
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    # A new run never writes into a non-empty directory.
    assert main(["train", "--config", str(cfg)]) == 2
    assert "is not empty: resume it with --resume" in capsys.readouterr().err
    assert sorted(p.name for p in run.iterdir()) == ["notes.txt"]
    # A resumed run must keep what fixes the network and the task.
    run2 = tmp_path / "run2"
    train(config_from_dict(tiny("kentucky_derby", run2, total_timesteps=256)), progress=False)
    changed = config_from_dict(tiny("kentucky_derby", run2, **{"ppo.net_arch": [16]}))
    with pytest.raises(ConfigError, match=r"'ppo\.net_arch' \(\[32, 32\] -> \[16\]\)"):
        train(changed, resume=True, progress=False)
    # A missing snapshot listed by the pool is reported, not silently dropped.
    pool = json.loads((run2 / "pool.json").read_text())
    pool["snapshots"] = [{"path": "snapshots/gone.zip", "step": 0}]
    (run2 / "pool.json").write_text(json.dumps(pool))
    with pytest.raises(ConfigError, match="snapshots/gone.zip"):
        train(config_from_dict(tiny("kentucky_derby", run2)), resume=True, progress=False)


def test_training_with_a_hint_agent_and_imitation(tmp_path):
    raw = tiny(
        "kentucky_derby",
        tmp_path / "h",
        total_timesteps=256,
        hint="kd_value",
        pretrain={"agent": "kd_value", "steps": 1000, "epochs": 5},
    )
    summary = train(config_from_dict(raw), progress=False)
    # imitation: the policy's most probable move is kd_value's far more often than chance (1/16)
    assert summary["pretrain"]["decisions"] >= 1000 and summary["pretrain"]["accuracy"] > 0.5
    game = make_game("kentucky_derby")
    policy = PPOPolicy.load(tmp_path / "h" / "final.zip", game)
    assert policy.meta["hint"] == "kd_value" and policy.hint is not None
    assert policy.observation_size == game.observation_size + game.num_actions
    assert play_checked(policy, game, games=2, seed=5) > 0
    with pytest.raises(ConfigError, match="config key 'hint': got 'kd_valu' \\(did you mean"):
        config_from_dict({**raw, "hint": "kd_valu"})


def test_training_is_reproducible(tmp_path):
    a = train(
        config_from_dict(tiny("kentucky_derby", tmp_path / "a", total_timesteps=256)),
        progress=False,
    )
    b = train(
        config_from_dict(tiny("kentucky_derby", tmp_path / "b", total_timesteps=256)),
        progress=False,
    )
    game = make_game("kentucky_derby")
    pa = PPOPolicy.load(tmp_path / "a" / "final.zip", game)
    pb = PPOPolicy.load(tmp_path / "b" / "final.zip", game)
    obs = game.new_initial_state(0).observation(0)
    assert np.array_equal(pa.logits(obs), pb.logits(obs))
    assert a["final_evaluation"]["random"]["rows"] == b["final_evaluation"]["random"]["rows"]


def test_eval_curve_svg(tmp_path):
    from training.train import EVAL_FIELDS, write_curve_svg

    csv_path = tmp_path / "eval.csv"
    rows = [",".join(EVAL_FIELDS)]
    for step, w in ((1000, 0.1), (2000, 0.3), (3000, 0.4)):
        for field in ("kd_value", "random"):
            rows.append(f"{step},{field},50,{w},{w - 0.05},{w + 0.05},0,0,0,0")
    csv_path.write_text("\n".join(rows) + "\n")
    write_curve_svg(csv_path, tmp_path / "curve.svg", fair=0.25)
    svg = (tmp_path / "curve.svg").read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert svg.count("<polyline") == 2 and "vs kd_value" in svg and "fair share" in svg


def _interrupted_run(tmp_path: Path, **over) -> tuple[dict, Path, int, str]:
    """Start ``derby-envs train`` in a subprocess, SIGTERM it after its first checkpoint."""
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    cfg = tmp_path / "c.yaml"
    raw = tiny("kentucky_derby", run, total_timesteps=10**7, **over)
    cfg.write_text(yaml.safe_dump(raw))
    proc = subprocess.Popen(
        [sys.executable, "-m", "training.cli", "train", "--config", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not checkpoints(run) and time.time() < deadline:
            time.sleep(0.2)
        assert checkpoints(run), "no checkpoint appeared"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, out
    line = next(x for x in out.splitlines() if x.startswith("interrupted: saved "))
    saved, path = checkpoints(run)[-1]
    assert str(path) in line  # the checkpoint written on the signal
    return raw, cfg, saved, out


def test_sigterm_in_subproc_training_saves_a_checkpoint(tmp_path):
    """SIGTERM while SubprocVecEnv workers may be mid-step: a checkpoint is saved, the workers
    are stopped, and the run resumes from it with its pool."""
    raw, cfg, saved, _ = _interrupted_run(
        tmp_path,
        vec_env="subproc",
        **{
            "checkpoint.every": 128,
            "opponents.self_play": {"enabled": True, "every": 128, "weight": 50},
        },
    )
    run = Path(raw["run_dir"])
    pool = json.loads((run / "pool.json").read_text())
    assert pool["step"] == saved and pool["snapshots"]  # snapshots pushed to the workers
    cfg.write_text(yaml.safe_dump({**raw, "total_timesteps": saved + 256, "vec_env": "dummy"}))
    assert main(["train", "--config", str(cfg), "--resume", "--no-progress"]) == 0
    assert checkpoints(run)[-1][0] >= saved + 256
    after = json.loads((run / "pool.json").read_text())
    assert after["snapshots"][: len(pool["snapshots"])] == pool["snapshots"]


@pytest.mark.slow
def test_subproc_workers_draw_pushed_snapshots(tmp_path):
    run = tmp_path / "run"
    raw = tiny(
        "kentucky_derby",
        run,
        vec_env="subproc",
        total_timesteps=768,
        **{"opponents.self_play": {"enabled": True, "every": 256, "weight": 50}},
    )
    summary = train(config_from_dict(raw), progress=False)
    assert summary["steps"] == 768
    pool = json.loads((run / "pool.json").read_text())
    assert [s["step"] for s in pool["snapshots"]] == [256, 512, 768]
    # draw counts come back from the worker processes: the pushed snapshots reached them
    assert pool["draws_this_session"].get("snapshot@256", 0) > 0


def test_training_a_residual_policy_on_value_features(tmp_path):
    """hint_features: values + ppo.residual_scale trains, saves and reloads a residual policy
    that (after a negligible learning rate) still plays derby_exchange's moves."""
    from agents.derby import DerbyExchange
    from derby_envs.core.policy import choose

    raw = tiny(
        "derby",
        tmp_path / "r",
        total_timesteps=256,
        hint="derby_exchange",
        hint_features="values",
        **{"ppo.residual_scale": 20.0, "ppo.learning_rate": 1e-8, "ppo.n_epochs": 1},
    )
    train(config_from_dict(raw), progress=False)
    game = make_game("derby", num_players=4)
    policy = PPOPolicy.load(tmp_path / "r" / "final.zip", game)
    assert policy.meta["hint_features"] == "values" and policy._prior_dim == game.num_actions
    expert, rng = DerbyExchange(game), np.random.default_rng(0)
    state = game.new_initial_state(11)
    while not state.is_terminal():
        p = state.current_players()[0]
        a = choose(policy, state, p, rng)
        assert a == choose(expert, state, p, rng)
        state.apply_action(p, a)


def test_smoke_configs_are_the_registry_records():
    """configs/smoke/<game>.yaml are exactly the configs the games' records make (every key),
    and every registered game's smoke config validates."""
    shipped = sorted(SMOKE.glob("*.yaml"))
    assert {p.stem for p in shipped} <= set(available_games()) and shipped
    for path in shipped:
        assert yaml.safe_load(path.read_text()) == smoke_config(path.stem), path
    for game in available_games():
        cfg = config_from_dict(smoke_config(game))
        assert cfg.game == game and cfg.total_timesteps > 0


def test_missing_smoke_configs_are_generated(tmp_path):
    """A game without configs/smoke/<game>.yaml gets one from its record; others stay."""
    games = available_games()
    keep, new = games[0], games[1]
    (tmp_path / f"{keep}.yaml").write_text("# mine\n")
    written = write_missing(tmp_path, [keep, new])
    assert written == [tmp_path / f"{new}.yaml"]
    assert (tmp_path / f"{keep}.yaml").read_text() == "# mine\n"
    assert (tmp_path / f"{new}.yaml").read_text() == smoke_yaml(new)
    assert yaml.safe_load(smoke_yaml(new)) == smoke_config(new)
    assert load_smoke(new, tmp_path) == smoke_config(new)
    assert write_missing(tmp_path, [keep, new]) == []


def test_training_with_observation_features(tmp_path):
    """observation_features: derived (with the residual hint last and a warm start): the
    training env inserts the features after the observation, the checkpoint records the set,
    the loaded policy computes them itself (its logits equal the live network's on the training
    env's observations), the critic's warm-start fit is logged, and resume keeps the set."""
    import torch

    from agents.features import ObservationFeatures
    from training.train import make_env

    raw = tiny(
        "derby",
        tmp_path / "f",
        total_timesteps=256,
        hint="derby_exchange",
        hint_features="values",
        observation_features="derived",
        pretrain={"agent": "derby_exchange", "steps": 300, "epochs": 2, "holdout": 3},
        **{"ppo.residual_scale": 20.0, "ppo.n_epochs": 1},
    )
    config = config_from_dict(raw)
    summary = train(config, progress=False)
    assert "value_explained_variance" in summary["pretrain"]
    assert np.isfinite(summary["pretrain"]["holdout_value_explained_variance"])
    game = make_game("derby", num_players=4)
    feats = ObservationFeatures(game, "derived")
    policy = PPOPolicy.load(tmp_path / "f" / "final.zip", game)
    assert policy.meta["observation_features"] == "derived"
    assert policy.observation_size == game.observation_size + feats.size + game.num_actions
    env = make_env(config, [], str(tmp_path / "f"))
    obs, _ = env.reset(seed=5)
    n = game.observation_size
    base = env.unwrapped
    raw_obs = base.game_state.observation(base.seat)
    assert obs.shape == env.observation_space.shape and env.observation_space.contains(obs)
    assert np.array_equal(obs[:n], raw_obs)
    assert np.allclose(obs[n : n + feats.size], feats(raw_obs))
    assert obs[n + feats.size :].max() == 0.0  # the hint's value features stay last
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(tmp_path / "f" / "final.zip", device="cpu")
    mask = base.action_masks()
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs[None]), action_masks=mask[None])
        live = dist.distribution.logits.numpy()[0]
    mine = np.where(
        mask, policy.logits(policy.network_input(raw_obs, mask, np.random.default_rng(0))), -np.inf
    )
    live = np.where(mask, live, -np.inf)
    assert np.allclose(mine - mine.max(), live - live.max(), atol=1e-4)
    # resuming with another feature set is refused; with the same one it goes on
    with pytest.raises(ConfigError, match="observation_features"):
        train(config_from_dict({**raw, "observation_features": None, "total_timesteps": 512}),
              resume=True, progress=False)  # fmt: skip
    assert train(config_from_dict({**raw, "total_timesteps": 512}), resume=True,
                 progress=False)["steps"] >= 512  # fmt: skip
