"""MaskablePPO training with opponent pools, self-play snapshots, checkpoints and resume.

``derby-envs train --config configs/kentucky_derby_5p.yaml`` (see ``docs/training.md``).

The :class:`Trainer` runs the loop and its callback hooks; the parts live beside it:
:mod:`.envs` (the learner's envs, the opponent pool in the other seats), :mod:`.rundir` (the
run directory and its lock, resume reconciliation), :mod:`.checkpoints` (save, verify, safe
restore), :mod:`.eval_log` (periodic evaluation, ``eval.csv``), :mod:`.plot` (the SVG curve),
:mod:`.warmstart` (behaviour cloning) and :mod:`.export` (shipping a policy).

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

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from training.files import write_json_atomic
from training.train.checkpoints import (
    build_fresh_model,
    checkpoints,
    latest_checkpoint,
    restore_checkpoint,
    save_model_atomic,
)
from training.train.config import TrainConfig
from training.train.envs import make_vec_env
from training.train.eval_log import (
    append_eval_rows,
    eval_summary,
    evaluate_policy,
    record_eval,
    truncate_eval_log,
)
from training.train.plot import write_curve_svg
from training.train.rundir import RunDir
from training.train.warmstart import pretrain


# ----- the callback ---------------------------------------------------------------------------
def make_callback(trainer: Trainer):
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
        self.game = config.make_game()
        self.dir = RunDir(config, self.game, self.warn)
        self.lock = self.dir.lock
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
        start, checkpoint, self.pool_state = self.dir.open(self.resume)
        return start, checkpoint

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
            "observation_features": self.config.observation_features,
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
        """Imitate ``pretrain.agent`` playing the learner's seat (:mod:`.warmstart`)."""
        return pretrain(model, self.config, self.game, self.run_dir, self.log)

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
        append_eval_rows(csv_path, step, results)
        if getattr(model, "_logger", None) is not None:  # None until learn() starts
            record_eval(model.logger, results)
        write_curve_svg(csv_path, self.run_dir / "eval_curve.svg", 1 / self.game.num_players)
        summary = eval_summary(results)
        self.log(f"step {step:,}: eval ({deals} deals, {time.perf_counter() - t0:.1f} s) {summary}")
        if self.bar is not None:
            first = next(iter(results.values()))["row"]
            self.bar.set_postfix(win=f"{first['win_share']:.3f}", refresh=False)
        return results

    def truncate_eval_log(self, step: int) -> None:
        """On resume, forget evaluations made after the checkpoint (they will be redone)."""
        truncate_eval_log(self.run_dir / "eval.csv", step)

    # ----- the run --------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """The whole run, holding the run-directory lock from the first check to the end."""
        try:
            try:
                start, checkpoint = self.prepare_run_dir()
            except BaseException:
                self.dir.discard_if_new()
                raise
            return self._run(start, checkpoint)
        finally:
            self.dir.close()

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
            self.dir.discard_if_new()
            raise
        t0 = time.perf_counter()
        remaining = cfg.total_timesteps - start
        previous = stop_on_sigterm()
        try:
            if remaining > 0:
                model.learn(
                    total_timesteps=remaining,
                    callback=make_callback(self),
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


def stop_on_sigterm() -> Any:
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
