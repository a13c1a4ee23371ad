"""Seat-rotated tournaments with common random numbers, confidence intervals and ratings.

A tournament plays a *lineup* (one agent per seat, e.g. ``["ppo.zip", "kd_value", "kd_value",
"kd_value", "kd_value"]``) over many deal seeds. Every deal seed is played in every seat
arrangement that matters (all distinct permutations of the lineup when there are at most
``max_arrangements`` of them, else the ``n`` cyclic rotations), so every agent sits in every seat
equally often and all agents face the same deals (common random numbers: the game's chance
comes from the deal seed; an agent's own randomness from a seed derived from the deal and the
seat).

Reported per agent label: games, win share (a shared win counts 1/k) with a 95% Wilson
interval, mean score on the game's own scale (chips, ticket score, Derby wins) with a 95%
interval, the score *advantage* over the other seats (per deal: the agent's mean score minus the
mean score of the other agents' seats in the same games, a paired difference under common random
numbers; averaged over deals with a 95% normal interval), rank distribution (1 = best, ties share
the better rank), and an OpenSkill (Plackett-Luce) rating over all games. Output: Markdown table
(printed), CSV and JSON.

Command line: ``derby-envs evaluate --game kentucky_derby --lineup kd_value random random
--games 300`` (see ``--help``).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.registry import make_policy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game
from derby_envs.core.policy import choose

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion (``successes`` may be fractional: shared wins)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def arrangements(lineup: Sequence[str], max_arrangements: int = 24) -> list[tuple[int, ...]]:
    """Seat arrangements to play each deal in: tuples ``seat -> lineup index``.

    All distinct permutations (as labels) if there are at most ``max_arrangements``, otherwise
    the cyclic rotations; either way every lineup entry sits in every seat equally often.
    """
    n = len(lineup)
    distinct: dict[tuple[str, ...], tuple[int, ...]] = {}
    count = math.factorial(n)
    for label in set(lineup):
        count //= math.factorial(lineup.count(label))
    if count <= max_arrangements:
        for perm in itertools.permutations(range(n)):
            key = tuple(lineup[i] for i in perm)
            distinct.setdefault(key, perm)
        return sorted(distinct.values())
    return [tuple((i + r) % n for i in range(n)) for r in range(n)]


def load_agent(spec: str, game: Game) -> Any:
    """A policy from an agent name (``random``, ``kd_value``, ``search``, ...) or a PPO ``.zip``."""
    if spec.endswith(".zip"):
        from agents.ppo import PPOPolicy

        return PPOPolicy.load(spec, game)
    return make_policy(spec, game)


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """(mean, lo, hi): normal-approximation interval of the mean of independent values."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return 0.0, -math.inf, math.inf
    m = float(x.mean())
    if x.size < 2:
        return m, -math.inf, math.inf
    half = z * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - half, m + half


def _finite(values: tuple[float, ...]) -> tuple[float | None, ...]:
    """Undefined bounds (fewer than two deals) as None, which JSON can hold."""
    return tuple(v if math.isfinite(v) else None for v in values)


@dataclass
class AgentStats:
    label: str
    games: int = 0
    wins: float = 0.0
    score_sum: float = 0.0
    ranks: list[int] = field(default_factory=list)
    deal_scores: list[float] = field(default_factory=list)  # per deal: mean score of my seats
    deal_advantages: list[float] = field(default_factory=list)  # per deal: mine - the others'

    def row(self, n_players: int) -> dict[str, Any]:
        lo, hi = wilson_interval(self.wins, self.games)
        dist = np.bincount(np.array(self.ranks, int) - 1, minlength=n_players) / max(self.games, 1)
        _, s_lo, s_hi = _finite(mean_interval(self.deal_scores))
        adv, a_lo, a_hi = _finite(mean_interval(self.deal_advantages))
        return {
            "agent": self.label,
            "games": self.games,
            "win_share": self.wins / max(self.games, 1),
            "win_lo95": lo,
            "win_hi95": hi,
            "mean_score": self.score_sum / max(self.games, 1),
            "score_lo95": s_lo,
            "score_hi95": s_hi,
            "advantage": adv,
            "adv_lo95": a_lo,
            "adv_hi95": a_hi,
            "rank_dist": [round(float(x), 4) for x in dist],
        }


