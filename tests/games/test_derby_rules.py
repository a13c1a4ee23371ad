"""Derby: every rule of the turn, the end and the scoring, on explicit states.

Each FAQ answer of the seed rulebook (``shared/seeds/derby-2000-board-game.txt``) has a test here,
named ``test_faq_*``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from derby_envs.core.errors import IllegalActionError, InvalidParameterError, StateFormatError
from derby_envs.games.derby.engine import (
    BLIND,
    CARDS,
    DECLINE,
    EXCHANGE,
    EXCHANGE0,
    OPEN1,
    OPEN2,
    PLAY,
    SKIP,
    DerbyGame,
    final_places,
)

# card 0 of the default deck: movers bottom to top, and its exchange colours
CARD0_MOVES = [3, 6, 5, 4, 8, 7]
CARD0_EXCHANGE = [0, 1, 2]


def payload(game: DerbyGame, seed: int = 0) -> dict:
    return json.loads(json.dumps(game.new_initial_state(seed).to_dict()))


def load(game: DerbyGame, d: dict):
    return game.state_from_dict(d)


def put_open(d: dict, slot: int, card: int) -> None:
    """Make ``card`` the open card in ``slot`` (swapping it with wherever it was)."""
    s = d["state"]
    old = s["open"][slot]
    if old == card:
        return
    for key in ("pile", "discard", "open"):
        lst = s[key]
        if card in lst:
            lst[lst.index(card)] = old
            break
    s["open"][slot] = card


def set_up(d: dict, q: int, value: int) -> None:
    """Make ``value`` player ``q``'s face-up number card (swapped with a card of the deck)."""
    s = d["state"]
    if s["up"][q] == value:
        return
    deck = s["decks"][q]
    i = deck.index(value)
    deck[i], s["up"][q] = s["up"][q], value


def give_ticket(d: dict, q: int, ticket: int, K: int = 9) -> None:
    """Give ``ticket`` to player ``q`` (swapped with whoever holds it or its stock place)."""
    s = d["state"]
    c = ticket // K
    mine = s["hand"][q][c]
    if mine == ticket:
        return
    for row in s["hand"]:
        if row[c] == ticket:
            row[c] = mine
            break
    else:
        stock = s["stock"][c]
        stock[stock.index(ticket)] = mine
    s["hand"][q][c] = ticket


def last_turn_payload(game: DerbyGame, up_value: int) -> dict:
    """The last turn of the game: only the last player has one number card left."""
    d = payload(game)
    s = d["state"]
    n = game.num_players
    s["turn"] = game.total_turns - 1
    s["player"] = n - 1
    s["decks"] = [[] for _ in range(n)]
    s["hidden"] = [0] * n
    s["up"] = [0] * (n - 1) + [up_value]
    s["record"] = [n - 1, 0, 0, -1, -1, -1, -1]
    return d


# ----- the turn ---------------------------------------------------------------------------
def test_either_card_type_first():
    g = DerbyGame(num_players=4)
    s = g.new_initial_state(1)
    assert set(s.legal_actions(0)) == {PLAY, DECLINE, OPEN1, OPEN2, BLIND}
    a = s.clone()
    a.apply_action(0, OPEN1)  # movement card first
    assert set(a.legal_actions(0)) == {PLAY, DECLINE}
    b = s.clone()
    b.apply_action(0, PLAY)  # number card first
    assert set(b.legal_actions(0)) == {OPEN1, OPEN2, BLIND}
    v = s.up[0]
    a.apply_action(0, PLAY)
    b.apply_action(0, OPEN1)
    # the same two cards in either order: the horses have moved, identically
    assert a.pos == b.pos and sum(a.pos) == 6 * v
    assert a.phase == b.phase and a.legal_actions(0) == b.legal_actions(0)


def test_open_card_is_refilled_from_the_pile():
    g = DerbyGame(num_players=3)
    s = g.new_initial_state(2)
    taken, other, top = s.open[1], s.open[0], s.pile[-1]
    s.apply_action(0, OPEN2)
    assert s.move_card == taken and s.open == [other, top] and top not in s.pile


