"""Demolition Derby: the ability interpreter (Instants, filters, conditions, protections).

An Instant being resolved is a :class:`Task`; :func:`advance` runs it until it needs a choice
(offered as ``task.opts``: action -> value) or is done. Effects are only recorded on the task
and applied together when the whole Strength level is done (:func:`apply_level`), so every
controller of a level chooses on the same snapshot. Functions take the state ``s`` first;
the rules (:mod:`.engine`) call them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derby_envs.core.seats import relative_seat
from derby_envs.games.demolition_derby.cards import Filter, Op
from derby_envs.games.demolition_derby.constants import (
    K_COPY,
    K_DISCARD,
    K_FACE_DOWN,
    K_GAIN,
    K_GIVE,
    K_TAKE,
)

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState


class Task:
    """One Instant ability being resolved at the current level."""

    __slots__ = (
        "card",
        "card_design",
        "design",
        "done",
        "effects",
        "i",
        "kind",
        "log",
        "made",
        "may",
        "opts",
        "player",
        "stage",
        "take",
    )  # fmt: skip

    def __init__(self, card: int, player: int, design: int) -> None:
        self.card = card  # source card id
        self.player = player  # controller (decides the choices)
        self.card_design = design
        self.design = design  # whose ability is used (Copycat: the copied design)
        self.i = 0  # op index
        self.stage = 0  # swap: 0 choose take, 1 choose give
        self.take = -1
        self.effects: list[tuple] = []  # primitive effects, applied at the end of the level
        self.opts: dict[int, int] | None = None  # pending decision: action -> value
        self.kind = -1
        self.may = False
        self.made = 0  # decisions made so far
        self.done = False
        self.log: list[tuple] = []  # events, published when the level is applied

    def copy(self) -> Task:
        # field by field (not a loop over __slots__ with getattr/setattr: search copies
        # states with tasks in resolution for every simulated action)
        t = Task.__new__(Task)
        t.card, t.player, t.card_design, t.design = (
            self.card,
            self.player,
            self.card_design,
            self.design,
        )
        t.i, t.stage, t.take, t.kind, t.may = self.i, self.stage, self.take, self.kind, self.may
        t.opts, t.made, t.done = self.opts, self.made, self.done  # opts is replaced, not mutated
        t.effects = self.effects[:]
        t.log = self.log[:]
        return t

    def dump(self) -> list:
        opts = None if self.opts is None else [[a, v] for a, v in self.opts.items()]
        return [
            self.card, self.player, self.card_design, self.design, self.i, self.stage,
            self.take, [list(e) for e in self.effects], opts, self.kind, self.may, self.made,
            self.done, [list(e) for e in self.log],
        ]  # fmt: skip

    @staticmethod
    def load(d: list) -> Task:
        t = Task(int(d[0]), int(d[1]), int(d[2]))
        t.design, t.i, t.stage, t.take = int(d[3]), int(d[4]), int(d[5]), int(d[6])
        t.effects = [tuple(e) for e in d[7]]
        t.opts = None if d[8] is None else {int(a): int(v) for a, v in d[8]}
        t.kind, t.may, t.made, t.done = int(d[9]), bool(d[10]), int(d[11]), bool(d[12])
        t.log = [tuple(e) for e in d[13]]
        return t


def cond_ok(
    s: DemolitionDerbyState, cond: tuple, q: int, source: int, totals: list[int] | None = None
) -> bool:
    cs = s.game.cards
    for key, v in cond:
        lineup = s.lineups[q] if q >= 0 else []
        if key == "min_combatants":
            ok = len(lineup) >= v
        elif key == "controls_type":
            ok = any(cs.card_type[c] == v for c in lineup)
        elif key == "min_distinct_types":
            ok = len({cs.card_type[c] for c in lineup}) >= v
        elif key == "strictly_lowest_total":  # below every other total
            ok = totals is not None and totals[q] == min(totals) and totals.count(totals[q]) == 1
        elif key == "only_of_type_this_turn":
            ok = not any(
                s.this_turn[c] and cs.card_type[c] == v and c != source
                for lin in s.lineups
                for c in lin
            )
        else:  # pragma: no cover - validated when loading
            raise AssertionError(key)
        if not ok:
            return False
    return True


def match_static(s: DemolitionDerbyState, f: Filter, c: int, player: int, source: int) -> bool:
    """Filter test without Strength bounds (used while computing Strengths)."""
    q = s.owner[c]
    if (f.owner == "you" and q != player) or (f.owner == "other" and q == player):
        return False
    if f.other and c == source:
        return False
    if f.this_turn is not None and s.this_turn[c] != f.this_turn:
        return False
    if (f.face == "up" and not s.face_up[c]) or (f.face == "down" and s.face_up[c]):
        return False
    return f.types is None or s.game.cards.card_type[c] in f.types


def static_in_lineup(
    s: DemolitionDerbyState, f: Filter, lineup: list[int], source: int
) -> list[int]:
    """The cards of ``lineup`` (one lineup, or the cards of several) that pass
    ``match_static`` but for the owner test (the caller's). One call per list, not per card."""
    other, ftt, face, types = f.other, f.this_turn, f.face, f.types
    if not other and ftt is None and face is None and types is None:
        return lineup
    fu, tt = s.face_up, s.this_turn
    ctype = s.game.cards.card_type
    out = []
    for c in lineup:
        if other and c == source:
            continue
        if ftt is not None and tt[c] != ftt:
            continue
        if (face == "up" and not fu[c]) or (face == "down" and fu[c]):
            continue
        if types is None or ctype[c] in types:
            out.append(c)
    return out


def match(s: DemolitionDerbyState, f: Filter, c: int, player: int, source: int) -> bool:
    if not match_static(s, f, c, player, source):
        return False
    if f.strength_min is None and f.strength_max is None:
        return True
    v = s.strengths()[c]
    return not (
        (f.strength_min is not None and v < f.strength_min)
        or (f.strength_max is not None and v > f.strength_max)
    )


def lineup_cards(s: DemolitionDerbyState, f: Filter, player: int, source: int) -> list[int]:
    """Lineup cards matching ``f`` (``match``), Strengths read once."""
    owner = f.owner
    pool = []  # the cards of the lineups the owner test keeps, in seat order
    for q, lineup in enumerate(s.lineups):
        if not ((owner == "you" and q != player) or (owner == "other" and q == player)):
            pool += lineup
    cards = static_in_lineup(s, f, pool, source)  # one call: its tests read no owner
    lo, hi = f.strength_min, f.strength_max
    if lo is None and hi is None:
        return cards
    st = s.strengths()
    return [c for c in cards if (lo is None or st[c] >= lo) and (hi is None or st[c] <= hi)]


def protectors(s: DemolitionDerbyState) -> list[tuple[int, int, Op]]:
    """Active protections: (protected player, source card, op) for Turn effects (bound to
    the deploying player) and Ongoing ones (face-up cards, their current controller)."""
    if s._prot is None:
        g = s.game
        cd = g.cards.card_design
        fu = s.face_up
        guards, protect_ops = g._guard_cards, g._protect_ops
        out = []
        for p, src, d in s.turn_protect:
            out += [(p, src, op) for op in protect_ops[d]]
        for q, lineup in enumerate(s.lineups):
            if guards.isdisjoint(lineup):
                continue
            for card in lineup:
                if card in guards and fu[card]:
                    out += [
                        (q, card, op)
                        for op in protect_ops[cd[card]]
                        if not op.cond or cond_ok(s, op.cond, q, card)
                    ]
        s._prot = out
    return s._prot


def protected(s: DemolitionDerbyState, c: int, kind: str, actor: int) -> bool:
    """Whether card ``c`` cannot be discarded / swapped (``kind``) by ``actor``'s ability."""
    prot = s._prot if s._prot is not None else protectors(s)
    for p, src, op in prot:
        if kind in op.against and (op.source == "any" or actor != p):
            if match(s, op.targets, c, p, src):
                return True
    return False


def target_action(s: DemolitionDerbyState, c: int, player: int) -> int:
    g = s.game
    q = s.owner[c]
    r = relative_seat(player, q, g.num_players)
    return g.action_offsets["target"] + r * g.slots + s.lineups[q].index(c)


def target_options(s: DemolitionDerbyState, cards: list[int], player: int) -> dict[int, int]:
    """{target action: card} for lineup cards, as ``target_action`` numbers them."""
    g = s.game
    S = g.slots
    base = g.action_offsets["target"]
    owner, lineups = s.owner, s.lineups
    rel = g.relative_seats[player]
    out = {}
    for c in cards:
        q = owner[c]
        out[base + rel[q] * S + lineups[q].index(c)] = c
    return out


def advance(s: DemolitionDerbyState, t: Task) -> None:
    """Run task ``t`` until it needs a decision or is done (effects are only recorded)."""
    designs = s.game.cards.designs
    while not t.done and t.opts is None:
        ops = designs[t.design].ops
        if t.i >= len(ops):
            t.done = True
            return
        op: Op = ops[t.i]
        if op.cond and not cond_ok(s, op.cond, t.player, t.card):
            t.i += 1
            continue
        step = _STEPS.get(op.op)
        if step is None:  # pragma: no cover - validated when loading
            raise AssertionError(op.op)
        if not step(s, t, op):
            return


# One step of an Instant per op kind: True if the task goes on at once, False if it stops
# here (a decision is pending, or the ability fizzled).


def _step_remove(s: DemolitionDerbyState, t: Task, op: Op) -> bool:
    """``discard`` / ``face_down``: the ability's own card, a chosen target or a mass
    selection (discards spare protected cards)."""
    kind = op.op
    if op.select == "self":
        if s.owner[t.card] >= 0 and not (
            kind == "discard" and protected(s, t.card, "discard", t.player)
        ):
            t.effects.append((kind, t.card, t.card))
        t.i += 1
        return True
    cands = lineup_cards(s, op.targets, t.player, t.card)
    if op.select == "choose":
        if kind == "discard" and protectors(s):
            cands = [c for c in cands if not protected(s, c, "discard", t.player)]
        opts = target_options(s, cands, t.player)
        return offer(s, t, op, opts, K_DISCARD if kind == "discard" else K_FACE_DOWN)
    chosen = mass_select(s, op.select, cands)
    guarded = kind == "discard" and bool(protectors(s))
    for c in chosen:
        if not guarded or not protected(s, c, "discard", t.player):
            t.effects.append((kind, c, t.card))
    t.i += 1
    return True


def _step_gain(s: DemolitionDerbyState, t: Task, op: Op) -> bool:
    """``gain``: a design from this turn's discards (or the whole pile)."""
    cs = s.game.cards
    base = s.game.action_offsets["gain"]
    pile = s.discard_turn if op.source_pile == "discarded_this_turn" else s.discard
    opts = {}
    for c in pile:
        if match_pile(s, op.targets, c):
            opts[base + cs.card_design[c]] = cs.card_design[c]
    return offer(s, t, op, opts, K_GAIN)


def _step_swap(s: DemolitionDerbyState, t: Task, op: Op) -> bool:
    """``swap``: choose what to take (stage 0), then what to give (stage 1)."""
    if t.stage == 0:
        takes = [
            c
            for c in lineup_cards(s, op.take, t.player, t.card)
            if s.owner[c] != t.player and not protected(s, c, "swap", t.player)
        ]
        if not takes or not swap_gives(s, op, t):
            t.done = True  # fizzles
            t.log.append(("fizzle", t.card))
            return False
        return offer(s, t, op, target_options(s, takes, t.player), K_TAKE)
    opts = target_options(s, swap_gives(s, op, t), t.player)
    if len(opts) > 1:
        t.opts, t.kind, t.may = opts, K_GIVE, False
        return False
    give = next(iter(opts.values()))
    t.effects.append(("swap", t.player, give, t.take, t.card))
    t.stage, t.take = 0, -1
    t.i += 1
    return True


def _step_copy(s: DemolitionDerbyState, t: Task, op: Op) -> bool:
    """``copy_instant``: the Instant of a face-up combatant (never another copy ability)."""
    cs = s.game.cards
    base = s.game.action_offsets["copy"]
    opts = {}
    for c in lineup_cards(s, op.targets, t.player, t.card):
        d = cs.designs[cs.card_design[c]]
        if s.face_up[c] and d.has_instant and not d.copies_instant:
            opts[base + d.index] = d.index
    return offer(s, t, op, opts, K_COPY)


_STEPS = {
    "discard": _step_remove,
    "face_down": _step_remove,
    "gain": _step_gain,
    "swap": _step_swap,
    "copy_instant": _step_copy,
}


def swap_gives(s: DemolitionDerbyState, op: Op, t: Task) -> list[int]:
    if op.give is None:
        return [t.card] if s.owner[t.card] == t.player else []
    return [
        c
        for c in lineup_cards(s, op.give, t.player, t.card)
        if s.owner[c] == t.player and not protected(s, c, "swap", t.player)
    ]


def match_pile(s: DemolitionDerbyState, f: Filter | None, c: int) -> bool:
    if f is None:
        return True
    cs = s.game.cards
    v = cs.card_strength[c]
    if f.types is not None and cs.card_type[c] not in f.types:
        return False
    if f.strength_min is not None and v < f.strength_min:
        return False
    return f.strength_max is None or v <= f.strength_max


def offer(s: DemolitionDerbyState, t: Task, op: Op, opts: dict[int, int], kind: int) -> bool:
    """Offer a choice. Returns False if the task stops here (decision pending or fizzled);
    True if the choice was taken automatically (the task goes on)."""
    if not opts:
        t.done = True  # nothing to choose: the rest of the ability fizzles
        t.log.append(("fizzle", t.card))
        return False
    if op.may:
        opts = dict(opts)
        opts[s.game.action_offsets["decline"]] = -1
    if len(opts) > 1:
        t.opts, t.kind, t.may = opts, kind, op.may
        return False
    (value,) = opts.values()
    record(s, t, kind, value)
    return True


def record(s: DemolitionDerbyState, t: Task, kind: int, value: int) -> None:
    """Apply a chosen ``value`` to task ``t`` (the op at ``t.i``)."""
    if kind == K_DISCARD:
        t.effects.append(("discard", value, t.card))
    elif kind == K_FACE_DOWN:
        t.effects.append(("face_down", value, t.card))
    elif kind == K_GAIN:
        whole = s.game.cards.designs[t.design].ops[t.i].source_pile == "discard"
        t.effects.append(("gain", t.player, value, t.card, int(whole)))
    elif kind == K_COPY:
        t.log.append(("copy", t.card, value))
        t.design = value
        t.i = 0
        return
    elif kind == K_TAKE:
        t.take = value
        t.stage = 1
        return
    elif kind == K_GIVE:
        t.effects.append(("swap", t.player, value, t.take, t.card))
        t.stage, t.take = 0, -1
    t.i += 1


def decide(s: DemolitionDerbyState, t: Task, action: int) -> None:
    value = t.opts[action]
    kind = t.kind
    t.opts = None
    t.made += 1
    if action == s.game.action_offsets["decline"]:
        t.done = True
        t.log.append(("decline", t.card))
        return
    if action == s.game.action_offsets["accept"]:
        t.i += 1
        return
    record(s, t, kind, value)


def mass_select(s: DemolitionDerbyState, select: str, cands: list[int]) -> list[int]:
    if select == "all" or not cands:
        return cands
    st = s.strengths()
    if select == "lowest_each_player":
        # each player's candidates, players in seat order, each in ``cands`` order
        owner = s.owner
        mine: dict[int, list[int]] = {}
        for c in cands:
            mine.setdefault(owner[c], []).append(c)
        out = []
        for q in sorted(mine):
            low = min(st[c] for c in mine[q])
            out += [c for c in mine[q] if st[c] == low]
        return out
    if select == "single_strongest":
        top = max(st[c] for c in cands)
        best = [c for c in cands if st[c] == top]
        return best if len(best) == 1 else []
    raise AssertionError(select)  # pragma: no cover


def apply_level(s: DemolitionDerbyState) -> None:
    """Apply the effects of every Instant of the level together, in the order discards,
    turn-face-down, gains, swaps."""
    discards: list[tuple[int, int]] = []
    face_downs: list[tuple[int, int]] = []
    gains: list[tuple[int, int, int, int]] = []
    swaps: list[tuple[int, int, int, int]] = []
    for t in s.tasks:
        for e in t.effects:
            if e[0] == "discard":
                discards.append((e[1], e[2]))
            elif e[0] == "face_down":
                face_downs.append((e[1], e[2]))
            elif e[0] == "gain":
                gains.append((e[1], e[2], e[3], e[4]))
            else:
                swaps.append((e[1], e[2], e[3], e[4]))
        s.events += t.log
    s.tasks = []
    # gains choose among the piles as they were before this level's discards
    piles_before = (s.discard_turn[:], s.discard[:]) if gains else ([], [])
    _apply_discards(s, discards)
    for c, src in face_downs:
        if s.owner[c] >= 0 and s.face_up[c]:
            s.face_up[c] = False
            s.events.append(("face_down", c, src, s.owner[c]))
    if gains:
        _apply_gains(s, gains, piles_before)
    if swaps:
        _apply_swaps(s, swaps)
    if discards or face_downs or gains or swaps:
        s._clear_lineup_caches()


def _apply_discards(s: DemolitionDerbyState, discards: list[tuple[int, int]]) -> None:
    for c, src in discards:
        q = s.owner[c]
        if q < 0:
            continue  # already discarded by another effect of this level
        s.lineups[q].remove(c)
        s.owner[c] = -1
        s.this_turn[c] = False
        s.face_up[c] = True
        s.discard.append(c)
        s.discard_turn.append(c)
        s.events.append(("discard", c, src, q))
        if c in s.queue:  # discarded before its Instant resolved: cancelled
            s.queue.remove(c)
            s.events.append(("cancel", c))


def _apply_gains(
    s: DemolitionDerbyState,
    gains: list[tuple[int, int, int, int]],
    piles_before: tuple[list[int], list[int]],
) -> None:
    """Gains of one design from one pile by more players than it has copies: nobody gains."""
    cd = s.game.cards.card_design
    wanted: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for p, d, src, whole in gains:
        wanted.setdefault((d, whole), []).append((p, src))
    for (d, whole), who in wanted.items():
        avail = [c for c in piles_before[whole] if cd[c] == d and s.owner[c] < 0 and c in s.discard]
        if len(who) > len(avail):
            s.events.append(("contested", d))
            continue
        for (p, src), c in zip(who, avail, strict=False):
            s.discard.remove(c)
            if c in s.discard_turn:
                s.discard_turn.remove(c)
            s.lineups[p].append(c)
            s.owner[c] = p
            s.face_up[c] = True
            s.this_turn[c] = False
            s.instant_done[c] = True
            s.events.append(("gain", p, c, src))


def _apply_swaps(s: DemolitionDerbyState, swaps: list[tuple[int, int, int, int]]) -> None:
    """Two swaps involving one card cancel each other."""
    seen: dict[int, int] = {}
    for _, give, take, _src in swaps:
        seen[give] = seen.get(give, 0) + 1
        seen[take] = seen.get(take, 0) + 1
    for p, give, take, src in swaps:
        q = s.owner[take]
        if seen[give] > 1 or seen[take] > 1 or s.owner[give] != p or q < 0 or q == p:
            s.events.append(("swap_failed", src))
            continue
        a, b = s.lineups[p], s.lineups[q]
        a[a.index(give)] = take
        b[b.index(take)] = give
        s.owner[give], s.owner[take] = q, p
        s.this_turn[give] = s.this_turn[take] = False
        s.events.append(("swap", p, give, take, q, src))
