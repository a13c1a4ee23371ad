"""Can a student learn where derby_exchange loses from the rollouts' value of every action?

Usage::

    .venv/bin/python scripts/studies/derby_gain_fit.py gains1.npz [gains2.npz ...] [--train-share 0.5]
        [--inputs both] [--hidden 16] [--weight-decay 0.01] [--epochs 8] [--seed 0]

Reads recordings of ``scripts/studies/derby_rollout_gains.py --out`` (those that also hold what the
seat saw: ``obs``, derby_exchange's ``values`` and ``progress``). Every legal action that is
not derby_exchange's move is a row; its target is the mean paired difference of its playouts
to the base move's (an unbiased, noisy estimate of what playing it instead gains, in margin
points). A small MLP regresses the targets on four fifths of the games and predicts the fifth
left out (five folds, split by game). The student deviates where its best predicted gain
exceeds a threshold ``tau``; because each held-out decision's recorded playouts were not used
to fit it, their mean difference for the student's pick scores it without bias, as a single
deviation from derby_exchange's game (later states are derby_exchange's, as for the search's
line below). Choosing ``tau``, ``--inputs`` or the network by this table is itself a selection:
confirm a choice on other recordings. Folds are drawn at random per game (``--folds``, about
equal). The table
gives, per ``tau``, how often it deviates, what each deviation gains on the recorded playouts
and the gain per game; the rollout search itself, picking on half of the playouts and scored
on the other half (``derby_rollout_gains.py``), is the line to reach.

Inputs (``--inputs``): ``obs`` (the observation, derby_exchange's values relative to its move,
the action), ``derived`` (instead of the raw observation: each horse's place if the race ended
now, which own tickets that fulfils, the margins to their thresholds, the own and the known
opponents' scores now), or ``both``. ``--train-share`` fits on that share of each fold's
training games (a learning curve). Recordings are data, never code: no pickles.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # derby_rollout_gains, beside us
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

import derby_rollout_gains as gains

from agents.features import derby_derived
from derby_envs.registry import make_game

STUDENT_FIELDS = ("obs", "values", "progress")
TAUS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)
GAP_CAP = 5.0  # ticket points: derby_exchange's values relative to its move, clipped


def derived_features(obs: np.ndarray) -> np.ndarray:
    """Rows of 4-player Derby observations -> ``agents.features.derby_derived`` (each horse's
    place if the race ended now, the own tickets that fulfils and by how much, the own and the
    known opponents' scores now; the observation only)."""
    return derby_derived(make_game("derby", num_players=4), obs)


def distinct_games(obs: np.ndarray, games: np.ndarray) -> bool:
    """Whether no two games of a merged recording start with the same observation (the same
    deals loaded twice would put one game on both sides of a hold-out split)."""
    _, first = np.unique(games, return_index=True)
    rows = np.ascontiguousarray(obs[first]).view(
        np.dtype((np.void, obs.dtype.itemsize * obs.shape[1]))
    )
    return len(np.unique(rows)) == len(first)


def load(paths: list[Path]) -> dict[str, np.ndarray]:
    """The recordings as one (games numbered apart), checked; raises ValueError."""
    size = make_game("derby", num_players=4).observation_size

    def check(part: dict[str, np.ndarray]) -> str | None:
        problem = gains.check(part)
        n = len(part["base"])
        if problem is None and (
            part["obs"].shape != (n, size)
            or part["values"].shape != (n, part["samples"].shape[2])
            or part["progress"].shape != (n,)
            or any(part[k].dtype.kind not in "fiu" for k in STUDENT_FIELDS)
        ):
            problem = f"obs ({size} numbers), values and progress must hold one row per decision"
        return problem

    fields = (*gains.FIELDS, *STUDENT_FIELDS)
    parts = [gains.read_recording(path, fields, check) for path in paths]
    data = gains.merge(parts)
    for k in STUDENT_FIELDS:
        data[k] = np.concatenate([p[k] for p in parts]).astype(np.float32 if k == "obs" else None)
    if not distinct_games(data["obs"], data["games"]):
        raise ValueError(
            "two recorded games start alike: the same deals loaded twice? (record each "
            "file with its own --seed)"
        )
    return data


def rows(data: dict[str, np.ndarray], inputs: str) -> tuple[np.ndarray, ...]:
    """(features, target, decision index, action) for every legal non-base action."""
    samples, base = data["samples"], data["base"]
    n, _, num_actions = samples.shape
    at = np.arange(n)
    y = (samples - samples[at, :, base][:, :, None]).mean(1)  # decisions x actions
    values = np.where(np.isfinite(data["values"]), data["values"], np.nan)
    rel = np.clip(np.nan_to_num(values - values[at, base][:, None], nan=-GAP_CAP), -GAP_CAP, 0)
    legal = ~np.isnan(samples[:, 0])
    d, a = np.nonzero(legal & (np.arange(num_actions)[None, :] != base[:, None]))
    eye = np.eye(num_actions, dtype=np.float32)
    state = []
    if inputs in ("obs", "both"):
        state.append(data["obs"])
    if inputs in ("derived", "both"):
        state.append(derived_features(data["obs"]))
    per_decision = np.concatenate(
        [*state, rel / GAP_CAP, legal.sum(1, keepdims=True) / num_actions,
         data["progress"][:, None]], 1).astype(np.float32)  # fmt: skip
    X = np.concatenate([per_decision[d], eye[a], eye[base[d]], rel[d, a][:, None] / GAP_CAP], 1)
    X = X.astype(np.float32)
    return X, y[d, a].astype(np.float32), d, a


def fit_predict(X, Y, Xtest, hidden: int, weight_decay: float, epochs: int, seed: int):
    """A two-layer tanh MLP regressing the gains (Huber loss); predictions for ``Xtest``."""
    import torch

    torch.manual_seed(seed)
    mu, sd = X.mean(0), (X.std(0) + 1e-6).astype(np.float32)
    net = torch.nn.Sequential(
        torch.nn.Linear(X.shape[1], hidden), torch.nn.Tanh(),
        torch.nn.Linear(hidden, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1),
    )  # fmt: skip
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=weight_decay)
    Xt, Yt = torch.as_tensor((X - mu) / sd), torch.as_tensor(Y)
    for _ in range(epochs):
        for idx in torch.randperm(len(X)).split(256):
            loss = torch.nn.functional.huber_loss(net(Xt[idx]).squeeze(1), Yt[idx], delta=5.0)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        return net(torch.as_tensor((Xtest - mu) / sd)).squeeze(1).numpy()


