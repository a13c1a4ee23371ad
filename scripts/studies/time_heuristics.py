"""Decision times of the strongest heuristics of every game, before and after the speed work.

A study (``derby-envs bench`` times every heuristic for users); it keeps frozen copies of two
agents as they were before that work (``Ref*`` below). Usage::

    .venv/bin/python scripts/studies/time_heuristics.py [--positions 400] [--rounds 3] [--json out.json]

Positions come from seeded random play (each game's mover at a decision with a choice). On
every position the current agent and a frozen copy of the implementation before the issue-12
speed work (``Ref*`` below) are timed one after the other with the same seeded rng, and
their choices and rng use are checked to agree. Figures: per-decision median and mean over
the positions (the median over ``rounds`` repetitions of each), and their ratios.

``derby_exchange`` (Derby 4p) is timed against its numpy model, the implementation before the
issue-12 speed work, kept as the test oracle the compiled kernels must match bit for bit
(``tests/agents/derby_oracle.py``); ``first_call_ms`` is the first decision of the
process (loading numba's cached kernels, or compiling them when the cache is cold).

``kd_value`` keeps the best actions of each betting situation it has seen; ``new`` is a fresh
agent meeting the positions in play order (the cache fills as it goes, as in a session),
``new_warm`` the same agent on a second pass.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from math import comb
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.demolition_derby import DDGreedy
from agents.kentucky_derby import _KDBase
from agents.registry import make_policy
from derby_envs.core.policy import UniformRandomPolicy
from derby_envs.games.demolition_derby.engine import DEPLOY
from derby_envs.registry import make_game
from tests.agents.derby_oracle import oracle_policy


class RefDDTactical:
    """``dd_tactical`` as it was before the speed work (clone + full engine API per action)."""

    needs_state = True

    def __init__(self, game, samples: int = 2, noise: float = 0.3) -> None:
        self.samples = samples
        self.quick = DDGreedy(game, noise=noise)

    def act_state(self, state, player, rng):
        legal = state.legal_actions(player)
        if len(legal) == 1:
            return legal[0]
        totals = np.zeros(len(legal))
        for _ in range(self.samples):
            base = state.resample_hidden(player, rng)
            for i, a in enumerate(legal):
                sim = base.clone()
                sim.apply_action(player, a)
                totals[i] += self._simulate(sim, player, rng)
        best = np.flatnonzero(totals == totals.max())
        return legal[int(best[rng.integers(best.size)])]

    def _simulate(self, sim, me, rng):
        derby, turn = sim.derby, sim.turn
        wins_before = sim.wins[me]
        steps = 0
        while not sim.is_terminal() and sim.derby == derby and sim.turn == turn and steps < 200:
            p = sim.current_players()[0]
            if sim.phase == DEPLOY:
                a = self._quick_deploy(sim, p, rng)
            else:
                a = self.quick.act(sim.observation(p), sim.legal_mask(p), rng)
            sim.apply_action(p, a)
            steps += 1
        if sim.is_terminal():
            return 100.0 * (me in sim.winners())
        if sim.derby != derby:
            return 30.0 * (sim.wins[me] - wins_before) - 10.0
        totals, special = sim.projected_scores()
        others = max(t for q, t in enumerate(totals) if q != me)
        score = totals[me] - others + 0.3 * len(sim.lineups[me])
        if me in special:
            score += 8.0
        elif special:
            score -= 8.0
        return score

    def _quick_deploy(self, sim, p, rng):
        counts = sim._hand_counts(p, minus_picks=True)
        legal = [d for d, k in enumerate(counts) if k > 0]
        vals = self.quick.value[legal] + rng.normal(0, self.quick.noise, len(legal))
        return legal[int(np.argmax(vals))]


class RefKDValue(_KDBase):
    """``kd_value`` as it was before the speed work (recomputed at every decision)."""

    def act(self, observation, action_mask, rng):
        v = self._read(observation)
        k = v["unseen"]
        joins = np.array([comb(k, j) * 0.25**j * 0.75 ** (k - j) for j in range(k + 1)])
        avg_stake = self.max_stake / 2.0
        top = self._legal_stakes(action_mask)
        refunds = self.ante * self.n / 4.0 if self.p2.any() else 0.0
        best_val, best = -np.inf, []
        for h in range(4):
            pool_ev = 0.0
            for j, pj in enumerate(joins):
                backers = v["backers"][h] + j + 1
                pool_ev += pj * max(v["pool"] - refunds, 0.0) / backers
            pool_ev *= self.p1[h]
            pool_ev += self.p2[h] * self.ante
            for s in range(top + 1):
                stake_ev = 0.0
                if s:
                    for j, pj in enumerate(joins):
                        others = v["stakes_on"][h] + j * avg_stake
                        pot = v["pot"] + s + k * avg_stake
                        stake_ev += pj * pot * s / (others + s)
                    stake_ev = self.p1[h] * stake_ev - s
                val = pool_ev + stake_ev
                if val > best_val + 1e-9:
                    best_val, best = val, [h * self.levels + s]
                elif abs(val - best_val) <= 1e-9:
                    best.append(h * self.levels + s)
        return int(best[rng.integers(len(best))])


def positions(game, count: int, seed0: int = 0) -> list:
    """(state copy, mover) at decisions with a choice, from seeded random play."""
    rand = UniformRandomPolicy()
    out = []
    seed = seed0
    while len(out) < count:
        s = game.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal() and len(out) < count:
            p = s.current_players()[0]
            mask = s.legal_mask(p)
            if mask.sum() > 1:
                out.append((s.clone(), p))
            s.apply_action(p, int(rand.act(None, mask, rng)))
        seed += 1
    return out


def _decide(policy, state, p, rng):
    if getattr(policy, "needs_state", False):
        return policy.act_state(state, p, rng)
    return policy.act(state.observation(p), state.legal_mask(p), rng)


def time_pair(ref, new, pos, rounds: int, warm_new=None) -> dict:
    """Median-over-rounds per-position times (s) of ``ref`` and ``new``; checks agreement."""
    t_ref = [[] for _ in pos]
    t_new = [[] for _ in pos]
    t_warm = [[] for _ in pos]
    inputs = [
        (s, p, None if getattr(ref, "needs_state", False) else (s.observation(p), s.legal_mask(p)))
        for s, p in pos
    ]
    for r in range(rounds):
        fresh = new() if callable(new) else new
        for i, (s, p, om) in enumerate(inputs):
            for who, pol, sink in ((0, ref, t_ref), (1, fresh, t_new)):
                rng = np.random.default_rng(1000 * r + i)
                t = time.perf_counter()
                a = pol.act_state(s, p, rng) if om is None else pol.act(om[0], om[1], rng)
                sink[i].append(time.perf_counter() - t)
                draw = int(rng.integers(2**62))
                if who == 0:
                    want = (a, draw)
                elif (a, draw) != want:
                    raise SystemExit(f"position {i}: choice/rng differ: {(a, draw)} vs {want}")
        if warm_new is not None:
            for i, (_s, _p, om) in enumerate(inputs):
                rng = np.random.default_rng(1000 * r + i)
                t = time.perf_counter()
                fresh.act(om[0], om[1], rng)
                t_warm[i].append(time.perf_counter() - t)
    per = {
        "reference": [statistics.median(x) for x in t_ref],
        "new": [statistics.median(x) for x in t_new],
    }
    if warm_new is not None:
        per["new_warm"] = [statistics.median(x) for x in t_warm]
    out = {k: {"median_us": 1e6 * float(np.median(v)), "mean_us": 1e6 * float(np.mean(v))}
           for k, v in per.items()}  # fmt: skip
    for k in per:
        if k != "reference":
            out[f"ratio_median_{k}"] = out["reference"]["median_us"] / out[k]["median_us"]
            out[f"ratio_mean_{k}"] = out["reference"]["mean_us"] / out[k]["mean_us"]
    return out


def time_in_play(game, ref, new, sessions: int) -> dict:
    """Decision times in play (a learner-like random seat 0, the heuristic in the others),
    over ``sessions`` seeded sessions: what a training run against a field of it sees. Both
    implementations answer every decision (same rng seed); the new one's answer is played."""
    rand = UniformRandomPolicy()
    t_ref, t_new = [], []
    for seed in range(sessions):
        s = game.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal():
            p = s.current_players()[0]
            obs, mask = s.observation(p), s.legal_mask(p)
            if p == 0:
                a = int(rand.act(obs, mask, rng))
            else:
                r1, r2 = (
                    np.random.default_rng(seed * 7919 + p),
                    np.random.default_rng(seed * 7919 + p),
                )
                t = time.perf_counter()
                want = ref.act(obs, mask, r1)
                t_ref.append(time.perf_counter() - t)
                t = time.perf_counter()
                a = new.act(obs, mask, r2)
                t_new.append(time.perf_counter() - t)
                if a != want or r1.bit_generator.state != r2.bit_generator.state:
                    raise SystemExit(f"session {seed}: choice/rng differ: {a} vs {want}")
            s.apply_action(p, a)
    out = {
        "reference": {
            "median_us": 1e6 * statistics.median(t_ref),
            "mean_us": 1e6 * statistics.mean(t_ref),
        },
        "new": {
            "median_us": 1e6 * statistics.median(t_new),
            "mean_us": 1e6 * statistics.mean(t_new),
        },
        "decisions": len(t_new),
    }
    out["ratio_median_new"] = out["reference"]["median_us"] / out["new"]["median_us"]
    out["ratio_mean_new"] = out["reference"]["mean_us"] / out["new"]["mean_us"]
    return out


