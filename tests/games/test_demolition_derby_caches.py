"""The Demolition Derby engine's caches and shortcuts change no observation or Strength.

The engine builds observations from cached parts (each player's private part gathered from
one vector per hands, or counted per player with few players; public head and lineup
features written in bulk) and memoises lineup Strengths on the game. These tests hold them to
straightforward recounts written here, over seeded random play at every player count, both
variants, and on resampled and cloned states.
"""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs.core.policy import UniformRandomPolicy
from derby_envs.games.demolition_derby import abilities as dd_abilities
from derby_envs.games.demolition_derby import observer as dd_observer
from derby_envs.games.demolition_derby import strengths as dd_strengths
from derby_envs.games.demolition_derby.engine import CHOOSE, DEPLOY, OVER
from derby_envs.registry import make_game

CONFIGS = [(n, v) for n in range(2, 7) for v in ("standard", "mekk_mania")]


def private_recount(s, p: int) -> np.ndarray:
    """The private part counted card by card from the slice table (no caches)."""
    g = s.game
    cs = g.cards
    sl = g.observation_slices
    v = np.zeros(g.private_size, np.float64)
    if s.phase == OVER:
        return v.astype(np.float32)
    D, n = g.num_designs, g.num_players
    v[sl["to_act"].start] = p in s.movers
    for c in s.hands[p]:
        v[sl["hand"].start + cs.card_design[c]] += 1
    for d in s.picks[p]:
        v[sl["hand"].start + d] -= 1
        v[sl["picks"].start + d] += 1
    if s.phase == DEPLOY:
        v[sl["picks_left"].start] = (g.picks_per_turn - len(s.picks[p])) / g.picks_per_turn
    unknown = list(s.unused)
    for r in range(1, n):
        q = (p + r) % n
        if r <= s.turn:
            v[sl["known"].start + r - 1] = 1
            for c in s.hands[q]:
                v[sl["known_hands"].start + (r - 1) * D + cs.card_design[c]] += 1
        else:
            unknown += s.hands[q]
    for c in unknown:
        v[sl["unseen"].start + cs.card_design[c]] += 1
        v[sl["unseen_types"].start + cs.card_type[c]] += 1
    if g.params["variant"] == "mekk_mania":
        for c in s.deck:
            v[sl["unseen"].start + cs.card_design[c]] -= 1
        v[sl["unseen"]] += g.pool_design_counts
    v[sl["unknown_cards"].start] = len(unknown) / cs.num_cards
    if s.phase == CHOOSE:
        mine = [t for t in s.tasks if t.player == p and t.opts is not None]
        if mine:
            t = mine[0]
            v[sl["decision_kind"].start + t.kind] = 1
            v[sl["decision_may"].start] = t.may
            v[sl["decision_card"].start + t.card_design] = 1
            v[sl["decision_ability"].start + t.design] = 1
            v[sl["decisions_left"].start] = min(len(mine), 8) / 8
    return v.astype(np.float32)


def strengths_recount(s, derby: bool) -> list[int]:
    """Every lineup's Strengths by the engine's own per-lineup rule, without the memo."""
    st = s.game.cards.card_strength[:]
    for q, lineup in enumerate(s.lineups):
        for c, x in zip(lineup, dd_strengths.lineup_strengths(s, q, lineup, derby), strict=True):
            st[c] = x
    return st


def play(n: int, variant: str, seeds: range):
    """Yield every position of seeded random games (and a resampled copy now and then)."""
    rand = UniformRandomPolicy()
    for seed in seeds:
        g = make_game("demolition_derby", num_players=n, variant=variant)
        s = g.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        k = 0
        while True:
            yield s
            if k % 5 == 0 and not s.is_terminal():
                yield s.resample_hidden(k % n, rng)
            if s.is_terminal():
                break
            p = s.current_players()[0]
            s.apply_action(p, int(rand.act(None, s.legal_mask(p), rng)))
            k += 1


@pytest.mark.parametrize(("n", "variant"), CONFIGS)
def test_private_part_is_the_recount(n: int, variant: str) -> None:
    checked = 0
    for s in play(n, variant, range(2)):
        for p in range(n):
            got = s.observation(p)[: s.game.private_size]
            assert np.array_equal(got, private_recount(s, p)), (n, variant, p, s.turn)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("shared_from", [2, 99])
def test_shared_and_per_player_private_parts_agree(monkeypatch, shared_from: int) -> None:
    """Both ways of building the private part (forced either way) give the recount."""
    monkeypatch.setattr(dd_observer, "_SHARED_PRIVATE_MIN", shared_from)
    for n in (2, 3, 5):
        for s in play(n, "standard", range(1)):
            s._clear_caches()
            for p in range(n):
                got = s.observation(p)[: s.game.private_size]
                assert np.array_equal(got, private_recount(s, p))


@pytest.mark.parametrize(("n", "variant"), CONFIGS)
def test_strength_memo_is_the_recount(n: int, variant: str) -> None:
    lineups_with_modifiers = 0
    for s in play(n, variant, range(2)):
        s._clear_caches()
        assert s.strengths() == strengths_recount(s, derby=False)
        assert dd_strengths.compute_strengths(s, derby=True) == strengths_recount(s, derby=True)
        lineups_with_modifiers += sum(
            any(s.face_up[c] and c in s.game._modifier_cards[1] for c in x) for x in s.lineups
        )
    assert lineups_with_modifiers > 0  # the memoised path was exercised


@pytest.mark.parametrize(("n", "variant"), [(2, "standard"), (4, "standard"), (6, "mekk_mania")])
def test_observations_do_not_depend_on_cache_history(n: int, variant: str) -> None:
    """A state played step by step (its caches kept across levels and turns while the
    lineups allow) and a fresh restore of it agree: observations, masks, Strengths, Derby
    scores and protections."""
    g = make_game("demolition_derby", num_players=n, variant=variant)
    checked = 0
    for s in play(n, variant, range(2)):
        fresh = g.state_from_dict(s.to_dict())
        assert s.strengths() == fresh.strengths()
        assert s.projected_scores() == fresh.projected_scores()
        assert dd_abilities.protectors(s) == dd_abilities.protectors(fresh)
        for p in range(n):
            assert np.array_equal(s.observation(p), fresh.observation(p))
            assert np.array_equal(s.legal_mask(p), fresh.legal_mask(p))
        checked += 1
    assert checked > 50