def test_faq_no_change_of_mind_after_a_blind_draw():
    g = DerbyGame(num_players=4)
    s = g.new_initial_state(3)
    opens, top = s.open[:], s.pile[-1]
    s.apply_action(0, BLIND)
    assert s.move_card == top  # the drawn card is the one played
    assert s.open == opens  # the open cards stay, but can no longer be chosen
    assert set(s.legal_actions(0)) == {PLAY, DECLINE}
    before = json.dumps(s.to_dict())
    for a in (OPEN1, OPEN2, BLIND):
        with pytest.raises(IllegalActionError):
            s.apply_action(0, a)
    assert json.dumps(s.to_dict()) == before


def test_faq_declined_number_card_forces_the_next():
    g = DerbyGame(num_players=4)
    s = g.new_initial_state(4)
    up, nxt = s.up[0], s.decks[0][0]
    s.apply_action(0, DECLINE)
    assert s.num_card == nxt  # the newly revealed card is played at once
    assert s.decks[0][-1] == up  # the declined card lies at the bottom, known to all
    assert not {PLAY, DECLINE} & set(s.legal_actions(0))  # no second decline
    for p in range(4):  # everyone sees it as player 0's bottom card
        dec = g.decode_observation(s.observation(p))
        k = (0 - p) % 4
        L = len(g.number_cards)
        assert dec["num_bottom"][k * L] == pytest.approx(up / 6)
        assert dec["number_played"][0] == pytest.approx(nxt / 6)
    # a declined card comes back up when the deck runs down to it
    s.apply_action(0, OPEN1)
    assert s.decks[0][-1] == up


def test_decline_impossible_with_one_card_left_and_last_card_played_automatically():
    g = DerbyGame(num_players=4)
    d = last_turn_payload(g, 5)
    s = load(g, d)
    assert set(s.legal_actions(3)) == {PLAY, OPEN1, OPEN2, BLIND}
    s.apply_action(3, OPEN1)  # the last number card needs no decision: played with it
    rec = s.record if s.phase == EXCHANGE else s.last_record
    assert rec[1] == 5 and rec[2] == 0  # the 5 was played, nothing declined
    assert sum(s.pos) == 6 * 5  # six horses moved 5


def test_two_declines_stack_at_the_bottom_in_order():
    g = DerbyGame(num_players=3)
    s = g.new_initial_state(9)
    first = s.up[0]

    def finish(p):
        s.apply_action(p, OPEN1)
        if s.phase == EXCHANGE:
            s.apply_action(p, SKIP)

    s.apply_action(0, DECLINE)
    finish(0)
    for p in (1, 2):  # the others play plainly
        s.apply_action(p, PLAY)
        finish(p)
    second = s.up[0]
    s.apply_action(0, DECLINE)
    assert s.decks[0][-2:] == [first, second]
    L = len(g.number_cards)
    dec = g.decode_observation(s.observation(1))
    k = 2  # player 0 seen from player 1
    assert dec["num_bottom"][k * L : k * L + 3].tolist() == pytest.approx(
        [second / 6, first / 6, 0.0]
    )


def test_load_rejects_inconsistent_number_cards():
    g = DerbyGame(num_players=4)
    d = payload(g, 5)
    d["state"]["decks"][0] = d["state"]["decks"][0][:2]
    d["state"]["hidden"][0] = 0  # the two cards below are known (declined earlier)
    # keep the card count consistent: three of player 0's cards count as played
    d["state"]["turn"] = 0
    with pytest.raises(StateFormatError, match="number cards"):
        load(g, d)


# ----- movement -----------------------------------------------------------------------------
def test_movement_bottom_to_top_by_the_number():
    g = DerbyGame(num_players=4)
    assert list(g.card_moves[0]) == CARD0_MOVES and list(g.card_exchange[0]) == CARD0_EXCHANGE
    d = payload(g)
    put_open(d, 0, 0)
    set_up(d, 0, 4)
    s = load(g, d)
    s.apply_action(0, PLAY)
    s.apply_action(0, OPEN1)
    assert s.pos == [0, 0, 0, 4, 4, 4, 4, 4, 4]
    assert s.phase == EXCHANGE


