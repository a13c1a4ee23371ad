"""Demolition Derby's batched engine: B games as arrays, stepped by the compiled rules.

The rules are :mod:`.kernels`, :mod:`.kernels_abilities` and :mod:`.kernels_turn` (the
compiled module ``dd_tactical``'s playouts share), the views :mod:`.batch_views`. Game ``i``
is the state tuple of row ``i`` of every array in :data:`STATE_FIELDS` (their shapes:
``kernels.Sizes``), its deck and unused cards, and its generator ``rng[i]`` (a
:mod:`derby_envs.core.pcg64` row following ``np.random.default_rng(seed)``). Game ``i``
reset with seed ``s`` plays ``game.new_initial_state(s)`` move for move
(tests/games/test_demolition_derby_batch.py compares them after every move).
"""

from __future__ import annotations

import numba
import numpy as np

from derby_envs.core import pcg64, threads
from derby_envs.core.batch import BatchEngine, mask_scratch, pick_random
from derby_envs.games.demolition_derby import kernels as kn
from derby_envs.games.demolition_derby.batch_state import pack_state, unpack_state
from derby_envs.games.demolition_derby.batch_views import legal_mask_one, obs_table, observe_one
from derby_envs.games.demolition_derby.kernels import (
    B_FINAL,
    B_WINS,
    L_MOVERS,
    OVER,
    S_DERBY,
    S_LAST_REASON,
    S_LEVEL,
    S_PHASE,
    S_WINS,
    STATE_ARRAYS,
    _fill,
    _fill_lengths,
    _touch,
)
from derby_envs.games.demolition_derby.kernels_turn import _apply, deal_derby, deal_tables

# serial: measured on 2 cores, ``parallel=True`` with ``prange`` over the games made every
# kernel ~15-20x slower (a game's step is a few microseconds: the threads' hand-offs cost
# more). Without numba's runtime (``_nrt=False``, as the rules kernels): each view of a game's
# row would otherwise cost an atomic reference count, ~0.3 us a game per call for the 12.
_njit = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
_pnjit = _njit

#: the batch's arrays besides the rules' state (STATE_ARRAYS, shapes from ``Sizes``):
#: name -> (trailing shape from the sizes, dtype)
EXTRA_FIELDS = {
    "deck": (lambda z: (z.N + 1,), np.int64),  # this Derby's deck, length last
    "unused": (lambda z: (z.N + 1,), np.int64),  # dealt to nobody, length last
}


def _views(arrays, i):
    """Game ``i``'s state tuple (kernels' order)."""
    return tuple(a[i] for a in arrays)


@_njit
def _state_of(cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog, i):
    return (cf[i], hand[i], lin[i], pick[i], lst[i], tp[i], tk[i], topt[i], teff[i], sc[i],
            ev[i], tlog[i])  # fmt: skip


@_njit
def _sync(st, n, terminal, to_move, i):
    """``terminal[i]`` and ``to_move[i]`` from game ``i``'s phase and movers."""
    lst, sc = st[4], st[9]
    terminal[i] = sc[S_PHASE] == OVER
    for q in range(n):
        to_move[i, q] = False
    for j in range(lst[L_MOVERS, -1]):
        to_move[i, lst[L_MOVERS, j]] = True


@_pnjit
def reset_kernel(tb, S, deck, unused, rng, deal, ws, scratch, seeds, which, terminal, to_move):
    """``DemolitionDerbyGame.new_initial_state(seed)`` for each game with ``which[i]``: a
    fresh match, the first Derby dealt (``_start_derby``)."""
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = S
    n = hand.shape[1]
    for i in range(which.shape[0]):
        if not which[i]:
            continue
        tid = 0  # one workspace (serial kernels)
        st = _state_of(cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog, i)
        pcg64.seed_row(rng[i], seeds[i])
        _fill(sc[i], 0)
        sc[i, S_LEVEL] = -1
        sc[i, kn.S_LAST_DERBY] = -1
        sc[i, S_LAST_REASON] = -1
        _fill_lengths(lst[i], 0)
        deal_derby(st, rng[i], deal, deck[i], unused[i], scratch[tid])
        _sync(st, n, terminal, to_move, i)


