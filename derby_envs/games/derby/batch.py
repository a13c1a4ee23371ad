"""Derby over B games at once: :class:`DerbyBatch`, the compiled twin of ``engine.DerbyState``.

The state of the B games is the fields of :data:`STATE_FIELDS` (one row a game, declared once
here), stepped by the kernels of :mod:`.batch_kernels`, each of which mirrors one function of
``engine.py`` / ``observer.py``. Game ``i`` reset with seed ``s`` plays
``DerbyGame.new_initial_state(s)`` move for move: the same draws (``derby_envs.core.pcg64``),
the same masks, the same observations bit for bit (the observer's feature vector, kept move
by move as its hooks keep it), the same returns; ``tests/games/test_derby_batch.py`` plays
both side by side (``derby_envs.core.batch_check.batch_battery``).

The integer fields lie side by side in one ``(B, ...)`` int32 array ``S`` (``field(name)``
and attribute access give each as a ``(B, *shape)`` view); the feature vectors are ``vec``
(float32), the generators ``rng``.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from derby_envs.core import pcg64, threads
from derby_envs.core.batch import BatchEngine, mask_scratch
from derby_envs.games.derby import batch_kernels as kernels
from derby_envs.games.derby.constants import NUM_HORSES
from derby_envs.games.derby.engine import DerbyGame, DerbyState

H = NUM_HORSES
#: The integer state of one game: field -> shape (``DerbyState``'s fields; a list is a field
#: and its length). Letters: ``n`` players, ``M`` movement cards, ``S`` stock places per
#: colour, ``NL`` number cards per player, ``V`` the largest number, ``R`` turn-record slots.
STATE_FIELDS = {
    "turn": (),
    "player": (),
    "phase": (),
    "num_card": (),
    "move_card": (),
    "pos": (H,),
    "place": (H,),
    "finish_order": (H,),
    "finished": (),  # len(finish_order)
    "pile": ("M",),
    "pile_len": (),
    "open": (2,),
    "discard": ("M",),
    "discard_len": (),
    "decks": ("n", "NL"),
    "deck_len": ("n",),
    "up": ("n",),
    "hidden": ("n",),
    "num_left": ("n", "V"),
    "hand": ("n", H),
    "hand_known": ("n", H),
    "stock": (H, "S"),
    "stock_known": (H, "S"),
    "record": ("R",),
    "record_len": (),
    "last_record": ("R",),
    "last_record_len": (),
}

#: The game's constant tables: name -> (dtype, how it is made from the game).
TABLES = {
    "card_moves": (np.int64, lambda g: _padded(g.card_moves)),  # (M, 9): movers bottom to top
    "card_num_moves": (np.int64, lambda g: [len(m) for m in g.card_moves]),
    "card_exchange": (np.int64, lambda g: _padded(g.card_exchange)),
    "card_num_exchange": (np.int64, lambda g: [len(e) for e in g.card_exchange]),
    "number_cards": (np.int64, lambda g: g.number_cards),
    "number_counts": (
        np.int64,
        lambda g: [g.number_cards.count(v) for v in range(1, g.max_number + 1)],
    ),
    "threshold": (np.int64, lambda g: g.threshold),
    "profit": (np.int64, lambda g: g.profit),
    "colour_idx": (np.int64, lambda g: np.stack(g.layout.colour_idx)),  # observer.VectorLayout
    "card_enc": (np.float32, lambda g: g.card_enc),
    "view_table": (np.float32, lambda g: g.layout.view_table),
}
#: the feature vector's fields the kernels write (``observer.VectorLayout.off``)
VECTOR_FIELDS = (
    "phase", "played", "number_played", "card_played", "turn", "active", "positions",
    "places", "open_cards", "pile", "seats",
)  # fmt: skip
#: the game's numbers the kernels read
GAME_NUMBERS = (
    "num_players", "num_cards", "tickets_per_colour", "stock_size", "max_number", "deck_size",
    "max_count", "track_length", "total_turns", "everyone", "seat_size",
)  # fmt: skip

Layout = namedtuple(
    "Layout",
    [*STATE_FIELDS, "state_size", *(f"t_{t}" for t in TABLES), *(f"off_{v}" for v in VECTOR_FIELDS),
     *GAME_NUMBERS],
)  # fmt: skip


def _padded(rows) -> np.ndarray:
    out = np.zeros((len(rows), H), np.int64)
    for k, r in enumerate(rows):
        out[k, : len(r)] = r
    return out


def sizes(g: DerbyGame) -> dict[str, int]:
    """The letters of :data:`STATE_FIELDS`' shapes for game ``g``."""
    return {
        "n": g.num_players,
        "M": g.num_cards,
        "S": g.stock_size,
        "NL": len(g.number_cards),
        "V": g.max_number,
        "R": kernels.REC_SIZE,
    }


