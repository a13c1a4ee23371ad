"""Rows of a batch split over threads, one per core: the compiled kernels release the GIL.

A batched engine's kernels (and the heuristics' ``act_batch``) loop over games; a game's row
depends on nothing in another row, so the rows can be cut into contiguous ranges and each
range run on its own thread, with its own scratch arrays. A hand-off costs some tens of
microseconds, so a call is split only when each range gets at least :data:`MIN_ROWS` rows of
work (:func:`ranges`); smaller calls run whole in the calling thread.

The pool is made at first use in each process: a forked child has none of its parent's
threads (a pool inherited by ``fork`` would wait forever).
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
from collections.abc import Callable, Sequence


def _threads() -> int:
    """``$DERBY_ENVS_THREADS`` where set (1 keeps every kernel on the calling thread), else
    one per core this process may use, at most 4."""
    raw = os.environ.get("DERBY_ENVS_THREADS", "").strip()
    if raw:
        if not raw.isdigit() or not 1 <= int(raw) <= 64:
            raise ValueError(
                f"DERBY_ENVS_THREADS={raw!r}: expected a whole number of threads from 1 to 64"
            )
        return int(raw)
    return min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


#: threads per split
THREADS = _threads()
#: the fewest rows of work worth a thread of their own, for a kernel whose rows cost about a
#: microsecond each (a hand-off to a thread costs some tens of microseconds)
MIN_ROWS = 64

_POOL: dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def pool() -> concurrent.futures.ThreadPoolExecutor:
    """This process's worker threads (made at first use; a forked child makes its own)."""
    pid = os.getpid()
    if pid not in _POOL:
        _POOL.clear()
        _POOL[pid] = concurrent.futures.ThreadPoolExecutor(THREADS, "derby-envs-rows")
    return _POOL[pid]


def ranges(rows: int, work: int | None = None, min_rows: int | None = None) -> list[slice]:
    """``rows`` rows cut into contiguous slices, one a thread: as many as :data:`THREADS`
    allows with at least ``min_rows`` (default :data:`MIN_ROWS`; at least 1) of ``work`` (the
    rows that do something; default all) in each; ``[slice(0, rows)]`` when that is one."""
    min_rows = max(1, MIN_ROWS if min_rows is None else min_rows)
    parts = min(THREADS, (rows if work is None else work) // min_rows)
    if parts <= 1:
        return [slice(0, rows)]
    cuts = [rows * k // parts for k in range(parts + 1)]
    return [slice(cuts[k], cuts[k + 1]) for k in range(parts)]


def split(
    part: Callable[[slice, int], object], rows: int, work: int | None = None, scale: int = 1
) -> None:
    """``part(rows_slice, k)`` for each of the :func:`ranges` of ``rows`` (``k``: the
    range's index, for its scratch arrays), on as many threads. ``scale``: how many
    :data:`MIN_ROWS` a thread needs, for kernels whose rows are cheap (a hand-off must buy
    more than it costs)."""
    parts = ranges(rows, work, MIN_ROWS * scale)
    if len(parts) == 1:
        part(parts[0], 0)
    else:
        run([functools.partial(part, s, k) for k, s in enumerate(parts)])


def run(tasks: Sequence[Callable[[], object]]) -> list[object]:
    """Run ``tasks`` at once: the last in the calling thread, the others on :func:`pool`.
    Returns their results in order; the first error is raised once all have ended."""
    if len(tasks) == 1:
        return [tasks[0]()]
    futures = [pool().submit(t) for t in tasks[:-1]]
    error: BaseException | None = None
    try:
        last = tasks[-1]()
    except BaseException as e:  # wait for the others before raising: they write shared arrays
        error, last = e, None
    results = []
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as e:
            error = error or e
            results.append(None)
    if error is not None:
        raise error
    return [*results, last]
