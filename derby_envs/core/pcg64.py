"""numpy's ``default_rng(seed)`` streams inside numba kernels, one generator per array row.

A batched engine keeps the generators of its games as rows of a ``(B, WORDS)`` ``uint64``
array (one row a game: numpy's ``PCG64`` state and increment, and its 32-bit buffer) and draws
from them in compiled code, draw for draw as ``numpy.random.Generator`` would: a game of the
batch seeded ``s`` follows the same stream as ``np.random.default_rng(s)``, so it plays the
same game as the reference engine seeded ``s``.

Mirrored from numpy (``numpy/random/bit_generator.pyx``, ``_pcg64.pyx``, ``pcg64.h``,
``distributions.c``, ``_generator.pyx``):

* :func:`seed_row`: ``SeedSequence(seed)`` and ``PCG64(seed_seq)``'s initialisation;
* :func:`next_uint64`, :func:`next_uint32` (with PCG64's buffered half word),
  :func:`next_double`;
* :func:`integers`: ``Generator.integers(high)`` (default int64: Lemire's bounded integers);
* :func:`interval` and :func:`shuffle`: ``Generator.shuffle`` / ``permutation`` (masked
  rejection from the last position down);
* :func:`bounded`: ``random_bounded_uint64`` (the draw of ``choice(..., replace=False)``'s
  Floyd algorithm); :func:`choice_without_replacement`: that whole call;
* :func:`standard_normal`: numpy's ziggurat.

numpy promises a method's stream only within one version: tests/games/test_pcg64.py compares
every function with the installed numpy, and :func:`numpy_mismatch` repeats a short check
once per process (the batched envs refuse to run if it fails rather than play other games).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba.np.random._constants import (
    fi_double,
    ki_double,
    wi_double,
    ziggurat_nor_inv_r,
    ziggurat_nor_r,
)

#: the words of a generator row
STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_U32, UINTEGER = range(6)
WORDS = 6

njit = functools.partial(numba.njit, cache=True, nogil=True, error_model="numpy")

_M32 = np.uint64(0xFFFFFFFF)
_MULT_HI = np.uint64(0x2360ED051FC65DA4)  # PCG's default 128-bit multiplier
_MULT_LO = np.uint64(0x4385DF649FCCF645)
# SeedSequence's hash constants (32-bit arithmetic)
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4

_KI, _WI, _FI = ki_double.copy(), wi_double.copy(), fi_double.copy()
_NOR_R, _NOR_INV_R = float(ziggurat_nor_r), float(ziggurat_nor_inv_r)


@njit
def _mulhi(a, b):
    """The high word of the 128-bit product of two uint64."""
    a0, a1 = a & _M32, a >> np.uint64(32)
    b0, b1 = b & _M32, b >> np.uint64(32)
    w0 = a0 * b0
    t = a1 * b0 + (w0 >> np.uint64(32))
    w1 = (t & _M32) + a0 * b1
    return a1 * b1 + (t >> np.uint64(32)) + (w1 >> np.uint64(32))


@njit
def _step(row):
    """state = state * MULT + inc (mod 2**128)."""
    hi, lo = row[STATE_HI], row[STATE_LO]
    new_hi = _mulhi(lo, _MULT_LO) + lo * _MULT_HI + hi * _MULT_LO
    new_lo = lo * _MULT_LO
    inc_lo = row[INC_LO]
    lo2 = new_lo + inc_lo
    carry = np.uint64(1) if lo2 < new_lo else np.uint64(0)
    row[STATE_HI] = new_hi + row[INC_HI] + carry
    row[STATE_LO] = lo2


@njit
def next_uint64(row):
    """``bit_generator.random_raw()``: step, then PCG's XSL-RR output of the new state."""
    _step(row)
    hi, lo = row[STATE_HI], row[STATE_LO]
    x = hi ^ lo
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@njit
def next_uint32(row):
    """PCG64's ``next_uint32``: the low half of a fresh word, then its high half."""
    if row[HAS_U32]:
        row[HAS_U32] = 0
        return row[UINTEGER]
    word = next_uint64(row)
    row[HAS_U32] = 1
    row[UINTEGER] = word >> np.uint64(32)
    return word & _M32


