"""Demolition Derby agents: registered, legal, fast, and better than random."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agents.registry import make_policy, policy_names
from derby_envs.core.policy import choose
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from tests.common import play_seats


def _match(game, seats, seed):
    return play_seats(game, seats, seed).returns("win")


def test_policies_are_registered():
    names = policy_names("demolition_derby")
    assert {"random", "dd_greedy", "dd_tactical", "search"} <= set(names)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_heuristics_play_legal_and_fast(n):
    g = DemolitionDerbyGame(num_players=n, variant="mekk_mania" if n == 4 else "standard")
    greedy = make_policy("dd_greedy", g)
    tactical = make_policy("dd_tactical", g)
    seats = [greedy if q % 2 else tactical for q in range(n)]
    t = time.perf_counter()
    decisions = 0
    for seed in range(2):
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal():
            p = s.current_players()[0]
            s.apply_action(p, choose(seats[p], s, p, rng))
            decisions += 1
    assert (time.perf_counter() - t) / decisions < 0.02  # a few ms per decision


def test_greedy_and_tactical_beat_random_seat_rotated():
    g = DemolitionDerbyGame(num_players=2)
    rand = make_policy("random", g)
    score = {"dd_greedy": 0.0, "dd_tactical": 0.0}
    for name in score:
        pol = make_policy(name, g)
        for seed in range(30):
            for flip in (0, 1):
                seats = [pol, rand] if flip == 0 else [rand, pol]
                score[name] += _match(g, seats, seed)[flip]
    # mean return in [-0.5, 0.5]; random vs random is 0
    assert score["dd_greedy"] / 60 > 0.05
    assert score["dd_tactical"] / 60 > 0.2


def test_search_baseline_runs_on_demolition_derby():
    g = DemolitionDerbyGame(num_players=2, wins_needed=1)
    search = make_policy("search", g, rollouts=1)
    rand = make_policy("random", g)
    r = _match(g, [search, rand], 0)
    assert abs(r.sum()) < 1e-9
