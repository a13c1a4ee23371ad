"""Demolition Derby card data: loading, validation and the effect vocabulary.

A card set is a JSON file (``data/cards.json`` is our **reconstruction** of the lost card list)
with ``types`` (type name -> printed Strength), ``marks`` (player marks, ``"base"`` then
``"k+"``), optional ``mekk_mania`` settings and ``cards``: one entry per design with ``name``,
``type``, ``timing`` (``instant``/``turn``/``ongoing``/``derby``/``none``), ``text``,
``effects`` (a list of ops of the vocabulary below) and ``copies`` per mark.

Effect vocabulary (``op`` and its fields; "you" is the ability's controller, "self" its card):

=================  ===========  ==============================================================
op                 timing       fields
=================  ===========  ==============================================================
discard            instant      ``select``: ``choose`` (one target, the controller picks),
                                ``all``, ``lowest_each_player``, ``single_strongest`` (none on
                                a tie) or ``self``; ``targets``: a filter; ``may``
face_down          instant      ``select``: ``choose`` or ``all``; ``targets``; ``may``
gain               instant      ``select``: ``choose``; ``from``: ``discarded_this_turn`` (or
                                ``discard`` for the whole pile); ``targets`` (a filter on
                                designs: ``types``, ``strength_min/max``); ``may``
swap               instant      ``give``: ``"self"`` or a filter on your combatants; ``take``: a
                                filter on other players' combatants; ``may``
copy_instant       instant      ``targets``: filter on the combatants whose Instant may be
                                copied (never another copy ability)
protect            turn,        ``targets``: filter; ``against``: [``discard``, ``swap``];
                   ongoing      ``from``: ``any`` ability or ``others`` (other players')
stop_instants      turn         no field: no other Instant resolves this turn
modify_strength    ongoing      ``targets``: ``self``, ``others_yours`` or ``all_yours``;
                                ``amount``; optional ``per``: a filter counted over the
                                combatants you control (the amount is multiplied by the count)
set_strength       derby        ``value``: the card's base Strength becomes this value
add_strength       derby        ``value``: added to the card's base Strength
win_if             derby        you win this Derby if the condition ``if`` holds
=================  ===========  ==============================================================

Every op may carry ``"if"``: a condition, all of whose keys must hold:
``strictly_lowest_total``, ``min_distinct_types: k``, ``min_combatants: k``,
``controls_type: T`` (derby/instant) and ``only_of_type_this_turn: T`` (instant: no other
combatant of type T deployed this turn).

Filter keys (all optional): ``owner`` (``you``/``other``/``any``), ``other`` (exclude the
ability's own card), ``this_turn`` (deployed this turn and still controlled by its deployer),
``face`` (``up``/``down``), ``strength_min``/``strength_max`` (current Strength, Ongoing
modifiers included), ``types`` (list of type names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from derby_envs.core.datafile import read_json
from derby_envs.core.errors import InvalidParameterError

DATA_DIR = Path(__file__).parent / "data"
#: card-set presets: name -> file in data/
PRESETS = {"reconstruction": "cards.json"}

TIMINGS = ("none", "instant", "turn", "ongoing", "derby")
OPS_BY_TIMING = {
    "none": (),
    "instant": ("discard", "face_down", "gain", "swap", "copy_instant"),
    "turn": ("protect", "stop_instants"),
    "ongoing": ("protect", "modify_strength"),
    "derby": ("set_strength", "add_strength", "win_if"),
}
SELECTS = {
    "discard": ("choose", "all", "lowest_each_player", "single_strongest", "self"),
    "face_down": ("choose", "all"),
    "gain": ("choose",),
}
CONDITIONS = (
    "strictly_lowest_total",
    "min_distinct_types",
    "min_combatants",
    "controls_type",
    "only_of_type_this_turn",
)
FILTER_KEYS = ("owner", "other", "this_turn", "face", "strength_min", "strength_max", "types")


@dataclass(frozen=True, slots=True)
class Filter:
    """Which combatants (or discarded designs) an effect may apply to."""

    owner: str = "any"  # relative to the ability's controller: you / other / any
    other: bool = False  # exclude the ability's own card
    this_turn: bool | None = None
    face: str | None = None  # "up" / "down" / None
    strength_min: int | None = None
    strength_max: int | None = None
    types: frozenset[int] | None = None  # type indices


@dataclass(frozen=True, slots=True)
class Op:
    """One compiled effect of a card's ability (see the module docstring)."""

    op: str
    select: str | None = None
    targets: Filter | None = None
    give: Filter | None = None  # swap: None means "self"
    take: Filter | None = None
    may: bool = False
    value: int = 0
    amount: int = 0
    per: Filter | None = None
    scope: str = "self"  # modify_strength: self / others_yours / all_yours
    against: frozenset[str] = frozenset()
    source: str = "any"  # protect: from "any" ability or "others"'
    source_pile: str = "discarded_this_turn"  # gain
    cond: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Design:
    index: int
    name: str
    type: int  # type index
    type_name: str
    strength: int  # printed Strength
    timing: str
    text: str
    ops: tuple[Op, ...]
    copies: tuple[int, ...]  # per mark

    @property
    def has_instant(self) -> bool:
        return self.timing == "instant" and bool(self.ops)

    @property
    def copies_instant(self) -> bool:
        return any(o.op == "copy_instant" for o in self.ops)