@njit
def next_double(row):
    """``Generator.random()``."""
    return float(next_uint64(row) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit
def _hashmix(value, hash_const):
    """SeedSequence's hashmix: (the mixed value, the advanced hash constant)."""
    value = (value ^ hash_const) & 0xFFFFFFFF
    hash_const = (hash_const * _MULT_A) & 0xFFFFFFFF
    value = (value * hash_const) & 0xFFFFFFFF
    return value ^ (value >> 16), hash_const


@njit
def _mix(x, y):
    result = (_MIX_L * x - _MIX_R * y) & 0xFFFFFFFF
    return result ^ (result >> 16)


@njit
def _word(p0, p1, p2, p3, i):
    if i == 0:
        return p0
    if i == 1:
        return p1
    return p2 if i == 2 else p3


@njit
def seed_row(row, seed):
    """Set ``row`` to the generator of ``np.random.default_rng(seed)`` (0 <= seed < 2**64).
    The pool of four 32-bit words lives in locals: nothing is allocated."""
    s = np.uint64(seed)
    lo, hi = np.int64(s & _M32), np.int64(s >> np.uint64(32))
    n_entropy = 2 if hi != 0 else 1
    h = _INIT_A
    p0, h = _hashmix(lo, h)
    p1, h = _hashmix(hi if n_entropy == 2 else 0, h)
    p2, h = _hashmix(0, h)
    p3, h = _hashmix(0, h)
    for i_src in range(_POOL):  # mix every word into every other, in numpy's order
        for i_dst in range(_POOL):
            if i_src != i_dst:
                hv, h = _hashmix(_word(p0, p1, p2, p3, i_src), h)
                if i_dst == 0:
                    p0 = _mix(p0, hv)
                elif i_dst == 1:
                    p1 = _mix(p1, hv)
                elif i_dst == 2:
                    p2 = _mix(p2, hv)
                else:
                    p3 = _mix(p3, hv)
    # generate_state(4, uint64): eight 32-bit words, paired little-endian into four
    words0 = words1 = words2 = words3 = np.uint64(0)
    hb = _INIT_B
    for i in range(8):
        v = _word(p0, p1, p2, p3, i % _POOL) ^ hb
        hb = (hb * _MULT_B) & 0xFFFFFFFF
        v = (v * hb) & 0xFFFFFFFF
        v ^= v >> 16
        part = np.uint64(v) << np.uint64(32 * (i % 2))
        k = i // 2
        if k == 0:
            words0 |= part
        elif k == 1:
            words1 |= part
        elif k == 2:
            words2 |= part
        else:
            words3 |= part
    # pcg64_set_seed: initstate = (words0, words1), initseq = (words2, words3)
    row[INC_HI] = (words2 << np.uint64(1)) | (words3 >> np.uint64(63))
    row[INC_LO] = (words3 << np.uint64(1)) | np.uint64(1)
    row[STATE_HI] = 0
    row[STATE_LO] = 0
    _step(row)
    lo_sum = row[STATE_LO] + words1
    carry = np.uint64(1) if lo_sum < words1 else np.uint64(0)
    row[STATE_HI] = row[STATE_HI] + words0 + carry
    row[STATE_LO] = lo_sum
    _step(row)
    row[HAS_U32] = 0
    row[UINTEGER] = 0


@njit
def _lemire32(row, rng):
    """Uniform on [0, rng] for rng < 2**32 - 1 (numpy's bounded_lemire_uint32)."""
    excl = np.uint64(rng) + np.uint64(1)
    m = next_uint32(row) * excl
    left = m & _M32
    if left < excl:
        threshold = (_M32 - np.uint64(rng)) % excl
        while left < threshold:
            m = next_uint32(row) * excl
            left = m & _M32
    return m >> np.uint64(32)


@njit
def _lemire64(row, rng):
    """Uniform on [0, rng] for 2**32 - 1 < rng < 2**64 - 1 (numpy's bounded_lemire_uint64)."""
    excl = np.uint64(rng) + np.uint64(1)
    x = next_uint64(row)
    left = x * excl
    if left < excl:
        threshold = (np.uint64(0xFFFFFFFFFFFFFFFF) - np.uint64(rng)) % excl
        while left < threshold:
            x = next_uint64(row)
            left = x * excl
    return _mulhi(x, excl)


@njit
def bounded(row, rng):
    """numpy's ``random_bounded_uint64(off=0, rng)``: uniform on [0, rng], an int."""
    r = np.uint64(rng)
    if r == 0:
        return 0
    if r < _M32:
        return np.int64(_lemire32(row, r))
    if r == _M32:
        return np.int64(next_uint32(row))
    return np.int64(_lemire64(row, r))


@njit
def integers(row, high):
    """``Generator.integers(high)`` (int64, 1 <= high < 2**63): uniform on [0, high)."""
    return bounded(row, high - 1)


@njit
def interval(row, top):
    """numpy's ``random_interval``: uniform on [0, top] by masked rejection."""
    if top == 0:
        return 0
    mx = np.uint64(top)
    mask = mx
    for s in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(s)
    if mx <= _M32:
        value = next_uint32(row) & mask
        while value > mx:
            value = next_uint32(row) & mask
    else:
        value = next_uint64(row) & mask
        while value > mx:
            value = next_uint64(row) & mask
    return np.int64(value)


@njit
def shuffle(row, a, k):
    """``Generator.shuffle`` of ``a[:k]`` (a list or a 1-d array), in place."""
    for i in range(k - 1, 0, -1):
        j = interval(row, i)
        a[i], a[j] = a[j], a[i]


@njit
def permutation(row, out, n):
    """``Generator.permutation(n)`` into ``out[:n]``."""
    for i in range(n):
        out[i] = i
    shuffle(row, out, n)


@njit
def choice_without_replacement(row, pop_size, size, out, scratch):
    """``Generator.choice(pop_size, size, replace=False)`` (pop_size <= 10,000: Floyd's
    algorithm, then a shuffle) into ``out[:size]``; ``scratch``: >= 2.4 * size int64 words."""
    set_size = np.uint64(int(1.2 * size))
    mask = set_size
    for s in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(s)
    empty = -1
    for i in range(int(mask) + 1):
        scratch[i] = empty
    for j in range(pop_size - size, pop_size):
        val = bounded(row, j)
        loc = np.int64(np.uint64(val) & mask)
        while scratch[loc] != empty and scratch[loc] != val:
            loc = np.int64(np.uint64(loc + 1) & mask)
        if scratch[loc] == empty:
            scratch[loc] = val
            out[j - pop_size + size] = val
        else:
            loc = np.int64(np.uint64(j) & mask)
            while scratch[loc] != empty:
                loc = np.int64(np.uint64(loc + 1) & mask)
            scratch[loc] = j
            out[j - pop_size + size] = j
    for i in range(size - 1, 0, -1):  # _shuffle_int(size, 1, out)
        k = bounded(row, i)
        out[i], out[k] = out[k], out[i]


@njit
def standard_normal(row):
    """``Generator.standard_normal()`` (numpy's ziggurat)."""
    while True:
        r = next_uint64(row)
        idx = np.int64(r & np.uint64(0xFF))
        r >>= np.uint64(8)
        sign = r & np.uint64(1)
        rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = float(rabs) * _WI[idx]
        if sign:
            x = -x
        if rabs < _KI[idx]:
            return x
        if idx == 0:
            while True:
                xx = -_NOR_INV_R * np.log1p(-next_double(row))
                yy = -np.log1p(-next_double(row))
                if yy + yy > xx * xx:
                    if (rabs >> np.uint64(8)) & np.uint64(1):
                        return -(_NOR_R + xx)
                    return _NOR_R + xx
        elif (_FI[idx - 1] - _FI[idx]) * next_double(row) + _FI[idx] < np.exp(-0.5 * x * x):
            return x


@njit(parallel=False)
def seed_rows(rows, seeds, which):
    """:func:`seed_row` for each row ``i`` with ``which[i]``."""
    for i in range(rows.shape[0]):
        if which[i]:
            seed_row(rows[i], seeds[i])


# ----- between rows and numpy Generators (Python side) ----------------------------------------
_U64 = (1 << 64) - 1


def row_from_generator(rng: np.random.Generator, out: np.ndarray | None = None) -> np.ndarray:
    """The row of a PCG64 ``Generator``'s state (TypeError for other bit generators)."""
    st = rng.bit_generator.state
    if st["bit_generator"] != "PCG64":
        raise TypeError(f"expected a PCG64 generator, got {st['bit_generator']}")
    row = np.zeros(WORDS, np.uint64) if out is None else out
    s, inc = st["state"]["state"], st["state"]["inc"]
    row[STATE_HI], row[STATE_LO] = s >> 64, s & _U64
    row[INC_HI], row[INC_LO] = inc >> 64, inc & _U64
    row[HAS_U32], row[UINTEGER] = st["has_uint32"], st["uinteger"]
    return row


def load_generator(rng: np.random.Generator, row: np.ndarray) -> None:
    """Put ``row``'s state into the PCG64 ``Generator`` ``rng``."""
    r = [int(x) for x in row]
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {
            "state": (r[STATE_HI] << 64) | r[STATE_LO],
            "inc": (r[INC_HI] << 64) | r[INC_LO],
        },
        "has_uint32": r[HAS_U32],
        "uinteger": r[UINTEGER],
    }


