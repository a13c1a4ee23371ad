"""Demolition Derby's compiled batched engine against the reference engine, move by move.

Every player count (2-6), both variants (standard, Mekk Mania) and a custom card file:
``batch_battery`` compares everything after every move (masks and observations of every
player, movers, returns, winners; the whole state incl. the generator in the first games);
:func:`side_by_side` plays more games comparing what the player to move sees, who moves and,
at the end, the returns, winners and whole state. The heuristics' ``act_batch`` is compared
with ``choose`` on the reference state, generators included.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.demolition_derby import POLICIES
from derby_envs.core import pcg64
from derby_envs.core.batch import act_batch, batch_engine
from derby_envs.core.batch_check import batch_battery
from derby_envs.core.policy import choose
from derby_envs.games.demolition_derby.batch import DemolitionDerbyBatch
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from tests.games.test_demolition_derby_cards import _spec, wrecker_card

PLAYER_COUNTS = range(2, 7)
VARIANTS = ("standard", "mekk_mania")
SIDE_GAMES = 500  # per player count and variant in the default run (the slow set: 50,000)


def side_by_side(game: DemolitionDerbyGame, seeds: list[int], action_seed: int = 0) -> int:
    """Play ``seeds`` in a batch and as reference states with the same random legal moves
    (a random player among those to move); after every move compare who moves and the
    mover's mask and observation, at the end the returns, winners and whole state."""
    B, A = len(seeds), game.num_actions
    eng = batch_engine(game, B)
    assert isinstance(eng, DemolitionDerbyBatch)
    eng.reset(np.asarray(seeds, np.uint64), np.ones(B, np.bool_))
    refs = [game.new_initial_state(s) for s in seeds]
    rng = np.random.default_rng(action_seed)
    masks = np.zeros((B, A), np.int8)
    obs = np.zeros((B, game.observation_size), np.float32)
    players = np.zeros(B, np.int64)
    actions = np.zeros(B, np.int64)
    moves = 0
    while True:
        players[:] = -1
        for i, ref in enumerate(refs):
            assert bool(eng.terminal[i]) == ref.is_terminal(), (seeds[i], moves)
            if ref.is_terminal():
                continue
            movers = ref.current_players()
            assert np.flatnonzero(eng.to_move[i]).tolist() == sorted(movers), (seeds[i], moves)
            players[i] = movers[int(rng.integers(len(movers)))]
        if (players < 0).all():
            break
        eng.legal_masks(players, masks)
        eng.observe(players, obs)
        for i in np.flatnonzero(players >= 0):
            ref, p = refs[i], int(players[i])
            mask = ref.legal_mask(p)
            assert np.array_equal(masks[i], mask), (seeds[i], moves, p)
            assert np.array_equal(obs[i], ref.observation(p)), (seeds[i], moves, p)
            legal = np.flatnonzero(mask)
            actions[i] = legal[rng.integers(len(legal))]
            ref.apply_action(p, int(actions[i]))
            moves += 1
        eng.apply(players, actions)
    rets = np.zeros((B, game.num_players))
    for mode in game.reward_modes:
        eng.returns(mode, rets)
        for i, ref in enumerate(refs):
            assert np.array_equal(rets[i], ref.returns(mode)), (seeds[i], mode)
    wins = np.zeros((B, game.num_players), np.bool_)
    eng.winners(wins)
    for i, ref in enumerate(refs):
        assert np.flatnonzero(wins[i]).tolist() == sorted(ref.winners()), seeds[i]
        assert eng.to_state(i).to_dict() == ref.to_dict(), seeds[i]
    return moves


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_battery(n, variant):
    """Everything after every move, the whole state in every game (3 games a case)."""
    game = DemolitionDerbyGame(num_players=n, variant=variant)
    assert batch_battery(game, list(range(100 * n, 100 * n + 3)), action_seed=n) > 0


@pytest.mark.parametrize("k", range(len(VARIANTS)), ids=VARIANTS)
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_side_by_side(n, k):
    """SIDE_GAMES games per player count and variant: 1,000 per player count (the reference
    engine's own play and observations bound the default run's time)."""
    game = DemolitionDerbyGame(num_players=n, variant=VARIANTS[k])
    seeds = list(range(10_000 * n + 1000 * k, 10_000 * n + 1000 * k + SIDE_GAMES))
    assert side_by_side(game, seeds, action_seed=k) > 0


