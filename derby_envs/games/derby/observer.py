"""Derby's observation: the layout declared once, and the feature vector kept move by move.

``OBSERVATION`` is the observation every player gets (name, size, meaning; the table of
``docs/derby.md`` is checked against it). Sizes use ``n`` players, ``L`` number cards per
player, ``M`` movement cards and ``D`` face-down tickets per stock.

Building an observation from scratch costs far more than a move, so the state keeps one
feature vector (``state._vec``, absolute seating, every observer's ticket knowledge; see
:class:`VectorLayout`) and every observation is one gather ``vec[perm[p]]``. The rules call
the ``on_*`` hooks below after each change, only while a vector is kept (``_vec`` is None
until the first observation: search rollouts and random play never pay for it). A test
checks that the vector kept this way always equals a fresh :func:`build`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from derby_envs.core.layout import Layout
from derby_envs.core.seats import seat_orders
from derby_envs.games.derby.constants import NUM_HORSES, OVER

if TYPE_CHECKING:
    from derby_envs.games.derby.engine import DerbyGame, DerbyState

OBSERVATION = Layout(
    [
        ("to_act", 1, "1 if the observer must act now"),
        ("phase", 2, "one-hot: cards phase, exchange phase (all 0 at the end)"),
        ("played", 2, "number card / movement card already played this turn"),
        ("number_played", 1, "this turn's number card / 6"),
        ("card_played", 9, "this turn's movement card, encoded as below"),
        ("turn", 1, "turns played / total turns"),
        ("active", "n", "one-hot relative seat of the player to move"),
        ("positions", 9, "position / track_length (a finished horse: 1)"),
        ("places", 9, "finishing place / 9 of a finished horse, 0 while racing"),
        (
            "open_cards",
            18,
            "the two open movement cards: per horse, (rank on the card from the bottom, 1..6) / 9 if it moves, 0 if it is an exchange colour",
        ),
        ("pile", "M", "1 if that movement card is still in the draw pile (public by counting)"),
        ("num_up", "n", "every player's face-up number card / 6 (0: none)"),
        (
            "num_left",
            "6n",
            "every player's number cards left (face-up included) per value 1..6, / the largest count of one value in a deck",
        ),
        (
            "num_bottom",
            "nL",
            "every player's known bottom cards (declined cards), slot 0 = the bottom card, value / 6; 0 = unknown",
        ),
        ("own_tickets", 18, "the observer's ticket of every colour"),
        ("stock_up", 18, "the face-up ticket of every stock"),
        (
            "opp_tickets",
            "18(n-1)",
            "every opponent's ticket of every colour, if the observer knows it",
        ),
        (
            "stock_down",
            "18D",
            "per colour and face-down stock place from the top: a ticket the observer knows to lie there",
        ),
    ]
)


def layout_variables(g: DerbyGame) -> dict[str, int]:
    """The letters of ``OBSERVATION``'s sizes for game ``g``."""
    return {
        "n": g.num_players,
        "L": len(g.number_cards),
        "M": g.num_cards,
        "D": g.stock_size - 1,
    }


def integer_scale(g: DerbyGame) -> np.ndarray:
    """The observation's one decoding: ``np.rint(obs * integer_scale(g))`` in float64 gives,
    entry by entry, the integer the observer encoded (a position, a place, a card's rank, a
    number card, a count, a ticket's threshold and profit, a flag, the turns played). The
    scales are the observer's own (:class:`VectorLayout`'s ``inv_*``)."""
    sl = g.observation_slices
    scale = np.ones(g.observation_size)
    for name in ("card_played", "places", "open_cards"):
        scale[sl[name]] = NUM_HORSES
    scale[sl["positions"]] = g.params["track_length"]
    scale[sl["turn"]] = g.total_turns
    for name in ("number_played", "num_up", "num_bottom"):
        scale[sl[name]] = g.max_number
    scale[sl["num_left"]] = g.max_count
    for name in ("own_tickets", "stock_up", "opp_tickets", "stock_down"):
        block = scale[sl[name]]  # a view: (threshold, profit) pairs
        block[0::2], block[1::2] = NUM_HORSES, g.max_profit
    return scale


