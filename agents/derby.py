"""Derby heuristics: ticket-value players that read only their observation.

Both project the race with a simple model and value a ticket as its profit times the chance
that its horse finishes at its threshold or better:

* every horse still racing is expected to advance by the number cards still to be played (all
  players' decks are public) times the share of unplayed movement cards that move it, with a
  variance from the same counts; finished horses keep their places;
* horse g beats horse h with probability ``Phi((m_g - m_h) / s)`` (logistic approximation), and
  the number of horses beating h is treated as normal, which gives ``P(place(h) <= t)``.

Policies:

* ``derby_projection`` evaluates every combination of a number option (play the face-up card,
  or decline it: the next card is drawn from the public multiset of unknown cards) and a
  movement option (open card 1 or 2, or a blind draw: every card of the draw pile equally
  likely) by the expected value of its own tickets after the move, and plays first the card
  type whose choice is best made before seeing the other (a decline or a blind draw reveals a
  card, which the second choice can use). It never exchanges.
* ``derby_exchange`` scores combinations also by the best exchange the card would allow (the
  card's exchange colours still racing: take the face-up ticket, or the top face-down one, whose
  identity it knows if it tracked it and otherwise is any ticket of that colour it has not
  located) and subtracts ``deny`` times the mean value of the opponents' tickets it knows;
  in the exchange phase it takes the best exchange that gains.

The model runs in compiled kernels (numba) that tabulate the pairwise chances per number value,
compute a placing probability only where a score reads it, and run the sums and divisions
vectorised over groups of combinations (see "the kernels" below). Its readable form, plain
numpy over whole arrays, is the test oracle ``tests/agents/derby_oracle.py``: the kernels give
every action the oracle's value, bit for bit (a test replays recorded games through both), and
the kernels' docstrings name the oracle methods they mirror. The kernels are compiled once and
cached by numba; their work arrays belong to the thread (shared by its Derby policies), so a
policy can be copied, pickled and shared between threads. ``act_batch`` runs the same kernels
over the rows of a batched engine (``derby_envs.core.batch``), with the same choices.

``derby_rollout`` is derby_exchange improved by a rollout search late in the game: paired
playouts of a derby_exchange field decide where to deviate from its move (``agents/search.py``).

For search, :func:`race_outlook` values a full state (a determinization) for every player
with the same race model: the chance to win, or the expected score.
"""

from __future__ import annotations

import functools
import threading

import numba
import numpy as np

from derby_envs.core import threads
from derby_envs.core.params import Param
from derby_envs.games.derby.engine import (
    BLIND,
    DECLINE,
    EXCHANGE0,
    NUM_HORSES,
    OPEN1,
    PLAY,
    SKIP,
    DerbyGame,
)

_njit = numba.njit(cache=True, nogil=True, error_model="numpy")

H = NUM_HORSES
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(7)  # E[f(Z)], Z ~ N(0, 1)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


# The kernels' work arrays, per thread: shared by the thread's policies (one decision at a
# time: a decision writes everything it reads), so a field of several policies keeps one set
# warm in the caches, and a policy holds no views of them (a copy or a pickle of a view would
# be an array apart).
_LOCAL = threading.local()

#: act_batch splits its rows over ``derby_envs.core.threads`` (one thread a core), each
#: thread with at least _ROWS_PER_THREAD rows. Most calls of a batched step have few rows
#: (the games whose opponents still move), so even small calls are split: a row's decision
#: costs far more than a row of the engine's kernels.
_ROWS_PER_THREAD = 8


def _work_arrays(lay: np.ndarray, sizes: tuple, key: bytes) -> tuple:
    """This thread's ``(FW, IW, need, lay, T, out, dec_p, info)`` for the layout ``lay``
    (``key``: its bytes)."""
    try:
        return _LOCAL.work[key]
    except AttributeError:  # this thread's first
        _LOCAL.work = {}
    except KeyError:  # this layout's first in this thread
        pass
    nf, ni, nidx = sizes
    FW, IW = np.zeros(nf), np.zeros(ni, np.int64)
    o = lay[9 + 4]  # the table offsets (integer part 4) start unfilled
    IW[o : o + nidx] = -1
    V = lay[-3]
    views = (  # what Python reads: the table, the results, decline chances, counts
        FW[lay[5] : lay[6]], FW[lay[8] :], FW[lay[4] : lay[4] + V], IW[lay[12] : lay[12] + 8]
    )  # fmt: skip
    hit = _LOCAL.work[key] = (FW, IW, np.zeros((2, H, H), np.bool_), lay.copy(), *views)
    return hit


def _z_buffer(size: int) -> np.ndarray:
    """This thread's buffer of phi's arguments, at least ``size`` long (kept across
    decisions: fresh pages cost more)."""
    z = getattr(_LOCAL, "z", None)
    if z is None or len(z) < size:
        z = _LOCAL.z = np.empty(size)
    return z


def _expect(p: np.ndarray, outcomes) -> np.ndarray | float:
    """``sum_j p[j] * outcomes[j]`` added in sequence from 0.0 (rows or numbers): the order the
    kernels repeat (``_choose_cards``), the same on every machine, where ``p @ outcomes`` would
    round as the machine's BLAS kernel does."""
    total = 0.0
    for pj, outcome in zip(p, outcomes, strict=True):
        total = total + pj * outcome
    return total


_DENY = Param("deny", 0.5, float, "weight of the opponents' known ticket value", low=0.0)


