"""CUDA kernel of max_pool2d's windows (softrep.algorithms.pooling).

Same contract as softrep/cpu/pooling.py.  One thread per output, which runs
the algorithm's `window_argmax` and `winner_value` on its window alone: the
grid changes no result.
"""

import functools

import numpy as np
from numba import cuda, types

from ..algorithms.pooling import window_argmax, winner_value
from ..primitives.jit import SIMULATOR

THREADS = 32 if SIMULATOR else 128


@functools.lru_cache(maxsize=None)
def _max_windows_kernel():
    def kernel(out, idx, x, P, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw):
        # out, idx, x flat (the planes' C-contiguous storage)
        i = cuda.grid(1)
        if i < P * OH * OW:
            p, rest = i // (OH * OW), i % (OH * OW)
            oh, ow = rest // OW, rest % OW
            base = np.uint64(p) * np.uint64(H * W)
            best = window_argmax(x, base, H, W, oh * sh - ph, ow * sw - pw, KH, KW, dh, dw)
            idx[i] = best
            out[i] = winner_value(x, base, best)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def max_windows(stream, out, idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
    """Same contract as softrep.cpu.pooling.max_windows."""
    n = idx.size
    if n:
        P, H, W = x.shape
        OH, OW = idx.shape[1], idx.shape[2]
        _max_windows_kernel()[0][(n + THREADS - 1) // THREADS, THREADS, stream](
            out.reshape(n), idx.reshape(n), x.reshape(x.size), P, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        dtype = getattr(types, dtype_name)
        signature = (types.Array(dtype, 1, "C"), types.Array(types.int64, 1, "C"), types.Array(dtype, 1, "C")) \
            + (types.int64,) * 13
        audit.register(f"pooling.max_windows.{dtype_name}", lambda s=signature: (_max_windows_kernel()[1], s))


_register_audit()