def test_faq_two_horses_finishing_on_one_card_bottom_to_top():
    g = DerbyGame(num_players=4)
    L = g.params["track_length"]
    d = payload(g)
    put_open(d, 0, 0)
    set_up(d, 0, 3)
    # horse 4 (4th from the bottom) is ahead of horse 6 (2nd from the bottom)
    d["state"]["pos"] = [0, 0, 0, 0, L - 1, 0, L - 2, 0, 0]
    s = load(g, d)
    s.apply_action(0, OPEN1)
    s.apply_action(0, PLAY)
    assert s.finish_order == [6, 4]  # the lower horse on the card moves first: 1st
    assert s.place[6] == 1 and s.place[4] == 2
    assert s.pos[6] == s.pos[4] == L
    # finished horses move no more
    before = s.pos[:]
    s2 = s.clone()
    s2.apply_action(0, SKIP)
    assert s2.pos == before


def test_finished_horse_does_not_move_and_next_free_place():
    g = DerbyGame(num_players=3)
    L = g.params["track_length"]
    d = payload(g)
    put_open(d, 0, 0)
    set_up(d, 0, 2)
    d["state"]["pos"] = [L, 0, 0, L - 1, 0, 0, 0, 0, 0]
    d["state"]["finish_order"] = [0]
    s = load(g, d)
    s.apply_action(0, PLAY)
    s.apply_action(0, OPEN1)
    assert s.finish_order == [0, 3] and s.place[3] == 2


# ----- exchange ---------------------------------------------------------------------------
def exchange_state(g: DerbyGame, finished: tuple[int, ...] = (), seed: int = 0):
    L = g.params["track_length"]
    d = payload(g, seed)
    put_open(d, 0, 0)
    pos = [0] * 9
    for h in finished:
        pos[h] = L
    d["state"]["pos"] = pos
    d["state"]["finish_order"] = list(finished)
    s = load(g, d)
    s.apply_action(0, PLAY)
    s.apply_action(0, OPEN1)
    return s


def test_faq_exchange_only_of_the_card_exchange_colours():
    g = DerbyGame(num_players=4)
    s = exchange_state(g)
    assert s.phase == EXCHANGE
    legal = set(s.legal_actions(0))
    expected = {SKIP} | {EXCHANGE0 + 2 * c + m for c in CARD0_EXCHANGE for m in (0, 1)}
    assert legal == expected
    for c in CARD0_MOVES:
        with pytest.raises(IllegalActionError):
            s.apply_action(0, EXCHANGE0 + 2 * c)


def test_faq_no_exchange_of_a_finished_horse():
    g = DerbyGame(num_players=4)
    s = exchange_state(g, finished=(1,))
    assert set(s.legal_actions(0)) == {SKIP} | {
        EXCHANGE0 + 2 * c + m for c in (0, 2) for m in (0, 1)
    }
    with pytest.raises(IllegalActionError):
        s.apply_action(0, EXCHANGE0 + 2 * 1)
    # all three exchange colours finished: no exchange phase at all
    s = exchange_state(g, finished=(0, 1, 2))
    assert s.phase == CARDS and s.player == 1


def test_exchange_take_face_up():
    g = DerbyGame(num_players=4)
    s = exchange_state(g)
    c = 2
    mine, stock = s.hand[0][c], s.stock[c][:]
    s.apply_action(0, EXCHANGE0 + 2 * c)
    assert s.hand[0][c] == stock[0]
    assert s.stock[c][:] == [*stock[1:], mine]  # stock kept whole, old ticket under
    assert s.player == 1
    enc = g.layout.ticket_enc
    for p in (1, 2, 3):  # a ticket taken face up is known to everyone
        dec = g.decode_observation(s.observation(p))
        k = (0 - p) % 4  # player 0's relative seat, 1.. in opp_tickets
        opp = dec["opp_tickets"].reshape(3, 9, 2)
        assert np.array_equal(opp[k - 1, c], enc[stock[0]])
        assert np.array_equal(dec["stock_up"].reshape(9, 2)[c], enc[stock[1]])
        # the ticket put under is known only to player 0
        assert not dec["stock_down"].reshape(9, -1, 2)[c].any()
    dec = g.decode_observation(s.observation(0))
    assert np.array_equal(dec["stock_down"].reshape(9, -1, 2)[c, -1], enc[mine])