class CardSet:
    """A validated card set: designs, the physical cards and which games use which."""

    def __init__(self, spec: dict[str, Any], origin: str) -> None:
        self.origin = origin
        err = _Errors(origin)
        if not isinstance(spec, dict):
            err.fail("the file must contain a JSON object")
        self.name = str(spec.get("name", origin))
        self.provenance = str(spec.get("provenance", ""))
        self.marks: list[str]
        self.mark_min_players: list[int]
        self.marks, self.mark_min_players = _read_marks(spec.get("marks"), err)
        self.types: list[str]
        self.type_strength: list[int]
        self.types, self.type_strength = _read_types(spec.get("types"), err)
        self.designs: list[Design] = self._read_designs(spec.get("cards"), err)
        self.design_index = {d.name: d.index for d in self.designs}
        # Physical cards, in design order: card id -> design, card id -> mark index.
        self.card_design: list[int]
        self.card_mark: list[int]
        self.card_design, self.card_mark = _physical_cards(self.designs)
        self.num_cards = len(self.card_design)
        self.card_type = [self.designs[d].type for d in self.card_design]
        self.card_strength = [self.designs[d].strength for d in self.card_design]
        self.mekk_removed: frozenset[int]
        self.mekk_removed, self._mekk_table = self._read_mekk_mania(
            spec.get("mekk_mania", {"remove": [], "type_counts": "standard"}), err
        )

    # ----- construction ---------------------------------------------------------------
    def _read_designs(self, cards: Any, err: _Errors) -> list[Design]:
        if not isinstance(cards, list) or not cards:
            err.fail("'cards' must be a non-empty list")
        designs: list[Design] = []
        names: set[str] = set()
        for i, c in enumerate(cards):
            designs.append(self._design(i, c, err))
            if designs[-1].name in names:
                err.fail(f"duplicate card name {designs[-1].name!r}")
            names.add(designs[-1].name)
        return designs

    def _read_mekk_mania(self, mm: Any, err: _Errors) -> tuple[frozenset[int], Any]:
        """Mekk Mania's removed designs and its type-count table (``"standard"`` or a table
        by player count)."""
        if not isinstance(mm, dict):
            err.fail("'mekk_mania' must be an object")
        remove = mm.get("remove", [])
        if not isinstance(remove, list):
            err.fail("mekk_mania.remove must be a list of card names")
        for r in remove:
            if not isinstance(r, str) or r not in self.design_index:
                err.fail(f"mekk_mania.remove: unknown card {r!r}")
        removed = frozenset(self.design_index[r] for r in remove)
        tc = mm.get("type_counts", "standard")
        if tc != "standard":
            self._check_mekk_table(tc, err)
        return removed, tc

    def _check_mekk_table(self, tc: Any, err: _Errors) -> None:
        # explicit table: {"2": {"Tank": 2, ...}, ...} by player count
        if not isinstance(tc, dict):
            err.fail("mekk_mania.type_counts must be 'standard' or a table by player count")
        for key, row in tc.items():
            if not str(key).isdigit() or not isinstance(row, dict):
                err.fail(f"mekk_mania.type_counts[{key!r}] must map type names to counts")
            for t, k in row.items():
                if t not in self.types or not isinstance(k, int) or k < 0:
                    err.fail(f"mekk_mania.type_counts[{key!r}]: bad entry {t!r}: {k!r}")

    def _design(self, index: int, c: Any, err: _Errors) -> Design:
        if not isinstance(c, dict):
            err.fail(f"card #{index + 1} must be an object")
        name = c.get("name")
        where = f"card {name!r}" if isinstance(name, str) else f"card #{index + 1}"
        if not isinstance(name, str) or not name:
            err.fail(f"{where}: 'name' must be a non-empty string")
        tname = c.get("type")
        if tname not in self.types:
            err.fail(f"{where}: unknown type {tname!r}; known types: {', '.join(self.types)}")
        t = self.types.index(tname)
        timing = c.get("timing", "none")
        if timing not in TIMINGS:
            err.fail(f"{where}: timing {timing!r}, expected one of {', '.join(TIMINGS)}")
        effects = c.get("effects", [])
        if not isinstance(effects, list):
            err.fail(f"{where}: 'effects' must be a list")
        if timing == "none" and effects:
            err.fail(f"{where}: a card without timing cannot have effects")
        if timing != "none" and not effects:
            err.fail(f"{where}: timing {timing!r} needs at least one effect")
        ops = tuple(
            self._op(e, timing, f"{where} effect #{k + 1}", err) for k, e in enumerate(effects)
        )
        copies = c.get("copies")
        if not isinstance(copies, dict) or set(copies) - set(self.marks):
            err.fail(f"{where}: 'copies' must map marks ({', '.join(self.marks)}) to counts")
        counts = []
        for m in self.marks:
            k = copies.get(m, 0)
            if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= 20:
                err.fail(f"{where}: copies[{m!r}] must be an integer in [0, 20], got {k!r}")
            counts.append(k)
        return Design(
            index=index,
            name=name,
            type=t,
            type_name=tname,
            strength=self.type_strength[t],
            timing=timing,
            text=str(c.get("text", "")),
            ops=ops,
            copies=tuple(counts),
        )

    def _filter(self, f: Any, where: str, err: _Errors) -> Filter:
        if not isinstance(f, dict):
            err.fail(
                f"{where}: a filter must be an object with keys among {', '.join(FILTER_KEYS)}"
            )
        unknown = set(f) - set(FILTER_KEYS)
        if unknown:
            err.fail(
                f"{where}: unknown filter keys {sorted(unknown)}; allowed: {', '.join(FILTER_KEYS)}"
            )
        owner = f.get("owner", "any")
        if owner not in ("you", "other", "any"):
            err.fail(f"{where}: owner {owner!r}, expected 'you', 'other' or 'any'")
        face = f.get("face")
        if face not in (None, "up", "down"):
            err.fail(f"{where}: face {face!r}, expected 'up' or 'down'")
        types = f.get("types")
        if types is not None:
            if not isinstance(types, list) or any(t not in self.types for t in types):
                err.fail(f"{where}: types must be a list of known type names")
            types = frozenset(self.types.index(t) for t in types)
        for key in ("strength_min", "strength_max"):
            v = f.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                err.fail(f"{where}: {key} must be an integer")
        this_turn = f.get("this_turn")
        if this_turn not in (None, True, False):
            err.fail(f"{where}: this_turn must be true or false")
        return Filter(
            owner=owner,
            other=bool(f.get("other", False)),
            this_turn=this_turn,
            face=face,
            strength_min=f.get("strength_min"),
            strength_max=f.get("strength_max"),
            types=types,
        )

    def _cond(self, c: Any, timing: str, where: str, err: _Errors) -> tuple[tuple[str, int], ...]:
        if c is None:
            return ()
        if not isinstance(c, dict):
            err.fail(f"{where}: 'if' must be an object with keys among {', '.join(CONDITIONS)}")
        out = []
        for key, v in c.items():
            if key not in CONDITIONS:
                err.fail(f"{where}: unknown condition {key!r}; known: {', '.join(CONDITIONS)}")
            if key in ("controls_type", "only_of_type_this_turn"):
                if v not in self.types:
                    err.fail(f"{where}: {key} must name a type, got {v!r}")
                v = self.types.index(v)
            elif key == "strictly_lowest_total":
                if v is not True:
                    err.fail(f"{where}: strictly_lowest_total must be true")
                if timing != "derby":
                    err.fail(f"{where}: strictly_lowest_total is a Derby condition")
                v = 1
            elif not isinstance(v, int) or isinstance(v, bool) or v < 0:
                err.fail(f"{where}: {key} must be a non-negative integer")
            if key == "only_of_type_this_turn" and timing != "instant":
                err.fail(f"{where}: only_of_type_this_turn is an Instant condition")
            out.append((key, int(v)))
        return tuple(out)

    def _op(self, e: Any, timing: str, where: str, err: _Errors) -> Op:
        if not isinstance(e, dict) or "op" not in e:
            err.fail(f"{where}: an effect must be an object with an 'op'")
        op = e["op"]
        if op not in OPS_BY_TIMING[timing]:
            err.fail(
                f"{where}: op {op!r} is not allowed with timing {timing!r} "
                f"(allowed: {', '.join(OPS_BY_TIMING[timing]) or 'none'})"
            )
        cond = self._cond(e.get("if"), timing, where, err)
        may = bool(e.get("may", False))
        return _OP_READERS[op](self, e, op, where, err, may, cond)

    # One reader per op kind (``_OP_READERS``): the effect ``e`` (its op already checked
    # against the timing), its compiled condition and ``may``.
    def _op_select(self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple) -> Op:
        """discard, face_down, gain: a ``select`` among the op's own and a target filter."""
        select = e.get("select", "choose")
        if select not in SELECTS[op]:
            err.fail(f"{where}: select {select!r}, expected one of {', '.join(SELECTS[op])}")
        targets = None
        if select != "self":
            targets = self._filter(e.get("targets", {}), where, err)
        pile = e.get("from", "discarded_this_turn")
        if op == "gain" and pile not in ("discarded_this_turn", "discard"):
            err.fail(f"{where}: gain 'from' must be 'discarded_this_turn' or 'discard'")
        return Op(op, select=select, targets=targets, may=may, source_pile=pile, cond=cond)

    def _op_swap(self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple) -> Op:
        give = e.get("give", "self")
        return Op(
            op,
            give=None if give == "self" else self._filter(give, where + " (give)", err),
            take=self._filter(e.get("take", {"owner": "other"}), where + " (take)", err),
            may=may,
            cond=cond,
        )

    def _op_copy_instant(
        self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple
    ) -> Op:
        return Op(op, targets=self._filter(e.get("targets", {}), where, err), may=may, cond=cond)

    def _op_protect(self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple) -> Op:
        against = e.get("against", ["discard"])
        if (
            not isinstance(against, list)
            or not all(a in ("discard", "swap") for a in against)
            or not against
        ):
            err.fail(f"{where}: 'against' must be a list among 'discard', 'swap'")
        source = e.get("from", "any")
        if source not in ("any", "others"):
            err.fail(f"{where}: 'from' must be 'any' or 'others'")
        return Op(
            op,
            targets=self._filter(e.get("targets", {"owner": "you"}), where, err),
            against=frozenset(against),
            source=source,
            cond=cond,
        )

    def _op_stop_instants(
        self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple
    ) -> Op:
        return Op(op, cond=cond)

    def _op_modify_strength(
        self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple
    ) -> Op:
        scope = e.get("targets", "self")
        if scope not in ("self", "others_yours", "all_yours"):
            err.fail(f"{where}: targets must be 'self', 'others_yours' or 'all_yours'")
        amount = e.get("amount")
        if not isinstance(amount, int) or isinstance(amount, bool):
            err.fail(f"{where}: 'amount' must be an integer")
        per = e.get("per")
        return Op(
            op,
            scope=scope,
            amount=amount,
            per=None if per is None else self._filter(per, where + " (per)", err),
            cond=cond,
        )

    def _op_derby(self, e: dict, op: str, where: str, err: _Errors, may: bool, cond: tuple) -> Op:
        """set_strength, add_strength (an integer ``value``) and win_if (an ``if``)."""
        value = e.get("value", 0)
        if op != "win_if" and (not isinstance(value, int) or isinstance(value, bool)):
            err.fail(f"{where}: 'value' must be an integer")
        if op == "win_if" and not cond:
            err.fail(f"{where}: win_if needs an 'if' condition")
        return Op(op, value=int(value) if op != "win_if" else 0, cond=cond)

    # ----- decks ----------------------------------------------------------------------
    def deck_cards(self, num_players: int) -> list[int]:
        """Card ids used by the standard game at this player count (player marks)."""
        return [
            c
            for c in range(self.num_cards)
            if self.mark_min_players[self.card_mark[c]] <= num_players
        ]

    def type_counts(self, cards: list[int]) -> list[int]:
        counts = [0] * len(self.types)
        for c in cards:
            counts[self.card_type[c]] += 1
        return counts

    def mekk_pool(self) -> list[int]:
        """Every card that Mekk Mania may draw (all marks, removed designs excluded)."""
        return [c for c in range(self.num_cards) if self.card_design[c] not in self.mekk_removed]

    def mekk_type_counts(self, num_players: int) -> list[int]:
        """Cards drawn from each type pile in Mekk Mania (capped by the pile's size)."""
        if self._mekk_table == "standard":
            want = self.type_counts(self.deck_cards(num_players))
        else:
            row = self._mekk_table.get(str(num_players))
            if row is None:
                raise InvalidParameterError(
                    f"card set {self.origin}: mekk_mania.type_counts has no row for {num_players} players"
                )
            want = [int(row.get(t, 0)) for t in self.types]
        have = self.type_counts(self.mekk_pool())
        return [min(w, h) for w, h in zip(want, have, strict=True)]

    def deck_size(self, num_players: int, variant: str) -> int:
        if variant == "mekk_mania":
            return sum(self.mekk_type_counts(num_players))
        return len(self.deck_cards(num_players))

    def max_copies(self) -> int:
        return max(sum(d.copies) for d in self.designs)

    def max_gains(self) -> int:
        """An upper bound on the cards one player can gain in a Derby (sizes lineup slots)."""
        gainers = sum(
            sum(d.copies)
            for d in self.designs
            if any(o.op in ("gain", "copy_instant") for o in d.ops)
        )
        return gainers


