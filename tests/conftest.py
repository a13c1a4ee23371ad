"""Test-wide settings."""

import os
import subprocess
import sys
from pathlib import Path

# Never open a window from the test suite, even on a machine with a display
# (the one test of the window itself starts its own virtual display).
os.environ.setdefault("DERBY_ENVS_NO_WINDOW", "1")

ROOT = Path(__file__).resolve().parent.parent

#: the kernels compiled before pytest-xdist starts its workers, in parallel processes of about
#: equal cost (Demolition Derby's kernels alone take as long as the other two games')
COMPILE_GROUPS = (("demolition_derby",), ("derby", "kentucky_derby"))


def pytest_configure(config):
    """Drop the numba caches of kernels whose sources changed (numba notices only a change of
    the kernel's own file: ``derby_envs.core.kernel_cache``). Then, under pytest-xdist
    (``make test`` runs ``-n auto``), compile the numba kernels once, before the workers
    start: each worker would otherwise compile every kernel it meets, the same kernels in
    every worker (tens of seconds per game), before numba's cache has them."""
    if hasattr(config, "workerinput"):  # a worker: the main process did both
        return
    from derby_envs.core import kernel_cache

    kernel_cache.refresh()
    workers = getattr(config.option, "numprocesses", None)
    if not workers:  # a serial run compiles as it goes
        return
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "training.cli", "compile", "--games", *games],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for games in COMPILE_GROUPS
    ]
    for proc in procs:
        out, _ = proc.communicate()
        # a failure here shows again, with its traceback, in the tests that use the kernel
        if proc.returncode != 0:
            print(f"compiling the kernels failed (the tests will say where):\n{out}")


def pytest_collection_modifyitems(config, items):
    """The longest tests first (the wheel's venvs: building, installing, compiling), so that
    the other worker never waits for one of them at the end of a parallel run."""
    items.sort(key=lambda item: Path(str(item.path)).name != "test_wheel.py")
