"""Demolition Derby as text: card and action labels, the event log, the text board."""

from __future__ import annotations

from typing import TYPE_CHECKING

from derby_envs.core.seats import seat_order
from derby_envs.games.demolition_derby.constants import (
    CHOOSE,
    DEPLOY,
    K_DISCARD,
    K_FACE_DOWN,
    K_GIVE,
    K_TAKE,
    OVER,
)

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState


def card_label(s: DemolitionDerbyState, c: int) -> str:
    return s.game.cards.designs[s.game.cards.card_design[c]].name


def action_to_string(s: DemolitionDerbyState, player: int, action: int) -> str:
    g = s.game
    off = g.action_offsets
    if off["target"] <= action < off["gain"]:
        r, k = divmod(action - off["target"], g.slots)
        q = seat_order(player, g.num_players)[r]
        verb = "target"
        if s.phase == CHOOSE and player in s.movers:
            kind = s.pending_task(player).kind
            verb = {K_DISCARD: "discard", K_FACE_DOWN: "turn face down", K_TAKE: "swap for",
                    K_GIVE: "give"}.get(kind, "target")  # fmt: skip
        if k < len(s.lineups[q]):
            return f"{verb} player_{q}'s {s.card_label(s.lineups[q][k])} (slot {k})"
        return f"{verb} player_{q} slot {k}"
    return g.action_name(action)


def event_text(s: DemolitionDerbyState, e: tuple) -> str:
    name = s.card_label
    kind = e[0]
    if kind == "turn":
        return f"Derby {e[1] + 1}, turn {e[2] + 1}:"
    if kind == "reveal":
        return f"  player_{e[1]} reveals {name(e[2])}"
    if kind == "discard":
        return f"  {name(e[2])} discards player_{e[3]}'s {name(e[1])}"
    if kind == "face_down":
        return f"  {name(e[2])} turns player_{e[3]}'s {name(e[1])} face down"
    if kind == "gain":
        return f"  {name(e[3])}: player_{e[1]} gains {name(e[2])}"
    if kind == "swap":
        return f"  {name(e[5])}: player_{e[1]} swaps {name(e[2])} for player_{e[4]}'s {name(e[3])}"
    if kind == "copy":
        return f"  {name(e[1])} copies {s.game.cards.designs[e[2]].name}"
    if kind == "cancel":
        return f"  {name(e[1])} was discarded before resolving"
    if kind == "stopped":
        return f"  {name(e[1])} does not resolve (Instants stopped)"
    if kind == "fizzle":
        return f"  {name(e[1])} fizzles (nothing to choose)"
    if kind == "decline":
        return f"  {name(e[1])}: declined"
    if kind == "contested":
        return f"  contested gain of {s.game.cards.designs[e[1]].name}: nobody gains it"
    if kind == "swap_failed":
        return f"  {name(e[1])}: contested swap, nothing happens"
    if kind == "derby":
        return f"Derby {e[1] + 1} won by {', '.join(f'player_{w}' for w in e[2])} ({e[3]})"
    return str(e)


def render_text(s: DemolitionDerbyState, player: int | None = None) -> str:
    g = s.game
    n = g.num_players
    head = f"Demolition Derby ({g.params['variant']}, cards: {g.cards.name}) — " + (
        f"match over, winners: {', '.join(f'player_{w}' for w in s.final_winners)}"
        if s.phase == OVER
        else f"Derby {s.derby + 1}, turn {s.turn + 1}/{g.turns_per_derby}, "
        + ("deploying" if s.phase == DEPLOY else f"resolving Strength {s.level} Instants")
    )
    lines = [head, "wins: " + ", ".join(f"player_{q} {s.wins[q]}" for q in range(n))]
    st = s.strengths()
    known = set(s.known_seats(player)) if player is not None else set(range(n))
    if player is not None:
        known.add(player)
    for q in range(n):
        if q in known:
            hand = ", ".join(sorted(s.card_label(c) for c in s.hands[q])) or "-"
        else:
            hand = f"{len(s.hands[q])} cards"
        picks = ""
        if s.picks[q]:
            if player is None or player == q:
                picks = "  picked: " + ", ".join(g.cards.designs[d].name for d in s.picks[q])
            else:
                picks = "  (picked)"
        todo = "  <- to act" if q in s.movers else ""
        if s.phase == CHOOSE and player is not None and q != player:
            # Whether another player still has a (hidden) choice to make must not show,
            # as in observation(): only that an ability of theirs resolves at this level.
            todo = "  <- resolving" if any(t.player == q for t in s.tasks) else ""
        lines.append(f"  player_{q}: hand [{hand}]{picks}{todo}")
        cards = []
        for c in s.lineups[q]:
            mark = "" if s.face_up[c] else " (face down)"
            new = "*" if s.this_turn[c] else ""
            cards.append(f"{s.card_label(c)}{new} {st[c]}{mark}")
        lines.append(f"    lineup: {'; '.join(cards) or '-'}")
    if s.discard:
        lines.append("  discard: " + ", ".join(sorted(s.card_label(c) for c in s.discard)))
    if s.events:
        lines.append("last events:")
        lines += [event_text(s, e) for e in s.events]
    if s.last_derby is not None:
        lines.append(last_derby_text(s))
    return "\n".join(lines)


def last_derby_text(s: DemolitionDerbyState) -> str:
    """One line on the last Derby's result ("" before the first one ends)."""
    ld = s.last_derby
    if ld is None:
        return ""
    if ld["reason"] == "scenario":
        return f"last Derby ({ld['derby'] + 1}): set up by a scenario, winners {ld['winners']}"
    return (
        f"last Derby ({ld['derby'] + 1}): totals {ld['totals']}, combatants "
        f"{ld['combatants']}, winners {ld['winners']} ({ld['reason']})"
    )
