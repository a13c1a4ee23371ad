"""Demolition Derby as a picture (``render_mode="rgb_array"``): the arena from above.

``render_rgb(state)`` returns an ``HxWx3`` uint8 array of shape ``(540, 960, 3)`` (``SHAPE``)
for every parameter set. It is the omniscient spectator's view (hands and unrevealed picks are
shown). One row per player:

* left: the player, Derby wins (filled markers out of ``wins_needed``), the total Strength if
  the Derby ended now, and a crown when a Commander/Underdog-like condition would win it;
* middle: the lineup of combatants (type colour, name, current Strength; outlined in yellow if
  deployed this turn; a face-down card is dark and shows its printed Strength);
* right: the hand (small cards: Strength and name), the cards picked this turn outlined.

At the bottom: the discard pile, this turn's events and the last Derby's result.
"""

from __future__ import annotations

import numpy as np

from derby_envs.core import draw as d
from derby_envs.games.demolition_derby.engine import DEPLOY, OVER, DemolitionDerbyState

WIDTH, HEIGHT = 960, 540
SHAPE = (HEIGHT, WIDTH, 3)

TYPE_COLOURS = (
    (120, 120, 128),  # Scrapper
    (96, 64, 140),  # Saboteur
    (60, 150, 200),  # Drone
    (200, 150, 60),  # Contraption
    (90, 170, 150),  # Liaison
    (200, 60, 50),  # Ravager
    (110, 160, 70),  # Walker
    (150, 130, 70),  # Tank
    (160, 100, 60),  # Juggernaut
    (170, 60, 140),  # Battlemekk
    (230, 120, 30),  # Wunderwaffe
)
ARENA = (58, 52, 48)
ARENA_ROW = (74, 66, 60)
TOP, BOTTOM_H = 40, 92
LINEUP_X, HAND_X = 172, 662


def _type_colour(t: int) -> tuple[int, int, int]:
    return TYPE_COLOURS[t % len(TYPE_COLOURS)]


def _fit(draw, text: str, f, width: int) -> str:
    """``text`` shortened with an ellipsis to fit ``width`` pixels."""
    if d.text_size(draw, text, f)[0] <= width:
        return text
    while len(text) > 1 and d.text_size(draw, text + "…", f)[0] > width:
        text = text[:-1]
    return text + "…"


def _wrap2(draw, text: str, f, width: int) -> list[str]:
    """At most two lines of ``text`` within ``width`` pixels."""
    words = text.split()
    if d.text_size(draw, text, f)[0] <= width or len(words) == 1:
        return [_fit(draw, text, f, width)]
    for i in range(len(words) - 1, 0, -1):
        first = " ".join(words[:i])
        if d.text_size(draw, first, f)[0] <= width:
            return [first, _fit(draw, " ".join(words[i:]), f, width)]
    return [_fit(draw, text, f, width)]


def _combatant(
    draw, box, name: str, type_idx: int, strength: int, face_up: bool, new: bool
) -> None:
    x0, y0, x1, y1 = box
    w = x1 - x0
    if new:
        draw.rounded_rectangle((x0 - 3, y0 - 3, x1 + 3, y1 + 3), radius=7, fill=d.HIGHLIGHT)
    if face_up:
        draw.rounded_rectangle(box, radius=5, fill=d.PAPER, outline=d.INK, width=1)
        draw.rounded_rectangle(
            (x0 + 2, y0 + 2, x1 - 2, y0 + 10), radius=3, fill=_type_colour(type_idx)
        )
        f = d.font(10, True)
        for i, line in enumerate(_wrap2(draw, name, f, w - 6)):
            draw.text((x0 + w / 2, y0 + 18 + 10 * i), line, font=f, fill=d.INK, anchor="mm")
    else:
        draw.rounded_rectangle(box, radius=5, fill=(40, 40, 46), outline=d.GREY, width=1)
        f = d.font(9)
        draw.text((x0 + w / 2, y0 + 14), "face down", font=f, fill=d.SILVER, anchor="mm")
        draw.text(
            (x0 + w / 2, y0 + 26), _fit(draw, name, f, w - 6), font=f, fill=d.GREY, anchor="mm"
        )
    r = 9
    cx, cy = x1 - r - 3, y1 - r - 3
    draw.ellipse(
        (cx - r, cy - r, cx + r, cy + r), fill=_type_colour(type_idx) if face_up else d.DIM
    )
    draw.text((cx, cy), str(strength), font=d.font(11, True), fill=d.WHITE, anchor="mm")


def _hand_card(
    draw, x: int, y: int, w: int, h: int, name: str, type_idx: int, strength: int, picked: bool
) -> None:
    if picked:
        draw.rounded_rectangle((x - 2, y - 2, x + w + 2, y + h + 2), radius=5, fill=d.HIGHLIGHT)
    draw.rounded_rectangle((x, y, x + w, y + h), radius=4, fill=(236, 232, 222), outline=d.INK)
    draw.rectangle((x + 2, y + 2, x + w - 2, y + 7), fill=_type_colour(type_idx))
    draw.text((x + w / 2, y + 17), str(strength), font=d.font(12, True), fill=d.INK, anchor="mm")
    f = d.font(8)
    draw.text((x + w / 2, y + h - 8), _fit(draw, name, f, w - 3), font=f, fill=d.INK, anchor="mm")


def _events(state: DemolitionDerbyState) -> tuple[list[str], list[str]]:
    """(this turn's public events, the last Derby's result), as the text board words them."""
    events = [state.event_text(e).strip() for e in state.events]
    last = [state.last_derby_text()] if state.last_derby is not None else []
    return events, last


