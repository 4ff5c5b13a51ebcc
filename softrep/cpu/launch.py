"""CPU launchers for elementwise kernels: one parallel loop over the outputs.

Each output element depends only on the input elements at the same index, so
the thread count and the split of the loop cannot change any bit.
"""

import functools

import numpy as np
from numba import njit, prange

from ..rounding import bitcast, canonical

UNDECIDED_BITS = np.uint32(0x7FC00001)  # a quiet NaN, but not the canonical one


@functools.lru_cache(maxsize=None)
def elementwise(f, nin):
    """Launcher `run(out, *inputs)` over 1-D contiguous arrays: out[i] = f(*inputs[i])."""
    fast = getattr(f, "decided_fast", None)
    if nin == 1 and fast is not None:
        return _decided_first(f, fast)
    if nin == 1:

        @njit(parallel=True, cache=True)
        def run(out, x):
            for i in prange(out.size):
                out[i] = canonical(f(x[i]))

    elif nin == 2:

        @njit(parallel=True, cache=True)
        def run(out, x, y):
            for i in prange(out.size):
                out[i] = canonical(f(x[i], y[i]))

    elif nin == 3:

        @njit(parallel=True, cache=True)
        def run(out, x, y, z):
            for i in prange(out.size):
                out[i] = canonical(f(x[i], y[i], z[i]))

    else:
        raise ValueError(f"elementwise kernels take 1 to 3 inputs, got {nin}")
    return run


@functools.lru_cache(maxsize=None)
def _decided_first(f, fast):
    """Launcher for a kernel `f` whose float32 version has a companion
    `fast(x) -> (f(x), True)`, or `(anything, False)` where it cannot decide:
    the first loop runs only `fast`, which is branch-free and vectorises; the
    second computes `f` where `fast` did not decide (about 2^-20 of the inputs
    for the math functions).  So out[i] = f(x[i]) for every i, exactly as the
    one-loop launcher computes it (`f` returns `fast`'s result whenever `fast`
    decides: softrep/math/__init__.py).  Other dtypes take the one-loop path."""

    @njit(parallel=True, cache=True)
    def two_loops(out, x):
        # An undecided element is marked in `out` itself by a NaN payload that no
        # result has (every NaN result is canonical): no flag array, whose fresh
        # pages would cost as much as the second loop.
        for i in prange(out.size):
            r, ok = fast(x[i])
            out[i] = canonical(r) if ok else bitcast(UNDECIDED_BITS)
        for i in prange(out.size):
            if bitcast(out[i]) == UNDECIDED_BITS:
                out[i] = canonical(f(x[i]))

    @njit(parallel=True, cache=True)
    def one_loop(out, x):
        for i in prange(out.size):
            out[i] = canonical(f(x[i]))

    def run(out, x):
        (two_loops if x.dtype == np.float32 else one_loop)(out, x)

    return run
