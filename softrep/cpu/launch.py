"""CPU launchers for elementwise kernels: one parallel loop over the outputs.

Each output element depends only on the input elements at the same index, so
the thread count and the split of the loop cannot change any bit.
"""

import functools

from numba import njit, prange

from ..rounding import canonical


@functools.lru_cache(maxsize=None)
def elementwise(f, nin):
    """Launcher `run(out, *inputs)` over 1-D contiguous arrays: out[i] = f(*inputs[i])."""
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