@pytest.mark.slow
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_side_by_side_slow(n):
    """100,000 games per player count (both variants), the whole state of the first 100
    compared after every move."""
    for k, variant in enumerate(VARIANTS):
        game = DemolitionDerbyGame(num_players=n, variant=variant)
        batch_battery(game, list(range(50)), action_seed=k, compare_states=True)
        for chunk in range(25):
            start = 1_000_000 * (k + 1) + 2000 * chunk
            side_by_side(game, list(range(start, start + 2000)), action_seed=chunk)


def _custom_file(tmp_path) -> str:
    spec = _spec()
    spec["name"] = "custom"
    spec["cards"].append(wrecker_card())
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(spec))
    return str(path)


@pytest.mark.parametrize("variant", VARIANTS)
def test_custom_card_file(tmp_path, variant):
    """A card file with a new design plays the same game in the batch (no code change)."""
    game = DemolitionDerbyGame(num_players=3, variant=variant, cards=_custom_file(tmp_path))
    assert game.num_designs == 23
    batch_battery(game, list(range(3)), action_seed=3)
    side_by_side(game, list(range(100, 140)))


@pytest.mark.parametrize(
    "params",
    [
        {"num_players": 2, "wins_needed": 1, "max_derbies": 1},
        {"num_players": 6, "wins_needed": 20, "max_derbies": 20},
        {"num_players": 5, "wins_needed": 1, "max_derbies": 3, "variant": "mekk_mania"},
    ],
)
def test_edge_parameters(params):
    """The extremes the parameters accept: a one-Derby match, long matches (play-on while
    tied, the cap)."""
    game = DemolitionDerbyGame(**params)
    batch_battery(game, [0], action_seed=1)
    side_by_side(game, list(range(10, 20)))


def test_load_state_round_trip():
    """``load_state`` then ``to_state`` gives the state back, mid-resolution included."""
    game = DemolitionDerbyGame(num_players=4)
    eng = DemolitionDerbyBatch(game, 2)
    rng = np.random.default_rng(5)
    s = game.new_initial_state(7)
    seen_choice = False
    while not s.is_terminal():
        eng.load_state(1, s)
        assert eng.to_state(1).to_dict() == s.to_dict()
        seen_choice |= bool(s.tasks)
        p = s.current_players()[0]
        legal = s.legal_actions(p)
        s.apply_action(p, legal[rng.integers(len(legal))])
    assert seen_choice


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_heuristics_over_the_batch(name, n, variant):
    """Each heuristic's ``act_batch`` is ``choose`` on the reference state, move after move
    of several games, generators included (dd_tactical: the compiled playouts of all games
    in one call; Mekk Mania and re-drawn choices decided on ``to_state``)."""
    game = DemolitionDerbyGame(num_players=n, variant=variant)
    B = 8
    policy = POLICIES[name](game)
    eng = batch_engine(game, B)
    eng.reset(np.arange(B, dtype=np.uint64), np.ones(B, np.bool_))
    refs = [game.new_initial_state(i) for i in range(B)]
    rngs = np.stack([pcg64.row_from_generator(np.random.default_rng(100 + i)) for i in range(B)])
    gens = [np.random.default_rng(100 + i) for i in range(B)]
    players, out = np.full(B, -1, np.int64), np.zeros(B, np.int64)
    kernel_rows = 0
    for _ in range(150):
        for i, ref in enumerate(refs):
            players[i] = ref.current_players()[0] if not ref.is_terminal() else -1
        if (players < 0).all():
            break
        act_batch(policy, eng, players, rngs, out)
        if name == "dd_tactical":  # rows the kernel decided (not handed to to_state)
            kernel_rows += int(((policy._batch_buffers[1] == 0) & (players >= 0)).sum())
        for i in np.flatnonzero(players >= 0):
            want = choose(policy, refs[i], int(players[i]), gens[i])
            assert out[i] == want, (name, n, i)
            assert np.array_equal(rngs[i], pcg64.row_from_generator(gens[i])), (name, n, i)
            refs[i].apply_action(int(players[i]), int(want))
        eng.apply(players, out)
    if name == "dd_tactical" and variant == "standard":
        assert kernel_rows > 0
