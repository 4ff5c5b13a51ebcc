"""The CUDA elementwise kernels behind softrep/cuda/launch.py: a grid-stride
loop over the outputs, out[i] = canonical(f(*inputs[i])).

Each output element depends only on the input elements at the same index, so
the launch shape cannot change any bit.
"""

import functools

from numba import cuda

from ..primitives.jit import SIMULATOR
from ..primitives.rounding import canonical


@functools.lru_cache(maxsize=None)
def grid_stride(f, nin):
    """The `cuda.jit` kernel `kernel(out, *inputs)` of scalar kernel `f` with `nin` inputs."""
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
        raise ValueError(f"elementwise kernels take 1 to 3 inputs, got nin={nin}")
    return kernel
