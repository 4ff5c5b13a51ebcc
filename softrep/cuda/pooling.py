"""CUDA kernel of max_pool2d's window winners (softrep.algorithms.pooling).

Same contract as softrep/cpu/pooling.py.  One thread per output, which runs
the algorithm's `window_argmax` on its window alone: the grid changes no
result.
"""

import functools

from numba import cuda, types

from ..algorithms.pooling import window_argmax
from ..primitives.jit import SIMULATOR

THREADS = 32 if SIMULATOR else 128


@functools.lru_cache(maxsize=None)
def _max_indices_kernel():
    def kernel(idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
        i = cuda.grid(1)
        P, OH, OW = idx.shape
        if i < P * OH * OW:
            p, rest = i // (OH * OW), i % (OH * OW)
            oh, ow = rest // OW, rest % OW
            idx[p, oh, ow] = window_argmax(x[p], oh * sh - ph, ow * sw - pw, KH, KW, dh, dw)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def max_indices(stream, idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
    """Same contract as softrep.cpu.pooling.max_indices."""
    n = idx.size
    if n:
        _max_indices_kernel()[0][(n + THREADS - 1) // THREADS, THREADS, stream](
            idx, x, KH, KW, sh, sw, ph, pw, dh, dw)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        signature = (types.Array(types.int64, 3, "C"), types.Array(getattr(types, dtype_name), 3, "C")) \
            + (types.int64,) * 8
        audit.register(f"pooling.max_indices.{dtype_name}", lambda s=signature: (_max_indices_kernel()[1], s))


_register_audit()
