"""Kentucky Derby's compiled batched engine against the reference engine, move by move.

Every player count, every rule variant (betting, second place, movement tables incl. custom
files, stakes, sitting out, extreme parameters): ``batch_battery`` compares everything after
every move (the whole state in 100 games per player count); :func:`side_by_side` plays 1,000
more games per player count comparing what the players to move see (masks, observations),
who moves, and at the end the returns, winners and whole state. The heuristics' ``act_batch``
is compared with ``choose`` on the reference state, generators included.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.kentucky_derby import POLICIES
from derby_envs.core import pcg64
from derby_envs.core.batch import batch_engine
from derby_envs.core.batch_check import batch_battery
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import choose
from derby_envs.games.kentucky_derby import batch_kernels as kern
from derby_envs.games.kentucky_derby.batch import KentuckyDerbyBatch
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame

PLAYER_COUNTS = range(3, 11)
#: the variants that change the rules, each played at every player count
VARIANTS = (
    {},
    {"betting": "sealed"},
    {"second_place": "always", "movement_table": "steady"},
    {"second_place": "never", "betting": "sealed", "max_stake": 0},
    {"bankroll": 4, "ante": 2, "max_stake": 5},  # players sit out, sessions end early
)


def side_by_side(game: KentuckyDerbyGame, seeds: list[int], action_seed: int = 0) -> int:
    """Play ``seeds`` in a batch and as reference states with the same random legal actions;
    compare who moves, the mover's mask and observation after every move, and the returns,
    winners and whole state (generator included) at the end. Returns the moves played."""
    B, A = len(seeds), game.num_actions
    eng = batch_engine(game, B)
    eng.reset(np.asarray(seeds, np.uint64), np.ones(B, np.bool_))
    refs = [game.new_initial_state(s) for s in seeds]
    rng = np.random.default_rng(action_seed)
    masks = np.zeros((B, A), np.int8)
    obs = np.zeros((B, game.observation_size), np.float32)
    players = np.zeros(B, np.int64)
    actions = np.zeros(B, np.int64)
    moves = 0
    while not eng.terminal.all():
        players[:] = -1
        for i, ref in enumerate(refs):
            movers = list(ref.current_players())
            assert np.flatnonzero(eng.to_move[i]).tolist() == movers, (game.params, seeds[i])
            if movers:
                players[i] = movers[int(rng.integers(len(movers)))]
        eng.legal_masks(players, masks)
        eng.observe(players, obs)
        for i in np.flatnonzero(players >= 0):
            ref, p = refs[i], int(players[i])
            want = ref.legal_mask(p)
            assert np.array_equal(masks[i], want), (game.params, seeds[i], p)
            assert np.array_equal(obs[i], ref.observation(p)), (game.params, seeds[i], p)
            legal = np.flatnonzero(want)
            actions[i] = legal[rng.integers(len(legal))]
            ref.apply_action(p, int(actions[i]))
            moves += 1
        eng.apply(players, actions)
        assert eng.terminal.tolist() == [r.is_terminal() for r in refs]
    rets = np.zeros((B, game.num_players))
    for mode in game.reward_modes:
        eng.returns(mode, rets)
        assert np.array_equal(rets, [r.returns(mode) for r in refs]), (game.params, mode)
    wins = np.zeros((B, game.num_players), np.bool_)
    eng.winners(wins)
    for i, ref in enumerate(refs):
        assert np.flatnonzero(wins[i]).tolist() == sorted(ref.winners())
        assert eng.to_state(i).to_dict() == ref.to_dict(), (game.params, seeds[i])
    return moves


def custom_table(tmp_path, spec: dict) -> str:
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"tables": {"custom": spec}}))
    return str(path)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_battery_every_variant_full_state(n):
    """100 games per player count, the whole state compared after every move."""
    for k, variant in enumerate(VARIANTS):
        game = KentuckyDerbyGame(num_players=n, num_races=2, **variant)
        seeds = [1000 * n + 20 * k + j for j in range(20)]
        assert batch_battery(game, seeds, action_seed=n + k, compare_states=True) > 0


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_side_by_side_thousand_games(n):
    """1,000 more games per player count: the default session and every variant."""
    game = KentuckyDerbyGame(num_players=n)
    assert side_by_side(game, list(range(50, 250)), action_seed=n) > 0
    for k, variant in enumerate(VARIANTS):
        game = KentuckyDerbyGame(num_players=n, num_races=1 + k % 3, **variant)
        seeds = list(range(10_000 * (k + 1), 10_000 * (k + 1) + 160))
        assert side_by_side(game, seeds, action_seed=n * 7 + k) > 0


def test_custom_movement_tables_and_extreme_parameters(tmp_path):
    slow = custom_table(tmp_path, {"same_suit": 1, "same_colour": 0, "other": 0})
    cases = [
        {"num_players": 3, "movement_table": slow, "second_place": "always"},  # reshuffles
        {"num_players": 7, "bankroll": 1, "ante": 1},  # ante == bankroll, stake 0 only
        {"num_players": 4, "bankroll": 1000, "ante": 1000, "max_stake": 20},
        {"num_players": 5, "bankroll": 100_000, "max_stake": 20, "betting": "sealed"},
        {"num_players": 3, "num_races": 1000, "bankroll": 6, "ante": 2},
        {"num_players": 10, "num_races": 1, "max_stake": 0, "second_place": "always"},
    ]
    for k, params in enumerate(cases):
        game = KentuckyDerbyGame(**params)
        assert batch_battery(game, list(range(30)), action_seed=k) > 0, params
    ranks = dict(same_suit=[0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3], same_colour=1, other=0)
    for n in (3, 6):
        game = KentuckyDerbyGame(num_players=n, movement_table=custom_table(tmp_path, ranks))
        assert side_by_side(game, list(range(100)), action_seed=n) > 0


def test_reshuffled_races_record_their_piles(tmp_path):
    # One space per own-suit card: races need more than the 41 stock cards; the record of the
    # last race (dealt again by to_state) keeps every card, past the first pile capacity.
    slow = custom_table(tmp_path, {"same_suit": 1, "same_colour": 0, "other": 0})
    game = KentuckyDerbyGame(num_players=3, movement_table=slow, max_stake=0, num_races=1)
    assert side_by_side(game, list(range(40))) > 0
    eng = batch_engine(game, 40)
    eng.reset(np.arange(40, dtype=np.uint64), np.ones(40, np.bool_))
    players, actions = np.zeros(40, np.int64), np.zeros(40, np.int64)
    while not eng.terminal.all():
        players[:] = np.where(eng.terminal, -1, np.argmax(eng.to_move, axis=1))
        eng.apply(players, actions)
    assert eng.last_reshuffles.max() >= 1
    assert max(len(p) for i in range(40) for p in eng.to_state(i).last_race["piles"]) > 12


def test_loaded_states_play_on_as_the_reference():
    """load_state of reference states mid-session (their last-race record kept until the next
    race), then both play on; to_state gives the loaded state back."""
    for n, betting in ((4, "sequential"), (6, "sealed")):
        game = KentuckyDerbyGame(num_players=n, betting=betting)
        B = 30
        rng = np.random.default_rng(n)
        refs = []
        for i in range(B):
            s = game.new_initial_state(500 + i)
            for _ in range(int(rng.integers(0, 3 * n))):
                if s.is_terminal():
                    break
                p = s.current_players()[0]
                s.apply_action(p, int(rng.choice(s.legal_actions(p))))
            refs.append(s)
        eng = KentuckyDerbyBatch(game, B)
        for i, s in enumerate(refs):
            eng.load_state(i, s)
            assert eng.to_state(i).to_dict() == s.to_dict()
        players, actions = np.zeros(B, np.int64), np.zeros(B, np.int64)
        obs = np.zeros((B, game.observation_size), np.float32)
        while not eng.terminal.all():
            players[:] = -1
            for i, s in enumerate(refs):
                if not s.is_terminal():
                    p = s.current_players()[-1]
                    players[i] = p
                    actions[i] = int(rng.choice(s.legal_actions(p)))
                    s.apply_action(p, int(actions[i]))
            eng.apply(players, actions)
            eng.observe(np.zeros(B, np.int64), obs)
            for i, s in enumerate(refs):
                assert np.array_equal(obs[i], s.observation(0))
                assert eng.to_state(i).to_dict() == s.to_dict()


def test_the_race_kernel_stops_at_max_reshuffles():
    # The safety net behind check_params: a table that moves every horse one space per card
    # never splits a tie, and the kernel says so instead of dealing forever.
    moves = np.ones((4, 48), np.int64)
    stock = np.arange(41, dtype=np.int8)
    rng = pcg64.row_from_generator(np.random.default_rng(0))
    pos, piles, pile_len = np.zeros(4, np.int64), np.zeros((4, 0), np.int8), np.zeros(4, np.int64)
    first, _, reshuffles = kern.run_race(moves, stock, rng, False, pos, piles, pile_len)
    assert first == kern.STUCK and reshuffles > kern.MAX_RESHUFFLES


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_heuristics_act_batch_is_choose(name, n):
    """Every decision of 24 games (two variants) taken by ``act_batch`` over the batch and by
    ``choose`` on the reference state: the same actions, the generators left alike."""
    for variant in ({}, {"betting": "sealed", "second_place": "always", "max_stake": 5}):
        game = KentuckyDerbyGame(num_players=n, **variant)
        batched, single = POLICIES[name](game), POLICIES[name](game)
        B = 12
        eng = batch_engine(game, B)
        eng.reset(np.arange(B, dtype=np.uint64), np.ones(B, np.bool_))
        refs = [game.new_initial_state(i) for i in range(B)]
        rngs = np.stack([pcg64.row_from_generator(np.random.default_rng(99 + i)) for i in range(B)])
        gens = [np.random.default_rng(99 + i) for i in range(B)]
        players, out = np.zeros(B, np.int64), np.zeros(B, np.int64)
        decisions = 0
        while not eng.terminal.all():
            players[:] = [s.current_players()[-1] if not s.is_terminal() else -1 for s in refs]
            batched.act_batch(eng, players, rngs, out)
            for i, s in enumerate(refs):
                if players[i] >= 0:
                    want = choose(single, s, int(players[i]), gens[i])
                    assert out[i] == want, (name, game.params, i)
                    assert np.array_equal(rngs[i], pcg64.row_from_generator(gens[i]))
                    s.apply_action(int(players[i]), want)
                    decisions += 1
            eng.apply(players, out)
        assert decisions >= B * n


@pytest.mark.slow
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_hundred_thousand_games(n):
    """100,000 games per player count (every variant in turn), full state in 200."""
    for k, variant in enumerate(VARIANTS):
        game = KentuckyDerbyGame(num_players=n, **variant)
        batch_battery(game, list(range(40)), action_seed=k, compare_states=True)
    for start in range(0, 100_000, 2_000):
        variant = VARIANTS[start // 2_000 % len(VARIANTS)]
        game = KentuckyDerbyGame(num_players=n, **variant)
        side_by_side(game, list(range(start, start + 2_000)), action_seed=start)


def test_shuffle_cards_draws_as_pcg64_shuffle():
    # The hot path's shuffle keeps the generator in locals; it must stay pcg64.shuffle's
    # (numpy's Generator.shuffle) draw for draw, the 32-bit buffer included.
    for seed in range(200):
        gen = np.random.default_rng(seed)
        gen.integers(2**31, size=seed % 3)  # some rows start with a buffered half word
        row = pcg64.row_from_generator(gen)
        want_row, got_row = row.copy(), row.copy()
        for k in (48, 41, 2, 1):
            want = np.arange(k, dtype=np.int8)
            got = want.copy()
            pcg64.shuffle(want_row, want, k)
            kern.shuffle_cards(got_row, got, k)
            assert np.array_equal(got, want) and np.array_equal(got_row, want_row)
        deck = np.zeros(48, np.int8)
        kern.deal_pack(got_row, deck)
        assert deck.tolist() == pcg64.generator_from_row(want_row).permutation(48).tolist()


def test_a_race_that_cannot_finish_raises_as_the_reference():
    # No accepted table gets here (check_params); the engine still names the games.
    game = KentuckyDerbyGame(num_players=3, max_stake=0)
    eng = KentuckyDerbyBatch(game, 4)
    eng.rules = eng.rules._replace(moves=np.ones((4, 48), np.int64))
    eng.reset(np.arange(4, dtype=np.uint64), np.ones(4, np.bool_))
    players, actions = np.full(4, -1, np.int64), np.zeros(4, np.int64)
    for _ in range(2):
        players[2] = np.flatnonzero(eng.to_move[2])[0]
        eng.apply(players, actions)
    players[2] = np.flatnonzero(eng.to_move[2])[0]
    with pytest.raises(RuntimeError, match=r"games \[2\]: race did not finish"):
        eng.apply(players, actions)


MOVE = st.one_of(st.integers(0, 3), st.sampled_from([0, 1, 1000]))
RELATION = st.one_of(MOVE, st.lists(MOVE, min_size=12, max_size=12))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_players=st.integers(3, 10),
    num_races=st.integers(1, 6),
    bankroll=st.one_of(st.integers(1, 30), st.just(100_000)),
    ante=st.one_of(st.integers(1, 25), st.just(1000)),
    max_stake=st.sampled_from([0, 1, 3, 20]),
    betting=st.sampled_from(["sequential", "sealed"]),
    table=st.one_of(
        st.sampled_from(["default", "steady"]),
        st.fixed_dictionaries({"same_suit": RELATION, "same_colour": RELATION, "other": RELATION}),
    ),
    second_place=st.sampled_from(["auto", "always", "never"]),
)
def test_every_accepted_parameter_set_plays_as_the_reference(
    num_players, num_races, bankroll, ante, max_stake, betting, table, second_place
):
    """Whatever the game accepts (extreme values, custom tables), the batch plays it."""
    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(table, dict):
            path = Path(tmp) / "table.json"
            path.write_text(json.dumps({"tables": {"t": table}}))
            table = str(path)
        try:
            game = KentuckyDerbyGame(
                num_players=num_players,
                num_races=num_races,
                bankroll=bankroll,
                ante=ante,
                max_stake=max_stake,
                betting=betting,
                movement_table=table,
                second_place=second_place,
            )
        except InvalidParameterError:
            return  # refused at construction (tests/games/test_kentucky_derby_rules.py)
        assert batch_battery(game, [0, 1, 2], compare_states=True) > 0
