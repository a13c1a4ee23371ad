"""numba's cache of compiled kernels, kept in step with every source file a kernel uses.

numba caches a ``cache=True`` kernel keyed on the source of the file that defines it, and
only that file: a kernel that calls a kernel of another module (Demolition Derby's
``batch.py`` calling ``kernels.py``, ``agents/dd_fast.py`` calling both) or reads a constant
defined elsewhere keeps the compiled code of the old version after that other file changes.

:func:`refresh` closes the gap. For every module of the given packages that uses numba it
hashes the module together with every module of those packages it imports, directly or not
(read from the import statements, nothing is executed); where that fingerprint differs from
the one recorded beside the module's cache files, the cache files are deleted (numba compiles
afresh at the next call) and the new fingerprint is recorded. ``derby-envs compile`` and the
test suite (``tests/conftest.py``) call it before any kernel runs, so a test run never uses a
stale kernel; after editing a kernel module, run ``derby-envs compile`` before other scripts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

#: written beside a module's cache files: the fingerprint its cache was made under
STAMP_SUFFIX = ".derby-kernel-deps"

_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?P<modules>[^\n#;]*)", re.M)
_FROM = re.compile(
    r"^[ \t]*from[ \t]+(?P<dots>\.*)(?P<module>[\w.]*)[ \t]+import[ \t]+"
    r"(?P<names>\([^)]*\)|[^\n#;]*)",
    re.M,
)


def _names(group: str) -> list[str]:
    """The names of an import list: ``a as b, (c,\n d)`` -> ``a, c, d``."""
    group = re.sub(r"#[^\n]*", "", group).replace("(", " ").replace(")", " ").replace("\\", " ")
    return [item.split()[0] for item in group.split(",") if item.strip()]


def package_roots() -> list[Path]:
    """The directories of the packages whose kernels the suite compiles: ``derby_envs`` and
    ``agents`` (found without importing ``agents``)."""
    import importlib.util

    roots = [Path(__file__).resolve().parent.parent]
    spec = importlib.util.find_spec("agents")
    if spec is not None and spec.origin is not None:
        roots.append(Path(spec.origin).resolve().parent)
    return roots


def refresh(roots: Iterable[Path] | None = None) -> list[Path]:
    """Delete the numba cache files of every kernel module under ``roots`` (package
    directories; default :func:`package_roots`) whose own source or an imported module's
    changed since its cache was made; the modules whose caches were deleted."""
    roots = [Path(r).resolve() for r in (roots if roots is not None else package_roots())]
    graph = _ImportGraph(roots)
    cleared = []
    with _lock(roots[0]):
        for module in graph.kernel_modules():
            digest = graph.fingerprint(module)
            stale = False
            for cache_dir in cache_dirs(module):
                stale |= _refresh_dir(cache_dir, module.stem, digest, module.parent / "__pycache__")
            if stale:
                cleared.append(module)
    return cleared


def cache_dirs(module: Path) -> list[Path]:
    """Where numba may keep the cache files of ``module``'s kernels: its ``__pycache__``,
    ``NUMBA_CACHE_DIR``'s mirror of it, and the user-wide cache (numba's locators)."""
    from numba.core import caching

    dirs = []
    for locator in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"):
        cls = getattr(caching, locator, None)
        if cls is None:
            continue
        if locator == "UserProvidedCacheLocator":
            from numba.core import config

            if not config.CACHE_DIR:
                continue
        with contextlib.suppress(Exception):  # a locator that cannot apply here
            dirs.append(Path(cls(_probe, str(module)).get_cache_path()))
    return dirs


def _probe() -> None:
    """A function to build numba's locators with (they read its first line number only)."""


def _refresh_dir(cache_dir: Path, stem: str, digest: str, in_tree: Path) -> bool:
    """Make ``cache_dir``'s cache files of module ``stem`` belong to ``digest``: delete them
    if they were made under another fingerprint (or under none recorded); True if any were."""
    if cache_dir == in_tree:  # made now, so that caches numba writes later have a stamp
        with contextlib.suppress(OSError):
            cache_dir.mkdir(exist_ok=True)
    if not cache_dir.is_dir():
        return False
    stamp = cache_dir / f"{stem}{STAMP_SUFFIX}"
    with contextlib.suppress(OSError):
        if stamp.read_text() == digest:
            return False
    stale = False
    for pattern in (f"{stem}.*.nbi", f"{stem}.*.nbc"):
        for path in cache_dir.glob(pattern):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                stale = True
    with contextlib.suppress(OSError):  # a read-only cache: numba does not write there either
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        tmp.write_text(digest)
        os.replace(tmp, stamp)
    return stale


@contextlib.contextmanager
def _lock(root: Path) -> Iterator[None]:
    """Processes refreshing together (``make test`` compiles in two at once) take turns."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): a concurrent refresh only repeats work
        yield
        return
    path = root / "__pycache__" / "kernel-cache.lock"
    try:
        path.parent.mkdir(exist_ok=True)
        handle = open(path, "a")
    except OSError:  # a read-only install: nothing to refresh there either
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


class _ImportGraph:
    """The modules of some packages and the imports among them, read from the source."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = {r.name: r for r in roots}
        self._imports: dict[Path, set[Path]] = {}

    def kernel_modules(self) -> list[Path]:
        """The modules that may define kernels: those naming numba or a ``njit`` decorator
        (some take it from another module); one without kernels only gets a stamp."""
        found = []
        for root in self.roots.values():
            for path in sorted(root.rglob("*.py")):
                if "__pycache__" in path.parts:
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
                if "numba" in text or "njit" in text:
                    found.append(path)
        return found

    def fingerprint(self, module: Path) -> str:
        """SHA-256 of ``module`` and every package module it imports, directly or not."""
        seen: set[Path] = set()
        todo = [module]
        while todo:
            path = todo.pop()
            if path not in seen:
                seen.add(path)
                todo.extend(self.imports(path))
        digest = hashlib.sha256()
        for path in sorted(seen):
            digest.update(str(self._relative(path)).encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def imports(self, path: Path) -> set[Path]:
        """The package modules ``path`` imports (absolute and relative imports)."""
        if path not in self._imports:
            self._imports[path] = set(self._read_imports(path))
        return self._imports[path]

    def _read_imports(self, path: Path) -> Iterator[Path]:
        # the import statements by pattern, not by parsing (ten times faster); a match inside
        # a string only adds a module to the fingerprint, which costs a needless recompile
        text = path.read_text(encoding="utf-8", errors="replace")
        package = self._module_name(path).split(".")[:-1]  # a module's or __init__'s package
        for match in _IMPORT.finditer(text):
            for name in _names(match["modules"]):
                yield from self._resolve(name.split("."))
        for match in _FROM.finditer(text):
            level = len(match["dots"])
            base = package[: len(package) - level + 1] if level else []
            parts = base + (match["module"].split(".") if match["module"] else [])
            yield from self._resolve(parts)
            for name in _names(match["names"]):  # ``from pkg import submodule``
                yield from self._resolve([*parts, name])

    def _resolve(self, parts: list[str]) -> Iterator[Path]:
        if not parts or parts[0] not in self.roots:
            return
        base = self.roots[parts[0]].joinpath(*parts[1:])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                yield candidate
                return

    def _module_name(self, path: Path) -> str:
        rel = self._relative(path)
        return ".".join(rel.with_suffix("").parts)

    def _relative(self, path: Path) -> Path:
        for name, root in self.roots.items():
            if path.is_relative_to(root):
                return Path(name) / path.relative_to(root)
        return path
