"""CUDA kernels of softmax's and log_softmax's fused rows (softrep.algorithms.softmax).

Same contract as softrep/cpu/softmax.py: arrays (rows, n), the softmax dim
last, `partials` (rows, ceil(n / BLOCK)) scratch.  One thread per row, which
runs the algorithm's row function: each row is computed alone, so the grid
changes no bit.
"""

import functools

from numba import cuda, types

from ..algorithms.softmax import log_softmax_grad_row, log_softmax_row, softmax_grad_row, softmax_row
from ..primitives.jit import SIMULATOR

THREADS = 32 if SIMULATOR else 128


@functools.lru_cache(maxsize=None)
def _forward_kernel():
    def kernel(out, partials, x):
        r = cuda.grid(1)
        if r < x.shape[0]:
            softmax_row(out[r], x[r], partials[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _log_forward_kernel():
    def kernel(out, partials, x):
        r = cuda.grid(1)
        if r < x.shape[0]:
            log_softmax_row(out[r], x[r], partials[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _backward_kernel():
    def kernel(dx, partials, g, out):
        r = cuda.grid(1)
        if r < g.shape[0]:
            softmax_grad_row(dx[r], g[r], out[r], partials[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _log_backward_kernel():
    def kernel(dx, partials, g, out):
        r = cuda.grid(1)
        if r < g.shape[0]:
            log_softmax_grad_row(dx[r], g[r], out[r], partials[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def _blocks(n):
    return (n + THREADS - 1) // THREADS


def forward(stream, out, partials, x):
    """Same contract as softrep.cpu.softmax.forward."""
    if x.shape[0]:
        _forward_kernel()[0][_blocks(x.shape[0]), THREADS, stream](out, partials, x)


def log_forward(stream, out, partials, x):
    """Same contract as softrep.cpu.softmax.log_forward."""
    if x.shape[0]:
        _log_forward_kernel()[0][_blocks(x.shape[0]), THREADS, stream](out, partials, x)


def backward(stream, dx, partials, g, out):
    """Same contract as softrep.cpu.softmax.backward."""
    if g.shape[0]:
        _backward_kernel()[0][_blocks(g.shape[0]), THREADS, stream](dx, partials, g, out)


def log_backward(stream, dx, partials, g, out):
    """Same contract as softrep.cpu.softmax.log_backward."""
    if g.shape[0]:
        _log_backward_kernel()[0][_blocks(g.shape[0]), THREADS, stream](dx, partials, g, out)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        a2 = types.Array(getattr(types, dtype_name), 2, "C")
        audit.register(f"softmax.forward.{dtype_name}", lambda a=(a2,) * 3: (_forward_kernel()[1], a))
        audit.register(f"softmax.log_forward.{dtype_name}", lambda a=(a2,) * 3: (_log_forward_kernel()[1], a))
        audit.register(f"softmax.backward.{dtype_name}", lambda a=(a2,) * 4: (_backward_kernel()[1], a))
        audit.register(f"softmax.log_backward.{dtype_name}", lambda a=(a2,) * 4: (_log_backward_kernel()[1], a))


_register_audit()
