"""Checkpoints of a run: listing, integrity checks, the MaskablePPO a config builds, the safe
restore (no unpickling), atomic saves and the export of a trained policy.

``checkpoints/step_<steps>.zip`` files are sb3 MaskablePPO zips; they are never loaded with
``MaskablePPO.load`` (which unpickles): a model is built from the run's validated config and
takes the weights, optimizer state and counters through :func:`restore_checkpoint`.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from training.files import fsync_file, signals_deferred
from training.train.config import TrainConfig

CHECKPOINT_RE = re.compile(r"^step_(\d+)\.zip$")


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
    from agents.ppo import CheckpointError, check_meta, read_checkpoint

    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise CheckpointError(f"{str(path)!r}: not a readable zip ({exc})") from None
    if bad is not None:
        raise CheckpointError(f"{str(path)!r}: member {bad!r} fails its CRC check")
    info = read_checkpoint(path)
    check_meta(info)
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
        device=resolve_device(cfg.device),
        verbose=verbose,
        **hyper,
    )


def resolve_device(device: str) -> str:
    """``"auto"``: CUDA where torch sees a GPU, else the CPU; ``"cuda"`` without one is a
    ConfigError (named, before any work)."""
    import torch

    from training.train.config import ConfigError

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("config key 'device': cuda asked for, but torch sees no GPU here")
    return device


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


def save_model_atomic(model: Any, path: Path) -> None:
    """``model.save`` to ``path`` through a temporary file: ``path`` is the old file or the new
    one, never a torn one; Ctrl-C or SIGTERM during the write takes effect once it is done."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        # Ctrl-C / SIGTERM inside torch's writer would be lost, inside mkstemp orphan its file
        with signals_deferred():
            # a unique temporary name, as training.files.write_atomic's (sb3 writes the file)
            fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp.zip", dir=path.parent)
            os.close(fd)
            tmp = Path(name)
            model.save(tmp)
            fsync_file(tmp)  # the rename must not reach the disk before the data
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a normal file is wanted
            os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
