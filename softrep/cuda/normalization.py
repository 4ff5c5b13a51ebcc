"""CUDA kernels of batch_norm's fused per-channel steps (softrep.algorithms.normalization).

Same contract as softrep/cpu/normalization.py: arrays (rows, positions), one
per-row operand per channel of a sample.  One thread per element (r, k); each
element is computed alone, so the grid changes no bit.
"""

import functools

from numba import cuda, types

from ..algorithms.normalization import normalize_element, normalize_grad_element
from ..primitives.jit import SIMULATOR

THREADS = 32 if SIMULATOR else 256


@functools.lru_cache(maxsize=None)
def _normalize_kernel():
    def kernel(out, x, m, s):
        i = cuda.grid(1)
        rows, positions = x.shape[0], x.shape[1]
        if i < rows * positions:
            r, k = i // positions, i % positions
            out[r, k] = normalize_element(x[r, k], m[r], s[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _normalize_grad_kernel():
    def kernel(out, g, xhat, mg, c, s):
        i = cuda.grid(1)
        rows, positions = g.shape[0], g.shape[1]
        if i < rows * positions:
            r, k = i // positions, i % positions
            out[r, k] = normalize_grad_element(g[r, k], xhat[r, k], mg[r], c[r], s[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def _blocks(n):
    return (n + THREADS - 1) // THREADS


def normalize(stream, out, x, m, s):
    """Same contract as softrep.cpu.normalization.normalize."""
    n = x.shape[0] * x.shape[1]
    if n:
        _normalize_kernel()[0][_blocks(n), THREADS, stream](out, x, m, s)


def normalize_grad(stream, out, g, xhat, mg, c, s):
    """Same contract as softrep.cpu.normalization.normalize_grad."""
    n = g.shape[0] * g.shape[1]
    if n:
        _normalize_grad_kernel()[0][_blocks(n), THREADS, stream](out, g, xhat, mg, c, s)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        dt = getattr(types, dtype_name)
        a2, a1 = types.Array(dt, 2, "C"), types.Array(dt, 1, "C")
        audit.register(f"normalization.normalize.{dtype_name}",
                       lambda a=(a2, a2, a1, a1): (_normalize_kernel()[1], a))
        audit.register(f"normalization.normalize_grad.{dtype_name}",
                       lambda a=(a2, a2, a2, a1, a1, a1): (_normalize_grad_kernel()[1], a))


_register_audit()
