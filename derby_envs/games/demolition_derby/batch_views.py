"""Demolition Derby's views compiled: legal masks and observations of one game's packed state
(mirrors :meth:`.engine.DemolitionDerbyState._compute_mask` and :mod:`.observer`), for the
batched engine (:mod:`.batch`). Values are computed in float64 and stored as float32, as the
Python observer builds them.
"""

from __future__ import annotations

import numpy as np

from derby_envs.games.demolition_derby.kernels import (
    A_DISCARD,
    A_SWAP,
    B_LAST_WINNERS,
    CF_FACE_UP,
    CF_OWNER,
    CF_THIS_TURN,
    CHOOSE,
    DEPLOY,
    L_DISCARD,
    L_DISCARD_TURN,
    L_MOVERS,
    L_QUEUE,
    L_STOPPERS,
    OVER,
    P_D,
    P_N,
    P_PICKS,
    P_S,
    P_SCAP,
    P_TCAP,
    S_DERBY,
    S_LEVEL,
    S_NTASKS,
    S_PHASE,
    S_TURN,
    S_WINS,
    TK_CARD,
    TK_CDESIGN,
    TK_DESIGN,
    TK_KIND,
    TK_MAY,
    TK_NOPTS,
    TK_PLAYER,
    W_SPECIAL,
    W_STV,
    W_TOTALS,
    _derby_scores,
    _fill,
    _find,
    _njit,
    _protected,
    _protectors,
    _strengths,
)
from derby_envs.games.demolition_derby.observer import LINEUP_EXTRA

# the observation table's entries (OT_*): slice starts, then the game's facts
OBS_SLICES = (
    "to_act", "hand", "picks", "picks_left", "known_hands", "known", "unseen", "unseen_types",
    "unknown_cards", "decision_kind", "decision_may", "decision_card", "decision_ability",
    "decisions_left", "phase", "progress", "level", "instants_stopped", "wins", "hand_sizes",
    "combatants", "totals", "special_win", "last_winners", "lineups", "discard",
    "discarded_this_turn",
)  # fmt: skip
(O_TO_ACT, O_HAND, O_PICKS, O_PICKS_LEFT, O_KNOWN_HANDS, O_KNOWN, O_UNSEEN, O_UNSEEN_TYPES,
 O_UNKNOWN_CARDS, O_DEC_KIND, O_DEC_MAY, O_DEC_CARD, O_DEC_ABILITY, O_DECISIONS_LEFT, O_PHASE,
 O_PROGRESS, O_LEVEL, O_STOPPED, O_WINS, O_HAND_SIZES, O_COMBATANTS, O_TOTALS, O_SPECIAL,
 O_LAST_WINNERS, O_LINEUPS, O_DISCARD, O_DISCARD_TURN) = range(27)  # fmt: skip
(OT_MEKK, OT_NUM_CARDS, OT_HAND_SIZE, OT_TURNS, OT_MAX_LEVEL, OT_WINS_NEEDED, OT_MAX_DERBIES,
 OT_POOL) = range(27, 35)  # fmt: skip
# OT_POOL: Mekk Mania's pool by design (D entries)


def obs_table(game) -> np.ndarray:
    """The observation's slice starts and the facts :func:`observe_one` reads."""
    sl = game.observation_slices
    D = game.num_designs
    t = np.zeros(OT_POOL + D, np.int64)
    for k, name in enumerate(OBS_SLICES):
        t[k] = sl[name].start
    t[OT_MEKK] = game.params["variant"] == "mekk_mania"
    t[OT_NUM_CARDS] = game.cards.num_cards
    t[OT_HAND_SIZE] = game.hand_size
    t[OT_TURNS] = game.turns_per_derby
    t[OT_MAX_LEVEL] = game.max_level
    t[OT_WINS_NEEDED] = game.params["wins_needed"]
    t[OT_MAX_DERBIES] = game.params["max_derbies"]
    if t[OT_MEKK]:
        t[OT_POOL:] = game.pool_design_counts.astype(np.int64)
    return t


