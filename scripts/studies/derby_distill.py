"""Can a standalone network play like the shipped residual Derby policy? Distillation.

Usage::

    .venv/bin/python scripts/studies/derby_distill.py record --decisions 1500000 --seed 1 \\
        --out runs/distill/d1.npz [--student CHECKPOINT.zip --teacher-share 0.5]
    .venv/bin/python scripts/studies/derby_distill.py fit runs/distill/d1.npz [more.npz ...] \\
        --run-dir runs/distill/s1 [--arch 512,512,512] [--epochs 12] [--init CHECKPOINT.zip] \\
        [--features outlook_moves]
    .venv/bin/python scripts/studies/derby_distill.py explain runs/distill/g3.npz \\
        --student CHECKPOINT.zip [--rows 80000] [--json OUT.json]

The shipped Derby policy (``agents/pretrained/derby_4p.zip``) is a residual policy: its network
reads derby_exchange's value of every action, so it needs the heuristic at run time. This study
asks whether a network that reads only the observation and its derived features
(``observation_features: derived``, the input of ``configs/derby_4p_standalone.yaml``) can take
over its play when it gets far more of the teacher's decisions than the config's warm start
(60,000 one-hot moves, a few hundred gradient steps) gave it.

``record`` plays the teacher (``--teacher``, deterministic, as it is evaluated) in the
learner's seat of ``--config``'s batched training env (256 games against its derby_exchange
field) and keeps, per decision, the student's input (the teacher's network input without the
hint part, which is last), the action mask, the teacher's logits and the final reward of the
game (NaN for games the recording cut off). With ``--student`` (a standalone checkpoint, any
feature set) the student acts instead in a ``1 - --teacher-share`` of the decisions, the teacher
still labelling every one (DAgger: Ross et al. 2011), so that the student also learns where its
own mistakes lead.

``fit`` builds the standalone config's MaskablePPO (``--arch`` its layers, actor and critic),
fits the actor to the teacher's action distribution (cross-entropy over the legal actions) and
the critic to the recorded rewards, scores on every 20th decision held out how often the
student's most probable move is the teacher's, saves the result as a checkpoint of a run
directory (``derby-envs train --resume --run-dir`` continues it with PPO) and plays
``--deals`` seat-rotated deals against three derby_exchange. With ``--features`` the student
reads another observation feature set (``agents/features.py``), computed from the recorded
observations (the standalone config with ``observation_features`` set to it). Recordings are plain ``.npz``
arrays read without pickle (data, never code).

``explain`` tells where a student and the teacher part, on a recording's held-out decisions
(every 20th, the first ``--rows`` of them): per kind of decision the agreement and the most
common (teacher, student) pairs of moves, and, where the teacher plays the movement card after
its number with both open cards legal, how often each reading orders the two cards as the
teacher does: the student, derby_exchange's and derby_projection's action values (the
heuristics' race model, computed exactly), and the expected own score after each card of the
``outlook_moves`` features (the same race model over a fixed table of draws).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from derby_envs.core.errors import DerbyEnvsError

ARRAYS = ("X", "M", "L", "R")
TEACHER = "agents/pretrained/derby_4p.zip"
TEACHER_CONFIG = "configs/derby_4p_features_batch.yaml"
STUDENT_CONFIG = "configs/derby_4p_standalone.yaml"
HOLD = 20  # every HOLD-th decision is held out of the fit


class StudyError(ValueError):
    """Bad input: a missing or foreign recording, a bad option."""


def record(
    decisions: int,
    seed: int,
    out: Path,
    teacher_path: str = TEACHER,
    config_path: str = TEACHER_CONFIG,
    student_path: str | None = None,
    teacher_share: float = 1.0,
    n_envs: int = 256,
    log=print,
) -> dict[str, np.ndarray]:
    """At least ``decisions`` decisions of the teacher's seat (whole env steps), written to
    ``out``; returns the arrays."""
    from agents.ppo import PPOPolicy
    from training.train.config import load_config
    from training.train.envs import make_vec_env

    # n_envs set after validation: the config's PPO batch size is checked against n_envs
    cfg = dataclasses.replace(load_config(config_path, [f"seed={seed}"]), n_envs=n_envs)
    game = cfg.make_game()
    teacher = PPOPolicy.load(teacher_path, game)
    if teacher.hint_features != "values" or cfg.hint_features != "values":
        raise StudyError("the teacher must be a residual policy on a hint's values")
    width = teacher.observation_size - game.num_actions  # the hint part is last
    student = _standalone(student_path, game) if student_path else None
    venv = make_vec_env(cfg, [], out.parent)
    rng = np.random.default_rng(seed)
    xs, ms, ls, rs = [], [], [], []
    pending: list[list[int]] = [[] for _ in range(n_envs)]  # per env: the steps of its open game
    obs, n, t0 = venv.reset(), 0, time.perf_counter()
    try:
        while n < decisions:
            masks = np.asarray(venv.env_method("action_masks"), bool)
            logits = teacher.logits(obs)
            act = np.where(masks, logits, -np.inf).argmax(1)
            if student is not None:
                # the student's own input: the observation and its feature set (any set)
                raw = obs[:, : game.observation_size]
                x = raw if student.features is None else student.features.append(raw)
                own = np.where(masks, student.logits(x), -np.inf).argmax(1)
                act = np.where(rng.random(n_envs) < teacher_share, act, own)
            step = len(xs)
            xs.append(obs[:, :width].astype(np.float32))
            ms.append(masks)
            ls.append(logits.astype(np.float32))
            rs.append(np.full(n_envs, np.nan, np.float32))
            for e in range(n_envs):
                pending[e].append(step)
            obs, reward, done, _ = venv.step(act)
            for e in np.flatnonzero(done):  # the game's reward is paid on its last step
                for s in pending[e]:
                    rs[s][e] = reward[e]
                pending[e] = []
            n += n_envs
            if step % 400 == 399:
                log(
                    f"record: {n:,}/{decisions:,} decisions ({n / (time.perf_counter() - t0):,.0f}/s)"
                )
    finally:
        venv.close()
    data = {"X": np.concatenate(xs), "M": np.concatenate(ms), "L": np.concatenate(ls),
            "R": np.concatenate(rs)}  # fmt: skip
    meta = {"teacher": Path(teacher_path).name, "width": width, "seed": seed,
            "student": Path(student_path).name if student_path else None,
            "teacher_share": teacher_share if student_path else 1.0}  # fmt: skip
    np.savez(out, meta=np.asarray(json.dumps(meta)), **data)
    log(f"record: {n:,} decisions in {time.perf_counter() - t0:.0f} s -> {out}")
    return data


def read_recording(
    path: Path, arrays: tuple[str, ...] = ARRAYS
) -> tuple[dict[str, np.ndarray], dict]:
    """A recording's ``arrays`` (default: all) and meta (no pickle); a StudyError if it is not
    one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if not set(ARRAYS) <= set(z.files):
                raise KeyError(f"it lacks {sorted(set(ARRAYS) - set(z.files))}")
            got = {k: z[k] for k in arrays}
            meta = json.loads(str(z["meta"]))
    except (OSError, KeyError, ValueError, EOFError) as exc:
        raise StudyError(f"{path}: not a recording of this study ({exc})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("width"), int):
        raise StudyError(f"{path}: its meta does not give the input width")
    n = len(next(iter(got.values())))
    if any(len(a) != n for a in got.values()) or (
        "M" in got and "L" in got and got["M"].shape != got["L"].shape
    ):
        raise StudyError(f"{path}: its arrays differ in length or width")
    return got, meta


def fit(
    paths: list[Path],
    run_dir: Path,
    arch: list[int],
    epochs: int = 12,
    lr: float = 1e-3,
    batch_size: int = 4096,
    deals: int = 50,
    init: str | None = None,
    threads: int = 2,
    features: str | None = None,
    log=print,
) -> dict:
    """Fit the standalone network (module docstring); returns the held-out agreement, the
    critic's held-out explained variance and the evaluation's row."""
    import torch
    from stable_baselines3.common.utils import explained_variance

    from training.train.checkpoints import restore_checkpoint
    from training.train.config import load_config
    from training.train.trainer import Trainer

    heads = [read_recording(p, arrays=("R",)) for p in paths]  # checked before the run dir
    widths = {m["width"] for _, m in heads}
    if len(widths) != 1:
        raise StudyError(f"the recordings have different input widths: {sorted(widths)}")
    torch.set_num_threads(threads)
    cfg = load_config(
        STUDENT_CONFIG,
        [f"run_dir={run_dir}", "pretrain.agent=null", f"ppo.net_arch={arch}",
         "opponents.pool=[{agent: derby_exchange, weight: 1}]", "opponents.self_play.enabled=false",
         "evaluation.fields=[derby_exchange]",
         *([f"observation_features={features}"] if features else [])],
    )  # fmt: skip
    trainer = Trainer(cfg, progress=False)
    trainer.prepare_run_dir()
    try:
        model = trainer.build_model(0, None)
        width, game = widths.pop(), trainer.game
        if not features and model.observation_space.shape[0] != width:
            raise StudyError("the recordings' inputs are not the standalone config's observation")
        X, M, logits, R = _stack(paths, [len(h["R"]) for h, _ in heads], game, features, log)
        if init:
            restore_checkpoint(model, Path(init), optimizer=False)
            model.num_timesteps = 0
        policy = model.policy
        X, M, logits, R = (torch.as_tensor(a) for a in (X, M, logits, R))
        legal_logits = torch.where(M, logits, torch.tensor(-1e9))
        target = torch.softmax(legal_logits, 1)
        best = legal_logits.argmax(1)
        held = torch.arange(len(X)) % HOLD == HOLD - 1
        fit_rows = torch.nonzero(~held).flatten()
        held_rows = torch.nonzero(held).flatten()
        log(f"fit: {len(X):,} decisions from {len(paths)} recordings, {len(held_rows):,} held out")
        opt = torch.optim.Adam(policy.parameters(), lr=lr)
        per_epoch = -(-len(fit_rows) // batch_size)
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=lr, total_steps=epochs * per_epoch, pct_start=0.05
        )
        gen = torch.Generator().manual_seed(0)
        for epoch in range(epochs):
            t0, total = time.perf_counter(), 0.0
            policy.set_training_mode(True)
            perm = fit_rows[torch.randperm(len(fit_rows), generator=gen)]
            for i in range(0, len(perm), batch_size):
                j = perm[i : i + batch_size]
                dist = policy.get_distribution(X[j], action_masks=M[j].numpy())
                logp = torch.log_softmax(dist.distribution.logits, 1)
                actor = -torch.where(M[j], target[j] * logp, torch.zeros_like(logp)).sum(1).mean()
                known = torch.isfinite(R[j])
                value = policy.predict_values(X[j][known]).flatten()
                critic = torch.nn.functional.mse_loss(value, R[j][known]) if known.any() else 0.0
                loss = actor + 0.5 * critic
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
                opt.step()
                sched.step()
                total += float(actor.detach())
            agree = _agreement(policy, X, M, best, held_rows)
            log(f"fit: epoch {epoch + 1}/{epochs}: cross-entropy {total / per_epoch:.4f}, the "
                f"teacher's move on {agree:.3f} of the held-out decisions "
                f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip
        known = held_rows[torch.isfinite(R[held_rows])]
        with torch.no_grad():
            v = policy.predict_values(X[known]).flatten().numpy() if len(known) else np.zeros(0)
        ev = float(explained_variance(v, R[known].numpy())) if len(known) > 1 else float("nan")
        path = trainer.save_checkpoint(model, ask_workers=False)
        log(f"fit: the critic explains {ev:.3f} of the held-out rewards' variance; -> {path}")
        by_kind = {
            kind: round(_agreement(policy, X, M, best, held_rows[torch.as_tensor(rows)]), 4)
            for kind, rows in _kinds(M[held_rows].numpy()).items()
        }
        log(f"fit: held-out agreement by kind of decision: {by_kind}")
        out = {"agreement": agree, "by_kind": by_kind, "critic_explained_variance": ev,
               "checkpoint": str(path)}  # fmt: skip
        if deals:
            results = trainer.evaluate(model, deals)
            out["evaluation"] = {k: v["row"] for k, v in results.items()}
        return out
    finally:
        if trainer.vec_env is not None:
            trainer.vec_env.close()
        trainer.dir.close()


def _stack(paths: list[Path], sizes: list[int], game, features: str | None, log, chunk=65536):
    """The recordings' arrays (X, M, L, R) one after the other, X the student's input: as
    recorded, or with ``features`` the recorded observation part followed by that feature
    set's numbers. One recording is in memory at a time beside the result (millions of
    decisions)."""
    from agents.features import ObservationFeatures

    feats = ObservationFeatures(game, features) if features else None
    n, t0, at = sum(sizes), time.perf_counter(), 0
    X = M = L = R = None
    for path, size in zip(paths, sizes, strict=True):
        rec, meta = read_recording(path)
        if len(rec["X"]) != size or rec["X"].shape[1] != meta["width"]:
            raise StudyError(f"{path}: its inputs are not {size:,} rows of its width")
        if X is None:
            width = game.observation_size + feats.size if feats else rec["X"].shape[1]
            X = np.empty((n, width), np.float32)
            M, L = (
                np.empty((n, rec["M"].shape[1]), bool),
                np.empty((n, rec["L"].shape[1]), np.float32),
            )
            R = np.empty(n, np.float32)
        for i in range(0, size, chunk):  # in chunks: the features of a chunk at a time
            x = rec["X"][i : i + chunk]
            X[at + i : at + i + len(x)] = (
                feats.append(x[:, : game.observation_size]) if feats else x
            )
        M[at : at + size], L[at : at + size], R[at : at + size] = rec["M"], rec["L"], rec["R"]
        at += size
        del rec
    if feats:
        log(f"fit: the {features!r} features of {n:,} decisions ({time.perf_counter() - t0:.0f} s)")
    return X, M, L, R


def _standalone(path: str, game):
    """The student checkpoint at ``path``; a StudyError if it needs a hint agent."""
    from agents.ppo import PPOPolicy

    student = PPOPolicy.load(path, game)
    if student.hint is not None:
        raise StudyError(f"{path}: the student must stand alone (no hint agent)")
    return student


def explain(path: Path, student_path: str, rows: int = 80_000) -> dict:
    """The ``explain`` report (module docstring) of the recording at ``path``."""
    from collections import Counter

    from agents.derby import DerbyExchange, DerbyProjection, observation_outlook
    from derby_envs.games.derby.constants import BLIND, DECLINE, OPEN1, OPEN2, PLAY, SKIP
    from derby_envs.registry import make_game

    rec, _ = read_recording(path, arrays=("X", "M", "L"))
    held = np.arange(HOLD - 1, len(rec["M"]), HOLD)[:rows]
    game = make_game("derby", num_players=4)
    student = _standalone(student_path, game)
    raw = rec["X"][held, : game.observation_size]
    M, L = rec["M"][held], rec["L"][held]
    x = raw if student.features is None else student.features.append(raw)
    logits = student.logits(x)
    own = np.where(M, logits, -np.inf).argmax(1)
    teacher = np.where(M, L, -np.inf).argmax(1)
    names = {PLAY: "play", DECLINE: "decline", OPEN1: "open 1", OPEN2: "open 2",
             BLIND: "blind", SKIP: "skip"}  # fmt: skip
    report: dict = {"recording": str(path), "student": str(student_path), "rows": len(held),
                    "kinds": {}}  # fmt: skip
    for kind, r in _kinds(M).items():
        pairs = Counter(
            f"{names.get(int(t), 'exchange')} -> {names.get(int(o), 'exchange')}"
            for t, o in zip(teacher[r], own[r], strict=True)
            if t != o
        )
        report["kinds"][kind] = {"rows": len(r), "agreement": float((own[r] == teacher[r]).mean()),
                                 "disagreements": dict(pairs.most_common(6))}  # fmt: skip
    both = (~M[:, PLAY] & M[:, OPEN1] & M[:, OPEN2]) & np.isin(teacher, [OPEN1, OPEN2])
    r = np.flatnonzero(both)
    orders = {"rows": len(r)}
    if len(r):
        masks = M[r].astype(np.int8)
        n = game.num_players
        outlook = observation_outlook(game, raw[r], moves=True)  # own score after each card
        readings = {
            "student": logits[r],
            "derby_exchange": DerbyExchange(game).values_batch(raw[r], masks),
            "derby_projection": DerbyProjection(game).values_batch(raw[r], masks),
        }
        readings = {k: (v[:, OPEN1], v[:, OPEN2]) for k, v in readings.items()}
        readings["outlook_moves own score"] = (outlook[:, 27 + n], outlook[:, 27 + 2 * n])
        for name, (v1, v2) in readings.items():  # ties count as the first card (act's rule)
            orders[name] = float((np.where(v1 >= v2, OPEN1, OPEN2) == teacher[r]).mean())
    report["card after number, the two open cards"] = orders
    return report


def _kinds(masks: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of ``masks`` (Derby's) by kind of decision, told by the legal actions:
    an exchange, a turn start (the number card and a movement card both to play), the
    number card alone, the movement card after the number (empty kinds left out)."""
    from derby_envs.games.derby.constants import BLIND, OPEN1, OPEN2, PLAY, SKIP

    card = masks[:, [OPEN1, OPEN2, BLIND]].any(1)
    kinds = {
        "turn start": masks[:, PLAY] & card,
        "number only": masks[:, PLAY] & ~card,
        "card after number": ~masks[:, PLAY] & card,
        "exchange": masks[:, SKIP],
    }
    return {k: np.flatnonzero(v) for k, v in kinds.items() if v.any()}


def _agreement(policy, X, M, best, rows) -> float:
    """Share of ``rows`` where the policy's most probable legal move is the teacher's (the
    warm start's check, in chunks: the held-out rows of millions of decisions)."""
    from training.train.warmstart import _agrees

    policy.set_training_mode(False)
    same = sum(
        int(_agrees(policy, X[j], M[j], best[j]).sum())
        for j in (rows[i : i + 16384] for i in range(0, len(rows), 16384))
    )
    return same / max(len(rows), 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="record the teacher's decisions")
    r.add_argument("--decisions", type=int, default=1_500_000)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--teacher", default=TEACHER)
    r.add_argument("--config", default=TEACHER_CONFIG, help="the teacher's training config")
    r.add_argument("--student", help="a student checkpoint that acts (DAgger)")
    r.add_argument("--teacher-share", type=float, default=0.5,
                   help="with --student: the share of decisions the teacher still plays")  # fmt: skip
    r.add_argument("--n-envs", type=int, default=256)
    f = sub.add_parser("fit", help="fit a standalone network to recordings")
    f.add_argument("recordings", nargs="+", type=Path)
    f.add_argument("--run-dir", type=Path, required=True)
    f.add_argument("--arch", default="512,512,512", help="hidden layer widths, comma-separated")
    f.add_argument("--epochs", type=int, default=12)
    f.add_argument("--lr", type=float, default=1e-3)
    f.add_argument("--batch-size", type=int, default=4096)
    f.add_argument("--deals", type=int, default=50, help="evaluation deals (0 = none)")
    f.add_argument("--init", help="a checkpoint of the same network to start from")
    f.add_argument("--threads", type=int, default=2)
    f.add_argument(
        "--features",
        help="the student's observation feature set, computed from "
        "the recorded observations (default: the standalone config's, as recorded)",
    )
    e = sub.add_parser("explain", help="where a student and the teacher part")
    e.add_argument("recording", type=Path)
    e.add_argument("--student", required=True, help="a standalone student checkpoint")
    e.add_argument("--rows", type=int, default=80_000, help="held-out decisions read")
    e.add_argument("--json", type=Path, help="also write the report here")
    a = p.parse_args(argv)
    try:
        if a.cmd == "explain":
            if a.rows < 1:
                raise StudyError("--rows must be >= 1")
            report = explain(a.recording, a.student, a.rows)
            print(json.dumps(report, indent=1))
            if a.json:
                a.json.write_text(json.dumps(report, indent=1) + "\n")
        elif a.cmd == "record":
            if a.decisions < 1 or a.n_envs < 1 or not 0.0 <= a.teacher_share <= 1.0:
                raise StudyError("--decisions and --n-envs must be >= 1, --teacher-share in [0, 1]")
            if a.out.suffix != ".npz":
                raise StudyError(f"--out {a.out}: expected a path ending in .npz")
            record(a.decisions, a.seed, a.out, a.teacher, a.config, a.student,
                   a.teacher_share if a.student else 1.0, a.n_envs)  # fmt: skip
        else:
            try:
                arch = [int(w) for w in a.arch.split(",")]
            except ValueError:
                raise StudyError(f"--arch {a.arch!r}: expected widths like 512,512,512") from None
            if a.epochs < 1 or a.batch_size < 1 or a.deals < 0 or min(arch) < 1:
                raise StudyError("--epochs, --batch-size and the widths must be >= 1, --deals >= 0")
            out = fit(a.recordings, a.run_dir, arch, a.epochs, a.lr, a.batch_size, a.deals,
                      a.init, a.threads, a.features)  # fmt: skip
            print(json.dumps(out, indent=1))
    except (StudyError, DerbyEnvsError) as exc:  # bad files, configs, checkpoints, run dirs
        print(f"derby_distill: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
