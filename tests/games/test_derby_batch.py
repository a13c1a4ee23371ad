"""Derby's batched engine (derby_envs/games/derby/batch.py) against the reference engine.

``batch_battery`` plays the games of a batch and the reference states seeded alike with the
same random legal moves, and compares masks, observations (every player's, bit for bit),
who moves, returns in every mode, winners and (in the first games) the whole state,
generator included, after every move. The batched heuristics (``act_batch``) are checked
against ``choose`` on reference states, generators included.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from derby_envs.core.batch import batch_engine
from derby_envs.core.batch_check import batch_battery
from derby_envs.games.derby.batch import DerbyBatch
from derby_envs.registry import game_info, make_game

PLAYER_COUNTS = (3, 4, 5)


def _battery(n: int, seeds, full: int, **params) -> int:
    g = make_game("derby", num_players=n, **params)
    moves = batch_battery(g, seeds, compare_states=full, engine=DerbyBatch(g, len(seeds)))
    assert moves > 0
    return moves


def test_registered():
    g = make_game("derby")
    assert game_info("derby").batch_class() is DerbyBatch
    assert isinstance(batch_engine(g, 3), DerbyBatch)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_battery(n):
    """1,000 games per player count; the whole state compared in 100 of them."""
    _battery(n, range(1000 * n, 1001 * n + 1000 - n), full=100)


@pytest.mark.slow
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_battery_100k(n):
    for start in range(0, 100_000, 5_000):
        seeds = range(10**6 * n + start, 10**6 * n + start + 5_000)
        _battery(n, seeds, full=5 if start == 0 else 0)


def _write(tmp_path, name: str, data: dict) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def _small_deck(tmp_path) -> str:
    """Three cards (the draw pile runs out and is reshuffled from the played cards on every
    other turn), one moving every horse (no exchange phase) and one moving a single horse."""
    cards = [
        {"moves": [4, 0, 8, 2, 6, 1, 3, 7, 5], "exchange": []},
        {"moves": [7], "exchange": [0, 1, 2, 3, 4, 5, 6, 8]},
        {"moves": [2, 5, 8, 0, 3, 6], "exchange": [1, 4, 7]},
    ]
    return _write(tmp_path, "deck", {"cards": cards})


def _many_tickets(tmp_path) -> str:
    """Fifteen tickets per colour (long stocks), profits 0 included."""
    per = [[1 + k % 9, (7 * k) % 11] for k in range(15)]
    return _write(tmp_path, "tickets", {"per_colour": per})


def _few_tickets(tmp_path, n: int) -> str:
    """The fewest tickets a colour may have (n + 2: one face-down stock ticket)."""
    return _write(tmp_path, "few", {"per_colour": [[9 - k, 3 + k] for k in range(n + 2)]})


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_edge_parameters(tmp_path, n):
    """Custom decks and tickets, and the extreme track lengths (1: every mover finishes at
    once; 100,000: no horse finishes)."""
    seeds = range(40)
    _battery(n, seeds, 10, track_length=1)
    _battery(n, seeds, 10, track_length=100_000)
    _battery(n, seeds, 10, track_length=12, deck=_small_deck(tmp_path))
    _battery(n, seeds, 10, tickets=_many_tickets(tmp_path))
    _battery(n, seeds, 10, tickets=_few_tickets(tmp_path, n), track_length=30)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_load_and_to_state(n):
    """``load_state`` puts any reference position into a row (scenarios included), and
    ``to_state`` gives it back; play continues identically from it."""
    g = make_game("derby", num_players=n)
    eng = DerbyBatch(g, 4)
    eng.reset(np.arange(4, dtype=np.uint64), np.ones(4, np.bool_))
    rng = np.random.default_rng(n)
    states = []
    for seed in range(6):
        s = g.new_initial_state(100 + seed)
        for _ in range(int(rng.integers(0, 150))):
            if s.is_terminal():
                break
            p = s.current_players()[0]
            legal = np.flatnonzero(s.legal_mask(p))
            s.apply_action(p, int(legal[rng.integers(len(legal))]))
        states.append(s)
    states.append(g.scenario(7, turn=5, positions={"red": 100, "blue": 3}))
    for k, s in enumerate(states):
        i = k % 4
        eng.load_state(i, s)
        assert eng.to_state(i).to_dict() == s.to_dict()
        players = np.full(4, -1)
        obs = np.zeros((4, g.observation_size), np.float32)
        mask = np.zeros((4, g.num_actions), np.int8)
        for _ in range(30):
            if s.is_terminal():
                assert eng.terminal[i]
                break
            p = s.current_players()[0]
            players[:] = -1
            players[i] = p
            eng.observe(players, obs)
            eng.legal_masks(players, mask)
            assert np.array_equal(obs[i], s.observation(p))
            assert np.array_equal(mask[i], s.legal_mask(p))
            a = int(np.flatnonzero(mask[i])[-1])
            s.apply_action(p, a)
            eng.apply(players, np.full(4, a))
            assert eng.to_state(i).to_dict() == s.to_dict()


HEURISTICS = ("derby_exchange", "derby_projection")


def _act_batch_against_choose(g, B: int, first_seed: int, options=({},)) -> tuple[int, int]:
    """Play ``B`` games of ``g`` at random; at every position each heuristic's ``act_batch``
    must give ``choose``'s action on the reference state and leave the generators as
    ``choose`` leaves its own. Returns (decisions compared, near ties settled in Python)."""
    from agents.registry import make_policy
    from derby_envs.core import pcg64
    from derby_envs.core.policy import choose

    eng = DerbyBatch(g, B)
    eng.reset(np.arange(first_seed, first_seed + B, dtype=np.uint64), np.ones(B, np.bool_))
    policies = [make_policy(name, g, **kw) for name in HEURISTICS for kw in options]
    near_ties = []
    for pol in policies:
        decide = pol._decide_slot
        pol._decide_slot = lambda *a, _d=decide: near_ties.append(1) or _d(*a)
    rng = np.random.default_rng(first_seed)
    rngs = np.stack([pcg64.row_from_generator(np.random.default_rng(s)) for s in range(B)])
    out = np.zeros(B, np.int64)
    masks = np.zeros((B, g.num_actions), np.int8)
    decisions = 0
    while not eng.terminal.all():
        players = np.where(eng.terminal, -1, eng.player)
        for pol in policies:
            before = rngs.copy()
            out[:] = -1
            pol.act_batch(eng, players, rngs, out)
            for i in np.flatnonzero(players >= 0):
                gen = pcg64.generator_from_row(before[i])
                want = choose(pol, eng.to_state(int(i)), int(players[i]), gen)
                assert out[i] == want, (pol.name, i, eng.to_state(int(i)).to_dict())
                assert np.array_equal(rngs[i], pcg64.row_from_generator(gen))
                decisions += 1
        eng.legal_masks(players, masks)
        actions = np.zeros(B, np.int64)
        for i in np.flatnonzero(players >= 0):
            legal = np.flatnonzero(masks[i])
            actions[i] = legal[rng.integers(len(legal))]
        eng.apply(players, actions)
    return decisions, len(near_ties)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_act_batch_matches_choose(n):
    """Every heuristic's ``act_batch`` (derby_exchange also with deny=0) gives ``choose``'s
    action in every position of 16 games played out at random. Near ties with a decline
    (about one decision in nine here) are decided by the kernel, whose sums are
    ``_expect``'s; near ties with a blind draw's mean are settled by the Python
    ``_card_choice`` (at 5 players these games have some)."""
    g = make_game("derby", num_players=n)
    decisions, near_ties = _act_batch_against_choose(g, 16, 50 * n, ({}, {"deny": 0.0}))
    assert decisions > 1000 * 2 * len(HEURISTICS)
    if n == 5:
        assert near_ties  # the fallback ran


def test_act_batch_split_over_threads_matches_choose(monkeypatch):
    """A large batch is split over threads (three here, whatever the machine's cores): the
    same choices as ``choose``, every row written once by the thread that owns it."""
    from derby_envs.core import threads

    monkeypatch.setattr(threads, "THREADS", 3)
    splits = []
    run = threads.run
    monkeypatch.setattr(threads, "run", lambda tasks: splits.append(len(tasks)) or run(tasks))
    g = make_game("derby", num_players=4)
    decisions, _ = _act_batch_against_choose(g, 96, 7_000)
    assert decisions > 96 * 20 * len(HEURISTICS)
    assert max(splits) == 3  # the threads ran


def test_act_batch_in_small_chunks_matches_choose(monkeypatch):
    """Chunks of at most 3 rows, and chunks cut short because the next row's phi arguments
    would not fit the room left: the same choices as ``choose``."""
    from agents.derby import _DerbyBase

    monkeypatch.setattr(_DerbyBase, "_SLOTS", 3)
    monkeypatch.setattr(_DerbyBase, "_CHUNK_Z", 200_000)  # about two heavy rows
    g = make_game("derby", num_players=4)
    decisions, _ = _act_batch_against_choose(g, 24, 9_000)
    assert decisions > 24 * 20 * len(HEURISTICS)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_values_batch_equals_action_values(n, monkeypatch):
    """``values_batch`` (what the batched trainer's hint part reads) gives every row's
    ``action_values`` bit for bit, -inf included, in every position of games played at random:
    card phases with and without a decline and exchange phases, in chunks of at most 5 rows
    split over three threads."""
    from agents.derby import _DerbyBase
    from agents.registry import make_policy
    from derby_envs.core import threads
    from derby_envs.games.derby.constants import DECLINE, SKIP

    monkeypatch.setattr(_DerbyBase, "_SLOTS", 5)
    monkeypatch.setattr(threads, "THREADS", 3)
    g = make_game("derby", num_players=n)
    B = 12
    eng = DerbyBatch(g, B)
    eng.reset(np.arange(B, dtype=np.uint64) + 300 * n, np.ones(B, np.bool_))
    policies = [make_policy(name, g) for name in HEURISTICS]
    policies.append(make_policy("derby_exchange", g, deny=0.0))
    obs = np.zeros((B, g.observation_size), np.float32)
    masks = np.zeros((B, g.num_actions), np.int8)
    rng = np.random.default_rng(n)
    kinds = {"decline": 0, "cards": 0, "exchange": 0}
    while not eng.terminal.all():
        players = np.where(eng.terminal, -1, eng.player)
        eng.observe(players, obs)
        eng.legal_masks(players, masks)
        rows = np.flatnonzero(players >= 0)
        for pol in policies:
            got = pol.values_batch(obs[rows], masks[rows])
            for k, i in enumerate(rows):
                assert np.array_equal(got[k], pol.action_values(obs[i], masks[i])), (pol, i)
        for i in rows:
            m = masks[i]
            kind = "exchange" if m[SKIP] else "decline" if m[DECLINE] else "cards"
            kinds[kind] += 1
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        eng.apply(players, actions)
    assert min(kinds.values()) > 10, kinds


def test_values_batch_refuses_bad_rows():
    from agents.registry import make_policy

    g = make_game("derby", num_players=4)
    pol = make_policy("derby_exchange", g)
    state = g.new_initial_state(0)
    obs = state.observation(0)[None]
    mask = state.legal_mask(0)[None]
    assert pol.values_batch(obs[:0], mask[:0]).shape == (0, g.num_actions)
    one = np.zeros_like(mask)
    one[0, np.flatnonzero(mask[0])[-1]] = 1  # a single legal action: worth 0, as action_values
    assert np.array_equal(pol.values_batch(obs, one)[0], pol.action_values(obs[0], one[0]))
    assert pol.values_batch(obs, one)[0].max() == 0.0
    with pytest.raises(ValueError, match="masks"):
        pol.values_batch(obs, mask[:, :-1])
    with pytest.raises(ValueError, match=r"rows \[1\] have no legal action"):
        pol.values_batch(np.repeat(obs, 2, 0), np.stack([mask[0], 0 * mask[0]]))


def test_act_batch_edge_parameters(tmp_path):
    """The same with a 3-card deck (the pile runs out: a blind draw with no card to value),
    15 tickets per colour and the shortest track."""
    for params in (
        {"deck": _small_deck(tmp_path), "track_length": 12},
        {"tickets": _many_tickets(tmp_path)},
        {"track_length": 1},
    ):
        g = make_game("derby", num_players=4, **params)
        decisions, _ = _act_batch_against_choose(g, 6, 7)
        assert decisions > 0


def test_act_batch_any_engine():
    """``act_batch`` reads only the protocol: over reference states it chooses the same."""
    from agents.registry import make_policy
    from derby_envs.core.batch import ReferenceBatch

    g = make_game("derby", num_players=4)
    B = 8
    seeds = np.arange(B, dtype=np.uint64)
    engines = [DerbyBatch(g, B), ReferenceBatch(g, B)]
    for eng in engines:
        eng.reset(seeds, np.ones(B, np.bool_))
    pol = make_policy("derby_exchange", g)
    outs = [np.zeros(B, np.int64) for _ in engines]
    rngs = np.zeros((B, 6), np.uint64)
    for _ in range(60):
        players = np.where(engines[0].terminal, -1, engines[0].player)
        for eng, out in zip(engines, outs, strict=True):
            pol.act_batch(eng, players, rngs, out)
        assert np.array_equal(outs[0], outs[1])
        for eng in engines:
            eng.apply(players, outs[0])
