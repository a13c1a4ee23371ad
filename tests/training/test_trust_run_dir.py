"""Runs survive any crash and have one writer: SIGKILL between the writes of a self-play
snapshot then resume -> the pool is complete and no temporary file stays; a second process on a
live run directory is refused; a damaged newest checkpoint is skipped for the newest intact one;
bad configs, pool files and --out paths fail before anything is created or run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from sb3_contrib import MaskablePPO

from tests.training.test_play_cli import default_sigint
from tests.training.test_training_smoke import tiny
from training.cli import main
from training.files import LOCK_NAME, RunDirInUseError, RunDirLock, is_temp_name
from training.train import checkpoints, train
from training.train.config import ConfigError, config_from_dict, load_config
from training.train.pool import read_pool_file

ROOT = Path(__file__).resolve().parents[2]
SELF_PLAY = {
    "opponents.self_play": {"enabled": True, "every": 256, "weight": 50},
    "checkpoint.every": 256,
    "checkpoint.keep": 3,
}
FULL_POOL = [256, 512, 768, 1024]  # what an uninterrupted run to 1024 steps ends with

# Runs training in a subprocess and SIGKILLs it at the moment the file ``target`` (relative to
# the run directory; ``pool.json@STEP`` = the pool file written for STEP) is about to be moved
# into place ("before": its temporary file is complete, the rename not done) or just after.
KILL_SCRIPT = r"""
import json, os, signal, sys
raw, target, when = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
name, _, at = target.partition("@")
real_replace = os.replace

def hit(src, dst):
    if os.path.relpath(dst, raw["run_dir"]) != name:
        return False
    return not at or json.load(open(src))["step"] == int(at)

def replace(src, dst, *args, **kwargs):
    matched = hit(src, dst)
    if matched and when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst, *args, **kwargs)
    if matched and when == "after":
        os.kill(os.getpid(), signal.SIGKILL)

