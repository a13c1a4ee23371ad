"""Drawing helpers shared by the games' ``render.py`` pictures (Pillow).

Fonts: DejaVu Sans where the system has it (most Linux installs), else Pillow's built-in
scalable font (Pillow >= 10.1 with FreeType), else its tiny bitmap font; pictures therefore look
slightly different between machines but always have the same size.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

_FONT_DIRS = (
    "/usr/share/fonts/truetype/dejavu",
    "/usr/share/fonts/dejavu",
    "/usr/share/fonts/TTF",
    "/Library/Fonts",
    "C:/Windows/Fonts",
)

# A palette shared by the pictures.
FELT = (21, 92, 58)
FELT_DARK = (14, 66, 41)
INK = (20, 22, 28)
PAPER = (246, 243, 235)
WHITE = (255, 255, 255)
GOLD = (236, 190, 64)
SILVER = (200, 204, 212)
BRONZE = (196, 130, 70)
GREY = (140, 144, 152)
DIM = (92, 96, 104)
RED = (200, 34, 40)
BLACK_SUIT = (28, 28, 34)
HIGHLIGHT = (255, 214, 90)
PANEL = (32, 36, 46)
PANEL_LIGHT = (48, 54, 68)
TEXT = (232, 232, 236)


@cache
def font(size: int, bold: bool = False) -> Any:
    """A TrueType font of ``size`` px (see the module docstring for the fallbacks)."""
    from PIL import ImageFont

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for d in _FONT_DIRS:
        path = Path(d) / name
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: fixed bitmap font
        return ImageFont.load_default()


def text_size(draw: Any, text: str, f: Any) -> tuple[int, int]:
    box = draw.textbbox((0, 0), text, font=f)
    return box[2] - box[0], box[3] - box[1]


def text_centered(draw: Any, xy: tuple[float, float], text: str, f: Any, fill: Any) -> None:
    """Draw ``text`` centred on ``xy``."""
    draw.text(xy, text, font=f, fill=fill, anchor="mm")


def suit(draw: Any, cx: float, cy: float, size: float, which: int, fill: Any) -> None:
    """A suit symbol drawn from shapes (fonts may lack the glyphs): 0 hearts, 1 diamonds,
    2 spades, 3 clubs; ``size`` is the symbol's height."""
    r = size / 4
    if which == 0:  # heart: two lobes and a point
        draw.ellipse((cx - 2 * r, cy - 1.6 * r, cx, cy + 0.4 * r), fill=fill)
        draw.ellipse((cx, cy - 1.6 * r, cx + 2 * r, cy + 0.4 * r), fill=fill)
        draw.polygon(
            [(cx - 1.95 * r, cy - 0.3 * r), (cx + 1.95 * r, cy - 0.3 * r), (cx, cy + 2 * r)],
            fill=fill,
        )
    elif which == 1:  # diamond
        draw.polygon(
            [(cx, cy - 2 * r), (cx + 1.5 * r, cy), (cx, cy + 2 * r), (cx - 1.5 * r, cy)], fill=fill
        )
    elif which == 2:  # spade: an upside-down heart and a stem
        draw.ellipse((cx - 2 * r, cy - 0.6 * r, cx, cy + 1.4 * r), fill=fill)
        draw.ellipse((cx, cy - 0.6 * r, cx + 2 * r, cy + 1.4 * r), fill=fill)
        draw.polygon(
            [(cx - 1.95 * r, cy + 0.3 * r), (cx + 1.95 * r, cy + 0.3 * r), (cx, cy - 2 * r)],
            fill=fill,
        )
        draw.polygon(
            [(cx, cy + 0.8 * r), (cx - 0.9 * r, cy + 2 * r), (cx + 0.9 * r, cy + 2 * r)], fill=fill
        )
    else:  # club: three leaves and a stem
        lr = 0.95 * r
        for dx, dy in ((0, -1.05 * r), (-1.1 * r, 0.45 * r), (1.1 * r, 0.45 * r)):
            draw.ellipse((cx + dx - lr, cy + dy - lr, cx + dx + lr, cy + dy + lr), fill=fill)
        draw.polygon([(cx, cy), (cx - 0.7 * r, cy + 2 * r), (cx + 0.7 * r, cy + 2 * r)], fill=fill)


def card(
    draw: Any,
    box: tuple[float, float, float, float],
    face_up: bool = True,
    outline: Any = INK,
    back: Any = (150, 36, 44),
) -> None:
    """A playing card outline: white face or a patterned back."""
    x0, y0, x1, y1 = box
    radius = max(3, int((x1 - x0) / 8))
    if face_up:
        draw.rounded_rectangle(box, radius=radius, fill=PAPER, outline=outline, width=2)
        return
    draw.rounded_rectangle(box, radius=radius, fill=back, outline=WHITE, width=2)
    inset = (x0 + 5, y0 + 5, x1 - 5, y1 - 5)
    draw.rounded_rectangle(inset, radius=max(2, radius - 2), outline=(230, 200, 200), width=1)
    # a lozenge on the back, like a card back's pattern
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    w, h = (x1 - x0) / 2 - 9, (y1 - y0) / 2 - 9
    draw.polygon([(cx, cy - h), (cx + w, cy), (cx, cy + h), (cx - w, cy)], outline=(230, 200, 200))


def chip_stack(
    draw: Any, x: float, y: float, count: int, colour: Any, max_chips: int = 12, r: float = 7
) -> None:
    """A stack of ``min(count, max_chips)`` poker chips standing on (x, y), centre x."""
    shown = min(count, max_chips)
    for i in range(shown):
        cy = y - i * 3.2
        draw.ellipse((x - r, cy - r * 0.55, x + r, cy + r * 0.55), fill=colour, outline=INK)
    if count > max_chips:
        draw.text((x + r + 3, y - shown * 3.2 - 6), "+", fill=WHITE, font=font(11, True))


def star(draw: Any, cx: float, cy: float, r: float, fill: Any) -> None:
    pts = []
    for i in range(10):
        ang = -math.pi / 2 + i * math.pi / 5
        rad = r if i % 2 == 0 else r * 0.45
        pts.append((cx + rad * math.cos(ang), cy + rad * math.sin(ang)))
    draw.polygon(pts, fill=fill)


def to_array(img: Any) -> Any:
    import numpy as np

    return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()
