"""Derby's text: action names in context, the turn records and the text view of a position.

Public functions of the state (the engine's ``action_to_string`` and ``render_text`` call
them; renderers use :func:`ordinal` and :func:`describe_record`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from derby_envs.games.derby.constants import (
    DECLINE,
    EXCHANGE0,
    NUM_ACTIONS,
    NUM_HORSES,
    OPEN1,
    OPEN2,
    OVER,
    PHASE_NAMES,
    PLAY,
    SOURCE_NAMES,
)

if TYPE_CHECKING:
    from derby_envs.games.derby.engine import DerbyGame, DerbyState


def ordinal(k: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def action_to_string(state: DerbyState, player: int, action: int) -> str:
    """The action named in the position (which number, which card, which tickets)."""
    g = state.game
    a = int(action)
    if not 0 <= a < NUM_ACTIONS:
        return f"action {action!r} (out of range)"
    if player != state.player or state.phase == OVER:
        return g.action_name(a)
    if a == PLAY:
        return f"play number card {state.up[player]}"
    if a == DECLINE:
        return f"decline number card {state.up[player]} (play the next)"
    if a in (OPEN1, OPEN2):
        card = state.open[a - OPEN1]
        return f"take open card {a - OPEN1 + 1} [{g.card_name(card) if card >= 0 else 'empty'}]"
    if a >= EXCHANGE0:
        c, m = divmod(a - EXCHANGE0, 2)
        old = g.ticket_name(state.hand[player][c])
        if m:
            return f"exchange {old}, refuse the face-up ticket, take the top face-down one"
        return f"exchange {old} for the face-up {g.ticket_name(state.stock[c][0])}"
    return g.action_name(a)


def describe_record(game: DerbyGame, rec: list[int]) -> str:
    """A turn record ``[player, number, declined, card, source, exchange colour, exchange
    mode, finishers...]`` as text ("" for an empty record)."""
    if not rec:
        return ""
    g = game
    p, v, declined, card, source, ex_c, ex_m = rec[:7]
    parts = [f"player_{p}:"]
    if declined:
        parts.append(f"declined {declined},")
    if v:
        parts.append(f"number {v},")
    if card >= 0:
        parts.append(f"{SOURCE_NAMES[source]} [{g.card_name(card)}]")
    if len(rec) > 7:
        parts.append("; finished: " + ", ".join(g.colours[h] for h in rec[7:]))
    if ex_c >= 0:
        parts.append(f"; exchanged {g.colours[ex_c]} ({'face-down' if ex_m else 'face-up'})")
    return " ".join(parts)


def _headline(state: DerbyState) -> str:
    g = state.game
    if state.phase == OVER:
        return f"Derby — game over after {state.turn} turns"
    head = f"Derby — turn {min(state.turn + 1, g.total_turns)}/{g.total_turns}"
    head += f", player_{state.player} to act ({PHASE_NAMES[state.phase]} phase"
    if state.num_card:
        head += f", number {state.num_card} played"
    if state.move_card >= 0:
        head += f", card [{g.card_name(state.move_card)}] played"
    return head + ")"


def _track_lines(state: DerbyState, places: list[int]) -> list[str]:
    g = state.game
    L = g.params["track_length"]
    width = 30
    lines = [f"track: finish at {L}"]
    for h in range(NUM_HORSES):
        bar = "#" * (state.pos[h] * width // L)
        status = f"finished {ordinal(state.place[h])}" if state.place[h] else ""
        if state.phase == OVER and not state.place[h]:
            status = f"place {ordinal(places[h])}"
        lines.append(f"  {g.colours[h]:<7}|{bar:<{width}}|{state.pos[h]:>4} {status}")
    return lines


def _seat_line(state: DerbyState, q: int, player: int | None) -> str:
    g = state.game
    deck = state.decks[q]
    known = deck[state.hidden[q] :]
    nums = f"up {state.up[q] or '-'}, {len(deck)} below" + (f" (bottom: {known})" if known else "")
    if player is None or q == player:
        tickets = [g.ticket_name(t) for t in state.hand[q]]
    else:
        bit = 1 << player
        tickets = [
            g.ticket_name(t) if k & bit else "?"
            for t, k in zip(state.hand[q], state.hand_known[q], strict=True)
        ]
    line = f"  player_{q}: numbers {nums}; tickets {', '.join(tickets)}"
    if state.phase == OVER:
        line += f"; score {state.scores()[q]}"
    return line


def render_text(state: DerbyState, player: int | None = None) -> str:
    """The position as text from ``player``'s view (None: everything)."""
    g = state.game
    places = state.horse_places()
    lines = [_headline(state), *_track_lines(state, places)]
    lines.append(
        f"open cards: [1] {g.card_name(state.open[0]) if state.open[0] >= 0 else '-'}"
        f"  [2] {g.card_name(state.open[1]) if state.open[1] >= 0 else '-'}"
    )
    lines.append(f"draw pile {len(state.pile)}, played cards {len(state.discard)}")
    lines.append("stocks face up: " + ", ".join(g.ticket_name(row[0]) for row in state.stock))
    lines += [_seat_line(state, q, player) for q in range(g.num_players)]
    if state.last_record:
        lines.append("last turn: " + describe_record(g, state.last_record))
    if state.phase == OVER:
        lines.append(
            "final places: "
            + ", ".join(
                f"{ordinal(pl)} {g.colours[h]}"
                for pl, h in sorted((places[h], h) for h in range(NUM_HORSES))
            )
        )
        lines.append("winners: " + ", ".join(f"player_{w}" for w in state.winners()))
    return "\n".join(lines)
