"""Multi-agent PPO on Ray RLlib (new API stack) from a ``backend: rllib`` config.

``derby-envs train --config configs/rllib/<game>_<n>p.yaml`` (or ``python -m
training.train.rllib_train --config ...``). The env is :class:`derby_envs.core.rllib.DerbyMultiAgentEnv`:
``rllib.learner_seats`` seats per game are RLlib agents, all mapped to one shared masked
policy (``"shared"``); the other seats are played inside the env by the same opponent pool as
the MaskablePPO trainer (``opponents.pool`` weights, ``draw``, self-play snapshots of the
learner), so heuristics that need the engine state work too and never cost RLlib an
agent-step. Ray: a local instance on this machine by default, a running cluster when
``--address`` / ``rllib.address`` / ``$RAY_ADDRESS`` is given.

Run directory (``runs/<name>``)::

    config.yaml        the validated config (resume checks it)
    checkpoints/       RLlib checkpoints iter_<iteration>_step_<env steps> (newest ``keep``)
    snapshots/         self-play snapshots (.zip, the suite's policy format)
    pool.json          snapshot paths and steps, the next snapshot step (written atomically)
    tb/                TensorBoard scalars
    eval.csv           periodic evaluations (same columns as the MaskablePPO trainer)
    final.zip          the exported policy: a MaskablePPO .zip, so `derby-envs evaluate`,
                       `play`, `watch` and the Gymnasium view's opponents= load it as any other
    summary.json       steps, time, throughput, final evaluation

Checkpoints are written to a temporary directory and renamed, so a kill never leaves a torn
one; ``--resume`` continues from the newest (iteration and step counts continue). RLlib's
checkpoints are pickles: resume only run directories you trust (exports never are pickles).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import yaml

from derby_envs.core.datafile import read_json, read_yaml
from training.files import RunDirLock, signals_deferred, write_json_atomic, write_text_atomic
from training.train.config import CONFIG_MAX_BYTES, ConfigError, flatten_config, train_source
from training.train.envs import build_pool  # shared with the MaskablePPO trainer
from training.train.rllib_config import (
    FROZEN_ON_RESUME,
    RLlibTrainConfig,
    load_rllib_config,
    rllib_config_from_dict,
)

CHECKPOINT_RE = re.compile(r"^iter_(\d{6})_step_(\d{12})$")
POOL_FORMAT = 1


# ----- building blocks ------------------------------------------------------------------------
def env_config(cfg: RLlibTrainConfig, snapshots: list[dict], root: Path) -> dict[str, Any]:
    """``env_config`` of :class:`DerbyMultiAgentEnv`: the game, and the pool's seats (plain
    picklable data: every env runner loads the members it draws)."""
    game = cfg.make_game()
    out: dict[str, Any] = {"game": cfg.game, **cfg.game_params, "reward_mode": cfg.reward_mode}
    if cfg.rllib.learner_seats is not None:
        pool = build_pool(cfg, game, snapshots, root)
        count = game.num_players - cfg.rllib.learner_seats
        out["opponents"] = pool.seats(count, cfg.opponents.draw)
    return out


def build_algo_config(cfg: RLlibTrainConfig, snapshots: list[dict], root: Path) -> Any:
    """The RLlib ``PPOConfig`` of a run (shared masked policy, the pool inside the envs)."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    from derby_envs.core.rllib import SHARED_POLICY, DerbyMultiAgentEnv, module_spec, ppo_config

    r = cfg.rllib
    config = ppo_config(cfg.game, hiddens=r.hiddens, num_env_runners=r.num_env_runners)
    config.environment(DerbyMultiAgentEnv, env_config=env_config(cfg, snapshots, root))
    config.rl_module(
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs={SHARED_POLICY: module_spec(r.hiddens, r.activation)}
        )
    )
    config.env_runners(
        num_env_runners=r.num_env_runners,
        num_envs_per_env_runner=r.num_envs_per_env_runner,
        num_cpus_per_env_runner=r.num_cpus_per_env_runner,
    )
    config.learners(num_learners=r.num_learners)
    config.training(
        train_batch_size_per_learner=r.train_batch_size,
        minibatch_size=r.minibatch_size,
        num_epochs=r.num_epochs,
        lr=r.lr,
        gamma=r.gamma,
        lambda_=r.gae_lambda,
        clip_param=r.clip_param,
        entropy_coeff=r.entropy_coeff,
        vf_loss_coeff=r.vf_loss_coeff,
        grad_clip=r.grad_clip,
    )
    config.debugging(seed=cfg.seed, log_level="ERROR")
    config.reporting(metrics_num_episodes_for_smoothing=100)
    return config


