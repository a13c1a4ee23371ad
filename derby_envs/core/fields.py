"""A state's fields, declared once: ``clone``, the saved payload and its validated loading follow.

An engine lists its state's fields in a :class:`StateFields` and assigns it to the class
attribute ``fields`` of its :class:`~derby_envs.core.game.State` subclass; the class then gets
``clone``, ``_dump`` and ``_load`` derived from the declaration (a method the class defines
itself wins). Example::

    class MyState(State):
        fields = StateFields(
            Rng(),
            Int("turn", 0, lambda g: g.total_turns),
            Enum("phase", ("bet", "race", "over")),
            IntArray("chips", length=PLAYERS, low=0),
            IntList("queue", low=0, high=lambda g: g.num_players - 1),
            checks=(chips_conserved, queue_in_order),
        )

Kinds (what is kept in the state -> what is saved):

* :class:`Int`, :class:`Bool` - Python ints / bools, saved as JSON numbers / booleans.
* :class:`Enum` - an int index in the state, **saved as its name** (the convention for
  enumerations in saved states: readable, and safe against reordering; every game's
  ``phase``). ``accept_index`` also loads a bare index, for states saved before a field moved
  to names (Demolition Derby's ``phase`` did).
* :class:`IntList` - a list of ints; :class:`IntRows` - a list of int lists (rows may differ
  in length when ``length`` is None); :class:`IntArray` / :class:`BoolArray` - 1-d numpy arrays.
  All saved as JSON lists.
* :class:`Record` - a nested JSON record (a dict or list) that play never mutates, only
  replaces: clones share it; it is loaded by the given function (typed, range-checked).
* :class:`Derived` - not saved: rebuilt after loading by the ``derive`` functions (e.g.
  places from the finishing order), copied by ``clone`` as its ``copy`` says.
* :class:`Cache` - not saved: reset to ``None`` on load; shared or copied by ``clone``.
* :class:`Rng` - the state's ``numpy`` Generator. It is saved by ``State.to_dict`` (outside the
  payload) and copied by ``clone``; ``lazy=True`` stores a snapshot and builds the generator on
  first use (search copies rarely draw), which needs ``rng = lazy_rng`` on the class.

Bounds (``low``, ``high``) and lengths are numbers, ``None`` (unbounded / any length) or
callables of the game (``PLAYERS`` is ``lambda g: g.num_players``). Loading types and
range-checks every field, then runs ``derive`` and then the named ``checks`` (each a function
of the state that raises StateFormatError through ``saved_check``): the rules-level
consistency of the position, one concern per function.

Loading fills the object ``Game._blank_state()`` returns: that method must set its ``game``
(bounds and checks read it), e.g. ``s = MyState.__new__(MyState); s.game = self; return s``.

``clone`` is on the search agents' hot path, so it is generated once per class as plain
Python source (one statement per mutable field), as fast as a hand-written copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import saved_bool, saved_int, saved_ints, saved_list

Bound = int | Callable[[Any], int] | None


def PLAYERS(game: Any) -> int:
    """The number of players (a length or bound for declarations)."""
    return game.num_players


def _value(bound: Bound, game: Any) -> int | None:
    return bound(game) if callable(bound) else bound


class Field:
    """One field of a state. ``copy`` (for ``clone``): "share", "list", "rows" or "array"."""

    saved = True
    copy = "share"

    def __init__(self, name: str) -> None:
        self.name = name

    def load(self, raw: Any, game: Any, state: Any) -> Any:
        raise NotImplementedError

    def dump(self, value: Any) -> Any:
        return value

    def initial(self, game: Any) -> Any:
        """The value of an unsaved field right after loading (before ``derive``)."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Int(Field):
    """An int in ``[low, high]`` (inclusive; None: unbounded). A bound is an int or a function
    of the game (e.g. :func:`PLAYERS`); bools and floats are refused on load."""

    def __init__(self, name: str, low: Bound = None, high: Bound = None) -> None:
        super().__init__(name)
        self.low, self.high = low, high

    def load(self, raw: Any, game: Any, state: Any) -> int:
        return saved_int(raw, self.name, _value(self.low, game), _value(self.high, game))

    def dump(self, value: Any) -> int:
        return int(value)


