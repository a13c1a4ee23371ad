"""Kentucky Derby rules, one test per rule, on explicit states (stacked decks, set chips)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derby_envs.core.errors import IllegalActionError, InvalidParameterError
from derby_envs.games.kentucky_derby.engine import (
    COURSE,
    KentuckyDerbyGame,
    KentuckyDerbyState,
    load_movement_table,
)

H, D, S, C = range(4)


def card(suit: int, rank_index: int) -> int:
    """Card id: suit 0..3 (H, D, S, C), rank index 0..11 (2..K)."""
    return suit * 12 + rank_index


class Pack:
    """Hands out distinct cards of a suit, so a test can script the deal."""

    def __init__(self) -> None:
        self.left = {s: [card(s, r) for r in range(12)] for s in range(4)}

    def take(self, suit: int) -> int:
        return self.left[suit].pop(0)

    def rest(self) -> list[int]:
        return [c for s in range(4) for c in self.left[s]]


def stack(state: KentuckyDerbyState, pack: Pack, dealt: list[int]) -> None:
    """Make ``dealt`` the cards dealt in this race, in order (course and the rest after)."""
    rest = pack.rest()
    state.deck = rest[:COURSE] + dealt + rest[COURSE:]
    assert sorted(state.deck) == list(range(48))


def bet(state: KentuckyDerbyState, bets: dict[int, tuple[int, int]]) -> None:
    """Place every bet of the race (in betting order); the last one runs the race."""
    levels = state.game.stake_levels
    race = state.race
    while state.race == race and not state.is_terminal():
        p = state.current_players()[0]
        horse, stake = bets[p]
        state.apply_action(p, horse * levels + stake)


def tie_then_diamonds_deal(pack: Pack) -> list[int]:
    """Hearts and Diamonds both reach 8 after four rounds (Spades, Clubs get nothing);
    the tie-break cards give Hearts 0 and Diamonds 2."""
    dealt = []
    for _ in range(4):
        dealt += [pack.take(H), pack.take(D), pack.take(H), pack.take(H)]
    dealt += [pack.take(C), pack.take(D)]  # tie-break: Hearts +0 (a club), Diamonds +2
    return dealt


def test_movement_table_default_is_suit_colour_other():
    moves = load_movement_table("default")
    assert moves[H, card(H, 5)] == 2
    assert moves[H, card(D, 5)] == 1
    assert moves[H, card(S, 5)] == 0
    assert moves[C, card(S, 0)] == 1
    steady = load_movement_table("steady")
    assert (steady[S, card(S, 3)], steady[S, card(C, 3)], steady[S, card(H, 3)]) == (3, 2, 1)


def test_tie_break_cards_go_only_to_the_tied_horses():
    game = KentuckyDerbyGame(num_players=4, max_stake=0)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {0: (D, 0), 1: (H, 0), 2: (H, 0), 3: (S, 0)})
    race = state.last_race
    assert race["first"] == D
    assert race["positions"][H] == 8 and race["positions"][D] == 10
    # Spades and Clubs got exactly the four cards of the regular rounds, no tie-break cards.
    assert [len(p) for p in race["piles"]] == [5, 5, 4, 4]
    assert race["payouts"] == [4, 0, 0, 0]  # the whole pool of four antes to the only backer


def test_second_place_with_six_players_refunds_the_ante_first():
    game = KentuckyDerbyGame(num_players=6, max_stake=0)
    assert game.second_place
    state = game.new_initial_state(0)
    pack = Pack()
    dealt = tie_then_diamonds_deal(pack)
    # Second place: Hearts, the tie-break loser, is past the post (8): it is second, and no
    # more cards are dealt (the clubs stacked next would have gone to Spades and Clubs).
    dealt += [pack.take(C), pack.take(C)]
    stack(state, pack, dealt)
    bets = {0: (D, 0), 1: (D, 0), 2: (H, 0), 3: (H, 0), 4: (S, 0), 5: (C, 0)}
    bet(state, bets)
    race = state.last_race
    assert (race["first"], race["second"]) == (D, H)
    assert [len(p) for p in race["piles"]] == [5, 5, 4, 4]
    # Pool 6: Hearts backers get their ante back (2), the remaining 4 split by the two winners.
    assert race["payouts"] == [2, 2, 1, 1, 0, 0]
    assert state.pool == 6  # emptied, then the next race's six antes


def test_tie_break_loser_past_the_post_is_second_before_the_others_catch_up():
    # Rules text: play goes on for second place only "if ... only the winning horse has
    # crossed the finishing line". Hearts and Diamonds are level at 8 after four rounds,
    # Spades is at 7; the tie-break cards give Diamonds first (10) and leave Hearts at 8.
    # Hearts has crossed, so it is second: Spades must not get a fifth card (the spade stacked
    # next would take it to 9, past Hearts).
    game = KentuckyDerbyGame(num_players=6, max_stake=0)
    state = game.new_initial_state(0)
    pack = Pack()
    dealt = []
    for rnd in [(H, D, S, H)] * 3 + [(H, D, C, H)]:  # Hearts 8, Diamonds 8, Spades 7, Clubs 0
        dealt += [pack.take(suit) for suit in rnd]
    dealt += [pack.take(C), pack.take(D)]  # tie-break: Hearts +0, Diamonds +2
    dealt += [pack.take(S), pack.take(S)]  # would be Spades' and Clubs' fifth cards
    stack(state, pack, dealt)
    bet(state, {0: (D, 0), 1: (H, 0), 2: (S, 0), 3: (S, 0), 4: (C, 0), 5: (C, 0)})
    race = state.last_race
    assert race["positions"] == [8, 10, 7, 0]
    assert (race["first"], race["second"]) == (D, H)
    assert [len(p) for p in race["piles"]] == [5, 5, 4, 4]
    # Pool 6: the Hearts backer gets the ante back, the Diamonds backer the other 5.
    assert race["payouts"] == [5, 1, 0, 0, 0, 0]


def test_second_place_plays_on_when_only_the_winner_has_crossed():
    # Hearts alone passes the post after four rounds (8; the others at 4): play goes on with
    # Diamonds, Spades and Clubs, one card each per round, until one of them crosses.
    game = KentuckyDerbyGame(num_players=6, max_stake=0)
    state = game.new_initial_state(0)
    pack = Pack()
    rounds = [(H, H, C, S)] * 4  # Hearts +2, Diamonds +1, Spades +1, Clubs +1 each round
    dealt = [pack.take(suit) for rnd in rounds for suit in rnd]
    dealt += [pack.take(D), pack.take(S), pack.take(H)]  # Diamonds 6, Spades 6, Clubs 4
    dealt += [pack.take(D), pack.take(C), pack.take(H)]  # Diamonds 8, Spades 7, Clubs 4
    stack(state, pack, dealt)
    bet(state, {p: (S, 0) for p in range(5)} | {5: (D, 0)})
    race = state.last_race
    assert race["positions"] == [8, 8, 7, 4]
    assert (race["first"], race["second"]) == (H, D)
    assert [len(p) for p in race["piles"]] == [4, 6, 6, 6]
    assert race["payouts"] == [0, 0, 0, 0, 0, 1]  # ante back; nobody backed Hearts


def test_tie_for_second_among_horses_past_the_post_is_broken_by_their_cards_only():
    # 'steady' table (3/2/1). After three rounds Hearts is first alone (9); Diamonds and
    # Spades are both past the post at 8: only they get further cards (Diamonds +2, Spades +3),
    # Spades is second; Clubs (3) gets none.
    game = KentuckyDerbyGame(num_players=6, max_stake=0, movement_table="steady")
    state = game.new_initial_state(0)
    pack = Pack()
    rounds = [(H, D, S, H), (H, D, S, H), (H, H, C, H)]
    dealt = [pack.take(suit) for rnd in rounds for suit in rnd]
    dealt += [pack.take(H), pack.take(S)]  # tie-break for second: Diamonds 10, Spades 11
    stack(state, pack, dealt)
    bet(state, {0: (H, 0), 1: (D, 0), 2: (S, 0), 3: (S, 0), 4: (C, 0), 5: (C, 0)})
    race = state.last_race
    assert race["positions"] == [9, 10, 11, 3]
    assert (race["first"], race["second"]) == (H, S)
    assert [len(p) for p in race["piles"]] == [3, 4, 4, 3]
    assert race["payouts"] == [4, 0, 1, 1, 0, 0]  # 6 - 2 refunded antes to the Hearts backer


def test_no_second_place_with_five_players():
    game = KentuckyDerbyGame(num_players=5, max_stake=0)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {p: (H, 0) for p in range(4)} | {4: (D, 0)})
    assert state.last_race["second"] == -1
    assert state.last_race["payouts"] == [0, 0, 0, 0, 5]


def test_pool_split_equally_and_odd_chips_carry_over():
    game = KentuckyDerbyGame(num_players=4, max_stake=0)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {0: (D, 0), 1: (D, 0), 2: (D, 0), 3: (H, 0)})
    assert state.last_race["payouts"] == [1, 1, 1, 0]  # 4 // 3 each
    # The odd chip stayed; the next race's antes join it.
    assert state.pool == 1 + 4


def test_pool_carries_over_when_nobody_backed_the_winner():
    game = KentuckyDerbyGame(num_players=3, max_stake=0)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {0: (H, 0), 1: (S, 0), 2: (C, 0)})
    assert state.last_race["payouts"] == [0, 0, 0]
    assert state.pool == 3 + 3


def test_stake_pot_is_pari_mutuel_with_carry_over():
    game = KentuckyDerbyGame(num_players=4, max_stake=3)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    before = state.chips.copy()
    bet(state, {0: (D, 3), 1: (D, 1), 2: (H, 2), 3: (S, 0)})
    # Stake pot 6 paid to Diamonds stakers 3:1 -> 6*3//4 = 4 and 6*1//4 = 1; 1 chip carries.
    # The ante pool (4) is split by the two Diamonds backers.
    assert state.last_race["payouts"] == [2 + 4, 2 + 1, 0, 0]
    assert state.pot_carry == 1
    next_ante = 1
    assert list(state.chips - before) == [-3 + 6 - next_ante, -1 + 3 - next_ante, -2 - 1, -1]


def test_stake_pot_carries_over_when_nobody_staked_on_the_winner():
    game = KentuckyDerbyGame(num_players=3, max_stake=3)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {0: (D, 0), 1: (H, 3), 2: (S, 2)})
    assert state.last_race["payouts"] == [3, 0, 0]  # the ante pool only
    assert state.pot_carry == 5


def test_stake_is_capped_by_the_chips_left():
    game = KentuckyDerbyGame(num_players=3, max_stake=3, bankroll=3)
    state = game.new_initial_state(0)
    p = state.current_players()[0]
    assert state.chips[p] == 2  # after the ante
    mask = state.legal_mask(p)
    levels = game.stake_levels
    assert [int(mask[h * levels + s]) for h in range(1) for s in range(4)] == [1, 1, 1, 0]
    with pytest.raises(IllegalActionError):
        state.apply_action(p, 3)


def test_a_broke_player_sits_out_and_the_session_ends_below_two_bettors():
    game = KentuckyDerbyGame(num_players=3, max_stake=0, bankroll=1, num_races=3)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {0: (D, 0), 1: (H, 0), 2: (S, 0)})
    # Players 1 and 2 lost their only chip: they sit out; one bettor left: no more races.
    assert list(state.chips) == [3, 0, 0]
    assert state.is_terminal() and state.winners() == [0]

    game = KentuckyDerbyGame(num_players=4, max_stake=0, bankroll=1, num_races=3)
    state = game.new_initial_state(0)
    pack = Pack()
    stack(state, pack, tie_then_diamonds_deal(pack))
    bet(state, {0: (D, 0), 1: (D, 0), 2: (H, 0), 3: (S, 0)})
    assert list(state.active) == [True, True, False, False]
    # Race 2: dealer 1; betting from its left skips the broke seats 2 and 3: 0 then 1.
    assert state.to_bet == [0, 1] and state.current_players() == [0]
    assert not state.is_terminal()


def test_stock_reshuffle_when_the_pack_runs_out(tmp_path):
    # A table where only the Ace's own suit moves it, one space: a race needs far more than
    # the 41 stock cards, so the dealt cards are reshuffled into a new stock.
    table = {"tables": {"slow": {"same_suit": 1, "same_colour": 0, "other": 0}}}
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(table))
    game = KentuckyDerbyGame(num_players=3, max_stake=0, movement_table=str(path), num_races=1)
    state = game.new_initial_state(1)
    bet(state, {0: (H, 0), 1: (D, 0), 2: (S, 0)})
    race = state.last_race
    assert race["reshuffles"] >= 1
    assert max(race["positions"]) > COURSE
    assert sum(state.chips) + state.pool + state.pot_carry == 3 * 20


def test_winner_decided_only_after_equal_cards_furthest_past_the_post():
    # 'steady' table (3/2/1). Hearts is past the post on its 3rd card (8), but Clubs, dealt
    # after it in the same round, gets its 3rd card too and goes further (9): Clubs wins.
    game = KentuckyDerbyGame(num_players=3, max_stake=0, movement_table="steady")
    state = game.new_initial_state(0)
    pack = Pack()
    rounds = [(H, S, H, C), (H, S, H, C), (D, S, H, C)]  # cards for Hearts, Diamonds, Spades, Clubs
    dealt = [pack.take(suit) for rnd in rounds for suit in rnd]
    stack(state, pack, dealt)
    bet(state, {0: (H, 0), 1: (D, 0), 2: (C, 0)})
    race = state.last_race
    assert race["positions"] == [8, 3, 3, 9]
    assert [len(p) for p in race["piles"]] == [3, 3, 3, 3]
    assert race["first"] == C
    assert race["payouts"] == [0, 0, 3]


def test_bad_parameters_are_named():
    with pytest.raises(InvalidParameterError, match="num_players.*\\[3, 10\\]"):
        KentuckyDerbyGame(num_players=2)
    with pytest.raises(InvalidParameterError, match="betting"):
        KentuckyDerbyGame(betting="blind")
    with pytest.raises(InvalidParameterError, match="movement_table"):
        KentuckyDerbyGame(movement_table="fast")
    with pytest.raises(InvalidParameterError, match="did you mean 'max_stake'"):
        KentuckyDerbyGame(max_stakes=2)
    with pytest.raises(InvalidParameterError, match="num_players"):
        KentuckyDerbyGame(num_players=True)


def test_illegal_action_names_the_legal_ones_and_changes_nothing():
    game = KentuckyDerbyGame(num_players=3)
    state = game.new_initial_state(3)
    before = json.dumps(state.to_dict())
    p = state.current_players()[0]
    other = (p + 1) % 3
    with pytest.raises(IllegalActionError, match="legal actions: \\[0 \\(back Hearts, stake 0\\)"):
        state.apply_action(p, 99)
    with pytest.raises(IllegalActionError, match="no move now"):
        state.apply_action(other, 0)
    with pytest.raises(IllegalActionError):
        state.apply_action(p, 1.5)
    assert json.dumps(state.to_dict()) == before
    assert isinstance(IllegalActionError(0, 1, [2]), ValueError)


def test_chips_are_conserved_and_a_mover_always_has_a_legal_action():
    rng = np.random.default_rng(7)
    games = 0
    for n in (3, 4, 6, 10):
        for betting in ("sequential", "sealed"):
            # a small bankroll makes players go broke and sit out
            game = KentuckyDerbyGame(num_players=n, betting=betting, bankroll=4)
            for seed in range(130):
                _check_invariants_through(game.new_initial_state(seed), rng)
                games += 1
    assert games == 1040


def _check_invariants_through(state: KentuckyDerbyState, rng: np.random.Generator) -> None:
    g = state.game
    total = g.num_players * g.params["bankroll"]
    while not state.is_terminal():
        assert sum(state.chips) + state.pool + state.pot_carry + sum(state.bet_stake) == total
        assert (state.chips >= 0).all()
        players = state.current_players()
        assert players
        for p in players:
            legal = state.legal_actions(p)
            assert legal, f"player {p} must act but has no legal action"
        p = players[0]
        legal = state.legal_actions(p)
        state.apply_action(p, legal[rng.integers(len(legal))])
    assert sum(state.chips) + state.pool + state.pot_carry == total
    assert state.winners()


@pytest.mark.slow
def test_chips_are_conserved_over_thousands_of_games():
    rng = np.random.default_rng(11)
    games = 0
    for n in range(3, 11):
        for betting in ("sequential", "sealed"):
            for max_stake in (0, 3):
                game = KentuckyDerbyGame(
                    num_players=n, betting=betting, max_stake=max_stake, bankroll=5
                )
                for seed in range(150):
                    _check_invariants_through(game.new_initial_state(seed), rng)
                    games += 1
    assert games == 8 * 2 * 2 * 150


def test_final_observation_shows_the_settled_chips_in_sealed_games():
    # The last race's sealed stakes are settled: the final chips slice is each player's chips,
    # with no stake added back, and no bet is shown on the table.
    game = KentuckyDerbyGame(num_players=4, betting="sealed", max_stake=3)
    sl = game.observation_slices
    for seed in range(20):
        state = game.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not state.is_terminal():
            p = state.current_players()[0]
            state.apply_action(p, int(rng.choice(state.legal_actions(p))))
        for p in range(4):
            obs = state.observation(p)
            seats = [(p + k) % 4 for k in range(4)]
            expected = state.chips[seats] / game.total_chips
            assert np.allclose(obs[sl["chips"]], expected)
            assert obs[sl["stake_pot"]][0] == np.float32(state.pot_carry / game.total_chips)
            assert not obs[sl["has_bet"]].any() and not obs[sl["bet_stake"]].any()


GOOD_TABLE = {"same_suit": 2, "same_colour": 1, "other": 0}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[1, 2]", "expected a JSON object, got list"),
        ("{}", "needs a non-empty 'tables' object"),
        ('{"tables": {}}', "needs a non-empty 'tables' object"),
        ('{"tables": [1]}', "needs a non-empty 'tables' object"),
        ('{"tables": {"t": 3}}', "a table must be an object, got int"),
        ('{"tables": {"t": {"same_suit": 2}}}', "missing 'same_colour', 'other'"),
        ('{"tables": {"t": {"same_suit": "2", "same_colour": 1, "other": 0}}}', "got '2'"),
        ('{"tables": {"t": {"same_suit": 1.5, "same_colour": 1, "other": 0}}}', "got 1.5"),
        ('{"tables": {"t": {"same_suit": true, "same_colour": 1, "other": 0}}}', "got True"),
        ('{"tables": {"t": {"same_suit": -1, "same_colour": 1, "other": 0}}}', "got -1"),
        ('{"tables": {"t": {"same_suit": 99999, "same_colour": 1, "other": 0}}}', "0..1000"),
        ('{"tables": {"t": {"same_suit": [1, 2], "same_colour": 1, "other": 0}}}', "needs 12"),
        ('{"tables": {"t": {"same_suit": null, "same_colour": 1, "other": 0}}}', "got None"),
        ('{"tables": {"t": {"same_suit": 0, "same_colour": 0, "other": 0}}}', "all moves are 0"),
    ],
)
def test_malformed_movement_table_file_is_named_with_its_problem(tmp_path, content, problem):
    path = tmp_path / "table.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(InvalidParameterError) as info:
        KentuckyDerbyGame(movement_table=str(path))
    message = str(info.value)
    assert "movement_table" in message and str(path) in message
    assert problem in message


def test_movement_table_path_that_is_missing_or_a_directory(tmp_path):
    with pytest.raises(InvalidParameterError, match="no such file"):
        KentuckyDerbyGame(movement_table=str(tmp_path / "missing.json"))
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(InvalidParameterError, match="is a directory"):
        KentuckyDerbyGame(movement_table=str(tmp_path / "dir.json"))


def test_movement_table_file_with_rank_lists_plays(tmp_path):
    table = dict(GOOD_TABLE, same_suit=[0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3])
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps({"tables": {"court": table}}))
    game = KentuckyDerbyGame(movement_table=str(path))
    assert game.moves[H, card(H, 9)] == 3 and game.moves[H, card(H, 0)] == 0
    state = game.new_initial_state(0)
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        p = state.current_players()[0]
        state.apply_action(p, int(rng.choice(state.legal_actions(p))))
    assert state.winners()


# ----- every accepted parameter set gives a session that starts and ends (issue 35) ----------
def test_ante_above_the_bankroll_is_refused_naming_both():
    # The session would end at the deal (no one can pay the ante); reset used to redeal forever.
    with pytest.raises(InvalidParameterError, match="'ante' and 'bankroll'.*ante 21.*20"):
        KentuckyDerbyGame(ante=21)
    with pytest.raises(InvalidParameterError, match="'ante' and 'bankroll'"):
        KentuckyDerbyGame(bankroll=5, ante=6, num_players=10)
    state = KentuckyDerbyGame(ante=20).new_initial_state(0)  # ante == bankroll: one race
    assert not state.is_terminal() and state.chips.tolist() == [0, 0, 0, 0]


def test_ante_above_the_bankroll_is_refused_by_the_gymnasium_view():
    import gymnasium

    import derby_envs  # noqa: F401 - registers the ids

    with pytest.raises(InvalidParameterError, match="'ante' and 'bankroll'"):
        gymnasium.make("derby_envs/KentuckyDerby-v0", ante=21)


def own_suit_table(moving_ranks: int) -> dict:
    """Only the top ``moving_ranks`` cards of an Ace's own suit move it, one space each."""
    return {
        "same_suit": [0] * (12 - moving_ranks) + [1] * moving_ranks,
        "same_colour": 0,
        "other": 0,
    }


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        # every card moves every horse one space: ties past the post are never split
        ({"same_suit": 1, "same_colour": 1, "other": 1}, "tied past the post might never"),
        # only the four Kings move anything: all may lie in the course
        (own_suit_table(1), "only 4 cards move a horse"),
        # a King of the Ace's suit moves 5, every other card 1: with both Kings in the course,
        # the two horses move alike forever
        ({"same_suit": [1] * 11 + [5], "same_colour": 1, "other": 1}, "tied past the post"),
        # seven moving cards per horse can all lie in the course: a tie is then never split
        (own_suit_table(7), "tied past the post"),
    ],
)
def test_movement_table_that_cannot_finish_a_race_is_refused(tmp_path, table, problem):
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"tables": {"t": table}}))
    with pytest.raises(InvalidParameterError) as info:
        KentuckyDerbyGame(movement_table=str(path))
    message = str(info.value)
    assert "'movement_table'" in message and str(path) in message and problem in message