def start_ray(cfg: RLlibTrainConfig, address: str | None = None) -> str:
    """Join the cluster named by ``address`` / ``rllib.address`` / ``$RAY_ADDRESS``, else
    start a local Ray; returns where it runs (for the log)."""
    import ray

    if ray.is_initialized():
        return "the Ray instance of this process"
    address = address or cfg.rllib.address or os.environ.get("RAY_ADDRESS") or None
    if address:
        ray.init(address=address, runtime_env=cfg.rllib.runtime_env or None, log_to_driver=False)
        return f"the Ray cluster at {address}"
    ray.init(num_cpus=cfg.rllib.num_cpus, include_dashboard=False, log_to_driver=False)
    return "a local Ray"


def checkpoints(run_dir: Path) -> list[tuple[int, int, Path]]:
    """(iteration, env steps, path) of the run's complete checkpoints, oldest first."""
    folder = run_dir / "checkpoints"
    if not folder.is_dir():
        return []
    out = []
    for p in folder.iterdir():
        m = CHECKPOINT_RE.match(p.name)
        if m and p.is_dir() and (p / "rllib_checkpoint.json").is_file():
            out.append((int(m.group(1)), int(m.group(2)), p))
    return sorted(out)


# ----- export to the suite's policy format ------------------------------------------------------
def _module_weights(module: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}


def learner_weights(algo: Any) -> dict[str, np.ndarray]:
    """The shared module's weights as the learner holds them (the env runners' copies are
    inference-only: RLlib does not send them the critic)."""
    from derby_envs.core.rllib import SHARED_POLICY

    state = algo.learner_group.get_state(components=f"learner/rl_module/{SHARED_POLICY}")
    module = state["learner"]["rl_module"][SHARED_POLICY]
    return {k: np.asarray(v) for k, v in module.items()}


def export_module(
    module: Any, cfg: RLlibTrainConfig, dest: Path, steps: int, extra_meta: dict | None = None
) -> Path:
    """Write an RLlib module of the suite (:class:`MaskedPPOTorchRLModule`) as a MaskablePPO
    ``.zip``; see :func:`export_weights`."""
    from derby_envs.core.rllib import MaskedPPOTorchRLModule

    if not isinstance(module, MaskedPPOTorchRLModule):
        raise ConfigError(f"cannot export {type(module).__name__}: not the suite's masked module")
    return export_weights(_module_weights(module), cfg, dest, steps, extra_meta)


def export_weights(
    weights: dict[str, np.ndarray],
    cfg: RLlibTrainConfig,
    dest: Path,
    steps: int,
    extra_meta: dict | None = None,
) -> Path:
    """Write the shared module's weights as a MaskablePPO ``.zip`` (same MLP: actor and
    critic trunks, action and value heads), with ``derby_meta`` like the MaskablePPO
    trainer's.

    Every loader of the suite (``PPOPolicy.load``: evaluate, play, watch, opponents=) and
    sb3-contrib's ``MaskablePPO.load`` read it; nothing in it is an RLlib pickle.
    """
    import torch
    from sb3_contrib import MaskablePPO

    from training.train.checkpoints import save_model_atomic
    from training.train.envs import env_class

    game = cfg.make_game()
    hiddens = list(cfg.rllib.hiddens)
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[cfg.rllib.activation]
    env = env_class(cfg.game)(**cfg.game_params)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        policy_kwargs={"net_arch": hiddens, "activation_fn": activation},
        n_steps=2,
        batch_size=2,
        device="cpu",
    )
    rename = {"action_net": "pi.net.mlp.0", "value_net": "vf.net.mlp.0"}
    for i in range(len(hiddens)):
        rename[f"mlp_extractor.policy_net.{2 * i}"] = f"encoder.actor_encoder.net.mlp.{2 * i}"
        rename[f"mlp_extractor.value_net.{2 * i}"] = f"encoder.critic_encoder.net.mlp.{2 * i}"
    state = model.policy.state_dict()
    for ours, theirs in rename.items():
        for part in ("weight", "bias"):
            if f"{theirs}.{part}" not in weights:
                raise ConfigError(f"cannot export: the module has no parameter {theirs}.{part}")
            src = np.asarray(weights[f"{theirs}.{part}"], dtype=np.float32)
            if state[f"{ours}.{part}"].shape != src.shape:
                raise ConfigError(
                    f"cannot export: RLlib parameter {theirs}.{part} has shape {src.shape}, the "
                    f"MaskablePPO network expects {tuple(state[f'{ours}.{part}'].shape)}"
                )
            state[f"{ours}.{part}"] = torch.as_tensor(src)
    model.policy.load_state_dict(state)
    model.num_timesteps = int(steps)
    model.derby_meta = {
        "game": game.name,
        "params": dict(game.params),
        "reward_mode": cfg.reward_mode or game.reward_modes[0],
        "hint": None,
        "hint_features": "action",
        "run": cfg.run_name,
        "seed": cfg.seed,
        "steps": int(steps),
        "observation_size": game.observation_size,
        "num_actions": game.num_actions,
        "backend": "rllib",
        **(extra_meta or {}),
    }
    save_model_atomic(model, dest)
    env.close()
    return dest


