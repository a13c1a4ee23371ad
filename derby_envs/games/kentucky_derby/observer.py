"""Kentucky Derby's observation: the layout declared once, and the vector of a position.

``OBSERVATION`` (name, size, meaning; ``n`` = players) is the table of
``docs/kentucky_derby.md``, which a test checks against it. Seats are relative
(``derby_envs.core.seats``): index 0 is the observer, 1 the player on its left, and so on;
chip amounts are divided by the total chips in play, ``T = num_players * bankroll``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from derby_envs.core.layout import Layout
from derby_envs.core.seats import seat_order

if TYPE_CHECKING:
    from derby_envs.games.kentucky_derby.engine import KentuckyDerbyState

OBSERVATION = Layout(
    [
        ("to_act", 1, "1 if the observer must bet now"),
        ("race", 2, "races played / num_races, races left / num_races"),
        ("dealer", "n", "one-hot seat of the dealer"),
        ("chips", "n", "chips / T (in sealed mode, before the stakes the observer cannot see)"),
        ("active", "n", "1 if the player still plays (0: sat out)"),
        (
            "has_bet",
            "n",
            "1 if the player's bet is visible (sequential: has bet; sealed: only one's own)",
        ),
        ("bet_horse", "4n", "one-hot horse of each visible bet"),
        ("bet_stake", "n", "visible stake / max_stake"),
        ("pool", 1, "ante pool now (this race's antes + carry-over) / T"),
        ("stake_pot", 1, "stake pot now (visible stakes + carry-over) / T"),
        ("backers", 4, "visible backers per horse / n"),
        ("stakes_on", 4, "visible stakes per horse / T"),
        (
            "odds",
            4,
            "pari-mutuel return of one more chip on each horse: (pot + 1) / (stakes on it + 1) / (T + 1)",
        ),
        ("pool_share", 4, "chips the pool would pay one more backer of each horse / T"),
        ("max_stake", 1, "the observer's largest legal stake / max_stake"),
        ("last_first", 4, "one-hot winner of the previous race"),
        ("last_second", 4, "one-hot second of the previous race (6+ players)"),
    ]
)


def observation(state: KentuckyDerbyState, player: int) -> np.ndarray:
    """What ``player`` knows, laid out as ``OBSERVATION``."""
    # Built as one Python list and converted once: far cheaper than many numpy writes.
    g = state.game
    n = g.num_players
    T = float(g.total_chips)
    max_stake = float(max(g.params["max_stake"], 1))
    order = seat_order(player, n)
    sealed = g.params["betting"] == "sealed"
    if state.over:  # the last race is settled: its stakes are in the chips, none is hidden
        horse, stake = [-1] * n, [0] * n
    else:
        horse = state.bet_horse.tolist()
        stake = state.bet_stake.tolist()
    chips = state.chips.tolist()
    active = state.active.tolist()
    seen = [horse[p] >= 0 and (not sealed or p == player) for p in order]
    to_act = player in state.current_players()
    races = g.params["num_races"]
    out = [1.0 if to_act else 0.0, state.race / races, max(races - state.race, 0) / races]
    out += [1.0 if p == state.dealer else 0.0 for p in order]
    # A sealed stake must not show through the chip count: chips before hidden stakes.
    out += [(chips[p] + (0 if seen[k] else stake[p])) / T for k, p in enumerate(order)]
    out += [1.0 if active[p] else 0.0 for p in order]
    out += [1.0 if v else 0.0 for v in seen]
    bet_onehot = [0.0] * (4 * n)
    backers = [0, 0, 0, 0]
    stakes_on = [0, 0, 0, 0]
    for k, p in enumerate(order):
        if seen[k]:
            h = horse[p]
            bet_onehot[4 * k + h] = 1.0
            backers[h] += 1
            stakes_on[h] += stake[p]
    out += bet_onehot
    out += [stake[p] / max_stake if seen[k] else 0.0 for k, p in enumerate(order)]
    pot = state.pot_carry + sum(stakes_on)
    out += [state.pool / T, pot / T]
    out += [b / n for b in backers]
    out += [s / T for s in stakes_on]
    out += [(pot + 1) / (s + 1) / (T + 1) for s in stakes_on]
    out += [(state.pool // (b + 1)) / T for b in backers]
    out.append(state.max_stake(player) / max_stake if to_act else 0.0)
    out += [1.0 if h == state.last_first else 0.0 for h in range(4)]
    out += [1.0 if h == state.last_second else 0.0 for h in range(4)]
    return np.array(out, dtype=np.float32)
