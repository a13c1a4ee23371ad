"""A loaded Derby position must be one the rules can reach: the derived fields and the named
checks run by ``DerbyState.fields`` on load (``state_from_dict``, scenarios)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import saved_check
from derby_envs.games.derby.constants import (
    CARDS,
    EXCHANGE,
    NUM_HORSES,
    OVER,
    PHASE_NAMES,
    SOURCE_NAMES,
)

if TYPE_CHECKING:
    from derby_envs.games.derby.engine import DerbyState


def derive_places(s: DerbyState) -> None:
    s.place = [0] * NUM_HORSES
    for i, h in enumerate(s.finish_order):
        s.place[h] = i + 1


def derive_num_left(s: DerbyState) -> None:
    s.num_left = [[0] * s.game.max_number for _ in range(s.game.num_players)]
    for q, deck in enumerate(s.decks):
        for v in [s.up[q], *deck]:
            if v:  # up 0: the face-up card is played this turn
                s.num_left[q][v - 1] += 1


def check_turn(s: DerbyState) -> None:
    n = s.game.num_players
    if s.phase != OVER:
        saved_check(
            s.player == s.turn % n, f"turn {s.turn} is seat {s.turn % n}'s, not {s.player}'s"
        )


def check_finish(s: DerbyState) -> None:
    L = s.game.params["track_length"]
    saved_check(
        len(set(s.finish_order)) == len(s.finish_order)
        and all(s.pos[h] == L for h in s.finish_order),
        "finish_order must list distinct horses that are on the finish",
    )
    saved_check(
        not any(x >= L and not s.place[h] for h, x in enumerate(s.pos)),
        "a horse at the finish is missing from finish_order",
    )


def check_movement_cards(s: DerbyState) -> None:
    in_play = [c for c in (*s.open, s.move_card) if c >= 0]
    saved_check(
        sorted(s.pile + s.discard + in_play) == list(range(s.game.num_cards)),
        "the movement cards are not all accounted for exactly once",
    )


def check_number_cards(s: DerbyState) -> None:
    """Every seat's number cards: hidden part, and cards left for the turns played."""
    g = s.game
    n = g.num_players
    for q in range(n):
        saved_check(s.hidden[q] <= len(s.decks[q]), f"player {q}: hidden count out of range")
    left = sum(map(sum, s.num_left)) + (1 if s.num_card else 0)
    saved_check(
        left == len(g.number_cards) * n - s.turn, "number cards left do not match the turns played"
    )
    for q in range(n):
        played = (s.turn + n - 1 - q) // n + (q == s.player and s.num_card > 0)
        saved_check(
            sum(s.num_left[q]) == len(g.number_cards) - played
            and all(
                s.num_left[q][v - 1] <= g.number_cards.count(v) for v in range(1, g.max_number + 1)
            ),
            f"player {q}'s number cards do not fit the rulebook deck",
        )


def check_tickets(s: DerbyState) -> None:
    """Every ticket once; who knows which ticket (own tickets, face-up stock tickets)."""
    g = s.game
    n = g.num_players
    K = g.tickets_per_colour
    for c in range(NUM_HORSES):
        ids = sorted([row[c] for row in s.hand] + s.stock[c])
        saved_check(
            ids == list(range(c * K, (c + 1) * K)),
            f"the {g.colours[c]} tickets are not all accounted for",
        )
    saved_check(
        all(s.hand_known[q][c] >> q & 1 for q in range(n) for c in range(NUM_HORSES)),
        "a player must know their own tickets",
    )
    everyone = (1 << n) - 1
    saved_check(
        all(row[0] == everyone for row in s.stock_known),
        "the face-up tickets are known to everyone",
    )


def check_phase(s: DerbyState) -> None:
    g = s.game
    phase_ok = {
        OVER: s.turn == g.total_turns or len(s.finish_order) == NUM_HORSES,
        EXCHANGE: s.num_card > 0 and s.move_card >= 0,
        CARDS: not (s.num_card and s.move_card >= 0),
    }
    saved_check(phase_ok[s.phase], f"inconsistent {PHASE_NAMES[s.phase]} phase")


def check_records(s: DerbyState) -> None:
    """The turn records (shown by render_text, extended move by move) must describe this
    position: [player, number, declined, card, source, exchange colour, exchange mode,
    finishers...]."""
    g = s.game
    n = g.num_players
    for name, rec in (("record", s.record), ("last_record", s.last_record)):
        if not rec:
            continue
        if not (
            len(rec) >= 7
            and 0 <= rec[0] < n
            and 0 <= rec[1] <= g.max_number
            and 0 <= rec[2] <= g.max_number
            and -1 <= rec[3] < g.num_cards
            and -1 <= rec[4] < len(SOURCE_NAMES)
            and (rec[3] >= 0) == (rec[4] >= 0)
            and -1 <= rec[5] < NUM_HORSES
            and -1 <= rec[6] <= 1
            and (rec[5] >= 0) == (rec[6] >= 0)
            and len(set(rec[7:])) == len(rec) - 7
            and all(0 <= h < NUM_HORSES for h in rec[7:])
        ):
            raise StateFormatError(f"malformed turn {name} {rec}")
    rec = s.record
    if s.phase == OVER:
        if rec:
            raise StateFormatError("the game is over: the turn record must be empty")
        return
    finishers = rec[7:] if len(rec) >= 7 else None
    if not (
        finishers is not None
        and rec[0] == s.player
        and rec[1] == s.num_card
        and rec[3] == s.move_card
        and rec[5] == -1
        and s.finish_order[len(s.finish_order) - len(finishers) :] == finishers
    ):
        raise StateFormatError(
            f"the turn record {rec} does not match the turn in progress (player "
            f"{s.player}, number {s.num_card}, card {s.move_card})"
        )


#: the fields derived on load, in order
DERIVE = (
    derive_places,
    derive_num_left,
)
#: the checks run on load, in order
CHECKS = (
    check_turn,
    check_finish,
    check_movement_cards,
    check_number_cards,
    check_tickets,
    check_phase,
    check_records,
)
