"""Kentucky Derby's text view of a session (the engine's ``render_text``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from derby_envs.games.kentucky_derby.constants import COURSE, HORSES

if TYPE_CHECKING:
    from derby_envs.games.kentucky_derby.engine import KentuckyDerbyState


def render_text(state: KentuckyDerbyState, player: int | None = None) -> str:
    """The session as text from ``player``'s view (None: everything, sealed bets too)."""
    g = state.game
    n = g.num_players
    seen = state.visible_bets(player) if player is not None else state.bet_horse >= 0
    if state.over:
        seen = np.zeros(n, bool)  # the last race is settled: no bet on the table
    # As in observation(): a sealed stake shows neither in its player's chips nor in the pot.
    hidden = [0 if seen[p] or state.over else int(state.bet_stake[p]) for p in range(n)]
    pot = state.pot_carry + sum(int(state.bet_stake[p]) for p in range(n) if seen[p])
    lines = [
        f"Kentucky Derby — race {min(state.race + 1, g.params['num_races'])}/{g.params['num_races']}"
        + ("  (session over)" if state.over else f"  dealer: player_{state.dealer}"),
        f"pool {state.pool}  stake pot {pot}",
    ]
    movers = state.current_players()
    for p in range(n):
        bet = "-"
        if not state.over and state.bet_horse[p] >= 0:
            bet = f"{HORSES[state.bet_horse[p]]} +{state.bet_stake[p]}" if seen[p] else "(sealed)"
        status = "" if state.active[p] else "  sitting out"
        turn = "  <- to bet" if p in movers else ""
        chips = int(state.chips[p]) + hidden[p]
        lines.append(f"  player_{p}: {chips:>4} chips  bet: {bet}{status}{turn}")
    if state.last_race is not None:
        lr = state.last_race
        lines.append(f"last race (race {lr['race'] + 1}):")
        for h in range(4):
            track = "." * min(lr["positions"][h], COURSE + 1)
            place = " 1st" if h == lr["first"] else (" 2nd" if h == lr["second"] else "")
            lines.append(f"  {HORSES[h]:<8} |{track:<{COURSE + 1}}| {lr['positions'][h]:>2}{place}")
        lines.append(
            "  payouts: " + ", ".join(f"player_{p} +{c}" for p, c in enumerate(lr["payouts"]) if c)
        )
    return "\n".join(lines)
