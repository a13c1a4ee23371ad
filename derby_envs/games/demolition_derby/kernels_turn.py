"""Demolition Derby's rules compiled: Instant levels, the turn, the Derby and the deal
(mirrors :mod:`.engine` and ``abilities.apply_level``). See :mod:`.kernels` for the state and
the tables; :func:`_apply` is ``DemolitionDerbyState._apply`` for a legal action.
"""

from __future__ import annotations

import numpy as np

from derby_envs.core import pcg64
from derby_envs.games.demolition_derby.kernels import (
    B_FINAL,
    B_LAST_COMBATANTS,
    B_LAST_TOTALS,
    B_LAST_WINNERS,
    B_WINS,
    CF_DONE,
    CF_FACE_UP,
    CF_OWNER,
    CF_THIS_TURN,
    CHOOSE,
    DC_INSTANT,
    DC_OP0,
    DC_OP1,
    DC_TIMING,
    DEPLOY,
    E_DISCARD,
    E_FACE_DOWN,
    E_GAIN,
    E_SWAP,
    EV_CANCEL,
    EV_CONTESTED,
    EV_DERBY,
    EV_DISCARD,
    EV_FACE_DOWN,
    EV_GAIN,
    EV_REVEAL,
    EV_STOPPED,
    EV_SWAP,
    EV_SWAP_FAILED,
    EV_TURN,
    L_DISCARD,
    L_DISCARD_TURN,
    L_MOVERS,
    L_QUEUE,
    L_STOPPERS,
    O_PROTECT,
    O_STOP,
    OC_OP,
    OVER,
    P_MAX_DERBIES,
    P_PICKS,
    P_WINS_NEEDED,
    R_COMBATANTS,
    R_CONDITION,
    R_SHARED,
    R_STRENGTH,
    S_DERBY,
    S_EV_OVER,
    S_LAST_DERBY,
    S_LAST_REASON,
    S_LEVEL,
    S_NEV,
    S_NTASKS,
    S_NTP,
    S_PHASE,
    S_TURN,
    S_WINS,
    ST_EV,
    ST_TLOG,
    T_TURN,
    TK_CARD,
    TK_CDESIGN,
    TK_DESIGN,
    TK_KIND,
    TK_NEFF,
    TK_NLOG,
    TK_NOPTS,
    TK_PLAYER,
    TK_TAKE,
    W_AVAIL,
    W_DUMMY,
    W_GKEYS,
    W_HAND,
    W_HERE,
    W_KEYS,
    W_LEADS,
    W_PILE0,
    W_PILE1,
    W_REVEALED,
    W_SEEN,
    W_SPECIAL,
    W_TOTALS,
    _amax,
    _append,
    _cond_ok,
    _copy_into,
    _delete,
    _derby_scores,
    _event,
    _fill,
    _fill_lengths,
    _find,
    _njit,
    _protectors,
    _remove,
    _sort_by,
    _strengths,
    _touch,
)
from derby_envs.games.demolition_derby.kernels_abilities import (
    _advance,
    _advance_ready,
    _decide,
)


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
    ev, tlog = st[ST_EV], st[ST_TLOG]
    ntasks = sc[S_NTASKS]
    for t in range(ntasks):  # the tasks' logs are published first
        for j in range(tk[t, TK_NLOG]):
            _event(ev, sc, tlog[t, j, 0], tlog[t, j, 1], tlog[t, j, 2], 0, 0, 0)
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
            _event(ev, sc, EV_DISCARD, c, teff[t, j, 2], q, 0, 0)
            i = _find(lst[L_QUEUE], c)
            if i >= 0:  # discarded before its Instant resolved: cancelled
                _delete(lst[L_QUEUE], i)
                _event(ev, sc, EV_CANCEL, c, 0, 0, 0, 0)
    for t in range(ntasks):
        for j in range(tk[t, TK_NEFF]):
            if teff[t, j, 0] == E_FACE_DOWN:
                c = teff[t, j, 1]
                if owner[c] >= 0 and cf[CF_FACE_UP, c]:
                    cf[CF_FACE_UP, c] = 0
                    _event(ev, sc, EV_FACE_DOWN, c, teff[t, j, 2], owner[c], 0, 0)
    if gains:
        _apply_gains(tb, st, ws, before_turn, before_all)
    _apply_swaps(st, ws)
    sc[S_NTASKS] = 0
    _touch(ws)  # lineups, faces or "deployed this turn" may have changed


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
        _event(st[ST_EV], sc, EV_CONTESTED, d, 0, 0, 0, 0)
        return
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
                _event(st[ST_EV], sc, EV_GAIN, p, c, teff[t, j, 3], 0, 0)


