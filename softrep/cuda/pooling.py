"""CUDA kernel of max_pool2d's windows (softrep.algorithms.pooling).

Same contract as softrep/cpu/pooling.py.  One thread per output, which runs
the algorithm's `window_argmax` and `winner_value` on its window alone: the
grid changes no result.
"""

import functools

from numba import cuda, types

from ..algorithms.pooling import window_argmax, winner_value
from ..primitives.jit import SIMULATOR

THREADS = 32 if SIMULATOR else 128


@functools.lru_cache(maxsize=None)
def _max_windows_kernel():
    def kernel(out, idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
        i = cuda.grid(1)
        P, OH, OW = idx.shape
        if i < P * OH * OW:
            p, rest = i // (OH * OW), i % (OH * OW)
            oh, ow = rest // OW, rest % OW
            best = window_argmax(x[p], oh * sh - ph, ow * sw - pw, KH, KW, dh, dw)
            idx[p, oh, ow] = best
            out[p, oh, ow] = winner_value(x[p], best)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def max_windows(stream, out, idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
    """Same contract as softrep.cpu.pooling.max_windows."""
    n = idx.size
    if n:
        _max_windows_kernel()[0][(n + THREADS - 1) // THREADS, THREADS, stream](
            out, idx, x, KH, KW, sh, sw, ph, pw, dh, dw)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        dtype = getattr(types, dtype_name)
        signature = (types.Array(dtype, 3, "C"), types.Array(types.int64, 3, "C"), types.Array(dtype, 3, "C")) \
            + (types.int64,) * 8
        audit.register(f"pooling.max_windows.{dtype_name}", lambda s=signature: (_max_windows_kernel()[1], s))


_register_audit()
