"""Demolition Derby: setting up a chosen position (scenario tests, docs, analysis)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from derby_envs.core.errors import InvalidParameterError

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState


def arrange(
    s: DemolitionDerbyState,
    hands: list[list[str]],
    lineups: list[list[str]] | None = None,
    discard: list[str] | None = None,
    turn: int = 0,
    wins: list[int] | None = None,
) -> DemolitionDerbyState:
    """Replace the current Derby with a chosen position (at the start of a turn).

    Cards are given by design name; a leading ``"~"`` puts a lineup card face down. Cards
    are taken from the whole card set (player marks are ignored, so a scenario may use any
    design at any player count); the deck of this Derby is the whole set, and every card
    not placed is unused. Hands must be of equal size, larger than the picks per turn.
    The next Derby is dealt normally. Returns ``self``.
    """
    g = s.game
    cs = g.cards
    n = g.num_players
    lineups = lineups or [[] for _ in range(n)]
    if len(hands) != n or len(lineups) != n:
        raise InvalidParameterError(f"arrange: need {n} hands and {n} lineups")
    sizes = {len(h) for h in hands}
    if len(sizes) != 1 or sizes.pop() <= g.picks_per_turn:
        raise InvalidParameterError("arrange: hands must be equal and larger than the picks")
    pool = list(range(cs.num_cards))
    free = pool[:]

    def take(name: str) -> int:
        if name not in cs.design_index:
            raise InvalidParameterError(f"arrange: unknown card {name!r}")
        d = cs.design_index[name]
        for c in free:
            if cs.card_design[c] == d:
                free.remove(c)
                return c
        raise InvalidParameterError(f"arrange: no copy of {name!r} left in the card set")

    N = cs.num_cards
    s.owner = [-1] * N
    s.face_up = [True] * N
    s.this_turn = [False] * N
    s.instant_done = [False] * N
    s.hands = [[take(x) for x in h] for h in hands]
    s.lineups = []
    for q, lineup in enumerate(lineups):
        row = []
        for x in lineup:
            c = take(x.lstrip("~"))
            s.owner[c] = q
            s.face_up[c] = not x.startswith("~")
            row.append(c)
        s.lineups.append(row)
    s.discard = [take(x) for x in (discard or [])]
    s.discard_turn = []
    s.unused = free
    s.deck = sorted(pool)
    s.turn = turn
    if wins is not None:
        s.wins = list(wins)
    s.turn_protect, s.stoppers, s.queue = [], [], []
    s.events = []
    s._start_turn()
    return s