def shapes(g: DerbyGame) -> dict[str, tuple[int, ...]]:
    """Every field's shape in game ``g``."""
    size = sizes(g)
    return {
        name: tuple(size[d] if isinstance(d, str) else d for d in shape)
        for name, shape in STATE_FIELDS.items()
    }


def layout(g: DerbyGame) -> tuple[Layout, np.ndarray, np.ndarray]:
    """The kernels' layout of game ``g`` and its constant tables ``TI`` (int64) and ``TF``
    (float32), flat."""
    starts, at = {}, 0
    for name, shape in shapes(g).items():
        starts[name] = at
        at += int(np.prod(shape, dtype=np.int64))
    parts = {np.int64: [], np.float32: []}
    for name, (dtype, make) in TABLES.items():
        flat = np.ascontiguousarray(make(g), dtype).ravel()
        starts[f"t_{name}"] = sum(len(p) for p in parts[dtype])
        parts[dtype].append(flat)
    lay = g.layout
    for v in VECTOR_FIELDS:
        starts[f"off_{v}"] = lay.off[v]
    numbers = {
        "num_players": g.num_players,
        "num_cards": g.num_cards,
        "tickets_per_colour": g.tickets_per_colour,
        "stock_size": g.stock_size,
        "max_number": g.max_number,
        "deck_size": len(g.number_cards),
        "max_count": g.max_count,
        "track_length": g.params["track_length"],
        "total_turns": g.total_turns,
        "everyone": (1 << g.num_players) - 1,
        "seat_size": lay.seat_size,
    }
    L = Layout(state_size=at, **starts, **numbers)
    return L, np.concatenate(parts[np.int64]), np.concatenate(parts[np.float32])


_MODES = {name: k for k, name in enumerate(DerbyGame.reward_modes)}
assert _MODES == {
    "win": kernels.MODE_WIN,
    "margin": kernels.MODE_MARGIN,
    "score": kernels.MODE_SCORE,
}


