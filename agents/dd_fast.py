"""The compiled playouts of ``dd_tactical``: one simulated turn per legal action, in numba.

``DDTactical.action_values`` simulates, for each of its determinizations, every legal action
to the end of the turn with noisy-greedy answers of the other players and scores the result.
This module runs those simulations compiled, on a packed copy of the position
(:func:`pack`: plain integer arrays), with the game's compiled rules: the kernels of
:mod:`derby_envs.games.demolition_derby.kernels` (and ``kernels_abilities``, ``kernels_turn``),
the same ones the batched engine steps its games with. Only the simulated players (the noisy
greedy model), the re-deal of a determinization and the scoring live here. It computes the
same numbers as the Python playout, bit for bit:

* the kernels draw from a :mod:`derby_envs.core.pcg64` row holding the caller's generator
  state (``DDTactical`` copies a PCG64 generator's state into the row and back) exactly what
  the Python playouts draw, in their order: each determinization's future-chance seed and
  re-deal (:func:`_redeal`; the caller re-deals in Python where Mekk Mania re-draws the deck
  or other players' ability choices are re-drawn), the simulated players' noise and the
  integer tie-breaks of their noisy scores;
* a move of mine that ends the Derby is handed back with where it happened: the caller
  deals the next Derby (``Tables.deal``) and the kernels go on into its first turn.

The engine stays the reference: the recorded traces (tests/agents/test_heuristic_traces_dd_kd.py)
and a test of the values on random positions (tests/agents/test_dd_fast.py) hold both paths to the
same choices and the same draws.
"""

from __future__ import annotations

import numpy as np

from derby_envs.core import pcg64
from derby_envs.core.seats import seat_orders
from derby_envs.games.demolition_derby.batch_views import legal_mask_one
from derby_envs.games.demolition_derby.kernels import (
    CF_OWNER,
    CHOOSE,
    DEPLOY,
    E_DISCARD,
    E_FACE_DOWN,
    E_GAIN,
    E_SWAP,
    K_FACE_DOWN,
    K_GIVE,
    L_MOVERS,
    L_QUEUE,
    OVER,
    P_C0,
    P_D,
    P_DECLINE,
    P_G0,
    P_N,
    P_PICKS,
    P_S,
    P_SCAP,
    P_T0,
    P_TCAP,
    S_DERBY,
    S_NTASKS,
    S_PHASE,
    S_TURN,
    S_WINS,
    TK_CARD,
    TK_DESIGN,
    TK_KIND,
    TK_MADE,
    TK_NOPTS,
    TK_PLAYER,
    W_CLIP,
    W_COUNTS,
    W_KEYS,
    W_LEADS,
    W_MOVERS,
    W_NL,
    W_SEED,
    W_SORT,
    W_SPECIAL,
    W_STV,
    W_TIES,
    W_TODO,
    W_TOTALS,
    Sizes,
    _amax,
    _copy_into,
    _derby_scores,
    _fill,
    _find,
    _njit,
    _sort_by,
    _strengths,
    _touch,
    card_tables,
)
from derby_envs.games.demolition_derby.kernels_turn import _apply, _pending, deal_derby, deal_tables

F32_03 = float(np.float32(0.3))  # the observation's "Instant pending" weight (see DDTactical)