class _DerbyBase:
    name = "derby_base"
    needs_state = False
    exchanges = False

    def __init__(self, game: DerbyGame, deny: float = 0.5) -> None:
        if game.name != "derby":
            raise ValueError(f"{type(self).__name__} plays Derby, not {game.name}")
        self.game = game
        self.n = game.num_players
        self.L = game.params["track_length"]
        self.V = game.max_number
        self.Ld = len(game.number_cards)
        self.K = game.tickets_per_colour
        self.D = game.stock_size - 1
        self.deny = _DENY.validate(deny)
        self.card_ranks = game.card_ranks
        self.card_moves_f = (game.card_ranks > 0).astype(np.float64)
        # the tickets of one colour as (threshold, profit) pairs
        self.colour_tickets = [tuple(t) for t in game.ticket_values]
        self._ct_thr = np.array([t for t, _ in self.colour_tickets], np.int64)
        self._ct_prof = np.array([p for _, p in self.colour_tickets], np.float64)
        sl = game.observation_slices
        self._off = np.array([sl[name].start for name in _FIELDS], np.int64)
        self._scale = game.layout.integer_scale  # the observer's decoding (observer.decode)
        self._consts: tuple | None = None  # the kernels' constants (see _work)

    # ----- decisions ----------------------------------------------------------------------
    value_scale = 2.0  # ticket points: how far below the best an option counts as "far"

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        if np.count_nonzero(action_mask) == 1:
            return int(np.flatnonzero(action_mask)[0])
        options = self._options(observation, action_mask)
        return max(options, key=options.get)  # ties: the first listed (skip before exchange)

    def action_values(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The value this heuristic gives each action, in ticket points: the expected ticket
        value after the option (card phase) or the gain of an exchange over skipping, which
        is worth 0.05 (exchange phase); ``-inf`` for illegal actions and for exchanges
        ``derby_projection`` never considers. ``act`` plays the first maximum."""
        values = np.full(len(action_mask), -np.inf)
        legal = np.flatnonzero(action_mask)
        if len(legal) == 1:
            values[legal[0]] = 0.0
            return values
        for a, v in self._options(observation, action_mask).items():
            values[a] = v
        return values

    def _options(self, observation: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        """The value of every option (by action id) through the kernels: three kernel calls
        and two numpy exps, then ``_card_choice`` in a card phase."""
        if mask[SKIP] and not self.exchanges:
            return {SKIP: 0.05}
        deny_on = bool(self.deny) and self.n > 1
        cards_phase = not mask[SKIP]
        CF, CI, FW, IW, need, lay, T, out, dec_p, info = self._work()
        nT, nv, nc = _k_prepare(
            observation, CF, CI, FW, IW, need, lay, self.Ld, self.D, self.exchanges, deny_on,
            cards_phase, bool(mask[DECLINE]),
        )  # fmt: skip
        T = T[:nT]
        np.exp(T, out=T)  # numpy's exp (its SIMD exp can differ from libm's)
        z = _z_buffer(nv * nc * H * H * _Q)
        k = _k_z(FW, IW, need, lay, self.L, nT, z)
        np.exp(z[:k], out=z[:k])
        _k_values(
            FW, IW, need, lay, z, self.n - 1 if deny_on else 0, self.exchanges, self.deny,
            cards_phase,
        )  # fmt: skip
        if not cards_phase:
            options = {SKIP: 0.05}
            for c in range(H):
                if mask[EXCHANGE0 + 2 * c]:
                    options[EXCHANGE0 + 2 * c] = float(out[c])
                    options[EXCHANGE0 + 2 * c + 1] = float(out[H + c])
            return options
        ev = out[: nv * nc].reshape(nv, nc)
        return self._card_choice(ev, dec_p[: info[2]], bool(info[3]), bool(info[4]), mask)

    def _card_choice(
        self, ev: np.ndarray, dec_p: np.ndarray, num_played: bool, card_played: bool, mask
    ) -> dict[int, float]:
        """Options from the (number value x movement card) scores: row 0 plays the number card,
        rows 1.. are a decline's outcomes with probabilities ``dec_p``."""
        play_row = ev[0]
        dec_row = _expect(dec_p, ev[1:]) if len(dec_p) else None  # expected, per card
        if card_played:  # only the number card is left to choose
            options = {PLAY: float(play_row[0])}
            if dec_row is not None:
                options[DECLINE] = float(dec_row[0])
            return options
        if num_played:  # only the movement card is left
            return self._card_options(play_row, mask)

        # both open: value each first action by what the second choice can then use
        def best_move(row: np.ndarray) -> float:
            return max(self._card_options(row, mask).values())

        # ties: the number card first (it reveals nothing the other choice could use)
        options = {PLAY: best_move(play_row) + 1e-9}
        if dec_row is not None:
            options[DECLINE] = float(_expect(dec_p, [best_move(row) for row in ev[1:]]))
        # a card first: then the number card is played or declined, whichever is better
        best = play_row if dec_row is None else np.maximum(play_row, dec_row)
        options.update(self._card_options(best, mask))
        return options

    def _work(self) -> tuple:
        """The kernels' arrays, packed into a few flat ones (each kernel argument costs its
        unboxing at every call): the constants ``CF``/``CI`` and ``lay`` (offsets and sizes,
        see :func:`_wviews`), this policy's own; the work arrays ``FW``/``IW`` and ``need``
        and the views Python reads, one set per thread for all the policies of one layout
        (:func:`_work_arrays`)."""
        if self._consts is None:
            n, V, nk, K = self.n, self.V, len(self.card_ranks), len(self._ct_thr)
            nc = 2 + nk
            B = (V + 1) * nc
            nT = (V + 1) * 2 * H * H * 2 * _Q
            f_sizes = [3 * H, (n + 1) * H, H * H, V + 1, V, nT, nT, B * H * H, max(B, 2 * H)]
            i_sizes = [
                H,
                (n + 1) * H,
                nc * H,
                _INFO + V + 1,
                (V + 1) * 2 * H * H * 2,
                B * H,
                B,
                B * H,
            ]
            lay = np.zeros(len(f_sizes) + len(i_sizes) + 4, np.int64)
            lay[: len(f_sizes)] = np.cumsum([0, *f_sizes[:-1]])
            lay[len(f_sizes) : len(f_sizes) + len(i_sizes)] = np.cumsum([0, *i_sizes[:-1]])
            lay[-4:] = (n, V, nk, K)
            CF = np.concatenate(
                [self.card_moves_f.ravel(), self._ct_prof, self._scale, _NODES, _WEIGHTS]
            )
            CI = np.concatenate([self._off, self.card_ranks.ravel(), self._ct_thr])
            self._consts = (CF, CI, lay, (sum(f_sizes), sum(i_sizes), i_sizes[4]), lay.tobytes())
        CF, CI, lay, sizes, key = self._consts
        return (CF, CI, *_work_arrays(lay, sizes, key))

    # ----- many games per call ---------------------------------------------------------------
    # rows per chunk: a chunk's two numpy exps and three kernel calls each hand the GIL over
    # (the other thread's chunk waits for it), which costs more than the work arrays of more
    # rows falling out of the caches (~0.4 MB a row): the batched vector env ran 11-16% faster
    # with 16 rows than with 4
    _SLOTS = 16
    #: phi arguments a chunk may reserve (a row that needs more gets a chunk of its own)
    _CHUNK_Z = 1 << 22

    def act_batch(self, engine, players: np.ndarray, rngs: np.ndarray, out: np.ndarray) -> None:
        """``act`` for every row with ``players[i] >= 0`` of a batched engine
        (``derby_envs.core.batch``): the observations and masks written by the engine, the
        model's kernels run over chunks of rows (three calls and two numpy exps a chunk), the
        rows split over threads, one per core. The heuristics draw nothing: ``rngs`` is left
        as it is."""
        B = len(players)
        obs, masks = self._batch_work(B)[14:16]
        engine.observe(players, obs)
        engine.legal_masks(players, masks)
        rows = np.flatnonzero(players >= 0)
        # the kernels release the GIL: the rows are split over the cores, each thread with
        # its own work arrays (a row's choice does not depend on its chunk)
        parts = threads.ranges(len(rows), min_rows=_ROWS_PER_THREAD)
        threads.run([functools.partial(self._act_rows, rows[s], obs, masks, out) for s in parts])

    def _act_rows(self, rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, out: np.ndarray):
        """``act_batch``'s choices for ``rows`` (this thread's work arrays)."""
        work = self._batch_work(len(obs))
        (_, _, FWb, IWb, needb, lay, _, _, zcat, _, _, zoff, vals, buf,
         _, _, status, slot_of, unsure) = work  # fmt: skip
        nopp = self.n - 1 if self.deny and self.n > 1 else 0
        for start, end, used in self._prepared_chunks(rows, obs, masks, work, out):
            if not used:
                continue
            m = _kb_choose(
                rows, start, end, status, slot_of, masks, FWb, IWb, needb, lay, zcat, zoff,
                nopp, self.exchanges, self.deny, vals, buf, out, unsure,
            )  # fmt: skip
            for k in unsure[:m]:  # near ties: _card_choice's own arithmetic decides
                i = rows[k]
                out[i] = self._decide_slot(FWb, IWb, lay, slot_of[k], masks[i])

    def _prepared_chunks(self, rows, obs, masks, work: tuple, decided: np.ndarray):
        """Over ``rows`` chunk by chunk: ``_kb_prepare`` (the rows it decides itself, one legal
        action or a projection's skip, get their action in ``decided``), numpy's exp of the
        tables, ``_kb_z``, numpy's exp of the phi arguments; yields (start, end, slots used)
        with the chunk's slots ready for ``_values``."""
        (CF, CI, FWb, IWb, needb, lay, tcat, vcat, zcat, zcap, toff, zoff,
         _, _, _, _, status, slot_of, _) = work  # fmt: skip
        deny_on = bool(self.deny) and self.n > 1
        start = 0
        while start < len(rows):
            end, used, nT, nz = _kb_prepare(
                rows, start, obs, masks, CF, CI, FWb, IWb, needb, lay, self.Ld, self.D,
                self.exchanges, deny_on, tcat, zcap, status, slot_of, toff, zoff, decided,
            )  # fmt: skip
            if used:
                with np.errstate(over="ignore"):  # exp of a huge argument: inf, where phi is 0
                    np.exp(tcat[:nT], out=tcat[:nT])  # numpy's exp, as _options
                    nz = _kb_z(FWb, IWb, needb, lay, self.L, used, tcat, vcat, toff, zcat, zoff)
                    np.exp(zcat[:nz], out=zcat[:nz])
            yield start, end, used
            start = end

    def _decide_slot(self, FWb, IWb, lay, s: int, mask: np.ndarray) -> int:
        """``act``'s choice from the values a chunk's slot ``s`` holds (a card phase)."""
        options = self._slot_options(FWb, IWb, lay, s, mask)
        return max(options, key=options.get)

    def _slot_options(self, FWb, IWb, lay, s: int, mask: np.ndarray) -> dict[int, float]:
        """``_card_choice`` of the (number value x movement card) scores a chunk's slot ``s``
        holds (a card phase)."""
        info = IWb[s, lay[9 + 3] : lay[9 + 3] + 8]
        nv, nc = int(info[0]), int(info[1])
        ev = FWb[s, lay[8] : lay[8] + nv * nc].reshape(nv, nc)
        dec_p = FWb[s, lay[4] : lay[4] + int(info[2])]
        return self._card_choice(ev, dec_p, bool(info[3]), bool(info[4]), mask)

    def values_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``action_values`` of every row (an observation and its action mask; each row has a
        legal action), bit for bit, as a (rows, actions) float64 array: ``act_batch``'s kernels
        over chunks of rows, split over threads, then each row's option values, compiled
        (``_kb_values``)."""
        obs = np.ascontiguousarray(observations, np.float32)
        masks = np.ascontiguousarray(action_masks, np.int8)
        if obs.ndim != 2 or masks.shape != (len(obs), self.game.num_actions):
            raise ValueError(
                f"values_batch takes (rows, {self.game.observation_size}) observations and "
                f"(rows, {self.game.num_actions}) masks, got {obs.shape} and {masks.shape}"
            )
        if len(obs) and not masks.any(axis=1).all():
            raise ValueError(
                f"rows {np.flatnonzero(~masks.any(axis=1)).tolist()} have no legal action"
            )
        values = np.empty((len(obs), self.game.num_actions))
        rows = np.arange(len(obs))
        parts = threads.ranges(len(rows), min_rows=_ROWS_PER_THREAD)
        threads.run(
            [functools.partial(self._values_rows, rows[s], obs, masks, values) for s in parts]
        )
        return values

    def _values_rows(self, rows: np.ndarray, obs: np.ndarray, masks: np.ndarray, values):
        """``values_batch``'s values for ``rows`` (this thread's work arrays)."""
        work = self._batch_work(len(obs))
        (_, _, FWb, IWb, needb, lay, _, _, zcat, _, _, zoff, _, buf,
         _, _, status, slot_of, _) = work  # fmt: skip
        nopp = self.n - 1 if self.deny and self.n > 1 else 0
        decided = np.empty(len(obs), np.int64)  # _kb_prepare's choices (not needed here)
        for start, end, _ in self._prepared_chunks(rows, obs, masks, work, decided):
            _kb_values(
                rows, start, end, status, slot_of, masks, FWb, IWb, needb, lay, zcat, zoff,
                nopp, self.exchanges, self.deny, buf, values,
            )  # fmt: skip

    def _batch_work(self, B: int) -> tuple:
        """This thread's chunk work arrays for this policy's layout (``_work``'s packing
        without the table parts: the tables of a chunk share ``tcat``/``vcat``, its phi
        arguments ``zcat``) and the per-row buffers for ``B`` rows."""
        self._work()  # the constants
        CF, CI, lay1 = self._consts[:3]
        lay = lay1.copy()
        V, nk = self.V, len(self.card_ranks)
        nT = (V + 1) * 2 * H * H * 2 * _Q
        lay[6:9] -= nT  # no table part (5) ...
        lay[7:9] -= nT  # ... nor its variance part (6)
        key = (lay.tobytes(), B, self.game.observation_size, self._SLOTS, self._CHUNK_Z)
        work = getattr(_LOCAL, "batch", {})
        hit = work.get(key)
        if hit is None:
            nc = 2 + nk
            slots = self._SLOTS
            nf = int(lay[8]) + max((V + 1) * nc, 2 * H)
            ni = int(lay[16]) + (V + 1) * nc * H
            z_row = (V + 1) * nc * H * H * _Q  # the most phi arguments of one decision
            zcap = max(self._CHUNK_Z, z_row)
            IWb = np.zeros((slots, ni), np.int64)
            t = int(lay[9 + 4])  # the table offsets start unfilled, as in _work_arrays
            IWb[:, t : t + (V + 1) * 2 * H * H * 2] = -1
            hit = (
                np.zeros((slots, nf)), IWb,
                np.zeros((slots, 2, H, H), np.bool_), lay,
                np.zeros(slots * nT), np.zeros(slots * nT), np.zeros(zcap + z_row), zcap,
                np.zeros(slots + 1, np.int64), np.zeros(slots + 1, np.int64),
                np.zeros(EXCHANGE0 + 2 * H), np.zeros(nc),
                np.zeros((B, self.game.observation_size), np.float32),
                np.zeros((B, self.game.num_actions), np.int8), np.zeros(B, np.int64),
                np.zeros(B, np.int64), np.zeros(B, np.int64),
            )  # fmt: skip
            work[key] = hit
            _LOCAL.batch = work
        return (CF, CI, *hit)

    @staticmethod
    def _card_options(row: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        options = {OPEN1 + k: float(row[k]) for k in (0, 1) if mask[OPEN1 + k]}
        if mask[BLIND] and len(row) > 2:  # row[2:].mean() without its Python overhead
            options[BLIND] = float(np.add.reduce(row[2:]) / (len(row) - 2))
        return options


# ----- the kernels: the race model, compiled ------------------------------------------------
# The oracle (tests/agents/derby_oracle.py, the model in numpy) builds a combinations x horses x
# horses x nodes tensor per decision. The kernels compute the same numbers, keeping every value
# bit-identical (tests/agents/test_heuristic_traces_derby.py replays recorded decisions through
# both); the kernels' docstrings name the oracle methods they mirror (``_read``, ``_outcomes``):
# * the pairwise chances phi((m_g - x_h)/s_g) depend on a combination only through its number
#   value and whether g and h move, so they are tabulated per value (4 states), not per
#   combination;
# * a number value's combinations are computed once, where the oracle has the value twice (a
#   decline's outcomes include the face-up card's value: ``_share_values``);
# * P(place(h) <= t) is computed only where a score reads it (the thresholds of known tickets;
#   the face-down weights only for the horses a combination could exchange);
# * the loops run compiled (numba) with the additions in numpy's order, and every exp is
#   numpy's own (its SIMD exp can differ from libm's in the last bit) on buffers they fill;
# * per decision: one kernel call prepares everything and builds the pairwise table, numpy's
#   exp, one call computes phi's arguments, numpy's exp, one call the values (each call costs
#   its arguments' unboxing: the work arrays are kept per thread, nothing large is returned);
# * the combinations in which a horse h races in the same state and reads the same
#   thresholds form a group; its sums over the other horses, the divisions and the weighted
#   node sums run vectorised across the group (error_model="numpy": no zero-division checks
#   that would keep the divisions scalar), in registers for groups of up to 8.
# Field offsets of the observation, in the order _prepare reads them
_FIELDS = (
    "played", "number_played", "card_played", "positions", "places", "open_cards", "pile",
    "num_up", "num_left", "num_bottom", "own_tickets", "stock_up", "opp_tickets", "stock_down",
)  # fmt: skip
_Q = 7  # Gauss-Hermite nodes
#: the work arrays' ``info``: 0 number values (the oracle's), 1 movement cards, 2 a decline's
#: outcomes, 3 number played, 4 card played, 5 distinct number values; from _INFO on, the row
#: of each number value among the distinct ones (``_share_values``)
_INFO = 8
assert len(_NODES) == _Q


@_njit
def _sum9(a: np.ndarray, pairwise: bool) -> float:
    """``x.sum(1)`` of ``_score``'s (B, 9) ticket values in numpy's order: pairwise when the
    row is contiguous (B == 1), else in sequence (the fancy-indexed array is column-major)."""
    if pairwise:
        return (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))) + a[8]
    s = a[0]
    for h in range(1, 9):
        s += a[h]
    return s


@_njit
def _dot9(p: np.ndarray, w: np.ndarray) -> float:
    """``einsum("bct,ct->bc")`` for one (b, c) in numpy's order (two lanes, unrolled by 4)."""
    l0 = p[6] * w[6] + 0.0
    l1 = p[7] * w[7] + 0.0
    for t in (4, 2, 0):
        l0 = p[t] * w[t] + l0
        l1 = p[t + 1] * w[t + 1] + l1
    l0 = p[8] * w[8] + l0
    return l0 + l1


