"""Demolition Derby: current Strengths, and the totals and conditions that score a Derby.

A card's current Strength is its printed one plus Ongoing modifiers (never below 0); at the
end of a Derby, Derby abilities first change base Strengths. Only lineups holding a face-up
card that changes Strengths are computed card by card; those results are memoised on the game
by lineup (cards, order, faces, deployed this turn) when no such ability reads other lineups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derby_envs.games.demolition_derby.abilities import cond_ok, static_in_lineup

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState

_MEMO_CAP = 50_000  # lineup Strength memo entries kept (cleared when full)


class Memo(dict):
    """A cache that copies and pickles as empty (it is rebuilt on use)."""

    def __reduce__(self) -> tuple:
        return (Memo, ())


def compute_strengths(s: DemolitionDerbyState, derby: bool) -> list[int]:
    g = s.game
    cs = g.cards
    fu, tt = s.face_up, s.this_turn
    cd = cs.card_design
    # only face-up cards of these designs change a Strength: a lineup without one keeps
    # the printed Strengths (never below 0: printed Strengths are validated >= 0)
    memo = g._strength_memo
    if derby and s._str is not None:
        # the Derby pass differs from the current Strengths only in lineups holding a
        # Derby ability that changes a base Strength
        modcards = g._modifier_cards[2]
        st = s._str[:]
    else:
        modcards = g._modifier_cards[1 if derby else 0]
        st = cs.card_strength[:]
    for q, lineup in enumerate(s.lineups):
        if modcards.isdisjoint(lineup):  # a C-speed test: most lineups have none
            continue
        for c in lineup:
            if fu[c] and c in modcards:
                break
        else:
            continue
        if memo is None:
            vals = lineup_strengths(s, q, lineup, derby)
        else:
            # a lineup's Strengths depend on its cards' designs (two copies of a design are
            # alike: the rules read a card's design, type and printed Strength, and whether
            # it is the ability's own card, which is its slot), their order, faces and which
            # were deployed this turn (the memo is only used when nothing else is read)
            key = (derby, *[cd[c] * 4 + 2 * fu[c] + tt[c] for c in lineup])
            vals = memo.get(key)
            if vals is None:
                if len(memo) >= _MEMO_CAP:
                    memo.clear()
                vals = memo[key] = lineup_strengths(s, q, lineup, derby)
        for c, x in zip(lineup, vals, strict=True):
            st[c] = x
    return st


def lineup_strengths(s: DemolitionDerbyState, q: int, lineup: list[int], derby: bool) -> list[int]:
    """Strengths of player ``q``'s lineup (in lineup order): printed (with ``derby``:
    changed by Derby abilities) plus Ongoing modifiers, never below 0."""
    cs = s.game.cards
    designs = cs.designs
    cd = cs.card_design
    printed = cs.card_strength
    base = {c: printed[c] for c in lineup}
    mods = dict.fromkeys(lineup, 0)
    for card in lineup:
        if not s.face_up[card]:
            continue
        d = designs[cd[card]]
        if d.timing == "ongoing":
            for op in d.ops:
                if op.op != "modify_strength" or not cond_ok(s, op.cond, q, card):
                    continue
                amt = op.amount
                if op.per is not None:  # counted over the combatants q controls
                    per = op.per
                    amt *= (
                        0 if per.owner == "other" else len(static_in_lineup(s, per, lineup, card))
                    )
                if op.scope == "self":
                    mods[card] += amt
                else:
                    for c in lineup:
                        if c != card or op.scope == "all_yours":
                            mods[c] += amt
        elif derby and d.timing == "derby":
            for op in d.ops:
                if op.op == "set_strength" and cond_ok(s, op.cond, q, card):
                    base[card] = op.value
                elif op.op == "add_strength" and cond_ok(s, op.cond, q, card):
                    base[card] += op.value
    out = []
    for c in lineup:
        v = base[c] + mods[c]
        out.append(v if v > 0 else 0)
    return out


def derby_scores(s: DemolitionDerbyState) -> tuple[list[int], list[int]]:
    """(totals with Derby abilities, players who win by a Derby condition)."""
    if s._scores is None:
        s._scores = compute_derby_scores(s)
    return s._scores


def compute_derby_scores(s: DemolitionDerbyState) -> tuple[list[int], list[int]]:
    st = compute_strengths(s, derby=True)
    totals = []
    for lineup in s.lineups:
        total = 0
        for c in lineup:  # a plain loop: cheaper than sum(map(...)) on lineups this short
            total += st[c]
        totals.append(total)
    winif = s.game._win_if_cards
    conds = s.game._win_if_conds
    fu = s.face_up
    special = []  # in seat order, each once
    for q, lineup in enumerate(s.lineups):
        if winif.isdisjoint(lineup):
            continue
        if any(
            fu[card] and cond_ok(s, cond, q, card, totals)
            for card in lineup
            if card in winif
            for cond in conds[card]
        ):
            special.append(q)
    return totals, special