class Bool(Field):
    """A bool, saved as JSON true/false (ints such as 0 and 1 are refused on load)."""

    def load(self, raw: Any, game: Any, state: Any) -> bool:
        return saved_bool(raw, self.name)

    def dump(self, value: Any) -> bool:
        return bool(value)


class Enum(Field):
    """An index into ``names`` in the state, saved as the name.

    ``accept_index=True`` also loads a bare index (for states saved before the names
    convention); it is always saved as the name."""

    def __init__(self, name: str, names: Sequence[str], accept_index: bool = False) -> None:
        super().__init__(name)
        self.names = tuple(names)
        self.accept_index = accept_index

    def load(self, raw: Any, game: Any, state: Any) -> int:
        if isinstance(raw, str) and raw in self.names:
            return self.names.index(raw)
        if self.accept_index and not isinstance(raw, str):
            return saved_int(raw, self.name, 0, len(self.names) - 1)
        raise StateFormatError(f"{self.name}: got {raw!r}, expected one of {self.names}")

    def dump(self, value: Any) -> str:
        return self.names[value]


class IntList(Field):
    """A list of ``length`` ints (None: any length), each in ``[low, high]``; bounds as for
    :class:`Int`. Clones copy the list, unless ``share=True``: the rules only ever replace it,
    never mutate it in place, so clones may share it."""

    copy = "list"

    def __init__(
        self,
        name: str,
        length: Bound = None,
        low: Bound = None,
        high: Bound = None,
        share: bool = False,
    ) -> None:
        super().__init__(name)
        self.length, self.low, self.high = length, low, high
        if share:  # replaced, never mutated, by the rules: clones may share it
            self.copy = "share"

    def load(self, raw: Any, game: Any, state: Any) -> list[int]:
        g = game
        return saved_ints(
            raw, self.name, _value(self.length, g), _value(self.low, g), _value(self.high, g)
        )

    def dump(self, value: Any) -> list[int]:
        return [int(x) for x in value]


class IntRows(Field):
    """A list of ``rows`` int lists, each of ``length`` entries (None: any)."""

    copy = "rows"

    def __init__(
        self,
        name: str,
        rows: Bound = None,
        length: Bound = None,
        low: Bound = None,
        high: Bound = None,
    ) -> None:
        super().__init__(name)
        self.rows, self.length, self.low, self.high = rows, length, low, high

    def load(self, raw: Any, game: Any, state: Any) -> list[list[int]]:
        g = game
        length, low, high = _value(self.length, g), _value(self.low, g), _value(self.high, g)
        return [
            saved_ints(row, f"{self.name}[{i}]", length, low, high)
            for i, row in enumerate(saved_list(raw, self.name, _value(self.rows, g)))
        ]

    def dump(self, value: Any) -> list[list[int]]:
        return [[int(x) for x in row] for row in value]


class IntArray(Field):
    """A 1-d numpy array of ``length`` ints (None: any length), each in ``[low, high]`` (bounds
    as for :class:`Int`), held as ``dtype`` (default int64), saved as a list; clones copy it."""

    copy = "array"

    def __init__(
        self,
        name: str,
        length: Bound = None,
        low: Bound = None,
        high: Bound = None,
        dtype: Any = np.int64,
    ) -> None:
        super().__init__(name)
        self.length, self.low, self.high, self.dtype = length, low, high, dtype

    def load(self, raw: Any, game: Any, state: Any) -> np.ndarray:
        g = game
        values = saved_ints(
            raw, self.name, _value(self.length, g), _value(self.low, g), _value(self.high, g)
        )
        return np.array(values, self.dtype)

    def dump(self, value: Any) -> list[int]:
        return value.tolist()


class BoolArray(Field):
    """A 1-d numpy bool array of ``length`` entries (None: any length, an int or a function of
    the game), saved as a list of true/false; clones copy it."""

    copy = "array"

    def __init__(self, name: str, length: Bound = None) -> None:
        super().__init__(name)
        self.length = length

    def load(self, raw: Any, game: Any, state: Any) -> np.ndarray:
        items = saved_list(raw, self.name, _value(self.length, game))
        return np.array([saved_bool(x, f"{self.name}[{i}]") for i, x in enumerate(items)], bool)

    def dump(self, value: Any) -> list[bool]:
        return value.tolist()


