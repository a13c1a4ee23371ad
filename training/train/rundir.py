"""The run directory of a MaskablePPO run: opening it for a new run or a resume (under its
lock), reconciling what a killed process left, and removing a new run's traces after a failed
setup.

Nothing saved is overwritten by mistake: a new run refuses a non-empty run directory, and
``--resume`` continues from the newest intact checkpoint with its step count and its opponent
pool (resume reconciles the pool with the files, removes stale temporary files and falls back
to the newest intact checkpoint if the newest is damaged). A lock (``.lock``, ``fcntl.flock``)
keeps a second process out of a live run directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from derby_envs.core.datafile import read_yaml
from training.files import LOCK_NAME, RunDirLock, is_temp_name, write_json_atomic, write_text_atomic
from training.train.checkpoints import CHECKPOINT_RE, checkpoints, verify_checkpoint
from training.train.config import (
    CONFIG_MAX_BYTES,
    ConfigError,
    TrainConfig,
    config_from_dict,
    flatten_config,
)
from training.train.pool import pool_state, read_pool_file, snapshot_path

# Keys that fix the shape or meaning of the network: a resumed run must keep them.
FROZEN_ON_RESUME = (
    "game", "game_params", "reward_mode", "hint", "hint_features", "observation_features",
    "ppo.net_arch", "ppo.activation", "ppo.residual_scale"
)  # fmt: skip


def remove_temp_files(run_dir: Path, report: Any = None) -> list[Path]:
    """Remove the temporary files a killed process left in the run directory (called with
    the lock held, so no live writer owns them)."""
    removed = []
    for folder in (run_dir, run_dir / "checkpoints", run_dir / "snapshots"):
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            if p.is_file() and is_temp_name(p.name):
                p.unlink(missing_ok=True)
                removed.append(p)
    if removed and report is not None:
        report(
            "removed temporary files left by an interrupted write: "
            + ", ".join(str(p.relative_to(run_dir)) for p in removed)
        )
    return removed


def has_content(run_dir: Path) -> bool:
    """Anything but the lock file (which a crashed setup may leave on its own)."""
    return any(p.name != LOCK_NAME for p in run_dir.iterdir())


def check_resume_compatible(saved: TrainConfig, given: TrainConfig) -> None:
    a, b = flatten_config(saved.to_dict()), flatten_config(given.to_dict())
    changed = [k for k in FROZEN_ON_RESUME if a.get(k) != b.get(k)]
    if changed:
        raise ConfigError(
            "cannot resume: the config changes "
            + ", ".join(f"{k!r} ({a.get(k)!r} -> {b.get(k)!r})" for k in changed)
            + "; these fix the network and the task of the saved run. Start a new run instead."
        )


def load_run_config(run_dir: Path) -> TrainConfig:
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise ConfigError(
            f"cannot resume: {str(path)!r} is missing (not a training run directory?)"
        )
    raw = read_yaml(
        path, what="cannot resume: the run config", max_bytes=CONFIG_MAX_BYTES, error=ConfigError
    )
    if not isinstance(raw, dict):
        raise ConfigError(f"cannot resume: {str(path)!r} is not a training config (empty?)")
    try:
        return config_from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(f"cannot resume: {str(path)!r}: {exc}") from None


class RunDir:
    """The run directory ``config.run_path`` as one run uses it: :meth:`open` checks it and
    takes its lock (released by :meth:`close`); :meth:`discard_if_new` removes what a new run
    wrote when it fails before its first checkpoint."""

    def __init__(self, config: TrainConfig, game: Any, warn: Callable[[str], None]) -> None:
        self.config = config
        self.game = game
        self.path = config.run_path
        self.lock = RunDirLock(self.path)
        self.warn = warn
        # a new run: "dir" if this process made the run directory, "contents" if it was empty
        self.created: str | None = None

    def open(self, resume: bool) -> tuple[int, Path | None, dict[str, Any]]:
        """Checks before any work, under the run-directory lock (taken here); returns
        (start step, checkpoint to load, the opponent pool's state)."""
        return self._open_resume() if resume else self._open_new()

    def close(self) -> None:
        self.lock.release()

    def _open_resume(self) -> tuple[int, Path, dict[str, Any]]:
        run = self.path
        if not run.is_dir():
            raise ConfigError(
                f"cannot resume: no checkpoint in {str(run / 'checkpoints')!r} (the run "
                "directory does not exist)"
            )
        if not checkpoints(run):  # checked before locking: no .lock in a stranger's dir
            raise ConfigError(f"cannot resume: no checkpoint in {str(run / 'checkpoints')!r}")
        self.lock.acquire()  # a second --resume of a live run stops here
        remove_temp_files(run, self.warn)
        check_resume_compatible(load_run_config(run), self.config)
        data = read_pool_file(run / "pool.json", self.game)
        step, path = self.newest_intact_checkpoint()
        snapshots = self.reconcile_snapshots(data["snapshots"], step)
        state = pool_state(self.config, self.game, step, snapshots)
        state["checkpoint"] = str(path.relative_to(run))
        if int(data["step"]) == step:  # e.g. a snapshot that was due when it was stopped
            state["next_snapshot_at"] = int(data["next_snapshot_at"])
        write_json_atomic(run / "pool.json", state)  # the reconciled pool
        return step, path, state

    def _open_new(self) -> tuple[int, None, dict[str, Any]]:
        run = self.path
        if run.exists() and (not run.is_dir() or has_content(run)):
            raise ConfigError(
                f"run directory {str(run)!r} is not empty: resume it with --resume, or give "
                "another 'name' / 'run_dir' (saved work is never overwritten)"
            )
        made_dir = not run.exists()
        run.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        if has_content(run):  # another new run won the race for this directory
            raise ConfigError(f"run directory {str(run)!r} was filled by another run meanwhile")
        # From here on everything in the directory is this process's (it was empty and the
        # lock is held), so a failure before the first checkpoint may remove it all.
        self.created = "dir" if made_dir else "contents"
        write_text_atomic(
            run / "config.yaml", yaml.safe_dump(self.config.to_dict(), sort_keys=False)
        )
        return 0, None, pool_state(self.config, self.game, 0, [])

    def newest_intact_checkpoint(self) -> tuple[int, Path]:
        """The newest checkpoint that reads back whole (CRCs, metadata, weights, step count);
        damaged newer ones are renamed ``*.corrupt`` (kept, never read again) and reported."""
        from agents.ppo import CheckpointError

        for step, path in reversed(checkpoints(self.path)):
            try:
                verify_checkpoint(path, step)
            except CheckpointError as exc:
                keep = path.with_name(path.name + ".corrupt")
                os.replace(path, keep)
                self.warn(f"skipping a damaged checkpoint ({exc}); kept as {keep.name}")
                continue
            return step, path
        raise ConfigError(
            f"cannot resume: no intact checkpoint in {str(self.path / 'checkpoints')!r} "
            "(the damaged ones are kept as *.corrupt)"
        )

    def reconcile_snapshots(self, listed: list[dict[str, Any]], step: int) -> list[dict]:
        """The pool's snapshots as of checkpoint ``step``, matched with the files on disk.

        pool.json is written before each checkpoint, so it lists every snapshot up to the
        newest checkpoint; entries and files past ``step`` (a crash between the writes, or a
        fallback to an older checkpoint) are dropped and their files removed: training redoes
        those steps and takes them again. A snapshot file that no entry names (written just
        before a crash, or by an older version that wrote pool.json last) is added back if it
        is at most ``step`` and reads back whole, and removed otherwise.
        """
        from agents.ppo import CheckpointError

        run = self.path
        kept: list[dict[str, Any]] = []
        for s in listed:
            if int(s["step"]) > step:
                continue
            if not (run / s["path"]).is_file():
                raise ConfigError(
                    f"cannot resume: the pool lists snapshot {s['path']!r}, which is missing "
                    f"from {str(run)!r}"
                )
            kept.append({"path": s["path"], "step": int(s["step"])})
        named = {str(snapshot_path(run, s["path"])) for s in listed}
        folder = run / "snapshots"
        for p in sorted(folder.iterdir()) if folder.is_dir() else []:
            m = CHECKPOINT_RE.match(p.name)
            if not m or (str(p.resolve()) in named and int(m.group(1)) <= step):
                continue
            rel, at = f"snapshots/{p.name}", int(m.group(1))
            if str(p.resolve()) in named or at > step:
                p.unlink()
                self.warn(f"removed snapshot {rel}: taken after the checkpoint at step {step:,}")
                continue
            try:
                verify_checkpoint(p, at)
            except CheckpointError as exc:
                p.unlink()
                self.warn(f"removed an unreadable unlisted snapshot {rel} ({exc})")
                continue
            kept.append({"path": rel, "step": at})
            self.warn(f"restored snapshot {rel} to the pool (it was missing from pool.json)")
        return sorted(kept, key=lambda s: s["step"])

    def discard_if_new(self) -> None:
        """A new run that fails before its first checkpoint leaves no directory behind (it
        would block the corrected rerun); only what this process created is removed."""
        if not self.created or checkpoints(self.path):
            return
        if self.created == "dir":
            shutil.rmtree(self.path, ignore_errors=True)
        else:  # the user's (empty) directory stays; only what this run wrote goes
            for p in self.path.iterdir():
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                elif p.name != LOCK_NAME:
                    p.unlink(missing_ok=True)
        self.created = None