@_njit
def legal_mask_one(tb, st, p, out):
    """``State._compute_mask(p)``: deploy picks (the designs in the hand not picked yet) or
    the options of ``p``'s pending ability choice; zeros when ``p`` is not to move."""
    card = tb[1]
    hand, pick, lst, tk, topt, sc = st[1], st[3], st[4], st[6], st[7], st[9]
    _fill(out, 0)
    if _find(lst[L_MOVERS], p) < 0:
        return
    if sc[S_PHASE] == DEPLOY:
        for i in range(hand[p, -1]):
            out[card[0, hand[p, i]]] += 1
        for j in range(pick[p, -1]):
            out[pick[p, j]] -= 1
        for d in range(tb[0][P_D]):
            out[d] = 1 if out[d] > 0 else 0
        return
    for t in range(sc[S_NTASKS]):
        if tk[t, TK_PLAYER] == p and tk[t, TK_NOPTS] > 0:
            for j in range(tk[t, TK_NOPTS]):
                out[topt[t, j, 0]] = 1
            return


@_njit
def observe_one(tb, st, deck, unused, ot, ws, p, v):
    """``observer.observation(s, p)`` into ``v`` (zeroed here)."""
    _fill(v, 0.0)
    if st[9][S_PHASE] != OVER:  # the private part is zero once the match is over
        _observe_private(tb, st, deck, unused, ot, p, v)
        if st[9][S_PHASE] == CHOOSE:
            _observe_decision(st, ot, p, v)
    _observe_public(tb, st, ot, ws, p, v)


@_njit
def _observe_private(tb, st, deck, unused, ot, p, v):
    """``observer.build_private`` without the ability choice: to_act, the hand and the
    picks, the known hands, the cards ``p`` cannot place."""
    params, card = tb[0], tb[1]
    hand, pick, lst, sc = st[1], st[3], st[4], st[9]
    n, D = params[P_N], params[P_D]
    ctype = card[1]
    v[ot[O_TO_ACT]] = 1.0 if _find(lst[L_MOVERS], p) >= 0 else 0.0
    h0, k0 = ot[O_HAND], ot[O_PICKS]
    for i in range(hand[p, -1]):
        v[h0 + card[0, hand[p, i]]] += 1.0
    for j in range(pick[p, -1]):
        v[h0 + pick[p, j]] -= 1.0
        v[k0 + pick[p, j]] += 1.0
    if sc[S_PHASE] == DEPLOY:
        ppt = params[P_PICKS]
        v[ot[O_PICKS_LEFT]] = (ppt - pick[p, -1]) / ppt
    known = min(sc[S_TURN], n - 1)
    for r in range(1, known + 1):
        q = (p + r) % n
        b = ot[O_KNOWN_HANDS] + (r - 1) * D
        for i in range(hand[q, -1]):
            v[b + card[0, hand[q, i]]] += 1.0
        v[ot[O_KNOWN] + r - 1] = 1.0
    u0, t0 = ot[O_UNSEEN], ot[O_UNSEEN_TYPES]
    count = unused[-1]
    for i in range(unused[-1]):
        v[u0 + card[0, unused[i]]] += 1.0
        v[t0 + ctype[unused[i]]] += 1.0
    for r in range(known + 1, n):
        q = (p + r) % n
        count += hand[q, -1]
        for i in range(hand[q, -1]):
            v[u0 + card[0, hand[q, i]]] += 1.0
            v[t0 + ctype[hand[q, i]]] += 1.0
    if ot[OT_MEKK]:  # also the cards still in the box
        for d in range(D):
            v[u0 + d] += ot[OT_POOL + d]
        for i in range(deck[-1]):
            v[u0 + card[0, deck[i]]] -= 1.0
    v[ot[O_UNKNOWN_CARDS]] = count / ot[OT_NUM_CARDS]


@_njit
def _observe_decision(st, ot, p, v):
    """``observer.overlay_private``'s ability choice: ``p``'s first pending task."""
    tk, sc = st[6], st[9]
    first, mine = -1, 0
    for t in range(sc[S_NTASKS]):
        if tk[t, TK_PLAYER] == p and tk[t, TK_NOPTS] > 0:
            if first < 0:
                first = t
            mine += 1
    if first >= 0:
        v[ot[O_DEC_KIND] + tk[first, TK_KIND]] = 1.0
        v[ot[O_DEC_MAY]] = 1.0 if tk[first, TK_MAY] else 0.0
        v[ot[O_DEC_CARD] + tk[first, TK_CDESIGN]] = 1.0
        v[ot[O_DEC_ABILITY] + tk[first, TK_DESIGN]] = 1.0
        v[ot[O_DECISIONS_LEFT]] = min(mine, 8) / 8


