"""CPU launchers of the low-precision kernels: parallel over output elements only.

The random word of output element i (stochastic rounding) is Philox of
(key, offset, i) -- or of (key, offset, i * K + k) for the k-th rounding of an
emulated dot product -- so the thread split changes no bit.
"""

import numpy as np
from numba import njit, prange

from ..primitives.formats import OP_FMA, STOCHASTIC, U0, emulated_op, from_parts, round_value, FINITE
from ..primitives.philox import element_word0
from ..primitives.rounding import canonical

_U32 = np.uint64(32)


@njit(parallel=True, cache=True)
def round_to(out, x, spec, key_lo, key_hi, off_lo, off_hi):
    key = np.uint64(key_lo) | (np.uint64(key_hi) << _U32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << _U32)
    stochastic = spec[7] == STOCHASTIC
    for i in prange(out.size):
        word = element_word0(key, offset, np.uint64(i)) if stochastic else U0
        out[i] = canonical(round_value(x[i], spec, word))


@njit(parallel=True, cache=True)
def elementwise(out, x, y, z, op, spec, key_lo, key_hi, off_lo, off_hi):
    key = np.uint64(key_lo) | (np.uint64(key_hi) << _U32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << _U32)
    stochastic = spec[7] == STOCHASTIC
    for i in prange(out.size):
        word = element_word0(key, offset, np.uint64(i)) if stochastic else U0
        out[i] = canonical(emulated_op(op, x[i], y[i], z[i], spec, word))


@njit(parallel=True, cache=True)
def mm(out, a, b, spec, key_lo, key_hi, off_lo, off_hi):
    """out[i, j]: acc = +0; for k in order: acc = round(a[i, k] * b[k, j] + acc)."""
    key = np.uint64(key_lo) | (np.uint64(key_hi) << _U32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << _U32)
    stochastic = spec[7] == STOCHASTIC
    rows, cols = out.shape
    depth = a.shape[1]
    for o in prange(rows * cols):
        i = o // cols
        j = o - i * cols
        acc = from_parts(out[i, j], False, FINITE, U0, 0)
        for k in range(depth):
            word = element_word0(key, offset, np.uint64(o * depth + k)) if stochastic else U0
            acc = emulated_op(OP_FMA, a[i, k], b[k, j], acc, spec, word)
        out[i, j] = canonical(acc)
