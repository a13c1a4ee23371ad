"""The compiled playouts of ``dd_tactical``: one simulated turn per legal action, in numba.

``DDTactical.action_values`` simulates, for each of its determinizations, every legal action
to the end of the turn with noisy-greedy answers of the other players and scores the result.
This module runs those simulations compiled, on a packed copy of the position
(:func:`pack`: plain integer arrays), with the rules of :mod:`derby_envs.games.demolition_derby`
(reveal, Instant levels and their effects, protections, Strengths, Derby scoring) interpreted
from tables compiled from the card set (:class:`Tables`), so a replaced card file needs no code
change. It computes the same numbers as the Python playout, bit for bit:

* the kernels draw from the caller's own generator (:mod:`agents.np_draws`: its bit
  generator's C functions, numpy's algorithms on the raw words) exactly what the Python
  playouts draw, in their order: each determinization's future-chance seed and re-deal
  (:func:`_redeal`; the caller re-deals in Python where Mekk Mania re-draws the deck or
  other players' ability choices are re-drawn), the simulated players' noise and the
  integer tie-breaks of their noisy scores;
* a move of mine that ends the Derby is handed back with where it happened: the caller
  deals the next Derby (``Tables.deal``) and the kernels go on into its first turn.

The engine stays the reference: the recorded traces (tests/test_heuristic_traces_dd_kd.py)
and a test of the values on random positions (tests/test_dd_fast.py) hold both paths to the
same choices and the same draws.
"""

from __future__ import annotations

import numpy as np

try:  # optional: without numba the Python playouts run (same choices, ~8-10x slower)
    import numba

    # _nrt=False: without numba's runtime, so without its reference counting. Every array a
    # compiled call receives otherwise costs an atomic increment and decrement, which here
    # was ~7x the work itself (the helpers are small and called per card). The kernels
    # therefore allocate nothing: every buffer is a view of the caller's ``Tables.mem``.
    _njit = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    numba = None

    def _njit(fn):
        return fn


from agents import np_draws
from derby_envs.core.seats import seat_orders
from derby_envs.games.demolition_derby import constants as _codes
from derby_envs.games.demolition_derby.observer import STRENGTH_CAP, TOTAL_CAP

if np_draws.numba is None:  # pragma: no cover - numba without what np_draws needs (a private
    numba = None  # module of numba's): the Python playouts, not kernels that cannot compile

# The engine's codes, written out: numba bakes module constants into its cached machine code
# and would not see a change in another module, so a change there fails here instead.
DEPLOY, CHOOSE, OVER = 0, 1, 2
K_DISCARD, K_FACE_DOWN, K_TAKE, K_GIVE, K_GAIN, K_COPY = 0, 1, 2, 3, 4, 5
if (DEPLOY, CHOOSE, OVER, K_DISCARD, K_FACE_DOWN, K_TAKE, K_GIVE, K_GAIN, K_COPY) != (
    _codes.DEPLOY, _codes.CHOOSE, _codes.OVER, _codes.K_DISCARD, _codes.K_FACE_DOWN,
    _codes.K_TAKE, _codes.K_GIVE, _codes.K_GAIN, _codes.K_COPY,
):  # fmt: skip
    raise ImportError("agents.dd_fast: the engine's phase or choice codes changed")

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
# sc: scalars, then the wins and the final winners (flags) per seat
S_DERBY, S_TURN, S_PHASE, S_LEVEL, S_NTP, S_NTASKS = range(6)
S_WINS = 8
# task fields
(TK_CARD, TK_PLAYER, TK_CDESIGN, TK_DESIGN, TK_I, TK_STAGE, TK_TAKE, TK_KIND, TK_MAY, TK_MADE,
 TK_DONE, TK_NOPTS, TK_NEFF) = range(13)  # fmt: skip
TK_COLS = 13
# effect kinds (the order apply_level applies them in)
E_DISCARD, E_FACE_DOWN, E_GAIN, E_SWAP = range(4)
# Turn protections in one turn; like the tasks of one Instant level (Tables.tc) there are at
# most as many as cards revealed in a turn (num_players x picks_per_turn <= 12)
TP_CAP = 16

# the kernels' workspace: rows of one integer array (ws[0]), a view of Tables.mem
(W_CANDS, W_ACTS, W_VALS, W_STV, W_DSTV, W_BASE, W_MODS, W_SPECIAL, W_TOTALS, W_LEADS, W_CLIP,
 W_NL, W_TODO, W_MOVERS, W_COUNTS, W_HERE, W_KEYS, W_REVEALED, W_HAND, W_SORT, W_DUMMY, W_SEED,
 W_PILE0, W_PILE1, W_AVAIL, W_GKEYS, W_SEEN, W_TIES, W_ROWS) = range(29)  # fmt: skip

# statuses of a simulated action
OK, NEXT_DERBY = 0, 1

F32_03 = float(np.float32(0.3))  # the observation's "Instant pending" weight (see DDTactical)


class Tables:
    """The card set and game constants as arrays for the kernels (built once per agent)."""

    def __init__(self, game, value: list[float], strength: list[float], gives_self: list[bool]):
        self._args = (game, value, strength, gives_self)
        cs = game.cards
        D, N, n, S = game.num_designs, cs.num_cards, game.num_players, game.slots
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
        self.card = np.array([cs.card_design, cs.card_type, cs.card_strength], np.int64)
        self.des = np.array(des, np.int64)
        self.ops = np.array(ops, np.int64).reshape(-1, OP_COLS)
        self.fil = np.array(filters, np.int64).reshape(-1, 9)
        self.hc = game.hand_size
        self.lc = S + 1
        self.tc = max(16, 2 * n * game.picks_per_turn)
        self.oc = max(n * S, D) + 2
        self.ec = n * S + 2
        # active protections: each Turn protection and each lineup card, times its design's
        # protect ops
        most = max(sum(o.op == "protect" for o in d.ops) for d in cs.designs)
        self.prot_rows = (TP_CAP + n * self.lc) * max(most, 1)
        self.params = np.array([
            n, D, S, off["target"], off["gain"], off["copy"], off["decline"], off["accept"],
            game.picks_per_turn, game.params["wins_needed"], game.params["max_derbies"],
            STRENGTH_CAP, TOTAL_CAP,
        ], np.int64)  # fmt: skip
        self.fvals = np.array([value, strength], np.float64)  # per design: greedy values
        gives = np.array(gives_self, np.int64)
        self.n, self.N = n, N
        # Every integer array the kernels read or write is a view of one buffer, ``mem``,
        # laid out by ``lay`` (offset and shape of each, in the order of ``shapes``): a call
        # from Python unboxes each array argument (~0.25 us apiece), and there are 21.
        width = max(N, self.oc, D, self.hc, 3 * n) + 2
        state = [
            (4, N), (n, self.hc + 1), (n, self.lc + 1), (n, 3), (5, N + 1), (TP_CAP, 3),
            (self.tc, TK_COLS), (self.tc, self.oc, 2), (self.tc, self.ec, 5),
            (S_WINS + 2 * n,),
        ]  # fmt: skip
        # each state array twice, [0] the packed determinization, [1] the playout's copy
        shapes = [
            self.params.shape, self.card.shape, self.des.shape, self.ops.shape, self.fil.shape,
            gives.shape, *[(2, *x) for x in state], (W_ROWS, width),
            (self.prot_rows, 3), (n, D), (n, self.hc + 1),
            (game.num_actions,), (3, max(N, n) + 1),
        ]  # fmt: skip
        sizes = [int(np.prod(x)) for x in shapes]
        offsets = np.cumsum([0, *sizes])
        self.mem = np.zeros(int(offsets[-1]), np.int64)
        self.lay = np.zeros((len(shapes), 5), np.int64)
        views = []
        for k, shape in enumerate(shapes):
            self.lay[k, 0] = offsets[k]
            self.lay[k, 1 : 1 + len(shape)] = shape
            views.append(self.mem[offsets[k] : offsets[k + 1]].reshape(shape))
        tables = (self.params, self.card, self.des, self.ops, self.fil, gives)
        for view, table in zip(views, tables, strict=False):  # the tables come first
            view[...] = table
        self.base = tuple(v[0] for v in views[6:16])  # the packed determinization (see pack)
        self.flat = tuple(v.reshape(-1) for v in self.base)  # the same, flat views
        self.deal = views[19]  # the next Derby's hands (deal[0, -1] < 0: not dealt)
        self.acts = views[20]  # the actions to simulate
        # the re-deal's unknown cards, its scratch, the seats dealt to (lengths last)
        self.redeal = views[21]
        self.seed = views[16][W_SEED, :1]  # the future-chance seed of the last re-deal
        self.seen: list = [None, None, None]  # what pack last converted (see pack)

    def __reduce__(self) -> tuple:
        """Copied and pickled as built anew: the arrays are views of ``mem``, which a copy
        of each would turn into separate arrays that the kernels never see."""
        return (Tables, self._args)


