"""Where can derby_exchange be beaten one move at a time? Paired rollouts say, and check themselves.

Usage::

    .venv/bin/python scripts/studies/derby_rollout_gains.py [--games 100] [--seed 30] [--rollouts 16]
        [--from-progress 0.6] [--to-progress 1] [--play base] [--out gains.npz]
    .venv/bin/python scripts/studies/derby_rollout_gains.py --load gains.npz [more.npz ...]

One seat (rotating with the game) plays against three ``derby_exchange``. At each of its
decisions from ``--from-progress`` of the turns on, the ``derby_rollout`` search plays every
legal action out on the same ``--rollouts`` determinizations (its decisions before
``--to-progress`` only), a derby_exchange field playing
on, and records each playout's score margin (own score minus the others' mean). The seat then
plays derby_exchange's move (``--play base``: a measurement of derby_exchange itself) or the
search's (``--play search``).

A deviation picked on noisy playouts looks good on those playouts whether or not it is, so
the script checks each one on playouts it was not picked on: it splits the determinizations
into two halves, picks on one half (the best action by mean paired difference to
derby_exchange's move, if that difference exceeds ``z`` standard errors) and scores the pick on
the other half, and the other way round. A mean above 0 on the other half is a real gain.
It prints, per ``z``, how often a deviation is picked, its gain on the other half (mean and
standard error, in margin points) and the gain per game, and where the picks fall (the first
card choice of a turn, the second card, the exchange).

``--out`` writes the recording (a plain ``.npz``; with each searched decision it keeps what
the seat saw, ``obs``, derby_exchange's ``values`` and ``progress``, the inputs of
``scripts/studies/derby_gain_fit.py``); ``--load`` reads one or more instead of
playing (recorded with different ``--seed``: their games are counted apart; no pickles: data,
never code).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # derby_deviations, beside us
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from derby_deviations import KINDS, _kind

from agents.derby import progress
from agents.registry import make_policy
from derby_envs.core.policy import choose
from derby_envs.registry import make_game

ZS = (1.0, 1.5, 2.0, 2.5, 3.0)
FIELDS = ("samples", "base", "games", "games_played")


def record(
    games: int, seed: int, rollouts: int, share: float, play: str, until: float = 1.0
) -> dict[str, np.ndarray]:
    """Searched decisions: ``samples`` (decisions x rollouts x 24 actions, NaN where not
    legal), ``base`` (derby_exchange's action), ``games`` (the game of each decision),
    ``games_played``, and per decision the seat's observation ``obs``, derby_exchange's
    ``values`` of every action and the share of turns played (``progress``)."""
    game = make_game("derby", num_players=4)
    base = make_policy("derby_exchange", game)
    search = make_policy("derby_rollout", game, rollouts=rollouts, from_progress=share)
    samples, bases, which, obs, values, share_played = [], [], [], [], [], []
    t0 = time.perf_counter()
    for g in range(games):
        state = game.new_initial_state(seed * 100_003 + g)
        seat = g % 4
        rng = np.random.default_rng([seed, g])
        while not state.is_terminal():
            p = state.current_players()[0]
            a = choose(base, state, p, None)
            if p == seat and share <= progress(state) < until and len(state.legal_actions(p)) > 1:
                st = search.root_statistics(state, p, rng)
                row = np.full((rollouts, game.num_actions), np.nan)
                row[:, st["actions"]] = st["samples"]
                samples.append(row)
                bases.append(a)
                which.append(g)
                # what the seat saw and derby_exchange's values: inputs for a student
                o = np.array(state.observation(p), np.float32)
                obs.append(o)
                values.append(base.action_values(o, state.legal_mask(p)))
                share_played.append(progress(state))
                if play == "search":
                    a = st["action"]
            state.apply_action(p, a)
        if (g + 1) % 10 == 0 or g + 1 == games:
            print(f"  {g + 1}/{games} games, {len(bases)} decisions searched, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)  # fmt: skip
    return {
        "samples": np.asarray(samples, np.float64).reshape(-1, rollouts, game.num_actions),
        "base": np.asarray(bases, np.int64),
        "games": np.asarray(which, np.int64),
        "games_played": np.asarray(games, np.int64),
        "obs": np.asarray(obs, np.float32).reshape(len(bases), game.observation_size),
        "values": np.asarray(values, np.float64).reshape(len(bases), game.num_actions),
        "progress": np.asarray(share_played, np.float64),
    }


def picks(samples: np.ndarray, base: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Per decision and half: the action picked on that half (-1: none) and its mean paired
    difference to the base move on the other half. Shapes (decisions, 2)."""
    n, k, _ = samples.shape
    halves = (np.arange(0, k, 2), np.arange(1, k, 2))
    chosen = np.full((n, 2), -1)
    gain = np.zeros((n, 2))
    rows = np.arange(n)
    for h, (mine, other) in enumerate((halves, halves[::-1])):
        d = samples[:, mine] - samples[rows, :, base][:, mine, None]
        m = d.mean(1)
        se = d.std(1, ddof=1) / np.sqrt(len(mine))
        j = np.nanargmax(m, axis=1)
        ok = (j != base) & (m[rows, j] > 0) & (m[rows, j] > z * se[rows, j])
        chosen[ok, h] = j[ok]
        d_other = samples[:, other] - samples[rows, :, base][:, other, None]
        gain[ok, h] = d_other.mean(1)[ok, j[ok]]
    return chosen, gain


def check(data: dict[str, np.ndarray]) -> str | None:
    """What is wrong with a recording (None: nothing)."""
    samples, base, games = data["samples"], data["base"], data["games"]
    if samples.ndim != 3 or samples.shape[1] < 4 or samples.dtype.kind != "f":
        return "samples must be decisions x >= 4 rollouts x actions, as numbers"
    if base.shape != (len(samples),) or games.shape != base.shape or base.dtype.kind not in "iu":
        return "base and games must hold one integer per decision"
    if not len(samples):
        return "no decision was searched (a later --from-progress than the game reaches?)"
    if base.min() < 0 or base.max() >= samples.shape[2]:
        return "a base action is out of range"
    rows = np.arange(len(base))
    if np.isnan(samples[rows, :, base]).any():
        return "a base action has no playouts (not legal there)"
    if np.asarray(data["games_played"]).ndim or int(data["games_played"]) < len(np.unique(games)):
        return "games_played must be a count of at least the games with a searched decision"
    return None


def read_recording(path: Path, fields: tuple[str, ...], check: Any) -> dict[str, np.ndarray]:
    """One ``.npz`` recording's ``fields``, then ``check(part)`` (None or what is wrong);
    raises ValueError naming the file. No pickles: a recording is data, never code."""
    if path.suffix != ".npz" or not path.is_file():
        raise ValueError(f"{path} is not an .npz file")
    try:
        with np.load(path, allow_pickle=False) as f:
            part = {k: f[k] for k in fields}
    except KeyError as exc:
        raise ValueError(
            f"{path} lacks {exc}: not a recording of this script, or of an older version"
        ) from exc
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a recording of this script ({exc})") from exc
    problem = check(part)
    if problem is not None:
        raise ValueError(f"{path}: {problem}")
    return part


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Recordings as one: each one's games numbered after the previous ones'."""
    if len({p["samples"].shape[1:] for p in parts}) > 1:
        raise ValueError("the recordings have different numbers of rollouts")
    offsets = np.cumsum([0] + [int(p["games_played"]) for p in parts[:-1]])
    return {
        "samples": np.concatenate([p["samples"] for p in parts]),
        "base": np.concatenate([p["base"] for p in parts]),
        "games": np.concatenate([p["games"] + o for p, o in zip(parts, offsets, strict=True)]),
        "games_played": np.asarray(sum(int(p["games_played"]) for p in parts)),
    }


def report(data: dict[str, np.ndarray]) -> str:
    samples, base = data["samples"], data["base"]
    n, ngames = len(base), int(data["games_played"])
    kinds = np.array([KINDS.index(_kind(~np.isnan(s[0]))) for s in samples])
    lines = [
        f"{n:,} decisions searched in {ngames:,} games, {samples.shape[1]} determinizations each",
        "(gain per game: the gains of the picks on the other half, summed per game played)",
        "",
        "| z | picked | gain on the other half (points) | gain per game | "
        + " | ".join(f"picked at {k}" for k in KINDS)
        + " |",
        "|---:|---:|---|---:|" + "---:|" * len(KINDS),
    ]
    for z in ZS:
        chosen, gain = picks(samples, base, z)
        ok = chosen >= 0
        g = gain[ok]
        se = g.std(ddof=1) / np.sqrt(g.size) if g.size > 1 else float("nan")
        mean = g.mean() if g.size else float("nan")
        by_kind = [ok[kinds == i].sum() / max(2 * (kinds == i).sum(), 1) for i in range(3)]
        lines.append(
            f"| {z:g} | {ok.sum() / (2 * n):.3f} | {mean:+.3f} ± {se:.3f} | "
            f"{g.sum() / 2 / ngames:+.3f} | " + " | ".join(f"{x:.3f}" for x in by_kind) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--rollouts", type=int, default=16, help="determinizations (even, >= 4)")
    ap.add_argument("--from-progress", type=float, default=0.6, help="share of turns played")
    ap.add_argument("--to-progress", type=float, default=1.0, help="search before this share")
    ap.add_argument("--play", choices=("base", "search"), default="base")
    ap.add_argument("--out", type=Path, help="write the recording here (.npz)")
    ap.add_argument("--load", type=Path, nargs="+", help="read recordings instead of playing")
    args = ap.parse_args(argv)
    if args.load is not None:
        try:
            data = merge([read_recording(path, FIELDS, check) for path in args.load])
        except ValueError as exc:
            ap.error(f"--load: {exc}")
    else:
        if args.games < 1:
            ap.error(f"--games must be >= 1, got {args.games}")
        if args.seed < 0:
            ap.error(f"--seed must be >= 0, got {args.seed}")
        if args.rollouts < 4 or args.rollouts % 2:
            ap.error(f"--rollouts must be even and >= 4 (two halves), got {args.rollouts}")
        if not 0 <= args.from_progress < args.to_progress <= 1:
            ap.error(
                f"--from-progress and --to-progress must satisfy 0 <= from < to <= 1, got "
                f"{args.from_progress} and {args.to_progress}"
            )
        if args.out is not None and args.out.suffix != ".npz":
            ap.error(f"--out must end in .npz, got {args.out}")
        data = record(
            args.games, args.seed, args.rollouts, args.from_progress, args.play, args.to_progress
        )
        if args.out is not None:
            np.savez_compressed(args.out, **data)
    problem = check(data)
    if problem is not None:
        ap.error(problem)
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