@dataclass
class TournamentResult:
    game: str
    params: dict[str, Any]
    lineup: list[str]
    deals: int
    games: int
    score_mode: str
    seconds: float
    rows: list[dict[str, Any]]

    def markdown(self) -> str:
        head = (
            f"{self.game} {json.dumps(self.params, sort_keys=True)}: {self.games} games "
            f"({self.deals} deals x {self.games // max(self.deals, 1)} seat arrangements), "
            f"fair share 1/{len(self.lineup)} = {1 / len(self.lineup):.3f}\n\n"
        )
        lines = [
            f"| agent | games | win share | 95% CI | mean {self.score_mode} | vs others (95% CI) | rating (mu ± sigma) | rank 1..{len(self.lineup)} |",
            "|---|---:|---:|---|---:|---|---:|---|",
        ]
        for r in self.rows:
            adv = (
                f"{r['advantage']:+.2f} [{r['adv_lo95']:+.2f}, {r['adv_hi95']:+.2f}]"
                if r["adv_lo95"] is not None
                else "-"
            )
            lines.append(
                f"| {r['agent']} | {r['games']} | {r['win_share']:.3f} | "
                f"[{r['win_lo95']:.3f}, {r['win_hi95']:.3f}] | {r['mean_score']:.2f} | {adv} | "
                f"{r['rating_mu']:.1f} ± {r['rating_sigma']:.1f} | "
                + " ".join(f"{x:.2f}" for x in r["rank_dist"])
                + " |"
            )
        return head + "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def save(self, out_dir: str | Path) -> list[Path]:
        """Write ``<game>_<n>p.md/.csv/.json`` into ``out_dir`` (each file atomically)."""
        import io

        from training.files import write_text_atomic

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{self.game}_{len(self.lineup)}p"
        paths = [out / f"{stem}.md", out / f"{stem}.csv", out / f"{stem}.json"]
        write_text_atomic(paths[0], self.markdown() + "\n")
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=list(self.rows[0]))
        w.writeheader()
        for r in self.rows:
            w.writerow({**r, "rank_dist": " ".join(map(str, r["rank_dist"]))})
        write_text_atomic(paths[1], buf.getvalue())
        write_text_atomic(paths[2], json.dumps(self.to_json(), indent=2) + "\n")
        return paths


# Names that look like a results *file*: --out takes a directory (the files are named after
# the game and player count), so these are almost surely a mistake.
FILE_SUFFIXES = (".md", ".csv", ".json", ".txt", ".html", ".zip", ".yaml", ".yml")


def check_out_dir(out_dir: str | Path, game: str, players: int) -> None:
    """Fail before a tournament if its results cannot be written to ``out_dir``.

    Raises:
        InvalidParameterError: ``out_dir`` is a file or named like one, a result file in it
            is a directory, or it cannot be created or written (it is created here).
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidParameterError(
            f"--out {str(out)!r} is a file; it takes a directory (the results are written "
            f"there as {game}_{players}p.md/.csv/.json)"
        )
    if not out.exists() and out.suffix.lower() in FILE_SUFFIXES:
        raise InvalidParameterError(
            f"--out {str(out)!r} looks like a file name; it takes a directory (the results "
            f"are written there as {game}_{players}p.md/.csv/.json)"
        )
    # Probing is the only reliable check (permissions, read-only mounts, /proc, root): make
    # the directory the results go to now and write a temporary file into it.
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise InvalidParameterError(
            f"--out {str(out)!r} is not a writable directory ({exc.strerror or exc})"
        ) from None
    for suffix in (".md", ".csv", ".json"):
        target = out / f"{game}_{players}p{suffix}"
        if target.is_dir():
            raise InvalidParameterError(f"--out: {str(target)!r} is a directory, not a file")


def ranks_of(scores: np.ndarray, winners: Sequence[int]) -> list[int]:
    """Competition ranks (1 = best, ties share the better rank); winners always rank 1."""
    order = np.array(scores, dtype=float).copy()
    if winners:  # special wins (e.g. Demolition Derby's Commander) trump the score scale
        order[list(winners)] = np.inf
    return [1 + int(np.sum(order > order[p])) for p in range(len(order))]


def play_game(
    game: Game, seat_policies: Sequence[Any], seed: int, agent_seed: Sequence[int]
) -> dict[str, Any]:
    """One game; returns winners, per-seat scores on the game's scale and per-seat ranks."""
    state = game.new_initial_state(seed)
    rngs = [np.random.default_rng([*agent_seed, seat]) for seat in range(game.num_players)]
    steps = 0
    while not state.is_terminal():
        p = state.current_players()[0]
        state.apply_action(p, choose(seat_policies[p], state, p, rngs[p]))
        steps += 1
    winners = state.winners()
    scores = state.returns(game.reward_modes[-1])
    return {
        "winners": winners,
        "scores": scores,
        "ranks": ranks_of(scores, winners),
        "steps": steps,
    }


