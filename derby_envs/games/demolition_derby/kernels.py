"""Demolition Derby's rules compiled (numba): the one compiled implementation of the game.

Two users share these kernels: the batched engine (:mod:`.batch`: B games as arrays, the
vector envs) and ``dd_tactical``'s playouts (:mod:`agents.dd_fast`: one simulated turn per legal
action). Each kernel mirrors a function of the reference engine (:mod:`.engine`,
:mod:`.abilities`, :mod:`.strengths`), named in its docstring; the card abilities are
interpreted from tables built from the card set (:func:`card_tables`), so a replaced card file
needs no code change. This module holds the codes, the tables, the state's shapes and the
per-card rules (conditions, filters, Strengths, protections); :mod:`.kernels_turn` holds the
Instants, the turn and the Derby. docs/architecture.md, "Demolition Derby: one compiled rules
module", says how to change an ability in both places and which tests catch a mismatch.

The state of one game is a tuple of integer arrays (:data:`STATE_ARRAYS`, shapes from
:func:`state_shapes`): per-card flags, hands, lineups, picks, card lists, Turn protections, the
Instant tasks of the level with their options, effects and logs, scalars, and the turn's event
log. Lists are rows with their length in the last column.

No kernel allocates (``_nrt=False``: numba's reference counting would cost more than the
work; every buffer is the caller's).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.extending import overload

from derby_envs.games.demolition_derby import constants as _codes
from derby_envs.games.demolition_derby.observer import STRENGTH_CAP, TOTAL_CAP

_njit = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)

# The engine's codes, written out: numba bakes module constants into its cached machine code
# and would not see a change in another module, so a change there fails here instead.
DEPLOY, CHOOSE, OVER = 0, 1, 2
K_DISCARD, K_FACE_DOWN, K_TAKE, K_GIVE, K_GAIN, K_COPY = 0, 1, 2, 3, 4, 5
if (DEPLOY, CHOOSE, OVER, K_DISCARD, K_FACE_DOWN, K_TAKE, K_GIVE, K_GAIN, K_COPY) != (
    _codes.DEPLOY, _codes.CHOOSE, _codes.OVER, _codes.K_DISCARD, _codes.K_FACE_DOWN,
    _codes.K_TAKE, _codes.K_GIVE, _codes.K_GAIN, _codes.K_COPY,
):  # fmt: skip
    raise ImportError("demolition_derby.kernels: the engine's phase or choice codes changed")

# ----- codes of the tables ------------------------------------------------------------------
OPS = (
    "discard", "face_down", "gain", "swap", "copy_instant", "protect", "stop_instants",
    "modify_strength", "set_strength", "add_strength", "win_if",
)  # fmt: skip
O_DISCARD, O_FACE_DOWN, O_GAIN, O_SWAP, O_COPY, O_PROTECT, O_STOP, O_MODIFY, O_SET, O_ADD = range(
    10
)
O_WIN_IF = 10
SELECTS = {None: -1, "choose": 0, "all": 1, "lowest_each_player": 2, "single_strongest": 3,
           "self": 4}  # fmt: skip
SEL_CHOOSE, SEL_ALL, SEL_LOWEST, SEL_STRONGEST, SEL_SELF = range(5)
TIMINGS = {"none": 0, "instant": 1, "turn": 2, "ongoing": 3, "derby": 4}
T_INSTANT, T_TURN, T_ONGOING, T_DERBY = 1, 2, 3, 4
SCOPES = {"self": 0, "others_yours": 1, "all_yours": 2}
COND_KEYS = {"min_combatants": 0, "controls_type": 1, "min_distinct_types": 2,
             "strictly_lowest_total": 3, "only_of_type_this_turn": 4}  # fmt: skip
MAX_CONDS = 4
AGAINST = {"discard": 1, "swap": 2}
A_DISCARD, A_SWAP = 1, 2

# op table columns
(OC_OP, OC_SELECT, OC_TARGETS, OC_GIVE, OC_TAKE, OC_MAY, OC_VALUE, OC_AMOUNT, OC_PER, OC_SCOPE,
 OC_AGAINST, OC_SOURCE, OC_PILE, OC_NCOND) = range(14)  # fmt: skip
OC_COND = 14  # then (key, value) pairs
OP_COLS = OC_COND + 2 * MAX_CONDS
# filter table columns
FC_OWNER, FC_OTHER, FC_THIS_TURN, FC_FACE, FC_HAS_MIN, FC_MIN, FC_HAS_MAX, FC_MAX, FC_TYPES = range(
    9
)
F_ANY, F_YOU, F_OTHER = 0, 1, 2
# design table columns
DC_TIMING, DC_INSTANT, DC_COPIES, DC_OP0, DC_OP1, DC_GUARD = range(6)
# params
(P_N, P_D, P_S, P_T0, P_G0, P_C0, P_DECLINE, P_ACCEPT, P_PICKS, P_WINS_NEEDED, P_MAX_DERBIES,
 P_SCAP, P_TCAP) = range(13)  # fmt: skip

# ----- the packed state ---------------------------------------------------------------------
# cf rows: per card
CF_OWNER, CF_FACE_UP, CF_THIS_TURN, CF_DONE = range(4)
# lst rows: lists of cards / seats, the length in the last column
L_DISCARD, L_DISCARD_TURN, L_QUEUE, L_STOPPERS, L_MOVERS = range(5)
# sc: scalars, then per seat (blocks of n, in this order from S_WINS): the Derby wins, the
# final winners (flags), the last Derby's winners (flags), its totals, its combatants
(S_DERBY, S_TURN, S_PHASE, S_LEVEL, S_NTP, S_NTASKS, S_NEV, S_LAST_DERBY, S_LAST_REASON,
 S_EV_OVER) = range(10)  # fmt: skip
S_WINS = 10
SC_SEAT_BLOCKS = 5
B_WINS, B_FINAL, B_LAST_WINNERS, B_LAST_TOTALS, B_LAST_COMBATANTS = range(SC_SEAT_BLOCKS)
# task fields
(TK_CARD, TK_PLAYER, TK_CDESIGN, TK_DESIGN, TK_I, TK_STAGE, TK_TAKE, TK_KIND, TK_MAY, TK_MADE,
 TK_DONE, TK_NOPTS, TK_NEFF, TK_NLOG) = range(14)  # fmt: skip
TK_COLS = 14
# effect kinds (the order apply_level applies them in)
E_DISCARD, E_FACE_DOWN, E_GAIN, E_SWAP = range(4)
# Turn protections in one turn; like the tasks of one Instant level (Sizes.tc) there are at
# most as many as cards revealed in a turn (num_players x picks_per_turn <= 12)
TP_CAP = 16

# the state: a tuple of arrays, in this order (shapes: state_shapes)
(ST_CF, ST_HAND, ST_LIN, ST_PICK, ST_LST, ST_TP, ST_TK, ST_TOPT, ST_TEFF, ST_SC, ST_EV,
 ST_TLOG) = range(12)  # fmt: skip
STATE_ARRAYS = ("cf", "hand", "lin", "pick", "lst", "tp", "tk", "topt", "teff", "sc", "ev", "tlog")
# events (the state's public log ``events`` and the tasks' ``log``): rows (kind, up to five
# ints); kinds in saving._EVENT_FIELDS' order. A "derby" event holds (derby, winners as a
# bit mask, reason code).
EVENTS = (
    "turn", "reveal", "discard", "face_down", "gain", "swap", "copy", "cancel", "stopped",
    "fizzle", "decline", "swap_failed", "contested", "derby",
)  # fmt: skip
(EV_TURN, EV_REVEAL, EV_DISCARD, EV_FACE_DOWN, EV_GAIN, EV_SWAP, EV_COPY, EV_CANCEL, EV_STOPPED,
 EV_FIZZLE, EV_DECLINE, EV_SWAP_FAILED, EV_CONTESTED, EV_DERBY) = range(14)  # fmt: skip
EV_COLS = 6
#: events kept per turn (a turn's log is far shorter; past this S_EV_OVER is set and
#: ``to_state`` refuses rather than return a shortened log)
EV_CAP = 256
LOG_CAP = 4  # a task's log: a copy, then a fizzle or a decline
REASONS = ("strength", "combatants", "shared", "condition", "scenario")
R_STRENGTH, R_COMBATANTS, R_SHARED, R_CONDITION = range(4)

# the kernels' workspace: rows of one integer array (ws[0])
(W_CANDS, W_ACTS, W_VALS, W_STV, W_DSTV, W_BASE, W_MODS, W_SPECIAL, W_TOTALS, W_LEADS, W_CLIP,
 W_NL, W_TODO, W_MOVERS, W_COUNTS, W_HERE, W_KEYS, W_REVEALED, W_HAND, W_SORT, W_DUMMY, W_SEED,
 W_PILE0, W_PILE1, W_AVAIL, W_GKEYS, W_SEEN, W_TIES, W_ROWS) = range(29)  # fmt: skip

# statuses of a simulated action


def card_tables(game) -> dict[str, np.ndarray]:
    """The card set and the game's constants as the kernels' tables: ``params`` (P_*),
    ``card`` (design, type, printed Strength per card), ``des`` (DC_* per design), ``ops``
    (OC_* per op), ``fil`` (FC_* per filter)."""
    cs = game.cards
    filters: list[tuple] = []
    index: dict = {}

    def fil(f) -> int:
        if f is None:
            return -1
        if f not in index:
            types = -1 if f.types is None else sum(1 << t for t in f.types)
            index[f] = len(filters)
            filters.append((
                {"any": F_ANY, "you": F_YOU, "other": F_OTHER}[f.owner], int(f.other),
                -1 if f.this_turn is None else int(f.this_turn),
                {None: 0, "up": 1, "down": 2}[f.face],
                int(f.strength_min is not None), f.strength_min or 0,
                int(f.strength_max is not None), f.strength_max or 0, types,
            ))  # fmt: skip
        return index[f]

    ops, des = [], []
    for d in cs.designs:
        start = len(ops)
        for op in d.ops:
            if len(op.cond) > MAX_CONDS:
                raise ValueError(f"design {d.name!r}: more than {MAX_CONDS} conditions")
            row = [
                OPS.index(op.op), SELECTS[op.select], fil(op.targets), fil(op.give),
                fil(op.take), int(op.may), op.value, op.amount, fil(op.per),
                SCOPES[op.scope], sum(AGAINST[a] for a in op.against),
                int(op.source == "others"), int(op.source_pile == "discard"), len(op.cond),
            ]  # fmt: skip
            for key, v in op.cond:
                row += [COND_KEYS[key], int(v)]
            row += [0, 0] * (MAX_CONDS - len(op.cond))
            ops.append(row)
        guard = d.timing == "ongoing" and any(o.op == "protect" for o in d.ops)
        des.append([
            TIMINGS[d.timing], int(d.has_instant), int(d.copies_instant), start, len(ops),
            int(guard),
        ])  # fmt: skip
    off = game.action_offsets
    params = [
        game.num_players, game.num_designs, game.slots, off["target"], off["gain"], off["copy"],
        off["decline"], off["accept"], game.picks_per_turn, game.params["wins_needed"],
        game.params["max_derbies"], STRENGTH_CAP, TOTAL_CAP,
    ]  # fmt: skip
    return {
        "params": np.array(params, np.int64),
        "card": np.array([cs.card_design, cs.card_type, cs.card_strength], np.int64),
        "des": np.array(des, np.int64),
        "ops": np.array(ops, np.int64).reshape(-1, OP_COLS),
        "fil": np.array(filters, np.int64).reshape(-1, 9),
    }


class Sizes:
    """The capacities of one game's state and workspace arrays (from the game's facts)."""

    def __init__(self, game) -> None:
        cs = game.cards
        D, n, S = game.num_designs, game.num_players, game.slots
        self.n, self.N, self.D = n, cs.num_cards, D
        self.hc = game.hand_size  # a hand
        self.lc = S + 1  # a lineup
        self.tc = max(16, 2 * n * game.picks_per_turn)  # the tasks of a level
        self.oc = max(n * S, D) + 2  # a task's options
        self.ec = n * S + 2  # a task's effects
        # active protections: each Turn protection and each lineup card, times its design's
        # protect ops
        most = max(sum(o.op == "protect" for o in d.ops) for d in cs.designs)
        self.prot_rows = (TP_CAP + n * self.lc) * max(most, 1)
        self.width = max(self.N, self.oc, D, self.hc, 3 * n) + 2  # a workspace row

    def state_shapes(self) -> list[tuple[int, ...]]:
        """The shapes of the state arrays, in :data:`STATE_ARRAYS` order."""
        n, N = self.n, self.N
        return [
            (4, N), (n, self.hc + 1), (n, self.lc + 1), (n, 3), (5, N + 1), (TP_CAP, 3),
            (self.tc, TK_COLS), (self.tc, self.oc, 2), (self.tc, self.ec, 5),
            (S_WINS + SC_SEAT_BLOCKS * n,), (EV_CAP, EV_COLS), (self.tc, LOG_CAP, EV_COLS),
        ]  # fmt: skip

    def work_shapes(self) -> list[tuple[int, ...]]:
        """The workspace ``ws``: integer rows (W_*), the active protections, per-player rows."""
        return [(W_ROWS, self.width), (self.prot_rows, 3), (self.n, self.D)]


# ----- small list helpers (a row of a 2-D array, its length in the last column) ---------------


@_njit
def _append(row, x):
    k = row[-1]
    row[k] = x
    row[-1] = k + 1


@_njit
def _find(row, x):
    for i in range(row[-1]):
        if row[i] == x:
            return i
    return -1


@_njit
def _delete(row, i):
    k = row[-1]
    for j in range(i, k - 1):
        row[j] = row[j + 1]
    row[-1] = k - 1


@_njit
def _remove(row, x):
    i = _find(row, x)
    if i >= 0:
        _delete(row, i)


def _copy_into(a, b):
    """``a[...] = b`` for same-shaped C arrays of 1 to 3 dimensions, as plain loops (a slice
    assignment would need numba's runtime; a reshape to 1-d costs a C call per copy)."""
    raise NotImplementedError("compiled only (numba overload)")  # pragma: no cover


@overload(_copy_into, jit_options={"cache": True, "_nrt": False})
def _copy_into_impl(a, b):
    if a.ndim == 1:

        def copy1(a, b):
            for i in range(b.shape[0]):
                a[i] = b[i]

        return copy1
    if a.ndim == 2:

        def copy2(a, b):
            for i in range(b.shape[0]):
                for j in range(b.shape[1]):
                    a[i, j] = b[i, j]

        return copy2

    def copy3(a, b):
        for i in range(b.shape[0]):
            for j in range(b.shape[1]):
                for k in range(b.shape[2]):
                    a[i, j, k] = b[i, j, k]

    return copy3


@_njit
def _fill(a, value):
    """``a[:] = value`` for a 1-d array, as a plain loop (a slice assignment compiles to a
    generic loop ~5x slower on these short rows)."""
    for i in range(a.size):
        a[i] = value


@_njit
def _fill_lengths(rows, value):
    """``rows[:, -1] = value``: the length column of a block of list rows."""
    for r in range(rows.shape[0]):
        rows[r, -1] = value


@_njit
def _amax(a):
    """``a.max()`` (a method that needs numba's runtime)."""
    top = a[0]
    for i in range(1, a.size):
        top = max(top, a[i])
    return top


@_njit
def _sort_by(vals, keys, k):
    """Stable insertion sort of ``vals[:k]`` by ``keys[:k]`` (both reordered): a few items."""
    for i in range(1, k):
        v, key = vals[i], keys[i]
        j = i - 1
        while j >= 0 and keys[j] > key:
            vals[j + 1], keys[j + 1] = vals[j], keys[j]
            j -= 1
        vals[j + 1], keys[j + 1] = v, key


@_njit
def _event(ev, sc, kind, a, b, c, d, e):
    """Append an event to the turn's public log (``events.append``)."""
    k = sc[S_NEV]
    if k >= ev.shape[0]:
        sc[S_EV_OVER] = 1
        return
    ev[k, 0], ev[k, 1], ev[k, 2], ev[k, 3], ev[k, 4], ev[k, 5] = kind, a, b, c, d, e
    sc[S_NEV] = k + 1


@_njit
def _log(tlog, tk, t, kind, a, b):
    """Append an event to task ``t``'s log (``t.log.append``), published with its level."""
    k = tk[t, TK_NLOG]
    if k >= tlog.shape[1]:  # pragma: no cover - a log holds at most a copy and an end
        return
    tlog[t, k, 0], tlog[t, k, 1], tlog[t, k, 2] = kind, a, b
    tk[t, TK_NLOG] = k + 1


# ----- conditions, filters, Strengths ---------------------------------------------------------


# The small functions called per card or per op take only the arrays they read: a call that
# is not inlined passes every array of a tuple argument field by field (~30 ns a call with
# the whole state and tables, ~3x the work of these helpers).


@_njit
def _cond_ok(tb, st, op, q, source, totals, has_totals):
    """``abilities.cond_ok``: every condition of op ``op`` holds for player ``q``."""
    return _conds(tb[3], tb[1][1], st[0], st[2], op, q, source, totals, has_totals)


@_njit
def _conds(ops, ctype, cf, lin, op, q, source, totals, has_totals):
    """:func:`_cond_ok` on the arrays it reads (``ctype``: each card's type)."""
    for j in range(ops[op, OC_NCOND]):
        key, v = ops[op, OC_COND + 2 * j], ops[op, OC_COND + 2 * j + 1]
        if not _cond_key(ctype, cf, lin, key, v, q, source, totals, has_totals):
            return False
    return True


@_njit
def _cond_key(ctype, cf, lin, key, v, q, source, totals, has_totals):
    """One condition (COND_KEYS) with value ``v``."""
    k = lin[q, -1]
    if key == 0:  # min_combatants
        return k >= v
    if key == 1:  # controls_type
        for i in range(k):
            if ctype[lin[q, i]] == v:
                return True
        return False
    if key == 2:  # min_distinct_types
        seen = 0
        for i in range(k):
            seen |= 1 << ctype[lin[q, i]]
        count = 0
        while seen:
            count += seen & 1
            seen >>= 1
        return count >= v
    if key == 3:  # strictly_lowest_total (below every other total)
        if not has_totals:
            return False
        n = lin.shape[0]
        low, same = totals[0], 0
        for r in range(n):
            low = min(low, totals[r])
            same += totals[r] == totals[q]
        return totals[q] == low and same == 1
    # only_of_type_this_turn
    for r in range(lin.shape[0]):
        for i in range(lin[r, -1]):
            c = lin[r, i]
            if cf[CF_THIS_TURN, c] and ctype[c] == v and c != source:
                return False
    return True


@_njit
def _static_ok(fil, ctype, cf, f, c, source):
    """``match_static`` without the owner test."""
    if fil[f, FC_OTHER] and c == source:
        return False
    tt = fil[f, FC_THIS_TURN]
    if tt >= 0 and cf[CF_THIS_TURN, c] != tt:
        return False
    face = fil[f, FC_FACE]
    if (face == 1 and not cf[CF_FACE_UP, c]) or (face == 2 and cf[CF_FACE_UP, c]):
        return False
    types = fil[f, FC_TYPES]
    return types < 0 or (types >> ctype[c]) & 1 == 1


@_njit
def _owner_ok(fil, f, q, player):
    o = fil[f, FC_OWNER]
    return not ((o == F_YOU and q != player) or (o == F_OTHER and q == player))


@_njit
def _bounds_ok(fil, f, v):
    if fil[f, FC_HAS_MIN] and v < fil[f, FC_MIN]:
        return False
    return not (fil[f, FC_HAS_MAX] and v > fil[f, FC_MAX])


@_njit
def _lineup_strengths(card, des, ops, fil, cf, lin, q, derby, out, base, mods):
    """``strengths.lineup_strengths`` of player ``q``, written into ``out`` by card
    (``base``, ``mods``: scratch)."""
    ctype = card[1]
    k = lin[q, -1]
    for i in range(k):
        base[i] = card[2, lin[q, i]]
        mods[i] = 0
    for i in range(k):
        c = lin[q, i]
        if not cf[CF_FACE_UP, c]:
            continue
        d = card[0, c]
        timing = des[d, DC_TIMING]
        if timing == T_ONGOING:
            for op in range(des[d, DC_OP0], des[d, DC_OP1]):
                if ops[op, OC_OP] == O_MODIFY and _conds(
                    ops, ctype, cf, lin, op, q, c, base, False
                ):
                    _modify(ops, fil, ctype, cf, lin, q, i, op, mods)
        elif derby and timing == T_DERBY:
            for op in range(des[d, DC_OP0], des[d, DC_OP1]):
                kind = ops[op, OC_OP]
                if kind == O_SET and _conds(ops, ctype, cf, lin, op, q, c, base, False):
                    base[i] = ops[op, OC_VALUE]
                elif kind == O_ADD and _conds(ops, ctype, cf, lin, op, q, c, base, False):
                    base[i] += ops[op, OC_VALUE]
    for i in range(k):
        v = base[i] + mods[i]
        out[lin[q, i]] = v if v > 0 else 0


@_njit
def _modify(ops, fil, ctype, cf, lin, q, i, op, mods):
    """A ``modify_strength`` op of the card in slot ``i`` of ``q``'s lineup, into ``mods``."""
    k = lin[q, -1]
    amt = ops[op, OC_AMOUNT]
    per = ops[op, OC_PER]
    if per >= 0:  # counted over the combatants q controls
        if fil[per, FC_OWNER] == F_OTHER:
            amt = 0
        else:
            count = 0
            for j in range(k):
                count += _static_ok(fil, ctype, cf, per, lin[q, j], lin[q, i])
            amt *= count
    scope = ops[op, OC_SCOPE]
    if scope == 0:
        mods[i] += amt
    else:
        for j in range(k):
            if j != i or scope == 2:
                mods[j] += amt


@_njit
def _strengths(tb, st, derby, ws):
    """Every card's Strength (printed outside the lineups), as ``compute_strengths``, into
    a workspace row (W_STV; with ``derby``, W_DSTV). The current Strengths are kept while
    the lineups do (``s._str``, the reference's cache): W_STV's last entry says they are
    valid, :func:`_touch` drops them (every change of a lineup, a face, "deployed this
    turn", or another state put in the workspace)."""
    card, des, ops, fil = tb[1], tb[2], tb[3], tb[4]
    cf, lin = st[0], st[2]
    out = ws[0][W_DSTV if derby else W_STV]
    if not derby and out[-1]:
        return
    base, mods = ws[0][W_BASE], ws[0][W_MODS]
    N = card.shape[1]
    _copy_into(out[:N], card[2])
    for q in range(lin.shape[0]):
        _lineup_strengths(card, des, ops, fil, cf, lin, q, derby, out, base, mods)
    if not derby:
        out[-1] = 1


@_njit
def _touch(ws):
    """The current Strengths in the workspace are no longer valid (see :func:`_strengths`)."""
    ws[0][W_STV, -1] = 0


@_njit
def _derby_scores(tb, st, ws):
    """The totals with Derby abilities (W_TOTALS) and flags of the players who win by a
    Derby condition (W_SPECIAL), as ``compute_derby_scores``, into workspace rows."""
    card, des, ops = tb[1], tb[2], tb[3]
    cf, lin = st[0], st[2]
    _strengths(tb, st, True, ws)
    stv = ws[0][W_DSTV]
    n = lin.shape[0]
    totals = ws[0][W_TOTALS][:n]
    special = ws[0][W_SPECIAL][:n]
    for q in range(n):
        totals[q] = 0
        for i in range(lin[q, -1]):
            totals[q] += stv[lin[q, i]]
    for q in range(n):
        special[q] = 0
        for i in range(lin[q, -1]):
            c = lin[q, i]
            if not cf[CF_FACE_UP, c]:
                continue
            d = card[0, c]
            if des[d, DC_TIMING] != T_DERBY:
                continue
            for op in range(des[d, DC_OP0], des[d, DC_OP1]):
                if ops[op, OC_OP] == O_WIN_IF and _cond_ok(tb, st, op, q, c, totals, True):
                    special[q] = 1


# ----- protections and targets ------------------------------------------------------------------


@_njit
def _protectors(tb, st, out, ws):
    """Active protections as rows (player, source card, op) in ``out``; returns the count."""
    card, des, ops = tb[1], tb[2], tb[3]
    cf, lin, tp, sc = st[0], st[2], st[5], st[9]
    k = 0
    for i in range(sc[S_NTP]):
        p, src, d = tp[i, 0], tp[i, 1], tp[i, 2]
        for op in range(des[d, DC_OP0], des[d, DC_OP1]):
            if ops[op, OC_OP] == O_PROTECT:
                out[k, 0], out[k, 1], out[k, 2] = p, src, op
                k += 1
    dummy = ws[0][W_DUMMY]
    for q in range(lin.shape[0]):
        for i in range(lin[q, -1]):
            c = lin[q, i]
            d = card[0, c]
            if des[d, DC_GUARD] and cf[CF_FACE_UP, c]:
                for op in range(des[d, DC_OP0], des[d, DC_OP1]):
                    if ops[op, OC_OP] == O_PROTECT and (
                        ops[op, OC_NCOND] == 0 or _cond_ok(tb, st, op, q, c, dummy, False)
                    ):
                        out[k, 0], out[k, 1], out[k, 2] = q, c, op
                        k += 1
    return k


@_njit
def _protected(ops, fil, ctype, cf, prot, nprot, stv, c, against, actor):
    """Whether card ``c`` cannot be discarded / swapped (``against``) by ``actor``."""
    owner = cf[CF_OWNER]
    for i in range(nprot):
        p, src, op = prot[i, 0], prot[i, 1], prot[i, 2]
        if ops[op, OC_AGAINST] & against and (ops[op, OC_SOURCE] == 0 or actor != p):
            f = ops[op, OC_TARGETS]
            if (
                _owner_ok(fil, f, owner[c], p)
                and _static_ok(fil, ctype, cf, f, c, src)
                and _bounds_ok(fil, f, stv[c])
            ):
                return True
    return False


@_njit
def _lineup_cards(fil, ctype, cf, lin, f, player, source, stv, out):
    """The lineup cards matching filter ``f`` (``abilities.lineup_cards``) into ``out``."""
    k = 0
    for q in range(lin.shape[0]):
        if not _owner_ok(fil, f, q, player):
            continue
        for i in range(lin[q, -1]):
            c = lin[q, i]
            if _static_ok(fil, ctype, cf, f, c, source) and _bounds_ok(fil, f, stv[c]):
                out[k] = c
                k += 1
    return k


@_njit
def _target_action(params, owner, lin, c, player):
    """``abilities.target_action``: the action that targets card ``c``."""
    q = owner[c]
    r = (q - player) % params[P_N]
    return params[P_T0] + r * params[P_S] + _find(lin[q], c)
