"""Kentucky Derby as a picture (``render_mode="rgb_array"``): the card table seen from above.

``render_rgb(state)`` returns an ``HxWx3`` uint8 array of shape ``(540, 960, 3)`` (``SHAPE``)
for every parameter set. It is the omniscient spectator's view (sealed bets are shown):

* left, the course: one lane per Ace (Hearts, Diamonds, Spades, Clubs), the start, the seven
  face-down course cards and the post. While a race is being bet on, the lanes show where the
  Aces finished in the **previous** race (1st/2nd marked, cards dealt per horse), or the Aces at
  the gate before the first race; the chips on a lane are this race's bets on that horse;
* right, the players: chips (number and stack), this race's bet (horse and stake), the dealer
  button, who is to bet, who sits out, and the winners at the end;
* bottom, the ante pool and the stake pot, and the last race's payouts.
"""

from __future__ import annotations

import numpy as np

from derby_envs.core import draw as d
from derby_envs.games.kentucky_derby.engine import COURSE, HORSES, KentuckyDerbyState

WIDTH, HEIGHT = 960, 540
SHAPE = (HEIGHT, WIDTH, 3)

SUIT_COLOURS = (d.RED, d.RED, d.BLACK_SUIT, d.BLACK_SUIT)
# one colour per seat for the betting chips (up to 10 players)
SEAT_COLOURS = (
    (66, 133, 244),
    (234, 67, 53),
    (251, 188, 5),
    (52, 168, 83),
    (171, 71, 188),
    (255, 112, 67),
    (0, 172, 193),
    (240, 98, 146),
    (158, 157, 36),
    (141, 110, 99),
)

COURSE_X0, COURSE_Y0 = 20, 62
PLAYERS_X0, PLAYERS_X1 = 646, WIDTH - 12  # the players' rows
COL_W = 53
LANE_H = 78
LABEL_W = 106


def _lane_y(h: int) -> int:
    return COURSE_Y0 + 22 + h * LANE_H


def _col_x(col: int) -> int:
    """Left edge of course column ``col`` (0 = start, 1..7 = course cards, 8 = past the post)."""
    return COURSE_X0 + LABEL_W + col * COL_W + (10 if col > COURSE else 0)


def _ace(
    draw, x: float, y: float, horse: int, w: int = 40, h: int = 56, glow: bool = False
) -> None:
    if glow:
        draw.rounded_rectangle((x - 4, y - 4, x + w + 4, y + h + 4), radius=8, fill=d.HIGHLIGHT)
    d.card(draw, (x, y, x + w, y + h), face_up=True)
    draw.text((x + 5, y + 3), "A", font=d.font(13, True), fill=SUIT_COLOURS[horse])
    d.suit(draw, x + w / 2, y + h / 2 + 5, 22, horse, SUIT_COLOURS[horse])


def _title(draw, state: KentuckyDerbyState) -> None:
    g = state.game
    races = g.params["num_races"]
    draw.rectangle((0, 0, WIDTH, 44), fill=d.PANEL)
    title = f"Kentucky Derby  ·  race {min(state.race + 1, races)} of {races}"
    if state.over:
        title = f"Kentucky Derby  ·  session over after {state.race} race{'s' * (state.race != 1)}"
    draw.text((16, 10), title, font=d.font(20, True), fill=d.TEXT)
    status = (
        "winner: " + ", ".join(f"player_{w}" for w in state.winners())
        if state.over
        else f"{g.params['betting']} betting  ·  dealer player_{state.dealer}"
    )
    draw.text((WIDTH - 16, 14), status, font=d.font(15), fill=d.GOLD, anchor="ra")


def _course(draw, state: KentuckyDerbyState) -> None:
    """The four lanes: where the Aces ended the previous race (or the gate), the post."""
    lr = state.last_race
    course_w = _col_x(COURSE + 1) + COL_W - COURSE_X0 + 8
    draw.rounded_rectangle(
        (COURSE_X0 - 8, COURSE_Y0 - 6, COURSE_X0 + course_w, COURSE_Y0 + 22 + 4 * LANE_H + 4),
        radius=10,
        fill=d.FELT_DARK,
    )
    if lr is not None:
        caption = f"race {lr['race'] + 1} result: {HORSES[lr['first']]} won"
        if lr["second"] >= 0:
            caption += f", {HORSES[lr['second']]} second"
    else:
        caption = "the Aces at the gate: place your bets"
    draw.text((COURSE_X0, COURSE_Y0 - 2), caption, font=d.font(14, True), fill=d.TEXT)
    post_x = _col_x(COURSE + 1) - 6
    for h in range(4):
        _course_lane(draw, lr, h, post_x)
    # the start line and the post
    sx = _col_x(1) + 2
    draw.line((sx, COURSE_Y0 + 20, sx, COURSE_Y0 + 22 + 4 * LANE_H), fill=d.WHITE, width=2)
    for yy in range(COURSE_Y0 + 20, COURSE_Y0 + 22 + 4 * LANE_H, 12):  # chequered post
        draw.rectangle((post_x, yy, post_x + 6, yy + 6), fill=d.WHITE)
        draw.rectangle((post_x, yy + 6, post_x + 6, yy + 12), fill=d.INK)
    draw.text((post_x + 3, COURSE_Y0 + 4), "post", font=d.font(11), fill=d.WHITE, anchor="ma")


