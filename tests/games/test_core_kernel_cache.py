"""derby_envs.core.kernel_cache: a kernel's numba cache is dropped when a module it imports
changes, not only when its own file does."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from derby_envs.core import kernel_cache

KERNEL = """\
from numba import njit

from toypkg.constants import STEP


@njit(cache=True)
def advance(x):
    return x + STEP
"""

CALLER = """\
from numba import njit

from .kernel import advance


@njit(cache=True)
def twice(x):
    return advance(advance(x))
"""


def _package(root: Path, step: int) -> Path:
    pkg = root / "toypkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "constants.py").write_text(f"STEP = {step}\n")
    (pkg / "kernel.py").write_text(KERNEL)
    (pkg / "caller.py").write_text(CALLER)
    (pkg / "unrelated.py").write_text("NOTE = 'not imported by a kernel'\n")
    return pkg


def _twice_of_zero(root: Path) -> int:
    """``toypkg.caller.twice(0)`` in a fresh process (numba's cache is read at the call)."""
    code = f"import sys; sys.path.insert(0, {str(root)!r}); from toypkg.caller import twice; print(twice(0))"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the in-tree cache
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def _cache_files(pkg: Path) -> list[str]:
    return sorted(p.name for p in (pkg / "__pycache__").glob("*.nb[ic]"))


def test_a_changed_import_drops_the_caches_that_depend_on_it(tmp_path):
    pkg = _package(tmp_path, step=1)
    assert kernel_cache.refresh([pkg]) == []  # nothing cached yet: nothing to drop
    # ... but the fingerprints are recorded, for the caches numba is about to write
    stamps = sorted(p.name for p in (pkg / "__pycache__").glob(f"*{kernel_cache.STAMP_SUFFIX}"))
    assert stamps == [f"caller{kernel_cache.STAMP_SUFFIX}", f"kernel{kernel_cache.STAMP_SUFFIX}"]
    assert _twice_of_zero(tmp_path) == 2
    cached = _cache_files(pkg)
    assert any(name.startswith("caller.") for name in cached)
    assert any(name.startswith("kernel.") for name in cached)

    # a file no kernel imports changes: every cache stays
    (pkg / "unrelated.py").write_text("NOTE = 'edited'\n")
    assert kernel_cache.refresh([pkg]) == []
    assert _cache_files(pkg) == cached

    # the constant the kernel reads changes: numba alone would keep both compiled versions
    (pkg / "constants.py").write_text("STEP = 5\n")
    dropped = kernel_cache.refresh([pkg])
    assert sorted(p.name for p in dropped) == ["caller.py", "kernel.py"]
    assert _cache_files(pkg) == []
    assert _twice_of_zero(tmp_path) == 10
    assert kernel_cache.refresh([pkg]) == []  # the new caches belong to the new sources


def test_imports_are_read_from_the_source_not_executed(tmp_path):
    pkg = tmp_path / "toypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("")
    (pkg / "sub" / "b.py").write_text("")
    (pkg / "c.py").write_text("")
    (pkg / "sub" / "user.py").write_text(
        textwrap.dedent(
            """\
            import numpy as np
            from . import a  # a sibling by a relative import
            from .. import c
            from toypkg.sub import (
                b,  # a submodule in a parenthesised list
            )
            """
        )
    )
    graph = kernel_cache._ImportGraph([pkg.resolve()])
    names = sorted(
        str(p.relative_to(pkg.resolve()))
        for p in graph.imports((pkg / "sub" / "user.py").resolve())
    )
    # ``from .. import c`` runs the parent package's __init__ too, as Python would
    assert names == ["__init__.py", "c.py", "sub/__init__.py", "sub/a.py", "sub/b.py"]


def test_the_suite_kernel_modules_are_found():
    graph = kernel_cache._ImportGraph([r.resolve() for r in kernel_cache.package_roots()])
    found = {f"{p.parent.name}/{p.name}" for p in graph.kernel_modules()}
    for module in (
        "demolition_derby/kernels_turn.py",  # takes its decorator from kernels.py
        "demolition_derby/batch.py",
        "derby/batch_kernels.py",
        "kentucky_derby/batch_kernels.py",
        "agents/dd_fast.py",
        "agents/derby.py",
        "core/pcg64.py",
    ):
        assert module in found