os.replace = replace
from training.train.config import config_from_dict
from training.train import train
train(config_from_dict(raw), progress=False)
"""


def temp_files(run: Path) -> list[Path]:
    return [p for p in run.rglob("*") if is_temp_name(p.name)]


def assert_complete(run: Path, expected: list[int]) -> None:
    pool = read_pool_file(run / "pool.json")
    assert [s["step"] for s in pool["snapshots"]] == expected
    listed = {s["path"] for s in pool["snapshots"]}
    assert all((run / p).is_file() for p in listed)
    assert {f"snapshots/{p.name}" for p in (run / "snapshots").iterdir()} == listed  # no orphan
    assert temp_files(run) == []


def killed_then_resumed(tmp_path: Path, target: str, when: str, capsys) -> tuple[Path, str]:
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, **SELF_PLAY)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, json.dumps(raw), target, when],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    if when == "before":  # the kill really left a torn write behind
        assert temp_files(run), sorted(str(p) for p in run.rglob("*"))
    train(config_from_dict(raw), resume=True, progress=False)
    err = capsys.readouterr().err
    assert_complete(run, FULL_POOL)
    return run, err


@pytest.mark.parametrize(
    ("target", "when", "note"),
    [
        ("snapshots/step_000000000512.zip", "after", "removed snapshot snapshots/step_000000000512"),
        ("pool.json@512", "before", "removed temporary files"),
        ("pool.json@512", "after", "removed snapshot snapshots/step_000000000512"),
    ],
)  # fmt: skip
def test_sigkill_between_the_writes_of_a_snapshot_loses_nothing(
    tmp_path, capsys, target, when, note
):
    _, err = killed_then_resumed(tmp_path, target, when, capsys)
    assert note in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "when"),
    [
        ("snapshots/step_000000000512.zip", "before"),
        ("checkpoints/step_000000000512.zip", "before"),
        ("checkpoints/step_000000000512.zip", "after"),
        ("pool.json@768", "after"),
    ],
)
def test_sigkill_at_more_points_loses_nothing(tmp_path, capsys, target, when):
    killed_then_resumed(tmp_path, target, when, capsys)


def test_an_unlisted_snapshot_is_restored_on_resume(tmp_path, capsys):
    """The crash window of the old write order (snapshot and checkpoint saved, pool.json not):
    the snapshot file is added back instead of being orphaned."""
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, total_timesteps=512, **SELF_PLAY)
    train(config_from_dict(raw), progress=False)
    pool = json.loads((run / "pool.json").read_text())
    pool["snapshots"] = pool["snapshots"][:-1]  # forget 512
    pool["step"] = 256
    (run / "pool.json").write_text(json.dumps(pool))
    train(config_from_dict({**raw, "total_timesteps": 1024}), resume=True, progress=False)
    assert "restored snapshot snapshots/step_000000000512.zip" in capsys.readouterr().err
    assert_complete(run, FULL_POOL)


def test_a_damaged_newest_checkpoint_falls_back_to_the_intact_one(tmp_path, capsys):
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, total_timesteps=768, **SELF_PLAY)
    train(config_from_dict(raw), progress=False)
    assert [s for s, _ in checkpoints(run)] == [256, 512, 768]
    newest = run / "checkpoints" / "step_000000000768.zip"
    body = bytearray(newest.read_bytes())
    body[len(body) // 3 : len(body) // 3 + 64] = b"\0" * 64  # damage inside a member
    newest.write_bytes(bytes(body))
    train(config_from_dict({**raw, "total_timesteps": 1024}), resume=True, progress=False)
    captured = capsys.readouterr()
    assert "skipping a damaged checkpoint" in captured.err and "step_000000000768" in captured.err
    assert "step 512 -> 1,024" in captured.out  # resumed from the intact one
    assert (run / "checkpoints" / "step_000000000768.zip.corrupt").is_file()  # kept, not lost
    assert [s for s, _ in checkpoints(run)][-1] == 1024
    assert_complete(run, FULL_POOL)


# Runs training in a subprocess that sends itself ``signum`` in the middle of its first
# checkpoint's write (torch's writer calling back into zipfile), then reports the exit status.
SIGNAL_IN_SAVE_SCRIPT = r"""
import json, os, sys, zipfile
raw, signum = json.loads(sys.argv[1]), int(sys.argv[2])
real_write, writes = zipfile._ZipWriteFile.write, [0]

def write(self, data):
    writes[0] += 1
    if writes[0] == 3:  # torch.save's records, not the first: inside its C++ writer
        os.kill(os.getpid(), signum)
    return real_write(self, data)

zipfile._ZipWriteFile.write = write
with open(sys.argv[3], "w") as f:
    json.dump(raw, f)  # JSON is YAML
