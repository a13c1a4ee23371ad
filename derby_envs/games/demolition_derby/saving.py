"""Demolition Derby: the saved match. The state's fields are declared once (``fields`` on
:class:`~.engine.DemolitionDerbyState`, from :mod:`derby_envs.core.fields`); this module holds
the field kinds particular to this game (per-card flags saved as card ids, the abilities in
resolution, the event log) and the named checks a restored match must pass: every field typed
and range-checked, then the position one the rules can reach (cards conserved, whose move, the
pending abilities re-derived from the position).

The saved payload is the one saved before the declaration except ``phase``, saved by name like
every game's enumerations (a saved int still loads); flags are lists of card ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from derby_envs.core.errors import StateFormatError
from derby_envs.core.fields import Field
from derby_envs.core.game import saved_bool, saved_check, saved_int, saved_ints, saved_list
from derby_envs.games.demolition_derby import abilities as ab
from derby_envs.games.demolition_derby.abilities import Task
from derby_envs.games.demolition_derby.constants import CHOOSE, DEC_KINDS, DEPLOY, OVER

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState


def num_cards(g: Any) -> int:
    return g.cards.num_cards


def last_card(g: Any) -> int:
    """The highest card id (a bound for declarations)."""
    return g.cards.num_cards - 1


def last_seat(g: Any) -> int:
    return g.num_players - 1


# ----- field kinds of this game -----------------------------------------------------------
class CardFlags(Field):
    """One bool per card of the set (a list), saved as the ids of the cards where it is set."""

    copy = "list"

    def load(self, raw: Any, game: Any, state: Any) -> list[bool]:
        flags = [False] * game.cards.num_cards
        for c in saved_ints(raw, self.name, None, 0, last_card(game)):
            flags[c] = True
        return flags

    def dump(self, value: Any) -> list[int]:
        return [c for c, f in enumerate(value) if f]


class Tasks(Field):
    """The Instant abilities of the level in resolution (copied one by one by ``clone``)."""

    def load(self, raw: Any, game: Any, state: Any) -> list[Task]:
        return [
            load_task(state, x, f"{self.name}[{i}]")
            for i, x in enumerate(saved_list(raw, self.name))
        ]

    def dump(self, value: Any) -> list:
        return [t.dump() for t in value]


class Events(Field):
    """The public log of the current (or last) turn: tuples, saved as lists."""

    copy = "list"

    def load(self, raw: Any, game: Any, state: Any) -> list[tuple]:
        return [
            load_event(state, e, f"{self.name}[{i}]")
            for i, e in enumerate(saved_list(raw, self.name))
        ]

    def dump(self, value: Any) -> list[list]:
        return [list(e) for e in value]


def load_turn_protect(s: DemolitionDerbyState, raw: Any) -> list[tuple[int, int, int]]:
    """Turn protections: (player, Turn card, its design)."""
    g = s.game
    cs = g.cards
    out = []
    for x in saved_list(raw, "turn_protect"):
        q, c, k = saved_ints(x, "turn_protect entry", 3, 0, None)
        saved_check(
            q < g.num_players
            and c < cs.num_cards
            and k == cs.card_design[c]
            and cs.designs[k].timing == "turn",
            f"turn_protect entry {x} is not (player, Turn card, its design)",
        )
        out.append((q, c, k))
    return out


class TurnProtect(Field):
    copy = "list"  # tuples, never mutated

    def load(self, raw: Any, game: Any, state: Any) -> list[tuple[int, int, int]]:
        return load_turn_protect(state, raw)

    def dump(self, value: Any) -> list[list[int]]:
        return [list(x) for x in value]


# ----- derived on load ------------------------------------------------------------------
def derive_position(s: DemolitionDerbyState) -> None:
    """Who controls each card (from the lineups), and empty caches."""
    s.owner = [-1] * s.game.cards.num_cards
    for q, lineup in enumerate(s.lineups):
        for c in lineup:
            s.owner[c] = q
    s._clear_caches()


# ----- named checks -----------------------------------------------------------------------
def check_cards(s: DemolitionDerbyState) -> None:
    """Every card of the deck is in exactly one place; lineups fit their slots."""
    g = s.game
    saved_check(len(set(s.deck)) == len(s.deck), "a card is twice in the deck")
    saved_check(
        sorted(s.all_cards()) == sorted(s.deck),
        "cards are not conserved: hands + lineups + discard + unused != deck",
    )
    if g.params["variant"] == "mekk_mania":
        saved_check(set(s.deck) <= set(g.cards.mekk_pool()), "a deck card is not in the pool")
    for q, lineup in enumerate(s.lineups):
        saved_check(len(lineup) <= g.slots, f"lineup of player {q} exceeds {g.slots} slots")
    saved_check(set(s.discard_turn) <= set(s.discard), "discard_turn not in discard")
    saved_check(len(set(s.discard_turn)) == len(s.discard_turn), "discard_turn repeats a card")


def check_flags(s: DemolitionDerbyState) -> None:
    """Face-down and deployed-this-turn cards are in lineups."""
    for c in s.face_down:
        saved_check(s.owner[c] >= 0, f"face-down card {c} is not in a lineup")
    for c, f in enumerate(s.this_turn):
        saved_check(not f or s.owner[c] >= 0, f"card {c} deployed this turn is not in a lineup")


def check_history(s: DemolitionDerbyState) -> None:
    """Wins, the last Derby and the end of the match fit the Derbies played."""
    g = s.game
    n = g.num_players
    saved_check(max(s.wins) <= s.derby, "a player has more wins than Derbies played")
    saved_check(s.derby <= sum(s.wins) <= n * s.derby, "wins do not fit the Derbies played")
    saved_check(
        (s.derby == 0) == (s.last_derby is None) == (not s.last_winners),
        "last_derby / last_winners must be set exactly when a Derby has been played",
    )
    if s.last_derby is not None:
        saved_check(
            s.last_derby["derby"] == s.derby - 1 and s.last_derby["winners"] == s.last_winners,
            "last_derby does not describe the previous Derby",
        )
    top = max(s.wins)
    leaders = [q for q in range(n) if s.wins[q] == top]
    decided = (top >= g.params["wins_needed"] and len(leaders) == 1) or s.derby >= g.params[
        "max_derbies"
    ]
    if s.phase == OVER:
        saved_check(decided, "the match is over, but nobody has won it")
        saved_check(s.final_winners == leaders, "final_winners are not the leaders")
        saved_check(
            not (s.movers or s.tasks or s.queue or any(s.picks)),
            "a finished match has no movers, abilities or picks",
        )
        saved_check({len(h) for h in s.hands} == {0}, "hands are empty at the end of a match")
        return
    saved_check(not decided, "the match is decided, but not over")
    saved_check(not s.final_winners, "final_winners before the end")
    saved_check(len({len(h) for h in s.hands}) == 1, "hands must be of equal size")


def check_turn_effects(s: DemolitionDerbyState) -> None:
    """The queue of Instants and the Turn stoppers of a match in play."""
    if s.phase == OVER:
        return
    cs = s.game.cards
    queue = s.queue
    saved_check(len(set(queue)) == len(queue), "queue repeats a card")
    for c in queue:
        saved_check(
            s.owner[c] >= 0 and cs.designs[cs.card_design[c]].has_instant and not s.instant_done[c],
            f"queued card {c} is not an unresolved Instant in a lineup",
        )
    strengths = [cs.card_strength[c] for c in queue]
    saved_check(strengths == sorted(strengths, reverse=True), "queue is not by Strength")
    for c in s.stoppers:
        saved_check(
            s.owner[c] >= 0
            and any(op.op == "stop_instants" for op in cs.designs[cs.card_design[c]].ops),
            f"stopper {c} is not a Turn card that stops Instants",
        )


def check_deploy(s: DemolitionDerbyState) -> None:
    """A deploy phase: no turn effects pending; picks from the hand; movers are who picks."""
    if s.phase != DEPLOY:
        return
    n = s.game.num_players
    ppt = s.game.picks_per_turn
    size = len(s.hands[0])
    saved_check(
        s.level == -1
        and not (s.tasks or s.queue or s.stoppers or s.turn_protect)
        and not (s.discard_turn or any(s.this_turn)),
        "a deploy phase has no turn effects, queue or abilities pending",
    )
    saved_check(size > ppt, f"hands of {size} cards: too few to deploy {ppt}")
    for q in range(n):
        saved_check(len(s.picks[q]) <= ppt, f"player {q} picked too many cards")
        saved_check(
            min(s.hand_counts(q, minus_picks=True)) >= 0,
            f"player {q} picked a card not in their hand",
        )
    due = [q for q in range(n) if len(s.picks[q]) < ppt]
    saved_check(s.movers == due, f"movers {s.movers} are not {due}")
    saved_check(bool(due), "nobody to deploy, but the cards are not revealed")


def check_abilities(s: DemolitionDerbyState) -> None:
    """An ability phase: one Strength level resolving, its abilities re-derived from the
    position (the saved ones are replaced by the engine's own, equal values)."""
    if s.phase != CHOOSE:
        return
    cs = s.game.cards
    saved_check(not any(s.picks), "picks are revealed before abilities resolve")
    saved_check(len(s.hands[0]) >= 1, "hands cannot be empty while a turn resolves")
    saved_check(bool(s.tasks) and s.level >= 0, "an ability phase needs abilities")
    saved_check(
        all(cs.card_strength[c] < s.level for c in s.queue), "queued Instants of this level"
    )
    keys = []
    for t in s.tasks:
        c = t.card
        saved_check(
            cs.card_strength[c] == s.level
            and s.owner[c] == t.player
            and cs.card_design[c] == t.card_design
            and s.instant_done[c]
            and all(x == c for x in s.stoppers),
            f"ability of card {c} does not resolve at this level for player {t.player}",
        )
        keys.append((t.player, s._slot(c)))
    saved_check(keys == sorted(keys) and len(set(keys)) == len(keys), "abilities out of order")
    for i, t in enumerate(s.tasks):
        derived = derive_task(s, t)
        saved_check(derived is not None, f"ability of card {t.card} cannot be in this state")
        s.tasks[i] = derived
    due = sorted({t.player for t in s.tasks if t.opts is not None})
    saved_check(s.movers == due, f"movers {s.movers} are not {due}")
    saved_check(bool(due), "nobody to choose, but the level is not applied")


#: the checks a restored match must pass, in order
CHECKS = (
    check_cards,
    check_flags,
    check_history,
    check_turn_effects,
    check_deploy,
    check_abilities,
)


# Saved events: kind -> field kinds (p player, c card, d design, i count, w winners, r reason)
_EVENT_FIELDS: dict[str, str] = {
    "turn": "ii", "reveal": "pc", "discard": "ccp", "face_down": "ccp", "gain": "pcc",
    "swap": "pccpc", "copy": "cd", "cancel": "c", "stopped": "c", "fizzle": "c",
    "decline": "c", "swap_failed": "c", "contested": "d", "derby": "iwr",
}  # fmt: skip
# "scenario": the previous Derby of a position set up by game.scenario (no totals)
_REASONS = ("strength", "combatants", "shared", "condition", "scenario")


def load_event(s: DemolitionDerbyState, e: Any, name: str) -> tuple:
    n, N, D = s.game.num_players, s.game.cards.num_cards, s.game.num_designs
    e = saved_list(e, name)
    kind = e[0] if e else None
    if not isinstance(kind, str) or kind not in _EVENT_FIELDS:
        raise StateFormatError(f"{name}: unknown event {e!r}")
    fields = _EVENT_FIELDS[kind]
    saved_check(len(e) == len(fields) + 1, f"{name}: event {kind!r} needs {len(fields)} fields")
    out: list[Any] = [kind]
    for f, v in zip(fields, e[1:], strict=True):
        if f == "w":
            out.append(sorted(set(saved_ints(v, f"{name} winners", None, 0, n - 1))))
        elif f == "r":
            saved_check(v in _REASONS, f"{name}: reason {v!r} not in {_REASONS}")
            out.append(v)
        else:
            high = {"p": n - 1, "c": N - 1, "d": D - 1, "i": None}[f]
            out.append(saved_int(v, f"{name} {kind}", 0, high))
    return tuple(out)


def load_last_derby(s: DemolitionDerbyState, raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise StateFormatError(f"last_derby: expected a mapping or null, got {raw!r}")
    n = s.game.num_players
    reason = raw.get("reason")
    saved_check(reason in _REASONS, f"last_derby: reason {reason!r}")
    return {
        "derby": saved_int(raw.get("derby"), "last_derby derby", 0, None),
        "totals": saved_ints(raw.get("totals"), "last_derby totals", n),
        "combatants": saved_ints(raw.get("combatants"), "last_derby combatants", n, 0),
        "winners": saved_ints(raw.get("winners"), "last_derby winners", None, 0, n - 1),
        "reason": reason,
    }


def load_task(s: DemolitionDerbyState, raw: Any, name: str) -> Task:
    """A saved Instant ability in resolution, typed and range-checked (its consistency
    with the position is checked by ``check_position``)."""
    g = s.game
    N, D = g.cards.num_cards, g.num_designs
    x = saved_list(raw, name, 14)
    t = Task(
        saved_int(x[0], f"{name} card", 0, N - 1),
        saved_int(x[1], f"{name} player", 0, g.num_players - 1),
        saved_int(x[2], f"{name} card_design", 0, D - 1),
    )
    t.design = saved_int(x[3], f"{name} design", 0, D - 1)
    t.i = saved_int(x[4], f"{name} op index", 0, len(g.cards.designs[t.design].ops))
    t.stage = saved_int(x[5], f"{name} stage", 0, 1)
    t.take = saved_int(x[6], f"{name} take", -1, N - 1)
    t.effects = [tuple(saved_list(e, f"{name} effect")) for e in saved_list(x[7], name)]
    if x[8] is None:
        t.opts = None
    else:
        t.opts = {}
        for pair in saved_list(x[8], f"{name} options"):
            a, v = saved_ints(pair, f"{name} option", 2, -1, None)
            t.opts[a] = v
    t.kind = saved_int(x[9], f"{name} kind", -1, len(DEC_KINDS) - 1)
    t.may = saved_bool(x[10], f"{name} may")
    t.made = saved_int(x[11], f"{name} decisions made", 0, 64)
    t.done = saved_bool(x[12], f"{name} done")
    t.log = [load_event(s, e, f"{name} log") for e in saved_list(x[13], name)]
    return t


def derive_task(s: DemolitionDerbyState, saved: Task, budget: int = 20_000) -> Task | None:
    """The ability of ``saved.card`` after some sequence of ``saved.made`` legal choices
    that makes it equal to ``saved``, started on this position (effects are applied only
    at the end of the level, so the position is still the one the level started on);
    None if no such sequence exists (searched depth-first, pruned on effects and log)."""
    target = saved.dump()
    start = Task(saved.card, saved.player, saved.card_design)
    ab.advance(s, start)
    stack = [start]
    while stack and budget > 0:
        t = stack.pop()
        budget -= 1
        if t.made == saved.made:
            if t.dump() == target:
                return t
            continue
        if t.opts is None:
            continue
        for a in t.opts:
            u = t.copy()
            ab.decide(s, u, a)
            ab.advance(s, u)
            n_e, n_l = len(u.effects), len(u.log)
            if u.effects == saved.effects[:n_e] and u.log == saved.log[:n_l]:
                stack.append(u)
    return None
