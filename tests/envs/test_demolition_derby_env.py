"""Demolition Derby's own rules as the envs see them: the simultaneous deploy, what buffered
choices and drafted hands show, what resample_hidden keeps, saves with buffered choices,
conservation of cards, random-play fuzzing and golden transcripts.

The game-independent contract (PettingZoo/Gymnasium batteries, registration, illegal actions,
rewards, seeding, pickling, clone and save round trips, resample_hidden of observations, masks
and text) runs from tests/envs/test_conformance.py over every declared option set (derby_envs.test).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import derby_envs  # noqa: F401 - registers the envs
from derby_envs import demolition_derby_v0
from derby_envs.core.errors import IllegalActionError, InvalidParameterError, StateFormatError
from derby_envs.games.demolition_derby.engine import CHOOSE, DEPLOY, DemolitionDerbyGame
from tests.common import (
    check_golden,
    random_action,
    transcript,
)

CONFIGS = [(n, v) for n in range(2, 7) for v in ("standard", "mekk_mania")]


def test_parallel_steps_all_pending_players_at_once():
    env = demolition_derby_v0.parallel_env(num_players=4, illegal_action="raise")
    obs, infos = env.reset(seed=3)
    movers = [a for a in env.agents if infos[a]["acting"]]
    assert movers == env.agents  # the deploy: everyone at once
    bad = {a: int(np.flatnonzero(obs[a]["action_mask"])[0]) for a in movers}
    bad["player_2"] = env.game.num_actions - 1  # "accept": never legal in a deploy
    before = env.game_state.to_dict()
    with pytest.raises(IllegalActionError):
        env.step(bad)
    assert env.game_state.to_dict() == before  # validated before anything is applied
    bad["player_2"] = int(np.flatnonzero(obs["player_2"]["action_mask"])[0])
    env.step(bad)
    assert env.game_state.turn == 1 or env.game_state.phase == CHOOSE


def test_parameters_are_validated():
    with pytest.raises(InvalidParameterError, match="num_players"):
        DemolitionDerbyGame(num_players=7)
    with pytest.raises(InvalidParameterError, match="variant"):
        DemolitionDerbyGame(variant="mekk")
    with pytest.raises(InvalidParameterError, match="cards"):
        DemolitionDerbyGame(cards="nope")
    with pytest.raises(InvalidParameterError, match="max_derbies"):
        DemolitionDerbyGame(wins_needed=5, max_derbies=3)


# ----- information hiding ------------------------------------------------------------------


def _observations(state):
    return [state.observation(p) for p in range(state.game.num_players)]


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_pending_choices_never_change_other_observations(n):
    """Before the reveal (and before equal-Strength choices are applied) nobody's observation
    changes with another player's buffered choice."""
    g = DemolitionDerbyGame(num_players=n)
    checked = 0
    for seed in range(25):
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal():
            movers = s.current_players()
            p = movers[0]
            a = random_action(s, p, rng)
            completes = len(movers) == 1 and (
                s.phase == CHOOSE or len(s.picks[p]) + 1 == g.picks_per_turn
            )
            before = _observations(s)
            s.apply_action(p, a)
            if not completes:  # the phase is still open: only p's view may change
                after = _observations(s)
                for q in range(n):
                    if q != p:
                        assert np.array_equal(before[q], after[q]), (seed, p, q)
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("n", [2, 4, 5])
def test_hands_of_others_appear_only_as_draft_knowledge(n):
    g = DemolitionDerbyGame(num_players=n)
    sl = g.observation_slices
    D = g.num_designs
    for seed in range(10):
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not s.is_terminal() and s.derby < 2:
            for p in range(n):
                obs = s.observation(p)
                known = obs[sl["known"]]
                kh = obs[sl["known_hands"]].reshape(n - 1, D)
                for r in range(1, n):
                    q = (p + r) % n
                    counts = np.bincount([g.cards.card_design[c] for c in s.hands[q]], minlength=D)
                    if r <= s.turn:  # p held q's hand r turns ago
                        assert known[r - 1] == 1 and np.array_equal(kh[r - 1], counts)
                    else:
                        assert known[r - 1] == 0 and not kh[r - 1].any()
                # exchanging two cards between two hands p cannot know changes nothing
                hidden = [(p + r) % n for r in range(1, n) if r > s.turn]
                if len(hidden) >= 2 and s.phase == DEPLOY:
                    t = s.clone()
                    a, b = hidden[:2]
                    if not t.picks[a] and not t.picks[b]:
                        t.hands[a][0], t.hands[b][0] = t.hands[b][0], t.hands[a][0]
                        t._clear_caches()
                        assert np.array_equal(t.observation(p), obs)
            q = s.current_players()[0]
            s.apply_action(q, random_action(s, q, rng))


