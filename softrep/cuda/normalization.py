"""CUDA kernels of the normalisations' fused steps (softrep.algorithms.normalization).

Same contract as softrep/cpu/normalization.py: arrays (rows, positions).
`normalize`, `normalize_grad`: one per-row operand per channel of a sample,
one thread per element (r, k); each element is computed alone, so the grid
changes no bit.  `layer_norm`, `layer_norm_grad`: one thread per row, which
runs the row's documented sums in order (`layer_norm_row`,
`layer_norm_grad_row`), so again the grid changes no bit.
`normalize_affine`: one thread per element; `batch_norm_grad`: one thread per
row (`batch_norm_grad_row`), its scratch rows in device memory.
"""

import functools

from numba import cuda, types

from ..algorithms.normalization import (affine_element, batch_norm_grad_row, layer_norm_grad_row, layer_norm_row,
                                        normalize_element, scaled_normalize_grad_element)
from ..algorithms.reduction import BLOCK, STACK
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
    def kernel(out, gy, xhat, w, mg, c, s):
        i = cuda.grid(1)
        rows, positions = gy.shape[0], gy.shape[1]
        if i < rows * positions:
            r, k = i // positions, i % positions
            out[r, k] = scaled_normalize_grad_element(gy[r, k], w[r], xhat[r, k], mg[r], c[r], s[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _normalize_affine_kernel():
    def kernel(y, xhat, x, m, s, w, b):
        i = cuda.grid(1)
        rows, positions = x.shape[0], x.shape[1]
        if i < rows * positions:
            r, k = i // positions, i % positions
            v = normalize_element(x[r, k], m[r], s[r])
            xhat[r, k] = v
            y[r, k] = affine_element(v, w[r], b[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _batch_norm_grad_kernel():
    def kernel(gxhat, sums, gy, xhat, w, q, h, partials):
        r = cuda.grid(1)
        if r < gy.shape[0]:
            batch_norm_grad_row(gxhat[r], q[r], h[r], sums[r], gy[r], xhat[r], w[r], partials[r])

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _layer_norm_kernel(dtype_name):
    dtype = getattr(types, dtype_name)

    def kernel(y, m, s, x, w, b, n, eps, center):
        r = cuda.grid(1)
        if r < x.shape[0]:
            stack = cuda.local.array(STACK, dtype)
            m[r], s[r] = layer_norm_row(y[r], x[r], w, b, n, eps, center, stack)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


@functools.lru_cache(maxsize=None)
def _layer_norm_grad_kernel(dtype_name):
    dtype = getattr(types, dtype_name)

    def kernel(dx, gw, gy, x, w, m, s, n, center):
        r = cuda.grid(1)
        if r < x.shape[0]:
            stack = cuda.local.array(STACK, dtype)
            stack2 = cuda.local.array(STACK, dtype)
            layer_norm_grad_row(dx[r], gw[r], gy[r], x[r], w, m[r], s[r], n, center, stack, stack2)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def _blocks(n):
    return (n + THREADS - 1) // THREADS


def normalize(stream, out, x, m, s):
    """Same contract as softrep.cpu.normalization.normalize."""
    n = x.shape[0] * x.shape[1]
    if n:
        _normalize_kernel()[0][_blocks(n), THREADS, stream](out, x, m, s)


def normalize_grad(stream, out, gy, xhat, w, mg, c, s):
    """Same contract as softrep.cpu.normalization.normalize_grad."""
    n = gy.shape[0] * gy.shape[1]
    if n:
        _normalize_grad_kernel()[0][_blocks(n), THREADS, stream](out, gy, xhat, w, mg, c, s)


def normalize_affine(stream, y, xhat, x, m, s, w, b):
    """Same contract as softrep.cpu.normalization.normalize_affine."""
    n = x.shape[0] * x.shape[1]
    if n:
        _normalize_affine_kernel()[0][_blocks(n), THREADS, stream](y, xhat, x, m, s, w, b)


def batch_norm_grad(stream, sums, gy, xhat, w):
    """Same contract as softrep.cpu.normalization.batch_norm_grad; one thread
    per row, its scratch rows in device memory."""
    rows, n = gy.shape
    if rows:
        gxhat = cuda.device_array((rows, max(n, 1)), dtype=gy.dtype, stream=stream)
        q = cuda.device_array((rows, max(n, 1)), dtype=gy.dtype, stream=stream)
        h = cuda.device_array((rows, max(n, 1)), dtype=gy.dtype, stream=stream)
        partials = cuda.device_array((rows, max(1, (n + BLOCK - 1) // BLOCK)), dtype=gy.dtype, stream=stream)
        _batch_norm_grad_kernel()[0][_blocks(rows), THREADS, stream](gxhat, sums, gy, xhat, w, q, h, partials)


def layer_norm(stream, y, m, s, x, w, b, n, eps, center):
    """Same contract as softrep.cpu.normalization.layer_norm."""
    if x.shape[0]:
        dtype = x.dtype.type
        _layer_norm_kernel(x.dtype.name)[0][_blocks(x.shape[0]), THREADS, stream](
            y, m, s, x, w, b, dtype(n), dtype(eps), center)


def layer_norm_grad(stream, dx, gw, gy, x, w, m, s, n, center):
    """Same contract as softrep.cpu.normalization.layer_norm_grad."""
    if x.shape[0]:
        _layer_norm_grad_kernel(x.dtype.name)[0][_blocks(x.shape[0]), THREADS, stream](
            dx, gw, gy, x, w, m, s, x.dtype.type(n), center)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        dt = getattr(types, dtype_name)
        a2, a1 = types.Array(dt, 2, "C"), types.Array(dt, 1, "C")
        audit.register(f"normalization.normalize.{dtype_name}",
                       lambda a=(a2, a2, a1, a1): (_normalize_kernel()[1], a))
        audit.register(f"normalization.normalize_grad.{dtype_name}",
                       lambda a=(a2, a2, a2, a1, a1, a1, a1): (_normalize_grad_kernel()[1], a))
        audit.register(f"normalization.normalize_affine.{dtype_name}",
                       lambda a=(a2, a2, a2, a1, a1, a1, a1): (_normalize_affine_kernel()[1], a))
        audit.register(f"normalization.batch_norm_grad.{dtype_name}",
                       lambda a=(a2, a2, a2, a2, a1, a2, a2, a2): (_batch_norm_grad_kernel()[1], a))
        audit.register(f"normalization.layer_norm.{dtype_name}",
                       lambda a=(a2, a1, a1, a2, a1, a1, dt, dt, types.boolean), d=dtype_name:
                       (_layer_norm_kernel(d)[1], a))
        audit.register(f"normalization.layer_norm_grad.{dtype_name}",
                       lambda a=(a2, a2, a2, a2, a1, a1, a1, dt, types.boolean), d=dtype_name:
                       (_layer_norm_grad_kernel(d)[1], a))


_register_audit()