@_pnjit
def apply_kernel(tb, S, deck, unused, rng, deal, ws, scratch, players, actions, terminal,
                 to_move):  # fmt: skip
    """``State.apply_legal(players[i], actions[i])`` in each game with a player (the next
    Derby dealt when one ends and the match goes on, as ``_end_derby`` does)."""
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = S
    n = hand.shape[1]
    for i in range(players.shape[0]):
        p = players[i]
        if p < 0:
            continue
        tid = 0  # one workspace (serial kernels)
        st = _state_of(cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog, i)
        w = (ws[0][tid], ws[1][tid], ws[2][tid])
        derby = sc[i, S_DERBY]
        _touch(w)  # the workspace held another game's Strengths
        _apply(tb, st, w, p, actions[i])
        if sc[i, S_DERBY] != derby and sc[i, S_PHASE] != OVER:
            deal_derby(st, rng[i], deal, deck[i], unused[i], scratch[tid])
        _sync(st, n, terminal, to_move, i)


@_njit
def _first_other(terminal, to_move, seat, n, i):
    """The first player other than ``seat[i]`` to move in game ``i`` (-1: none, or over)."""
    if not terminal[i]:
        for q in range(n):
            if to_move[i, q] and q != seat[i]:
                return q
    return -1


@_njit
def advance_random(tb, S, deck, unused, rng, deal, ws, scratch, seat, env_rng, masks, players,
                   actions, terminal, to_move):  # fmt: skip
    """``BatchEngine.advance_random`` (the single view's step with random opponents): in
    each game, ``players[i]``'s action, then while a player other than ``seat[i]`` is to
    move, the first such plays ``core.batch.pick_random`` from ``env_rng[i]`` over its
    ``legal_mask_one`` (into ``masks[i]``), each applied as :func:`apply_kernel`."""
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = S
    n = hand.shape[1]
    for i in range(seat.shape[0]):
        st = _state_of(cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog, i)
        w = (ws[0][0], ws[1][0], ws[2][0])
        p, a = players[i], actions[i]
        if p < 0:  # no learner's move: the first opponent's
            p = _first_other(terminal, to_move, seat, n, i)
            if p >= 0:
                legal_mask_one(tb, st, p, masks[i])
                a = pick_random(masks[i], env_rng[i])
        while p >= 0:
            derby = sc[i, S_DERBY]
            _touch(w)  # the workspace held another game's Strengths
            _apply(tb, st, w, p, a)
            if sc[i, S_DERBY] != derby and sc[i, S_PHASE] != OVER:
                deal_derby(st, rng[i], deal, deck[i], unused[i], scratch[0])
            _sync(st, n, terminal, to_move, i)
            p = _first_other(terminal, to_move, seat, n, i)
            if p >= 0:
                legal_mask_one(tb, st, p, masks[i])
                a = pick_random(masks[i], env_rng[i])


@_pnjit
def masks_kernel(tb, S, players, out):
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = S
    for i in range(players.shape[0]):
        st = _state_of(cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog, i)
        if players[i] < 0:
            _fill(out[i], 0)
        else:
            legal_mask_one(tb, st, players[i], out[i])


@_pnjit
def observe_kernel(tb, S, deck, unused, ot, ws, players, out):
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = S
    for i in range(players.shape[0]):
        if players[i] < 0:
            continue
        tid = 0  # one workspace (serial kernels)
        st = _state_of(cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog, i)
        w = (ws[0][tid], ws[1][tid], ws[2][tid])
        _touch(w)  # the workspace held another game's Strengths
        observe_one(tb, st, deck[i], unused[i], ot, w, players[i], out[i])


@_njit
def returns_kernel(sc, n, mode_win, out):
    """``State.returns``: "win" shares 1 among the final winners, everyone pays 1/n (zeros
    while playing); "derbies": the Derby wins."""
    for i in range(sc.shape[0]):
        if not mode_win:
            for q in range(n):
                out[i, q] = sc[i, S_WINS + B_WINS * n + q]
            continue
        k = 0
        for q in range(n):
            k += sc[i, S_WINS + B_FINAL * n + q]
        for q in range(n):
            out[i, q] = 0.0 if (k == 0 or sc[i, S_PHASE] != OVER) else -1.0 / n
        if k and sc[i, S_PHASE] == OVER:
            for q in range(n):
                if sc[i, S_WINS + B_FINAL * n + q]:
                    out[i, q] += 1.0 / k


