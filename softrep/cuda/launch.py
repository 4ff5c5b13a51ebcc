"""CUDA launchers for elementwise kernels: a grid-stride loop over the outputs."""

import functools

from numba import cuda

from ..primitives.jit import SIMULATOR
from ..primitives.rounding import canonical

THREADS = 256
# The simulator runs every thread in Python: few threads keep it quick, and
# the grid-stride loop makes the result independent of the launch shape.
_SIM_BLOCKS, _SIM_THREADS = 1, 8


def grid(n):
    if SIMULATOR:
        return _SIM_BLOCKS, _SIM_THREADS
    return max(1, min((n + THREADS - 1) // THREADS, 65535)), THREADS


@functools.lru_cache(maxsize=None)
def elementwise(f, nin):
    """Launcher `run(stream, out, *inputs)` over 1-D arrays: out[i] = f(*inputs[i])."""
    if nin == 1:

        @cuda.jit(cache=not SIMULATOR)
        def kernel(out, x):
            start, step = cuda.grid(1), cuda.gridsize(1)
            for i in range(start, out.size, step):
                out[i] = canonical(f(x[i]))

    elif nin == 2:

        @cuda.jit(cache=not SIMULATOR)
        def kernel(out, x, y):
            start, step = cuda.grid(1), cuda.gridsize(1)
            for i in range(start, out.size, step):
                out[i] = canonical(f(x[i], y[i]))

    elif nin == 3:

        @cuda.jit(cache=not SIMULATOR)
        def kernel(out, x, y, z):
            start, step = cuda.grid(1), cuda.gridsize(1)
            for i in range(start, out.size, step):
                out[i] = canonical(f(x[i], y[i], z[i]))

    else:
        raise ValueError(f"elementwise kernels take 1 to 3 inputs, got {nin}")

    def run(stream, out, *inputs):
        if out.size == 0:
            return
        blocks, threads = grid(out.size)
        kernel[blocks, threads, stream](out, *inputs)

    run.kernel = kernel
    return run
