"""The suite's one reader of JSON and YAML files from others (replays, ``pool.json``, configs,
data files): every read is bounded, and every failure is an error naming the file.

* Only regular files are read (a FIFO, a device such as ``/dev/zero``, a directory or a socket
  is refused; a symlink is followed and its target judged), opened without blocking.
* At most ``max_bytes`` are read (default 64 MiB); a larger or growing file is refused.
* The text must be UTF-8 (a BOM is allowed); the error names the first bad byte's offset.
* Parsed values may nest at most ``max_depth`` containers deep (default 100) and hold at most
  ``max_nodes`` values counted as the program sees them (YAML aliases expanded, default
  2,000,000): a 100,000-deep list or a "billion laughs" alias bomb is an error, never a
  ``RecursionError`` or a memory blow-up further on.
* Integers longer than Python's digit limit and parser errors are reported with the file name
  (and line, where the parser knows it).

The reader raises ``error`` (default :class:`DataFileError`), so each caller keeps its own
exception type (``ReplayFormatError``, ``ConfigError``, ...).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from derby_envs.core.errors import DerbyEnvsError

MAX_BYTES = 64 * 2**20
MAX_DEPTH = 100
MAX_NODES = 2_000_000


class DataFileError(DerbyEnvsError, ValueError):
    """A file the suite reads is missing, not a regular file, too large, not UTF-8 or not
    well-formed JSON/YAML (the message names the file)."""


def read_text(
    path: str | Path,
    *,
    what: str = "file",
    max_bytes: int = MAX_BYTES,
    error: type[Exception] = DataFileError,
) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``max_bytes`` bytes)."""
    name = f"{what} {str(path)!r}"
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except IsADirectoryError:
        raise error(f"{name} is a directory, not a file") from None
    except OSError as exc:
        raise error(f"{name}: cannot open it ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{name} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise error(
                f"{name} is not a regular file (a device, FIFO or socket); only regular files "
                "are read"
            )
        if info.st_size > max_bytes:
            raise error(f"{name} is {info.st_size:,} bytes; the limit is {max_bytes:,}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise error(f"{name} is over {max_bytes:,} bytes (it grew while read)")
    except OSError as exc:
        raise error(f"{name}: cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{name} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None


def read_json(
    path: str | Path,
    *,
    what: str = "file",
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    error: type[Exception] = DataFileError,
) -> Any:
    """The parsed JSON of the regular file ``path`` (see the module docstring for the bounds)."""
    text = read_text(path, what=what, max_bytes=max_bytes, error=error)
    return parse_json(text, f"{what} {str(path)!r}", max_depth=max_depth, error=error)


def read_yaml(
    path: str | Path,
    *,
    what: str = "file",
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    error: type[Exception] = DataFileError,
) -> Any:
    """The parsed YAML (``yaml.safe_load``) of the regular file ``path``."""
    text = read_text(path, what=what, max_bytes=max_bytes, error=error)
    return parse_yaml(text, f"{what} {str(path)!r}", max_depth=max_depth, error=error)


def parse_json(
    text: str | bytes,
    source: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    error: type[Exception] = DataFileError,
) -> Any:
    """``json.loads(text)`` with the reader's checks; ``source`` names the text in errors."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{source}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise error(f"{source}: nested more than {max_depth} levels deep") from None
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not UTF-8 text ({exc.reason} at offset {exc.start})") from None
    except ValueError as exc:  # e.g. an integer past Python's digit limit
        raise error(f"{source}: {_value_problem(exc)}") from None
    check_nesting(value, source, max_depth=max_depth, max_nodes=max_nodes, error=error)
    return value


def parse_yaml(
    text: str,
    source: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    error: type[Exception] = DataFileError,
) -> Any:
    """``yaml.safe_load(text)`` with the reader's checks; ``source`` names the text in errors."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1} column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{source}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise error(f"{source}: nested more than {max_depth} levels deep") from None
    except ValueError as exc:  # an integer past Python's digit limit, a bad date
        raise error(f"{source}: {_value_problem(exc)}") from None
    check_nesting(value, source, max_depth=max_depth, max_nodes=max_nodes, error=error)
    return value


def check_nesting(
    value: Any,
    source: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    error: type[Exception] = DataFileError,
) -> None:
    """Refuse ``value`` if its containers (lists, tuples, mappings) nest deeper than
    ``max_depth`` or it holds more than ``max_nodes`` values, a shared container counted each
    time it is reached (as a program walking it would see it). Iterative, level by level, and
    stopped at the first bound passed: neither depth, a cycle nor aliasing can make it recurse
    or run long."""
    level, depth, total = [value], 0, 0
    while level:
        nxt = []
        for node in level:
            if type(node) in _SCALARS:
                continue
            if isinstance(node, Mapping):
                children = node.values()
            elif isinstance(node, list | tuple):
                children = node
            else:
                continue
            total += len(children)
            nxt.extend(c for c in children if type(c) not in _SCALARS)
        if total > max_nodes:
            raise error(
                f"{source}: holds more than {max_nodes:,} values (YAML aliases counted as expanded)"
            )
        if nxt:
            depth += 1
            if depth > max_depth:
                raise error(f"{source}: nested more than {max_depth} levels deep")
        level = nxt


_SCALARS = frozenset({int, float, str, bool, type(None), bytes})


def _value_problem(exc: ValueError) -> str:
    text = str(exc)
    if "digits" in text and "integer" in text:
        return "an integer with too many digits (more than Python's limit of " + (
            f"{_digit_limit()} digits)"
        )
    return text.splitlines()[0] if text else type(exc).__name__


def _digit_limit() -> int:
    import sys

    get = getattr(sys, "get_int_max_str_digits", None)
    return get() if get is not None else 4300