_KIND_CODE = {"discard": E_DISCARD, "face_down": E_FACE_DOWN, "gain": E_GAIN, "swap": E_SWAP}


def pack_redeal(s, player: int, T: Tables) -> None:
    """What the kernels' re-deal of ``s`` for ``player`` reads (:func:`_redeal`): the cards
    ``player`` cannot place, in ``unknown_cards``' order, and the seats holding them."""
    unknown = s.unknown_cards(player)
    seats = seat_orders(T.n)[player][s.turn + 1 :]
    rd = T.redeal
    rd[0, : len(unknown)] = unknown
    rd[0, -1] = len(unknown)
    rd[2, : len(seats)] = seats
    rd[2, -1] = len(seats)


def pack_hands(s, T: Tables) -> None:
    """:func:`pack` of ``s`` when it differs from the state packed last in its hands and
    deploy picks only (another re-deal of the same position, without tasks)."""
    T.flat[1][:] = _rows(s.hands, T.hc + 1)
    T.flat[3][:] = _rows(s.picks, 3)


def pack(s, T: Tables) -> None:
    """The fields of state ``s`` a simulated turn reads, into the kernels' arrays (``T.base``,
    in place). Entries past a list's length and tasks past their count are left as they
    were: nothing reads them."""
    n, N = T.n, T.N
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc = T.base
    # The per-card flags, the lineups and the piles are converted only when they differ
    # from the last state packed (a list comparison costs a fraction of a conversion): the
    # determinizations of one position re-dealt in Python, an agent object playing several
    # seats. (A field of ``opponents="dd_tactical"`` has an agent per seat: 2-4% hits.)
    # One conversion per array; the flag lists as bytes (True/False are bytes 1/0).
    seen = T.seen
    flags = (s.owner, s.face_up, s.this_turn, s.instant_done)
    if flags != seen[0]:
        cf[CF_OWNER] = s.owner
        cf[1:] = np.frombuffer(bytes(s.face_up + s.this_turn + s.instant_done), np.uint8).reshape(
            3, N
        )
        seen[0] = tuple(x[:] for x in flags)
    flat = T.flat
    flat[1][:] = _rows(s.hands, T.hc + 1)
    if s.lineups != seen[1]:
        flat[2][:] = _rows(s.lineups, T.lc + 1)
        seen[1] = [x[:] for x in s.lineups]
    flat[3][:] = _rows(s.picks, 3)
    lists = (s.discard, s.discard_turn, s.queue, s.stoppers, s.movers)
    if lists != seen[2]:
        for r, x in enumerate(lists):  # mostly padding: only the entries are converted
            if x:
                lst[r, : len(x)] = x
        lst[:, -1] = [len(x) for x in lists]
        seen[2] = tuple(x[:] for x in lists)
    if s.turn_protect:
        tp[: len(s.turn_protect)] = s.turn_protect
    for i, t in enumerate(s.tasks):
        tk[i] = (
            t.card,
            t.player,
            t.card_design,
            t.design,
            t.i,
            t.stage,
            t.take,
            t.kind,
            t.may,
            t.made,
            t.done,
            0 if t.opts is None else len(t.opts),
            len(t.effects),
        )
        if t.opts is not None:
            topt[i, : len(t.opts)] = list(t.opts.items())
        for j, e in enumerate(t.effects):
            teff[i, j, 0] = _KIND_CODE[e[0]]
            teff[i, j, 1 : len(e)] = e[1:]
    won = [0] * n
    for q in s.final_winners:
        won[q] = 1
    sc[...] = (
        s.derby, s.turn, s.phase, s.level, len(s.turn_protect), len(s.tasks), 0, 0, *s.wins,
        *won,
    )  # fmt: skip


def _rows(lists, width: int) -> list[int]:
    """Lists as rows of ``width`` entries, flat (numpy converts a flat list of ints ~2x
    faster than nested ones): each padded, its length in the last entry."""
    pad = [0] * width
    out: list[int] = []
    for x in lists:
        out += x
        out += pad[: width - 1 - len(x)]
        out.append(len(x))
    return out


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


@_njit
def _copy_into(a, b):
    """``a[...] = b`` for same-shaped C arrays (a slice assignment would need numba's
    runtime)."""
    fa, fb = a.reshape(a.size), b.reshape(b.size)
    for i in range(fb.size):
        fa[i] = fb[i]


