"""Derby's scenario builders (``DerbyGame._build_scenario``, ``Game.scenario``): each sets
one part of a position from a readable description; the result is checked on load like a
saved state (``saving``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import saved_check, saved_int, saved_ints, saved_list
from derby_envs.games.derby.constants import NUM_HORSES

if TYPE_CHECKING:
    from derby_envs.games.derby.engine import DerbyState


def turn(s: DerbyState, turn: int) -> None:
    """``turn`` turns played: every seat's number cards played so far leave its deck."""
    n = s.game.num_players
    s.turn, s.player = turn, turn % n
    for q in range(n):
        played = (turn + n - 1 - q) // n
        cards = ([s.up[q]] + s.decks[q])[played:]
        s.up[q], s.decks[q], s.hidden[q] = cards[0], cards[1:], len(cards) - 1
    s.record = [s.player, 0, 0, -1, -1, -1, -1]


def numbers(s: DerbyState, raw: Any) -> None:
    """Per seat ``[face-up, next, ..., bottom]``: the number cards it has left."""
    g = s.game
    rows = saved_list(raw, "numbers", g.num_players)
    for q, row in enumerate(rows):
        cards = saved_ints(row, f"numbers[{q}]", None, 1, g.max_number)
        saved_check(bool(cards), f"numbers[{q}]: a player has a number card until the end")
        s.up[q], s.decks[q], s.hidden[q] = cards[0], cards[1:], len(cards) - 1


def board(s: DerbyState, positions: Any, finish_order: Any) -> None:
    g = s.game
    L = g.params["track_length"]
    if isinstance(positions, Mapping):
        pos = s.pos[:]
        for name, x in positions.items():
            pos[g.horse(name)] = saved_int(x, f"positions[{name!r}]", 0, L)
    else:
        pos = saved_ints(positions, "positions", NUM_HORSES, 0, L)
    if finish_order is None:
        order = [h for h in range(NUM_HORSES) if pos[h] >= L]
    else:
        order = [g.horse(h) for h in saved_list(finish_order, "finish_order")]
    for h in order:
        pos[h] = L
    s.pos, s.finish_order = pos, order


def hands(s: DerbyState, raw: Any) -> None:
    """Per seat 9 tickets (one per colour) by threshold place; the others form the stocks."""
    g = s.game
    n, K = g.num_players, g.tickets_per_colour
    rows = [
        saved_ints(r, f"hands[{q}]", NUM_HORSES, 1, NUM_HORSES)
        for q, r in enumerate(saved_list(raw, "hands", n))
    ]
    everyone = (1 << n) - 1
    for c in range(NUM_HORSES):
        free = s.stock[c] + [row[c] for row in s.hand]  # as dealt: the stock order first
        for q in range(n):
            match = [t for t in free if g.threshold[t] == rows[q][c]]
            if not match:
                raise StateFormatError(
                    f"hands[{q}]: no {g.colours[c]} ticket for place {rows[q][c]} is left"
                )
            s.hand[q][c] = match[0]
            free.remove(match[0])
        s.stock[c] = free
        s.stock_known[c] = [everyone] + [0] * (K - n - 1)
    s.hand_known = [[1 << q] * NUM_HORSES for q in range(n)]


def cards(s: DerbyState, open_cards: Any, next_cards: Any) -> None:
    """The two open movement cards (ids, -1: none) and the next ones drawn (first = top)."""
    g = s.game
    top = g.num_cards - 1
    s.open = saved_ints(open_cards, "open", 2, -1, top)
    ahead = saved_ints(next_cards, "next_cards", None, 0, top)
    placed = set(ahead) | {c for c in s.open if c >= 0}
    rest = [c for c in s.pile if c not in placed] + [
        c for c in range(g.num_cards) if c not in placed and c not in s.pile
    ]
    s.pile = rest + ahead[::-1]  # drawn from the end
    s.discard = []