@_njit
def _race_inputs(left, pile, card_moves_f):
    """Spread ``f`` and spread ``sd`` of the future movement, and the number total ``R0``."""
    n, V = left.shape
    total = 0
    s1 = 0
    s2 = 0
    for p in range(n):
        for v in range(V):
            c = left[p, v]
            total += c
            s1 += c * (v + 1)
            s2 += c * (v + 1) * (v + 1)
    f = np.empty(9)
    if len(pile):
        for h in range(9):
            cnt = 0.0
            for i in pile:
                cnt += card_moves_f[i, h]
            f[h] = cnt / len(pile)
    else:
        f[:] = 2 / 3
    ev2 = s2 / max(total, 1)
    ev = s1 / max(total, 1)
    sd = np.empty(9)
    for h in range(9):
        e = ev * f[h]
        var = max(total - 1, 0) * (ev2 * f[h] - e * e)
        sd[h] = np.sqrt(max(var, 0.0)) + 0.5
    return f, sd, s1


@_njit
def _moves(pos, place, L, v, ranks, mv, newplace):
    """One combination's move: movers ``mv`` and places after it; returns the finished count."""
    F0 = 0
    for h in range(9):
        F0 += place[h] > 0
    for h in range(9):
        mv[h] = ranks[h] > 0 and place[h] == 0
    F = 0
    for h in range(9):
        newplace[h] = place[h]
        if mv[h] and pos[h] + v * 1.0 >= L:  # crossing: the lower on the card places better
            before = 0
            for g in range(9):
                if mv[g] and pos[g] + v * 1.0 >= L and ranks[g] < ranks[h]:
                    before += 1
            newplace[h] = F0 + 1 + before
        F += newplace[h] > 0
    return F


@_njit
def _mark(need, thr):
    for h in range(9):
        if thr[h] > 0:
            need[h, thr[h] - 1] = True


@_njit
def _down_weights(down_thr, down_prof, seen_thr, seen_prof, ct_thr, ct_prof):
    """The oracle's ``_down_weights``; ``seen_*[c]``: the colour's located tickets."""
    W = np.zeros((9, 9))
    K = len(ct_thr)
    pool = np.empty(K, np.bool_)
    for c in range(9):
        t0 = down_thr[c, 0]
        if t0 > 0:
            W[c, t0 - 1] = down_prof[c, 0]
            continue
        pool[:] = True
        for s in range(seen_thr.shape[1]):
            t, p = seen_thr[c, s], seen_prof[c, s]
            if t > 0:
                for j in range(K):
                    if pool[j] and ct_thr[j] == t and ct_prof[j] == p:
                        pool[j] = False
                        break
        cnt = 0
        for j in range(K):
            cnt += pool[j]
        for j in range(K):
            if pool[j]:
                W[c, ct_thr[j] - 1] += ct_prof[j] / cnt
    return W


@_njit
def _next_number(left0, up, bottom0):
    """The oracle's ``_next_number``."""
    counts = left0.copy()
    counts[up - 1] -= 1
    last = 0
    for v in bottom0:
        if v > 0:
            counts[v - 1] -= 1
            last = v
    total = counts.sum()
    if total > 0:
        k = 0
        for c in counts:
            k += c > 0
        vals = np.empty(k, np.int64)
        probs = np.empty(k)
        k = 0
        for v in range(len(counts)):
            if counts[v] > 0:
                vals[k] = v + 1
                probs[k] = counts[v] / total
                k += 1
        return vals, probs
    return np.array([last]), np.array([1.0])


@_njit
def _tickets(iv, start, count, thr, prof):
    for j in range(count):
        thr.flat[j] = int(iv[start + 2 * j])
        prof.flat[j] = iv[start + 2 * j + 1]


@_njit
def _pile_cards(iv, start, ncards):
    """Indices of the movement cards marked in the observation's draw-pile field."""
    npile = 0
    for j in range(ncards):
        npile += iv[start + j] > 0
    pile = np.empty(npile, np.int64)
    npile = 0
    for j in range(ncards):
        if iv[start + j] > 0:
            pile[npile] = j
            npile += 1
    return pile


@_njit
def _read_iv(iv, off, n, D, hv, place, thr, prof, left):
    """Positions, places, tickets (rows: own, face-up, opponents'), the face-down stock's
    located tickets and the number cards left, from the rounded observation ``iv``."""
    for h in range(9):
        hv[0, h] = iv[off[3] + h]
        place[h] = int(iv[off[4] + h])
    _tickets(iv, off[10], 9, thr[0], prof[0])
    _tickets(iv, off[11], 9, thr[1], prof[1])
    _tickets(iv, off[12], 9 * (n - 1), thr[2:], prof[2:])
    down_thr, down_prof = np.empty((9, D), np.int64), np.empty((9, D))
    _tickets(iv, off[13], 9 * D, down_thr, down_prof)
    for j in range(left.size):
        left.flat[j] = int(iv[off[8] + j])
    return down_thr, down_prof


@_njit
def _weights(n, D, thr, prof, down_thr, down_prof, ct_thr, ct_prof):
    """The face-down weights (``_down_weights``); located tickets: own, face-up, opponents',
    face-down."""
    seen_thr = np.empty((9, n + 1 + D), np.int64)
    seen_prof = np.empty((9, n + 1 + D))
    for c in range(9):
        for r in range(n + 1):
            seen_thr[c, r], seen_prof[c, r] = thr[r, c], prof[r, c]
        for s in range(D):
            seen_thr[c, n + 1 + s], seen_prof[c, n + 1 + s] = down_thr[c, s], down_prof[c, s]
    return _down_weights(down_thr, down_prof, seen_thr, seen_prof, ct_thr, ct_prof)