from training.cli import main
raise SystemExit(main(["train", "--config", sys.argv[3], "--no-progress"]))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_checkpoint_write_still_saves_and_exits_cleanly(tmp_path, signum):
    """Without deferral torch's writer turned the KeyboardInterrupt into a RuntimeError: a
    traceback, exit status 1 and no interrupt checkpoint."""
    run = tmp_path / "run"
    # short: a lost signal ends the run (status 0) rather than hanging the test
    raw = tiny("kentucky_derby", run, total_timesteps=4096, **{"checkpoint.every": 256})
    proc = subprocess.run(
        [sys.executable, "-c", SIGNAL_IN_SAVE_SCRIPT, json.dumps(raw), str(int(signum)),
         str(tmp_path / "c.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, preexec_fn=default_sigint,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 130, out[-3000:]
    assert "Traceback" not in out
    assert "interrupted: saved" in out and "derby-envs train: interrupted" in out
    assert [s for s, _ in checkpoints(run)] == [256]
    assert temp_files(run) == []
    MaskablePPO.load(checkpoints(run)[0][1])  # complete and loadable


def test_a_second_trainer_on_a_live_run_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    cfg = tmp_path / "c.yaml"
    raw = tiny("kentucky_derby", run, total_timesteps=10**7, **{"checkpoint.every": 256})
    cfg.write_text(yaml.safe_dump(raw))
    proc = subprocess.Popen(
        [sys.executable, "-m", "training.cli", "train", "--config", str(cfg), "--no-progress"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 120
        while not checkpoints(run) and time.time() < deadline:
            time.sleep(0.2)
        assert checkpoints(run), "no checkpoint appeared"
        assert main(["train", "--config", str(cfg), "--resume", "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert f"in use by another training process (pid {proc.pid})" in err
        with pytest.raises(RunDirInUseError):
            RunDirLock(run).acquire()
        assert proc.poll() is None  # the live run is untouched and goes on
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, out
    # once the owner is gone the lock is free: the run resumes
    saved = checkpoints(run)[-1][0]
    cfg.write_text(yaml.safe_dump({**raw, "total_timesteps": saved + 256}))
    assert main(["train", "--config", str(cfg), "--resume", "--no-progress"]) == 0
    assert checkpoints(run)[-1][0] >= saved + 256


def test_a_killed_owner_leaves_no_stale_lock(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    code = (
        "import sys, time; from training.files import RunDirLock; "
        f"lock = RunDirLock({str(run)!r}).acquire(); print('held', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(RunDirInUseError, match=str(proc.pid)):
            RunDirLock(run).acquire()
    finally:
        proc.kill()
        proc.wait()
    lock = RunDirLock(run).acquire()  # the kernel released the dead owner's lock
    assert lock.held
    lock.release()


# ----- bad input before anything is created ----------------------------------------------------
@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"seed": 2**70}, r"config key 'seed': got 1180591620717411303424"),
        ({"seed": 2**31}, r"config key 'seed'"),
        ({"evaluation.seed": -1}, r"config key 'evaluation\.seed'"),
        ({"opponents.pool": [{"agent": "random", "weight": float("inf")}]}, r"'opponents\.pool\[0\]\.weight'.*finite"),
        ({"opponents.self_play": {"enabled": True, "weight": float("inf")}}, r"'opponents\.self_play\.weight'.*finite"),
        ({"ppo.learning_rate": float("inf")}, r"'ppo\.learning_rate'"),
    ],
)  # fmt: skip
def test_configs_that_would_fail_later_are_refused_before_the_run_dir(tmp_path, over, message):
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match=message):
        train(config_from_dict(tiny("kentucky_derby", run, **over)), progress=False)
    assert not run.exists()


def test_yaml_inf_weight_through_the_cli(tmp_path, capsys):
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run)
    text = yaml.safe_dump(raw).replace("weight: 1\n", "weight: .inf\n", 1)
    assert ".inf" in text
    (tmp_path / "c.yaml").write_text(text)
    assert main(["train", "--config", str(tmp_path / "c.yaml"), "--no-progress"]) == 2
    assert "finite" in capsys.readouterr().err and not run.exists()


def test_a_setup_failure_leaves_no_run_dir_and_the_rerun_works(tmp_path, monkeypatch):
    """Anything failing after the directory is made and before the first checkpoint (here the
    model construction) removes what this process created, so the corrected rerun starts."""
    import training.train as tt

    run = tmp_path / "run"
    cfg = config_from_dict(tiny("kentucky_derby", run, total_timesteps=256))

    def boom(self, start, checkpoint):
        raise RuntimeError("injected failure while building the model")

    monkeypatch.setattr(tt.Trainer, "build_model", boom)
    with pytest.raises(RuntimeError, match="injected"):
        train(cfg, progress=False)
    assert not run.exists()
    monkeypatch.undo()
    assert train(cfg, progress=False)["steps"] >= 256
    # an existing (empty) directory the user made is kept, only our files go
    run2 = tmp_path / "mine"
    run2.mkdir()
    monkeypatch.setattr(tt.Trainer, "build_model", boom)
    with pytest.raises(RuntimeError):
        train(config_from_dict(tiny("kentucky_derby", run2, total_timesteps=256)), progress=False)
    assert run2.is_dir() and [p.name for p in run2.iterdir()] in ([], [LOCK_NAME])


def test_an_empty_config_file_is_an_error(tmp_path, capsys):
    for text in ("", "# only a comment\n", "\n\n"):
        (tmp_path / "empty.yaml").write_text(text)
        with pytest.raises(ConfigError, match="the config file is empty"):
            load_config(tmp_path / "empty.yaml")
    assert main(["train", "--config", str(tmp_path / "empty.yaml")]) == 2
    assert "empty" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        ({"format": 1, "snapshots": "x", "next_snapshot_at": 1, "step": 0}, "'snapshots' is not a list"),
        ({"format": 1, "snapshots": [], "next_snapshot_at": "10", "step": 0}, "'next_snapshot_at' is '10'"),
        ({"format": 1, "snapshots": [], "next_snapshot_at": 1, "step": True}, "'step' is True"),
        ({"format": 1, "snapshots": [], "next_snapshot_at": 1, "step": -1}, "'step' is -1"),
        ({"format": 1, "snapshots": [7], "next_snapshot_at": 1, "step": 0}, r"snapshots\[0\] = 7"),
        ({"format": 1, "snapshots": [{"path": "a.zip"}], "next_snapshot_at": 1, "step": 0}, r"snapshots\[0\]"),
        ({"format": 1, "snapshots": [{"path": 5, "step": 0}], "next_snapshot_at": 1, "step": 0}, "not a relative .zip path"),
        ({"format": 1, "snapshots": [{"path": "s/a.zip", "step": "0"}], "next_snapshot_at": 1, "step": 0}, r"snapshots\[0\]\.step is '0'"),
        ({"format": 1, "snapshots": [{"path": "s/a.zip", "step": 0}] * 2, "next_snapshot_at": 1, "step": 0}, "listed twice"),
        ({"format": "1", "snapshots": [], "next_snapshot_at": 1, "step": 0}, "not a pool file of format 1"),
        ([1, 2], "not a pool file of format 1"),
    ],
)  # fmt: skip
def test_pool_files_with_wrong_types_get_clear_errors(tmp_path, pool, message):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool))
    with pytest.raises(ConfigError, match=message) as info:
        read_pool_file(path)
    assert "pool.json" in str(info.value)


