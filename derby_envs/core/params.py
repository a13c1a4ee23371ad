"""Declared game parameters: defaults, documentation and validation.

Every game declares its parameters as a tuple of :class:`Param`. ``resolve_params`` turns the
user's keyword arguments into a complete, validated ``dict``; any bad name or value raises
:class:`~derby_envs.core.errors.InvalidParameterError` naming the parameter and what is allowed.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError

_MISSING = object()


@dataclass(frozen=True)
class Param:
    """One game parameter.

    Attributes:
        name: keyword name.
        default: value used when the user gives none. A callable receives the other resolved
            parameters (e.g. ``num_races`` defaults to ``num_players``).
        kind: ``int``, ``float``, ``bool``, ``str`` or ``object`` (no type check).
        doc: one line for ``derby-envs list`` and the docs.
        low, high: inclusive bounds for numbers (``None`` = unbounded).
        choices: the allowed values, if the parameter is an enumeration.
        allow_none: whether ``None`` is a valid value.
    """

    name: str
    default: Any
    kind: type
    doc: str
    low: float | None = None
    high: float | None = None
    choices: Sequence[Any] | None = None
    allow_none: bool = False

    def allowed(self) -> str:
        """Human-readable description of the allowed values."""
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind in (int, float) and (self.low is not None or self.high is not None):
            lo = "-inf" if self.low is None else _bound(self.low, self.kind)
            hi = "inf" if self.high is None else _bound(self.high, self.kind)
            text = f"{'an integer' if self.kind is int else 'a number'} in [{lo}, {hi}]"
        elif self.kind is float:
            text = "a finite number"
        else:
            text = f"a {self.kind.__name__}"
        return text + (" or None" if self.allow_none else "")

    def validate(self, value: Any) -> Any:
        """Return ``value`` converted to the parameter's kind, or raise InvalidParameterError."""
        if value is None:
            if self.allow_none:
                return None
            raise InvalidParameterError(
                f"parameter {self.name!r}: got None, expected {self.allowed()}"
            )
        if self.kind is bool:
            if not isinstance(value, bool | int) or value not in (0, 1, True, False):
                raise InvalidParameterError(
                    f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
                )
            value = bool(value)
        elif self.kind is int:
            # bool is an int subclass; True as a player count is a mistake, not a 1.
            if isinstance(value, bool | np.bool_) or not _is_integral(value):
                raise InvalidParameterError(
                    f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
                )
            value = int(value)
        elif self.kind is float:
            # nan and inf pass every bound test, so they are refused outright
            if isinstance(value, bool | np.bool_) or not isinstance(value, int | float):
                raise InvalidParameterError(
                    f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
                )
            value = float(value)
            if not math.isfinite(value):
                raise InvalidParameterError(
                    f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
                )
        elif self.kind is str and not isinstance(value, str):
            raise InvalidParameterError(
                f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
            )
        if self.choices is not None and value not in self.choices:
            raise InvalidParameterError(
                f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
            )
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise InvalidParameterError(
                f"parameter {self.name!r}: got {show(value)}, expected {self.allowed()}"
            )
        return value


def _bound(value: float, kind: type) -> str:
    """A bound as a message shows it: an integer parameter's in full (1048576, not 1.04858e+06)."""
    return str(int(value)) if kind is int and float(value).is_integer() else f"{value:g}"


def show(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for error messages, kept short: a huge integer (whose repr Python
    refuses past its digit limit), a deeply nested or long value never makes the message
    itself fail or fill the screen."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        digits = int(value.bit_length() * 0.30103) + 1
        return f"{'-' if value < 0 else ''}an integer of ~{digits:,} digits"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__} too large or too deeply nested to show"
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _is_integral(value: Any) -> bool:
    try:
        return int(value) == value and not isinstance(value, str)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        return False


def resolve_params(
    spec: Sequence[Param],
    given: Mapping[str, Any],
    check: Callable[[dict[str, Any]], None] | None = None,
    *,
    game: str = "game",
) -> dict[str, Any]:
    """Validate ``given`` against ``spec`` and fill in defaults.

    Args:
        spec: the game's declared parameters, in resolution order (a callable default may use
            parameters declared before it).
        given: user keyword arguments.
        check: optional cross-parameter validation; raise InvalidParameterError inside it.
        game: game name for error messages.
    """
    names = [p.name for p in spec]
    for key in given:
        if key not in names:
            hint = did_you_mean(key, names)
            raise InvalidParameterError(
                f"unknown parameter {key!r} for {game}{hint}; known parameters: {', '.join(names)}"
            )
    out: dict[str, Any] = {}
    for p in spec:
        value = given.get(p.name, _MISSING)
        if value is _MISSING:
            value = p.default(out) if callable(p.default) else p.default
        out[p.name] = p.validate(value)
    if check is not None:
        check(out)
    return out


def describe_params(spec: Sequence[Param]) -> list[dict[str, str]]:
    """Rows (name, default, allowed, doc) for help output and docs."""
    rows = []
    for p in spec:
        default = "(derived)" if callable(p.default) else repr(p.default)
        rows.append({"name": p.name, "default": default, "allowed": p.allowed(), "doc": p.doc})
    return rows


def did_you_mean(word: str, choices: Sequence[str], prefix: str = "") -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` (shown with ``prefix``), or ""."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" (did you mean {prefix + close[0]!r}?)" if close else ""


def check_choice(name: str, value: Any, choices: Sequence[Any], allow_none: bool = False) -> Any:
    """``value`` if it is one of ``choices`` (or None when allowed), else InvalidParameterError."""
    if (value is None and allow_none) or (value is not None and value in choices):
        return value
    allowed = ", ".join(repr(c) for c in choices)
    raise InvalidParameterError(
        f"parameter {name!r}: got {show(value)}, expected {'None or ' if allow_none else ''}one of {allowed}"
    )