@_njit
def _needs(n, thr, W, exchanges, deny_on, cards_phase, need):
    """Where the scores read P(place(h) <= t): ``need[0]`` always (own tickets, the
    opponents' known ones), ``need[1]`` for a horse a combination could exchange (the face-up
    ticket, the face-down weights); the exchange phase reads both for every horse."""
    need[:] = False
    _mark(need[0], thr[0])
    if exchanges:
        if deny_on:
            for k in range(n - 1):
                _mark(need[0], thr[2 + k])
        _mark(need[1], thr[1])
        for h in range(9):
            for t in range(9):
                if W[h, t] != 0:
                    need[1, h, t] = True
    if not cards_phase:
        for h in range(9):
            for t in range(9):
                need[0, h, t] = need[0, h, t] or need[1, h, t]
                need[1, h, t] = False


@_njit
def _combos(iv, off, Ld, left0, card_ranks, pile, decline, values, dec_p, cards, info):
    """The card phase's combinations: number values (the one to play, then a decline's, with
    probabilities ``dec_p``) and movement cards (the one played, or open 1, open 2 and every
    pile card); ``info``: their counts."""
    nd = 0
    if iv[off[0]] > 0:  # the number card is played
        values[0] = iv[off[1]]
    else:
        up = int(iv[off[7]])
        values[0] = up
        if decline:
            bottom0 = np.empty(Ld, np.int64)
            for j in range(Ld):
                bottom0[j] = int(iv[off[9] + j])
            dec_vals, dp = _next_number(left0, up, bottom0)
            nd = len(dec_vals)
            for j in range(nd):
                values[1 + j] = dec_vals[j]
                dec_p[j] = dp[j]
    if iv[off[0] + 1] > 0:  # the movement card is played
        for h in range(9):
            cards[0, h] = int(iv[off[2] + h])
        nc = 1
    else:
        for k in range(2):
            for h in range(9):
                cards[k, h] = int(iv[off[5] + 9 * k + h])
        for j in range(len(pile)):
            cards[2 + j] = card_ranks[pile[j]]
        nc = 2 + len(pile)
    info[0], info[1], info[2] = 1 + nd, nc, nd


@_njit
def _share_values(values, info):
    """The number values' rows share their work: a decline's outcomes usually include the
    face-up card's value, whose combinations the oracle computes twice (the same inputs, the
    same bits). ``values[:nu]`` become the distinct values in order of first occurrence,
    ``info[5] = nu`` and ``info[_INFO + i]`` the row of the oracle's value ``i`` among them."""
    nu = 0
    for i in range(info[0]):
        v = values[i]
        u = 0
        while u < nu and values[u] != v:
            u += 1
        if u == nu:  # nu <= i: the entries overwritten have been read
            values[nu] = v
            nu += 1
        info[_INFO + i] = u
    info[5] = nu


@_njit
def _prepare(iv, off, n, V, Ld, D, card_ranks, card_moves_f, ct_thr, ct_prof, exchanges,
             deny_on, cards_phase, decline, hv, place, thr, prof, W, need, values, dec_p,
             cards, info):  # fmt: skip
    """Everything a decision reads, from the rounded observation ``iv`` (``_read``,
    ``_down_weights``, ``_next_number``, the spread of the race), written into the work arrays:
    ``hv`` rows: positions, spread f, sd; ``thr``/``prof`` rows: own, face-up, opponents'
    tickets; the combinations (``_combos``); returns R0 (the number total still to come)."""
    left = np.empty((n, V), np.int64)
    down_thr, down_prof = _read_iv(iv, off, n, D, hv, place, thr, prof, left)
    pile = _pile_cards(iv, off[6], card_ranks.shape[0])
    f, sd, R0 = _race_inputs(left, pile, card_moves_f)
    hv[1], hv[2] = f, sd
    W[:] = 0.0
    if exchanges:
        W[:] = _weights(n, D, thr, prof, down_thr, down_prof, ct_thr, ct_prof)
    _needs(n, thr, W, exchanges, deny_on, cards_phase, need)
    info[3] = iv[off[0]] > 0
    info[4] = iv[off[0] + 1] > 0
    if not cards_phase:  # the exchange phase: the position as it stands
        values[0] = 0.0
        cards[0, :] = 0
        info[0], info[1], info[2] = 1, 1, 0
    else:
        _combos(iv, off, Ld, left[0], card_ranks, pile, decline, values, dec_p, cards, info)
    _share_values(values, info)
    return R0


@_njit
def _reads(place, cards, nc, need):
    """``occurs[h, s]``: racing horse h moving (s=1) or not on some card; ``reads[h, s]``: and
    then some P(place(h) <= t) is needed."""
    occurs = np.zeros((9, 2), np.bool_)
    reads = np.zeros((9, 2), np.bool_)
    for h in range(9):
        if place[h] > 0:
            continue
        always = False
        elig = False
        for t in range(9):
            always = always or need[0, h, t]
            elig = elig or need[1, h, t]
        for c in range(nc):
            s = 1 if cards[c, h] > 0 else 0
            occurs[h, s] = True
            if always or (s == 0 and elig):
                reads[h, s] = True
    return occurs, reads


@_njit
def _table_args(hv, place, R0, values, nv, cards, nc, need, nodes, tbuf, tidx):
    """``-1.702 * args`` with ``args = (m_g - x_hq) / s_g`` of ``_outcomes`` for number value
    i, h moving (sh) or not, g moving (sg) or not (the same operations, so the same bits),
    packed into ``tbuf``: entry (i, sh, h, g, sg) starts at ``tidx[i, sh, h, g, sg]``, its Q
    nodes in sequence. Only entries some combination reads (racing horses, states that
    occur, h with a P(place <= t) to compute); returns how many values."""
    Q = len(nodes)
    pos, f, sd = hv[0], hv[1], hv[2]
    m = np.empty((nv, 2, 9))
    for i in range(nv):
        v = values[i]
        for h in range(9):
            Rf = (R0 - v) * f[h]
            m[i, 0, h] = pos[h] + Rf
            m[i, 1, h] = (pos[h] + v) + Rf
    occurs, reads = _reads(place, cards, nc, need)
    x = np.empty(Q)
    k = 0
    for i in range(nv):
        for sh in range(2):
            for h in range(9):
                if not reads[h, sh]:
                    continue
                for q in range(Q):
                    x[q] = m[i, sh, h] + sd[h] * nodes[q]
                for g in range(9):
                    for sg in range(2):
                        if g == h or not occurs[g, sg]:
                            continue
                        tidx[i, sh, h, g, sg] = k
                        for q in range(Q):
                            tbuf[k + q] = -1.702 * ((m[i, sg, g] - x[q]) / sd[g])
                        k += Q
    return k


@_njit
def _prepare_table(obs, scale, off, n, V, Ld, D, card_ranks, card_moves_f, ct_thr, ct_prof,
                   exchanges, deny_on, cards_phase, decline, hv, place, thr, prof, W, need,
                   values, dec_p, cards, info, nodes, tbuf, tidx):  # fmt: skip
    """The observation rounded to the integers it encodes (``observer.decode``: ``rint(obs * scale)``
    in float64), ``_prepare``, then ``_table_args`` (one call: each call of a kernel costs
    its arguments' unboxing); returns the table's size."""
    iv = np.empty(len(obs))
    for j in range(len(obs)):
        iv[j] = np.rint(np.float64(obs[j]) * scale[j])
    R0 = _prepare(iv, off, n, V, Ld, D, card_ranks, card_moves_f, ct_thr, ct_prof, exchanges,
                  deny_on, cards_phase, decline, hv, place, thr, prof, W, need, values, dec_p,
                  cards, info)  # fmt: skip
    return _table_args(hv, place, R0, values, info[5], cards, info[1], need, nodes, tbuf, tidx)


