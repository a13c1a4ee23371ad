"""numpy ``Generator`` draws made inside numba kernels, draw for draw.

A kernel that needs random numbers from the caller's ``np.random.Generator`` (and must leave
it exactly where the Python code would) calls the generator's own C functions through the
addresses of its ``bit_generator.ctypes`` interface, and reproduces numpy's algorithms on the
raw words: the ziggurat normal of ``Generator.normal``/``standard_normal``, the Lemire bounded
integers of ``Generator.integers`` (default ``int64`` dtype) and the masked rejection of
``Generator.shuffle`` on a list. Any numpy bit generator works (PCG64, Philox, SFC64, ...):
the words come from it, and its own 32-bit buffering (``has_uint32``) stays inside it.

The caller holds ``bit_generator.lock`` around a kernel call (as numpy's methods do), keeps
the ``Generator`` alive, and passes :func:`addresses` of its bit generator.
tests/test_np_draws.py checks every function against numpy on many seeds; numpy promises a
method's stream only within a version, so :func:`numpy_mismatch` repeats a short check once
per process (``DDTactical`` falls back to its Python playouts, with a warning, if it fails).

numba's own ``Generator`` support does the same with a boxed generator, but unboxing one costs
~8.5 us per call and needs numba's runtime, which the kernels here run without.

numba's cache keys a compiled function on its own file only: after a change here, touch the
modules whose kernels call these (agents/dd_fast.py) so that their cached code is rebuilt.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

try:  # optional, like the kernels that use this
    import numba
    from llvmlite import ir
    from numba.core import types
    from numba.core.extending import intrinsic
    from numba.np.random._constants import (
        fi_double,
        ki_double,
        wi_double,
        ziggurat_nor_inv_r,
        ziggurat_nor_r,
    )

    _njit = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    numba = None

# the entries of an addresses() array
B_U64, B_U32, B_DOUBLE, B_STATE = range(4)


def addresses(bit_generator: np.random.BitGenerator) -> np.ndarray:
    """The addresses a kernel draws through: ``next_uint64``, ``next_uint32``,
    ``next_double`` and the state of ``bit_generator``, as a ``uint64`` array. The bit
    generator must stay alive while a kernel uses them: :func:`addresses_of` keeps it so."""
    c = bit_generator.ctypes
    fns = (c.next_uint64, c.next_uint32, c.next_double)
    out = [ctypes.cast(f, ctypes.c_void_p).value for f in fns]
    return np.array([*out, c.state_address], np.uint64)


_known: dict[int, tuple[np.random.BitGenerator, np.ndarray]] = {}


def addresses_of(bit_generator: np.random.BitGenerator) -> np.ndarray:
    """:func:`addresses`, remembered (~3 us to work out; a decision makes one kernel call).
    The entry holds the bit generator itself, so its id cannot be reused while remembered;
    a module-level table, so nothing of it is pickled with an agent (addresses are only
    valid in this process)."""
    hit = _known.get(id(bit_generator))
    if hit is not None and hit[0] is bit_generator:
        return hit[1]
    if len(_known) >= 64:  # the generators of a few vectorised envs; forget old ones
        _known.clear()
    bits = addresses(bit_generator)
    _known[id(bit_generator)] = (bit_generator, bits)
    return bits


if numba is not None:

    def _caller(ret):
        """An intrinsic calling the C function at address ``fn`` with the state address."""

        @intrinsic
        def call(typingctx, fn, state):
            def codegen(context, builder, sig, args):
                word = context.get_value_type(types.uintp)
                fnty = ir.FunctionType(context.get_value_type(ret), (word,))
                ptr = builder.inttoptr(args[0], fnty.as_pointer())
                return builder.call(ptr, (args[1],))

            return ret(types.uint64, types.uint64), codegen

        return call

    _call_u64 = _caller(types.uint64)
    _call_u32 = _caller(types.uint32)
    _call_double = _caller(types.float64)
    _KI, _WI, _FI = ki_double.copy(), wi_double.copy(), fi_double.copy()
    _NOR_R, _NOR_INV_R = float(ziggurat_nor_r), float(ziggurat_nor_inv_r)

    @_njit
    def next_uint64(bits):
        return _call_u64(bits[B_U64], bits[B_STATE])

    @_njit
    def next_uint32(bits):
        return _call_u32(bits[B_U32], bits[B_STATE])

    @_njit
    def next_double(bits):
        return _call_double(bits[B_DOUBLE], bits[B_STATE])

    @_njit
    def standard_normal(bits):
        """One draw of ``Generator.standard_normal`` (numpy's ziggurat)."""
        while True:
            r = next_uint64(bits)
            idx = np.int64(r & np.uint64(0xFF))
            r >>= np.uint64(8)
            sign = r & np.uint64(1)
            rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
            x = float(rabs) * _WI[idx]
            if sign:
                x = -x
            if rabs < _KI[idx]:
                return x  # ~99.3% of the draws
            if idx == 0:  # the tail
                while True:
                    xx = -_NOR_INV_R * np.log1p(-next_double(bits))
                    yy = -np.log1p(-next_double(bits))
                    if yy + yy > xx * xx:
                        if (rabs >> np.uint64(8)) & np.uint64(1):
                            return -(_NOR_R + xx)
                        return _NOR_R + xx
            elif (_FI[idx - 1] - _FI[idx]) * next_double(bits) + _FI[idx] < np.exp(-0.5 * x * x):
                return x

    @_njit
    def _lemire32(bits, rng):
        """Uniform on [0, rng] for rng < 2**32 - 1 (numpy's buffered_bounded_lemire_uint32;
        its buffer is the bit generator's own for 32-bit draws)."""
        excl = np.uint64(rng) + np.uint64(1)
        m = np.uint64(next_uint32(bits)) * excl
        left = m & np.uint64(0xFFFFFFFF)
        if left < excl:
            threshold = (np.uint64(0xFFFFFFFF) - np.uint64(rng)) % excl
            while left < threshold:
                m = np.uint64(next_uint32(bits)) * excl
                left = m & np.uint64(0xFFFFFFFF)
        return m >> np.uint64(32)

    @_njit
    def _lemire64(bits, rng):
        """Uniform on [0, rng] for 2**32 - 1 < rng < 2**64 - 1 (numpy's bounded_lemire_uint64;
        the high word of the 128-bit product, from 32-bit halves)."""
        excl = np.uint64(rng) + np.uint64(1)
        x = next_uint64(bits)
        left = x * excl  # the low word
        if left < excl:
            threshold = (np.uint64(0xFFFFFFFFFFFFFFFF) - np.uint64(rng)) % excl
            while left < threshold:
                x = next_uint64(bits)
                left = x * excl
        lo32 = np.uint64(0xFFFFFFFF)
        x0, x1 = x & lo32, x >> np.uint64(32)
        e0, e1 = excl & lo32, excl >> np.uint64(32)
        w0 = x0 * e0
        t = x1 * e0 + (w0 >> np.uint64(32))
        w1 = (t & lo32) + x0 * e1
        return x1 * e1 + (t >> np.uint64(32)) + (w1 >> np.uint64(32))

    @_njit
    def integers(bits, high):
        """One draw of ``Generator.integers(high)`` (int64, 1 <= high < 2**63): an int.
        ``high == 1`` draws nothing, as numpy."""
        rng = np.uint64(high - 1)
        if rng == 0:
            return 0
        if rng < np.uint64(0xFFFFFFFF):
            return np.int64(_lemire32(bits, rng))
        if rng == np.uint64(0xFFFFFFFF):
            return np.int64(next_uint32(bits))
        return np.int64(_lemire64(bits, rng))

    @_njit
    def interval(bits, top):
        """numpy's random_interval: uniform on [0, top] by masked rejection (what
        ``Generator.shuffle`` draws for a list, from its last position down)."""
        if top == 0:
            return 0
        mx = np.uint64(top)
        mask = mx
        for s in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(s)
        if mx <= np.uint64(0xFFFFFFFF):
            value = np.uint64(next_uint32(bits)) & mask
            while value > mx:
                value = np.uint64(next_uint32(bits)) & mask
        else:
            value = next_uint64(bits) & mask
            while value > mx:
                value = next_uint64(bits) & mask
        return np.int64(value)

    @_njit
    def shuffle(bits, a, k):
        """``Generator.shuffle`` of the list ``a[:k]``, in place."""
        for i in range(k - 1, 0, -1):
            j = interval(bits, i)
            a[i], a[j] = a[j], a[i]

    @_njit
    def _replay(bits, plan, out, perm):
        """The draws of ``plan`` rows (kind, argument) in order: 0 a normal, 1 ``integers(arg)``,
        2 a shuffle of ``arg`` items (``out``: the permutation as one number)."""
        for i in range(plan.shape[0]):
            kind, arg = plan[i, 0], plan[i, 1]
            if kind == 0:
                out[i] = standard_normal(bits)
            elif kind == 1:
                out[i] = integers(bits, arg)
            else:
                for j in range(arg):
                    perm[j] = j
                shuffle(bits, perm, arg)
                h = 0
                for j in range(arg):
                    h = (h * 41 + perm[j]) % 1000003
                out[i] = h


# bounds of the integers the kernels draw (a few items, a seed) and Lemire's rejection cases
_CHECK_BOUNDS = (1, 2, 3, 5, 7, 40, 2**31, 3 * 2**30 + 7, 2**32, 3 * 2**61, 2**63 - 1)


@functools.cache
def numpy_mismatch() -> str:
    """ "" if these draws are numpy's in this process, else what differs.

    numpy does not promise that a ``Generator`` method's algorithm stays the same across
    versions (only within one); the tests pin it for the installed numpy, and callers check
    this once per process before trusting kernels to stand in for numpy's own draws: 3,000
    mixed draws (normals, bounded integers, shuffles) from two seeded PCG64 generators, and
    the generators' final states. ~20 ms (the reference draws are numpy calls from Python) after
    the first call's kernel load."""
    return first_difference(np.random.Generator)


def first_difference(reference) -> str:
    """:func:`numpy_mismatch` against ``reference(bit_generator)``, a ``Generator`` or a
    stand-in with its ``standard_normal``, ``integers``, ``shuffle`` and ``bit_generator``."""
    if numba is None:
        return "numba is not installed"
    kinds = np.arange(3000) % 3
    args = np.where(kinds == 1, np.resize(_CHECK_BOUNDS, 3000), 1 + np.arange(3000) % 37)
    plan = np.stack([kinds, np.where(kinds == 0, 0, args)], axis=1).astype(np.int64)
    for seed in (0, 12345):
        mine, ref = np.random.Generator(np.random.PCG64(seed)), reference(np.random.PCG64(seed))
        out, perm = np.zeros(len(plan)), np.zeros(64, np.int64)
        with mine.bit_generator.lock:
            _replay(addresses(mine.bit_generator), plan, out, perm)
        for i, (kind, arg) in enumerate(plan.tolist()):
            if kind == 0:
                want, what = ref.standard_normal(), "standard_normal()"
            elif kind == 1:
                want, what = float(ref.integers(arg)), f"integers({arg})"
            else:
                x = list(range(arg))
                ref.shuffle(x)
                want, what = 0, f"shuffle of {arg} items"
                for v in x:
                    want = (want * 41 + v) % 1000003
            if out[i] != want:
                return (
                    f"numpy {np.__version__}: draw {i} of seed {seed}, {what}, is {want!r} "
                    f"in numpy and {float(out[i])!r} in agents.np_draws"
                )
        if mine.bit_generator.state != ref.bit_generator.state:
            return f"numpy {np.__version__}: the generator ends elsewhere (seed {seed})"
    return ""