class DerbyBatch(BatchEngine):
    """B Derby games: the integer state ``S``, the feature vectors ``vec`` and the generators
    ``rng`` (one row a game), stepped by the compiled kernels of :mod:`.batch_kernels`. Each
    field of :data:`STATE_FIELDS` reads as an attribute (a ``(B, *shape)`` view of ``S``)."""

    def __init__(self, game: DerbyGame, num_games: int) -> None:
        super().__init__(game, num_games)
        B = self.num_games
        self.layout, self.TI, self.TF = layout(game)
        self.shapes = shapes(game)
        # int32: every field fits (positions up to the longest track, 100,000), and a step
        # touches half the cache lines it would in int64
        self.S = np.zeros((B, self.layout.state_size), np.int32)
        # observation p is vec[perm[p]] (observer.VectorLayout.perm): a 2-d array of its own
        # gathers faster than through the flat table
        self.perm = np.stack(game.layout.perm).astype(np.int64)
        self.vec = np.zeros((B, game.layout.size), np.float32)
        size = sizes(game)
        # a work row for the kernels' draws and rankings (never state), one a thread
        self.work = np.zeros(
            (
                threads.THREADS,
                max(size["M"], game.tickets_per_colour, size["NL"], 2 * H + size["n"]),
            ),
            np.int64,
        )

    def field(self, name: str) -> np.ndarray:
        """Field ``name`` of every game: a ``(B, *shape)`` view of ``S``."""
        start = getattr(self.layout, name)
        shape = self.shapes[name]
        size = int(np.prod(shape, dtype=np.int64))
        return self.S[:, start : start + size].reshape((self.num_games, *shape))

    def __getattr__(self, name: str) -> np.ndarray:
        if name in STATE_FIELDS and "S" in self.__dict__:
            return self.field(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ----- the protocol -------------------------------------------------------------------
    # Each kernel runs over slices of the rows, split over the cores (``core.threads``: the
    # kernels release the GIL; a row depends on no other row), each slice with its own
    # ``work`` row.
    # ``scale``: a kernel with cheap rows (the masks) needs more rows to pay for a thread's
    # hand-off (from each kernel's cost per row, measured at 1,024 games).
    def reset(self, seeds: np.ndarray, which: np.ndarray) -> None:
        seeds = np.asarray(seeds, np.uint64)

        def part(s: slice, k: int) -> None:
            kernels.reset_games(self.S[s], self.vec[s], self.rng[s], self.terminal[s],
                                self.to_move[s], self.TI, self.TF, self.layout, seeds[s],
                                which[s], self.work[k])  # fmt: skip

        threads.split(part, self.num_games, int(np.count_nonzero(which)), scale=1)

    def legal_masks(self, players: np.ndarray, out: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            kernels.legal_masks(self.S[s], self.TI, self.layout, players[s], out[s])

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=32)

    def apply(self, players: np.ndarray, actions: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            kernels.apply_actions(self.S[s], self.vec[s], self.rng[s], self.terminal[s],
                                  self.to_move[s], self.TI, self.TF, self.layout, players[s],
                                  actions[s])  # fmt: skip

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=4)

    def advance_random(
        self, seat: np.ndarray, rngs: np.ndarray, players: np.ndarray, actions: np.ndarray
    ) -> None:
        masks = mask_scratch(self)

        def part(s: slice, k: int) -> None:
            kernels.advance_random(self.S[s], self.vec[s], self.rng[s], self.terminal[s],
                                   self.to_move[s], self.TI, self.TF, self.layout, seat[s],
                                   rngs[s], masks[s], players[s], actions[s])  # fmt: skip

        threads.split(part, self.num_games, scale=1)

    def observe(self, players: np.ndarray, out: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            kernels.observe(self.vec[s], self.perm, players[s], out[s])

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=8)

    def returns(self, mode: str, out: np.ndarray) -> None:
        kernels.returns(self.S, self.TI, self.layout, _MODES[mode], out, self.work[0])

    def winners(self, out: np.ndarray) -> None:
        kernels.winners(self.S, self.TI, self.layout, out, self.work[0])

    # ----- to and from reference states ---------------------------------------------------
    def to_state(self, i: int) -> DerbyState:
        row = {name: self.field(name)[i] for name in STATE_FIELDS}
        s = self.game._blank_state()
        for name in ("turn", "player", "phase", "num_card", "move_card"):
            setattr(s, name, int(row[name]))
        for name in ("pos", "place", "open", "up", "hidden", "num_left", "hand",
                     "hand_known", "stock", "stock_known"):  # fmt: skip
            setattr(s, name, row[name].tolist())
        for name, length in (("finish_order", "finished"), ("pile", "pile_len"),
                             ("discard", "discard_len"), ("record", "record_len"),
                             ("last_record", "last_record_len")):  # fmt: skip
            setattr(s, name, row[name][: row[length]].tolist())
        s.decks = [d[:k].tolist() for d, k in zip(row["decks"], row["deck_len"], strict=True)]
        s.rng = pcg64.generator_from_row(self.rng[i])
        return s

    def load_state(self, i: int, state: DerbyState) -> None:
        self.S[i] = 0
        f = self.field
        for name in ("turn", "player", "phase", "num_card", "move_card"):
            f(name)[i] = getattr(state, name)
        for name in ("pos", "place", "open", "up", "hidden", "num_left", "hand",
                     "hand_known", "stock", "stock_known"):  # fmt: skip
            f(name)[i] = getattr(state, name)
        for name, length in (("finish_order", "finished"), ("pile", "pile_len"),
                             ("discard", "discard_len"), ("record", "record_len"),
                             ("last_record", "last_record_len")):  # fmt: skip
            items = getattr(state, name)
            f(length)[i] = len(items)
            f(name)[i, : len(items)] = items
        for q, deck in enumerate(state.decks):
            f("deck_len")[i, q] = len(deck)
            f("decks")[i, q, : len(deck)] = deck
        pcg64.row_from_generator(state.rng, self.rng[i])
        kernels.refresh(
            self.S, self.vec, self.terminal, self.to_move, self.TI, self.TF, self.layout, i
        )