def test_movement_table_with_just_enough_moving_cards_finishes_its_races(tmp_path):
    # Eight moving cards per horse: at least one of them is in the stock whatever the course.
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"tables": {"t": own_suit_table(8)}}))
    game = KentuckyDerbyGame(num_players=6, movement_table=str(path), max_stake=0)
    for seed in range(20):
        state = game.new_initial_state(seed)
        while not state.is_terminal():
            state.apply_action(state.current_players()[0], 0)
        assert state.last_race["first"] >= 0 and state.last_race["second"] >= 0


MOVE = st.one_of(st.integers(0, 3), st.sampled_from([0, 1, 1000]))
RELATION = st.one_of(MOVE, st.lists(MOVE, min_size=12, max_size=12))
TABLE = st.one_of(
    st.sampled_from(["default", "steady"]),
    st.fixed_dictionaries({"same_suit": RELATION, "same_colour": RELATION, "other": RELATION}),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_players=st.integers(3, 10),
    num_races=st.one_of(st.integers(1, 12), st.just(1000)),
    bankroll=st.one_of(st.integers(1, 30), st.just(100_000)),
    ante=st.one_of(st.integers(1, 25), st.just(1000)),
    max_stake=st.sampled_from([0, 1, 3, 20]),
    betting=st.sampled_from(["sequential", "sealed"]),
    table=TABLE,
    second_place=st.sampled_from(["auto", "always", "never"]),
    seed=st.integers(0, 2**32),
)
def test_every_accepted_parameter_set_gives_a_session_that_ends(
    num_players, num_races, bankroll, ante, max_stake, betting, table, second_place, seed
):
    """Extreme values included: construction either refuses the set, naming a parameter, or
    the session starts (no reset loop can spin) and ends within num_races * num_players
    moves of random legal play (every race finishes: no RuntimeError)."""
    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(table, dict):
            path = Path(tmp) / "table.json"
            path.write_text(json.dumps({"tables": {"t": table}}))
            table = str(path)
        params = dict(
            num_players=num_players,
            num_races=num_races,
            bankroll=bankroll,
            ante=ante,
            max_stake=max_stake,
            betting=betting,
            movement_table=table,
            second_place=second_place,
        )
        try:
            game = KentuckyDerbyGame(**params)
        except InvalidParameterError as exc:
            assert "'ante' and 'bankroll'" in str(exc) or "'movement_table'" in str(exc)
            assert ante > bankroll or "movement_table" in str(exc)
            return
        state = game.new_initial_state(seed)
        assert not state.is_terminal()  # the session starts: a reset never deals again
        rng = np.random.default_rng(seed)
        for _ in range(num_races * num_players):
            if state.is_terminal():
                break
            p = state.current_players()[0]
            state.apply_action(p, int(rng.choice(state.legal_actions(p))))
        assert state.is_terminal()
        assert sum(state.chips) + state.pool + state.pot_carry == game.total_chips


def test_a_movement_table_that_is_a_device_is_not_read(tmp_path):
    from derby_envs.core.errors import InvalidParameterError
    from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame

    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(InvalidParameterError, match="movement_table.*not a regular file"):
        KentuckyDerbyGame(movement_table=str(link))