class Record(Field):
    """A nested JSON record, never mutated in place (clones share it).

    ``load(state, raw)`` returns the typed, checked record (the game and the fields declared
    before this one are set on ``state``); ``nullable`` accepts ``None``."""

    def __init__(self, name: str, load: Callable[[Any, Any], Any], nullable: bool = False) -> None:
        super().__init__(name)
        self.loader, self.nullable = load, nullable

    def load(self, raw: Any, game: Any, state: Any) -> Any:
        if raw is None and self.nullable:
            return None
        return self.loader(state, raw)

    def dump(self, value: Any) -> Any:
        return copy.deepcopy(value)  # a saved payload must not alias the live state


class Derived(Field):
    """Not saved: rebuilt after loading by a ``derive`` function; ``copy`` as for the kinds
    above ("list", "rows", "array" or "share")."""

    saved = False

    def __init__(self, name: str, copy: str = "share") -> None:
        super().__init__(name)
        self.copy = copy


class Cache(Derived):
    """Not saved, reset to None on load. ``copy="array"`` copies it (when not None)."""

    def __init__(self, name: str, copy: str = "share") -> None:
        super().__init__(name, copy)


class Rng(Field):
    """The state's Generator (saved by ``State.to_dict`` itself, copied by ``clone``)."""

    saved = False

    def __init__(self, name: str = "rng", lazy: bool = False) -> None:
        super().__init__(name)
        self.lazy = lazy


def _rng_getter(self: Any) -> np.random.Generator:
    r = self._rng
    if r is None:
        src = self._rng_src
        if isinstance(src, dict):
            bg = getattr(np.random, src["bit_generator"])(0)
            bg.state = src
            r = np.random.Generator(bg)
        else:
            r = np.random.default_rng(src)
        self._rng = r
        self._rng_src = None
    return r


def _rng_setter(self: Any, value: np.random.Generator) -> None:
    self._rng = value
    self._rng_src = None


#: ``rng = lazy_rng`` on a state class whose ``Rng(lazy=True)`` keeps ``_rng`` / ``_rng_src``
lazy_rng = property(_rng_getter, _rng_setter, doc="The Generator, built on first use.")


def copy_rng(rng: np.random.Generator) -> np.random.Generator:
    """An independent Generator in the same state."""
    bg = type(rng.bit_generator)(0)
    bg.state = rng.bit_generator.state
    return np.random.Generator(bg)


_COPY_SOURCE = {
    "list": "    d[{n!r}] = self.{n}[:]",
    "rows": "    d[{n!r}] = [r[:] for r in self.{n}]",
    "array": "    d[{n!r}] = self.{n}.copy()",
}
_CACHE_COPY = "    v = self.{n}\n    if v is not None:\n        d[{n!r}] = v.copy()"