def test_pool_json_with_wrong_types_through_resume(tmp_path, capsys):
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, total_timesteps=256)
    train(config_from_dict(raw), progress=False)
    pool = json.loads((run / "pool.json").read_text())
    pool["snapshots"] = [{"path": None, "step": "x"}]
    (run / "pool.json").write_text(json.dumps(pool))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**raw, "total_timesteps": 512}))
    assert main(["train", "--config", str(tmp_path / "c.yaml"), "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "pool.json" in err and "snapshots[0]" in err and "Traceback" not in err


def _file(path: Path) -> Path:
    path.write_text("x")
    return path


def _dir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "results.json", "looks like a file name"),
        (lambda d: _file(d / "f"), "is a file"),
        (lambda d: _file(d / "f2") / "sub", "not a writable directory"),
        (lambda d: _dir(d / "o" / "kentucky_derby_4p.csv").parent, "is a directory, not a file"),
    ],
)  # fmt: skip
def test_evaluate_out_is_checked_before_the_tournament(
    tmp_path, capsys, monkeypatch, make, message
):
    import training.evaluation.tournament as ev

    def never(*args, **kwargs):
        raise AssertionError("the tournament ran before --out was checked")

    monkeypatch.setattr(ev, "run_tournament", never)
    out = make(tmp_path)
    assert str(out).startswith(str(tmp_path))
    rc = main(["evaluate", "--game", "kentucky_derby", "--lineup", "random", "--deals", "1",
               "--quiet", "--out", str(out)])  # fmt: skip
    assert rc == 2
    assert message in capsys.readouterr().err


def test_evaluate_out_writes_its_three_files(tmp_path, capsys):
    out = tmp_path / "new" / "dir"
    rc = main(["evaluate", "--game", "kentucky_derby", "--lineup", "random", "--deals", "1",
               "--quiet", "--out", str(out)])  # fmt: skip
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "kentucky_derby_4p.csv", "kentucky_derby_4p.json", "kentucky_derby_4p.md"
    ]  # fmt: skip
    assert json.loads((out / "kentucky_derby_4p.json").read_text())
    assert not [p for p in out.iterdir() if is_temp_name(p.name)]