def test_faq_face_down_take_when_the_face_up_ticket_is_refused():
    g = DerbyGame(num_players=4)
    s = exchange_state(g)
    c = 1
    mine, stock = s.hand[0][c], s.stock[c][:]
    s.apply_action(0, EXCHANGE0 + 2 * c + 1)
    # both go face down under the stock; the top face-down ticket is taken; the next one is
    # turned face up
    assert s.hand[0][c] == stock[1]
    assert s.stock[c][:] == [*stock[2:], mine, stock[0]]
    assert len(s.stock[c]) == g.stock_size
    enc = g.layout.ticket_enc
    for p in (1, 2, 3):
        dec = g.decode_observation(s.observation(p))
        k = (0 - p) % 4
        assert not dec["opp_tickets"].reshape(3, 9, 2)[k - 1, c].any()  # hidden from others
        down = dec["stock_down"].reshape(9, -1, 2)[c]
        assert np.array_equal(down[-1], enc[stock[0]])  # the refused ticket, seen by all
        assert not down[:-1].any()
    dec = g.decode_observation(s.observation(0))
    assert np.array_equal(dec["own_tickets"].reshape(9, 2)[c], enc[stock[1]])
    down = dec["stock_down"].reshape(9, -1, 2)[c]
    assert np.array_equal(down[-2], enc[mine]) and np.array_equal(down[-1], enc[stock[0]])


def test_known_ticket_forgotten_after_exchange_and_tracked_through_the_stock():
    """A ticket taken face up is known until its holder exchanges that colour again; a
    ticket the observer saw go under a stock is still known when someone draws it."""
    g = DerbyGame(num_players=3)
    s = exchange_state(g)
    c = 0
    s.apply_action(0, EXCHANGE0 + 2 * c)  # player 0 takes the face-up ticket: public
    public = s.hand[0][c]
    assert s.hand_known[0][c] == 0b111
    # player 0 later exchanges colour 0 again, taking face down: the public ticket goes under
    s.player, s.phase, s.move_card, s.num_card = 0, EXCHANGE, 0, 1
    s._mask = None
    s.apply_action(0, EXCHANGE0 + 2 * c + 1)
    assert s.hand_known[0][c] == 0b001  # the new one is private again
    assert public in s.stock[c][:]
    k = s.stock[c][:].index(public)
    assert s.stock_known[c][k] == 0b111  # everyone knows where it lies


# ----- end and scoring -------------------------------------------------------------------
def test_faq_three_horses_tied_for_fourth_leave_no_fifth_or_sixth():
    L = 110
    pos = [L, L, L, 52, 42, 52, 52, 22, 32]
    place = [1, 2, 3, 0, 0, 0, 0, 0, 0]
    places = final_places(pos, place, 3)
    assert places == [1, 2, 3, 4, 7, 4, 4, 9, 8]
    assert 5 not in places and 6 not in places
    # and in a real game end: the last turn moves 3, 6, 5 onto one space
    g = DerbyGame(num_players=4)
    d = last_turn_payload(g, 2)
    put_open(d, 0, 0)
    d["state"]["pos"] = [L, L, L, 50, 40, 50, 50, 20, 30]
    d["state"]["finish_order"] = [0, 1, 2]
    K = g.tickets_per_colour
    give_ticket(d, 0, 3 * K + 3)  # horse 3, 4th or better: fulfilled by the tie for 4th
    give_ticket(d, 0, 4 * K + 5)  # horse 4, 6th or better: fails, it is 7th (no 5th, 6th)
    give_ticket(d, 1, 5 * K + 2)  # horse 5, 3rd or better: fails at 4th
    s = load(g, d)
    s.apply_action(3, OPEN1)
    assert s.is_terminal()  # exchange colours 0,1,2 all finished: the game ends at once
    assert s.horse_places() == [1, 2, 3, 4, 7, 4, 4, 9, 8]
    scores = s.returns("score")
    places = s.horse_places()
    # worked by hand: 3 + 3 + 5, horse 3's "4th or better" pays 6 at its shared 4th place,
    # then 2 + 6; horse 4's "6th or better" pays nothing at 7th
    assert scores[0] == 25
    assert g.threshold[3 * K + 3] == 4 and places[3] <= 4  # counted
    assert places[4] > g.threshold[4 * K + 5]  # not counted