@_njit
def _load(st, base):
    """Copy the state ``base`` into ``st`` (arrays of the same shapes): the tasks' rows only
    as far as they are in use (nothing reads past the counts)."""
    for a, b in ((st[0], base[0]), (st[1], base[1]), (st[2], base[2]), (st[3], base[3]),
                 (st[4], base[4]), (st[5], base[5])):  # fmt: skip
        _copy_into(a, b)
    _copy_into(st[9], base[9])
    nt = base[9][S_NTASKS]
    if nt:
        _copy_into(st[6][:nt], base[6][:nt])
        _copy_into(st[7][:nt], base[7][:nt])
        _copy_into(st[8][:nt], base[8][:nt])


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
    a workspace row (W_STV; with ``derby``, W_DSTV)."""
    card, des, ops, fil = tb[1], tb[2], tb[3], tb[4]
    cf, lin = st[0], st[2]
    out = ws[0][W_DSTV if derby else W_STV]
    base, mods = ws[0][W_BASE], ws[0][W_MODS]
    N = card.shape[1]
    _copy_into(out[:N], card[2])
    for q in range(lin.shape[0]):
        _lineup_strengths(card, des, ops, fil, cf, lin, q, derby, out, base, mods)


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


# ----- Instants -------------------------------------------------------------------------------


@_njit
def _add_effect(teff, tk, t, kind, a, b, c, d):
    j = tk[t, TK_NEFF]
    teff[t, j, 0], teff[t, j, 1], teff[t, j, 2], teff[t, j, 3], teff[t, j, 4] = kind, a, b, c, d
    tk[t, TK_NEFF] = j + 1


@_njit
def _record(tb, st, t, kind, value):
    """``abilities.record``: apply a chosen ``value`` to task ``t``."""
    ops, des = tb[3], tb[2]
    tk, teff = st[6], st[8]
    card = tk[t, TK_CARD]
    if kind == K_DISCARD:
        _add_effect(teff, tk, t, E_DISCARD, value, card, 0, 0)
    elif kind == K_FACE_DOWN:
        _add_effect(teff, tk, t, E_FACE_DOWN, value, card, 0, 0)
    elif kind == K_GAIN:
        op = des[tk[t, TK_DESIGN], DC_OP0] + tk[t, TK_I]
        _add_effect(teff, tk, t, E_GAIN, tk[t, TK_PLAYER], value, card, ops[op, OC_PILE])
    elif kind == K_COPY:
        tk[t, TK_DESIGN] = value
        tk[t, TK_I] = 0
        return
    elif kind == K_TAKE:
        tk[t, TK_TAKE] = value
        tk[t, TK_STAGE] = 1
        return
    elif kind == K_GIVE:
        _add_effect(teff, tk, t, E_SWAP, tk[t, TK_PLAYER], value, tk[t, TK_TAKE], card)
        tk[t, TK_STAGE] = 0
        tk[t, TK_TAKE] = -1
    tk[t, TK_I] += 1


@_njit
def _offer(tb, st, t, op, acts, vals, k, kind):
    """``abilities.offer`` of the ``k`` options (``acts`` -> ``vals``). Returns whether the
    task goes on at once."""
    params, ops = tb[0], tb[3]
    tk, topt = st[6], st[7]
    if k == 0:
        tk[t, TK_DONE] = 1  # fizzles
        return False
    may = ops[op, OC_MAY]
    if may:
        acts[k] = params[P_DECLINE]
        vals[k] = -1
        k += 1
    if k > 1:
        _pend(tk, topt, t, acts, vals, k, kind, may)
        return False
    _record(tb, st, t, kind, vals[0])
    return True


@_njit
def _pend(tk, topt, t, acts, vals, k, kind, may):
    """Task ``t`` waits for a choice among the ``k`` options (``t.opts, t.kind, t.may``)."""
    for j in range(k):
        topt[t, j, 0] = acts[j]
        topt[t, j, 1] = vals[j]
    tk[t, TK_NOPTS] = k
    tk[t, TK_KIND] = kind
    tk[t, TK_MAY] = may


@_njit
def _targets_of(tb, st, cards, k, player, acts, vals):
    """``abilities.target_options`` of ``cards[:k]``: actions and cards."""
    for j in range(k):
        acts[j] = _target_action(tb[0], st[0][CF_OWNER], st[2], cards[j], player)
        vals[j] = cards[j]
    return k


@_njit
def _swap_gives(tb, st, op, t, prot, nprot, stv, out):
    """``abilities.swap_gives``: what ``t``'s controller may give, into ``out``."""
    ops, fil, ctype = tb[3], tb[4], tb[1][1]
    cf, lin, tk = st[0], st[2], st[6]
    owner = cf[CF_OWNER]
    player, src = tk[t, TK_PLAYER], tk[t, TK_CARD]
    g = ops[op, OC_GIVE]
    if g < 0:
        if owner[src] == player:
            out[0] = src
            return 1
        return 0
    k = _lineup_cards(fil, ctype, cf, lin, g, player, src, stv, out)
    m = 0
    for j in range(k):
        c = out[j]
        if owner[c] == player and not _protected(
            ops, fil, ctype, cf, prot, nprot, stv, c, A_SWAP, player
        ):
            out[m] = c
            m += 1
    return m


@_njit
def _advance(tb, st, t, ws):
    """``abilities.advance``: run task ``t`` until it needs a decision or is done."""
    des, ops = tb[2], tb[3]
    tk = st[6]
    dummy = ws[0][W_DUMMY]
    # the effects are applied when the level is: the lineups, hence the Strengths and
    # the protections, stay as they are while a task runs
    _strengths(tb, st, False, ws)
    nprot = _protectors(tb, st, ws[1], ws)
    while not tk[t, TK_DONE] and tk[t, TK_NOPTS] == 0:
        d = tk[t, TK_DESIGN]
        if tk[t, TK_I] >= des[d, DC_OP1] - des[d, DC_OP0]:
            tk[t, TK_DONE] = 1
            return
        op = des[d, DC_OP0] + tk[t, TK_I]
        if ops[op, OC_NCOND] and not _cond_ok(
            tb, st, op, tk[t, TK_PLAYER], tk[t, TK_CARD], dummy, False
        ):
            tk[t, TK_I] += 1
            continue
        kind = ops[op, OC_OP]
        if kind == O_DISCARD or kind == O_FACE_DOWN:
            goes_on = _step_remove(tb, st, ws, t, op, nprot)
        elif kind == O_GAIN:
            goes_on = _step_gain(tb, st, ws, t, op)
        elif kind == O_SWAP:
            goes_on = _step_swap(tb, st, ws, t, op, nprot)
        elif kind == O_COPY:
            goes_on = _step_copy(tb, st, ws, t, op)
        else:  # not an Instant op (the card set's validation rules it out)
            tk[t, TK_DONE] = 1
            goes_on = False
        if not goes_on:
            return


# One step of an Instant per op kind (``abilities._step_*``): True if the task goes on at
# once, False if it stops here (a decision is pending, or the ability fizzled).


@_njit
def _step_remove(tb, st, ws, t, op, nprot):
    """``discard`` / ``face_down``: the ability's own card, a chosen target or a mass
    selection (discards spare protected cards)."""
    ops, fil, ctype = tb[3], tb[4], tb[1][1]
    cf, lin, tk, teff = st[0], st[2], st[6], st[8]
    owner = cf[CF_OWNER]
    wi, prot = ws[0], ws[1]
    cands, acts, vals, stv = wi[W_CANDS], wi[W_ACTS], wi[W_VALS], wi[W_STV]
    player, src = tk[t, TK_PLAYER], tk[t, TK_CARD]
    discard = ops[op, OC_OP] == O_DISCARD
    effect = E_DISCARD if discard else E_FACE_DOWN
    sel = ops[op, OC_SELECT]
    if sel == SEL_SELF:
        if owner[src] >= 0 and not (
            discard and _protected(ops, fil, ctype, cf, prot, nprot, stv, src, A_DISCARD, player)
        ):
            _add_effect(teff, tk, t, effect, src, src, 0, 0)
        tk[t, TK_I] += 1
        return True
    k = _lineup_cards(fil, ctype, cf, lin, ops[op, OC_TARGETS], player, src, stv, cands)
    if sel == SEL_CHOOSE:
        if discard and nprot:
            m = 0
            for j in range(k):
                if not _protected(
                    ops, fil, ctype, cf, prot, nprot, stv, cands[j], A_DISCARD, player
                ):
                    cands[m] = cands[j]
                    m += 1
            k = m
        _targets_of(tb, st, cands, k, player, acts, vals)
        return _offer(tb, st, t, op, acts, vals, k, K_DISCARD if discard else K_FACE_DOWN)
    k = _mass_select(st, sel, cands, k, stv, wi[W_HERE])
    guarded = discard and nprot > 0
    for j in range(k):
        c = cands[j]
        if not guarded or not _protected(
            ops, fil, ctype, cf, prot, nprot, stv, c, A_DISCARD, player
        ):
            _add_effect(teff, tk, t, effect, c, src, 0, 0)
    tk[t, TK_I] += 1
    return True


