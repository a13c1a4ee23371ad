"""Atomic file writes: a crash leaves either the old file or the new one, never a torn one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a synced temporary file in the same directory and a
    rename (the parent directory is created if needed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a normal file is wanted
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, data: Any, **dump_kwargs: Any) -> Path:
    """:func:`write_text_atomic` of ``json.dumps(data, **dump_kwargs)`` plus a newline
    (default layout: ``indent=2, sort_keys=True``). Serialisation errors leave ``path`` as it
    was."""
    kwargs = {"indent": 2, "sort_keys": True, **dump_kwargs}
    return write_text_atomic(path, json.dumps(data, **kwargs) + "\n")
