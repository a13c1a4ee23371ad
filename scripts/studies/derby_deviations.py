"""Where does ISMCTS deviate from derby_exchange, and can a student tell where?

Usage::

    .venv/bin/python scripts/studies/derby_deviations.py runs/derby_4p_ismcts_default_data.npz

Reads a ``pretrain.data`` file recorded with ``hint: derby_exchange`` and ``hint_features:
values`` (the observation ends with derby_exchange's value of every action, 0 for its choice),
e.g. by ``configs/derby_4p_expert.yaml`` with ``pretrain.params={}`` (docs/training.md, Derby).
Prints the deviations (the recorded move is not derby_exchange's argmax) by kind of decision
and by tenth of the game, then fits a small classifier "does ISMCTS deviate here?" on four
fifths of the games and scores it on the fifth left out (five folds, split by game): the
ranking quality (AUC) and the precision of its most confident held-out calls. A student
policy has to find these decisions (and the better move in them) to gain from them.
``--train-share 0.5`` fits on half of each fold's training games (``--seed`` shuffles the
games and seeds the fit).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from derby_envs.games.derby.constants import BLIND, DECLINE, OPEN1, SKIP


def _auc(score: np.ndarray, label: np.ndarray) -> float:
    """Area under the ROC curve (the Mann-Whitney statistic; tied scores share their mean rank,
    so the order of the decisions does not matter)."""
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    rank = ((ends - counts + 1 + ends) / 2)[inverse]
    pos = label.astype(bool)
    n1, n0 = int(pos.sum()), int((~pos).sum())
    return float((rank[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


KINDS = ("first card", "second card", "exchange")


def _kind(mask: np.ndarray) -> str:
    """Derby's action layout (docs/derby.md): PLAY-DECLINE the number card, OPEN1-BLIND the
    movement card, SKIP on the exchanges. A player plays its two cards in either order, so
    the first card choice has both groups legal and the second only one."""
    if mask[SKIP:].any():
        return "exchange"
    number, movement = mask[: DECLINE + 1].any(), mask[OPEN1 : BLIND + 1].any()
    return "first card" if number and movement else "second card"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a pretrain.data .npz recorded with derby_exchange's values")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300, help="Adam steps of each fold's fit")
    ap.add_argument(
        "--train-share",
        type=float,
        default=1.0,
        help="fit on this share of each fold's training games (a learning curve)",
    )
    args = ap.parse_args(argv)
    if not 0 < args.train_share <= 1:
        ap.error(f"--train-share must be in (0, 1], got {args.train_share}")
    if args.steps < 1:
        ap.error(f"--steps must be >= 1, got {args.steps}")
    if args.folds < 2:
        ap.error(f"--folds must be >= 2, got {args.folds}")

    import torch  # a dependency of stable-baselines3: always installed

    try:
        d = np.load(args.data, allow_pickle=False)  # data, never code: no pickles
        obs, masks, moves, episodes = d["obs"], d["masks"], d["actions"], d["episodes"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        ap.error(f"{args.data}: not a pretrain.data recording ({e})")
    meta = json.loads(str(d["meta"])) if "meta" in d.files else {}
    if meta and (meta.get("hint"), meta.get("hint_features")) != ("derby_exchange", "values"):
        ap.error(f"{args.data}: recorded without derby_exchange's value features (hint_features)")
    n_act = masks.shape[1]
    values = np.where(masks, obs[:, -n_act:], -np.inf)
    dev = moves != values.argmax(1)
    choice = masks.sum(1) > 1
    if dev[choice].all() or not dev[choice].any():
        ap.error(f"{args.data}: the moves never (or always) differ from derby_exchange's")
    print(
        f"{len(moves):,} decisions, {len(np.unique(episodes))} games, {int(dev.sum())} deviations"
    )

    kinds = np.array([_kind(m) for m in masks])
    for k in KINDS:
        sel = kinds == k
        n, n_dev = int(sel.sum()), int(dev[sel].sum())
        print(f"  {k:11s} {n:6,d} decisions, {n_dev:4d} deviate ({n_dev / max(n, 1):.3f})")
    tenth = np.zeros(len(moves), dtype=int)
    for e in np.unique(episodes):
        idx = np.flatnonzero(episodes == e)
        tenth[idx] = np.arange(len(idx)) * 10 // len(idx)
    shares = " ".join(f"{dev[tenth == k].mean():.3f}" for k in range(10))
    print(f"  deviation share by tenth of the game: {shares}")

    top2 = np.sort(values, 1)[:, -2:]
    # how far derby_exchange's runner-up is behind its choice, in feature units (2 points = 1,
    # floored at 0.01); 0 where there is no runner-up (its -inf)
    gap = np.where(choice, top2[:, 1] - top2[:, 0], 0.0)
    x = np.concatenate([obs, gap[:, None], masks.sum(1, keepdims=True) / n_act], 1)
    x = ((x - x.mean(0)) / (x.std(0) + 1e-6)).astype(np.float32)
    games = np.unique(episodes)
    np.random.default_rng(args.seed).shuffle(games)
    torch.manual_seed(args.seed)
    held = np.zeros(len(moves))
    for fold in np.array_split(games, args.folds):
        test = np.isin(episodes, fold)
        fit = games[~np.isin(games, fold)]  # in the shuffled order: a share is a random subset
        train = np.isin(episodes, fit[: max(1, int(len(fit) * args.train_share))])
        xt, yt = torch.tensor(x[train]), torch.tensor(dev[train].astype(np.float32))
        if not 0 < float(yt.sum()) < len(yt):
            ap.error("a fold's training games hold no deviation: record more games")
        net = torch.nn.Sequential(
            torch.nn.Linear(x.shape[1], 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)
        )
        opt = torch.optim.Adam(net.parameters(), 1e-3, weight_decay=1e-4)
        weight = (1 - yt.mean()) / yt.mean()  # the rare class weighted up
        for _ in range(args.steps):
            idx = torch.randint(0, len(xt), (1024,))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(xt[idx]).squeeze(1), yt[idx], pos_weight=weight
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            held[test] = net(torch.tensor(x[test])).squeeze(1).numpy()
    s, y = held[choice], dev[choice]
    print(
        f"held-out AUC: classifier {_auc(s, y):.3f}, runner-up gap alone {_auc(-gap[choice], y):.3f}"
    )
    order = np.argsort(-s)
    for k in (50, 100, 250, 500):
        print(f"  its {k} most confident held-out calls: {y[order[:k]].mean():.3f} are deviations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
