"""Periodic evaluation of the learner: seat-rotated tournaments against each field, appended
to ``eval.csv`` (and, on resume, cut back to the checkpoint's step)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from training.files import write_text_atomic

EVAL_FIELDS = ["step", "field", "games", "win_share", "win_lo95", "win_hi95", "mean_score",
               "advantage", "adv_lo95", "adv_hi95"]  # fmt: skip


def evaluate_policy(
    policy: Any, game: Any, fields: list[str], deals: int, seed: int, cache: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Seat-rotated tournaments of ``policy`` (label ``learner``) against each field."""
    from training.evaluation.tournament import load_agent, run_tournament

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


def append_eval_rows(csv_path: Path, step: int, results: dict[str, dict[str, Any]]) -> None:
    """One ``eval.csv`` row per field (the header first in a new file)."""
    new = not csv_path.is_file()
    with csv_path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=EVAL_FIELDS)
        if new:
            w.writeheader()
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


def record_eval(logger: Any, results: dict[str, dict[str, Any]]) -> None:
    """The evaluation's figures in sb3's logger (TensorBoard)."""
    for spec, res in results.items():
        r = res["row"]
        key = f"eval/{spec}"
        logger.record(f"{key}/win_share", r["win_share"])
        logger.record(f"{key}/win_lo95", r["win_lo95"])
        logger.record(f"{key}/mean_score", r["mean_score"])
        if r["advantage"] is not None:
            logger.record(f"{key}/advantage", r["advantage"])


def eval_summary(results: dict[str, dict[str, Any]]) -> str:
    """One line: win share with its interval and score per field."""
    return ", ".join(
        f"vs {spec}: win {res['row']['win_share']:.3f} "
        f"[{res['row']['win_lo95']:.3f}, {res['row']['win_hi95']:.3f}] "
        f"score {res['row']['mean_score']:+.2f} (vs field {res['row']['advantage'] or 0:+.2f})"
        for spec, res in results.items()
    )


def eval_row_step(row: dict[str, Any]) -> float:
    """The step of an eval.csv row; a row torn by a kill mid-append counts as infinitely late
    (dropped on resume, the evaluation is redone)."""
    if None in row or any(row.get(k) is None for k in EVAL_FIELDS) or not row["field"]:
        return float("inf")
    try:
        return int(row["step"])
    except ValueError:
        return float("inf")


def truncate_eval_log(csv_path: Path, step: int) -> None:
    """On resume, forget evaluations made after the checkpoint (they will be redone)."""
    if not csv_path.is_file():
        return
    rows = [r for r in csv.DictReader(csv_path.open()) if eval_row_step(r) <= step]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=EVAL_FIELDS)
    w.writeheader()
    w.writerows(rows)
    write_text_atomic(csv_path, buf.getvalue())