@_njit
def _add_option(acts, vals, k, a, v):
    """Add option ``a`` -> ``v`` unless ``a`` is among the first ``k`` (a dict's insertion
    order); returns the new count."""
    for i in range(k):
        if acts[i] == a:
            return k
    acts[k] = a
    vals[k] = v
    return k + 1


@_njit
def _step_gain(tb, st, ws, t, op):
    """``gain``: a design from this turn's discards (or the whole pile)."""
    params, card, ops, fil = tb[0], tb[1], tb[3], tb[4]
    lst = st[4]
    acts, vals = ws[0][W_ACTS], ws[0][W_VALS]
    f = ops[op, OC_TARGETS]
    row = lst[L_DISCARD] if ops[op, OC_PILE] else lst[L_DISCARD_TURN]
    k = 0
    for j in range(row[-1]):
        c = row[j]
        if f >= 0:  # ``abilities.match_pile``: the printed Strength
            if fil[f, FC_TYPES] >= 0 and not (fil[f, FC_TYPES] >> card[1, c]) & 1:
                continue
            if not _bounds_ok(fil, f, card[2, c]):
                continue
        k = _add_option(acts, vals, k, params[P_G0] + card[0, c], card[0, c])
    return _offer(tb, st, t, op, acts, vals, k, K_GAIN)


@_njit
def _step_swap(tb, st, ws, t, op, nprot):
    """``swap``: choose what to take (stage 0), then what to give (stage 1)."""
    ops, fil, ctype = tb[3], tb[4], tb[1][1]
    cf, lin, tk, topt, teff = st[0], st[2], st[6], st[7], st[8]
    owner = cf[CF_OWNER]
    wi, prot = ws[0], ws[1]
    cands, acts, vals, stv = wi[W_CANDS], wi[W_ACTS], wi[W_VALS], wi[W_STV]
    player, src = tk[t, TK_PLAYER], tk[t, TK_CARD]
    if tk[t, TK_STAGE] == 0:
        k = _lineup_cards(fil, ctype, cf, lin, ops[op, OC_TAKE], player, src, stv, cands)
        m = 0
        for j in range(k):
            c = cands[j]
            if owner[c] != player and not _protected(
                ops, fil, ctype, cf, prot, nprot, stv, c, A_SWAP, player
            ):
                cands[m] = c
                m += 1
        # the gives go to vals for now (only their number is read here)
        if m == 0 or _swap_gives(tb, st, op, t, prot, nprot, stv, vals) == 0:
            tk[t, TK_DONE] = 1  # fizzles
            return False
        _targets_of(tb, st, cands, m, player, acts, vals)
        return _offer(tb, st, t, op, acts, vals, m, K_TAKE)
    k = _swap_gives(tb, st, op, t, prot, nprot, stv, cands)
    _targets_of(tb, st, cands, k, player, acts, vals)
    if k > 1:
        _pend(tk, topt, t, acts, vals, k, K_GIVE, 0)
        return False
    _add_effect(teff, tk, t, E_SWAP, player, vals[0], tk[t, TK_TAKE], src)
    tk[t, TK_STAGE] = 0
    tk[t, TK_TAKE] = -1
    tk[t, TK_I] += 1
    return True


@_njit
def _step_copy(tb, st, ws, t, op):
    """``copy_instant``: the Instant of a face-up combatant (never another copy ability)."""
    params, card, des, ops, fil = tb[0], tb[1], tb[2], tb[3], tb[4]
    cf, lin, tk = st[0], st[2], st[6]
    cands, acts, vals, stv = ws[0][W_CANDS], ws[0][W_ACTS], ws[0][W_VALS], ws[0][W_STV]
    player, src = tk[t, TK_PLAYER], tk[t, TK_CARD]
    k = _lineup_cards(fil, card[1], cf, lin, ops[op, OC_TARGETS], player, src, stv, cands)
    m = 0
    for j in range(k):
        c = cands[j]
        d = card[0, c]
        if cf[CF_FACE_UP, c] and des[d, DC_INSTANT] and not des[d, DC_COPIES]:
            m = _add_option(acts, vals, m, params[P_C0] + d, d)
    return _offer(tb, st, t, op, acts, vals, m, K_COPY)


@_njit
def _mass_select(st, sel, cands, k, stv, out):
    """``abilities.mass_select`` in place (``out``: scratch); returns the count kept."""
    if sel == SEL_ALL or k == 0:
        return k
    owner = st[0][CF_OWNER]
    n = st[2].shape[0]
    if sel == SEL_LOWEST:
        m = 0
        for q in range(n):  # players in seat order, each in ``cands`` order
            low = -1
            for j in range(k):
                if owner[cands[j]] == q and (low < 0 or stv[cands[j]] < low):
                    low = stv[cands[j]]
            if low < 0:
                continue
            for j in range(k):
                if owner[cands[j]] == q and stv[cands[j]] == low:
                    out[m] = cands[j]
                    m += 1
        for j in range(m):
            cands[j] = out[j]
        return m
    # single_strongest
    top = stv[cands[0]]
    for j in range(k):
        top = max(top, stv[cands[j]])
    m, best = 0, -1
    for j in range(k):
        if stv[cands[j]] == top:
            m += 1
            best = cands[j]
    if m == 1:
        cands[0] = best
        return 1
    return 0


@_njit
def _decide(tb, st, t, action):
    """``abilities.decide``."""
    params = tb[0]
    tk, topt = st[6], st[7]
    value = 0
    for j in range(tk[t, TK_NOPTS]):
        if topt[t, j, 0] == action:
            value = topt[t, j, 1]
    kind = tk[t, TK_KIND]
    tk[t, TK_NOPTS] = 0
    tk[t, TK_MADE] += 1
    if action == params[P_DECLINE]:
        tk[t, TK_DONE] = 1
        return
    if action == params[P_ACCEPT]:
        tk[t, TK_I] += 1
        return
    _record(tb, st, t, kind, value)


@_njit
def _has_effect(tk, teff, ntasks, kind):
    """Whether a task of the level recorded an effect of ``kind``."""
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] == kind:
                return True
    return False


