"""An observation layout, declared once: named slices, their sizes and meanings.

A game declares its observation as an ordered tuple of :class:`Entry` (name, size, meaning).
The size is a number or a short formula over single-letter variables that the game supplies
(``"n"``, ``"4n"``, ``"18(n-1)"``, ``"nL"``: a digit or letter followed by a letter or ``(``
multiplies). From the declaration come the game's ``observation_slices``
(:meth:`Layout.slices`) and the markdown table of its docs page (:meth:`Layout.markdown`),
which a test compares with ``docs/<game>.md`` so that code and documentation cannot drift.

An engine assigns its layout to ``Game.observation_layout``; ``Game.layout_variables()``
supplies the letters (by default only ``n``, the number of players: override it for any other
letter). Example::

    OBSERVATION = Layout([
        ("to_act", 1, "1 if the observer must act now"),
        ("hand", "K", "the observer's cards by value"),
        ("scores", "n", "points by relative seat"),
    ])

    class MyGame(Game):
        observation_layout = OBSERVATION

        def layout_variables(self):
            return {"n": self.num_players, "K": self.params["cards"]}

    game.observation_slices  # {"to_act": slice(0, 1), "hand": slice(1, 1 + K), ...}
    OBSERVATION.size({"n": 2, "K": 4})  # 7
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_IMPLICIT = re.compile(r"(?<=[0-9A-Za-z)])(?=[A-Za-z(])")


def eval_size(formula: int | str, variables: Mapping[str, int]) -> int:
    """The value of a size formula (``+ - *``, parentheses, integers, single-letter names)."""
    if isinstance(formula, int):
        return formula
    tree = ast.parse(_IMPLICIT.sub("*", formula.replace(" ", "")), mode="eval")
    return _eval(tree.body, variables, formula)


def _eval(node: ast.AST, env: Mapping[str, int], text: str) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return int(env[node.id])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        a, b = _eval(node.left, env, text), _eval(node.right, env, text)
        if isinstance(node.op, ast.Add):
            return a + b
        return a - b if isinstance(node.op, ast.Sub) else a * b
    raise ValueError(f"size {text!r}: cannot evaluate {ast.dump(node)} (variables {sorted(env)})")


@dataclass(frozen=True)
class Entry:
    """One named slice of an observation: ``size`` a number or a formula (``"18(n-1)"``),
    ``meaning`` the docs table's text."""

    name: str
    size: int | str
    meaning: str


class Layout:
    """An ordered observation layout: :class:`Entry` objects or ``(name, size, meaning)``
    tuples, names unique. ``variables`` below maps each letter of the size formulas to its
    value (what ``Game.layout_variables()`` returns)."""

    def __init__(self, entries: Sequence[Entry | tuple[str, int | str, str]]) -> None:
        self.entries = tuple(e if isinstance(e, Entry) else Entry(*e) for e in entries)
        names = [e.name for e in self.entries]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate slice names in {names}")

    @property
    def names(self) -> tuple[str, ...]:
        """The slice names, in order."""
        return tuple(e.name for e in self.entries)

    def sizes(self, variables: Mapping[str, int]) -> list[tuple[str, int]]:
        """``(name, size)`` of every entry with the formulas evaluated."""
        return [(e.name, eval_size(e.size, variables)) for e in self.entries]

    def slices(self, variables: Mapping[str, int]) -> dict[str, slice]:
        """Contiguous named slices, in order (the game's ``observation_slices``)."""
        out, i = {}, 0
        for name, size in self.sizes(variables):
            out[name] = slice(i, i + size)
            i += size
        return out

    def size(self, variables: Mapping[str, int]) -> int:
        """The observation's length (the game's ``observation_size``)."""
        return sum(s for _, s in self.sizes(variables))

    def markdown(self) -> str:
        """The docs table: ``| slice | size | meaning |``, one row per entry."""
        rows = ["| slice | size | meaning |", "|---|---|---|"]
        rows += [f"| `{e.name}` | {e.size} | {e.meaning} |" for e in self.entries]
        return "\n".join(rows)


def markdown_table_after(text: str, header: str = "| slice | size | meaning |") -> str:
    """The markdown table starting at the line ``header`` in ``text`` (for the docs check)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        raise ValueError(f"no table with the header {header!r}")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(line.rstrip() for line in lines[start:end])
