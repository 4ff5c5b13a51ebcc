"""CUDA launcher of the Philox word draw: a grid-stride loop over the elements."""

import numpy as np
from numba import cuda

from ..primitives.jit import SIMULATOR
from ..primitives.philox import element_words
from .launch import grid


@cuda.jit(cache=not SIMULATOR)
def _words_kernel(out, key_lo, key_hi, off_lo, off_hi):
    key = np.uint64(key_lo) | (np.uint64(key_hi) << np.uint64(32))
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << np.uint64(32))
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size // 4, step):
        w0, w1, w2, w3 = element_words(key, offset, np.uint64(i))
        out[4 * i] = np.int64(w0)
        out[4 * i + 1] = np.int64(w1)
        out[4 * i + 2] = np.int64(w2)
        out[4 * i + 3] = np.int64(w3)


def words(stream, out, key_lo, key_hi, off_lo, off_hi):
    n = out.size // 4
    if n == 0:
        return
    blocks, threads = grid(n)
    _words_kernel[blocks, threads, stream](out, key_lo, key_hi, off_lo, off_hi)


def _register_audit():
    from numba.core import types

    from . import audit

    audit.register("philox.words", lambda: (
        _words_kernel.py_func, (types.Array(types.int64, 1, "C"),) + (types.int64,) * 4))


_register_audit()
