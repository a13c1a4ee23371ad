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


def _straightforward_values(tactical, state, player, legal, rng):
    """dd_tactical's action values computed the plain way (as first written): clone the
    resampled state per action, apply_action, and the simulated players' greedy choices
    through their observation and mask. The light simulation must match it exactly."""
    from derby_envs.games.demolition_derby.engine import DEPLOY

    quick = tactical.quick
    totals = np.zeros(len(legal))
    for _ in range(tactical.samples):
        base = state.resample_hidden(player, rng)
        for i, a in enumerate(legal):
            sim = base.clone()
            sim.apply_action(player, a)
            derby, turn, wins_before = sim.derby, sim.turn, sim.wins[player]
            while not sim.is_terminal() and sim.derby == derby and sim.turn == turn:
                p = sim.current_players()[0]
                if sim.phase == DEPLOY:
                    counts = sim.hand_counts(p, minus_picks=True)
                    options = [d for d, k in enumerate(counts) if k > 0]
                    vals = quick.value[options] + rng.normal(0, quick.noise, len(options))
                    act = options[int(np.argmax(vals))]
                else:
                    act = quick.act(sim.observation(p), sim.legal_mask(p), rng)
                sim.apply_action(p, act)
            if sim.is_terminal():
                score = 100.0 * (player in sim.winners())
            elif sim.derby != derby:
                score = 30.0 * (sim.wins[player] - wins_before) - 10.0
            else:
                tot, special = sim.projected_scores()
                score = tot[player] - max(t for q, t in enumerate(tot) if q != player)
                score += 0.3 * len(sim.lineups[player])
                score += 8.0 if player in special else (-8.0 if special else 0.0)
            totals[i] += score
    return totals


@pytest.mark.parametrize(
    "n,variant", [(2, "standard"), (3, "mekk_mania"), (4, "standard"), (6, "mekk_mania")]
)
def test_tactical_values_equal_the_straightforward_simulation(n, variant):
    import json

    g = DemolitionDerbyGame(num_players=n, variant=variant, wins_needed=2)
    tactical = make_policy("dd_tactical", g)
    rand = make_policy("random", g)
    checked = {"deploy": 0, "choose": 0, "derby_end": 0}
    for seed in range(6):
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal():
            p = s.current_players()[0]
            legal = s.legal_actions(p)
            if len(legal) > 1:
                before = json.dumps(s.to_dict())
                r1, r2 = np.random.default_rng(seed + 77), np.random.default_rng(seed + 77)
                fast = tactical.action_values(s, p, legal, r1)
                plain = _straightforward_values(tactical, s, p, legal, r2)
                assert np.array_equal(fast, plain), (seed, p, legal, fast, plain)
                assert r1.bit_generator.state == r2.bit_generator.state
                assert json.dumps(s.to_dict()) == before  # the real state is left untouched
                checked["choose" if s.phase == 1 else "deploy"] += 1
                checked["derby_end"] += len(s.hands[0]) <= g.picks_per_turn + 1
            s.apply_action(p, int(rand.act(None, s.legal_mask(p), rng)))
    assert min(checked.values()) > 0, checked