class StateFields:
    """The declaration of a state's fields, with ``derive`` and ``checks`` run on load."""

    def __init__(
        self,
        *fields: Field,
        derive: Sequence[Callable[[Any], None]] = (),
        checks: Sequence[Callable[[Any], None]] = (),
    ) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate field names in {names}")
        self.fields = tuple(fields)
        self.saved = tuple(f for f in fields if f.saved)
        self.derive = tuple(derive)
        self.checks = tuple(checks)

    def __getitem__(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    # ----- the derived methods ----------------------------------------------------------
    def dump(self, state: Any) -> dict[str, Any]:
        """The JSON-safe payload: every saved field in declaration order."""
        return {f.name: f.dump(getattr(state, f.name)) for f in self.saved}

    def load(self, state: Any, payload: Mapping[str, Any]) -> None:
        """Fill ``state`` (game and rng set) from ``payload``: typed fields, then ``derive``,
        then the named ``checks``. Raises StateFormatError (KeyError for a missing field)."""
        extra = sorted(set(payload) - {f.name for f in self.saved}, key=str)
        if extra:
            raise StateFormatError(f"unexpected field(s) {', '.join(map(repr, extra))}")
        game = state.game
        for f in self.fields:
            if f.saved:
                setattr(state, f.name, f.load(payload[f.name], game, state))
            elif not isinstance(f, Rng):
                setattr(state, f.name, f.initial(game))
        for fn in self.derive:
            fn(state)
        for fn in self.checks:
            fn(state)

    def clone_source(
        self,
        rng: bool = True,
        share: Sequence[str] = (),
        reset: Mapping[str, Callable[[], Any] | None] | None = None,
    ) -> str:
        """Python source of the generated ``clone`` (one statement per copied field).

        The options make a *light copy* for simulations instead (:meth:`make_copy`):
        ``rng=False`` takes the copy's generator as an argument instead of copying it;
        ``share`` names fields the copy shares instead of copying; ``reset`` maps fields to
        a fresh value for the copy (a factory such as ``list``, or None)."""
        reset = dict(reset or {})
        unknown = sorted((set(share) | set(reset)) - set(self.names))
        if unknown:
            raise ValueError(f"no such field(s): {', '.join(unknown)}")
        lines = [
            "def clone(self):" if rng else "def clone(self, rng):",
            "    s = _new(_cls)",
            # one dict copy: cheaper than filling the new instance's dict entry by entry
            "    s.__dict__ = d = self.__dict__.copy()",
        ]
        for f in self.fields:
            if f.name in reset:
                value = "None" if reset[f.name] is None else f"_reset[{f.name!r}]()"
                lines.append(f"    d[{f.name!r}] = {value}")
            elif f.name in share:
                continue
            elif isinstance(f, Rng):
                lines.append(self._rng_copy(f) if rng else "    s.rng = rng")
            elif isinstance(f, Cache) and f.copy == "array":
                lines.append(_CACHE_COPY.format(n=f.name))
            elif f.copy in _COPY_SOURCE:
                lines.append(_COPY_SOURCE[f.copy].format(n=f.name))
            elif f.copy != "share":
                raise ValueError(f"{f!r}: unknown copy {f.copy!r}")
        lines.append("    return s")
        return "\n".join(lines)

    @staticmethod
    def _rng_copy(f: Rng) -> str:
        if f.lazy:  # a snapshot; the copy builds its generator when it first draws
            return (
                "    r = self._rng\n    if r is not None:\n"
                "        d['_rng'] = None\n        d['_rng_src'] = r.bit_generator.state"
            )
        return f"    d[{f.name!r}] = _copy_rng(self.{f.name})"

    def make_clone(self, cls: type) -> Callable[[Any], Any]:
        """The ``clone`` method for ``cls``, compiled from :meth:`clone_source`."""
        fn = self._compile(cls, self.clone_source(), {})
        fn.__qualname__ = f"{cls.__name__}.clone"
        fn.__doc__ = "An independent copy (RNG included), derived from ``fields``."
        return fn

    def make_copy(
        self,
        cls: type,
        share: Sequence[str] = (),
        reset: Mapping[str, Callable[[], Any] | None] | None = None,
    ) -> Callable[[Any, np.random.Generator], Any]:
        """``copy(state, rng)``: a light copy of ``state`` as a ``cls`` for simulations,
        derived from the declaration like ``clone``: it uses the generator it is given, shares
        the ``share`` fields and gives the ``reset`` ones a fresh value (see
        :meth:`clone_source`). Search agents use it where a full ``clone`` copies what their
        playouts never read."""
        reset = dict(reset or {})
        source = self.clone_source(rng=False, share=share, reset=reset)
        fn = self._compile(cls, source, {"_reset": reset})
        fn.__qualname__ = f"{cls.__name__}.light_copy"
        return fn

    @staticmethod
    def _compile(cls: type, source: str, extra: dict[str, Any]) -> Callable[..., Any]:
        scope = {"_new": object.__new__, "_cls": cls, "_copy_rng": copy_rng, **extra}
        exec(compile(source, f"<{cls.__name__}.clone>", "exec"), scope)
        return scope["clone"]

    def install(self, cls: type) -> None:
        """Give ``cls`` the derived ``clone``, ``_dump`` and ``_load`` it does not define."""
        own = cls.__dict__
        declaration = self

        def _dump(state: Any) -> dict[str, Any]:
            return declaration.dump(state)

        def _load(state: Any, payload: Mapping[str, Any]) -> None:
            declaration.load(state, payload)

        _dump.__doc__, _load.__doc__ = StateFields.dump.__doc__, StateFields.load.__doc__
        if "clone" not in own:
            cls.clone = self.make_clone(cls)
        if "_dump" not in own:
            _dump.__qualname__ = f"{cls.__name__}._dump"
            cls._dump = _dump
        if "_load" not in own:
            _load.__qualname__ = f"{cls.__name__}._load"
            cls._load = _load
