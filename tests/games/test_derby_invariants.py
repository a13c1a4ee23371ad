"""Derby: invariants over many random games, no information leaks, copies, golden transcript."""

from __future__ import annotations

import json

import numpy as np
import pytest

from derby_envs.games.derby import observer
from derby_envs.games.derby.engine import NUM_HORSES, OVER, DerbyGame, DerbyState
from tests.common import (
    check_clone_and_dict_roundtrip,
    check_golden,
    check_resample_hidden,
    random_action,
    transcript,
)

TURNS = {3: 48, 4: 48, 5: 50}


def check_invariants(s: DerbyState, prev_pos: list[int]) -> None:
    g = s.game
    n = g.num_players
    K = g.tickets_per_colour
    L = g.params["track_length"]
    # every player holds exactly one ticket per colour; the 81 tickets are all there
    for q in range(n):
        assert [t // K for t in s.hand[q]] == list(range(NUM_HORSES))
    tickets = sorted([t for row in s.hand + s.stock for t in row])
    assert tickets == list(range(NUM_HORSES * K))
    assert [len(row) for row in s.stock] == [K - n] * NUM_HORSES  # stocks kept whole
    assert all(t // K == c for c, row in enumerate(s.stock) for t in row)
    # the 63 movement cards: draw pile, open, played this turn, played before
    cards = s.pile + s.discard + [c for c in (*s.open, s.move_card) if c >= 0]
    assert sorted(cards) == list(range(g.num_cards))
    # number cards: left + played this turn + turns played = all dealt
    left = sum(len(d) + (1 if u else 0) for d, u in zip(s.decks, s.up, strict=True))
    assert left + (1 if s.num_card else 0) + s.turn == n * len(g.number_cards)
    assert sum(map(sum, s.num_left)) == left
    # positions never decrease; finishing positions distinct and in crossing order
    assert all(a >= b for a, b in zip(s.pos, prev_pos, strict=True))
    assert len(set(s.finish_order)) == len(s.finish_order)
    for i, h in enumerate(s.finish_order):
        assert s.place[h] == i + 1 and s.pos[h] == L
    assert all(s.place[h] == 0 and s.pos[h] < L for h in range(9) if h not in s.finish_order)
    # knowledge: everyone knows the face-up tickets; a player knows their own tickets
    assert all(row[0] == (1 << n) - 1 for row in s.stock_known)
    assert all(s.hand_known[q][c] >> q & 1 for q in range(n) for c in range(9))


def run_games(n: int, games: int, seed: int) -> dict[str, float]:
    g = DerbyGame(num_players=n)
    finished, steps_total = 0, 0
    for k in range(games):
        rng = np.random.default_rng(seed + k)
        s = g.new_initial_state(seed + k)
        prev = s.pos[:]
        while not s.is_terminal():
            p = s.current_players()[0]
            done = len(s.finish_order)
            s.apply_action(p, random_action(s, p, rng))
            steps_total += 1
            check_invariants(s, prev)
            new = s.finish_order[done:]
            if new:  # places in crossing order: bottom to top on the card just played
                card = s.move_card if s.move_card >= 0 else s.discard[-1]
                moves = g.card_moves[card]
                assert sorted(new, key=moves.index) == new
                assert all(prev[h] < s.pos[h] for h in new)
            prev = s.pos[:]
        if len(s.finish_order) < NUM_HORSES:
            assert s.turn == TURNS[n]  # the game lasts 48/48/50 turns
        else:
            assert s.turn <= TURNS[n]
        finished += len(s.finish_order)
        places = s.horse_places()
        assert sorted(places)[0] == 1 and max(places) <= 9
        assert s.winners() and s.returns("win").sum() == pytest.approx(0.0)
        score, margin = s.returns("score"), s.returns("margin")
        assert margin.sum() == pytest.approx(0.0)
        for q in range(n):  # own score minus the mean of the others'
            assert margin[q] == pytest.approx(score[q] - np.delete(score, q).mean())
        assert set(np.flatnonzero(margin == margin.max())) == set(s.winners())
    return {"finished": finished / games, "steps": steps_total / games}


@pytest.mark.parametrize("n", [3, 4, 5])
def test_invariants_random_games(n):
    stats = run_games(n, 200, seed=1000 * n)
    # calibration of the default track (rules/derby.md): ~5.6 horses in with 3-4 players, 7.5 with 5
    expected = 7.5 if n == 5 else 5.6
    assert abs(stats["finished"] - expected) < 0.6


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 4, 5])
def test_invariants_thousands_of_random_games(n):
    run_games(n, 3000, seed=10_000 * n)


