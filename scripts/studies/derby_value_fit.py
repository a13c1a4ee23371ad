"""Why Derby's critic explains nothing: can a value net read the final margin from the observation?

Usage::

    .venv/bin/python scripts/studies/derby_value_fit.py [--games 2000] [--seed 1] [--out states.npz]
    .venv/bin/python scripts/studies/derby_value_fit.py --load states.npz [more.npz ...] [--epochs 3]

Plays ``--games`` deals of four ``derby_exchange`` (36 games a second on one core) and keeps,
from ``--from-progress`` of the turns on, a quarter of the positions, seen by each of the four
players, with that player's final score margin (own score minus the others' mean: what a
critic of the ``margin`` reward predicts). A fifth of the games, drawn by ``--seed`` from all
those loaded, is held out whole. It fits,
and scores on the held-out games by share of the game played (R^2, 1 = perfect, 0 = no better
than the mean, below 0 = worse):

* an MLP (256 x 256, ReLU) on the raw observation, as PPO's critic sees it;
* a ridge regression on ``agents.features.derby_derived`` (each horse's place if the race
  ended now, which own tickets that fulfils, the own and known opponents' scores now);
* the same MLP on the observation and those features.

The training games' R^2 of the raw MLP is printed too: far above its held-out R^2, the net
memorises the games instead of learning to score tickets. Recordings are plain ``.npz``
(data, never code).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # derby_gain_fit, beside us
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from derby_gain_fit import derived_features, distinct_games
from derby_rollout_gains import read_recording

from agents.derby import progress
from agents.registry import make_policy
from derby_envs.core.policy import choose
from derby_envs.registry import make_game

FIELDS = ("obs", "margin", "progress", "games")
BINS = ((0.45, 0.6), (0.6, 0.8), (0.8, 1.01))
KEEP = 0.25  # share of the positions kept: neighbours in one game say nearly the same


def record(games: int, seed: int, start: float) -> dict[str, np.ndarray]:
    game = make_game("derby", num_players=4)
    base = make_policy("derby_exchange", game)
    rng = np.random.default_rng(seed)
    obs, margin, share, which = [], [], [], []
    t0 = time.perf_counter()
    for g in range(games):
        state = game.new_initial_state(seed * 1_000_003 + g)
        kept = []
        while not state.is_terminal():
            pr = progress(state)
            if pr >= start and rng.random() < KEEP:
                kept += [(np.array(state.observation(q), np.float32), q, pr) for q in range(4)]
            p = state.current_players()[0]
            state.apply_action(p, choose(base, state, p, None))
        final = state.returns("margin")
        for o, q, pr in kept:
            obs.append(o)
            margin.append(final[q])
            share.append(pr)
            which.append(g)
        if (g + 1) % 500 == 0 or g + 1 == games:
            print(f"  {g + 1}/{games} games, {len(obs):,} positions, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)  # fmt: skip
    return {
        "obs": np.asarray(obs, np.float32).reshape(len(margin), game.observation_size),
        "margin": np.asarray(margin, np.float32),
        "progress": np.asarray(share, np.float32),
        "games": np.asarray(which, np.int64),
    }


def check(data: dict[str, np.ndarray]) -> str | None:
    n = len(data["margin"])
    size = make_game("derby", num_players=4).observation_size
    if n == 0:
        return "no position was kept (a --from-progress later than the games reach?)"
    if data["obs"].shape != (n, size) or data["obs"].dtype.kind != "f":
        return f"obs must hold one row of {size} numbers per position"
    if any(data[k].shape != (n,) or data[k].dtype.kind not in "fiu" for k in FIELDS[1:]):
        return "margin, progress and games must hold one number per position"
    if data["games"].dtype.kind == "f" or data["games"].min() < 0:
        return "games must be game numbers (integers >= 0)"
    return None


def r2(pred: np.ndarray, y: np.ndarray) -> float:
    return float(1 - ((pred - y) ** 2).mean() / y.var()) if y.size > 1 and y.var() else np.nan


def mlp(X, Y, Xtests, epochs: int, seed: int) -> list[np.ndarray]:
    import torch

    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(X.shape[1], 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1),
    )  # fmt: skip
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    for _ in range(epochs):
        for idx in torch.randperm(len(X)).split(1024):
            loss = ((net(Xt[idx]).squeeze(1) - Yt[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        return [net(torch.as_tensor(x)).squeeze(1).numpy() for x in Xtests]


def ridge(X, Y, Xtest, alpha: float = 1.0) -> np.ndarray:
    A = np.c_[X.astype(np.float64), np.ones(len(X))]
    w = np.linalg.solve(A.T @ A + alpha * np.eye(A.shape[1]), A.T @ Y)
    return np.c_[Xtest.astype(np.float64), np.ones(len(Xtest))] @ w


def report(data: dict[str, np.ndarray], epochs: int, seed: int) -> str:
    games = data["games"]
    ids = np.unique(games)
    ngames = len(ids)
    held = np.random.default_rng(seed).choice(ids, size=max(1, ngames // 5), replace=False)
    test = np.isin(games, held)  # a random fifth of the games, whole
    X, Y, P = data["obs"].astype(np.float32), data["margin"], data["progress"]
    F = derived_features(X)
    XF = np.concatenate([X, F], 1)
    raw_test, raw_train = mlp(X[~test], Y[~test], [X[test], X[~test]], epochs, seed)
    preds = {
        "MLP on the raw observation": raw_test,
        "ridge on the derived features": ridge(F[~test], Y[~test], F[test]),
        "MLP on the observation + derived features": mlp(
            XF[~test], Y[~test], [XF[test]], epochs, seed
        )[0],
    }
    head = " | ".join(f"R^2 at [{lo:g}, {min(hi, 1):g}]" for lo, hi in BINS)
    lines = [
        f"{len(Y):,} positions of {ngames:,} games ({int(test.sum()):,} held out: "
        f"{len(held):,} games drawn at random); final margin sd {Y.std():.2f}",
        "",
        f"| held-out games | {head} |",
        "|---|" + "---:|" * len(BINS),
    ]
    for name, p in preds.items():
        cells = [r2(p[(P[test] >= lo) & (P[test] < hi)], Y[test][(P[test] >= lo) & (P[test] < hi)])
                 for lo, hi in BINS]  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    lines.append(f"\nthe raw MLP on its own training games: R^2 {r2(raw_train, Y[~test]):.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--from-progress", type=float, default=0.45)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the positions here (.npz)")
    ap.add_argument("--load", type=Path, nargs="+", help="read recordings instead of playing")
    args = ap.parse_args(argv)
    if args.epochs < 1:
        ap.error(f"--epochs must be >= 1, got {args.epochs}")
    if args.games < 10:
        ap.error(f"--games must be >= 10 (a fifth is held out), got {args.games}")
    if args.seed < 0:
        ap.error(f"--seed must be >= 0, got {args.seed}")
    if not 0 <= args.from_progress < 1:
        ap.error(f"--from-progress must be in [0, 1), got {args.from_progress}")
    if args.out is not None and (args.load is not None or args.out.suffix != ".npz"):
        ap.error(f"--out must end in .npz and needs no --load, got {args.out}")
    if args.load is not None:
        try:
            parts = [read_recording(path, FIELDS, check) for path in args.load]
        except ValueError as exc:
            ap.error(f"--load: {exc}")
        offsets = np.cumsum([0] + [int(p["games"].max()) + 1 for p in parts[:-1]])
        data = {k: np.concatenate([p[k] for p in parts]) for k in FIELDS}
        data["games"] = np.concatenate(
            [p["games"] + o for p, o in zip(parts, offsets, strict=True)]
        )
        if not distinct_games(data["obs"], data["games"]):
            ap.error("--load: two recorded games start alike: the same deals loaded twice?")
    else:
        data = record(args.games, args.seed, args.from_progress)
        problem = check(data)
        if problem is not None:
            ap.error(problem)
        if args.out is not None:
            np.savez_compressed(args.out, **data)
    if len(np.unique(data["games"])) < 5:
        ap.error("the positions come from fewer than 5 games: nothing to hold out")
    print(report(data, args.epochs, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
