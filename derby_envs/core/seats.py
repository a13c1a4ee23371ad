"""Seat rotation: every game shows the table from the observer's seat.

Relative seat ``k`` seen from ``player`` is absolute seat ``(player + k) % n``: index 0 is the
observer, 1 the player on its left, and so on. Observations, text views and agents use these
helpers rather than their own arithmetic, so that all games rotate the same way. Example, 4
players seen from seat 2::

    seat_order(2, 4)         # [2, 3, 0, 1]: relative seat k is absolute seat_order(2, 4)[k]
    relative_seat(2, 0, 4)   # 2: absolute seat 0 sits two places to player 2's left
    seat_orders(4)[2]        # (2, 3, 0, 1), the cached tuple for hot paths

An observation's per-seat block is filled ``for k, p in enumerate(seat_order(player, n))``.
"""

from __future__ import annotations

from functools import cache


def seat_order(player: int, num_players: int) -> list[int]:
    """Absolute seats in relative order seen from ``player`` (a fresh list)."""
    return [(player + k) % num_players for k in range(num_players)]


@cache
def seat_orders(num_players: int) -> tuple[tuple[int, ...], ...]:
    """``seat_orders(n)[p]``: :func:`seat_order` of every player, cached (hot paths)."""
    return tuple(tuple(seat_order(p, num_players)) for p in range(num_players))


def relative_seat(player: int, seat: int, num_players: int) -> int:
    """Where absolute ``seat`` sits seen from ``player`` (0 = the player itself)."""
    return (seat - player) % num_players