def _course_lane(draw, lr: dict | None, h: int, post_x: int) -> None:
    y = _lane_y(h)
    draw.line(
        (COURSE_X0, y + LANE_H - 6, post_x + COL_W + 14, y + LANE_H - 6), fill=d.FELT, width=1
    )
    d.suit(draw, COURSE_X0 + 10, y + 20, 18, h, SUIT_COLOURS[h] if h < 2 else d.WHITE)
    draw.text((COURSE_X0 + 24, y + 12), HORSES[h], font=d.font(14, True), fill=d.WHITE)
    for col in range(1, COURSE + 1):  # the seven face-down course cards
        x = _col_x(col) + 7
        d.card(draw, (x, y + 10, x + 34, y + 58), face_up=False)
    pos = lr["positions"][h] if lr is not None else 0
    col = min(pos, COURSE + 1)
    placed = lr is not None and h in (lr["first"], lr["second"])
    _ace(draw, _col_x(col) + 4, y + 6, h, glow=placed)
    if lr is not None:
        place = {lr["first"]: "1st", lr["second"]: "2nd"}.get(h)
        draw.text((COURSE_X0 + 4, y + 34), f"{pos} spaces", font=d.font(12), fill=d.SILVER)
        draw.text(
            (COURSE_X0 + 4, y + 50),
            f"{len(lr['piles'][h])} cards",
            font=d.font(11),
            fill=d.SILVER,
        )
        if place:
            draw.text((COURSE_X0 + 72, y + 40), place, font=d.font(14, True), fill=d.GOLD)


def _money(draw, state: KentuckyDerbyState) -> None:
    """The ante pool, the stake pot, and this race's bets (or the last payouts at the end)."""
    lr = state.last_race
    by = COURSE_Y0 + 22 + 4 * LANE_H + 16
    stake_pot = state.pot_carry + (0 if state.over else int(state.bet_stake.sum()))
    draw.text((COURSE_X0, by), f"ante pool  {state.pool}", font=d.font(16, True), fill=d.TEXT)
    d.chip_stack(draw, COURSE_X0 + 12, by + 78, state.pool, d.GOLD, max_chips=14)
    draw.text((COURSE_X0 + 150, by), f"stake pot  {stake_pot}", font=d.font(16, True), fill=d.TEXT)
    d.chip_stack(draw, COURSE_X0 + 162, by + 78, stake_pot, d.SILVER, max_chips=14)
    if state.pot_carry and not state.over:
        draw.text(
            (COURSE_X0 + 186, by + 48), f"{state.pot_carry} carried", font=d.font(11), fill=d.SILVER
        )
    bx = COURSE_X0 + 300
    if state.over:
        paid = ", ".join(f"player_{p} +{c}" for p, c in enumerate(lr["payouts"]) if c) if lr else ""
        draw.text((bx, by), "last race paid", font=d.font(13, True), fill=d.TEXT)
        draw.text((bx, by + 20), paid or "nobody", font=d.font(12), fill=d.SILVER)
    else:
        if lr is not None:
            paid = ", ".join(f"player_{p} +{c}" for p, c in enumerate(lr["payouts"]) if c)
            text = f"race {lr['race'] + 1} paid: {paid or 'nobody'}"
            draw.text((COURSE_X0, by + 98), text, font=d.font(12), fill=d.SILVER)
        _bets(draw, state, bx, by)