def test_faq_fifth_or_better_is_fulfilled_by_third():
    g = DerbyGame(num_players=3)
    K = g.tickets_per_colour
    d = payload(g)
    L = g.params["track_length"]
    d["state"]["pos"] = [L, L, L] + [0] * 6
    d["state"]["finish_order"] = [1, 0, 2]  # horse 2 finished 3rd
    give_ticket(d, 0, 2 * K + 4)  # threshold 5
    give_ticket(d, 1, 0 * K + 1)  # horse 0 is 2nd, threshold 2: fulfilled exactly
    give_ticket(d, 2, 1 * K + 0)  # horse 1 is 1st, threshold 1
    s = load(g, d)
    assert g.threshold[2 * K + 4] == 5 and g.profit[2 * K + 4] == 5
    places = s.horse_places()
    assert places[2] == 3
    sc = s.scores()
    for q, t in ((0, 2 * K + 4), (1, 0 * K + 1), (2, 1 * K + 0)):
        assert sc[q] >= g.profit[t]
    # a threshold worse than the place pays nothing: give player 0 horse 2's 2nd-or-better
    give_ticket(d, 0, 2 * K + 1)
    s = load(g, d)
    assert s.scores()[0] == sc[0] - g.profit[2 * K + 4]  # only that ticket changed, now unpaid
    assert places[2] > g.threshold[2 * K + 1]


def test_game_ends_after_the_last_number_card_with_the_exchange():
    g = DerbyGame(num_players=4)
    d = last_turn_payload(g, 1)
    put_open(d, 0, 0)
    s = load(g, d)
    s.apply_action(3, OPEN1)
    assert s.phase == EXCHANGE and not s.is_terminal()  # the turn is finished first
    assert s.returns("win").tolist() == [0, 0, 0, 0]  # nothing paid before the end
    s.apply_action(3, EXCHANGE0)
    assert s.is_terminal() and s.turn == g.total_turns
    assert s.current_players() == [] and not s.legal_mask(3).any()
    assert s.winners()
    r = s.returns("win")
    assert abs(r.sum()) < 1e-12 and r.max() > 0


def test_game_ends_when_all_horses_are_in():
    g = DerbyGame(num_players=5)
    L = g.params["track_length"]
    d = payload(g)
    put_open(d, 0, 0)
    set_up(d, 0, 1)
    pos = [L] * 9
    pos[7] = L - 1  # the top mover of card 0, the last horse racing
    d["state"]["pos"] = pos
    d["state"]["finish_order"] = [0, 1, 2, 3, 4, 5, 6, 8]
    s = load(g, d)
    s.apply_action(0, OPEN1)
    s.apply_action(0, PLAY)
    assert s.is_terminal() and s.turn == 1 and s.place[7] == 9


def finished_game(g: DerbyGame, picks: list[int]) -> dict:
    """All horses in, horse h placed (h+1)th; player q holds ticket index picks[q] of every
    colour (index j = threshold j + 1, profit 9 - j)."""
    d = payload(g)
    K = g.tickets_per_colour
    s = d["state"]
    s["pos"] = [g.params["track_length"]] * 9
    s["finish_order"] = list(range(9))
    s["hand"] = [[c * K + j for c in range(9)] for j in picks]
    s["stock"] = [[c * K + j for j in range(K) if j not in picks] for c in range(9)]
    s["phase"], s["record"] = "over", []
    return d


