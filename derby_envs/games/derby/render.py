"""Derby as a picture (``render_mode="rgb_array"``): the race track and the table from above.

``render_rgb(state)`` returns an ``HxWx3`` uint8 array of shape ``(540, 960, 3)`` (``SHAPE``)
for every parameter set. It is the omniscient spectator's view (every ticket is shown):

* top left, the track: one lane per horse in its colour, from the start to the finish line
  (``track_length``), the horse at its position; finished horses at the line with their place;
* top right, the two open movement cards (the six moving horses from the bottom up, and the
  three exchange colours in the grey band), the movement and number card played this turn,
  the draw pile, and the last turn;
* bottom, the face-up ticket of each colour's stock, then every player: face-up number card,
  number cards left, the nine tickets (place needed + profit, in the horse's colour; dimmed
  when it would not pay if the race ended now), and the score if the race ended now.
"""

from __future__ import annotations

import numpy as np

from derby_envs.core import draw as d
from derby_envs.games.derby.engine import (
    CARDS,
    EXCHANGE,
    NUM_HORSES,
    OVER,
    DerbyState,
)
from derby_envs.games.derby.text import ordinal

WIDTH, HEIGHT = 960, 540
TICKETS_X0 = 250  # left edge of the ticket columns
SHAPE = (HEIGHT, WIDTH, 3)

NAMED_COLOURS = {
    "red": (214, 40, 40),
    "orange": (245, 140, 30),
    "yellow": (240, 208, 40),
    "green": (46, 160, 72),
    "blue": (42, 96, 214),
    "purple": (132, 62, 176),
    "pink": (240, 128, 186),
    "white": (242, 242, 242),
    "black": (26, 26, 30),
}
FALLBACK = tuple(NAMED_COLOURS.values())

TRACK_X0, TRACK_X1 = 100, 560
TRACK_Y0, LANE_H = 52, 34
BOTTOM_Y = TRACK_Y0 + NUM_HORSES * LANE_H + 10


def horse_colour(name: str, index: int) -> tuple[int, int, int]:
    return NAMED_COLOURS.get(name.lower(), FALLBACK[index % len(FALLBACK)])


def _ink_on(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """Black or white text, whichever reads better on ``rgb``."""
    return d.INK if 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 150 else d.WHITE


def _dot(draw, cx: float, cy: float, r: float, rgb) -> None:
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=rgb, outline=d.INK)


def _movement_card(draw, x: int, y: int, state: DerbyState, card: int, label: str) -> None:
    """A movement card 74x128: movers bottom to top with arrows, exchange colours below."""
    g = state.game
    w, h = 74, 128
    draw.text((x + w / 2, y - 4), label, font=d.font(11), fill=d.TEXT, anchor="md")
    if card < 0:
        draw.rounded_rectangle((x, y, x + w, y + h), radius=7, outline=d.GREY, width=2)
        draw.text((x + w / 2, y + h / 2), "empty", font=d.font(11), fill=d.GREY, anchor="mm")
        return
    moves, exchange = g.cards[card]
    draw.rounded_rectangle((x, y, x + w, y + h), radius=7, fill=d.PAPER, outline=d.INK, width=2)
    row_h = 13
    for i, hh in enumerate(moves):  # bottom to top
        cy = y + 6 + (len(moves) - i) * row_h - 3
        _dot(draw, x + 20, cy, 5, horse_colour(g.colours[hh], hh))
        draw.polygon([(x + 40, cy - 5), (x + 35, cy + 2), (x + 45, cy + 2)], fill=(30, 120, 40))
        draw.line((x + 40, cy, x + 40, cy + 5), fill=(30, 120, 40), width=2)
        draw.text((x + 52, cy), str(i + 1), font=d.font(9), fill=d.DIM, anchor="lm")
    band = y + 6 + (len(moves) + 1) * row_h
    draw.rectangle((x + 3, band, x + w - 3, y + h - 4), fill=(196, 198, 204))
    for i, hh in enumerate(exchange):
        cx = x + 16 + i * 21
        cy = band + (y + h - 4 - band) / 2
        _dot(draw, cx, cy, 6, horse_colour(g.colours[hh], hh))
        draw.line((cx - 5, cy - 5, cx + 5, cy + 5), fill=d.RED, width=2)
        draw.line((cx - 5, cy + 5, cx + 5, cy - 5), fill=d.RED, width=2)


def _number_card(draw, x: int, y: int, value: int, w: int = 26, h: int = 36, dim=False) -> None:
    if value:
        draw.rounded_rectangle((x, y, x + w, y + h), radius=4, fill=d.PAPER, outline=d.INK, width=1)
        draw.text(
            (x + w / 2, y + h / 2),
            str(value),
            font=d.font(int(h * 0.5), True),
            fill=d.GREY if dim else d.INK,
            anchor="mm",
        )
    else:
        draw.rounded_rectangle((x, y, x + w, y + h), radius=4, outline=d.GREY, width=1)