@_njit
def _apply_level(tb, st, ws):
    """``abilities.apply_level``: the level's effects, in the order discards,
    turn-face-down, gains, swaps."""
    cf, lin, lst, tk, teff, sc = st[0], st[2], st[4], st[6], st[8], st[9]
    ntasks = sc[S_NTASKS]
    gains = _has_effect(tk, teff, ntasks, E_GAIN)
    # gains choose among the piles as they were before this level's discards
    before_turn = ws[0][W_PILE0][: lst.shape[1]]
    before_all = ws[0][W_PILE1][: lst.shape[1]]
    if gains:
        _copy_into(before_turn, lst[L_DISCARD_TURN])
        _copy_into(before_all, lst[L_DISCARD])
    owner = cf[CF_OWNER]
    # discards
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] != E_DISCARD:
                continue
            c = teff[t, j, 1]
            q = owner[c]
            if q < 0:
                continue
            _remove(lin[q], c)
            owner[c] = -1
            cf[CF_THIS_TURN, c] = 0
            cf[CF_FACE_UP, c] = 1
            _append(lst[L_DISCARD], c)
            _append(lst[L_DISCARD_TURN], c)
            _remove(lst[L_QUEUE], c)
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] == E_FACE_DOWN:
                c = teff[t, j, 1]
                if owner[c] >= 0 and cf[CF_FACE_UP, c]:
                    cf[CF_FACE_UP, c] = 0
    if gains:
        _apply_gains(tb, st, ws, before_turn, before_all)
    _apply_swaps(st, ws)
    sc[S_NTASKS] = 0


@_njit
def _apply_gains(tb, st, ws, before_turn, before_all):
    """Gains of one design from one pile by more players than it has copies: nobody gains."""
    tk, teff, sc = st[6], st[8], st[9]
    ntasks = sc[S_NTASKS]
    # the (design, pile) keys in the order of their first gain
    keys = ws[0][W_GKEYS]  # design * 2 + pile
    nk = 0
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] == E_GAIN:
                nk = _add_key(keys, nk, teff[t, j, 2] * 2 + teff[t, j, 4])
    for i in range(nk):
        d, whole = keys[i] // 2, keys[i] % 2
        _gain_design(tb, st, ws, d, whole, before_all if whole else before_turn)


@_njit
def _add_key(keys, k, key):
    for i in range(k):
        if keys[i] == key:
            return k
    keys[k] = key
    return k + 1


@_njit
def _gain_design(tb, st, ws, d, whole, pile):
    """The gains of design ``d`` from one pile (``pile``: as it was before the level)."""
    card = tb[1]
    cf, lin, lst, tk, teff, sc = st[0], st[2], st[4], st[6], st[8], st[9]
    owner = cf[CF_OWNER]
    avail = ws[0][W_AVAIL]
    na = 0
    for j in range(pile[-1]):
        c = pile[j]
        if card[0, c] == d and owner[c] < 0 and _find(lst[L_DISCARD], c) >= 0:
            avail[na] = c
            na += 1
    who = 0
    for t in range(sc[S_NTASKS]):
        for j in range(tk[t, TK_NEFF]):
            who += teff[t, j, 0] == E_GAIN and teff[t, j, 2] == d and teff[t, j, 4] == whole
    if who > na:
        return  # contested
    m = 0
    for t in range(sc[S_NTASKS]):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] == E_GAIN and teff[t, j, 2] == d and teff[t, j, 4] == whole:
                p, c = teff[t, j, 1], avail[m]
                m += 1
                _remove(lst[L_DISCARD], c)
                _remove(lst[L_DISCARD_TURN], c)
                _append(lin[p], c)
                owner[c] = p
                cf[CF_FACE_UP, c] = 1
                cf[CF_THIS_TURN, c] = 0
                cf[CF_DONE, c] = 1


@_njit
def _apply_swaps(st, ws):
    """Two swaps involving one card cancel each other."""
    cf, lin, tk, teff, sc = st[0], st[2], st[6], st[8], st[9]
    owner = cf[CF_OWNER]
    ntasks = sc[S_NTASKS]
    if not _has_effect(tk, teff, ntasks, E_SWAP):
        return
    seen = ws[0][W_SEEN]
    seen[:] = 0
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] == E_SWAP:
                seen[teff[t, j, 2]] += 1
                seen[teff[t, j, 3]] += 1
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] != E_SWAP:
                continue
            p, give, take = teff[t, j, 1], teff[t, j, 2], teff[t, j, 3]
            q = owner[take]
            if seen[give] > 1 or seen[take] > 1 or owner[give] != p or q < 0 or q == p:
                continue  # failed
            lin[p, _find(lin[p], give)] = take
            lin[q, _find(lin[q], take)] = give
            owner[give], owner[take] = q, p
            cf[CF_THIS_TURN, give] = 0
            cf[CF_THIS_TURN, take] = 0


# ----- the turn -------------------------------------------------------------------------------


@_njit
def _set_movers(st):
    """Movers: the players of the tasks waiting for a choice, ascending."""
    lst, tk, sc = st[4], st[6], st[9]
    n = st[2].shape[0]
    row = lst[L_MOVERS]
    row[-1] = 0
    for q in range(n):
        for t in range(sc[S_NTASKS]):
            if tk[t, TK_PLAYER] == q and tk[t, TK_NOPTS] > 0:
                _append(row, q)
                break


@_njit
def _resolve(tb, st, ws):
    """Resolve Instant levels until a choice is needed or the turn ends."""
    card = tb[1]
    cf, lin, lst, tk, sc = st[0], st[2], st[4], st[6], st[9]
    owner = cf[CF_OWNER]
    queue = lst[L_QUEUE]
    while True:
        if queue[-1] == 0:
            _end_turn(tb, st, ws)
            return
        level = card[2, queue[0]]
        here, keys = ws[0][W_HERE], ws[0][W_KEYS]
        nh, nq = 0, 0
        for j in range(queue[-1]):
            c = queue[j]
            if card[2, c] == level:
                here[nh] = c
                nh += 1
            else:
                queue[nq] = c
                nq += 1
        queue[-1] = nq
        sc[S_LEVEL] = level
        if nh > 1:  # by (owner, slot); cards out of the lineups last (stable)
            for j in range(nh):
                c = here[j]
                q = owner[c]
                keys[j] = q * 1000 + _find(lin[q], c) if q >= 0 else 99 * 1000
            _sort_by(here, keys, nh)
        ntasks = 0
        stoppers = lst[L_STOPPERS]
        for j in range(nh):
            c = here[j]
            if owner[c] < 0 or not cf[CF_FACE_UP, c]:
                continue  # discarded or turned face down before resolving: cancelled
            cf[CF_DONE, c] = 1
            stopped = False
            for i in range(stoppers[-1]):
                if stoppers[i] != c:
                    stopped = True
            if stopped:
                continue
            tk[ntasks, :] = 0
            tk[ntasks, TK_CARD] = c
            tk[ntasks, TK_PLAYER] = owner[c]
            tk[ntasks, TK_CDESIGN] = card[0, c]
            tk[ntasks, TK_DESIGN] = card[0, c]
            tk[ntasks, TK_TAKE] = -1
            tk[ntasks, TK_KIND] = -1
            ntasks += 1
        sc[S_NTASKS] = ntasks
        for t in range(ntasks):
            _advance(tb, st, t, ws)
        _set_movers(st)
        if lst[L_MOVERS, -1]:
            sc[S_PHASE] = CHOOSE
            return
        _apply_level(tb, st, ws)


