"""ANSI colour for the text boards of the terminal tools (``play``, ``watch``, ``replay``).

Colour is added *after* an engine's ``render_text`` has laid the board out, only around whole
words, so the alignment of the plain text is kept (escape codes take no columns).

Colour is used only when it can work and is wanted: the output stream is a terminal, ``TERM``
is not ``dumb`` and ``NO_COLOR`` is unset or empty (https://no-color.org). ``mode="always"``
and ``mode="never"`` override the detection (e.g. ``derby-envs watch ... --colour always | less -R``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import TextIO

COLOUR_MODES = ("auto", "always", "never")

RESET = "\x1b[0m"
STYLES = {
    "bold": "1",
    "dim": "2",
    "underline": "4",
    "reverse": "7",
    "black": "30",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "white": "37",
    "grey": "90",
    "bright_red": "91",
    "bright_green": "92",
    "bright_yellow": "93",
    "bright_blue": "94",
    "bright_magenta": "95",
    "bright_cyan": "96",
    "orange": "38;5;208",
    "pink": "38;5;213",
    "purple": "38;5;129",
}

_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def colour_supported(stream: TextIO | None = None, mode: str = "auto") -> bool:
    """Whether to colour output written to ``stream`` (default ``sys.stdout``)."""
    if mode not in COLOUR_MODES:
        raise ValueError(f"colour mode {mode!r}: expected one of {', '.join(COLOUR_MODES)}")
    if mode != "auto":
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or odd stream
        return False


def strip_ansi(text: str) -> str:
    """``text`` without colour escape codes (for measuring and for tests)."""
    return _ESCAPE.sub("", text)


def style(text: str, *names: str) -> str:
    """``text`` wrapped in the escape codes of the named styles (always; see :class:`Palette`)."""
    codes = ";".join(STYLES[n] for n in names)
    return f"\x1b[{codes}m{text}{RESET}" if codes else text


# (pattern, styles) rules applied to every board; a rule's styles apply to group 1 if the
# pattern has a group, else to the whole match. Earlier rules win where matches overlap.
Rule = tuple[str, tuple[str, ...]]

COMMON_RULES: tuple[Rule, ...] = (
    (r"<-[^\n]*", ("bold", "yellow")),  # "<- to bet", "<- to move"
    (r"\((?:sealed|hidden|face down)\)", ("dim",)),
    (r"\b(?:sitting out|eliminated)\b", ("dim",)),
    (r"\b(?:1st|winner|wins?|won)\b", ("bold", "green")),
    (r"\b2nd\b", ("green",)),
    (r"(?<![\w.])\+\d+\b", ("green",)),
    (r"(?<![\w.])-\d+\b", ("red",)),
)


def game_rules(game: str | None) -> tuple[Rule, ...]:
    """A game's own colouring rules (``ansi_rules`` of its registry record; none if unknown)."""
    from derby_envs.registry import GAMES  # the registry imports the games: only when colouring

    info = GAMES.get(game or "")
    return () if info is None else info.ansi_rules


class Palette:
    """Colours text when enabled, returns it unchanged otherwise.

    ``Palette.for_stream(sys.stdout, "auto")`` decides once with :func:`colour_supported`.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = bool(enabled)

    @classmethod
    def for_stream(cls, stream: TextIO | None = None, mode: str = "auto") -> Palette:
        return cls(colour_supported(stream, mode))

    def __call__(self, text: str, *names: str) -> str:
        return style(text, *names) if self.enabled else text

    def board(self, text: str, game: str | None = None, seat: int | None = None) -> str:
        """A rendered board with its title bold, the viewer's seat highlighted and the
        game's keywords coloured."""
        if not self.enabled:
            return text
        rules: list[Rule] = []
        if seat is not None:
            rules.append((rf"\bplayer_{int(seat)}\b", ("bold", "cyan")))
        rules.extend(game_rules(game))
        rules.extend(COMMON_RULES)
        lines = text.split("\n")
        out = [self(lines[0], "bold")] if lines and lines[0] else lines[:1]
        out.extend(highlight(line, rules) for line in lines[1:])
        return "\n".join(out)


def highlight(text: str, rules: Iterable[Rule]) -> str:
    """Apply ``rules`` to ``text`` (one line); overlapping matches keep the earliest rule."""
    spans: list[tuple[int, int, tuple[str, ...]]] = []
    taken = [False] * len(text)
    for pattern, names in rules:
        for m in re.finditer(pattern, text):
            start, end = m.span(1) if m.re.groups else m.span()
            if start == end or any(taken[start:end]):
                continue
            spans.append((start, end, names))
            for i in range(start, end):
                taken[i] = True
    if not spans:
        return text
    spans.sort()
    out, pos = [], 0
    for start, end, names in spans:
        out.append(text[pos:start])
        out.append(style(text[start:end], *names))
        pos = end
    out.append(text[pos:])
    return "".join(out)