def test_scores_and_single_winner():
    g = DerbyGame(num_players=3)
    s = load(g, finished_game(g, [8, 7, 0]))
    # (c, j) pays iff place c + 1 <= threshold j + 1: j=8 always (9 x 1), j=7 for c <= 7
    # (8 x 2), j=0 only for c = 0 (1 x 9)
    assert s.scores() == [9, 16, 9]
    assert s.winners() == [1]
    assert s.returns("score").tolist() == [9, 16, 9]
    assert s.returns("win").tolist() == pytest.approx([-1 / 3, 2 / 3, -1 / 3])


def test_shared_win():
    g = DerbyGame(num_players=3)
    s = load(g, finished_game(g, [8, 1, 0]))
    # j=1: threshold 2, profit 8, pays for c <= 1: 16
    assert s.scores() == [9, 16, 9]
    s = load(g, finished_game(g, [8, 4, 0]))  # j=4: threshold 5, profit 5, c <= 4: 25
    assert s.scores() == [9, 25, 9]
    s = load(g, finished_game(g, [8, 0, 5]))  # j=5: threshold 6, profit 4, c <= 5: 24
    assert s.scores() == [9, 9, 24]
    s = load(g, finished_game(g, [8, 0, 2]))  # j=2: threshold 3, profit 7, c <= 2: 21
    s2 = load(g, finished_game(g, [3, 5, 2]))  # 4 x 6 = 24, 6 x 4 = 24, 21
    assert s2.scores() == [24, 24, 21]
    assert s2.winners() == [0, 1]  # a tie for the highest score is a shared win
    assert s2.returns("win").tolist() == pytest.approx([1 / 2 - 1 / 3, 1 / 2 - 1 / 3, -1 / 3])
    assert s.winners() == [2]


@pytest.mark.parametrize(
    ("param", "content", "problem"),
    [
        ("deck", b"\xff\xfe{}", "not UTF-8"),
        ("deck", {"cards": [{"moves": [1.5], "exchange": []}] * 3}, "needs 'moves' and 'exchange'"),
        (
            "deck",
            {"cards": [{"moves": [True], "exchange": []}] * 3},
            "needs 'moves' and 'exchange'",
        ),
        ("tickets", b"\xff\xfe{}", "not UTF-8"),
        ("tickets", {"per_colour": [[1.5, 3]] * 6}, "list of \\[threshold, profit\\] pairs"),
        ("tickets", {"per_colour": [[2, True]] * 6}, "list of \\[threshold, profit\\] pairs"),
    ],
)
def test_data_files_with_bad_encoding_or_non_integer_values_are_refused(
    tmp_path, param, content, problem
):
    path = tmp_path / f"{param}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(json.dumps(content))
    with pytest.raises(InvalidParameterError, match=f"{param}.*{problem}"):
        DerbyGame(**{param: str(path)})


def test_saved_turn_record_must_match_the_turn_in_progress():
    game = DerbyGame(num_players=3)
    state = game.new_initial_state(4)
    state.apply_action(0, PLAY)
    data = json.loads(json.dumps(state.to_dict()))
    for record in ([], [1, 0, 0, -1, -1, -1, -1], [0, 9, 0, -1, -1, -1, -1], {}):
        bad = json.loads(json.dumps(data))
        bad["state"]["record"] = record
        with pytest.raises(StateFormatError, match="malformed saved state"):
            game.state_from_dict(bad)
    assert game.state_from_dict(data).to_dict() == state.to_dict()


@pytest.mark.parametrize("param", ["deck", "tickets"])
def test_a_data_file_that_is_a_device_is_not_read(tmp_path, param):
    link = tmp_path / f"{param}.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(InvalidParameterError, match=f"{param}.*not a regular file"):
        DerbyGame(**{param: str(link)})