class Tables:
    """The card set and game constants as arrays for the kernels (built once per agent), and
    the playouts' memory: every integer array the kernels read or write is a view of one
    buffer, ``mem``, laid out by ``lay`` (offset and shape of each): a call from Python
    unboxes each array argument, and there are 24."""

    def __init__(self, game, value: list[float], strength: list[float], gives_self: list[bool]):
        self._args = (game, value, strength, gives_self)
        z = Sizes(game)
        t = card_tables(game)
        self.params, self.card, self.des, self.ops, self.fil = (
            t["params"], t["card"], t["des"], t["ops"], t["fil"],
        )  # fmt: skip
        self.hc, self.lc, self.tc, self.oc, self.ec = z.hc, z.lc, z.tc, z.oc, z.ec
        self.fvals = np.array([value, strength], np.float64)  # per design: greedy values
        gives = np.array(gives_self, np.int64)
        n, N = z.n, z.N
        self.n, self.N = n, N
        # each state array twice, [0] the packed determinization, [1] the playout's copy
        shapes = [
            self.params.shape, self.card.shape, self.des.shape, self.ops.shape, self.fil.shape,
            gives.shape, *[(2, *x) for x in z.state_shapes()], *z.work_shapes(),
            (1,), (game.num_actions,), (3, max(N, n) + 1),
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
        self.base = tuple(v[0] for v in views[6:18])  # the packed determinization (see pack)
        self.flat = tuple(v.reshape(-1) for v in self.base)  # the same, flat views
        self.acts = views[22]  # the actions to simulate
        # the re-deal's unknown cards, its scratch, the seats dealt to (lengths last)
        self.redeal = views[23]
        self.seed = views[18][W_SEED, :1]  # the future-chance seed of the last re-deal
        self.row = np.zeros(pcg64.WORDS, np.uint64)  # the caller's generator, during a call
        # the next Derby's deal when my move ends one: its tables and scratch
        self.dealing = deal_tables(game)
        self.dscratch = np.zeros(2 * self.dealing.shape[1] + 4 * (N + 8), np.int64)
        self.drow = np.zeros(pcg64.WORDS, np.uint64)
        # the state and workspace tuples the kernels take (the batched dd_tactical's calls)
        self.tb = (*views[:5], self.fvals, views[5])
        self.sim = tuple(v[1] for v in views[6:18])
        self.ws = tuple(views[18:21])
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
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc = T.base[:10]
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
            0,
        )
        if t.opts is not None:
            topt[i, : len(t.opts)] = list(t.opts.items())
        for j, e in enumerate(t.effects):
            teff[i, j, 0] = _KIND_CODE[e[0]]
            teff[i, j, 1 : len(e)] = e[1:]
    won = [0] * n
    for q in s.final_winners:
        won[q] = 1
    # the events and the last Derby's record are not read by a playout: not packed
    sc[: S_WINS + 2 * n] = (
        s.derby, s.turn, s.phase, s.level, len(s.turn_protect), len(s.tasks), 0, -1, -1, 0,
        *s.wins, *won,
    )  # fmt: skip


def _rows(lists, width: int) -> list[int]:
    """Lists as rows of ``width`` entries, flat (numpy converts a flat list of ints faster
    than nested ones): each padded, its length in the last entry."""
    pad = [0] * width
    out: list[int] = []
    for x in lists:
        out += x
        out += pad[: width - 1 - len(x)]
        out.append(len(x))
    return out


@_njit
def _load(st, base):
    """Copy the state ``base`` into ``st`` (arrays of the same shapes): the tasks' rows only
    as far as they are in use (nothing reads past the counts); not the event log (a playout
    reads no event)."""
    for a, b in ((st[0], base[0]), (st[1], base[1]), (st[2], base[2]), (st[3], base[3]),
                 (st[4], base[4]), (st[5], base[5])):  # fmt: skip
        _copy_into(a, b)
    _copy_into(st[9], base[9])
    nt = base[9][S_NTASKS]
    if nt:
        _copy_into(st[6][:nt], base[6][:nt])
        _copy_into(st[7][:nt], base[7][:nt])
        _copy_into(st[8][:nt], base[8][:nt])
        _copy_into(st[11][:nt], base[11][:nt])


# ----- the simulated players (DDTactical's noisy greedy model) --------------------------------