def _ticket(draw, x: int, y: int, state: DerbyState, ticket: int, pays: bool | None) -> None:
    g = state.game
    c = ticket // g.tickets_per_colour
    rgb = horse_colour(g.colours[c], c)
    w, h = 46, 22
    if pays is False:  # would not pay now: dimmed
        rgb = tuple(int(v * 0.45 + 60) for v in rgb)
    draw.rounded_rectangle((x, y, x + w, y + h), radius=4, fill=rgb, outline=d.INK)
    text = f"{ordinal(g.threshold[ticket])}+{g.profit[ticket]}"
    draw.text((x + w / 2, y + h / 2), text, font=d.font(11, True), fill=_ink_on(rgb), anchor="mm")


def _title(draw, state: DerbyState) -> None:
    g = state.game
    over = state.phase == OVER
    draw.rectangle((0, 0, WIDTH, 40), fill=d.PANEL)
    if over:
        title = f"Derby  ·  game over after {state.turn} turns"
        status = "winner: " + ", ".join(f"player_{w}" for w in state.winners())
    else:
        title = f"Derby  ·  turn {state.turn + 1} of {g.total_turns}"
        phase = "cards" if state.phase == CARDS else "exchange"
        status = f"player_{state.player} to act  ·  {phase} phase"
    draw.text((14, 9), title, font=d.font(19, True), fill=d.TEXT)
    draw.text((WIDTH - 14, 12), status, font=d.font(15), fill=d.GOLD, anchor="ra")