#: op name -> its reader (a ``CardSet`` method); every op of ``OPS_BY_TIMING`` has one
_OP_READERS: dict[str, Callable[..., Op]] = {
    "discard": CardSet._op_select,
    "face_down": CardSet._op_select,
    "gain": CardSet._op_select,
    "swap": CardSet._op_swap,
    "copy_instant": CardSet._op_copy_instant,
    "protect": CardSet._op_protect,
    "stop_instants": CardSet._op_stop_instants,
    "modify_strength": CardSet._op_modify_strength,
    "set_strength": CardSet._op_derby,
    "add_strength": CardSet._op_derby,
    "win_if": CardSet._op_derby,
}


def _read_marks(marks: Any, err: _Errors) -> tuple[list[str], list[int]]:
    """The player marks (``"base"`` then ``"k+"``) and each mark's minimum player count."""
    if not isinstance(marks, list) or not marks or marks[0] != "base":
        err.fail("'marks' must be a list starting with 'base', e.g. ['base', '4+', '5+', '6+']")
    min_players = [0]
    for m in marks[1:]:
        if not (isinstance(m, str) and m.endswith("+") and m[:-1].isdigit()):
            err.fail(f"mark {m!r} must look like '4+'")
        min_players.append(int(m[:-1]))
    return marks, min_players


