"""Derby agents: legal and fast, sensible on clear-cut positions, better than random."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from agents.registry import make_policy, policy_names
from derby_envs.core.policy import choose
from derby_envs.games.derby.engine import EXCHANGE, EXCHANGE0, OPEN1, SKIP, DerbyGame
from tests.common import play_seats
from tests.games.test_derby_rules import give_ticket, payload, put_open, set_up

HEURISTICS = ("derby_projection", "derby_exchange")


def play(game: DerbyGame, seats: list, seed: int) -> list[int]:
    return play_seats(game, seats, seed).winners()


def test_registry_lists_the_derby_agents():
    names = policy_names("derby")
    for name in (*HEURISTICS, "random", "search"):
        assert name in names
    with pytest.raises(ValueError, match="plays Derby"):
        from agents.derby import DerbyExchange
        from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame

        DerbyExchange(KentuckyDerbyGame())


@pytest.mark.parametrize("n", [3, 4, 5])
def test_heuristics_play_legal_games_quickly(n):
    g = DerbyGame(num_players=n)
    pols = [make_policy(HEURISTICS[q % 2], g) for q in range(n)]
    s = g.new_initial_state(0)
    for pol in pols[:2]:  # load (or, in a fresh checkout, compile) the numba kernels first
        pol.act(s.observation(0), s.legal_mask(0), np.random.default_rng(0))
    t0 = time.perf_counter()
    decisions = 0
    for seed in range(2):
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal():
            p = s.current_players()[0]
            a = pols[p].act(s.observation(p), s.legal_mask(p), rng)
            assert s.is_legal(p, a)
            s.apply_action(p, a)
            decisions += 1
    per = (time.perf_counter() - t0) / decisions
    assert per < 0.02, f"{per * 1e3:.1f} ms per decision"  # ~1-3 ms normally; CI has slack


def near_finish_state(g: DerbyGame):
    """Horse 3 two spaces from the finish; player 0 holds its 1st-or-better ticket (9) and
    plays a 2; open card 1 moves horse 3 first, open card 2 does not move it at all."""
    d = payload(g, 4)
    L = g.params["track_length"]
    put_open(d, 0, 0)  # card 0 moves 3, 6, 5, 4, 8, 7 (bottom to top)
    other = next(i for i, ex in enumerate(g.card_exchange) if 3 in ex and i != 0)
    put_open(d, 1, other)
    set_up(d, 0, 2)
    d["state"]["pos"] = [L - 20] * 9
    d["state"]["pos"][3] = L - 2
    give_ticket(d, 0, 3 * g.tickets_per_colour + 0)  # horse 3, 1st or better, profit 9
    return g.state_from_dict(json.loads(json.dumps(d)))


@pytest.mark.parametrize("name", HEURISTICS)
def test_heuristic_wins_the_race_for_its_ticket(name):
    g = DerbyGame(num_players=4)
    s = near_finish_state(g)
    pol = make_policy(name, g)
    rng = np.random.default_rng(0)
    while s.player == 0 and s.phase != EXCHANGE:
        s.apply_action(0, pol.act(s.observation(0), s.legal_mask(0), rng))
    assert s.place[3] == 1


def test_exchange_heuristic_takes_the_winning_ticket():
    """After the move, horse 0 leads by far; player 0 holds its 9th+1 ticket and the face-up
    one is 1st+9: the exchange heuristic takes it, the projection never exchanges."""
    g = DerbyGame(num_players=4)
    d = payload(g, 6)
    L = g.params["track_length"]
    put_open(d, 0, 0)  # exchange colours 0, 1, 2
    d["state"]["pos"] = [L - 3, 0, 0, 10, 10, 10, 10, 10, 10]
    K = g.tickets_per_colour
    give_ticket(d, 0, 0 * K + 8)
    stock = d["state"]["stock"][0]
    if stock[0] != 0:  # put red's 1st+9 on top of the stock
        holder = next((row for row in d["state"]["hand"] if row[0] == 0), None)
        if holder is not None:
            holder[0], stock[0] = stock[0], 0
        else:
            i = stock.index(0)
            stock[0], stock[i] = stock[i], stock[0]
    s = g.state_from_dict(json.loads(json.dumps(d)))
    s.apply_action(0, OPEN1)
    s.apply_action(0, 0)  # play the number card
    assert s.phase == EXCHANGE
    obs, mask = s.observation(0), s.legal_mask(0)
    rng = np.random.default_rng(0)
    assert make_policy("derby_exchange", g).act(obs, mask, rng) == EXCHANGE0 + 0
    assert make_policy("derby_projection", g).act(obs, mask, rng) == 5  # no exchange


def test_exchange_heuristic_beats_random():
    g = DerbyGame(num_players=4)
    me = make_policy("derby_exchange", g)
    rnd = make_policy("random", g)
    wins = 0.0
    games = 32
    for k in range(games):  # seat-rotated
        seats = [rnd] * 4
        seats[k % 4] = me
        w = play(g, seats, seed=k // 4)
        wins += (k % 4 in w) / len(w)
    assert wins / games > 0.5  # random would win 0.25; the heuristic wins ~0.85


def test_search_baseline_runs_on_derby():
    g = DerbyGame(num_players=3)
    pol = make_policy("search", g, rollouts=2)
    s = g.new_initial_state(1)
    rng = np.random.default_rng(1)
    for _ in range(4):
        p = s.current_players()[0]
        a = choose(pol, s, p, rng)
        assert s.is_legal(p, a)
        s.apply_action(p, a)


@pytest.mark.slow
@pytest.mark.parametrize("name", HEURISTICS)
def test_heuristics_beat_random_over_many_games(name):
    g = DerbyGame(num_players=4)
    me = make_policy(name, g)
    rnd = make_policy("random", g)
    wins, games = 0.0, 800
    for k in range(games):
        seats = [rnd] * 4
        seats[k % 4] = me
        w = play(g, seats, seed=10_000 + k // 4)
        wins += (k % 4 in w) / len(w)
    rate = wins / games
    half_width = 1.96 * np.sqrt(rate * (1 - rate) / games)
    assert rate - half_width > 0.25, f"{name}: {rate:.3f} +- {half_width:.3f}"


@pytest.mark.parametrize("name", HEURISTICS)
def test_action_values_rank_the_heuristics_own_choice_first(name):
    """``action_values`` (the features of residual PPO) agree with ``act``: its choice is the
    first best value, illegal actions are -inf, and every legal action has a finite value."""
    g = DerbyGame(num_players=4)
    pol = make_policy(name, g)
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(2):
        s = g.new_initial_state(seed)
        while not s.is_terminal():
            p = s.current_players()[0]
            obs, mask = s.observation(p), s.legal_mask(p)
            values = pol.action_values(obs, mask)
            assert np.all(np.isneginf(values[mask == 0]))
            a = pol.act(obs, mask, rng)
            assert int(np.argmax(values)) == a
            if mask.sum() > 1:
                finite = np.isfinite(values)
                if name == "derby_exchange" or not mask[SKIP]:
                    assert finite[mask == 1].all(), (values, mask)
                else:  # derby_projection never exchanges: only skipping has a value
                    assert finite.tolist() == [i == SKIP for i in range(len(mask))]
                checked += 1
            s.apply_action(p, a)
    assert checked > 100


def test_a_decline_tied_with_a_card_goes_to_the_decline():
    """A decline's expectations are summed in one order (``agents.derby._expect``): where the
    same card is best after every number a decline can turn up, declining first and that card
    first are worth the same to the last bit, and the first listed option (the decline) is
    played, on every machine (a BLAS dot product would round the two sums its own way)."""
    from agents.derby import _expect
    from derby_envs.games.derby.engine import BLIND, DECLINE, PLAY

    pol = make_policy("derby_exchange", DerbyGame(num_players=4))
    rng = np.random.default_rng(5)
    mask = np.zeros(EXCHANGE0, np.int8)
    mask[[PLAY, DECLINE, OPEN1, OPEN1 + 1, BLIND]] = 1
    for _ in range(200):
        dec_p = rng.dirichlet(np.ones(5))
        outcomes = rng.uniform(10.0, 30.0, (5, 7))
        outcomes[:, 0] = outcomes.max(axis=1) + rng.uniform(0.1, 5.0, 5)  # open card 1 best
        play = rng.uniform(0.0, 5.0, 7)  # playing the face-up number is worse than declining
        options = pol._card_choice(np.vstack([play, outcomes]), dec_p, False, False, mask)
        assert options[DECLINE] == options[OPEN1] == _expect(dec_p, outcomes[:, 0])
        assert max(options, key=options.get) == DECLINE  # act's first maximum


def test_race_outlook_is_a_chance_to_win_and_the_returns_at_the_end():
    from agents.derby import race_outlook, race_win_shares

    game = DerbyGame(num_players=4)
    state = game.new_initial_state(5)
    rng = np.random.default_rng(5)
    seen = 0
    while not state.is_terminal():
        win, score = race_win_shares(state)
        assert abs(win.sum() - 1.0) < 1e-9 and win.min() >= 0.0
        assert abs(race_outlook(state, "win").sum()) < 1e-9
        assert abs(race_outlook(state, "margin").sum()) < 1e-9
        assert np.array_equal(race_outlook(state, "score"), score)
        assert score.min() >= 0.0 and score.max() <= 9 * game.max_profit
        assert np.array_equal(race_win_shares(state)[0], win)  # no rng: the same draws
        legal = state.legal_actions(state.current_players()[0])
        state.apply_action(state.current_players()[0], legal[rng.integers(len(legal))])
        seen += 1
    assert seen > 100
    for mode in ("win", "score", "margin"):
        assert np.array_equal(race_outlook(state, mode), state.returns(mode))


def test_race_outlook_of_a_settled_race_is_the_score():
    from agents.derby import race_win_shares

    game = DerbyGame(num_players=4)
    state = game.new_initial_state(3)
    # eight horses have finished, the last one can only be 9th: every score is settled
    state.place = [1, 2, 3, 4, 5, 6, 7, 8, 0]
    state.finish_order = list(range(8))
    state.pos = [game.params["track_length"]] * 8 + [10]
    K = game.tickets_per_colour
    thr = [t for t, _ in game.ticket_values]
    for c in range(9):  # player 0 holds the ticket whose threshold is its horse's place
        state.hand[0][c] = c * K + thr.index(c + 1)
    actual = np.array(state.scores(), np.float64)
    assert actual.argmax() == 0 and (actual == actual.max()).sum() == 1
    win, score = race_win_shares(state)
    assert np.array_equal(score, actual)
    assert win[0] == 1.0


def _decisions(game: DerbyGame, seed: int) -> list:
    """(observation, mask) of a derby_exchange self-play game's decisions."""
    pol = make_policy("derby_exchange", game)
    s, rng, out = game.new_initial_state(seed), np.random.default_rng(seed), []
    while not s.is_terminal():
        p = s.current_players()[0]
        obs, mask = s.observation(p), s.legal_mask(p)
        out.append((obs, mask))
        s.apply_action(p, pol.act(obs, mask, rng))
    return out


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_heuristic_values_as_the_original(how):
    """A policy that has decided (its kernels' work arrays in use) copies or pickles into
    one that gives the same values (a copy used to hold copies of views of its work arrays,
    which the kernels never wrote: wrong values on ~every decision)."""
    import copy
    import pickle

    g = DerbyGame(num_players=4)
    positions = _decisions(g, 3)
    pol = make_policy("derby_exchange", g)
    expected = [pol.action_values(o, m) for o, m in positions]
    twin = copy.deepcopy(pol) if how == "deepcopy" else pickle.loads(pickle.dumps(pol))
    for (o, m), want in zip(positions, expected, strict=True):
        assert np.array_equal(twin.action_values(o, m), want)


def test_policies_in_threads_value_as_one_alone():
    """The work arrays are per thread: four threads deciding at once with two policies (the
    kernels release the GIL) give the values of a policy deciding alone, at 4 and 5 players
    (two layouts of work arrays)."""
    import threading

    games = [DerbyGame(num_players=4), DerbyGame(num_players=5)]
    cases = [(g, _decisions(g, 5 + k)) for k, g in enumerate(games)]
    alone = [[make_policy("derby_exchange", g).action_values(o, m) for o, m in pos]
             for g, pos in cases]  # fmt: skip
    shared = [make_policy("derby_exchange", g) for g in games]

    def run(slot: int) -> None:
        k = slot % 2
        g, pos = cases[k]
        for _ in range(3):
            for j, (o, m) in enumerate(pos):
                got[slot][j] = shared[k].action_values(o, m)

    got = [[None] * len(cases[slot % 2][1]) for slot in range(4)]  # 2 threads per policy
    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for slot in range(4):
        for have, want in zip(got[slot], alone[slot % 2], strict=True):
            assert np.array_equal(have, want)