@_njit
def _observe_public(tb, st, ot, ws, p, v):
    """``observer.build_public`` in ``p``'s seat order (``public_perm``)."""
    params, card = tb[0], tb[1]
    hand, lin, lst, sc = st[1], st[2], st[4], st[9]
    n, S = params[P_N], params[P_S]
    phase, turn = sc[S_PHASE], sc[S_TURN]
    v[ot[O_PHASE] + phase] = 1.0
    v[ot[O_PROGRESS]] = sc[S_DERBY] / ot[OT_MAX_DERBIES]
    v[ot[O_PROGRESS] + 1] = min(turn / max(ot[OT_TURNS] - 1, 1), 1.0)
    v[ot[O_LEVEL] + (sc[S_LEVEL] if phase == CHOOSE else ot[OT_MAX_LEVEL] + 1)] = 1.0
    v[ot[O_STOPPED]] = 1.0 if lst[L_STOPPERS, -1] > 0 else 0.0
    for r in range(n):
        q = (p + r) % n
        v[ot[O_WINS] + r] = sc[S_WINS + q] / ot[OT_WINS_NEEDED]
        if sc[S_WINS + B_LAST_WINNERS * n + q]:
            v[ot[O_LAST_WINNERS] + r] = 1.0
    if phase == OVER:  # no hands, no lineups shown
        return
    _strengths(tb, st, False, ws)
    _derby_scores(tb, st, ws)
    totals, special = ws[0][W_TOTALS], ws[0][W_SPECIAL]
    for r in range(n):
        q = (p + r) % n
        v[ot[O_HAND_SIZES] + r] = hand[q, -1] / ot[OT_HAND_SIZE]
        v[ot[O_COMBATANTS] + r] = lin[q, -1] / S
        v[ot[O_TOTALS] + r] = min(totals[q], params[P_TCAP]) / 10
        if special[q]:
            v[ot[O_SPECIAL] + r] = 1.0
    _observe_lineups(tb, st, ot, ws, p, v)
    d0, t0 = ot[O_DISCARD], ot[O_DISCARD_TURN]
    for i in range(lst[L_DISCARD, -1]):
        v[d0 + card[0, lst[L_DISCARD, i]]] += 1.0
    for i in range(lst[L_DISCARD_TURN, -1]):
        v[t0 + card[0, lst[L_DISCARD_TURN, i]]] += 1.0


@_njit
def _observe_lineups(tb, st, ot, ws, p, v):
    """``observer._write_lineups`` (with ``protected_vs_others``: protected against the
    player on the left of the card's owner); the current Strengths in W_STV."""
    params, card, ops, fil = tb[0], tb[1], tb[3], tb[4]
    cf, lin, lst, tk, sc = st[0], st[2], st[4], st[6], st[9]
    n, D, S = params[P_N], params[P_D], params[P_S]
    ctype, owner, stv, scap = card[1], cf[CF_OWNER], ws[0][W_STV], params[P_SCAP]
    nprot = _protectors(tb, st, ws[1], ws)
    F = D + LINEUP_EXTRA
    for r in range(n):
        q = (p + r) % n
        for k in range(lin[q, -1]):
            c = lin[q, k]
            b = ot[O_LINEUPS] + (r * S + k) * F
            v[b + card[0, c]] = 1.0
            v[b + D] = 1.0 if cf[CF_FACE_UP, c] else 0.0
            v[b + D + 1] = 1.0 if cf[CF_THIS_TURN, c] else 0.0
            queued = _find(lst[L_QUEUE], c) >= 0
            for t in range(sc[S_NTASKS]):
                queued = queued or tk[t, TK_CARD] == c
            v[b + D + 2] = 1.0 if queued else 0.0
            if nprot:
                actor = (owner[c] + 1) % n  # "any other player": the one on the left
                if _protected(ops, fil, ctype, cf, ws[1], nprot, stv, c, A_DISCARD, actor):
                    v[b + D + 3] = 1.0
                if _protected(ops, fil, ctype, cf, ws[1], nprot, stv, c, A_SWAP, actor):
                    v[b + D + 4] = 1.0
            x = stv[c]
            v[b + D + 5] = (x if x < scap else scap) / 4
