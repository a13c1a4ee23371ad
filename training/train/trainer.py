"""MaskablePPO training with opponent pools, self-play snapshots, checkpoints and resume.

``derby-envs train --config configs/kentucky_derby_5p.yaml`` (see ``docs/training.md``).

The learner plays the game's Gymnasium single-agent view (:class:`SingleAgentEnv`) in a random
seat every episode; the other seats are :class:`training.pool.PoolSeat` objects drawing their
player from the opponent pool at every reset. ``n_envs`` copies run in a ``DummyVecEnv`` or a
``SubprocVecEnv``.

Run directory (``runs/<name>`` by default)::

    .lock              held (fcntl.flock) by the process training in the directory
    config.yaml        the validated config of the run
    pool.json          the opponent pool: snapshot paths and steps, next snapshot step (atomic)
    checkpoints/       step_<steps>.zip, the newest ``checkpoint.keep`` of them (atomic)
    snapshots/         step_<steps>.zip, frozen learners used as self-play opponents
    tb/                TensorBoard logs (env-steps/s, evaluation win shares, PPO losses)
    eval.csv           periodic evaluations (step, field, win share and its 95% interval, ...)
    eval_curve.svg     the win-share curve drawn from eval.csv
    final.zip          the trained policy (a MaskablePPO checkpoint; also a policy for evaluate)
    summary.json       steps, time, env-steps/s, final evaluation

Nothing saved is overwritten by mistake: a new run refuses a non-empty run directory, every
file other than the appended ``eval.csv`` and TensorBoard's own logs is written to a
temporary name and moved into place, and ``--resume`` continues from the
newest checkpoint with its step count and its opponent pool (the writes of a snapshot are
ordered: snapshot file, then ``pool.json``, then the checkpoint, so a kill at any moment loses
no snapshot; resume reconciles the pool with the files, removes stale temporary files and falls
back to the newest intact checkpoint if the newest is damaged). A lock (``.lock``,
``fcntl.flock``) keeps a second process out of a live run directory. Ctrl-C or SIGTERM saves a
checkpoint before stopping.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import importlib
import io
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any, TextIO

import gymnasium
import numpy as np
import yaml

from derby_envs.registry import GAMES
from training.config import ConfigError, TrainConfig, config_from_dict
from training.files import (
    LOCK_NAME,
    RunDirLock,
    fsync_file,
    is_temp_name,
    write_json_atomic,
    write_text_atomic,
)
from training.pool import POOL_FORMAT, OpponentPool, read_pool_file, snapshot_path

CHECKPOINT_RE = re.compile(r"^step_(\d+)\.zip$")
EVAL_FIELDS = ["step", "field", "games", "win_share", "win_lo95", "win_hi95", "mean_score",
               "advantage", "adv_lo95", "adv_hi95"]  # fmt: skip
# Keys that fix the shape or meaning of the network: a resumed run must keep them.
FROZEN_ON_RESUME = (
    "game", "game_params", "reward_mode", "hint", "hint_features", "ppo.net_arch",
    "ppo.activation", "ppo.residual_scale"
)  # fmt: skip


# ----- environments -------------------------------------------------------------------------
def env_class(game: str) -> type:
    module, cls = GAMES[game].gym_entry.split(":")
    return getattr(importlib.import_module(module), cls)


class PoolWrapper(gymnasium.Wrapper):
    """Exposes the opponent pool to ``VecEnv.env_method`` (``add_snapshot``, ``pool_draws``)."""

    def __init__(self, env: Any, pool: OpponentPool) -> None:
        super().__init__(env)
        self.pool = pool

    def add_snapshot(self, path: str, step: int) -> int:
        self.pool.add_snapshot(path, step)
        return len(self.pool.snapshots)

    def pool_draws(self) -> dict[str, int]:
        return dict(self.pool.draws)


class HintWrapper(gymnasium.ObservationWrapper):
    """Appends the hint agent's view of the learner's decision to its observation.

    ``features="action"``: the one-hot of the hint agent's choice; ``"values"``: its
    ``agents.ppo.value_features`` (one per action, in [-1, 0]). The hint agent decides for the
    learner's seat with the learner's own information (the observation, or for a state-based
    agent the state, which it may only use through ``resample_hidden``); at the end of a game
    the hint part is zero.
    """

    def __init__(self, env: Any, hint: Any, features: str = "action") -> None:
        super().__init__(env)
        self.hint = hint
        self.features = features
        self.num_actions = int(env.action_space.n)
        low, high = env.observation_space.low, env.observation_space.high
        lo, hi = (-1.0, 0.0) if features == "values" else (0.0, 1.0)
        self.observation_space = gymnasium.spaces.Box(
            low=np.concatenate([low, np.full(self.num_actions, lo, np.float32)]),
            high=np.concatenate([high, np.full(self.num_actions, hi, np.float32)]),
            dtype=np.float32,
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        from agents.ppo import with_hint, with_values
        from derby_envs.core.policy import choose

        base = self.env.unwrapped
        state = base.game_state
        if state.is_terminal():
            return np.concatenate([observation, np.zeros(self.num_actions, np.float32)])
        if self.features == "values":
            return with_values(observation, self.hint, state.legal_mask(base.seat))
        h = choose(self.hint, state, base.seat, base.np_random)
        return with_hint(observation, h, self.num_actions)


def build_pool(config: Any, game: Any, snapshots: list[dict], root: Path) -> OpponentPool:
    """The opponent pool of a config's ``opponents`` section (MaskablePPO's TrainConfig and
    RLlib's RLlibTrainConfig share it)."""
    sp = config.opponents.self_play
    return OpponentPool(
        game,
        [dataclasses.asdict(m) for m in config.opponents.pool],
        snapshot_weight=sp.weight if sp.enabled else 0.0,
        max_active=sp.max_active,
        sampling=sp.sampling,
        snapshot_deterministic=sp.deterministic,
        snapshots=snapshots,
        root=root,
    )


