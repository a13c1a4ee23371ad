"""Demolition Derby: a position from a readable description (``game.scenario(...)``).

The description (keys of :data:`SCENARIO_KEYS`, documented in ``docs/demolition_derby.md``):

* ``hands`` (required): one list of design names per player, all of one size, larger than
  the picks per turn. The position is the start of a turn of the current Derby.
* ``lineups``: one list per player of the combatants in play (``"~Tank"``: face down).
* ``discard``: the discard pile of this Derby.
* ``turn``: the turn of the Derby (what the draft has shown: ``turn`` = r means everyone
  knows the hands of the r seats to their left).
* ``wins``: Derby wins so far; ``derby``: Derbies played (default: the most wins);
  ``last_winners``: who won the previous one (default: the players with the most wins).

Cards are taken from the whole card set (Mekk Mania: its pool; player marks are ignored, so
a scenario may use any design at any player count); the deck of this Derby is that set and
every card not placed is unused. The next Derby is dealt by the state's own generator. The
result is validated like a saved match (``Game.scenario`` round-trips it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import saved_int, saved_ints, saved_list

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState

SCENARIO_KEYS = ("hands", "lineups", "discard", "turn", "wins", "derby", "last_winners")


def _names(raw: Any, name: str, rows: int | None = None) -> list[Any]:
    out = saved_list(raw, name, rows)
    for i, x in enumerate(out):
        if rows is not None:
            _names(x, f"{name}[{i}]")
        elif not isinstance(x, str):
            raise StateFormatError(f"{name}: expected card names, got {x!r}")
    return out


class _Box:
    """The cards a scenario may place, taken by design name."""

    def __init__(self, s: DemolitionDerbyState) -> None:
        cs = s.game.cards
        self.cs = cs
        mekk = s.game.params["variant"] == "mekk_mania"
        self.pool = sorted(cs.mekk_pool()) if mekk else list(range(cs.num_cards))
        self.free = self.pool[:]

    def take(self, name: str) -> int:
        d = self.cs.design_index.get(name)
        if d is None:
            raise StateFormatError(f"unknown card {name!r}")
        for c in self.free:
            if self.cs.card_design[c] == d:
                self.free.remove(c)
                return c
        raise StateFormatError(f"no copy of {name!r} left in the card set")


def build(s: DemolitionDerbyState, d: Mapping[str, Any]) -> None:
    """Apply the description ``d`` to ``s`` (see the module docstring; checked afterwards)."""
    g = s.game
    n = g.num_players
    if "hands" not in d:
        raise StateFormatError("hands: required (one list of card names per player)")
    hands = _names(d["hands"], "hands", n)
    lineups = _names(d.get("lineups", [[] for _ in range(n)]), "lineups", n)
    discard = _names(d.get("discard", []), "discard")
    box = _Box(s)
    N = g.cards.num_cards
    s.owner = [-1] * N
    s.face_up = [True] * N
    s.this_turn = [False] * N
    s.instant_done = [False] * N
    s.hands = [[box.take(x) for x in h] for h in hands]
    s.lineups = [[box.take(x.lstrip("~")) for x in row] for row in lineups]
    for q, row in enumerate(lineups):
        for c, x in zip(s.lineups[q], row, strict=True):
            s.owner[c] = q
            s.face_up[c] = not x.startswith("~")
    s.discard = [box.take(x) for x in discard]
    s.discard_turn = []
    s.unused = box.free
    s.deck = box.pool
    s.turn = saved_int(d.get("turn", 0), "turn", 0, g.turns_per_derby - 1)
    _set_history(s, d)
    s.turn_protect, s.stoppers, s.queue, s.events = [], [], [], []
    s._start_turn()
    s._clear_lineup_caches()


def _set_history(s: DemolitionDerbyState, d: Mapping[str, Any]) -> None:
    """Wins, Derbies played and the previous Derby's winners (its record says "scenario")."""
    n = s.game.num_players
    s.wins = saved_ints(d.get("wins", [0] * n), "wins", n, 0, None)
    s.derby = saved_int(d.get("derby", max(s.wins)), "derby", 0, None)
    top = max(s.wins)
    leaders = [q for q in range(n) if s.wins[q] == top]
    if s.derby == 0:
        if d.get("last_winners"):
            raise StateFormatError("last_winners: no Derby has been played (derby is 0)")
        s.last_winners, s.last_derby = [], None
        return
    s.last_winners = sorted(
        set(saved_ints(d.get("last_winners", leaders), "last_winners", None, 0, n - 1))
    )
    s.last_derby = {
        "derby": s.derby - 1,
        "totals": [0] * n,
        "combatants": [0] * n,
        "winners": s.last_winners,
        "reason": "scenario",
    }