@_njit
def _legal_designs(cdesign, hand, pick, counts, p, out):
    """The designs ``p`` can deploy now, ascending, into ``out``; returns the count
    (``counts``: scratch, one entry per design)."""
    _fill(counts, 0)
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
def _quick_deploy_all(tb, st, ws, row, sd):
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
            best, top = 0, fvals[0, legal[j, 0]] + (0.0 + sd * pcg64.standard_normal(row))
            for x in range(1, nl[j]):
                v = fvals[0, legal[j, x]] + (0.0 + sd * pcg64.standard_normal(row))
                if v > top:
                    best, top = x, v
            drawn += nl[j]
            _apply(tb, st, ws, p, legal[j, best])
            picks += 1
    for _ in range(drawn, count):  # drawn up front and not read
        pcg64.standard_normal(row)
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
def _quick_choice(tb, st, ws, p, row, sd):
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
        s = _option_score(tb, st, ws, t, p, legal[x]) + (0.0 + sd * pcg64.standard_normal(row))
        if s > top:
            top, ties = s, 1
            tied[0] = x
        elif s == top:
            tied[ties] = x
            ties += 1
    if ties > 1:
        return legal[tied[pcg64.integers(row, ties)]]
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
def _simulate(tb, st, ws, me, row, sd):
    """``DDTactical._simulate``: to the end of the turn; the score."""
    lin, lst, sc = st[2], st[4], st[9]
    n = lin.shape[0]
    derby, turn = sc[S_DERBY], sc[S_TURN]
    wins_before = sc[S_WINS + me]
    steps = 0
    while sc[S_PHASE] != OVER and sc[S_DERBY] == derby and sc[S_TURN] == turn and steps < 200:
        if sc[S_PHASE] == DEPLOY:
            steps += _quick_deploy_all(tb, st, ws, row, sd)
            continue
        p = lst[L_MOVERS, 0]
        _apply(tb, st, ws, p, _quick_choice(tb, st, ws, p, row, sd))
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
def _redeal(tb, base, ws, rd, row, me):
    """``DDTactical._resample`` on the packed position, in place: the seed of the copy's
    future chance (into ``W_SEED[0]``), then ``redeal_hidden``'s draws in its order: the
    shuffle of the unknown cards (``rd[0]``) into the unknown hands (seats ``rd[2]``), the
    other players' deploy picks. Not for Mekk Mania or ability choices to re-draw (the
    caller re-deals those in Python)."""
    ws[0][W_SEED][0] = pcg64.integers(row, (1 << 63) - 1)
    hand, pick, sc = base[1], base[3], base[9]
    if sc[S_PHASE] == OVER:
        return
    unknown, fresh, seats = rd[0], rd[1], rd[2]
    k = unknown[-1]
    _copy_into(fresh[:k], unknown[:k])
    pcg64.shuffle(row, fresh, k)
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
            pick[q, r] = legal[pcg64.integers(row, k)]
            pick[q, -1] = r + 1


@_njit
def simulate_actions(
    mem, lay, fvals, row, sd, out, me, nacts, samples, redeal, dealing, dscratch, drow
):
    """Add the simulated score of each of the first ``nacts`` actions of ``Tables.acts`` on
    each of ``samples`` determinizations into ``out``: with ``redeal``, each one re-dealt
    from the packed position by :func:`_redeal` (kept in place for the next); without, the
    packed determinization itself (``samples`` 1). The noise and the tie-breaks are drawn
    from the pcg64 row ``row`` (:mod:`derby_envs.core.pcg64`) in the Python playouts' order;
    a Derby ended by my move is followed by the next one dealt from the determinization's
    seed (``dealing``: ``kernels_turn.deal_tables``; ``dscratch``, ``drow``: scratch)."""
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
    ev = mem[o[16] : o[16] + 2 * b[16] * c[16]].reshape((2, b[16], c[16]))
    tlog = mem[o[17] : o[17] + 2 * b[17] * c[17] * e[17]].reshape((2, b[17], c[17], e[17]))
    base = (cf[0], hand[0], lin[0], pick[0], lst[0], tp[0], tk[0], topt[0], teff[0], sc[0],
            ev[0], tlog[0])  # fmt: skip
    st = (cf[1], hand[1], lin[1], pick[1], lst[1], tp[1], tk[1], topt[1], teff[1], sc[1], ev[1],
          tlog[1])  # fmt: skip
    ws = (
        mem[o[18] : o[18] + a[18] * b[18]].reshape((a[18], b[18])),
        mem[o[19] : o[19] + a[19] * b[19]].reshape((a[19], b[19])),
        mem[o[20] : o[20] + a[20] * b[20]].reshape((a[20], b[20])),
    )
    legal = mem[o[22] : o[22] + nacts]
    rd = mem[o[23] : o[23] + a[23] * b[23]].reshape((a[23], b[23]))
    playouts(tb, base, st, ws, legal, nacts, rd, row, sd, out, me, samples, redeal, dealing,
             dscratch, drow)  # fmt: skip


@_njit
def playouts(tb, base, st, ws, legal, nacts, rd, row, sd, out, me, samples, redeal, dealing,
             dscratch, drow):  # fmt: skip
    """:func:`simulate_actions` on the arrays themselves (the batched ``dd_tactical`` calls it
    once per game)."""
    derby = base[9][S_DERBY]
    for _ in range(samples):
        if redeal:
            _redeal(tb, base, ws, rd, row, me)
        for i in range(nacts):
            _load(st, base)
            _touch(ws)  # another state's Strengths
            _apply(tb, st, ws, me, legal[i])
            if st[9][S_DERBY] != derby and st[9][S_PHASE] != OVER:
                # my move ended the Derby: the playout goes on into the next one's first
                # turn, dealt as the determinization's own generator (seeded W_SEED) would
                pcg64.seed_row(drow, np.uint64(ws[0][W_SEED][0]))
                m = dealing.shape[1]
                deal_derby(st, drow, dealing, dscratch[:m], dscratch[m : 2 * m],
                           dscratch[2 * m :])  # fmt: skip
                _touch(ws)  # a new Derby: empty lineups
            out[i] += _simulate(tb, st, ws, me, row, sd)


