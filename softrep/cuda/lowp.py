"""CUDA launchers of the low-precision kernels: grid-stride loops over outputs.

Same per-element algorithm and random words as softrep/cpu/lowp.py.
"""

import numpy as np
from numba import cuda

from ..primitives.jit import SIMULATOR
from ..primitives.formats import FINITE, OP_FMA, STOCHASTIC, U0, emulated_op, from_parts, round_value
from ..primitives.philox import element_word0
from ..primitives.rounding import canonical
from .launch import grid

_U32 = np.uint64(32)


@cuda.jit(cache=not SIMULATOR)
def _round_to_kernel(out, x, spec, key_lo, key_hi, off_lo, off_hi):
    key = np.uint64(key_lo) | (np.uint64(key_hi) << _U32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << _U32)
    stochastic = spec[7] == STOCHASTIC
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        word = element_word0(key, offset, np.uint64(i)) if stochastic else U0
        out[i] = canonical(round_value(x[i], spec, word))


@cuda.jit(cache=not SIMULATOR)
def _elementwise_kernel(out, x, y, z, op, spec, key_lo, key_hi, off_lo, off_hi):
    key = np.uint64(key_lo) | (np.uint64(key_hi) << _U32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << _U32)
    stochastic = spec[7] == STOCHASTIC
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        word = element_word0(key, offset, np.uint64(i)) if stochastic else U0
        out[i] = canonical(emulated_op(op, x[i], y[i], z[i], spec, word))


@cuda.jit(cache=not SIMULATOR)
def _mm_kernel(out, a, b, spec, key_lo, key_hi, off_lo, off_hi):
    key = np.uint64(key_lo) | (np.uint64(key_hi) << _U32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << _U32)
    stochastic = spec[7] == STOCHASTIC
    rows = out.shape[0]
    cols = out.shape[1]
    depth = a.shape[1]
    start, step = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, rows * cols, step):
        i = o // cols
        j = o - i * cols
        acc = from_parts(out[i, j], False, FINITE, U0, 0)
        for k in range(depth):
            word = element_word0(key, offset, np.uint64(o * depth + k)) if stochastic else U0
            acc = emulated_op(OP_FMA, a[i, k], b[k, j], acc, spec, word)
        out[i, j] = canonical(acc)


def round_to(stream, out, x, spec, *rng):
    if out.size:
        blocks, threads = grid(out.size)
        _round_to_kernel[blocks, threads, stream](out, x, spec, *rng)


def elementwise(stream, out, x, y, z, op, spec, *rng):
    if out.size:
        blocks, threads = grid(out.size)
        _elementwise_kernel[blocks, threads, stream](out, x, y, z, op, spec, *rng)


def mm(stream, out, a, b, spec, *rng):
    if out.size:
        blocks, threads = grid(out.size)
        _mm_kernel[blocks, threads, stream](out, a, b, spec, *rng)


def _register_audit():
    from numba.core import types

    from . import audit

    spec = types.UniTuple(types.int64, 9)
    rng = (types.int64,) * 4
    for dtype in (types.float32, types.float64):
        v = types.Array(dtype, 1, "C")
        m = types.Array(dtype, 2, "C")
        audit.register(f"lowp.round_to.{dtype}", lambda v=v: (_round_to_kernel.py_func, (v, v, spec) + rng))
        audit.register(f"lowp.elementwise.{dtype}", lambda v=v: (
            _elementwise_kernel.py_func, (v, v, v, v, types.int64, spec) + rng))
        audit.register(f"lowp.mm.{dtype}", lambda m=m: (_mm_kernel.py_func, (m, m, m, spec) + rng))


_register_audit()