def test_lock_file_is_the_only_leftover_that_a_new_run_ignores(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_NAME).write_text(f"{os.getpid()}\n")  # e.g. a setup killed right after locking
    assert train(config_from_dict(tiny("kentucky_derby", run, total_timesteps=256)), progress=False)


def test_safe_resume_equals_sb3_full_load(tmp_path):
    """Resume builds the model from the config and restores weights, optimizer state and
    counters without unpickling anything: the result equals sb3's MaskablePPO.load of the same
    checkpoint (weights, Adam moments and step counts), and training goes on from it."""
    import numpy as np
    import torch
    from sb3_contrib import MaskablePPO

    from training.train import Trainer, make_vec_env

    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, total_timesteps=512, **{"checkpoint.every": 256})
    train(config_from_dict(raw), progress=False)
    cfg = config_from_dict({**raw, "total_timesteps": 768})
    trainer = Trainer(cfg, resume=True, progress=False)
    start, ck = trainer.prepare_run_dir()
    try:
        safe = trainer.build_model(start, ck)
    finally:
        trainer.lock.release()
    seed = int(np.random.SeedSequence([cfg.seed, start]).generate_state(1)[0] % 2**31)
    p = cfg.ppo
    full = MaskablePPO.load(
        ck, env=make_vec_env(cfg, [], run), device="cpu", seed=seed,
        learning_rate=p.learning_rate, n_steps=p.n_steps, batch_size=p.batch_size,
        n_epochs=p.n_epochs, gamma=p.gamma, gae_lambda=p.gae_lambda, clip_range=p.clip_range,
        ent_coef=p.ent_coef, vf_coef=p.vf_coef, max_grad_norm=p.max_grad_norm,
        target_kl=p.target_kl, normalize_advantage=p.normalize_advantage,
    )  # fmt: skip
    full.set_random_seed(seed)
    assert safe.num_timesteps == full.num_timesteps == start == 512
    assert safe._n_updates == full._n_updates and safe._episode_num == full._episode_num

    def same(a, b):
        sa, sb = a.policy.state_dict(), b.policy.state_dict()
        assert sa.keys() == sb.keys()
        assert all(torch.equal(sa[k], sb[k]) for k in sa)

    same(safe, full)
    oa, ob = safe.policy.optimizer.state_dict(), full.policy.optimizer.state_dict()
    assert oa["param_groups"] == ob["param_groups"]
    for k in oa["state"]:
        assert all(torch.equal(oa["state"][k][x], ob["state"][k][x]) for x in oa["state"][k])
    before = {k: v.clone() for k, v in safe.policy.state_dict().items()}
    safe.learn(256, reset_num_timesteps=False)  # and training goes on from there
    assert safe.num_timesteps == 768
    assert any(not torch.equal(before[k], v) for k, v in safe.policy.state_dict().items())
    safe.env.close()
    full.env.close()


def test_a_torn_eval_row_is_dropped_on_resume(tmp_path):
    """eval.csv is appended to; a kill mid-append leaves a torn last line, which resume drops
    (the evaluation is redone) instead of failing on it."""
    import csv

    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, total_timesteps=256, **{"evaluation.every": 256})
    train(config_from_dict(raw), progress=False)
    before = list(csv.DictReader((run / "eval.csv").open()))
    with (run / "eval.csv").open("a") as f:
        f.write("5")  # torn mid-number: the step of a row that was being written (512)
    train(config_from_dict({**raw, "total_timesteps": 512}), resume=True, progress=False)
    rows = list(csv.DictReader((run / "eval.csv").open()))
    assert rows[: len(before)] == before and len(rows) > len(before)
    assert all(r["step"] == "512" and r["win_hi95"] for r in rows[len(before) :])
    assert RunDirLock(run).acquire().held  # and the lock was freed at the end