@_njit
def _combo_codes(hv, place, L, values, nv, cards, nc, code, Fb, newplace):
    """Per combination b: ``code[b, g]`` 0 = g not racing after the move, 1 = racing and not
    moved, 2 = racing and moved; ``Fb[b]`` the finished count, ``newplace[b]`` the places."""
    pos = hv[0]
    mv = np.zeros(9, np.bool_)
    for b in range(nv * nc):
        Fb[b] = _moves(pos, place, L, values[b // nc], cards[b % nc], mv, newplace[b])
        for g in range(9):
            code[b, g] = 0 if newplace[b, g] > 0 else (2 if mv[g] else 1)


@_njit
def _group(code, i, nc, h, sh, group):
    """The combinations of number value i where h races after the move, moved (sh = 1) or not
    (sh = 0): they read the same thresholds and the same pairwise table rows."""
    ng = 0
    for c in range(nc):
        b = i * nc + c
        if code[b, h] == 1 + sh:
            group[ng] = b
            ng += 1
    return ng


@_njit
def _thresholds(need, h, el, ts):
    """The places t-1 where P(place(h) <= t) is read (``el``: h is exchange-eligible)."""
    nt = 0
    for t in range(9):
        if need[0, h, t] or (el and need[1, h, t]):
            ts[nt] = t
            nt += 1
    return nt


@_njit
def _group_sums(tbuf, vbuf, tidx, i, sh, h, code, group, ng, mu, s2):
    """``mu[q, j]``, ``s2[q, j]`` for the combinations ``group[:ng]`` (h in state sh): the sums
    over the other racing horses, in sequence (numpy's order), of P(g beats h) at node q and
    its variance, vectorised over the combinations (a horse not racing adds 0.0: no change,
    all terms are >= +0.0); then ``s2 = sqrt(s2 + 0.08)``."""
    cg = np.empty(ng, np.int64)
    mu[:, :ng] = 0.0
    s2[:, :ng] = 0.0
    for g in range(9):
        if g == h:
            continue
        for j in range(ng):
            cg[j] = code[group[j], g]
        o0, o1 = tidx[i, sh, h, g, 0], tidx[i, sh, h, g, 1]
        for q in range(_Q):
            a0 = tbuf[o0 + q] if o0 >= 0 else 0.0
            a1 = tbuf[o1 + q] if o1 >= 0 else 0.0
            w0 = vbuf[o0 + q] if o0 >= 0 else 0.0
            w1 = vbuf[o1 + q] if o1 >= 0 else 0.0
            mq, sq = mu[q], s2[q]
            for j in range(ng):
                c = cg[j]
                mq[j] += a1 if c == 2 else (a0 if c == 1 else 0.0)
                sq[j] += w1 if c == 2 else (w0 if c == 1 else 0.0)
    for q in range(_Q):
        sq = s2[q]
        for j in range(ng):
            sq[j] = np.sqrt(sq[j] + 0.08)


@_njit
def _scalar_sums(tbuf, vbuf, tidx, i, sh, h, code, b, j, mu, s2):
    """``_group_sums`` for one combination b (column j), the 7 nodes in registers: cheaper
    for small groups, the same additions in the same order."""
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = 0.0
    v0 = v1 = v2 = v3 = v4 = v5 = v6 = 0.0
    for g in range(9):
        c = code[b, g]
        if g == h or c == 0:
            continue
        o = tidx[i, sh, h, g, c - 1]
        m0 += tbuf[o]
        m1 += tbuf[o + 1]
        m2 += tbuf[o + 2]
        m3 += tbuf[o + 3]
        m4 += tbuf[o + 4]
        m5 += tbuf[o + 5]
        m6 += tbuf[o + 6]
        v0 += vbuf[o]
        v1 += vbuf[o + 1]
        v2 += vbuf[o + 2]
        v3 += vbuf[o + 3]
        v4 += vbuf[o + 4]
        v5 += vbuf[o + 5]
        v6 += vbuf[o + 6]
    mu[0, j], mu[1, j], mu[2, j], mu[3, j], mu[4, j], mu[5, j], mu[6, j] = (
        m0,
        m1,
        m2,
        m3,
        m4,
        m5,
        m6,
    )
    s2[0, j], s2[1, j], s2[2, j], s2[3, j] = v0, v1, v2, v3
    s2[4, j], s2[5, j], s2[6, j] = v4, v5, v6
    for q in range(_Q):
        s2[q, j] = np.sqrt(s2[q, j] + 0.08)


@_njit
def _z_args(hv, place, L, values, nv, cards, nc, need, tbuf, vbuf, nT, tidx, code, Fb,
            newplace, z):  # fmt: skip
    """``tbuf`` (numpy's exp of ``_table_args``) becomes phi and ``vbuf`` phi (1 - phi); then
    ``z`` gets ``-1.702 * (t - F - 0.5 - mu) / sig`` (the argument of exp in phi) wherever a
    score reads P(place(h) <= t), for every combination b = (values[b // nc], cards[b % nc]):
    per group of combinations (``_group``), per threshold and node, a row over the group;
    returns how many."""
    for j in range(nT):
        p = 1.0 / (1.0 + tbuf[j])
        tbuf[j] = p
        vbuf[j] = p * (1 - p)
    _combo_codes(hv, place, L, values, nv, cards, nc, code, Fb, newplace)
    group = np.empty(nc, np.int64)
    ts = np.empty(9, np.int64)
    cj = np.empty(nc)
    mu = np.empty((_Q, nc))
    s2 = np.empty((_Q, nc))
    k = 0
    for i in range(nv):
        for h in range(9):
            for sh in range(2):
                nt = _thresholds(need, h, sh == 0, ts)
                ng = _group(code, i, nc, h, sh, group) if nt else 0
                if ng == 0:
                    continue
                if ng > 8:
                    _group_sums(tbuf, vbuf, tidx, i, sh, h, code, group, ng, mu, s2)
                else:
                    for j in range(ng):
                        _scalar_sums(tbuf, vbuf, tidx, i, sh, h, code, group[j], j, mu, s2)
                for r in range(nt):
                    for j in range(ng):
                        cj[j] = ts[r] + 1 - Fb[group[j]] - 0.5
                    if ng > 8:
                        for q in range(_Q):
                            mq, sq = mu[q], s2[q]
                            for j in range(ng):
                                z[k + q * ng + j] = ((cj[j] - mq[j]) / sq[j]) * -1.702
                    else:
                        for j in range(ng):
                            for q in range(_Q):
                                z[k + q * ng + j] = ((cj[j] - mu[q, j]) / s2[q, j]) * -1.702
                    k += _Q * ng
    return k


@_njit
def _phi_sums(ez, k, ng, weights, acc):
    """``acc[j] = sum_q weights[q] phi_qj`` over the group's row block at ``k`` (einsum's
    order), vectorised over the group."""
    for j in range(ng):
        acc[j] = 0.0
    for q in range(_Q):
        w = weights[q]
        for j in range(ng):
            acc[j] += (1.0 / (1.0 + ez[k + q * ng + j])) * w


@_njit
def _place_probs(values, nv, nc, need, code, newplace, ez, weights, P):
    """``P[b, h, t-1] = P(place(h) <= t)`` where needed (0 elsewhere); ``ez``: numpy's exp of
    _z_args' buffer, read in its order."""
    for b in range(nv * nc):
        for h in range(9):
            for t in range(9):
                P[b, h, t] = 1.0 if 0 < newplace[b, h] <= t + 1 else 0.0
    group = np.empty(nc, np.int64)
    ts = np.empty(9, np.int64)
    acc = np.empty(nc)
    k = 0
    for i in range(nv):
        for h in range(9):
            for sh in range(2):
                nt = _thresholds(need, h, sh == 0, ts)
                ng = _group(code, i, nc, h, sh, group) if nt else 0
                for r in range(nt if ng else 0):
                    if ng > 8:  # vectorised over the group
                        _phi_sums(ez, k, ng, weights, acc)
                    else:  # a few: loop setup would cost more than the sums
                        for j in range(ng):
                            a = 0.0
                            for q in range(_Q):  # einsum's order
                                a += (1.0 / (1.0 + ez[k + q * ng + j])) * weights[q]
                            acc[j] = a
                    k += _Q * ng
                    for j in range(ng):
                        P[group[j], h, ts[r]] = acc[j]


@_njit
def _ev(P, b, thr, prof, out):
    """One ticket per colour: P(place <= threshold) x profit (threshold 0: unknown, 0)."""
    for h in range(9):
        out[h] = P[b, h, thr[h] - 1] * prof[h] if thr[h] > 0 else 0.0


@_njit
def _exchange_best(P, b, ranks, place, thr, prof, W, own, up):
    """The best gain of an exchange combination b allows (0 if none gains)."""
    _ev(P, b, thr[1], prof[1], up)
    best = 0.0
    for c in range(9):
        if ranks[c] != 0 or place[c] > 0:  # exchange colours still racing only
            continue
        gain = max(up[c], _dot9(P[b, c], W[c])) - own[c]
        best = max(best, gain)
    return best


@_njit
def _scores(P, B, pairwise, place, cards, nc, thr, prof, nopp, W, exchanges, deny, out):
    """The value of every combination for this player (the oracle's ``_score``) into ``out``
    (``pairwise``: the oracle's row sums are pairwise, see ``_sum9``)."""
    own = np.empty(9)
    up = np.empty(9)
    tmp = np.empty(9)
    for b in range(B):
        _ev(P, b, thr[0], prof[0], own)
        score = _sum9(own, pairwise)
        if exchanges:
            score = score + _exchange_best(P, b, cards[b % nc], place, thr, prof, W, own, up)
            if nopp > 0:
                opp = 0.0
                for k in range(nopp):
                    _ev(P, b, thr[2 + k], prof[2 + k], tmp)
                    opp = opp + _sum9(tmp, pairwise)
                score = score - deny * opp / nopp
        out[b] = score


@_njit
def _exchange_gains(P, thr, prof, W, out):
    """The oracle's ``_exchange``'s gains per colour: ``out[c]`` the face-up ticket,
    ``out[9 + c]`` the top face-down ticket."""
    own = np.empty(9)
    up = np.empty(9)
    _ev(P, 0, thr[0], prof[0], own)
    _ev(P, 0, thr[1], prof[1], up)
    prod = np.empty(9)
    for c in range(9):
        for t in range(9):
            prod[t] = P[0, c, t] * W[c, t]
        out[c] = up[c] - own[c]
        out[9 + c] = _sum9(prod, True) - own[c]  # (P_le[0] * W).sum(1): contiguous rows


@_njit
def _values(place, values, info, cards, need, code, newplace, ez, weights, P, thr, prof,
            nopp, W, exchanges, deny, cards_phase, out):  # fmt: skip
    """The placing probabilities, then the scores of the combinations (card phase) or the
    exchange gains (exchange phase) into ``out``. The combinations were computed for the
    distinct number values only (``_share_values``): each value's row of scores is then
    copied to where the oracle has it (rows only move down, so in descending order no source
    is overwritten before it is read)."""
    nv, nc, nu = info[0], info[1], info[5]
    _place_probs(values, nu, nc, need, code, newplace, ez, weights, P)
    if cards_phase:
        _scores(P, nu * nc, nv * nc == 1, place, cards, nc, thr, prof, nopp, W, exchanges,
                deny, out)  # fmt: skip
        for i in range(nv - 1, -1, -1):
            u = info[_INFO + i]
            if u != i:
                out[i * nc : (i + 1) * nc] = out[u * nc : (u + 1) * nc]
    else:
        _exchange_gains(P, thr, prof, W, out)


@_njit
def _cviews(CF, CI, lay):
    """The constants packed by ``_DerbyBase._work``."""
    nk, K = lay[-2], lay[-1]
    card_moves_f = CF[: nk * 9].reshape((nk, 9))
    ct_prof = CF[nk * 9 : nk * 9 + K]
    scale = CF[nk * 9 + K : len(CF) - 2 * _Q]
    nodes = CF[len(CF) - 2 * _Q : len(CF) - _Q]
    off = CI[:14]
    card_ranks = CI[14 : 14 + nk * 9].reshape((nk, 9))
    ct_thr = CI[14 + nk * 9 : 14 + nk * 9 + K]
    return card_moves_f, ct_prof, scale, nodes, off, card_ranks, ct_thr


@_njit
def _wviews(FW, IW, lay):
    """The work arrays packed by ``_DerbyBase._work`` (offsets in ``lay``: 9 float parts, 8
    integer parts, then n, V, the number of movement cards, the tickets per colour)."""
    n, V, nk = lay[-4], lay[-3], lay[-2]
    nc = 2 + nk
    B = (V + 1) * nc
    f, i = lay[:9], lay[9:17]
    hv = FW[f[0] : f[0] + 27].reshape((3, 9))
    prof = FW[f[1] : f[1] + (n + 1) * 9].reshape((n + 1, 9))
    W = FW[f[2] : f[2] + 81].reshape((9, 9))
    values, dec_p = FW[f[3] : f[3] + V + 1], FW[f[4] : f[4] + V]
    T, Vt = FW[f[5] : f[6]], FW[f[6] : f[7]]
    P = FW[f[7] : f[7] + B * 81].reshape((B, 9, 9))
    out = FW[f[8] :]
    place = IW[i[0] : i[0] + 9]
    thr = IW[i[1] : i[1] + (n + 1) * 9].reshape((n + 1, 9))
    cards = IW[i[2] : i[2] + nc * 9].reshape((nc, 9))
    info = IW[i[3] : i[4]]
    tidx = IW[i[4] : i[4] + (V + 1) * 324].reshape((V + 1, 2, 9, 9, 2))
    code = IW[i[5] : i[5] + B * 9].reshape((B, 9))
    Fb = IW[i[6] : i[6] + B]
    newplace = IW[i[7] : i[7] + B * 9].reshape((B, 9))
    return (hv, prof, W, values, dec_p, T, Vt, P, out, place, thr, cards, info, tidx, code, Fb,
            newplace)  # fmt: skip


@_njit
def _k_prepare(obs, CF, CI, FW, IW, need, lay, Ld, D, exchanges, deny_on, cards_phase, decline):
    """``_prepare_table`` on the packed arrays; returns the table's size and the counts of
    number values and movement cards."""
    card_moves_f, ct_prof, scale, nodes, off, card_ranks, ct_thr = _cviews(CF, CI, lay)
    (hv, prof, W, values, dec_p, T, _vt, _p, _o, place, thr, cards, info, tidx, _c, _f,
     _np) = _wviews(FW, IW, lay)  # fmt: skip
    nT = _prepare_table(obs, scale, off, lay[-4], lay[-3], Ld, D, card_ranks, card_moves_f,
                        ct_thr, ct_prof, exchanges, deny_on, cards_phase, decline, hv, place,
                        thr, prof, W, need, values, dec_p, cards, info, nodes, T, tidx)  # fmt: skip
    return nT, info[0], info[1]


@_njit
def _k_z(FW, IW, need, lay, L, nT, z):
    """``_z_args`` on the packed arrays."""
    (hv, _pr, _W, values, _d, T, Vt, _p, _o, place, _t, cards, info, tidx, code, Fb,
     newplace) = _wviews(FW, IW, lay)  # fmt: skip
    return _z_args(hv, place, L, values, info[5], cards, info[1], need, T, Vt, nT, tidx, code,
                   Fb, newplace, z)  # fmt: skip


@_njit
def _k_values(FW, IW, need, lay, z, nopp, exchanges, deny, cards_phase):
    """``_values`` on the packed arrays (the scores or gains land in the ``out`` part)."""
    (_hv, prof, W, values, _d, _t, _v, P, out, place, thr, cards, info, _ti, code, _f,
     newplace) = _wviews(FW, IW, lay)  # fmt: skip
    _values(place, values, info, cards, need, code, newplace, z, _WEIGHTS, P, thr,
            prof, nopp, W, exchanges, deny, cards_phase, out)  # fmt: skip


# ----- many games per call: act_batch ---------------------------------------------------------
# The same kernels over the rows of a batch, in chunks: _kb_prepare reads every row's
# observation (written by the batched engine's ``observe``), prepares its pairwise table into
# one shared buffer and counts its phi arguments; numpy's exp runs once over the chunk's
# tables; _kb_z writes every row's phi arguments into a second shared buffer; numpy's exp once
# more; _kb_choose computes the values and makes each row's choice (_card_choice compiled).
# Where the two best options of a card phase lie within _NEAR_TIE of each other and one of
# them is a blind draw's mean, the row is decided by the Python _card_choice on the kernel's
# values instead (a guard on numpy's pairwise sum, which _np_sum repeats): every action is the
# one ``act`` gives. A decline's expectations are summed in sequence on both sides
# (``_expect``).
_NEAR_TIE = 1e-11
_DONE, _PREPARED = 0, 1  # a row's status after _kb_prepare


@_njit
def _np_sum(a, start, n):
    """``np.add.reduce(a[start:start + n])`` in numpy's order (its pairwise sum; n <= 128)."""
    if n < 8:
        res = 0.0
        for j in range(n):
            res += a[start + j]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    j = 8
    while j < n - n % 8:
        r0 += a[start + j]
        r1 += a[start + j + 1]
        r2 += a[start + j + 2]
        r3 += a[start + j + 3]
        r4 += a[start + j + 4]
        r5 += a[start + j + 5]
        r6 += a[start + j + 6]
        r7 += a[start + j + 7]
        j += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while j < n:
        res += a[start + j]
        j += 1
    return res


@_njit
def _card_values(row, nc, mask, vals):
    """``_card_options(row, mask)`` as ``vals[OPEN1], vals[OPEN2], vals[BLIND]`` (-inf: not an
    option); returns their maximum."""
    best = -np.inf
    for k in range(2):
        vals[OPEN1 + k] = row[k] if mask[OPEN1 + k] else -np.inf
        best = max(best, vals[OPEN1 + k])
    vals[BLIND] = -np.inf
    if mask[BLIND] and nc > 2:
        vals[BLIND] = _np_sum(row, 2, nc - 2) / (nc - 2)
        best = max(best, vals[BLIND])
    return best


@_njit
def _choose_cards(ev, nv, nc, dec_p, num_played, card_played, mask, vals, buf):
    """``_card_choice`` then ``act``'s first maximum: the option values into ``vals`` (by
    action id, -inf where not an option); returns the action, or -1 for a near tie."""
    nd = nv - 1
    for a in range(len(vals)):
        vals[a] = -np.inf
    if card_played:
        vals[PLAY] = ev[0]
        if nd:
            s = 0.0
            for j in range(nd):
                s += dec_p[j] * ev[(1 + j) * nc]
            vals[DECLINE] = s
    elif num_played:
        _card_values(ev[:nc], nc, mask, vals)
    else:
        vals[PLAY] = _card_values(ev[:nc], nc, mask, vals) + 1e-9
        best = buf[:nc]  # np.maximum(play_row, dec_row)
        best[:] = ev[:nc]
        if nd:
            s = 0.0
            for j in range(nd):
                s += dec_p[j] * _card_values(ev[(1 + j) * nc : (2 + j) * nc], nc, mask, vals)
            vals[DECLINE] = s
            for c in range(nc):
                d = 0.0
                for j in range(nd):
                    d += dec_p[j] * ev[(1 + j) * nc + c]
                best[c] = max(best[c], d)
        _card_values(best, nc, mask, vals)
    top, second, action, runner_up = -np.inf, -np.inf, -1, -1
    for a in range(len(vals)):
        v = vals[a]
        if v > top:
            top, second, action, runner_up = v, top, a, action
        elif v > second:
            second, runner_up = v, a
    # a blind draw's value is a mean (_np_sum repeats numpy's pairwise order): where it is
    # close to the best, the Python _card_choice decides (a decline's sums are _expect's)
    inexact = action == BLIND or runner_up == BLIND
    if inexact and top - second <= _NEAR_TIE * max(1.0, abs(top)):
        return -1
    return action


@_njit
def _legal_count(mask):
    """(how many actions ``mask`` allows, the last of them)."""
    legal = 0
    last = -1
    for a in range(len(mask)):
        if mask[a]:
            legal += 1
            last = a
    return legal, last


@_njit
def _kb_prepare(rows, start, obs, masks, CF, CI, FWb, IWb, needb, lay, Ld, D, exchanges, deny_on,
                tcat, zcap, status, slot_of, toff, zoff, out):  # fmt: skip
    """For ``rows[start:]`` until a chunk is full: rows with one legal action, and a
    projection's exchange phases, are decided (``out``); the others are prepared in a slot of
    the work arrays (``_prepare_table``, the table at ``toff`` in ``tcat``; ``zoff`` reserves
    room for the most phi arguments the row can have). A table offset left in ``tidx`` by an
    earlier row is read only for a state that does not occur (as in ``_group_sums``) and
    stays inside ``tcat``: a chunk starts a row only with a whole table's room left. Returns (end row, slots used, table size, phi arguments)."""
    card_moves_f, ct_prof, scale, nodes, off, card_ranks, ct_thr = _cviews(CF, CI, lay)
    n, V = lay[-4], lay[-3]
    nT_max = (V + 1) * 2 * H * H * 2 * _Q
    slots = FWb.shape[0]
    used = 0
    nT = 0
    nz = 0
    k = start
    while k < len(rows):
        i = rows[k]
        mask = masks[i]
        legal, only = _legal_count(mask)
        if legal == 1 or (mask[SKIP] and not exchanges):
            out[i] = only if legal == 1 else SKIP
            status[k] = _DONE
            k += 1
            continue
        if used == slots or nT + nT_max > len(tcat):
            break
        (hv, prof, W, values, dec_p, _t, _v, _p, _o, place, thr, cards, info, tidx, _c, _f,
         _np) = _wviews(FWb[used], IWb[used], lay)  # fmt: skip
        cards_phase = not mask[SKIP]
        size = _prepare_table(obs[i], scale, off, n, V, Ld, D, card_ranks, card_moves_f, ct_thr,
                              ct_prof, exchanges, deny_on, cards_phase, mask[DECLINE] > 0, hv,
                              place, thr, prof, W, needb[used], values, dec_p, cards, info,
                              nodes, tcat[nT:], tidx)  # fmt: skip
        count = info[5] * info[1] * H * H * _Q  # the most phi arguments it can have
        if nz + count > zcap and used > 0:
            break  # the next chunk prepares it again
        status[k] = _PREPARED
        slot_of[k] = used
        toff[used] = nT
        zoff[used] = nz
        used += 1
        nT += size
        nz += count
        k += 1
    toff[used] = nT
    zoff[used] = nz
    return k, used, nT, nz


@_njit
def _kb_z(FWb, IWb, needb, lay, L, used, tcat, vcat, toff, zcat, zoff):
    """``_z_args`` for the chunk's prepared slots (``tcat``: numpy's exp of their tables),
    their phi arguments side by side in ``zcat`` from ``zoff[s]`` (within the room reserved);
    returns how many in all."""
    nz = 0
    for s in range(used):
        (hv, _pr, _W, values, _d, _t, _v, _p, _o, place, _th, cards, info, tidx, code, Fb,
         newplace) = _wviews(FWb[s], IWb[s], lay)  # fmt: skip
        t0 = toff[s]
        zoff[s] = nz
        nz += _z_args(hv, place, L, values, info[5], cards, info[1], needb[s], tcat[t0:],
                      vcat[t0:], toff[s + 1] - t0, tidx, code, Fb, newplace, zcat[nz:])  # fmt: skip
    return nz


@_njit
def _slot_values(s, cards_phase, FWb, IWb, needb, lay, zcat, zoff, nopp, exchanges, deny):
    """``_values`` of a chunk's prepared slot ``s``; returns its views of the results, a
    decline's outcome probabilities and ``info``."""
    (_hv, prof, W, values, dec_p, _t, _v, P, res, place, thr, cards, info, _ti, code, _f,
     newplace) = _wviews(FWb[s], IWb[s], lay)  # fmt: skip
    _values(place, values, info, cards, needb[s], code, newplace, zcat[zoff[s]:],
            _WEIGHTS, P, thr, prof, nopp, W, exchanges, deny, cards_phase, res)  # fmt: skip
    return res, dec_p, info


@_njit
def _kb_choose(rows, start, end, status, slot_of, masks, FWb, IWb, needb, lay, zcat, zoff,
               nopp, exchanges, deny, vals, work, out, unsure):  # fmt: skip
    """``_values`` and the choice for the chunk's prepared rows into ``out``; rows with a near
    tie get -1 and are listed in ``unsure`` (returns how many)."""
    m = 0
    for k in range(start, end):
        if status[k] != _PREPARED:
            continue
        s = slot_of[k]
        i = rows[k]
        mask = masks[i]
        cards_phase = not mask[SKIP]
        res, dec_p, info = _slot_values(s, cards_phase, FWb, IWb, needb, lay, zcat, zoff, nopp,
                                        exchanges, deny)  # fmt: skip
        if cards_phase:
            a = _choose_cards(res, info[0], info[1], dec_p, info[3] > 0, info[4] > 0, mask, vals,
                              work)  # fmt: skip
        else:  # {SKIP: 0.05, then each legal exchange's gain}: the first maximum
            a, top = SKIP, 0.05
            for c in range(H):
                if mask[EXCHANGE0 + 2 * c]:
                    for e in range(2):
                        if res[e * H + c] > top:
                            a, top = EXCHANGE0 + 2 * c + e, res[e * H + c]
        out[i] = a
        if a < 0:
            unsure[m] = k
            m += 1
    return m


@_njit
def _kb_values(rows, start, end, status, slot_of, masks, FWb, IWb, needb, lay, zcat, zoff,
               nopp, exchanges, deny, work, values):  # fmt: skip
    """``action_values`` (the Python reference) for the chunk's rows into ``values[rows[k]]``:
    the rows ``_kb_prepare`` decided (one legal action: 0; a projection's skip: 0.05), the
    exchange phases (skip 0.05 and each legal exchange's gain) and the card phases
    (``_choose_cards``' option values, ``_card_choice`` compiled)."""
    for k in range(start, end):
        i = rows[k]
        mask = masks[i]
        vals = values[i]
        vals[:] = -np.inf
        if status[k] != _PREPARED:
            legal, only = _legal_count(mask)
            if legal == 1:
                vals[only] = 0.0
            else:
                vals[SKIP] = 0.05
            continue
        s = slot_of[k]
        cards_phase = not mask[SKIP]
        res, dec_p, info = _slot_values(s, cards_phase, FWb, IWb, needb, lay, zcat, zoff, nopp,
                                        exchanges, deny)  # fmt: skip
        if not cards_phase:
            vals[SKIP] = 0.05
            for c in range(H):
                if mask[EXCHANGE0 + 2 * c]:
                    vals[EXCHANGE0 + 2 * c] = res[c]
                    vals[EXCHANGE0 + 2 * c + 1] = res[H + c]
        else:
            _choose_cards(res, info[0], info[1], dec_p, info[3] > 0, info[4] > 0, mask, vals,
                          work)  # fmt: skip


class DerbyProjection(_DerbyBase):
    """Plays the card combination with the best expected value of its own tickets."""

    name = "derby_projection"


class DerbyExchange(_DerbyBase):
    """Also values and makes exchanges and discounts the opponents' known tickets."""

    name = "derby_exchange"
    exchanges = True


def progress(state) -> float:
    """The share of Derby's turns played (the observation's ``turn``), for search's
    ``from_progress``."""
    return state.turn / state.game.total_turns


PROGRESS = {"derby": progress}

#: ``derby_rollout``: derby_exchange improved by paired rollouts from 60% of the game on (the
#: search options of ``agents.search.DeterminizedMCPolicy``; any of them can be overridden)
ROLLOUT_OPTIONS = {
    "rollouts": 16,
    "rollout": "derby_exchange",
    "base": "derby_exchange",
    "value_mode": "margin",
    "z": 2.0,
    "from_progress": 0.6,
}


def derby_rollout(game, **options):
    """derby_exchange with a rollout search late in the game (see ``agents/search.py``):
    from 60% of the turns on, every legal action is played out on the same 16 determinizations
    by a derby_exchange field, and the move differs from derby_exchange's where another
    action's mean score margin (own score minus the others' mean) beats it by two standard
    errors of the paired difference. Needs the state (``act_state``)."""
    from agents.search import DeterminizedMCPolicy  # late: search imports the registry

    if "rollout_policy" in options:  # its other name: it replaces the preset's rollout
        options["rollout"] = options.pop("rollout_policy")
    policy = DeterminizedMCPolicy(game, **{**ROLLOUT_OPTIONS, **options})
    policy.name = "derby_rollout"
    return policy


derby_rollout.options_of = "agents.search:DeterminizedMCPolicy"


POLICIES = {
    "derby_projection": DerbyProjection,
    "derby_exchange": DerbyExchange,
}
#: the strongest of them (``agents.registry.strongest_heuristic``)
STRONGEST_HEURISTIC = "derby_exchange"
#: named searches (listed by ``policy_names`` with ``search`` and ``ismcts``, not heuristics)
SEARCHES = {"derby_rollout": derby_rollout}


# ----- a per-player leaf value for search (ISMCTS ``leaf="heuristic"``) ----------------------
# The same race model, read from a (determinized) state, which holds every player's tickets:
# each racing horse ends at N(m_h, sd_h^2) as in the card model (``_race_inputs``); the chance that a player wins
# is estimated over a fixed table of normal draws (common random numbers: the same draws at
# every leaf, so leaves are compared without sampling noise between them, and no rng is used).
_LEAF_DRAWS = 32
_LEAF_Z = np.random.default_rng(20261201).standard_normal((_LEAF_DRAWS, H))
_LEAF_Z = np.concatenate([_LEAF_Z, -_LEAF_Z])  # antithetic pairs
_LEAF_TABLES: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


@_njit
def _draw_places(place, nfin, m, sd, z, x, pl):
    """The places ``pl`` of one draw: racing horse h ends at ``x[h] = m[h] + sd[h] * z[h]``
    and is placed by it after the ``nfin`` finished horses (equal ends: the lower colour
    first), finished horses keep theirs."""
    for h in range(9):
        x[h] = m[h] + sd[h] * z[h]
    for h in range(9):
        if place[h] > 0:
            pl[h] = place[h]
            continue
        ahead = 0
        for g in range(9):
            if place[g] == 0 and g != h and (x[g] > x[h] or (x[g] == x[h] and g < h)):
                ahead += 1
        pl[h] = nfin + 1 + ahead


@_njit
def _ticket_score(pl, thr, prof):
    """The score of one hand (``thr``/``prof`` per colour; threshold 0: a ticket not known,
    paying nothing) when the horses finish at places ``pl``, added in colour order."""
    t = 0.0
    for c in range(9):
        if pl[c] <= thr[c]:
            t += prof[c]
    return t


@_njit
def _win_shares(pos, place, m, sd, thr, prof, Z):
    """Each player's expected win share (ties split) when racing horse h ends at
    ``m[h] + sd[h] * Z[s, h]`` (draw s), finished horses keep their places."""
    n = thr.shape[0]
    out = np.zeros(n)
    mean = np.zeros(n)
    nfin = 0
    for h in range(9):
        nfin += place[h] > 0
    x = np.empty(9)
    pl = np.empty(9, np.int64)
    score = np.empty(n)
    for s in range(Z.shape[0]):
        _draw_places(place, nfin, m, sd, Z[s], x, pl)
        top = -1.0
        for q in range(n):
            t = _ticket_score(pl, thr[q], prof[q])
            score[q] = t
            mean[q] += t
            top = max(top, t)
        k = 0
        for q in range(n):
            k += score[q] == top
        for q in range(n):
            if score[q] == top:
                out[q] += 1.0 / k
    return out / Z.shape[0], mean / Z.shape[0]


def race_outlook(state, mode: str = "win") -> np.ndarray:
    """What a Derby position (a full state: all tickets known, e.g. a search's determinization)
    is worth to every player under the heuristics' race model, as ``state.returns(mode)``
    would give it at the end: ``"win"``: the chance to win (ties split) minus 1/n;
    ``"score"``: the expected score; ``"margin"``: the expected score minus the others' mean.
    A finished game gives its returns."""
    if state.is_terminal():
        return state.returns(mode)
    win, score = race_win_shares(state)
    n = len(win)
    if mode == "win":
        return win - 1.0 / n
    if mode == "margin":
        return (n * score - score.sum()) / (n - 1)
    return score


def race_win_shares(state) -> tuple[np.ndarray, np.ndarray]:
    """Every player's chance of winning an unfinished Derby position (a full state) under the
    heuristics' race model (sums to 1), and their expected scores."""
    g = state.game
    tables = _LEAF_TABLES.get(id(g))
    if tables is None or tables[0] is not g:
        tables = _LEAF_TABLES[id(g)] = (
            g,
            np.asarray(g.threshold, np.int64),
            np.asarray(g.profit, np.float64),
            (g.card_ranks > 0).astype(np.float64),
        )
    _, thr_of, prof_of, moves_f = tables
    hand = np.asarray(state.hand, np.int64)
    left = np.asarray(state.num_left, np.int64)
    unplayed = np.asarray(state.pile + [c for c in state.open if c >= 0], np.int64)
    f, sd, R = _race_inputs(left, unplayed, moves_f)
    if state.num_card and state.move_card < 0:  # a number played, its card still to come
        R = R + state.num_card
    pos = np.asarray(state.pos, np.float64)
    m = pos + R * f
    return _win_shares(pos, np.asarray(state.place, np.int64), m, sd, thr_of[hand], prof_of[hand],
                       _LEAF_Z)  # fmt: skip


LEAF_VALUES = {"derby": race_outlook}


# ----- the race model read from a seat's observation (the ``outlook`` feature sets) ----------
@_njit
def _open_card(row, off, card_ranks, slot):
    """The movement card in open slot ``slot`` (found by its ranks), -1 for an empty slot."""
    start = off[5] + 9 * slot
    if row[start : start + 9].max() == 0:
        return -1
    for j in range(card_ranks.shape[0]):
        same = True
        for h in range(9):
            if card_ranks[j, h] != row[start + h]:
                same = False
                break
        if same:
            return j
    return -1


@_njit
def _unplayed_cards(row, off, card_ranks, skip):
    """The movement cards still to be played, as ``race_win_shares`` counts them: the draw
    pile's (the observation's ``pile`` field) and the open cards, but card ``skip``."""
    pile = _pile_cards(row, off[6], card_ranks.shape[0])
    out = np.empty(len(pile) + 2, np.int64)
    out[: len(pile)] = pile
    k = len(pile)
    for slot in range(2):
        j = _open_card(row, off, card_ranks, slot)
        if j >= 0 and j != skip:
            out[k] = j
            k += 1
    return out[:k]


@_njit
def _model_reads(place, m, sd, thr, prof, n, Z, x, pl, o, scores_at, chances):
    """Adds over the draws ``Z`` (racing horse h ends at N(m_h, sd_h^2), ``_draw_places``)
    the sums (the caller divides by the draws, as ``_win_shares``): with ``chances``, per
    horse into ``o[0:27]`` whether ticket row 0 (the own) pays, whether row 1 (the face-up)
    would, and the place; into ``o[scores_at + q]`` the score of ticket row 0 (q = 0) and of
    rows 2.. (the opponents')."""
    nfin = 0
    for h in range(9):
        nfin += place[h] > 0
    for s in range(Z.shape[0]):
        _draw_places(place, nfin, m, sd, Z[s], x, pl)
        if chances:
            for h in range(9):
                o[h] += pl[h] <= thr[0, h]
                o[9 + h] += pl[h] <= thr[1, h]
                o[18 + h] += pl[h]
        for q in range(n):
            o[scores_at + q] += _ticket_score(pl, thr[q + (q > 0)], prof[q + (q > 0)])


@_njit
def _outlook_rows(iv, off, n, V, D, L, card_ranks, card_moves_f, Z, moves, out):
    """Per row of rounded observations ``iv``: the race model of ``race_win_shares`` (racing
    horse h ends at N(m_h, sd_h^2), ``_race_inputs``; a number played this turn whose card is
    still to come counts as still to come) over the draws ``Z``, read into what a seat knows:
    per horse the chance that the own ticket pays, that the stock's face-up ticket would
    (9) and the expected place (9), then the expected own score and each opponent's from its
    tickets the seat knows (unknown ones paying nothing), unscaled. With ``moves``, then per
    open slot the same scores after that card moved the horses by this turn's number (the one
    played, else the own face-up one; ``_moves``), as the model reads the position then (the
    card and the number no longer to come); zeros where the movement card is down or the
    slot empty."""
    hv = np.empty((1, 9))
    place = np.empty(9, np.int64)
    thr = np.empty((n + 1, 9), np.int64)
    prof = np.empty((n + 1, 9))
    left = np.empty((n, V), np.int64)
    m = np.empty(9)
    x = np.empty(9)
    pl = np.empty(9, np.int64)
    pos2 = np.empty(9)
    mv = np.empty(9, np.bool_)
    place2 = np.empty(9, np.int64)
    for r in range(iv.shape[0]):
        row = iv[r]
        o = out[r]
        o[:] = 0.0
        _read_iv(row, off, n, D, hv, place, thr, prof, left)
        f, sd, R = _race_inputs(left, _unplayed_cards(row, off, card_ranks, -1), card_moves_f)
        number_down, card_down = row[off[0]] > 0, row[off[0] + 1] > 0
        if number_down and not card_down:  # the number is down, its card to come
            R += int(row[off[1]])
        for h in range(9):
            m[h] = hv[0, h] + R * f[h]
        _model_reads(place, m, sd, thr, prof, n, Z, x, pl, o, 27, True)
        if moves and not card_down:
            _move_reads(row, off, L, card_ranks, card_moves_f, Z, n, number_down, hv[0],
                        place, left, thr, prof, m, x, pl, pos2, mv, place2, o)  # fmt: skip
        o /= Z.shape[0]


@_njit
def _move_reads(row, off, L, card_ranks, card_moves_f, Z, n, number_down, pos, place, left,
                thr, prof, m, x, pl, pos2, mv, place2, o):  # fmt: skip
    """``_outlook_rows``' scores after each open card (``moves``), summed over the draws."""
    v = int(row[off[1]]) if number_down else int(row[off[7]])
    if v <= 0:  # no number to play
        return
    if not number_down:  # the face-up number leaves the own deck
        left[0, v - 1] -= 1
    for slot in range(2):
        j = _open_card(row, off, card_ranks, slot)
        if j < 0:
            continue
        _moves(pos, place, L, v, card_ranks[j], mv, place2)
        for h in range(9):
            pos2[h] = pos[h] + v * mv[h]
        f2, sd2, R2 = _race_inputs(left, _unplayed_cards(row, off, card_ranks, j), card_moves_f)
        for h in range(9):
            m[h] = pos2[h] + R2 * f2[h]
        _model_reads(place2, m, sd2, thr, prof, n, Z, x, pl, o, 27 + n * (slot + 1), False)


def observation_outlook(game, observations: np.ndarray, moves: bool = False) -> np.ndarray:
    """Rows of Derby observations -> ``(rows, 27 + players)`` float64 (``moves``: ``27 + 3 x
    players``): per horse the chance that the seat's own ticket pays, that the stock's face-up
    ticket would, and the expected place; then the seat's expected score and each opponent's
    (seat order, from the tickets the seat knows), under the heuristics' race model read from
    the observation alone (the draws of ``race_win_shares``: deterministic, no rng). With
    ``moves``, the same scores after each open movement card played with this turn's number
    (``_outlook_rows``)."""
    obs = np.asarray(observations, np.float32)
    sl = game.observation_slices
    off = np.array([sl[name].start for name in _FIELDS], np.int64)
    iv = np.rint(obs.astype(np.float64) * game.layout.integer_scale)  # the observer's decoding
    n = game.num_players
    out = np.empty((len(obs), 27 + n * (3 if moves else 1)))
    moves_f = (game.card_ranks > 0).astype(np.float64)
    ranks = np.asarray(game.card_ranks, np.int64)
    args = (off, n, game.max_number, game.stock_size - 1, game.params["track_length"], ranks,
            moves_f, _LEAF_Z, moves)  # fmt: skip
    # rows of about 20 us each: a thread per core from 8 rows a thread on (the kernel
    # releases the GIL; each row is written by its own range only)
    parts = threads.ranges(len(out), min_rows=8)
    threads.run([functools.partial(_outlook_rows, iv[s], *args, out[s]) for s in parts])
    return out


def ismcts_preset(game) -> dict:
    """ISMCTS's ``preset="default"`` here: a search against a derby_exchange field. The others
    play as derby_exchange, its move is the PUCT prior, and a new node is valued at once by
    every player's chance to win under its race projection (random playouts say little in
    Derby). Where the search can overrule the prior it needs far more simulations than
    elsewhere, and those are the decisions whose most-visited move has under 80% of the visits
    (docs/search.md): they get up to 900 simulations, the others 100."""
    return {
        "iterations": 100,
        "opponents": "derby_exchange",
        "prior": "derby_exchange",
        "selection": "puct",
        "prior_weight": 0.8,
        "rollout_depth": 0,
        "leaf": "heuristic",
        "extend_iterations": 900,
        "settled_share": 0.8,
    }


ISMCTS_PRESETS = {"derby": ismcts_preset}
