"""Atomic file writes (a crash leaves either the old file or the new one, never a torn one)
and the run-directory lock (one writer per run directory).

:func:`write_atomic` is the suite's one temp-file writer: a unique temporary name in the target's
directory (``mkstemp``: concurrent writers of one path never share a temp file, and the path
ends as one writer's complete file), renamed over the target, and removed on every other exit
path: an exception, Ctrl-C (KeyboardInterrupt) and SIGTERM (turned into :class:`Terminated`
while a write is under way, unless the program handles SIGTERM itself). Reading goes through
:mod:`derby_envs.core.datafile` (bounded, regular files only).
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from derby_envs.core.errors import DerbyEnvsError

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]


class Terminated(SystemExit):
    """SIGTERM arrived while a file was being written (the temporary file is gone; the target
    is as it was). A ``SystemExit`` with status 143, so an uncaught one ends the program as the
    signal would have, without a traceback."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


@contextmanager
def terminate_raises() -> Iterator[None]:
    """While inside: SIGTERM raises :class:`Terminated` (so ``finally`` and ``except`` clauses
    clean up), if this is the main thread and SIGTERM has its default action (a program with
    its own handler, such as the trainer's checkpoint-on-kill, keeps it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """While inside: Ctrl-C (SIGINT) and SIGTERM wait. Each one that arrives is noted, and on
    leaving it is raised again for the handler that was in place (a trainer's
    checkpoint-on-interrupt then runs after the write, not in the middle of it). For writes
    through libraries that call back into Python: torch's checkpoint writer turns an exception
    raised in its write callback into an unrelated ``RuntimeError`` (the interrupt is lost, the
    program ends with a traceback). Only in the main thread (where Python runs handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def note(signum: int, frame: Any) -> None:
        pending.append(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler is not None and handler is not signal.SIG_IGN:  # None: set outside Python
            previous[sig] = signal.signal(sig, note)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(pending):
            signal.raise_signal(sig)


def write_atomic(path: str | Path, write: Callable[[IO[Any]], None], binary: bool = False) -> Path:
    """Call ``write`` on a synced temporary file (a unique name) in the same directory as
    ``path``, then rename it to ``path`` (the parent directory is created if needed). On any
    error, Ctrl-C or SIGTERM the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with terminate_raises():
        tmp = None
        try:
            # a signal raised inside mkstemp, after it made the file, would orphan it
            with signals_deferred():
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
                f = os.fdopen(fd, "wb" if binary else "w")
            with f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a normal file is wanted
            os.replace(tmp, path)
        except BaseException:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            raise
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """:func:`write_atomic` of ``text``."""
    return write_atomic(path, lambda f: f.write(text))


def fsync_file(path: str | Path) -> None:
    """Flush a file written by someone else (sb3's ``save``) to disk before it is renamed."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_temp_name(name: str) -> bool:
    """The names of this suite's temporary files (``.<name>.<random>.tmp``,
    ``.<stem>.tmp.zip``): left only by a killed process, safe to remove under the lock."""
    return name.startswith(".") and (name.endswith(".tmp") or name.endswith(".tmp.zip"))


def write_json_atomic(path: str | Path, data: Any, **dump_kwargs: Any) -> Path:
    """:func:`write_text_atomic` of ``json.dumps(data, **dump_kwargs)`` plus a newline
    (default layout: ``indent=2, sort_keys=True``). Serialisation errors leave ``path`` as it
    was."""
    kwargs = {"indent": 2, "sort_keys": True, **dump_kwargs}
    return write_text_atomic(path, json.dumps(data, **kwargs) + "\n")


# ----- one writer per run directory -----------------------------------------------------------
LOCK_NAME = ".lock"


class RunDirInUseError(DerbyEnvsError):
    """Another live process holds the run directory (``derby-envs train`` on it)."""


class RunDirLock:
    """An exclusive ``fcntl.flock`` on ``<run_dir>/.lock``, held until :meth:`release` (or the
    process ends: the kernel drops the lock of a killed process, so a crash never leaves a
    stale lock). The file holds the owner's pid, for the error message only."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._file: Any = None

    def acquire(self) -> RunDirLock:
        """Take the lock or fail at once.

        Raises:
            RunDirInUseError: another process holds it (naming its pid).
        """
        if fcntl is None:  # no flock on this platform: one writer is then the user's care
            return self
        f = self.path.open("a+")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            owner = f.read().strip() or "unknown"
            f.close()
            raise RunDirInUseError(
                f"run directory {str(self.path.parent)!r} is in use by another training "
                f"process (pid {owner}); wait for it to finish or stop it (Ctrl-C / kill PID "
                "saves a checkpoint), then --resume"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        if self._file is not None:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            finally:
                self._file.close()
                self._file = None

    @property
    def held(self) -> bool:
        return self._file is not None