def _track(draw, state: DerbyState, places: list[int]) -> None:
    """The nine lanes, the horses on them and their places."""
    g = state.game
    L = g.params["track_length"]
    over = state.phase == OVER
    draw.rounded_rectangle(
        (8, TRACK_Y0 - 6, TRACK_X1 + 52, TRACK_Y0 + NUM_HORSES * LANE_H + 4),
        radius=10,
        fill=(150, 112, 70),
    )
    span = TRACK_X1 - TRACK_X0
    for tick in range(0, L + 1, 10 if L >= 40 else max(1, L // 4)):
        x = TRACK_X0 + span * tick / L
        draw.line((x, TRACK_Y0 - 2, x, TRACK_Y0 + NUM_HORSES * LANE_H), fill=(170, 132, 90))
    for yy in range(TRACK_Y0 - 2, TRACK_Y0 + NUM_HORSES * LANE_H, 8):  # chequered finish line
        draw.rectangle((TRACK_X1, yy, TRACK_X1 + 4, yy + 4), fill=d.WHITE)
        draw.rectangle((TRACK_X1, yy + 4, TRACK_X1 + 4, yy + 8), fill=d.INK)
    moving = set()
    exchange_colours = set()
    if state.move_card >= 0 and not over:
        moves, exch = g.cards[state.move_card]
        moving, exchange_colours = set(moves), set(exch)
    for h in range(NUM_HORSES):
        _lane(draw, state, h, places, moving, exchange_colours)
    draw.text((TRACK_X0, TRACK_Y0 - 4), "start", font=d.font(10), fill=d.WHITE, anchor="ld")
    draw.text(
        (TRACK_X1 + 2, TRACK_Y0 - 4), f"finish {L}", font=d.font(10), fill=d.WHITE, anchor="md"
    )


def _lane(
    draw, state: DerbyState, h: int, places: list[int], moving: set, exchange_colours: set
) -> None:
    g = state.game
    L = g.params["track_length"]
    over = state.phase == OVER
    span = TRACK_X1 - TRACK_X0
    y = TRACK_Y0 + h * LANE_H
    rgb = horse_colour(g.colours[h], h)
    draw.line((TRACK_X0, y + LANE_H - 1, TRACK_X1, y + LANE_H - 1), fill=(126, 92, 56))
    draw.rounded_rectangle((14, y + 6, 28, y + LANE_H - 8), radius=3, fill=rgb, outline=d.INK)
    draw.text(
        (34, y + LANE_H / 2 - 2), g.colours[h], font=d.font(13, True), fill=d.WHITE, anchor="lm"
    )
    x = TRACK_X0 + span * min(state.pos[h], L) / L
    cy = y + LANE_H / 2 - 1
    if state.place[h]:
        d.star(draw, x, cy, 19, d.GOLD)
    draw.ellipse((x - 11, cy - 11, x + 11, cy + 11), fill=rgb, outline=d.INK, width=2)
    if h in moving:
        draw.ellipse((x - 14, cy - 14, x + 14, cy + 14), outline=d.HIGHLIGHT, width=2)
    draw.text((x, cy), str(state.pos[h]), font=d.font(9, True), fill=_ink_on(rgb), anchor="mm")
    if state.place[h] or over:
        label = ordinal(state.place[h] or places[h])
        draw.text(
            (TRACK_X1 + 17, cy),
            label,
            font=d.font(13, True),
            fill=d.GOLD if state.place[h] else d.TEXT,
            anchor="lm",
        )
    elif h in exchange_colours and state.phase == EXCHANGE:
        draw.text((TRACK_X1 + 17, cy), "swap", font=d.font(11, True), fill=d.HIGHLIGHT, anchor="lm")


def _cards(draw, state: DerbyState) -> None:
    """The open movement cards, the card and number played this turn, the last turn."""
    over = state.phase == OVER
    cx0 = 632
    _movement_card(draw, cx0, 70, state, state.open[0], "open card 1")
    _movement_card(draw, cx0 + 86, 70, state, state.open[1], "open card 2")
    if not over:
        _movement_card(draw, cx0 + 200, 70, state, state.move_card, f"player_{state.player} played")
    draw.text(
        (cx0, 210),
        f"draw pile {len(state.pile)}  ·  played {len(state.discard)}",
        font=d.font(12),
        fill=d.SILVER,
    )
    if not over:
        draw.text((cx0 + 200, 210), "number", font=d.font(12), fill=d.SILVER)
        _number_card(draw, cx0 + 254, 204, state.num_card, w=22, h=28)
    _last_turn(draw, state, cx0)


def _last_turn(draw, state: DerbyState, cx0: int) -> None:
    g = state.game
    rec = state.last_record
    if rec:
        p, v, declined, _card, source, ex_c, ex_m = rec[:7]
        src = ("open card 1", "open card 2", "a blind draw")
        lines = [
            f"last turn: player_{p} played {v}" + (f" (declined {declined})" if declined else ""),
            (f"with {src[source]}, " if source >= 0 else "")
            + (
                f"exchanged {g.colours[ex_c]} ({'face-down' if ex_m else 'face-up'})"
                if ex_c >= 0
                else "no exchange"
            ),
        ]
        if len(rec) > 7:
            lines.append("finished: " + ", ".join(g.colours[h] for h in rec[7:]))
        for i, line in enumerate(lines):
            draw.text((cx0, 236 + 18 * i), line, font=d.font(12), fill=d.GOLD if i == 2 else d.TEXT)


def _players(draw, state: DerbyState, places: list[int]) -> None:
    """The face-up stock tickets and one row per player (numbers, tickets, score)."""
    g = state.game
    n = g.num_players
    over = state.phase == OVER
    scores = state.scores(places)
    tx0 = TICKETS_X0
    y = BOTTOM_Y
    draw.rectangle((0, y - 2, WIDTH, HEIGHT), fill=d.FELT_DARK)
    draw.text((14, y + 11), "stocks (face up)", font=d.font(12, True), fill=d.TEXT, anchor="lm")
    for c in range(NUM_HORSES):
        _ticket(draw, tx0 + c * 50, y, state, int(state.stock[c][0]), None)
    draw.text(
        (tx0 + 9 * 50 + 8, y + 11),
        "score now" if not over else "score",
        font=d.font(11),
        fill=d.SILVER,
        anchor="lm",
    )
    row_h = min(34, (HEIGHT - y - 30) // n)
    winners = set(state.winners())
    for q in range(n):
        _player_row(draw, state, q, y + 28 + q * row_h, row_h, places, scores, winners)


def _player_row(
    draw,
    state: DerbyState,
    q: int,
    ry: int,
    row_h: int,
    places: list[int],
    scores: list[int],
    winners: set,
) -> None:
    g = state.game
    over = state.phase == OVER
    tx0 = TICKETS_X0
    to_act = q == state.player and not over
    if to_act:
        draw.rounded_rectangle(
            (6, ry - 1, WIDTH - 6, ry + row_h - 3), radius=6, outline=d.HIGHLIGHT, width=2
        )
    mid = ry + row_h / 2 - 2
    draw.text(
        (14, mid),
        f"player_{q}",
        font=d.font(14, True),
        fill=d.HIGHLIGHT if to_act else d.TEXT,
        anchor="lm",
    )
    _number_card(draw, 104, ry + 2, state.up[q], w=20, h=row_h - 8)
    deck = state.decks[q]
    known = deck[state.hidden[q] :]
    draw.text((130, mid - 6), f"+{len(deck)} left", font=d.font(10), fill=d.SILVER, anchor="lm")
    if known:  # declined cards at the bottom of the deck are public
        bottom = ",".join(map(str, known[-6:]))
        draw.text((130, mid + 6), f"bottom {bottom}", font=d.font(9), fill=d.SILVER, anchor="lm")
    for c in range(NUM_HORSES):
        t = int(state.hand[q][c])
        _ticket(
            draw, tx0 + c * 50, ry + (row_h - 22) / 2 - 1, state, t, places[c] <= g.threshold[t]
        )
    sx = tx0 + 9 * 50 + 8
    draw.text((sx, mid), str(scores[q]), font=d.font(15, True), fill=d.TEXT, anchor="lm")
    if over and q in winners:
        d.star(draw, sx + 44, mid, 10, d.GOLD)
        draw.text((sx + 58, mid), "winner", font=d.font(13, True), fill=d.GOLD, anchor="lm")


def render_rgb(state: DerbyState) -> np.ndarray:
    """The track and the table as an ``SHAPE`` uint8 RGB array (see the module docstring)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (WIDTH, HEIGHT), d.FELT)
    draw = ImageDraw.Draw(img)
    places = state.horse_places()
    _title(draw, state)
    _track(draw, state, places)
    _cards(draw, state)
    _players(draw, state, places)
    return d.to_array(img)