def render_rgb(state: DemolitionDerbyState) -> np.ndarray:
    """The arena as an ``SHAPE`` uint8 RGB array (see the module docstring)."""
    from PIL import Image, ImageDraw

    g = state.game
    cs = g.cards
    n = g.num_players
    img = Image.new("RGB", (WIDTH, HEIGHT), ARENA)
    draw = ImageDraw.Draw(img)
    over = state.phase == OVER
    need = g.params["wins_needed"]

    # ----- title ----------------------------------------------------------------------
    draw.rectangle((0, 0, WIDTH, TOP - 4), fill=d.PANEL)
    if over:
        title = "Demolition Derby  ·  match over"
        status = "champion: " + ", ".join(f"player_{w}" for w in state.winners())
    else:
        title = (
            f"Demolition Derby  ·  Derby {state.derby + 1}  ·  "
            f"turn {state.turn + 1} of {g.turns_per_derby}"
        )
        status = (
            "deploying (secret picks)"
            if state.phase == DEPLOY
            else f"resolving Strength {state.level} Instants"
        )
        status += f"  ·  first to {need} wins"
    draw.text((14, 8), title, font=d.font(18, True), fill=d.TEXT)
    draw.text((WIDTH - 14, 11), status, font=d.font(14), fill=d.GOLD, anchor="ra")

    # ----- players ----------------------------------------------------------------------
    totals, special = state.projected_scores()
    strengths = state.strengths()
    row_h = (HEIGHT - TOP - BOTTOM_H) // n
    card_h = min(row_h - 14, 84)
    hand_h = min(row_h - 16, 56)
    movers = set(state.movers) if not over else set()
    winners = set(state.winners())
    for q in range(n):
        y = TOP + q * row_h
        draw.rounded_rectangle((6, y + 2, WIDTH - 6, y + row_h - 3), radius=8, fill=ARENA_ROW)
        if q in movers:
            draw.rounded_rectangle(
                (6, y + 2, WIDTH - 6, y + row_h - 3), radius=8, outline=d.HIGHLIGHT, width=2
            )
        mid = y + row_h / 2
        draw.text(
            (16, y + 8),
            f"player_{q}",
            font=d.font(15, True),
            fill=d.HIGHLIGHT if q in movers else d.TEXT,
        )
        for k in range(max(need, state.wins[q])):  # Derby wins
            cx = 22 + k * 16
            fill = d.GOLD if k < state.wins[q] else None
            draw.ellipse(
                (cx - 6, y + 32 - 6, cx + 6, y + 32 + 6), fill=fill, outline=d.GOLD, width=2
            )
        if row_h >= 60:
            draw.text((16, y + 44), f"total {totals[q]}", font=d.font(12), fill=d.SILVER)
        else:
            draw.text(
                (22 + max(need, state.wins[q]) * 16, y + 32),
                f"total {totals[q]}",
                font=d.font(11),
                fill=d.SILVER,
                anchor="lm",
            )
        if q in special and not over:
            d.star(draw, 150, y + 14, 9, d.GOLD)
        if over and q in winners:
            d.star(draw, 150, y + 14, 10, d.GOLD)
        # lineup
        lineup = state.lineups[q]
        slots = max(len(lineup), 1)
        cw = min(68, (HAND_X - LINEUP_X - 16) // slots - 6)
        for i, c in enumerate(lineup):
            x = LINEUP_X + i * (cw + 6)
            design = cs.designs[cs.card_design[c]]
            st = strengths[c] if state.face_up[c] else design.strength
            _combatant(
                draw,
                (x, mid - card_h / 2, x + cw, mid + card_h / 2),
                design.name,
                design.type,
                int(st),
                bool(state.face_up[c]),
                bool(state.this_turn[c]),
            )
        if not lineup:
            draw.text((LINEUP_X, mid), "no combatants", font=d.font(12), fill=d.GREY, anchor="lm")
        # hand (picked cards are still in the hand until the reveal, or set apart: show both)
        picks = list(state.picks[q])
        hand = [(c, False) for c in state.hands[q]]
        pick_designs = picks[:]
        shown = []
        for c, _ in hand:
            dd = cs.card_design[c]
            if dd in pick_designs:
                pick_designs.remove(dd)
                shown.append((dd, True))
            else:
                shown.append((dd, False))
        shown += [(dd, True) for dd in pick_designs]  # picks already taken out of the hand
        hw = min(46, (WIDTH - 14 - HAND_X) // max(len(shown), 1) - 4)
        draw.text((HAND_X, y + 4), f"hand {len(state.hands[q])}", font=d.font(9), fill=d.SILVER)
        for i, (dd, picked) in enumerate(shown):
            design = cs.designs[dd]
            _hand_card(
                draw,
                HAND_X + i * (hw + 4),
                mid - hand_h / 2 + 5,
                hw,
                hand_h,
                design.name,
                design.type,
                design.strength,
                picked,
            )

    # ----- discard, events, last Derby ---------------------------------------------------
    by = HEIGHT - BOTTOM_H
    draw.rectangle((0, by, WIDTH, HEIGHT), fill=d.PANEL)
    names = sorted(state.card_label(c) for c in state.discard)
    discard = f"discard ({len(names)}): " + (", ".join(names) if names else "-")
    body, last = _events(state)
    half = (WIDTH - 24) // 2
    f = d.font(11)
    draw.text((12, by + 6), _fit(draw, discard, d.font(12), half - 8), font=d.font(12), fill=d.TEXT)
    if last:
        draw.text((12 + half, by + 7), _fit(draw, last[-1], f, half), font=f, fill=d.GOLD)
    for i, line in enumerate(body[-8:]):
        col, row = divmod(i, 4)
        draw.text(
            (12 + col * half, by + 26 + row * 15),
            _fit(draw, line, f, half - 8),
            font=f,
            fill=d.SILVER,
        )
    return d.to_array(img)