def _bets(draw, state: KentuckyDerbyState, bx: int, by: int) -> None:
    n = state.game.num_players
    draw.text((bx, by), "bets this race", font=d.font(13, True), fill=d.TEXT)
    for h in range(4):
        yy = by + 20 + h * 19
        d.suit(draw, bx + 7, yy + 8, 12, h, SUIT_COLOURS[h] if h < 2 else d.WHITE)
        backers = [p for p in range(n) if state.bet_horse[p] == h]
        x = bx + 20
        for p in backers:
            draw.ellipse((x, yy + 2, x + 12, yy + 14), fill=SEAT_COLOURS[p])
            label = f"+{int(state.bet_stake[p])}"
            draw.text((x + 15, yy + 1), label, font=d.font(11), fill=d.TEXT)
            x += 40
        if not backers:
            draw.text((x, yy + 1), "-", font=d.font(11), fill=d.GREY)


def _players(draw, state: KentuckyDerbyState) -> None:
    """One row per player: seat colour, dealer button, chips, bet or status."""
    n = state.game.num_players
    py0 = COURSE_Y0 - 6
    row_h = min(56, (HEIGHT - py0 - 12) // n)
    to_move = set(state.current_players())
    winners = set(state.winners())
    top = max(int(state.chips.max()), 1)
    for p in range(n):
        _player_row(draw, state, p, py0 + p * row_h, row_h, to_move, winners, top)


def _player_row(
    draw,
    state: KentuckyDerbyState,
    p: int,
    y: int,
    row_h: int,
    to_move: set,
    winners: set,
    top: int,
) -> None:
    px0, px1 = PLAYERS_X0, PLAYERS_X1
    active = bool(state.active[p])
    fill = d.PANEL_LIGHT if p in to_move else d.PANEL
    draw.rounded_rectangle((px0, y + 2, px1, y + row_h - 2), radius=8, fill=fill)
    if p in to_move:
        draw.rounded_rectangle(
            (px0, y + 2, px1, y + row_h - 2), radius=8, outline=d.HIGHLIGHT, width=2
        )
    name_fill = d.TEXT if active else d.GREY
    fs = 15 if row_h >= 44 else 13
    mid = y + row_h / 2
    draw.ellipse((px0 + 8, mid - 7, px0 + 22, mid + 7), fill=SEAT_COLOURS[p])
    draw.text((px0 + 30, mid), f"player_{p}", font=d.font(fs, True), fill=name_fill, anchor="lm")
    if p == state.dealer and not state.over:
        draw.ellipse((px0 + 124, mid - 9, px0 + 142, mid + 9), fill=d.WHITE, outline=d.INK)
        draw.text((px0 + 133, mid), "D", font=d.font(11, True), fill=d.INK, anchor="mm")
    chips = int(state.chips[p])
    bar = int(70 * chips / top)
    draw.rectangle((px0 + 150, mid + 5, px0 + 150 + bar, mid + 9), fill=d.GOLD)
    draw.text(
        (px0 + 150, mid - 3), f"{chips} chips", font=d.font(fs - 1), fill=name_fill, anchor="ls"
    )
    _player_status(draw, state, p, px1 - 10, mid, to_move, winners)


def _player_status(
    draw, state: KentuckyDerbyState, p: int, right: int, mid: float, to_move: set, winners: set
) -> None:
    """Right end of a player's row: winner, sitting out, the bet, or to bet."""
    g = state.game
    active = bool(state.active[p])
    if state.over:
        if p in winners:
            d.star(draw, right - 10, mid, 10, d.GOLD)
            draw.text((right - 26, mid), "winner", font=d.font(13, True), fill=d.GOLD, anchor="rm")
    elif not active:
        draw.text((right, mid), "sitting out", font=d.font(12), fill=d.GREY, anchor="rm")
    elif state.bet_horse[p] >= 0:
        h = int(state.bet_horse[p])
        d.suit(draw, right - 34, mid, 16, h, SUIT_COLOURS[h] if h < 2 else d.WHITE)
        draw.text(
            (right, mid),
            f"+{int(state.bet_stake[p])}",
            font=d.font(13, True),
            fill=d.TEXT,
            anchor="rm",
        )
        if g.params["betting"] == "sealed" and state.to_bet:
            draw.text((right - 48, mid), "sealed", font=d.font(10), fill=d.SILVER, anchor="rm")
    elif p in to_move:
        draw.text((right, mid), "to bet", font=d.font(13, True), fill=d.HIGHLIGHT, anchor="rm")


def render_rgb(state: KentuckyDerbyState) -> np.ndarray:
    """The table as an ``SHAPE`` uint8 RGB array (see the module docstring)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (WIDTH, HEIGHT), d.FELT)
    draw = ImageDraw.Draw(img)
    _title(draw, state)
    _course(draw, state)
    _money(draw, state)
    _players(draw, state)
    return d.to_array(img)