@_njit
def _reveal(tb, st, ws):
    card, des, ops = tb[1], tb[2], tb[3]
    cf, hand, lin, pick, lst, tp, sc = st[0], st[1], st[2], st[3], st[4], st[5], st[9]
    n = lin.shape[0]
    revealed = ws[0][W_REVEALED]
    nr = 0
    c = -1
    for q in range(n):
        for j in range(pick[q, -1]):
            d = pick[q, j]
            h = hand[q]
            for i in range(h[-1]):  # the first card of design d in the hand
                if card[0, h[i]] == d:
                    c = h[i]
                    _delete(h, i)
                    break
            _append(lin[q], c)
            cf[CF_OWNER, c] = q
            cf[CF_FACE_UP, c] = 1
            cf[CF_THIS_TURN, c] = 1
            revealed[nr] = c
            nr += 1
        pick[q, -1] = 0
    dummy = ws[0][W_DUMMY]
    for j in range(nr):  # Turn abilities start: Instant stoppers and protections
        c = revealed[j]
        d = card[0, c]
        if des[d, DC_TIMING] != T_TURN:
            continue
        protects = False
        for op in range(des[d, DC_OP0], des[d, DC_OP1]):
            if ops[op, OC_OP] == O_STOP and _cond_ok(tb, st, op, cf[CF_OWNER, c], c, dummy, False):
                _append(lst[L_STOPPERS], c)
            if ops[op, OC_OP] == O_PROTECT:
                protects = True
        if protects:
            i = sc[S_NTP]
            tp[i, 0], tp[i, 1], tp[i, 2] = cf[CF_OWNER, c], c, d
            sc[S_NTP] = i + 1
    queue = lst[L_QUEUE]
    queue[-1] = 0
    for j in range(nr):
        c = revealed[j]
        if des[card[0, c], DC_INSTANT] and not cf[CF_DONE, c]:
            _append(queue, c)
    k = queue[-1]
    if k > 1:  # descending printed Strength, stable
        keys = ws[0][W_KEYS]
        for j in range(k):
            keys[j] = -card[2, queue[j]]
        _sort_by(queue, keys, k)
    _resolve(tb, st, ws)


@_njit
def _end_turn(tb, st, ws):
    """``_end_turn``: clear the turn's flags and effects; pass the hands, or end the Derby."""
    cf, hand, lin, lst, sc = st[0], st[1], st[2], st[4], st[9]
    cf[CF_THIS_TURN, :] = 0
    sc[S_NTP] = 0
    lst[L_STOPPERS, -1] = 0
    lst[L_DISCARD_TURN, -1] = 0
    lst[L_QUEUE, -1] = 0
    sc[S_NTASKS] = 0
    sc[S_LEVEL] = -1
    n = lin.shape[0]
    if hand[0, -1] <= 1:
        _end_derby(tb, st, ws)
        return
    last = ws[0][W_HAND][: hand.shape[1]]  # pass to the left: q gets q - 1's hand
    _copy_into(last, hand[n - 1])
    for q in range(n - 1, 0, -1):
        _copy_into(hand[q], hand[q - 1])
    _copy_into(hand[0], last)
    sc[S_TURN] += 1
    _start_turn(st)


@_njit
def _start_turn(st):
    """Every player to deploy, no picks, no level, no tasks (``_start_turn``)."""
    pick, lst, sc = st[3], st[4], st[9]
    sc[S_PHASE] = DEPLOY
    sc[S_LEVEL] = -1
    sc[S_NTASKS] = 0
    pick[:, -1] = 0
    movers = lst[L_MOVERS]
    for q in range(pick.shape[0]):
        movers[q] = q
    movers[-1] = pick.shape[0]


@_njit
def _end_derby(tb, st, ws):
    """Score the Derby (the next one is not dealt: the playout stops here)."""
    params = tb[0]
    hand, lin, pick, lst, sc = st[1], st[2], st[3], st[4], st[9]
    n = lin.shape[0]
    for q in range(n):
        for i in range(hand[q, -1]):
            _append(lst[L_DISCARD], hand[q, i])
        hand[q, -1] = 0
    _derby_scores(tb, st, ws)
    totals, special = ws[0][W_TOTALS][:n], ws[0][W_SPECIAL][:n]
    win = ws[0][W_LEADS][:n]
    win[:] = 0
    if _amax(special) > 0:
        _copy_into(win, special)
    else:
        top = _amax(totals)
        most = -1
        for q in range(n):
            if totals[q] == top:
                most = max(most, lin[q, -1])
        tied = 0
        for q in range(n):
            if totals[q] == top:
                win[q] = 1
                tied += 1
        if tied > 1:
            for q in range(n):
                if win[q] and lin[q, -1] != most:
                    win[q] = 0
    for q in range(n):
        sc[S_WINS + q] += win[q]
    sc[S_DERBY] += 1
    top = _amax(sc[S_WINS : S_WINS + n])
    leaders = 0
    for q in range(n):
        leaders += sc[S_WINS + q] == top
    if (top >= params[P_WINS_NEEDED] and leaders == 1) or sc[S_DERBY] >= params[P_MAX_DERBIES]:
        for q in range(n):
            sc[S_WINS + n + q] = sc[S_WINS + q] == top
        sc[S_PHASE] = OVER
        lst[L_MOVERS, -1] = 0
        pick[:, -1] = 0


@_njit
def _apply(tb, st, ws, player, action):
    """``DemolitionDerbyState._apply`` (a legal action)."""
    params = tb[0]
    pick, lst, sc = st[3], st[4], st[9]
    if sc[S_PHASE] == DEPLOY:
        _append(pick[player], action)
        if pick[player, -1] == params[P_PICKS]:
            _remove(lst[L_MOVERS], player)
            if lst[L_MOVERS, -1] == 0:
                _reveal(tb, st, ws)
        return
    t = _pending(st, player)
    _decide(tb, st, t, action)
    _advance(tb, st, t, ws)
    _set_movers(st)
    if lst[L_MOVERS, -1] == 0:
        _apply_level(tb, st, ws)
        _resolve(tb, st, ws)


@_njit
def _pending(st, player):
    tk, sc = st[6], st[9]
    for t in range(sc[S_NTASKS]):
        if tk[t, TK_PLAYER] == player and tk[t, TK_NOPTS] > 0:
            return t
    return -1


# ----- the simulated players (DDTactical's noisy greedy model) --------------------------------


@_njit
def _legal_designs(cdesign, hand, pick, counts, p, out):
    """The designs ``p`` can deploy now, ascending, into ``out``; returns the count
    (``counts``: scratch, one entry per design)."""
    counts[:] = 0
    for i in range(hand[p, -1]):
        counts[cdesign[hand[p, i]]] += 1
    for j in range(pick[p, -1]):
        counts[pick[p, j]] -= 1
    k = 0
    for d in range(counts.size):
        if counts[d] > 0:
            out[k] = d
            k += 1
    return k


