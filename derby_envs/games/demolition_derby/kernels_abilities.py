"""Demolition Derby's rules compiled: the Instant abilities (mirrors :mod:`.abilities`).

A task is one Instant being resolved at the current level (``abilities.Task``: a row of the
state's ``tk``, its options in ``topt``, its recorded effects in ``teff``, its log in
``tlog``); :func:`_advance` runs it until it needs a choice, :func:`_decide` applies one. See
:mod:`.kernels` for the state and the tables.
"""

from __future__ import annotations

from derby_envs.games.demolition_derby.kernels import (
    A_DISCARD,
    A_SWAP,
    CF_FACE_UP,
    CF_OWNER,
    DC_COPIES,
    DC_INSTANT,
    DC_OP0,
    DC_OP1,
    E_DISCARD,
    E_FACE_DOWN,
    E_GAIN,
    E_SWAP,
    EV_COPY,
    EV_DECLINE,
    EV_FIZZLE,
    FC_TYPES,
    K_COPY,
    K_DISCARD,
    K_FACE_DOWN,
    K_GAIN,
    K_GIVE,
    K_TAKE,
    L_DISCARD,
    L_DISCARD_TURN,
    O_COPY,
    O_DISCARD,
    O_FACE_DOWN,
    O_GAIN,
    O_SWAP,
    OC_GIVE,
    OC_MAY,
    OC_NCOND,
    OC_OP,
    OC_PILE,
    OC_SELECT,
    OC_TAKE,
    OC_TARGETS,
    P_ACCEPT,
    P_C0,
    P_DECLINE,
    P_G0,
    SEL_ALL,
    SEL_CHOOSE,
    SEL_LOWEST,
    SEL_SELF,
    ST_TLOG,
    TK_CARD,
    TK_DESIGN,
    TK_DONE,
    TK_I,
    TK_KIND,
    TK_MADE,
    TK_MAY,
    TK_NEFF,
    TK_NOPTS,
    TK_PLAYER,
    TK_STAGE,
    TK_TAKE,
    W_ACTS,
    W_CANDS,
    W_DUMMY,
    W_HERE,
    W_STV,
    W_VALS,
    _bounds_ok,
    _cond_ok,
    _lineup_cards,
    _log,
    _njit,
    _protected,
    _protectors,
    _strengths,
    _target_action,
)

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
        _log(st[ST_TLOG], tk, t, EV_COPY, card, value)
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
        _log(st[ST_TLOG], tk, t, EV_FIZZLE, tk[t, TK_CARD], 0)
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
    # the effects are applied when the level is: the lineups, hence the Strengths and
    # the protections, stay as they are while a task runs
    _strengths(tb, st, False, ws)
    _advance_ready(tb, st, t, ws, _protectors(tb, st, ws[1], ws))


@_njit
def _advance_ready(tb, st, t, ws, nprot):
    """:func:`_advance` with the current Strengths (W_STV) and the ``nprot`` active
    protections (``ws[1]``) already computed (the tasks of one level share them)."""
    des, ops = tb[2], tb[3]
    tk = st[6]
    dummy = ws[0][W_DUMMY]
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
            _log(st[ST_TLOG], tk, t, EV_FIZZLE, src, 0)
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
        _log(st[ST_TLOG], tk, t, EV_DECLINE, tk[t, TK_CARD], 0)
        return
    if action == params[P_ACCEPT]:
        tk[t, TK_I] += 1
        return
    _record(tb, st, t, kind, value)
