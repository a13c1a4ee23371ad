"""Export of a trained policy: a run's ``final.zip`` (or one of its checkpoints) rebuilt from
the run's config and saved with a JSON sidecar (how ``agents/pretrained/`` is made)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from derby_envs.core.datafile import read_json
from training.files import write_json_atomic
from training.train.checkpoints import (
    build_fresh_model,
    restore_checkpoint,
    save_model_atomic,
    verify_checkpoint,
)
from training.train.config import ConfigError
from training.train.envs import make_vec_env
from training.train.rundir import load_run_config


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
    summary = (
        read_json(summary_path, what="run summary", error=ConfigError)
        if summary_path.exists()
        else {}
    )
    if not isinstance(summary, dict):
        raise ConfigError(f"run summary {str(summary_path)!r} is not a JSON object")
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
        "observation_features": meta.get("observation_features"),
        "config": config,
        "training_evaluation": {
            field: [r for r in res["rows"]]
            for field, res in summary.get("final_evaluation", {}).items()
        },
        "results": results or {},
    }
    write_json_atomic(dest.with_suffix(".json"), sidecar)
    return dest