@_njit
def _quick_deploy_all(tb, st, ws, bits, sd):
    """``DDTactical._quick_deploy_all``: every pick still to make this turn, the noise drawn
    from the generator in the Python playout's order (and as many draws). Returns the
    number of picks."""
    params, fvals, cdesign = tb[0], tb[5], tb[1][0]
    hand, pick, lst = st[1], st[3], st[4]
    counts = ws[0][W_COUNTS][: params[P_D]]
    per_turn = params[P_PICKS]
    nm = lst[L_MOVERS, -1]
    movers = ws[0][W_MOVERS]
    _copy_into(movers[:nm], lst[L_MOVERS, :nm])
    legal, nl, todo = ws[2], ws[0][W_NL], ws[0][W_TODO]
    count = 0  # the draws the Python playout makes up front (see there)
    for j in range(nm):
        nl[j] = _legal_designs(cdesign, hand, pick, counts, movers[j], legal[j])
        count += nl[j]
        todo[j] = 1 if per_turn == 1 else per_turn - pick[movers[j], -1]
    if per_turn != 1:
        for j in range(nm):
            if todo[j] > 1:
                count += max(nl[j] - 1, 1)
    drawn = 0  # each pick reads the next draws in turn, so they are drawn as read
    picks = 0
    for j in range(nm):
        p = movers[j]
        for r in range(todo[j]):
            if r:
                nl[j] = _legal_designs(cdesign, hand, pick, counts, p, legal[j])
            best, top = 0, fvals[0, legal[j, 0]] + (0.0 + sd * np_draws.standard_normal(bits))
            for x in range(1, nl[j]):
                v = fvals[0, legal[j, x]] + (0.0 + sd * np_draws.standard_normal(bits))
                if v > top:
                    best, top = x, v
            drawn += nl[j]
            _apply(tb, st, ws, p, legal[j, best])
            picks += 1
    for _ in range(drawn, count):  # drawn up front and not read
        np_draws.standard_normal(bits)
    return picks


@_njit
def _leads(tb, st, ws, p, leads):
    """By relative seat: whether that opponent's clipped total is the best of ``p``'s."""
    n = st[2].shape[0]
    if n == 2:
        leads[0], leads[1] = 0, 1
        return
    _derby_scores(tb, st, ws)
    totals = ws[0][W_TOTALS]
    clipped = ws[0][W_CLIP][:n]
    for r in range(n):
        clipped[r] = min(totals[(p + r) % n], tb[0][P_TCAP])
    leader = _amax(clipped[1:])
    for r in range(n):
        leads[r] = clipped[r] >= leader


@_njit
def _quick_choice(tb, st, ws, p, bits, sd):
    """``DDTactical._quick_choice``: the noisy-greedy ability choice of ``p`` (the ties of
    noisy scores broken by an integer draw, as there)."""
    tk, topt = st[6], st[7]
    t = _pending(st, p)
    k = tk[t, TK_NOPTS]
    if k == 1:
        return topt[t, 0, 0]
    legal, keys = ws[0][W_SORT], ws[0][W_KEYS]
    for j in range(k):
        legal[j] = topt[t, j, 0]
        keys[j] = topt[t, j, 0]
    _sort_by(legal, keys, k)
    _strengths(tb, st, False, ws)
    ws[0][W_LEADS][-1] = 0  # the leaders are computed on first use (see _option_score)
    top = -np.inf
    tied, ties = ws[0][W_TIES], 0
    for x in range(k):
        # score + noise on doubles: the same sum as the Python playout's (which draws the
        # k normals first; the scores draw nothing, so the order is the same)
        s = _option_score(tb, st, ws, t, p, legal[x]) + (0.0 + sd * np_draws.standard_normal(bits))
        if s > top:
            top, ties = s, 1
            tied[0] = x
        elif s == top:
            tied[ties] = x
            ties += 1
    if ties > 1:
        return legal[tied[np_draws.integers(bits, ties)]]
    return legal[tied[0]]


@_njit
def _option_score(tb, st, ws, t, p, a):
    """``DDGreedy.scores`` of option ``a`` of task ``t`` (as ``DDTactical._quick_choice``
    reads it from the state; the current Strengths in W_STV)."""
    params, fvals, gives = tb[0], tb[5], tb[6]
    lin, tk = st[2], st[6]
    stv, cap = ws[0][W_STV], params[P_SCAP]
    t0, g0, c0, decline = params[P_T0], params[P_G0], params[P_C0], params[P_DECLINE]
    if a < t0:  # deploy (not offered in a choice; kept for parity)
        return fvals[0, a]
    if a < g0:  # a target: its card
        return _target_score(tb, st, ws, t, p, a)
    if a < c0:  # gain
        return fvals[1, a - g0]
    if a < decline:  # copy
        return fvals[0, a - c0]
    if a == decline:  # what declining a "may" swap is worth
        d = tk[t, TK_DESIGN]
        if gives[d]:
            return fvals[1, d] + 0.5
        m = lin[p, -1]
        if not m:
            return 0.5
        low = cap
        for j in range(m):
            low = min(low, min(stv[lin[p, j]], cap))
        return float(low) + 0.5
    return 0.0  # accept


@_njit
def _target_score(tb, st, ws, t, p, a):
    """The score of target option ``a``: hit strong cards, the leader's preferably; give
    away (or hurt one's own) the weakest."""
    params = tb[0]
    lst, tk, topt, sc = st[4], st[6], st[7], st[9]
    stv, cap = ws[0][W_STV], params[P_SCAP]
    t0 = params[P_T0]
    kind = tk[t, TK_KIND]
    r = (a - t0) // params[P_S]
    c = -1
    for j in range(tk[t, TK_NOPTS]):
        if topt[t, j, 0] == a:
            c = topt[t, j, 1]
    v = min(stv[c], cap)  # the observation clips it
    if kind == K_GIVE or r == 0:
        return -float(v)
    leads = ws[0][W_LEADS]
    if not leads[-1]:
        _leads(tb, st, ws, p, leads)
        leads[-1] = 1
    s = v + (0.5 if leads[r] else 0.0)
    if kind == K_FACE_DOWN:  # the float32 weight of "Instant pending", as observed
        pend = _find(lst[L_QUEUE], c) >= 0
        for u in range(sc[S_NTASKS]):
            pend = pend or tk[u, TK_CARD] == c
        if pend:
            s += F32_03
    return s


@_njit
def _simulate(tb, st, ws, me, bits, sd):
    """``DDTactical._simulate``: to the end of the turn; the score."""
    lin, lst, sc = st[2], st[4], st[9]
    n = lin.shape[0]
    derby, turn = sc[S_DERBY], sc[S_TURN]
    wins_before = sc[S_WINS + me]
    steps = 0
    while sc[S_PHASE] != OVER and sc[S_DERBY] == derby and sc[S_TURN] == turn and steps < 200:
        if sc[S_PHASE] == DEPLOY:
            steps += _quick_deploy_all(tb, st, ws, bits, sd)
            continue
        p = lst[L_MOVERS, 0]
        _apply(tb, st, ws, p, _quick_choice(tb, st, ws, p, bits, sd))
        steps += 1
    if sc[S_PHASE] == OVER:
        return 100.0 * sc[S_WINS + n + me]
    if sc[S_DERBY] != derby:
        return 30.0 * (sc[S_WINS + me] - wins_before) - 10.0
    _derby_scores(tb, st, ws)
    totals, special = ws[0][W_TOTALS][:n], ws[0][W_SPECIAL][:n]
    others = -(1 << 62)
    for q in range(n):
        if q != me:
            others = max(others, totals[q])
    score = (totals[me] - others) + 0.3 * lin[me, -1]
    if special[me]:
        score += 8.0
    elif _amax(special) > 0:
        score -= 8.0
    return score