def decode(g: DerbyGame, obs: np.ndarray) -> dict[str, np.ndarray]:
    """An observation as the integers it encodes (:func:`integer_scale`), by field name."""
    values = np.rint(np.asarray(obs, np.float64) * g.layout.integer_scale).astype(np.int64)
    return {name: values[s] for name, s in g.observation_slices.items()}


class VectorLayout:
    """Index arithmetic of the state's feature vector ``vec`` (absolute seating, every
    observer's ticket knowledge) and of the observation, which is one gather ``vec[perm[p]]``.

    ``vec`` holds, in order: phase (2), played (2), number_played (1), card_played (9),
    turn (1), active (n, absolute seats), positions (9), places (9), open_cards (18), pile (M),
    one block per seat (face-up value, counts per value, known bottom cards), and one ticket
    view per observer (every seat's ticket of every colour, then every stock place, colour-major;
    (threshold, profit) encoded, zero where the observer does not know the ticket).
    """

    def __init__(self, g: DerbyGame) -> None:
        n = g.num_players
        V = g.max_number
        L = len(g.number_cards)
        S = g.stock_size
        M = g.num_cards
        sizes = [
            ("phase", 2), ("played", 2), ("number_played", 1), ("card_played", NUM_HORSES),
            ("turn", 1), ("active", n), ("positions", NUM_HORSES), ("places", NUM_HORSES),
            ("open_cards", 2 * NUM_HORSES), ("pile", M),
        ]  # fmt: skip
        off, i = {}, 0
        for name, size in sizes:
            off[name] = i
            i += size
        self.seat_size = SB = 1 + V + L
        off["seats"] = i
        i += n * SB
        self.view_size = VS = 2 * NUM_HORSES * (n + S)
        off["views"] = i
        i += n * VS
        self.size = i
        self.off = off
        self.stock_base = 2 * NUM_HORSES * n  # inside a view
        self.perm = tuple(self._gather(g, p) for p in range(n))
        # per colour: where every observer's view of every seat's ticket and of every stock
        # place lies: [slot (seats, then stock places), observer, (threshold, profit)]
        self.colour_idx = tuple(
            np.asarray(
                [[[self.hand_at(o, q, c) + e for e in (0, 1)] for o in range(n)] for q in range(n)]
                + [
                    [[self.stock_at(o, c, k) + e for e in (0, 1)] for o in range(n)]
                    for k in range(S)
                ],
                np.intp,
            )
            for c in range(NUM_HORSES)
        )
        enc = np.zeros((NUM_HORSES * g.tickets_per_colour, 2), np.float32)
        enc[:, 0] = np.asarray(g.threshold) / NUM_HORSES
        enc[:, 1] = np.asarray(g.profit) / g.max_profit
        self.ticket_enc = enc
        # view_table[ticket, knowers bitmask, observer] = the observer's view of the ticket
        knows = (np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1  # [mask, observer]
        self.view_table = enc[:, None, None, :] * knows[None, :, :, None].astype(np.float32)
        self.inv_value = 1.0 / V
        self.inv_count = 1.0 / g.max_count
        self.inv_track = 1.0 / g.params["track_length"]
        self.inv_turns = 1.0 / g.total_turns
        self.integer_scale = integer_scale(g)  # the decoding of the observation

    def hand_at(self, o: int, q: int, c: int) -> int:
        """Where observer ``o``'s view of seat ``q``'s ticket of colour ``c`` lies."""
        return self.off["views"] + o * self.view_size + (q * NUM_HORSES + c) * 2

    def stock_at(self, o: int, c: int, k: int) -> int:
        """Where observer ``o``'s view of place ``k`` of colour ``c``'s stock lies."""
        S = (self.view_size - self.stock_base) // (2 * NUM_HORSES)
        return self.off["views"] + o * self.view_size + self.stock_base + (c * S + k) * 2

    def _gather(self, g: DerbyGame, p: int) -> np.ndarray:
        """The indices of ``vec`` that make up player ``p``'s observation, in its order."""
        off = self.off
        V, L, SB = g.max_number, len(g.number_cards), self.seat_size
        S = g.stock_size
        seats = off["seats"]
        order = seat_orders(g.num_players)[p]
        idx = [off["active"] + p]  # to_act: the observer is the active seat
        idx += range(off["phase"], off["active"])
        idx += [off["active"] + q for q in order]
        idx += range(off["positions"], off["seats"])
        idx += [seats + q * SB for q in order]
        idx += [seats + q * SB + 1 + v for q in order for v in range(V)]
        idx += [seats + q * SB + 1 + V + j for q in order for j in range(L)]
        idx += [self.hand_at(p, p, c) + e for c in range(NUM_HORSES) for e in (0, 1)]
        idx += [self.stock_at(p, c, 0) + e for c in range(NUM_HORSES) for e in (0, 1)]
        idx += [
            self.hand_at(p, q, c) + e for q in order[1:] for c in range(NUM_HORSES) for e in (0, 1)
        ]
        idx += [
            self.stock_at(p, c, k) + e
            for c in range(NUM_HORSES)
            for k in range(1, S)
            for e in (0, 1)
        ]
        assert len(idx) == g.observation_size
        return np.asarray(idx, np.intp)


# ----- building the vector ------------------------------------------------------------------
def build(state: DerbyState) -> np.ndarray:
    """A fresh feature vector of ``state`` (kept as ``state._vec`` from now on)."""
    g = state.game
    lay = g.layout
    off = lay.off
    vec = np.zeros(lay.size, np.float32)
    state._vec = vec
    write_phase(state)
    if state.num_card:
        vec[off["played"]] = 1.0
        vec[off["number_played"]] = state.num_card * lay.inv_value
    if state.move_card >= 0:
        vec[off["played"] + 1] = 1.0
        i = off["card_played"]
        vec[i : i + NUM_HORSES] = g.card_enc[state.move_card]
    vec[off["turn"]] = state.turn * lay.inv_turns
    # values are computed in double precision and rounded once, exactly as the
    # move-by-move updates do, so that both give bit-identical observations
    i = off["positions"]
    vec[i : i + NUM_HORSES] = [x * lay.inv_track for x in state.pos]
    i = off["places"]
    vec[i : i + NUM_HORSES] = [x / NUM_HORSES for x in state.place]
    write_open(state, 0)
    write_open(state, 1)
    vec[[off["pile"] + c for c in state.pile]] = 1.0
    for q in range(g.num_players):
        write_seat(state, q)
    for c in range(NUM_HORSES):
        write_colour(state, c)
    return vec


def observation(state: DerbyState, player: int) -> np.ndarray:
    vec = state._vec
    if vec is None:
        vec = build(state)
    return vec[state.game.layout.perm[player]]


def write_phase(state: DerbyState) -> None:
    """The phase and the player to move."""
    vec = state._vec
    off = state.game.layout.off
    i = off["phase"]
    vec[i] = vec[i + 1] = 0.0
    i = off["active"]
    vec[i : i + state.game.num_players] = 0.0
    if state.phase != OVER:
        vec[off["phase"] + state.phase] = 1.0
        vec[i + state.player] = 1.0


def write_open(state: DerbyState, k: int) -> None:
    """Open movement card ``k`` (0 or 1)."""
    i = state.game.layout.off["open_cards"] + NUM_HORSES * k
    card = state.open[k]
    if card >= 0:
        state._vec[i : i + NUM_HORSES] = state.game.card_enc[card]
    else:
        state._vec[i : i + NUM_HORSES] = 0.0


def write_seat(state: DerbyState, q: int) -> None:
    """Seat ``q``'s number cards: face-up value, counts left per value, known bottom cards."""
    lay = state.game.layout
    vec = state._vec
    i = lay.off["seats"] + q * lay.seat_size
    vec[i] = state.up[q] * lay.inv_value
    V = state.game.max_number
    vec[i + 1 : i + 1 + V] = [x * lay.inv_count for x in state.num_left[q]]
    i += 1 + V
    vec[i : i + lay.seat_size - 1 - V] = 0.0
    deck = state.decks[q]
    h = state.hidden[q]
    if h < len(deck):
        known = deck[h:]
        known.reverse()  # slot 0 = the bottom card
        vec[i : i + len(known)] = [k * lay.inv_value for k in known]


def write_colour(state: DerbyState, c: int) -> None:
    """Every observer's view of the tickets of colour ``c`` (hands and stock)."""
    lay = state.game.layout
    ids = [row[c] for row in state.hand] + state.stock[c]
    known = [row[c] for row in state.hand_known] + state.stock_known[c]
    state._vec[lay.colour_idx[c]] = lay.view_table[ids, known]


# ----- hooks the rules call after a change (only while ``state._vec`` is kept) ----------------
def on_number_played(state: DerbyState, p: int, v: int, declined: bool) -> None:
    """Seat ``p`` played number card ``v`` (after declining its face-up card if ``declined``)."""
    vec = state._vec
    lay = state.game.layout
    vec[lay.off["played"]] = 1.0
    vec[lay.off["number_played"]] = v * lay.inv_value
    if declined:
        write_seat(state, p)
    else:  # only the face-up card and one count change
        i = lay.off["seats"] + p * lay.seat_size
        vec[i] = 0.0
        vec[i + v] = state.num_left[p][v - 1] * lay.inv_count


def on_card_played(state: DerbyState, card: int, refilled: int) -> None:
    """Movement card ``card`` was played: taken from open slot ``refilled`` (which was then
    refilled from the pile), or drawn blind (``refilled`` -1)."""
    vec = state._vec
    g = state.game
    off = g.layout.off
    if refilled >= 0:  # the refilled open slot (write_open, inlined: a hot path)
        drawn = state.open[refilled]
        i = off["open_cards"] + NUM_HORSES * refilled
        vec[i : i + NUM_HORSES] = g.card_enc[drawn] if drawn >= 0 else 0.0
    else:
        drawn = card
    if drawn >= 0:  # it left the draw pile (after any reshuffle: see on_pile_refilled)
        vec[off["pile"] + drawn] = 0.0
    vec[off["played"] + 1] = 1.0
    i = off["card_played"]
    vec[i : i + NUM_HORSES] = g.card_enc[card]


def on_pile_refilled(state: DerbyState) -> None:
    """The played cards were shuffled into a new draw pile (before a card is drawn from it)."""
    base = state.game.layout.off["pile"]
    state._vec[[base + c for c in state.pile]] = 1.0


def on_horses_moved(state: DerbyState, horses: tuple[int, ...], exchange: bool) -> None:
    """``horses`` (this turn's movement card) moved, and perhaps finished; ``exchange``: the
    exchange phase follows (same player). Scalar writes: cheaper than rewriting the nine-horse
    slices (a list-to-slice copy costs about a microsecond)."""
    lay = state.game.layout
    vec = state._vec
    off = lay.off
    inv = lay.inv_track
    ipos, iplace = off["positions"], off["places"]
    pos, place = state.pos, state.place
    for h in horses:  # a finished horse is rewritten with the same values: harmless
        vec[ipos + h] = pos[h] * inv
        if place[h]:
            vec[iplace + h] = place[h] / NUM_HORSES
    if exchange:  # cards phase -> exchange phase
        i = off["phase"]
        vec[i] = 0.0
        vec[i + 1] = 1.0


def on_turn_end(state: DerbyState, p: int, flipped_known: bool) -> None:
    """Seat ``p``'s turn ended (``flipped_known``: its new face-up card was a known one)."""
    lay = state.game.layout
    vec = state._vec
    off = lay.off
    i = off["played"]
    vec[i : i + 3 + NUM_HORSES] = 0.0  # played, number_played, card_played
    vec[off["turn"]] = state.turn * lay.inv_turns
    # the phase and the player to move (write_phase, inlined: once per turn on a hot path)
    i = off["phase"]
    vec[i] = vec[i + 1] = 0.0
    a = off["active"]
    vec[a + p] = 0.0
    if state.phase != OVER:
        vec[i + state.phase] = 1.0
        vec[a + state.player] = 1.0
    if flipped_known:
        write_seat(state, p)
    else:
        vec[off["seats"] + p * lay.seat_size] = state.up[p] * lay.inv_value