@_njit
def _apply_swaps(st, ws):
    """Two swaps involving one card cancel each other."""
    cf, lin, tk, teff, sc = st[0], st[2], st[6], st[8], st[9]
    owner = cf[CF_OWNER]
    ntasks = sc[S_NTASKS]
    if not _has_effect(tk, teff, ntasks, E_SWAP):
        return
    seen = ws[0][W_SEEN]
    _fill(seen, 0)
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
                _event(st[ST_EV], sc, EV_SWAP_FAILED, teff[t, j, 4], 0, 0, 0, 0)
                continue
            lin[p, _find(lin[p], give)] = take
            lin[q, _find(lin[q], take)] = give
            owner[give], owner[take] = q, p
            cf[CF_THIS_TURN, give] = 0
            cf[CF_THIS_TURN, take] = 0
            _event(st[ST_EV], sc, EV_SWAP, p, give, take, q, teff[t, j, 4])


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
                _event(st[ST_EV], sc, EV_STOPPED, c, 0, 0, 0, 0)
                continue
            _fill(tk[ntasks], 0)
            tk[ntasks, TK_CARD] = c
            tk[ntasks, TK_PLAYER] = owner[c]
            tk[ntasks, TK_CDESIGN] = card[0, c]
            tk[ntasks, TK_DESIGN] = card[0, c]
            tk[ntasks, TK_TAKE] = -1
            tk[ntasks, TK_KIND] = -1
            ntasks += 1
        sc[S_NTASKS] = ntasks
        if ntasks:  # the level's tasks share the Strengths and protections (see _advance)
            _strengths(tb, st, False, ws)
            nprot = _protectors(tb, st, ws[1], ws)
            for t in range(ntasks):
                _advance_ready(tb, st, t, ws, nprot)
        _set_movers(st)
        if lst[L_MOVERS, -1]:
            sc[S_PHASE] = CHOOSE
            return
        _apply_level(tb, st, ws)


@_njit
def _reveal(tb, st, ws):
    """``DemolitionDerbyState._reveal``: the picks join the lineups, Turn abilities start,
    the revealed Instants are queued by descending printed Strength and resolved."""
    card, des, ops = tb[1], tb[2], tb[3]
    cf, hand, lin, pick, lst, tp, sc = st[0], st[1], st[2], st[3], st[4], st[5], st[9]
    ev = st[ST_EV]
    n = lin.shape[0]
    sc[S_NEV] = 0  # a new turn's log
    sc[S_EV_OVER] = 0
    _event(ev, sc, EV_TURN, sc[S_DERBY], sc[S_TURN], 0, 0, 0)
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
            _event(ev, sc, EV_REVEAL, q, c, 0, 0, 0)
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
    _touch(ws)  # the picks joined the lineups
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
    _touch(ws)  # "deployed this turn" ends
    cf, hand, lin, lst, sc = st[0], st[1], st[2], st[4], st[9]
    _fill(cf[CF_THIS_TURN], 0)
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
    _fill_lengths(pick, 0)
    movers = lst[L_MOVERS]
    for q in range(pick.shape[0]):
        movers[q] = q
    movers[-1] = pick.shape[0]


@_njit
def _end_derby(tb, st, ws):
    """``DemolitionDerbyState._end_derby``: score the Derby, record it (``last_derby``,
    ``last_winners``, the "derby" event) and end the match or not. The next Derby is dealt
    by the caller (:func:`deal_derby`; the playouts: from their deal buffer)."""
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
    _fill(win, 0)
    if _amax(special) > 0:
        _copy_into(win, special)
        reason = R_CONDITION
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
        reason = R_STRENGTH
        if tied > 1:
            kept = 0
            for q in range(n):
                if win[q] and lin[q, -1] != most:
                    win[q] = 0
                kept += win[q]
            reason = R_COMBATANTS if kept == 1 else R_SHARED
    mask = 0
    for q in range(n):
        sc[S_WINS + B_WINS * n + q] += win[q]
        sc[S_WINS + B_LAST_WINNERS * n + q] = win[q]
        sc[S_WINS + B_LAST_TOTALS * n + q] = totals[q]
        sc[S_WINS + B_LAST_COMBATANTS * n + q] = lin[q, -1]
        mask |= win[q] << q
    sc[S_LAST_DERBY] = sc[S_DERBY]
    sc[S_LAST_REASON] = reason
    _event(st[ST_EV], sc, EV_DERBY, sc[S_DERBY], mask, reason, 0, 0)
    sc[S_DERBY] += 1
    top = _amax(sc[S_WINS : S_WINS + n])
    leaders = 0
    for q in range(n):
        leaders += sc[S_WINS + q] == top
    if (top >= params[P_WINS_NEEDED] and leaders == 1) or sc[S_DERBY] >= params[P_MAX_DERBIES]:
        for q in range(n):
            sc[S_WINS + B_FINAL * n + q] = sc[S_WINS + q] == top
        sc[S_PHASE] = OVER
        lst[L_MOVERS, -1] = 0
        _fill_lengths(pick, 0)


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


