"""CUDA launchers for elementwise kernels (a grid-stride loop over the
outputs), and the registry of every CUDA kernel softrep launches.

This module imports without numba-cuda: the ops ask for their launchers when
they are defined, and the kernel behind a launcher is made
(softrep/cuda/elementwise_kernels.py, which needs numba-cuda) at its first
launch.

The registry (`KERNELS`) is what the kernel audit (`python -m softrep
audit-kernels`, softrep/tools/kernel_audit.py) compiles and checks, without a
GPU.  A kernel is registered where it is built: `elementwise` registers the
kernels it makes, for every dtype the scalar kernel has; a hand-written kernel
carries the `kernel(name, *signatures)` decorator, or its module calls
`register(name, build)` (also reachable as `softrep.cuda.audit.register`).
"""

import functools

from ..primitives.jit import SIMULATOR, KernelRegistry
from ..cpu.launch import elementwise_signatures

THREADS = 256
# The simulator runs every thread in Python: few threads keep it quick, and
# the grid-stride loop makes the result independent of the launch shape.
_SIM_BLOCKS, _SIM_THREADS = 1, 8


def grid(n):
    if SIMULATOR:
        return _SIM_BLOCKS, _SIM_THREADS
    return max(1, min((n + THREADS - 1) // THREADS, 65535)), THREADS


# --------------------------------------------------------------------------- registry

KERNELS = KernelRegistry("CUDA")
add = KERNELS.add
register = KERNELS.register


def python_function(dispatcher):
    """The Python source function of a `cuda.jit` kernel (a simulator kernel too)."""
    return getattr(dispatcher, "py_func", None) or dispatcher.fn


def kernel(name, *signatures):
    """Decorator: register the `cuda.jit` kernel below it under `name`, launched
    with `signatures` (each a tuple of Numba argument types)."""
    signatures = tuple(tuple(s) for s in signatures)

    def register_dispatcher(dispatcher):
        add(name, lambda: (python_function(dispatcher), signatures))
        return dispatcher

    return register_dispatcher


# --------------------------------------------------------------------------- elementwise


@functools.lru_cache(maxsize=None)
def elementwise(f, nin):
    """Launcher `run(stream, out, *inputs)` over 1-D arrays: out[i] = f(*inputs[i]).

    Registers the kernel as `elementwise.<f's name>`; `run.kernels` holds the
    registered kernels the launcher runs.
    """
    if nin not in (1, 2, 3):
        raise ValueError(f"elementwise kernels take 1 to 3 inputs, got nin={nin}")

    def compiled():
        from .elementwise_kernels import grid_stride  # imports numba-cuda

        return grid_stride(f, nin)

    def run(stream, out, *inputs):
        if out.size == 0:
            return
        blocks, threads = grid(out.size)
        compiled()[blocks, threads, stream](out, *inputs)

    signatures = elementwise_signatures(f, nin)
    run.kernels = (add(f"elementwise.{f.__name__}", lambda: (python_function(compiled()), signatures)),)
    return run