# ----- the batched dd_tactical ----------------------------------------------------------------


@_njit
def legal_actions_one(tb, st, p, mask, legal):
    """``State.legal_actions(p)``: the legal action ids, ascending, into ``legal`` (``mask``:
    scratch for :func:`legal_mask_one`); returns how many."""
    legal_mask_one(tb, st, p, mask)
    k = 0
    for a in range(mask.size):
        if mask[a]:
            legal[k] = a
            k += 1
    return k


@_njit
def _copy_game(dst, src):
    """Copy one game's state tuple (the batch's row) into the playouts' packed one."""
    _copy_into(dst[0], src[0])
    _copy_into(dst[1], src[1])
    _copy_into(dst[2], src[2])
    _copy_into(dst[3], src[3])
    _copy_into(dst[4], src[4])
    _copy_into(dst[5], src[5])
    _copy_into(dst[9], src[9])
    nt = src[9][S_NTASKS]
    if nt:
        _copy_into(dst[6][:nt], src[6][:nt])
        _copy_into(dst[7][:nt], src[7][:nt])
        _copy_into(dst[8][:nt], src[8][:nt])
        _copy_into(dst[11][:nt], src[11][:nt])


@_njit
def _others_chose(tk, ntasks, p):
    """``DDTactical._others_chose``: another player made an ability choice at this level."""
    for t in range(ntasks):
        if tk[t, TK_PLAYER] != p and tk[t, TK_MADE]:
            return True
    return False


@_njit
def tactical_batch(tb, base, sim, ws, rd, legal, vals, mask, dealing, dscratch, drow, games,
                   unused, players, rngs, sd, samples, mekk, out, status):  # fmt: skip
    """``DDTactical.act_state`` for every game of a batch with ``players[i] >= 0`` (the
    batch's state ``games``, its unused cards, the games' own pcg64 rows ``rngs``), the
    compiled playouts of :func:`playouts` run here for all of them. A game the kernels do not
    re-deal (Mekk Mania, other players' ability choices to re-draw) gets ``status[i] = 1``
    (the caller decides it in Python), the others ``out[i]``."""
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = games
    n = hand.shape[1]
    for i in range(players.shape[0]):
        p = players[i]
        status[i] = 0
        if p < 0:
            continue
        game = (cf[i], hand[i], lin[i], pick[i], lst[i], tp[i], tk[i], topt[i], teff[i], sc[i],
                ev[i], tlog[i])  # fmt: skip
        k = legal_actions_one(tb, game, p, mask, legal)
        if k == 1:
            out[i] = legal[0]
            continue
        if mekk or (sc[i, S_PHASE] == CHOOSE and _others_chose(tk[i], sc[i, S_NTASKS], p)):
            status[i] = 1
            continue
        _copy_game(base, game)
        # pack_redeal: the cards p cannot place (unknown_cards' order), the seats holding them
        nu = 0
        for j in range(unused[i, -1]):
            rd[0, nu] = unused[i, j]
            nu += 1
        ns = 0
        for r in range(sc[i, S_TURN] + 1, n):
            q = (p + r) % n
            for j in range(hand[i, q, -1]):
                rd[0, nu] = hand[i, q, j]
                nu += 1
            rd[2, ns] = q
            ns += 1
        rd[0, -1], rd[2, -1] = nu, ns
        _fill(vals[:k], 0.0)
        playouts(tb, base, sim, ws, legal, k, rd, rngs[i], sd, vals, p, samples, True, dealing,
                 dscratch, drow)  # fmt: skip
        top = vals[0]
        for j in range(1, k):
            top = max(top, vals[j])
        best, ties = ws[0][W_TIES], 0  # the best indices (free after the playouts)
        for j in range(k):
            if vals[j] == top:
                best[ties] = j
                ties += 1
        if ties == 1:
            out[i] = legal[best[0]]
        else:  # rng.integers(1) draws nothing: only real ties draw
            out[i] = legal[best[pcg64.integers(rngs[i], ties)]]