@_njit
def _start_derby(st):
    """``DemolitionDerbyState._start_derby`` after the deal (the hands are in place): empty
    lineups and piles, fresh card flags, the first turn."""
    cf, lin, lst, sc = st[0], st[2], st[4], st[9]
    _fill_lengths(lin, 0)
    lst[L_DISCARD, -1] = 0
    lst[L_DISCARD_TURN, -1] = 0
    _fill(cf[CF_OWNER], -1)
    _fill(cf[CF_FACE_UP], 1)
    _fill(cf[CF_THIS_TURN], 0)
    _fill(cf[CF_DONE], 0)
    sc[S_TURN] = 0
    _start_turn(st)


@_njit
def deal_derby(st, row, deal, deck, unused, scratch):
    """``DemolitionDerbyState._start_derby``: the Derby's deck (Mekk Mania: drawn type by
    type from the pool, ``Generator.choice`` without replacement, then sorted), shuffled
    (``Generator.permutation``) into the hands and the unused cards, drawn from the pcg64
    row ``row``. ``deal``: :func:`deal_tables`; ``deck``, ``unused``: lists (length last);
    ``scratch``: >= 3 * (cards + 8) words."""
    hand = st[1]
    n = hand.shape[0]
    h = hand.shape[1] - 1
    num = 0
    if deal[DT_MEKK, 0]:
        types = deal[DT_NTYPES, 0]
        out = scratch[: deal.shape[1]]
        fl = scratch[deal.shape[1] :]
        for t in range(types):
            k = deal[DT_TYPE_COUNTS, t]
            if k == 0:
                continue
            pool = deal[DT_POOL0 + t]
            pcg64.choice_without_replacement(row, deal[DT_POOL_SIZES, t], k, out, fl)
            for j in range(k):
                deck[num] = pool[out[j]]
                num += 1
        _insertion_sort(deck, num)
    else:
        num = deal[DT_STANDARD_SIZE, 0]
        for j in range(num):
            deck[j] = deal[DT_STANDARD, j]
    deck[-1] = num
    order = scratch[:num]
    pcg64.permutation(row, order, num)
    for q in range(n):
        for j in range(h):
            hand[q, j] = deck[order[q * h + j]]
        hand[q, -1] = h
    m = 0
    for j in range(n * h, num):
        unused[m] = deck[order[j]]
        m += 1
    unused[-1] = m
    _start_derby(st)


@_njit
def _insertion_sort(a, k):
    """Sort ``a[:k]`` ascending in place (a deck: a few dozen cards)."""
    for i in range(1, k):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


# the deal table's rows: flags and sizes, the standard deck, Mekk Mania's pool by type
DT_MEKK, DT_NTYPES, DT_STANDARD_SIZE, DT_STANDARD, DT_TYPE_COUNTS, DT_POOL_SIZES = range(6)
DT_POOL0 = 6


def deal_tables(game) -> np.ndarray:
    """What :func:`deal_derby` deals from: the variant, the standard deck, Mekk Mania's
    pool by type (in ``mekk_pool`` order) and the cards drawn of each type."""
    cs = game.cards
    n = game.num_players
    T = len(cs.types)
    width = cs.num_cards + 1
    out = np.zeros((DT_POOL0 + T, width), np.int64)
    out[DT_MEKK, 0] = game.params["variant"] == "mekk_mania"
    out[DT_NTYPES, 0] = T
    std = game._standard_deck
    out[DT_STANDARD_SIZE, 0] = len(std)
    out[DT_STANDARD, : len(std)] = std
    if out[DT_MEKK, 0]:
        out[DT_TYPE_COUNTS, :T] = cs.mekk_type_counts(n)
        by_type: list[list[int]] = [[] for _ in range(T)]
        for c in cs.mekk_pool():
            by_type[cs.card_type[c]].append(c)
        for t, cards in enumerate(by_type):
            out[DT_POOL_SIZES, t] = len(cards)
            out[DT_POOL0 + t, : len(cards)] = cards
    return out