def make_env(config: TrainConfig, snapshots: list[dict], root: str) -> Any:
    """One training env (top-level so that SubprocVecEnv workers can rebuild it)."""
    import torch
    from stable_baselines3.common.monitor import Monitor

    torch.set_num_threads(1)  # snapshot opponents run numpy; keep workers from oversubscribing
    game = config.make_game()
    pool = build_pool(config, game, snapshots, Path(root))
    env = env_class(config.game)(
        opponents=pool.seats(game.num_players - 1, config.opponents.draw),
        learner_seat=config.learner_seat,
        reward_mode=config.reward_mode,
        **config.game_params,
    )
    if config.hint is not None:
        from agents.registry import make_policy

        env = HintWrapper(env, make_policy(config.hint, game), config.hint_features)
    return Monitor(PoolWrapper(env, pool))


def make_vec_env(config: TrainConfig, snapshots: list[dict], root: Path) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [
        functools.partial(make_env, config, list(snapshots), str(root))
        for _ in range(config.n_envs)
    ]
    if config.vec_env == "subproc":
        return SubprocVecEnv(fns)
    return DummyVecEnv(fns)


# ----- run directory ------------------------------------------------------------------------
def checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """(steps, path) of the run's checkpoints, oldest first."""
    folder = run_dir / "checkpoints"
    if not folder.is_dir():
        return []
    out = []
    for p in folder.iterdir():
        m = CHECKPOINT_RE.match(p.name)
        if m:
            out.append((int(m.group(1)), p))
    return sorted(out)


def latest_checkpoint(run_dir: Path) -> tuple[int, Path] | None:
    found = checkpoints(run_dir)
    return found[-1] if found else None


def verify_checkpoint(path: Path, step: int | None = None) -> None:
    """Check that a checkpoint of this run reads back whole, without loading it: every zip
    member's CRC, the safe reader's checks of metadata and weights, the step in its name.

    Raises:
        CheckpointError: naming the file and the damage.
    """
    from agents.ppo import CheckpointError, read_checkpoint

    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise CheckpointError(f"{str(path)!r}: not a readable zip ({exc})") from None
    if bad is not None:
        raise CheckpointError(f"{str(path)!r}: member {bad!r} fails its CRC check")
    info = read_checkpoint(path)
    if step is not None and info.num_timesteps != step:
        raise CheckpointError(
            f"{str(path)!r} holds {info.num_timesteps} steps, but its name says {step}"
        )


def build_fresh_model(
    cfg: TrainConfig,
    game: Any,
    vec_env: Any,
    seed: int,
    tensorboard_log: str | None = None,
    verbose: int = 0,
) -> Any:
    """A new MaskablePPO with the network and hyper-parameters of ``cfg``."""
    import torch
    from sb3_contrib import MaskablePPO

    p = cfg.ppo
    hyper = {
        "learning_rate": p.learning_rate,
        "n_steps": p.n_steps,
        "batch_size": p.batch_size,
        "n_epochs": p.n_epochs,
        "gamma": p.gamma,
        "gae_lambda": p.gae_lambda,
        "clip_range": p.clip_range,
        "ent_coef": p.ent_coef,
        "vf_coef": p.vf_coef,
        "max_grad_norm": p.max_grad_norm,
        "target_kl": p.target_kl,
        "normalize_advantage": p.normalize_advantage,
    }
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[p.activation]
    policy: Any = "MlpPolicy"
    policy_kwargs: dict[str, Any] = {"net_arch": list(p.net_arch), "activation_fn": activation}
    if p.residual_scale is not None:
        from agents.residual import ResidualMaskablePolicy

        policy = ResidualMaskablePolicy
        policy_kwargs.update(prior_dim=game.num_actions, prior_scale=p.residual_scale)
    return MaskablePPO(
        policy,
        vec_env,
        policy_kwargs=policy_kwargs,
        tensorboard_log=tensorboard_log,
        seed=seed,
        device="cpu",
        verbose=verbose,
        **hyper,
    )