def student(data: dict[str, np.ndarray], args: argparse.Namespace) -> tuple[np.ndarray, ...]:
    """Held-out predictions; per decision the best predicted gain and its recorded gain."""
    X, Y, d, _ = rows(data, args.inputs)
    game_of = data["games"][d]
    rng = np.random.default_rng(args.seed)
    ngames = int(data["games_played"])
    fold = rng.integers(0, args.folds, ngames)
    kept = rng.random(ngames) < args.train_share
    pred = np.full(len(Y), np.nan)
    for k in range(args.folds):
        test = fold[game_of] == k
        train = ~test & kept[game_of]
        if not test.any():
            continue
        if len(np.unique(game_of[train])) < 2:
            raise ValueError(
                f"fold {k} has fewer than 2 training games: more games, a larger "
                "--train-share or fewer --folds"
            )
        pred[test] = fit_predict(X[train], Y[train], X[test], args.hidden,
                                 args.weight_decay, args.epochs, args.seed + k)  # fmt: skip
    n = len(data["base"])
    scored = np.where(np.isnan(pred), -np.inf, pred)
    best, gain = np.full(n, -np.inf), np.zeros(n)
    np.maximum.at(best, d, scored)
    top = np.isfinite(scored) & (scored == best[d])
    gain[d[top]] = Y[top]  # the recorded gain of each decision's best predicted action
    return pred, Y, best, gain


def report(data: dict[str, np.ndarray], args: argparse.Namespace) -> str:
    pred, Y, best, gain = student(data, args)
    ngames, n = int(data["games_played"]), len(data["base"])
    ok = np.isfinite(pred)
    corr = float(np.corrcoef(pred[ok], Y[ok])[0, 1]) if ok.sum() > 2 else float("nan")
    lines = [
        f"{n:,} decisions in {ngames:,} games, {len(Y):,} alternative actions; inputs "
        f"{args.inputs}, train share {args.train_share:g}; held-out correlation of predicted "
        f"and recorded gains {corr:.3f}",
        "",
        "| student: tau | deviates | gain each (points) | gain per game |",
        "|---:|---:|---|---:|",
    ]
    for tau in TAUS:
        g = gain[best > tau]
        se = g.std(ddof=1) / np.sqrt(g.size) if g.size > 1 else float("nan")
        mean = g.mean() if g.size else float("nan")
        lines.append(f"| {tau:g} | {g.size / n:.3f} | {mean:+.3f} ± {se:.3f} | "
                     f"{g.sum() / ngames:+.3f} |")  # fmt: skip
    chosen, half_gain = gains.picks(data["samples"], data["base"], 2.0)
    picked = chosen >= 0
    lines.append(
        f"\nthe rollout search (z=2 on half the playouts, scored on the other half): deviates "
        f"{picked.mean():.3f}, gains {half_gain[picked].sum() / 2 / ngames:+.3f} a game"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recordings", type=Path, nargs="+")
    ap.add_argument("--inputs", choices=("obs", "derived", "both"), default="both")
    ap.add_argument("--train-share", type=float, default=1.0)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not 0 < args.train_share <= 1:
        ap.error(f"--train-share must be in (0, 1], got {args.train_share}")
    for name in ("hidden", "epochs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.folds < 2:
        ap.error(f"--folds must be >= 2, got {args.folds}")
    if not args.weight_decay >= 0 or args.seed < 0:  # "not >=": NaN is refused too
        ap.error("--weight-decay and --seed must be >= 0")
    try:
        data = load(args.recordings)
        table = report(data, args)
    except ValueError as exc:
        ap.error(str(exc))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
