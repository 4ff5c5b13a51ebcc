"""CUDA launcher of the Philox word draw: a grid-stride loop over the elements."""

from numba import cuda

from ..algorithms.random import key_offset, store_element_words
from ..primitives.jit import SIMULATOR
from .launch import grid


@cuda.jit(cache=not SIMULATOR)
def _words_kernel(out, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size // 4, step):
        store_element_words(out, key, offset, i)


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
