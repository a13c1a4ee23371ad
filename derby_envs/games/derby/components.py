"""Derby's components from data files: the movement deck, the tickets, the board.

``data/movement_deck.json``, ``data/tickets.json`` and ``data/board.json`` hold our
reconstruction (``rules/derby.md`` [DEFAULT]); the game's ``deck`` and ``tickets`` parameters
name a preset or the path of a JSON file with the same layout, checked here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from derby_envs.core.datafile import read_json
from derby_envs.core.errors import InvalidParameterError
from derby_envs.games.derby.constants import NUM_HORSES

DATA_DIR = Path(__file__).parent / "data"


def load_json(path: Path, what: str) -> dict:
    """A data file through the suite's bounded reader (a regular file of bounded size and
    nesting: a symlink to /dev/zero or a FIFO is refused, not read), errors naming ``what``."""
    if not path.exists():
        raise InvalidParameterError(f"parameter {what!r}: no such file {str(path)!r}")
    return read_json(path, what=f"parameter {what!r}: the file", error=InvalidParameterError)


def strict_int(v: Any) -> int:
    """An int from a data file; bools and floats (``true``, ``1.5``) are refused (TypeError)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an integer, got {v!r}")
    return v


def board() -> dict:
    return json.loads((DATA_DIR / "board.json").read_text())


def pick(name: str, file: str, key: str, item_key: str, what: str) -> dict:
    """A preset of ``data/<file>`` by name, or the first preset (or the only set) of a JSON path."""
    if name.endswith(".json"):
        data = load_json(Path(name), what)
        if isinstance(data, dict) and key in data:
            sets = data[key]
            if not isinstance(sets, dict) or not sets:
                raise InvalidParameterError(f"parameter {what!r}: {name!r} has no {key!r} entries")
            return next(iter(sets.values()))
        if isinstance(data, dict) and item_key in data:
            return data
        raise InvalidParameterError(
            f"parameter {what!r}: {name!r} has neither a {key!r} mapping nor {item_key!r}"
        )
    sets = json.loads((DATA_DIR / file).read_text())[key]
    if name not in sets:
        raise InvalidParameterError(
            f"parameter {what!r}: got {name!r}, expected one of "
            + ", ".join(repr(s) for s in sets)
            + " or the path of a .json file"
        )
    return sets[name]


def load_deck(name: str) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The movement cards as ``(movers bottom to top, exchange colours)`` pairs.

    ``name`` is a deck of ``data/movement_deck.json`` or the path of a JSON file with the same
    layout. The exchange colours must be exactly the horses that do not move (rules: "always the
    colours NOT involved in the movement").
    """
    spec = pick(name, "movement_deck.json", "decks", "cards", "deck")
    cards = spec.get("cards") if isinstance(spec, dict) else None
    if not isinstance(cards, list) or len(cards) < 3:
        raise InvalidParameterError("parameter 'deck': a deck needs a 'cards' list of 3 or more")
    out = []
    for i, card in enumerate(cards):
        try:
            moves = [strict_int(h) for h in card["moves"]]
            exchange = sorted(strict_int(h) for h in card["exchange"])
        except (KeyError, TypeError, ValueError):
            raise InvalidParameterError(
                f"parameter 'deck': card {i} needs 'moves' and 'exchange' lists of horse indices"
            ) from None
        rest = sorted(set(range(NUM_HORSES)) - set(moves))
        if (
            not moves
            or len(set(moves)) != len(moves)
            or not all(0 <= h < NUM_HORSES for h in moves)
            or exchange != rest
        ):
            raise InvalidParameterError(
                f"parameter 'deck': card {i} must move 1-9 distinct horses 0..8 and list "
                f"exactly the others as exchange colours (got moves {moves}, exchange {exchange})"
            )
        out.append((tuple(moves), tuple(exchange)))
    return tuple(out)


def load_tickets(name: str) -> tuple[tuple[int, int], ...]:
    """The ``(threshold place, profit)`` tickets every colour has, sorted by threshold."""
    spec = pick(name, "tickets.json", "sets", "per_colour", "tickets")
    per = spec.get("per_colour") if isinstance(spec, dict) else None
    try:
        tickets = [(strict_int(t), strict_int(p)) for t, p in per]
    except (TypeError, ValueError):
        raise InvalidParameterError(
            "parameter 'tickets': 'per_colour' must be a list of [threshold, profit] pairs"
        ) from None
    if not tickets or not all(1 <= t <= NUM_HORSES and p >= 0 for t, p in tickets):
        raise InvalidParameterError(
            "parameter 'tickets': thresholds must be places 1..9 and profits >= 0"
        )
    return tuple(sorted(tickets))


def default_track(params: dict) -> int:
    return int(board()["track_length"]["value"])
