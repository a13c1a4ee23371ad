"""Evaluator correctness on known inputs: intervals, seat balance, common random numbers, ratings."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from derby_envs.core.policy import UniformRandomPolicy
from derby_envs.registry import make_game
from training.evaluation.tournament import (
    arrangements,
    mean_interval,
    run_tournament,
    wilson_interval,
)


class FirstLegal:
    """Deterministic: the lowest legal action id (no use of its rng)."""

    name = "first"
    needs_state = False

    def act(self, observation, action_mask, rng):
        return int(np.flatnonzero(action_mask)[0])


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        (50, 100, 0.403832, 0.596168),  # the textbook example
        (0, 10, 0.0, 0.277533),  # upper bound z^2 / (n + z^2)
        (10, 10, 0.722467, 1.0),
        (81, 263, 0.255289, 0.366210),
        (1, 4, 0.045587, 0.699358),
    ],
)
def test_wilson_interval_known_values(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-6)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_fractional_successes_between_neighbours():
    # A shared win counts 1/k: the interval of 50.5 lies between those of 50 and 51.
    assert wilson_interval(50, 100)[0] < wilson_interval(50.5, 100)[0] < wilson_interval(51, 100)[0]


def test_mean_interval_known_values():
    m, lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0])
    half = 1.959963984540054 * math.sqrt(5 / 3) / 2
    assert (m, lo, hi) == pytest.approx((2.5, 2.5 - half, 2.5 + half))
    assert math.isinf(mean_interval([1.0])[1])


@pytest.mark.parametrize(
    ("lineup", "expected_arrangements"),
    [
        (["a", "b", "b"], 3),  # distinct permutations as labels
        (["a", "b", "c", "d"], 24),  # all 4! permutations
        (["a", "b", "b", "b", "b"], 5),
        (["a", "b", "c", "d", "e"], 5),  # 120 > 24: the cyclic rotations
    ],
)
def test_every_agent_in_every_seat_equally_often(lineup, expected_arrangements):
    n = len(lineup)
    game = make_game("kentucky_derby", num_players=n, num_races=1)
    policies = {label: UniformRandomPolicy() for label in lineup}
    seen: list[dict] = []
    deals = 3
    result = run_tournament(
        game, lineup, deals, seed=5, progress=False, policies=policies, on_game=seen.append
    )
    assert len(arrangements(lineup)) == expected_arrangements
    assert result.games == len(seen) == deals * expected_arrangements
    seats = Counter((label, seat) for g in seen for seat, label in enumerate(g["labels"]))
    for label in set(lineup):
        per_seat = [seats[(label, s)] for s in range(n)]
        # each seat gets this label as often as the lineup holds it, in every deal
        assert per_seat == [deals * expected_arrangements * lineup.count(label) // n] * n
    games = {r["agent"]: r["games"] for r in result.rows}
    assert games == {label: deals * expected_arrangements * lineup.count(label) for label in lineup}


def test_common_random_numbers():
    game = make_game("kentucky_derby", num_players=4)
    lineup = ["A", "B", "C", "D"]
    policies = dict.fromkeys(lineup, FirstLegal())  # identical deterministic players
    seen: list[dict] = []
    run_tournament(
        game, lineup, deals=4, seed=9, progress=False, policies=policies, on_game=seen.append
    )
    by_deal: dict[int, list[dict]] = {}
    for g in seen:
        by_deal.setdefault(g["deal"], []).append(g)
    seeds = [{g["deal_seed"] for g in games} for games in by_deal.values()]
    # every arrangement of a deal plays the same deal seed, and deals differ
    assert all(len(s) == 1 for s in seeds) and len({next(iter(s)) for s in seeds}) == 4
    for games in by_deal.values():
        assert len(games) == 24
        # Same chance and same play in every arrangement: the per-seat results are identical,
        # whoever sits there (the deal, not the agent's seat, drives the races).
        first = games[0]
        for g in games[1:]:
            assert np.array_equal(g["scores"], first["scores"]) and g["winners"] == first["winners"]
        # but agents' own randomness differs between arrangements
        assert len({g["agent_seed"] for g in games}) == 24
    # and different deals give different races
    assert len({tuple(gs[0]["scores"]) for gs in by_deal.values()}) > 1


def test_tournament_is_reproducible():
    game = make_game("kentucky_derby", num_players=3, num_races=2)
    a = run_tournament(game, ["kd_value", "random", "random"], 6, seed=2, progress=False)
    b = run_tournament(game, ["kd_value", "random", "random"], 6, seed=2, progress=False)
    assert a.rows == b.rows


def test_ratings_order_a_stronger_agent_first():
    game = make_game("kentucky_derby", num_players=4)
    result = run_tournament(
        game, ["kd_value", "random", "random", "random"], 40, seed=1, progress=False
    )
    rows = {r["agent"]: r for r in result.rows}
    assert result.rows[0]["agent"] == "kd_value"  # rows are sorted by rating
    assert (
        rows["kd_value"]["rating_mu"] > rows["random"]["rating_mu"] + rows["random"]["rating_sigma"]
    )
    # the same ordering in chips: a paired advantage clearly above zero
    assert rows["kd_value"]["adv_lo95"] > 0 > rows["random"]["adv_hi95"]
    assert rows["kd_value"]["win_share"] > rows["random"]["win_share"]


def test_advantage_is_the_paired_difference():
    game = make_game("kentucky_derby", num_players=3, num_races=2)
    seen: list[dict] = []
    result = run_tournament(
        game, ["kd_value", "random", "random"], 5, seed=4, progress=False, on_game=seen.append
    )
    diffs = []
    for d in range(5):
        games = [g for g in seen if g["deal"] == d]
        mine = [
            g["scores"][s] for g in games for s, lab in enumerate(g["labels"]) if lab == "kd_value"
        ]
        other = [
            g["scores"][s] for g in games for s, lab in enumerate(g["labels"]) if lab != "kd_value"
        ]
        diffs.append(np.mean(mine) - np.mean(other))
    row = next(r for r in result.rows if r["agent"] == "kd_value")
    m, lo, hi = mean_interval(diffs)
    assert (row["advantage"], row["adv_lo95"], row["adv_hi95"]) == pytest.approx((m, lo, hi))