# ----- the feature vector kept move by move equals a fresh build -------------------------------
@pytest.mark.parametrize("n", [3, 4, 5])
def test_incremental_observation_equals_rebuild(n):
    g = DerbyGame(num_players=n)
    for seed in range(8):
        rng = np.random.default_rng(seed)
        s = g.new_initial_state(seed)
        s.observation(0)  # start keeping the vector
        while True:
            incremental = s._vec.copy()
            fresh = s.clone()
            fresh._vec = None
            assert np.array_equal(incremental, observer.build(fresh))
            if s.is_terminal():
                break
            p = s.current_players()[0]
            s.apply_action(p, random_action(s, p, rng))


# ----- no leaks -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [3, 4, 5])
def test_resample_hidden_keeps_the_view(n):
    checked = check_resample_hidden(DerbyGame(num_players=n), seed=n, samples=3, max_steps=150)
    assert checked > 100


def test_resample_hidden_changes_what_is_hidden():
    g = DerbyGame(num_players=4)
    rng = np.random.default_rng(0)
    s = g.new_initial_state(0)
    for _ in range(40):
        p = s.current_players()[0]
        s.apply_action(p, random_action(s, p, rng))
    r = s.resample_hidden(1, np.random.default_rng(1))
    assert r.pile != s.pile and sorted(r.pile) == sorted(s.pile)
    assert [r.hand[q] for q in (0, 2, 3)] != [s.hand[q] for q in (0, 2, 3)]
    assert r.hand[1] == s.hand[1]
    # tickets player 1 knows stay where they are; the others stay in their colour
    for q in range(4):
        for c in range(9):
            if s.hand_known[q][c] >> 1 & 1:
                assert r.hand[q][c] == s.hand[q][c]
            assert r.hand[q][c] // 9 == c
    for c in range(9):
        for k, known in enumerate(s.stock_known[c]):
            if known >> 1 & 1:
                assert r.stock[c][k] == s.stock[c][k]
        assert all(t // 9 == c for t in r.stock[c])
    # declined (known) number cards stay at the bottom
    for q in range(4):
        h = s.hidden[q]
        assert r.decks[q][h:] == s.decks[q][h:]
        assert sorted(r.decks[q]) == sorted(s.decks[q])
    # future chance is re-drawn: the copies' generators differ from the original's
    assert r.rng.integers(2**62) != s.clone().rng.integers(2**62)


@pytest.mark.parametrize("n", [3, 5])
def test_opponent_hidden_ticket_never_changes_the_view(n):
    """Swap any ticket hidden from p (an opponent's, or a face-down stock ticket) with another
    of its colour hidden from p: p's observation is unchanged; the owner's changes."""
    g = DerbyGame(num_players=n)
    rng = np.random.default_rng(n)
    s = g.new_initial_state(n)
    swaps = 0
    while not s.is_terminal():
        for p in range(n):
            obs = s.observation(p)
            bit = 1 << p
            for c in range(9):
                slots = [("h", q) for q in range(n) if not s.hand_known[q][c] & bit]
                slots += [("s", k) for k in range(1, g.stock_size) if not s.stock_known[c][k] & bit]
                if len(slots) < 2:
                    continue
                i, j = rng.choice(len(slots), 2, replace=False)
                t = s.clone()

                def ref(st, slot, c=c):
                    kind, x = slot
                    return (st.hand[x], c) if kind == "h" else (st.stock[c], x)

                (a1, i1), (a2, i2) = ref(t, slots[i]), ref(t, slots[j])
                a1[i1], a2[i2] = a2[i2], a1[i1]
                t._vec = None
                assert np.array_equal(t.observation(p), obs)
                swaps += 1
        q = s.current_players()[0]
        s.apply_action(q, random_action(s, q, rng))
    assert swaps > 500


def test_hidden_parts_absent_from_observation():
    """Two games that differ only in hidden things look identical to a player at the start."""
    g = DerbyGame(num_players=4)
    a = g.new_initial_state(7)
    b = a.clone()
    b.pile = b.pile[::-1]
    b.decks = [d[::-1] for d in b.decks]
    for q in (1, 2, 3):  # opponents' tickets moved around among themselves
        b.hand[q] = a.hand[(q % 3) + 1][:]
    b._vec = None
    assert np.array_equal(a.observation(0), b.observation(0))
    assert not np.array_equal(a.observation(1), b.observation(1))


# ----- copies and saves ---------------------------------------------------------------------
@pytest.mark.parametrize("n,steps", [(3, 0), (3, 37), (4, 70), (5, 101), (4, 400)])
def test_clone_and_dict_roundtrip(n, steps):
    check_clone_and_dict_roundtrip(DerbyGame(num_players=n), seed=steps + n, steps=steps)


def test_clone_is_independent():
    g = DerbyGame(num_players=3)
    s = g.new_initial_state(1)
    s.observation(0)
    c = s.clone()
    before = json.dumps(s.to_dict())
    play = np.random.default_rng(2)
    while not c.is_terminal():
        p = c.current_players()[0]
        c.apply_action(p, random_action(c, p, play))
    assert json.dumps(s.to_dict()) == before


def test_state_from_dict_rejects_bad_payloads():
    from derby_envs.core.errors import StateFormatError

    g = DerbyGame(num_players=3)
    good = g.new_initial_state(0).to_dict()
    for key, value, match in [
        ("pos", [0] * 8, "pos: expected 9 entries"),
        ("pile", [0, 1, 2], "movement cards"),
        ("hand", [[0] * 9] * 3, "tickets"),
        ("phase", "nap", "nap"),
        ("player", 7, "player"),
    ]:
        bad = json.loads(json.dumps(good))
        bad["state"][key] = value
        with pytest.raises(StateFormatError, match=match):
            g.state_from_dict(bad)
    bad = json.loads(json.dumps(good))
    bad["state"]["decks"][0] = [6] * len(bad["state"]["decks"][0])  # only two 6s in the deck
    with pytest.raises(StateFormatError, match="rulebook deck"):
        g.state_from_dict(bad)
    bad = json.loads(json.dumps(good))
    bad["state"]["player"] = 1  # turn 0 is seat 0's
    with pytest.raises(StateFormatError, match="seat 0"):
        g.state_from_dict(bad)
    other = json.loads(json.dumps(good))
    other["params"]["num_players"] = 4
    with pytest.raises(StateFormatError, match="parameters"):
        g.state_from_dict(other)


def test_terminal_state_roundtrip():
    g = DerbyGame(num_players=5)
    s = g.new_initial_state(3)
    rng = np.random.default_rng(3)
    while not s.is_terminal():
        p = s.current_players()[0]
        s.apply_action(p, random_action(s, p, rng))
    r = g.state_from_dict(json.loads(json.dumps(s.to_dict())))
    assert r.phase == OVER and r.winners() == s.winners()
    assert r.returns("score").tolist() == s.returns("score").tolist()
    assert r.render_text() == s.render_text()


# ----- golden playthrough ---------------------------------------------------------------------
@pytest.mark.parametrize("n,seed", [(3, 3), (4, 2000), (5, 5)])
def test_golden_transcript(n, seed):
    check_golden(f"derby_{n}p_seed{seed}", transcript(DerbyGame(num_players=n), seed))