def test_resample_hidden_keeps_knowledge_and_redraws_the_rest():
    g = DemolitionDerbyGame(num_players=4)
    s = g.new_initial_state(11)
    rng = np.random.default_rng(0)
    while s.turn < 2:  # turn 2: seats +1 and +2 are known to player 0, +3 is not
        q = s.current_players()[0]
        s.apply_action(q, random_action(s, q, rng))
    s.apply_action(2, random_action(s, 2, rng))  # a pending pick of player 2
    changed_hidden = changed_pick = False
    for k in range(20):
        r = s.resample_hidden(0, np.random.default_rng(k))
        assert r.hands[0] == s.hands[0] and r.hands[1] == s.hands[1]
        assert sorted(r.hands[2]) == sorted(s.hands[2])  # known hand (reordered at most)
        assert r.lineups == s.lineups and r.discard == s.discard
        assert sorted(r.hands[3] + r.unused) == sorted(s.hands[3] + s.unused)
        changed_hidden |= sorted(r.hands[3]) != sorted(s.hands[3])
        changed_pick |= r.picks[2] != s.picks[2]
        assert len(r.picks[2]) == 1
        allc = sorted(r.all_cards())
        assert allc == sorted(r.deck)
    assert changed_hidden and changed_pick


def test_resample_hidden_mekk_mania_redraws_unseen_cards_by_type():
    g = DemolitionDerbyGame(num_players=4, variant="mekk_mania")
    cs = g.cards
    s = g.new_initial_state(2)
    decks = set()
    for k in range(30):
        r = s.resample_hidden(0, np.random.default_rng(k))
        assert cs.type_counts(r.deck) == cs.type_counts(s.deck)
        assert r.hands[0] == s.hands[0]
        decks.add(tuple(r.deck))
    assert len(decks) > 1  # which cards of a type are in the deck is unknown too


# ----- copying, saving ---------------------------------------------------------------------


def test_roundtrip_mid_turn_with_pending_choices():
    """States with buffered deploy picks and with half-made equal-Strength ability choices."""
    g = DemolitionDerbyGame(num_players=5)
    found = {"pick": 0, "choice": 0}
    for seed in range(40):
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        for _ in range(400):
            if s.is_terminal():
                break
            kind = None
            if s.phase == DEPLOY and any(s.picks):
                kind = "pick"
            elif s.phase == CHOOSE and any(t.made for t in s.tasks):
                kind = "choice"
            if kind and found[kind] < 6:
                found[kind] += 1
                payload = json.loads(json.dumps(s.to_dict()))
                for copy in (s.clone(), g.state_from_dict(payload)):
                    r1, r2 = np.random.default_rng(1), np.random.default_rng(1)
                    a, b = s.clone(), copy
                    for _ in range(60):
                        if a.is_terminal():
                            break
                        p = a.current_players()[0]
                        assert b.current_players() == a.current_players()
                        assert np.array_equal(a.observation(p), b.observation(p))
                        assert np.array_equal(a.legal_mask(p), b.legal_mask(p))
                        a.apply_action(p, random_action(a, p, r1))
                        b.apply_action(p, random_action(b, p, r2))
            p = s.current_players()[0]
            s.apply_action(p, random_action(s, p, rng))
    assert found["pick"] >= 6 and found["choice"] >= 6


def test_bad_saved_states_are_rejected():
    g = DemolitionDerbyGame(num_players=3)
    d = g.new_initial_state(0).to_dict()
    bad = json.loads(json.dumps(d))
    bad["state"]["hands"][0].append(bad["state"]["unused"][0])
    with pytest.raises(StateFormatError, match="conserved"):
        g.state_from_dict(bad)


# ----- fuzzing -----------------------------------------------------------------------------


def _fuzz(n: int, variant: str, matches: int, seed0: int = 0) -> int:
    g = DemolitionDerbyGame(num_players=n, variant=variant)
    lo, hi = g.observation_bounds()
    steps = 0
    for m in range(matches):
        s = g.new_initial_state(seed0 + m)
        rng = np.random.default_rng(seed0 + m)
        while not s.is_terminal():
            movers = s.current_players()
            assert movers
            for p in movers:
                assert s.legal_mask(p).any(), "a player who must act has no legal action"
            p = movers[int(rng.integers(len(movers)))]
            s.apply_action(p, random_action(s, p, rng))
            steps += 1
            if steps % 7 == 0:
                allc = sorted(s.all_cards())
                assert allc == sorted(s.deck), "cards not conserved"
                o = s.observation(p)
                assert ((o >= lo) & (o <= hi)).all()
        # the match ends with a lone leader at wins_needed, or after max_derbies Derbies
        lone = max(s.wins) >= g.params["wins_needed"] and s.wins.count(max(s.wins)) == 1
        assert s.winners() and (lone or s.derby >= g.params["max_derbies"])
        r = s.returns("win")
        assert abs(r.sum()) < 1e-9
    return steps


@pytest.mark.parametrize(("n", "variant"), CONFIGS)
def test_fuzz_random_matches(n, variant):
    assert _fuzz(n, variant, matches=60 if n >= 5 else 120) > 0


@pytest.mark.slow
@pytest.mark.parametrize(("n", "variant"), CONFIGS)
def test_fuzz_thousands_of_random_matches(n, variant):
    assert _fuzz(n, variant, matches=2000, seed0=10_000) > 0


# ----- golden ------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "variant"), [(4, "standard"), (2, "standard"), (3, "mekk_mania")])
def test_golden_transcript(n, variant):
    g = DemolitionDerbyGame(num_players=n, variant=variant)
    check_golden(f"demolition_derby_{n}p_{variant}", transcript(g, seed=2024))