def _read_types(types: Any, err: _Errors) -> tuple[list[str], list[int]]:
    """The type names and their printed Strengths, in file order."""
    if not isinstance(types, dict) or not types:
        err.fail("'types' must map type names to printed Strengths")
    strengths: list[int] = []
    for t, s in types.items():
        if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s <= 20:
            err.fail(f"type {t!r}: Strength must be an integer in [0, 20], got {s!r}")
        strengths.append(s)
    return list(types), strengths


def _physical_cards(designs: list[Design]) -> tuple[list[int], list[int]]:
    """The physical cards in design order: card id -> design index, card id -> mark index."""
    card_design: list[int] = []
    card_mark: list[int] = []
    for d in designs:
        for m, k in enumerate(d.copies):
            card_design += [d.index] * k
            card_mark += [m] * k
    return card_design, card_mark


class _Errors:
    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, msg: str) -> None:
        raise InvalidParameterError(f"parameter 'cards' ({self.origin}): {msg}")


_CACHE: dict[tuple[str, float], CardSet] = {}


def load_card_set(name: str) -> CardSet:
    """A card set by preset name (see ``PRESETS``) or path of a ``.json`` file."""
    if name in PRESETS:
        path = DATA_DIR / PRESETS[name]
    elif name.endswith(".json"):
        path = Path(name)
        if not path.is_file():
            raise InvalidParameterError(f"parameter 'cards': no such file {name!r}")
    else:
        raise InvalidParameterError(
            f"parameter 'cards': got {name!r}, expected one of "
            + ", ".join(repr(p) for p in PRESETS)
            + " or the path of a .json card file"
        )
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
        if key in _CACHE:
            return _CACHE[key]
        # the suite's bounded reader: a regular file of bounded size and nesting
        spec = read_json(path, what="parameter 'cards': the card file", error=InvalidParameterError)
    except OSError as exc:
        raise InvalidParameterError(f"parameter 'cards': cannot read {str(path)!r}: {exc}") from exc
    cs = CardSet(spec, name)
    _CACHE[key] = cs
    return cs
