"""The README's main job (``make demo`` -> ``derby-envs demo``).

Trains a small MaskablePPO agent on Kentucky Derby with 5 players (``configs/demo.yaml``: 16
games per step on the batched engine, about half a minute of training on 2 cores), then plays seat-rotated tournaments
with common random numbers against a field of the game's strongest heuristic (``kd_value``,
``agents.registry.strongest_heuristic``), and for reference the same for a random player, and
prints the tables. Every demo writes to a fresh
``runs/demo/<timestamp>/`` (never over earlier work). ``--quick`` trains for a thousand steps and
plays a handful of deals (the smoke test).
"""

from __future__ import annotations

import time
from pathlib import Path

from training.train.config import load_config

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"


def fresh_run_dir(root: Path) -> Path:
    """``root/<timestamp>`` that does not exist yet."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = root / stamp
    k = 1
    while path.exists():
        k += 1
        path = root / f"{stamp}-{k}"
    return path


def run_demo(quick: bool = False, runs_root: str | Path = "runs/demo") -> int:
    from agents.ppo import PPOPolicy
    from agents.registry import strongest_heuristic
    from training.evaluation.tournament import run_tournament
    from training.train import train

    run_dir = fresh_run_dir(Path(runs_root))
    overrides = [f"run_dir={run_dir}"]
    if quick:
        overrides += [
            "total_timesteps=1024",
            "evaluation.every=512",
            "evaluation.deals=3",
            "checkpoint.every=512",
            "ppo.n_epochs=2",
            "logging.tensorboard=false",
        ]
    config = load_config(CONFIG, overrides)
    deals = 6 if quick else 200
    game = config.make_game()
    print(
        f"derby-envs demo: MaskablePPO on {game.display_name} with {game.num_players} players, "
        f"{config.total_timesteps:,} steps against a pool of "
        + ", ".join(m.agent for m in config.opponents.pool)
        + f" (learner in a random seat every game), then {deals} deals of seat-rotated "
        "tournaments.\n"
    )
    t0 = time.perf_counter()
    summary = train(config, progress=None if not quick else False)
    train_s = time.perf_counter() - t0
    policy = PPOPolicy.load(run_dir / "final.zip", game, name="ppo")
    field = strongest_heuristic(game.name)
    results = []
    # the trained agent against the field, and for reference an untrained (random) player
    for label in ("ppo", "random"):
        result = run_tournament(
            game,
            [label] + [field] * (game.num_players - 1),
            deals,
            seed=2024,
            progress=not quick,
            policies={"ppo": policy} if label == "ppo" else None,
        )
        result.save(run_dir / f"{label}_vs_{field}")
        results.append((label, result))
        what = f"PPO ({summary['steps']:,} steps)" if label == "ppo" else "For reference, random"
        print(f"\n{what} vs a field of {field}:\n")
        print(result.markdown())
    print()
    for label, result in results:
        row = next(r for r in result.rows if r["agent"] == label)
        verdict = (
            "better than the field"
            if row["adv_lo95"] is not None and row["adv_lo95"] > 0
            else "worse than the field"
            if row["adv_hi95"] is not None and row["adv_hi95"] < 0
            else "not distinguishable from the field"
        )
        print(
            f"{label} vs {field}: chips per game {row['mean_score']:+.2f}, "
            f"{row['advantage']:+.2f} over the field (95% CI "
            f"{_fmt(row['adv_lo95'])} .. {_fmt(row['adv_hi95'])}: {verdict}); win share "
            f"{row['win_share']:.3f} [{row['win_lo95']:.3f}, {row['win_hi95']:.3f}] "
            f"(fair share {1 / game.num_players:.3f})"
        )
    print(
        f"\ntraining took {train_s:.0f} s; run directory {run_dir} (final.zip, TensorBoard logs "
        f"in tb/, eval.csv and eval_curve.svg, tournament tables in *_vs_{field}/).\n"
        f"Next: derby-envs train --config configs/kentucky_derby_5p.yaml (docs/training.md)"
    )
    return 0


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.2f}"