def time_derby(count: int, rounds: int) -> dict:
    """derby_exchange, Derby 4p: the compiled kernels against the numpy oracle on the same
    positions in the same run, each timed over the whole position list in turn (as a policy
    meets decisions in play: one after the other, not each right after the other
    implementation's large arrays have flushed the caches); choices checked to agree. Per
    position the median over ``rounds``; also the first call of the process (kernel load)."""
    g = make_game("derby", num_players=4)
    inputs = [(s.observation(p), s.legal_mask(p)) for s, p in positions(g, count)]
    fast = make_policy("derby_exchange", g)
    t = time.perf_counter()
    fast.act(*inputs[0], np.random.default_rng(0))
    first = time.perf_counter() - t
    ref = oracle_policy("derby_exchange", g)
    times: dict[str, list[list[float]]] = {"reference": [], "new": []}
    for _ in range(rounds):
        choices = []
        for key, pol in (("reference", ref), ("new", fast)):
            row, picked = [], []
            for obs, mask in inputs:
                t = time.perf_counter()
                picked.append(pol.act(obs, mask, None))
                row.append(time.perf_counter() - t)
            times[key].append(row)
            choices.append(picked)
        if choices[0] != choices[1]:
            bad = next(i for i, (a, b) in enumerate(zip(*choices, strict=True)) if a != b)
            raise SystemExit(
                f"position {bad}: choices differ: {choices[1][bad]} vs {choices[0][bad]}"
            )
    out = {}
    for key, rows in times.items():
        per = np.median(np.array(rows), axis=0)
        out[key] = {"median_us": 1e6 * float(np.median(per)), "mean_us": 1e6 * float(per.mean())}
    out["ratio_median_new"] = out["reference"]["median_us"] / out["new"]["median_us"]
    out["ratio_mean_new"] = out["reference"]["mean_us"] / out["new"]["mean_us"]
    out["first_call_ms"] = 1e3 * first
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--only", choices=("dd_tactical", "kd_value", "derby_exchange"), help="time one only"
    )
    args = ap.parse_args(argv)
    results = {}
    if args.only in (None, "derby_exchange"):
        results["derby_exchange 4p"] = time_derby(args.positions, args.rounds)
    for n in (2, 4) if args.only in (None, "dd_tactical") else ():
        g = make_game("demolition_derby", num_players=n)
        pos = positions(g, args.positions)
        results[f"dd_tactical {n}p"] = time_pair(
            RefDDTactical(g), make_policy("dd_tactical", g), pos, args.rounds
        )
    if args.only in (None, "kd_value"):
        g = make_game("kentucky_derby", num_players=5)
        pos = positions(g, args.positions)
        results["kd_value 5p"] = time_pair(
            RefKDValue(g), lambda: make_policy("kd_value", g), pos, args.rounds, warm_new=True
        )
        results["kd_value 5p in play"] = time_in_play(
            g, RefKDValue(g), make_policy("kd_value", g), args.positions
        )
    for name, r in results.items():
        line = f"{name:18s} reference median {r['reference']['median_us']:8.1f} us mean "
        line += f"{r['reference']['mean_us']:8.1f} us"
        for k in ("new", "new_warm"):
            if k in r:
                line += (
                    f" | {k} median {r[k]['median_us']:7.1f} us mean {r[k]['mean_us']:7.1f} us"
                    f" (x{r[f'ratio_median_{k}']:.1f} / x{r[f'ratio_mean_{k}']:.1f})"
                )
        if "first_call_ms" in r:
            line += f" | first call {r['first_call_ms']:.0f} ms"
        print(line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