def run_tournament(
    game: Game,
    lineup: Sequence[str],
    deals: int,
    seed: int = 0,
    max_arrangements: int = 24,
    progress: bool = True,
    policies: dict[str, Any] | None = None,
    on_game: Callable[[dict[str, Any]], None] | None = None,
    workers: int = 1,
) -> TournamentResult:
    """Play ``deals`` deal seeds, each in every seat arrangement; see the module docstring.

    ``policies`` may map labels to ready policy objects (otherwise each label is loaded with
    :func:`load_agent`). ``on_game``, if given, is called after every game with a record
    ``{"deal", "deal_seed", "arrangement", "labels", "agent_seed", "winners", "scores",
    "ranks", "steps"}`` (``labels[seat]`` = the agent in that seat).

    ``workers > 1`` plays the games in that many worker processes (forked, so the loaded
    policies are shared): every game's chance and agent randomness come from its deal and seat
    arrangement only, and results are gathered in the serial order, so the result is the same
    as with one worker. Worth it for search agents, whose games take seconds.
    """
    _check_tournament(game, lineup, deals, workers)
    n = game.num_players
    policies = dict(policies or {})
    for label in lineup:
        if label not in policies:
            policies[label] = load_agent(label, game)
    arr = arrangements(lineup, max_arrangements)
    stats = {label: AgentStats(label) for label in dict.fromkeys(lineup)}
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {label: model.rating(name=label) for label in stats}
    total = deals * len(arr)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=f"{game.name} tournament", unit="game", leave=False)
    t0 = time.perf_counter()
    results = _play_all(game, lineup, arr, policies, deals, seed, workers)
    for d in range(deals):
        deal_seed = seed * 1_000_003 + d
        mine = {label: [] for label in stats}  # this deal's scores per label, over arrangements
        others = {label: [] for label in stats}
        for a_idx, perm in enumerate(arr):
            labels = [lineup[i] for i in perm]
            agent_seed = (deal_seed, a_idx)
            res = next(results)
            _count_game(stats, labels, res, mine, others)
            _rate(model, ratings, labels, res["ranks"])
            if on_game is not None:
                on_game(
                    {
                        "deal": d,
                        "deal_seed": deal_seed,
                        "arrangement": a_idx,
                        "labels": labels,
                        "agent_seed": agent_seed,
                        **res,
                    }
                )
            if bar is not None:
                bar.update(1)
        for label, st in stats.items():
            st.deal_scores.append(float(np.mean(mine[label])))
            if others[label]:
                st.deal_advantages.append(float(np.mean(mine[label]) - np.mean(others[label])))
    if bar is not None:
        bar.close()
    rows = []
    for label, st in stats.items():
        row = st.row(n)
        row["rating_mu"] = float(ratings[label].mu)
        row["rating_sigma"] = float(ratings[label].sigma)
        rows.append(row)
    rows.sort(key=lambda r: -r["rating_mu"])
    return TournamentResult(
        game=game.name,
        params=dict(game.params),
        lineup=list(lineup),
        deals=deals,
        games=total,
        score_mode=game.reward_modes[-1],
        seconds=time.perf_counter() - t0,
        rows=rows,
    )


def _check_tournament(game: Game, lineup: Sequence[str], deals: int, workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidParameterError(
            f"parameter 'workers': got {workers!r}, expected an integer >= 1"
        )
    n = game.num_players
    if len(lineup) != n:
        raise InvalidParameterError(
            f"lineup has {len(lineup)} agents but the game has {n} seats; give one agent per seat"
        )
    if deals < 1:
        raise InvalidParameterError(f"parameter 'deals': got {deals!r}, expected an integer >= 1")


def _count_game(
    stats: dict[str, AgentStats],
    labels: list[str],
    res: dict[str, Any],
    mine: dict[str, list[float]],
    others: dict[str, list[float]],
) -> None:
    """One game's result in each seat's agent statistics (a shared win counts 1/k) and in
    the deal's score lists (``mine``: the label's own seats, ``others``: everyone else's)."""
    k = len(res["winners"])
    for seat, label in enumerate(labels):
        st = stats[label]
        st.games += 1
        st.wins += (1.0 / k) if seat in res["winners"] else 0.0
        score = float(res["scores"][seat])
        st.score_sum += score
        st.ranks.append(res["ranks"][seat])
        mine[label].append(score)
        for other in stats:
            if other != label:
                others[other].append(score)


_JOBS: tuple | None = None  # (game, policies, lineup, arrangements, seed) for the workers


def _job(index: tuple[int, int]) -> dict[str, Any]:
    game, policies, lineup, arr, seed = _JOBS
    d, a_idx = index
    deal_seed = seed * 1_000_003 + d
    labels = [lineup[i] for i in arr[a_idx]]
    return play_game(game, [policies[x] for x in labels], deal_seed, (deal_seed, a_idx))


def _play_all(game, lineup, arr, policies, deals, seed, workers):
    """The games' results in serial order (deal-major), from ``workers`` processes."""
    global _JOBS
    jobs = [(d, a) for d in range(deals) for a in range(len(arr))]
    _JOBS = (game, policies, list(lineup), arr, seed)
    if workers == 1 or len(jobs) == 1:
        yield from map(_job, jobs)
        return
    import multiprocessing

    # fork: the workers inherit the loaded policies (_JOBS) instead of unpickling them
    with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
        yield from pool.imap(_job, jobs, chunksize=1)


def _rate(model: Any, ratings: dict[str, Any], labels: list[str], ranks: list[int]) -> None:
    """One OpenSkill update; seats played by the same agent average their updates."""
    if len(set(labels)) < 2:
        return
    new = model.rate([[ratings[x]] for x in labels], ranks=ranks)
    for label in set(labels):
        mine = [new[i][0] for i, x in enumerate(labels) if x == label]
        r = ratings[label]
        r.mu = float(np.mean([m.mu for m in mine]))
        r.sigma = float(np.mean([m.sigma for m in mine]))


def main(argv: Sequence[str] | None = None) -> int:
    from training.cli import main as cli_main

    return cli_main(["evaluate", *(argv or [])])


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
