"""The README's main job in its quick form: trains, evaluates, prints the tables."""

from __future__ import annotations

from training.tools.demo import CONFIG, fresh_run_dir, run_demo
from training.train.config import load_config


def test_demo_config_is_valid():
    cfg = load_config(CONFIG)
    assert cfg.game == "kentucky_derby" and cfg.num_players == 5
    assert cfg.vec_env == "batch"  # the fast path
    assert cfg.total_timesteps <= 300_000  # about half a minute on 2 cores


def test_demo_quick(tmp_path, capsys):
    assert run_demo(quick=True, runs_root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "PPO (1,024 steps) vs a field of kd_value" in out
    assert "| ppo | 30 |" in out and "| kd_value | 120 |" in out
    assert "For reference, random vs a field of kd_value" in out
    assert "ppo vs kd_value: chips per game" in out and "random vs kd_value: chips" in out
    (run,) = tmp_path.iterdir()
    assert (run / "final.zip").is_file() and (
        run / "ppo_vs_kd_value" / "kentucky_derby_5p.md"
    ).is_file()


def test_demo_never_reuses_a_run_directory(tmp_path):
    first = fresh_run_dir(tmp_path)
    first.mkdir()
    second = fresh_run_dir(tmp_path)
    assert second != first and not second.exists()
    second.mkdir()
    assert fresh_run_dir(tmp_path) not in (first, second)