@_njit
def _start_derby(st, deal):
    """The next Derby's first turn, its hands dealt as ``deal`` (``_start_derby``)."""
    cf, hand, lin, lst, sc = st[0], st[1], st[2], st[4], st[9]
    _copy_into(hand, deal)
    lin[:, -1] = 0
    lst[L_DISCARD, -1] = 0
    lst[L_DISCARD_TURN, -1] = 0
    cf[CF_OWNER, :] = -1
    cf[CF_FACE_UP, :] = 1
    cf[CF_THIS_TURN, :] = 0
    cf[CF_DONE, :] = 0
    sc[S_TURN] = 0
    _start_turn(st)


@_njit
def _redeal(tb, base, ws, rd, bits, me):
    """``DDTactical._resample`` on the packed position, in place: the seed of the copy's
    future chance (into ``W_SEED[0]``), then ``redeal_hidden``'s draws in its order: the
    shuffle of the unknown cards (``rd[0]``) into the unknown hands (seats ``rd[2]``), the
    other players' deploy picks. Not for Mekk Mania or ability choices to re-draw (the
    caller re-deals those in Python)."""
    ws[0][W_SEED][0] = np_draws.integers(bits, (1 << 63) - 1)
    hand, pick, sc = base[1], base[3], base[9]
    if sc[S_PHASE] == OVER:
        return
    unknown, fresh, seats = rd[0], rd[1], rd[2]
    k = unknown[-1]
    _copy_into(fresh[:k], unknown[:k])
    np_draws.shuffle(bits, fresh, k)
    i = 0
    for j in range(seats[-1]):
        q = seats[j]
        for x in range(hand[q, -1]):
            hand[q, x] = fresh[i]
            i += 1
    if sc[S_PHASE] != DEPLOY:
        return
    params, cdesign = tb[0], tb[1][0]
    counts, legal = ws[0][W_COUNTS][: params[P_D]], ws[0][W_SORT]
    for q in range(params[P_N]):
        m = pick[q, -1]
        if q == me or not m:
            continue
        pick[q, -1] = 0  # re-drawn one by one, each legal after the ones before
        for r in range(m):
            k = _legal_designs(cdesign, hand, pick, counts, q, legal)
            pick[q, r] = legal[np_draws.integers(bits, k)]
            pick[q, -1] = r + 1


@_njit
def simulate_actions(
    mem, lay, fvals, bits, sd, out, me, nacts, samples, redeal, sample, first, resume
):
    """Add the simulated score of each of the first ``nacts`` actions of ``Tables.acts`` on
    each of ``samples`` determinizations into ``out``: with ``redeal``, each one re-dealt
    from the packed position by :func:`_redeal` (kept in place for the next); without, the
    packed determinization itself (``samples`` 1). The noise and the tie-breaks are drawn
    from the generator at ``bits`` (:mod:`agents.np_draws`) in the Python playouts' order.

    ``sample``, ``first``: where to start (0, 0 at first); ``resume``: that sample is
    already re-dealt. Returns (sample, action, status): OK when done; NEXT_DERBY when my
    move at that point ends the Derby and its successor is not dealt (``Tables.deal[0, -1]
    < 0``): the caller deals it from the seed in ``W_SEED[0]`` and calls again from there."""
    o, a, b, c, e = lay[:, 0], lay[:, 1], lay[:, 2], lay[:, 3], lay[:, 4]
    tb = (
        mem[o[0] : o[0] + a[0]],
        mem[o[1] : o[1] + a[1] * b[1]].reshape((a[1], b[1])),
        mem[o[2] : o[2] + a[2] * b[2]].reshape((a[2], b[2])),
        mem[o[3] : o[3] + a[3] * b[3]].reshape((a[3], b[3])),
        mem[o[4] : o[4] + a[4] * b[4]].reshape((a[4], b[4])),
        fvals,
        mem[o[5] : o[5] + a[5]],
    )
    # the state arrays, each a pair: [0] the packed determinization, [1] the playout's state
    cf = mem[o[6] : o[6] + 2 * b[6] * c[6]].reshape((2, b[6], c[6]))
    hand = mem[o[7] : o[7] + 2 * b[7] * c[7]].reshape((2, b[7], c[7]))
    lin = mem[o[8] : o[8] + 2 * b[8] * c[8]].reshape((2, b[8], c[8]))
    pick = mem[o[9] : o[9] + 2 * b[9] * c[9]].reshape((2, b[9], c[9]))
    lst = mem[o[10] : o[10] + 2 * b[10] * c[10]].reshape((2, b[10], c[10]))
    tp = mem[o[11] : o[11] + 2 * b[11] * c[11]].reshape((2, b[11], c[11]))
    tk = mem[o[12] : o[12] + 2 * b[12] * c[12]].reshape((2, b[12], c[12]))
    topt = mem[o[13] : o[13] + 2 * b[13] * c[13] * e[13]].reshape((2, b[13], c[13], e[13]))
    teff = mem[o[14] : o[14] + 2 * b[14] * c[14] * e[14]].reshape((2, b[14], c[14], e[14]))
    sc = mem[o[15] : o[15] + 2 * b[15]].reshape((2, b[15]))
    base = (cf[0], hand[0], lin[0], pick[0], lst[0], tp[0], tk[0], topt[0], teff[0], sc[0])
    st = (cf[1], hand[1], lin[1], pick[1], lst[1], tp[1], tk[1], topt[1], teff[1], sc[1])
    ws = (
        mem[o[16] : o[16] + a[16] * b[16]].reshape((a[16], b[16])),
        mem[o[17] : o[17] + a[17] * b[17]].reshape((a[17], b[17])),
        mem[o[18] : o[18] + a[18] * b[18]].reshape((a[18], b[18])),
    )
    deal = mem[o[19] : o[19] + a[19] * b[19]].reshape((a[19], b[19]))
    legal = mem[o[20] : o[20] + nacts]
    rd = mem[o[21] : o[21] + a[21] * b[21]].reshape((a[21], b[21]))
    derby = base[9][S_DERBY]
    for smp in range(sample, samples):
        if smp != sample:
            first = 0
        if redeal and not (resume and smp == sample):
            _redeal(tb, base, ws, rd, bits, me)
            deal[0, -1] = -1  # this sample's next Derby: not dealt yet
        for i in range(first, nacts):
            _load(st, base)
            _apply(tb, st, ws, me, legal[i])
            if st[9][S_DERBY] != derby and st[9][S_PHASE] != OVER:
                # my move ended the Derby: the playout goes on into the next one's first turn
                if deal[0, -1] < 0:
                    return smp, i, NEXT_DERBY
                _start_derby(st, deal)
            out[i] += _simulate(tb, st, ws, me, bits, sd)
    return samples, 0, OK