def export_checkpoint(
    run_dir: str | Path, dest: str | Path, checkpoint: str | Path | None = None
) -> Path:
    """Export a run's checkpoint (default: its newest) as a MaskablePPO ``.zip``."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    from derby_envs.core.rllib import SHARED_POLICY

    run_dir = Path(run_dir)
    cfg = load_run_config(run_dir)
    found = checkpoints(run_dir)
    if checkpoint is None:
        if not found:
            raise ConfigError(f"no checkpoint in {str(run_dir / 'checkpoints')!r}")
        _, steps, path = found[-1]
    else:
        path = Path(checkpoint)
        match = next((c for c in found if c[2].resolve() == path.resolve()), None)
        if match is None:
            raise ConfigError(f"{str(path)!r} is not a checkpoint of the run {str(run_dir)!r}")
        steps = match[1]
    module_dir = path / "learner_group" / "learner" / "rl_module" / SHARED_POLICY
    module = RLModule.from_checkpoint(module_dir)
    return export_module(module, cfg, Path(dest), steps)


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def load_run_config(run_dir: Path) -> RLlibTrainConfig:
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{str(path)!r} is missing (not an RLlib training run directory?)")
    raw = read_yaml(path, what="run config", max_bytes=CONFIG_MAX_BYTES, error=ConfigError)
    if not isinstance(raw, dict):
        raise ConfigError(f"run config {str(path)!r} is not a training config (empty?)")
    return rllib_config_from_dict(raw)


def add_snapshot_to_runner(runner: Any, rel: str, steps: int) -> int:
    """Add a snapshot to the opponent pool of every env of an env runner; returns how many
    pools got it (0 for the driver's local runner when remote runners sample: it has no env)."""
    vector = getattr(runner, "env", None)
    count = 0
    for env in getattr(vector, "envs", None) or []:
        pools = {id(s.pool): s.pool for s in env.unwrapped.opponents if hasattr(s, "pool")}
        for pool in pools.values():
            pool.add_snapshot(rel, steps)
            count += 1
    return count


# ----- the trainer ------------------------------------------------------------------------------
class RLlibTrainer:
    """One run: see the module docstring."""

    def __init__(
        self,
        cfg: RLlibTrainConfig,
        resume: bool = False,
        address: str | None = None,
        progress: bool | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.cfg = cfg
        self.resume = resume
        self.address = address
        self.progress = cfg.logging.progress_bar if progress is None else progress
        self.out = out or sys.stdout
        self.run_dir = cfg.run_path
        self.game = cfg.make_game()
        self.lock = RunDirLock(self.run_dir)
        self.field_cache: dict[str, Any] = {}
        self.tb: Any = None

    def log(self, msg: str) -> None:
        if self.progress:
            print(msg, file=self.out, flush=True)

    # ----- run directory ------------------------------------------------------------------
    def prepare(self) -> tuple[Path | None, dict[str, Any]]:
        run = self.run_dir
        if self.resume:
            found = checkpoints(run) if run.is_dir() else []
            if not found:
                raise ConfigError(f"cannot resume: no checkpoint in {str(run / 'checkpoints')!r}")
            self.lock.acquire()
            saved, given = (
                flatten_config(load_run_config(run).to_dict()),
                flatten_config(self.cfg.to_dict()),
            )
            changed = [k for k in FROZEN_ON_RESUME if saved.get(k) != given.get(k)]
            if changed:
                raise ConfigError(
                    "cannot resume with a changed "
                    + ", ".join(repr(k) for k in changed)
                    + " (the network or the problem would change); start a new run instead"
                )
            for p in (run / "checkpoints").iterdir():  # a torn write of a killed process
                if p.name.startswith(".tmp_"):
                    shutil.rmtree(p, ignore_errors=True)
            pool = read_json(
                run / "pool.json", what="cannot resume: the pool file", error=ConfigError
            )
            if (
                not isinstance(pool, dict)
                or not isinstance(pool.get("snapshots"), list)
                or not all(
                    isinstance(s, dict) and _is_count(s.get("step")) for s in pool["snapshots"]
                )
            ):
                raise ConfigError(
                    f"cannot resume: {str(run / 'pool.json')!r} is not a pool file (it needs "
                    "'snapshots': a list of {'path': ..., 'step': integer >= 0})"
                )
            _, step, path = found[-1]
            # The pool as of the checkpoint: snapshots taken after it (before a crash) are
            # not part of the resumed run (their files stay; they are taken again).
            pool["snapshots"] = [s for s in pool["snapshots"] if int(s["step"]) <= step]
            every = self._snap_every()
            pool["next_snapshot_at"] = (step // every + 1) * every if every else None
            write_json_atomic(run / "pool.json", pool)
            return path, pool
        if run.exists() and (not run.is_dir() or any(p.name != ".lock" for p in run.iterdir())):
            raise ConfigError(
                f"run directory {str(run)!r} is not empty: resume it with --resume, or give "
                "another 'name' / 'run_dir' (saved work is never overwritten)"
            )
        self.created = not run.exists()
        run.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        write_text_atomic(run / "config.yaml", yaml.safe_dump(self.cfg.to_dict(), sort_keys=False))
        pool = {"format": POOL_FORMAT, "snapshots": [], "next_snapshot_at": self._snap_every()}
        write_json_atomic(run / "pool.json", pool)
        return None, pool

    def _snap_every(self) -> int | None:
        sp = self.cfg.opponents.self_play
        return sp.every if sp.enabled else None

    # ----- the loop -----------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        import torch

        torch.set_num_threads(self.cfg.rllib.torch_threads)
        self.created: bool | None = None  # a new run: whether this process made the directory
        try:
            ckpt, self.pool_state = self.prepare()
            where = start_ray(self.cfg, self.address)
            return self._train(ckpt, where)
        except BaseException:
            # A new run that fails before its first checkpoint leaves nothing behind (the
            # directory was empty and locked by this process, so all in it is this run's).
            if self.created is not None and not checkpoints(self.run_dir):
                if self.tb is not None:
                    self.tb.close()
                    self.tb = None
                for p in list(self.run_dir.iterdir()):
                    if p.name != ".lock":
                        shutil.rmtree(p) if p.is_dir() else p.unlink()
                if self.created:
                    (self.run_dir / ".lock").unlink(missing_ok=True)
                    self.lock.release()
                    self.run_dir.rmdir()
            raise
        finally:
            if self.tb is not None:
                self.tb.close()
            self.lock.release()

    def _train(self, ckpt: Path | None, where: str) -> dict[str, Any]:
        from ray.rllib.utils.metrics import (
            ENV_RUNNER_RESULTS,
            EPISODE_RETURN_MEAN,
            NUM_ENV_STEPS_SAMPLED_LIFETIME,
        )

        from derby_envs.core.rllib import SHARED_POLICY

        cfg = self.cfg
        config = build_algo_config(cfg, self.pool_state["snapshots"], self.run_dir)
        algo = config.build_algo()
        steps = 0
        if ckpt is not None:
            algo.restore_from_path(ckpt.resolve())
            steps = int(CHECKPOINT_RE.match(ckpt.name).group(2))
            self.log(f"resumed from {ckpt.name} (iteration {algo.iteration}, {steps} env steps)")
        if cfg.logging.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(self.run_dir / "tb"))
        self.log(
            f"training {cfg.run_name} on {where}: {cfg.rllib.num_env_runners} env runner(s) x "
            f"{cfg.rllib.num_envs_per_env_runner} env(s), {cfg.rllib.num_learners} learner "
            f"actor(s); {cfg.total_timesteps} env steps"
        )
        every_ckpt, every_eval = cfg.checkpoint.every, cfg.evaluation.every
        next_ckpt = (steps // every_ckpt + 1) * every_ckpt
        next_eval = (steps // every_eval + 1) * every_eval if every_eval else None
        t_start, steps_start, interrupted = time.perf_counter(), steps, False
        from training.train.trainer import stop_on_sigterm

        previous = stop_on_sigterm()  # kill PID stops like Ctrl-C: checkpoint, export
        try:
            while steps < cfg.total_timesteps:
                t0 = time.perf_counter()
                result = algo.train()
                runners = result.get(ENV_RUNNER_RESULTS, {})
                before, steps = steps, int(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps))
                rate = (steps - before) / max(time.perf_counter() - t0, 1e-9)
                learner = result.get("learners", {}).get(SHARED_POLICY, {})
                ret = runners.get(EPISODE_RETURN_MEAN, float("nan"))
                self.log(
                    f"iter {algo.iteration:4d}  steps {steps:>9}/{cfg.total_timesteps}  "
                    f"{rate:7.0f} env-steps/s  return {ret:+.3f}  "
                    f"policy loss {learner.get('policy_loss', float('nan')):+.4f}"
                )
                self._scalars(steps, rate, ret, learner)
                nxt = self.pool_state.get("next_snapshot_at")
                if nxt is not None and steps >= nxt:
                    self.snapshot(algo, steps)
                if steps >= next_ckpt:
                    self.checkpoint(algo, steps)
                    next_ckpt = (steps // every_ckpt + 1) * every_ckpt
                if next_eval is not None and steps >= next_eval and steps < cfg.total_timesteps:
                    self.evaluate(learner_weights(algo), steps, cfg.evaluation.deals)
                    next_eval = (steps // every_eval + 1) * every_eval
        except KeyboardInterrupt:
            interrupted = True
            self.log("interrupted: saving a checkpoint (continue with --resume)")
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        last = checkpoints(self.run_dir)
        if not last or last[-1][1] != steps:
            self.checkpoint(algo, steps)
        seconds = time.perf_counter() - t_start
        weights = learner_weights(algo)
        final = export_weights(weights, cfg, self.run_dir / "final.zip", steps)
        results = {}
        if not interrupted and cfg.evaluation.final_deals:
            results = self.evaluate(weights, steps, cfg.evaluation.final_deals)
        algo.stop()
        summary = {
            "backend": "rllib",
            "steps": steps,
            "iterations": int(algo.iteration),
            "seconds": round(seconds, 3),
            "env_steps_per_second": round((steps - steps_start) / max(seconds, 1e-9), 1),
            "interrupted": interrupted,
            "policy": final.name,
            "config": cfg.to_dict(),
            "final_evaluation": {
                f: {"rows": [dict(row) for row in res["result"].rows]} for f, res in results.items()
            },
        }
        write_json_atomic(self.run_dir / "summary.json", summary)
        self.log(f"done: {steps} env steps in {seconds:.1f} s; policy {final}")
        return summary

    def _scalars(self, steps: int, rate: float, ret: float, learner: dict[str, Any]) -> None:
        if self.tb is None:
            return
        self.tb.add_scalar("rollout/env_steps_per_second", rate, steps)
        if ret == ret:
            self.tb.add_scalar("rollout/episode_return_mean", ret, steps)
        for key in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "total_loss"):
            if key in learner:
                self.tb.add_scalar(f"train/{key}", float(learner[key]), steps)

    # ----- snapshots, checkpoints, evaluation ------------------------------------------------
    def snapshot(self, algo: Any, steps: int) -> None:
        """Export the learner to snapshots/, list it in pool.json, add it to every env's pool
        (env runners on other machines read it from the same path: a shared file system)."""

        rel = f"snapshots/snapshot_{steps:012d}.zip"
        export_weights(learner_weights(algo), self.cfg, self.run_dir / rel, steps)
        self.pool_state["snapshots"].append({"path": rel, "step": steps})
        every = self.cfg.opponents.self_play.every
        self.pool_state["next_snapshot_at"] = (steps // every + 1) * every
        write_json_atomic(self.run_dir / "pool.json", self.pool_state)

        def add(runner: Any) -> int:
            return add_snapshot_to_runner(runner, rel, steps)

        added = sum(algo.env_runner_group.foreach_env_runner(add, local_env_runner=True))
        self.log(f"snapshot at {steps} env steps -> {rel} (added to {added} env pool(s))")

    def checkpoint(self, algo: Any, steps: int) -> Path:
        folder = self.run_dir / "checkpoints"
        folder.mkdir(exist_ok=True)
        name = f"iter_{algo.iteration:06d}_step_{steps:012d}"
        tmp = folder / f".tmp_{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        with signals_deferred():  # an interrupt inside Ray's writer: delivered after it
            algo.save_to_path(tmp.resolve())
            os.replace(tmp, folder / name)  # complete or absent: never torn
        for _, _, old in checkpoints(self.run_dir)[: -self.cfg.checkpoint.keep]:
            shutil.rmtree(old, ignore_errors=True)
        return folder / name

    def evaluate(
        self, weights: dict[str, np.ndarray], steps: int, deals: int
    ) -> dict[str, dict[str, Any]]:
        """Seat-rotated tournaments of the exported learner (deterministic) per field."""
        from agents.ppo import PPOPolicy
        from training.train.eval_log import append_eval_rows, evaluate_policy

        cfg = self.cfg
        tmp = self.run_dir / ".eval_policy.zip"
        export_weights(weights, cfg, tmp, steps)
        policy = PPOPolicy.load(tmp, self.game, name="learner")
        tmp.unlink(missing_ok=True)
        results = evaluate_policy(
            policy, self.game, cfg.evaluation.fields, deals, cfg.evaluation.seed, self.field_cache
        )
        append_eval_rows(self.run_dir / "eval.csv", steps, results)
        for spec, res in results.items():
            r = res["row"]
            if self.tb is not None:
                self.tb.add_scalar(f"eval/{spec}/win_share", r["win_share"], steps)
                self.tb.add_scalar(f"eval/{spec}/mean_score", r["mean_score"], steps)
            self.log(
                f"eval at {steps} vs {spec}: win share {r['win_share']:.3f} "
                f"[{r['win_lo95']:.3f}, {r['win_hi95']:.3f}], mean score {r['mean_score']:+.3f}"
            )
        return results


def train_rllib(
    cfg: RLlibTrainConfig,
    resume: bool = False,
    address: str | None = None,
    progress: bool | None = None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Train (or resume) an RLlib run; returns the summary written to ``summary.json``."""
    return RLlibTrainer(cfg, resume=resume, address=address, progress=progress, out=out).run()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m training.train.rllib_train --config FILE [--resume] [--address ADDR]``."""
    p = argparse.ArgumentParser(
        prog="training.train.rllib_train", description=__doc__.split("\n")[0]
    )
    p.add_argument("--config", default=None, help="YAML config with backend: rllib")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    p.add_argument("--run-dir", default=None, help="output directory (default: runs/<name>)")
    p.add_argument("--address", default=None, help="Ray cluster address (default: local Ray)")
    p.add_argument("--total-timesteps", type=int, default=None, help="override total_timesteps")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--no-progress", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    try:
        summary = run(args)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"training.train.rllib_train: error: {exc}", file=sys.stderr)
        return 2
    return 130 if summary["interrupted"] else 0  # as the MaskablePPO trainer's Ctrl-C


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The ``train`` command for an RLlib config (also used by ``derby-envs train``)."""
    cfg = load_rllib_config(*train_source(args))
    return train_rllib(
        cfg,
        resume=args.resume,
        address=getattr(args, "address", None),
        progress=False if args.no_progress else None,
    )


if __name__ == "__main__":
    raise SystemExit(main())