def generator_from_row(row: np.ndarray) -> np.random.Generator:
    """A new numpy ``Generator`` in ``row``'s state."""
    rng = np.random.Generator(np.random.PCG64(0))
    load_generator(rng, row)
    return rng


@njit
def _check_draws(row, plan, out, scratch, perm):
    for i in range(plan.shape[0]):
        kind, arg = plan[i, 0], plan[i, 1]
        if kind == 0:
            out[i] = standard_normal(row)
        elif kind == 1:
            out[i] = integers(row, arg)
        elif kind == 2:
            permutation(row, perm, arg)
            h = 0
            for j in range(arg):
                h = (h * 41 + perm[j]) % 1000003
            out[i] = h
        elif kind == 3:
            out[i] = next_double(row)
        else:
            k = max(1, arg // 3)
            choice_without_replacement(row, arg, k, perm, scratch)
            h = 0
            for j in range(k):
                h = (h * 41 + perm[j]) % 1000003
            out[i] = h


_CHECK_BOUNDS = (1, 2, 3, 5, 7, 40, 2**31, 3 * 2**30 + 7, 2**32, 3 * 2**61, 2**63 - 1)


def _reference_draw(rng: np.random.Generator, kind: int, arg: int) -> float:
    if kind == 0:
        return rng.standard_normal()
    if kind == 1:
        return float(rng.integers(arg))
    if kind == 3:
        return rng.random()
    if kind == 2:
        xs = rng.permutation(arg).tolist()
    else:
        xs = rng.choice(arg, size=max(1, arg // 3), replace=False).tolist()
    h = 0
    for v in xs:
        h = (h * 41 + v) % 1000003
    return float(h)


def first_difference(
    seeds: tuple[int, ...] = (0, 12345, 2**40 + 3),
    count: int = 2000,
    reference: Callable[[int], Any] = np.random.default_rng,
) -> str:
    """ "" if every function here draws as the installed numpy, else the first difference.
    ``reference(seed)``: the generator compared against (numpy's, or a stand-in with its
    ``standard_normal``, ``integers``, ``random``, ``permutation``, ``choice`` and
    ``bit_generator``)."""
    kinds = np.arange(count) % 5
    args = np.where(kinds == 1, np.resize(_CHECK_BOUNDS, count), 1 + np.arange(count) % 37)
    plan = np.stack([kinds, args], axis=1).astype(np.int64)
    for seed in seeds:
        row = np.zeros(WORDS, np.uint64)
        seed_row(row, np.uint64(seed))
        ref = reference(seed)
        if not np.array_equal(row, row_from_generator(ref)):
            return f"numpy {np.__version__}: default_rng({seed}) starts elsewhere"
        out = np.zeros(count)
        _check_draws(row, plan, out, np.zeros(256, np.int64), np.zeros(64, np.int64))
        for i, (kind, arg) in enumerate(plan.tolist()):
            want = _reference_draw(ref, kind, arg)
            if out[i] != want:
                return (
                    f"numpy {np.__version__}: draw {i} (kind {kind}, argument {arg}) of seed "
                    f"{seed} is {want!r} in numpy and {float(out[i])!r} here"
                )
        if not np.array_equal(row, row_from_generator(ref)):
            return f"numpy {np.__version__}: the generator of seed {seed} ends elsewhere"
    return ""


@functools.cache
def numpy_mismatch() -> str:
    """:func:`first_difference` once per process (a few ms after the kernels load)."""
    return first_difference(count=600)