class DemolitionDerbyBatch(BatchEngine):
    """B Demolition Derby games (any player count, variant and card file the game takes)."""

    def __init__(self, game, num_games: int) -> None:
        super().__init__(game, num_games)
        B = self.num_games
        z = self.sizes = kn.Sizes(game)
        t = kn.card_tables(game)
        D = game.num_designs
        # the playouts' greedy values and gives (tables 5, 6) are not read by the rules
        self.tables = (t["params"], t["card"], t["des"], t["ops"], t["fil"],
                       np.zeros((2, D)), np.zeros(D, np.int64))  # fmt: skip
        self.state = tuple(np.zeros((B, *shape), np.int64) for shape in z.state_shapes())
        for name, (shape, dtype) in EXTRA_FIELDS.items():
            setattr(self, name, np.zeros((B, *shape(z)), dtype))
        self.deal = deal_tables(game)
        self.obs_table = obs_table(game)
        # one workspace a thread (``core.threads``): the kernels run over slices of the rows
        self.work = [
            tuple(np.zeros((1, *shape), np.int64) for shape in z.work_shapes())
            for _ in range(threads.THREADS)
        ]
        self.scratch = np.zeros((threads.THREADS, 1, 4 * (z.N + 8)), np.int64)
        self.terminal[:] = False
        self._views: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}

    def _rows(self, s: slice) -> tuple[np.ndarray, ...]:
        """The state arrays of the games of slice ``s`` (views, made once a slice)."""
        key = (s.start, s.stop)
        views = self._views.get(key)
        if views is None:
            views = self._views[key] = tuple(a[s] for a in self.state)
        return views

    def field(self, name: str) -> np.ndarray:
        """A state array by its name in :data:`~.kernels.STATE_ARRAYS`."""
        return self.state[STATE_ARRAYS.index(name)]

    # Each kernel runs over slices of the rows, split over the cores (``core.threads``: the
    # kernels release the GIL; a row depends on no other row), each with its own workspace.
    # ``scale``: a kernel with cheap rows (the masks) needs more rows to pay for a thread's
    # hand-off (from each kernel's cost per row, measured at 1,024 games).
    def reset(self, seeds: np.ndarray, which: np.ndarray) -> None:
        seeds, which = np.asarray(seeds, np.uint64), np.asarray(which, np.bool_)

        def part(s: slice, k: int) -> None:
            reset_kernel(self.tables, self._rows(s), self.deck[s], self.unused[s], self.rng[s],
                         self.deal, self.work[k], self.scratch[k], seeds[s], which[s],
                         self.terminal[s], self.to_move[s])  # fmt: skip

        threads.split(part, self.num_games, int(np.count_nonzero(which)), scale=1)

    def legal_masks(self, players: np.ndarray, out: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            masks_kernel(self.tables, self._rows(s), players[s], out[s])

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=16)

    def apply(self, players: np.ndarray, actions: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            apply_kernel(self.tables, self._rows(s), self.deck[s], self.unused[s], self.rng[s],
                         self.deal, self.work[k], self.scratch[k], players[s], actions[s],
                         self.terminal[s], self.to_move[s])  # fmt: skip

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=1)

    def advance_random(
        self, seat: np.ndarray, rngs: np.ndarray, players: np.ndarray, actions: np.ndarray
    ) -> None:
        masks = mask_scratch(self)

        def part(s: slice, k: int) -> None:
            advance_random(self.tables, self._rows(s), self.deck[s], self.unused[s],
                           self.rng[s], self.deal, self.work[k], self.scratch[k], seat[s],
                           rngs[s], masks[s], players[s], actions[s], self.terminal[s],
                           self.to_move[s])  # fmt: skip

        threads.split(part, self.num_games, scale=1)

    def observe(self, players: np.ndarray, out: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            observe_kernel(self.tables, self._rows(s), self.deck[s], self.unused[s],
                           self.obs_table, self.work[k], players[s], out[s])  # fmt: skip

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=1)

    def returns(self, mode: str, out: np.ndarray) -> None:
        if mode not in self.game.reward_modes:
            raise ValueError(f"reward mode {mode!r} not in {self.game.reward_modes}")
        returns_kernel(self.state[kn.ST_SC], self.game.num_players, mode == "win", out)

    def winners(self, out: np.ndarray) -> None:
        n = self.game.num_players
        sc = self.state[kn.ST_SC]
        final = sc[:, S_WINS + B_FINAL * n : S_WINS + (B_FINAL + 1) * n]
        out[:] = (final != 0) & (sc[:, S_PHASE] == OVER)[:, None]

    def to_state(self, i: int):
        return unpack_state(self, int(i))

    def load_state(self, i: int, state) -> None:
        pack_state(self, int(i), state)
        st = _views(self.state, int(i))
        _sync(st, self.game.num_players, self.terminal, self.to_move, int(i))