def restore_checkpoint(model: Any, path: Path, optimizer: bool = True) -> None:
    """Load a checkpoint into ``model`` (built from the run's config, so the same network)
    without running code from the file: the metadata and weights pass
    :func:`agents.ppo.read_checkpoint`, the policy and optimizer state dicts are read with
    ``torch.load(weights_only=True)`` and loaded strictly (every key and shape must match), and
    the step counters come from the plain JSON fields. ``optimizer=False`` keeps the model's
    fresh optimizer (export).

    Raises:
        CheckpointError: naming the file and what does not fit.
    """
    import torch

    from agents.ppo import CheckpointError, read_checkpoint

    info = read_checkpoint(path)
    source = str(path)
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
            states = {
                name: torch.load(io.BytesIO(z.read(entry)), map_location="cpu", weights_only=True)
                for name, entry in (("policy", "policy.pth"), ("optimizer", "policy.optimizer.pth"))
                if entry in z.namelist()
            }
    except Exception as exc:  # read_checkpoint passed, so this is the optimizer file
        raise CheckpointError(
            f"cannot resume from {source!r}: its optimizer state is not plain data "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None
    try:
        model.policy.load_state_dict(states["policy"], strict=True)
        if optimizer and "optimizer" in states:
            model.policy.optimizer.load_state_dict(states["optimizer"])
    except Exception as exc:  # missing/unexpected keys, shape mismatches, bad param groups
        raise CheckpointError(
            f"cannot resume from {source!r}: it does not fit the network of the run's config "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None
    model.num_timesteps = info.num_timesteps
    for key in ("_episode_num", "_n_updates"):  # logging counters
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            setattr(model, key, value)


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


def _eval_row_step(row: dict[str, Any]) -> float:
    """The step of an eval.csv row; a row torn by a kill mid-append counts as infinitely late
    (dropped on resume, the evaluation is redone)."""
    if None in row or any(row.get(k) is None for k in EVAL_FIELDS) or not row["field"]:
        return float("inf")
    try:
        return int(row["step"])
    except ValueError:
        return float("inf")


def _has_content(run_dir: Path) -> bool:
    """Anything but the lock file (which a crashed setup may leave on its own)."""
    return any(p.name != LOCK_NAME for p in run_dir.iterdir())


def save_model_atomic(model: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.zip")
    try:
        model.save(tmp)
        fsync_file(tmp)  # the rename must not reach the disk before the data
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def flatten_config(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config dict -> dotted keys (``game_params`` and pool ``params`` kept whole)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and k != "game_params" and k != "params":
            out.update(flatten_config(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


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
    try:
        raw = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot resume: {str(path)!r} is not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"cannot resume: {str(path)!r} is not a training config (empty?)")
    try:
        return config_from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(f"cannot resume: {str(path)!r}: {exc}") from None


# ----- evaluation ---------------------------------------------------------------------------
def evaluate_policy(
    policy: Any, game: Any, fields: list[str], deals: int, seed: int, cache: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Seat-rotated tournaments of ``policy`` (label ``learner``) against each field."""
    from training.evaluate import load_agent, run_tournament

    out = {}
    n = game.num_players
    for spec in fields:
        if spec not in cache:
            cache[spec] = load_agent(spec, game)
        result = run_tournament(
            game,
            ["learner"] + [spec] * (n - 1),
            deals,
            seed=seed,
            progress=False,
            policies={"learner": policy, spec: cache[spec]},
        )
        row = next(r for r in result.rows if r["agent"] == "learner")
        out[spec] = {"result": result, "row": row}
    return out


def write_curve_svg(csv_path: Path, svg_path: Path, fair: float) -> None:
    """A dependency-free SVG plot of the evaluation win share (with its 95% band) per field."""
    rows = list(csv.DictReader(csv_path.open())) if csv_path.is_file() else []
    if not rows:
        return
    fields = list(dict.fromkeys(r["field"] for r in rows))
    steps = [int(r["step"]) for r in rows]
    x0, x1 = 0, max(max(steps), 1)
    W, H, L, B = 640, 360, 50, 40
    ymax = min(1.0, max(0.5, max(float(r["win_hi95"]) for r in rows) * 1.1))

    def px(s: float) -> float:
        return L + (W - L - 10) * (s - x0) / (x1 - x0)

    def py(v: float) -> float:
        return H - B - (H - B - 10) * v / ymax

    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<line x1="{L}" y1="{py(0)}" x2="{W - 10}" y2="{py(0)}" stroke="black"/>',
        f'<line x1="{L}" y1="{py(0)}" x2="{L}" y2="10" stroke="black"/>',
        f'<line x1="{L}" y1="{py(fair)}" x2="{W - 10}" y2="{py(fair)}" stroke="gray" stroke-dasharray="4"/>',
        f'<text x="{W - 10}" y="{py(fair) - 3}" text-anchor="end" fill="gray">fair share 1/n</text>',
        f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">env steps (max {x1:,})</text>',
        f'<text x="12" y="{(H - B) / 2}" transform="rotate(-90 12 {(H - B) / 2})" text-anchor="middle">win share vs field</text>',
    ]
    for v in np.linspace(0, ymax, 5):
        parts.append(f'<text x="{L - 4}" y="{py(v) + 4}" text-anchor="end">{v:.2f}</text>')
    for i, f in enumerate(fields):
        c = colors[i % len(colors)]
        pts = [(int(r["step"]), r) for r in rows if r["field"] == f]
        band = [f"{px(s)},{py(float(r['win_hi95']))}" for s, r in pts] + [
            f"{px(s)},{py(float(r['win_lo95']))}" for s, r in reversed(pts)
        ]
        parts.append(f'<polygon points="{" ".join(band)}" fill="{c}" opacity="0.15"/>')
        line = " ".join(f"{px(s)},{py(float(r['win_share']))}" for s, r in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2"/>')
        parts.append(f'<text x="{L + 8}" y="{20 + 14 * i}" fill="{c}">vs {f}</text>')
    parts.append("</svg>")
    write_text_atomic(svg_path, "\n".join(parts) + "\n")


# ----- the callback ---------------------------------------------------------------------------
def _make_callback(trainer: Trainer):
    from stable_baselines3.common.callbacks import BaseCallback

    class TrainerCallback(BaseCallback):
        """Checkpoints, snapshots, evaluations, speed logs and the progress bar."""

        def _on_training_start(self) -> None:
            trainer.on_start(self.model)

        def _on_rollout_start(self) -> None:
            # Between two PPO updates: the weights match every step counted so far.
            trainer.on_boundary(self.model)

        def _on_rollout_end(self) -> None:
            trainer.on_rollout_end(self.model)

        def _on_step(self) -> bool:
            trainer.on_step(self.model)
            return True

    return TrainerCallback()


# ----- the trainer --------------------------------------------------------------------------
class Trainer:
    """One training run; ``run()`` does the work. See the module docstring."""

    def __init__(
        self,
        config: TrainConfig,
        resume: bool = False,
        progress: bool | None = None,
        out: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.config = config
        self.resume = resume
        self.progress = config.logging.progress_bar if progress is None else progress
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.run_dir = config.run_path
        self.lock = RunDirLock(self.run_dir)
        # a new run: "dir" if this process made the run directory, "contents" if it was empty
        self.created: str | None = None
        self.game = config.make_game()
        self.vec_env: Any = None
        self.pool_state: dict[str, Any] = {}
        self.field_cache: dict[str, Any] = {}
        self.bar: Any = None

    def log(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(msg, file=self.out)
        else:
            print(msg, file=self.out, flush=True)

    def warn(self, msg: str) -> None:
        """Recovery notes (a skipped checkpoint, a reconciled pool) go to stderr."""
        print(f"derby-envs train: {msg}", file=self.err, flush=True)

    # ----- setup ----------------------------------------------------------------------
    def prepare_run_dir(self) -> tuple[int, Path | None]:
        """Checks before any work, under the run-directory lock (taken here, released at the
        end of :meth:`run`); returns (start step, checkpoint to load)."""
        run = self.run_dir
        if self.resume:
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
            data = read_pool_file(run / "pool.json")
            step, path = self.newest_intact_checkpoint()
            snapshots = self.reconcile_snapshots(data["snapshots"], step)
            self.pool_state = self._pool_state(step, snapshots)
            self.pool_state["checkpoint"] = str(path.relative_to(run))
            if int(data["step"]) == step:  # e.g. a snapshot that was due when it was stopped
                self.pool_state["next_snapshot_at"] = int(data["next_snapshot_at"])
            write_json_atomic(run / "pool.json", self.pool_state)  # the reconciled pool
            return step, path
        if run.exists() and (not run.is_dir() or _has_content(run)):
            raise ConfigError(
                f"run directory {str(run)!r} is not empty: resume it with --resume, or give "
                "another 'name' / 'run_dir' (saved work is never overwritten)"
            )
        made_dir = not run.exists()
        run.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        if _has_content(run):  # another new run won the race for this directory
            raise ConfigError(f"run directory {str(run)!r} was filled by another run meanwhile")
        # From here on everything in the directory is this process's (it was empty and the
        # lock is held), so a failure before the first checkpoint may remove it all.
        self.created = "dir" if made_dir else "contents"
        write_text_atomic(
            run / "config.yaml", yaml.safe_dump(self.config.to_dict(), sort_keys=False)
        )
        self.pool_state = self._pool_state(0, [])
        return 0, None

    def newest_intact_checkpoint(self) -> tuple[int, Path]:
        """The newest checkpoint that reads back whole (CRCs, metadata, weights, step count);
        damaged newer ones are renamed ``*.corrupt`` (kept, never read again) and reported."""
        from agents.ppo import CheckpointError

        for step, path in reversed(checkpoints(self.run_dir)):
            try:
                verify_checkpoint(path, step)
            except CheckpointError as exc:
                keep = path.with_name(path.name + ".corrupt")
                os.replace(path, keep)
                self.warn(f"skipping a damaged checkpoint ({exc}); kept as {keep.name}")
                continue
            return step, path
        raise ConfigError(
            f"cannot resume: no intact checkpoint in {str(self.run_dir / 'checkpoints')!r} "
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

        run = self.run_dir
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

    def _pool_state(self, step: int, snapshots: list[dict]) -> dict[str, Any]:
        every = self.config.opponents.self_play.every
        return {
            "format": POOL_FORMAT,
            "game": self.game.name,
            "params": self.game.params,
            "step": step,
            "fixed": [dataclasses.asdict(m) for m in self.config.opponents.pool],
            "self_play": dataclasses.asdict(self.config.opponents.self_play),
            "snapshots": list(snapshots),
            "next_snapshot_at": (step // every + 1) * every,
        }

    def build_model(self, start: int, checkpoint: Path | None) -> Any:
        import torch

        from agents.ppo import CheckpointError

        cfg = self.config
        torch.set_num_threads(cfg.torch_threads)
        self.vec_env = make_vec_env(cfg, self.pool_state["snapshots"], self.run_dir)
        tb = str(self.run_dir / "tb") if cfg.logging.tensorboard else None
        # A resumed run must not replay the deals of its start: derive its seed from the step.
        seed = (
            cfg.seed
            if start == 0
            else int(np.random.SeedSequence([cfg.seed, start]).generate_state(1)[0] % 2**31)
        )
        # A resumed run is built exactly like a new one (from the validated config, which fixes
        # the network: FROZEN_ON_RESUME), then takes the checkpoint's weights, optimizer state
        # and counters through restore_checkpoint: no code from the file runs, even for a run
        # directory someone else wrote (sb3's MaskablePPO.load would unpickle its fields).
        model = build_fresh_model(
            cfg, self.game, self.vec_env, seed, tensorboard_log=tb, verbose=cfg.logging.verbose
        )
        if checkpoint is not None:
            try:
                restore_checkpoint(model, checkpoint)
            except BaseException:
                self.vec_env.close()
                raise
            if model.num_timesteps != start:
                self.vec_env.close()
                raise CheckpointError(
                    f"checkpoint {str(checkpoint)!r} holds {model.num_timesteps} steps, but its "
                    f"name says {start}"
                )
            model.set_random_seed(seed)  # as after sb3's load: the RNGs restart from the seed
        model.derby_meta = self.meta(model)
        return model

    def meta(self, model: Any) -> dict[str, Any]:
        return {
            "game": self.game.name,
            "params": dict(self.game.params),
            "reward_mode": self.config.reward_mode or self.game.reward_modes[0],
            "hint": self.config.hint,
            "hint_features": self.config.hint_features,
            "run": self.config.run_name,
            "seed": self.config.seed,
            "steps": int(model.num_timesteps),
            "observation_size": self.game.observation_size,
            "num_actions": self.game.num_actions,
        }

    # ----- saving ---------------------------------------------------------------------
    def save_checkpoint(self, model: Any, ask_workers: bool = True) -> Path:
        """pool.json first, then the checkpoint (see :meth:`take_snapshot` for why)."""
        step = int(model.num_timesteps)
        model.derby_meta = self.meta(model)
        path = self.run_dir / "checkpoints" / f"step_{step:012d}.zip"
        self.pool_state["step"] = step
        self.pool_state["checkpoint"] = str(path.relative_to(self.run_dir))
        self.write_pool(model, ask_workers)
        save_model_atomic(model, path)
        for _, old in checkpoints(self.run_dir)[: -self.config.checkpoint.keep]:
            old.unlink(missing_ok=True)
        return path

    def write_pool(self, model: Any, ask_workers: bool = True) -> None:
        if ask_workers:
            try:
                draws: dict[str, int] = {}
                for d in self.vec_env.env_method("pool_draws"):
                    for k, v in d.items():
                        draws[k] = draws.get(k, 0) + v
                self.pool_state["draws_this_session"] = draws
            except Exception:  # statistics only; never lose a checkpoint over them
                pass
        write_json_atomic(self.run_dir / "pool.json", self.pool_state)

    def stop_workers(self) -> None:
        """Stop the envs after an interrupt, when a worker may be in the middle of a step."""
        processes = getattr(self.vec_env, "processes", None)
        if processes is None:  # DummyVecEnv: nothing runs in the background
            self.vec_env.close()
            return
        for proc in processes:
            proc.terminate()
        for proc in processes:
            proc.join(timeout=10)
        self.vec_env.closed = True  # do not wait for replies that will never come

    def take_snapshot(self, model: Any) -> None:
        step = int(model.num_timesteps)
        rel = f"snapshots/step_{step:012d}.zip"
        model.derby_meta = self.meta(model)
        save_model_atomic(model, self.run_dir / rel)
        self.pool_state["snapshots"].append({"path": rel, "step": step})
        every = self.config.opponents.self_play.every
        self.pool_state["next_snapshot_at"] = (step // every + 1) * every
        self.vec_env.env_method("add_snapshot", rel, step)
        # Order for crash safety: the snapshot file, then pool.json naming it, then the
        # checkpoint. A kill anywhere leaves pool.json listing every snapshot up to the newest
        # checkpoint; what lies past it is dropped on resume (reconcile_snapshots).
        self.save_checkpoint(model)
        self.log(f"step {step:,}: self-play snapshot {rel} added to the pool")

    # ----- behaviour-cloning warm start -------------------------------------------------
    def pretrain(self, model: Any) -> dict[str, Any]:
        """Imitate ``pretrain.agent`` playing the learner's seat (actor: cross-entropy on its
        moves; critic: the returns it obtained), before the first PPO update."""
        import torch

        from derby_envs.core.policy import choose
        from training.evaluate import load_agent

        cfg = self.config
        pc = cfg.pretrain
        t0 = time.perf_counter()
        expert = load_agent(pc.agent, self.game)
        env = make_env(cfg, [], str(self.run_dir))
        base = env.unwrapped
        rng = np.random.default_rng([cfg.seed, 1])
        obs_l, act_l, mask_l, ret_l = [], [], [], []
        episode: list[float] = []
        obs, _ = env.reset(seed=cfg.seed + 1_000_003)
        while True:
            mask = base.action_masks()
            a = choose(expert, base.game_state, base.seat, rng)
            obs_l.append(obs)
            act_l.append(a)
            mask_l.append(mask)
            obs, reward, terminated, truncated, _ = env.step(a)
            episode.append(float(reward))
            if terminated or truncated:
                g, rets = 0.0, []
                for r in reversed(episode):
                    g = r + cfg.ppo.gamma * g
                    rets.append(g)
                ret_l.extend(reversed(rets))
                episode = []
                if len(ret_l) >= pc.steps:
                    break
                obs, _ = env.reset()
        env.close()
        collect_s = time.perf_counter() - t0
        X = torch.as_tensor(np.asarray(obs_l, np.float32))
        A = torch.as_tensor(np.asarray(act_l, np.int64))
        M = torch.as_tensor(np.asarray(mask_l, bool))
        R = torch.as_tensor(np.asarray(ret_l, np.float32))
        policy = model.policy
        policy.set_training_mode(True)
        opt = torch.optim.Adam(policy.parameters(), lr=pc.learning_rate)
        gen = torch.Generator().manual_seed(cfg.seed)
        n, bs = len(A), cfg.ppo.batch_size
        for _ in range(pc.epochs):
            perm = torch.randperm(n, generator=gen)
            for i in range(0, n, bs):
                idx = perm[i : i + bs]
                values, logp, _ = policy.evaluate_actions(X[idx], A[idx], action_masks=M[idx])
                loss = -logp.mean() + cfg.ppo.vf_coef * torch.nn.functional.mse_loss(
                    values.flatten(), R[idx]
                )
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.ppo.max_grad_norm)
                opt.step()
        policy.set_training_mode(False)
        with torch.no_grad():
            dist = policy.get_distribution(X, action_masks=M.numpy())
            accuracy = float((dist.distribution.probs.argmax(1) == A).float().mean())
        info = {
            "agent": pc.agent,
            "decisions": int(n),
            "accuracy": round(accuracy, 4),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        self.log(
            f"pretrain: imitated {pc.agent} on {n:,} decisions (recorded in {collect_s:.0f} s): "
            f"the policy's most probable move is {pc.agent}'s in {accuracy:.1%} of them"
        )
        return info

    # ----- callback hooks -------------------------------------------------------------
    def on_start(self, model: Any) -> None:
        cfg = self.config
        step = int(model.num_timesteps)
        self.next_ckpt = (step // cfg.checkpoint.every + 1) * cfg.checkpoint.every
        every = cfg.evaluation.every
        self.next_eval = (step // every + 1) * every if every else None
        # the start of the current rollout (steps/s are measured from here)
        self.t_last, self.step_last = time.perf_counter(), step
        if self.progress:
            from tqdm import tqdm

            self.bar = tqdm(
                total=cfg.total_timesteps,
                initial=step,
                unit="step",
                desc=cfg.run_name,
                dynamic_ncols=True,
                mininterval=1.0,
                file=sys.stderr,
            )

    def on_step(self, model: Any) -> None:
        if self.bar is not None:
            self.bar.update(model.num_timesteps - self.bar.n)

    def on_rollout_end(self, model: Any) -> None:
        now = time.perf_counter()
        steps = model.num_timesteps - self.step_last
        model.logger.record("time/rollout_env_steps_per_s", steps / max(now - self.t_last, 1e-9))

    def on_boundary(self, model: Any) -> None:
        cfg = self.config
        step = int(model.num_timesteps)
        now = time.perf_counter()
        if step > self.step_last:
            model.logger.record(
                "time/env_steps_per_s", (step - self.step_last) / max(now - self.t_last, 1e-9)
            )
        self.step_last = step
        sp = cfg.opponents.self_play
        if sp.enabled and step >= self.pool_state["next_snapshot_at"]:
            self.take_snapshot(model)
            self.next_ckpt = (step // cfg.checkpoint.every + 1) * cfg.checkpoint.every
        elif step >= self.next_ckpt:
            self.save_checkpoint(model)
            self.next_ckpt = (step // cfg.checkpoint.every + 1) * cfg.checkpoint.every
        if self.next_eval is not None and step >= self.next_eval:
            self.evaluate(model, cfg.evaluation.deals)
            self.next_eval = (step // cfg.evaluation.every + 1) * cfg.evaluation.every
        model.logger.record("pool/snapshots", len(self.pool_state["snapshots"]))
        # Time spent saving and evaluating is not env time.
        self.t_last = time.perf_counter()

    def evaluate(self, model: Any, deals: int) -> dict[str, dict[str, Any]]:
        from agents.ppo import PPOPolicy

        cfg = self.config
        step = int(model.num_timesteps)
        policy = PPOPolicy.from_model(model, self.game, name="learner")
        t0 = time.perf_counter()
        results = evaluate_policy(
            policy, self.game, cfg.evaluation.fields, deals, cfg.evaluation.seed, self.field_cache
        )
        csv_path = self.run_dir / "eval.csv"
        new = not csv_path.is_file()
        with csv_path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=EVAL_FIELDS)
            if new:
                w.writeheader()
            log = getattr(model, "_logger", None) is not None  # None until learn() starts
            for spec, res in results.items():
                r = res["row"]
                w.writerow(
                    {
                        "step": step,
                        "field": spec,
                        "games": r["games"],
                        **{k: "" if r[k] is None else f"{r[k]:.6g}" for k in EVAL_FIELDS[3:]},
                    }
                )
                if not log:
                    continue
                key = f"eval/{spec}"
                model.logger.record(f"{key}/win_share", r["win_share"])
                model.logger.record(f"{key}/win_lo95", r["win_lo95"])
                model.logger.record(f"{key}/mean_score", r["mean_score"])
                if r["advantage"] is not None:
                    model.logger.record(f"{key}/advantage", r["advantage"])
        write_curve_svg(csv_path, self.run_dir / "eval_curve.svg", 1 / self.game.num_players)
        summary = ", ".join(
            f"vs {spec}: win {res['row']['win_share']:.3f} "
            f"[{res['row']['win_lo95']:.3f}, {res['row']['win_hi95']:.3f}] "
            f"score {res['row']['mean_score']:+.2f} (vs field {res['row']['advantage'] or 0:+.2f})"
            for spec, res in results.items()
        )
        self.log(f"step {step:,}: eval ({deals} deals, {time.perf_counter() - t0:.1f} s) {summary}")
        if self.bar is not None:
            first = next(iter(results.values()))["row"]
            self.bar.set_postfix(win=f"{first['win_share']:.3f}", refresh=False)
        return results

    def truncate_eval_log(self, step: int) -> None:
        """On resume, forget evaluations made after the checkpoint (they will be redone)."""
        csv_path = self.run_dir / "eval.csv"
        if not csv_path.is_file():
            return
        rows = [r for r in csv.DictReader(csv_path.open()) if _eval_row_step(r) <= step]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=EVAL_FIELDS)
        w.writeheader()
        w.writerows(rows)
        write_text_atomic(csv_path, buf.getvalue())

    # ----- the run --------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """The whole run, holding the run-directory lock from the first check to the end."""
        try:
            try:
                start, checkpoint = self.prepare_run_dir()
            except BaseException:
                self.discard_new_run_dir()
                raise
            return self._run(start, checkpoint)
        finally:
            self.lock.release()

    def discard_new_run_dir(self) -> None:
        """A new run that fails before its first checkpoint leaves no directory behind (it
        would block the corrected rerun); only what this process created is removed."""
        if not self.created or checkpoints(self.run_dir):
            return
        if self.created == "dir":
            shutil.rmtree(self.run_dir, ignore_errors=True)
        else:  # the user's (empty) directory stays; only what this run wrote goes
            for p in self.run_dir.iterdir():
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                elif p.name != LOCK_NAME:
                    p.unlink(missing_ok=True)
        self.created = None

    def _run(self, start: int, checkpoint: Path | None) -> dict[str, Any]:
        cfg = self.config
        if self.resume:
            self.truncate_eval_log(start)
        self.log(
            f"{'resuming' if self.resume else 'training'} {cfg.run_name}: {self.game.display_name} "
            f"{self.game.params}, MaskablePPO, {cfg.n_envs} {cfg.vec_env} envs, "
            f"step {start:,} -> {cfg.total_timesteps:,}; run dir {self.run_dir}"
        )
        try:
            model = self.build_model(start, checkpoint)
            pretrained = None
            if checkpoint is None and cfg.pretrain.agent is not None:
                pretrained = self.pretrain(model)
        except BaseException:
            if self.vec_env is not None:
                self.vec_env.close()
            self.discard_new_run_dir()
            raise
        t0 = time.perf_counter()
        remaining = cfg.total_timesteps - start
        previous = _stop_on_sigterm()
        try:
            if remaining > 0:
                model.learn(
                    total_timesteps=remaining,
                    callback=_make_callback(self),
                    reset_num_timesteps=checkpoint is None,
                    tb_log_name="ppo",
                )
            else:
                self.log(
                    f"the run is already at step {start:,} >= total_timesteps; raise "
                    "total_timesteps to train on"
                )
        except KeyboardInterrupt:
            if self.bar is not None:
                self.bar.close()
                self.bar = None
            # The workers may be mid-step: ask them nothing more (no draw counts), stop them.
            path = self.save_checkpoint(model, ask_workers=False)
            self.log(f"interrupted: saved {path}; continue with --resume")
            self.stop_workers()
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            if self.bar is not None:
                self.bar.close()
                self.bar = None
        seconds = time.perf_counter() - t0
        trained = int(model.num_timesteps) - start
        sp = cfg.opponents.self_play
        if sp.enabled and model.num_timesteps >= self.pool_state["next_snapshot_at"]:
            self.take_snapshot(model)  # due at the last update: the pool stays complete
        elif remaining > 0 or latest_checkpoint(self.run_dir) is None:
            self.save_checkpoint(model)
        model.derby_meta = self.meta(model)
        save_model_atomic(model, self.run_dir / "final.zip")
        final: dict[str, Any] = {}
        if cfg.evaluation.final_deals > 0:
            results = self.evaluate(model, cfg.evaluation.final_deals)
            for spec, res in results.items():
                self.log("\n" + res["result"].markdown())
                final[spec] = res["result"].to_json()
            if getattr(model, "_logger", None) is not None:
                model.logger.dump(int(model.num_timesteps))  # the final evaluation in TensorBoard
        self.vec_env.close()
        summary = {
            "run": cfg.run_name,
            "game": self.game.name,
            "params": self.game.params,
            "steps": int(model.num_timesteps),
            "steps_this_session": trained,
            "seconds_this_session": round(seconds, 1),
            "env_steps_per_s": round(trained / seconds, 1) if seconds > 0 and trained else None,
            "snapshots": len(self.pool_state["snapshots"]),
            "pretrain": pretrained,
            "final_evaluation": final,
            "config": cfg.to_dict(),
        }
        write_json_atomic(self.run_dir / "summary.json", summary)
        rate = f", {summary['env_steps_per_s']:,} env-steps/s" if summary["env_steps_per_s"] else ""
        self.log(
            f"done: {int(model.num_timesteps):,} steps ({trained:,} this session in "
            f"{seconds:.0f} s{rate}); policy: {self.run_dir / 'final.zip'}"
        )
        return summary


def _stop_on_sigterm() -> Any:
    """Let SIGTERM (e.g. ``kill PID``) stop training like Ctrl-C: with a checkpoint saved."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    return signal.signal(signal.SIGTERM, handler)


def train(
    config: TrainConfig,
    resume: bool = False,
    progress: bool | None = None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Train (or resume) a run; returns the summary written to ``summary.json``."""
    return Trainer(config, resume=resume, progress=progress, out=out).run()


def export_policy(
    run_dir: str | Path,
    dest: str | Path,
    results: dict[str, Any] | None = None,
    checkpoint: str | Path | None = None,
) -> Path:
    """Ship a run's ``final.zip`` (or one of its checkpoints) as ``dest`` with a JSON sidecar
    (config, steps, seed, results).

    The optimizer's moment estimates are dropped (they double or triple the file and only
    matter for further training, which then restarts them); the weights are unchanged.
    """
    from agents.ppo import read_checkpoint

    run_dir, dest = Path(run_dir), Path(dest)
    src = Path(checkpoint) if checkpoint is not None else run_dir / "final.zip"
    if not src.is_file():
        raise ConfigError(f"{str(src)!r} does not exist: train the run to the end first")
    if not src.resolve().is_relative_to(run_dir.resolve()):
        raise ConfigError(
            f"{str(src)!r} is not a file of the run directory {str(run_dir)!r}: only a run's "
            "own checkpoints are exported (the network is rebuilt from the run's config)"
        )
    # Rebuilt from the run's config like a resumed run (restore_checkpoint: nothing from the
    # file is unpickled); in-process envs are enough to construct the model.
    run_config = load_run_config(run_dir)
    verify_checkpoint(src)
    vec_env = make_vec_env(dataclasses.replace(run_config, vec_env="dummy"), [], run_dir)
    try:
        model = build_fresh_model(run_config, run_config.make_game(), vec_env, run_config.seed)
        restore_checkpoint(model, src, optimizer=False)
        model.derby_meta = read_checkpoint(src).meta
        save_model_atomic(model, dest)
    finally:
        vec_env.close()
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    meta = dict(getattr(model, "derby_meta", None) or {})
    config = summary.get("config") or run_config.to_dict()
    if checkpoint is not None:
        summary = {}  # the summary describes final.zip, not this checkpoint
    sidecar = {
        "policy": dest.name,
        "game": meta.get("game"),
        "params": meta.get("params"),
        "steps": int(model.num_timesteps),
        "seed": config.get("seed"),
        "hint": meta.get("hint"),
        "hint_features": meta.get("hint_features"),
        "config": config,
        "training_evaluation": {
            field: [r for r in res["rows"]]
            for field, res in summary.get("final_evaluation", {}).items()
        },
        "results": results or {},
    }
    write_json_atomic(dest.with_suffix(".json"), sidecar)
    return dest
