"""CPU launcher of max_pool2d's windows (softrep.algorithms.pooling).

`x` is (P, H, W) planes, C-contiguous; `idx` (P, OH, OW) receives the
in-plane index of each window's winner and `out` (P, OH, OW) its value.  One
work item per run of planes of about WINDOWS_PER_ITEM windows; every output
is found alone by the algorithm's `window_argmax` and copied by
`winner_value`, so neither the split nor the thread count changes a result.
"""

import numpy as np
from numba import njit, prange, types
from numba.extending import register_jitable

from ..algorithms.pooling import window_argmax, winner_value
from ..primitives.jit import inline_into_callers
from .launch import kernel

_I = types.int64

# Small planes (LeNet's 4 x 4 give 4 windows) run many to a work item: a
# work item's call costs about as much as a few windows.
WINDOWS_PER_ITEM = 256


def _c(t, ndim):
    return types.Array(t, ndim, "C")


@register_jitable
def _plane_run(out, idx, x, p0, p1, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw):
    # planes p0 .. p1-1, every array flat; unsigned offsets (see window_argmax)
    inline_into_callers()
    at = np.uint64(p0 * OH * OW)
    for p in range(p0, p1):
        base = np.uint64(p) * np.uint64(H * W)
        for oh in range(OH):
            for ow in range(OW):
                best = window_argmax(x, base, H, W, oh * sh - ph, ow * sw - pw, KH, KW, dh, dw)
                idx[at] = best
                out[at] = winner_value(x, base, best)
                at += np.uint64(1)


@kernel("pooling.max_planes", *[(_c(t, 1), _c(_I, 1), _c(t, 1)) + (_I,) * 14 for t in (types.float32, types.float64)])
@njit(cache=True, error_model="numpy")
def _planes(out, idx, x, p0, p1, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw):
    # The usual windows, 2 x 2 and 3 x 3 without dilation, with their sizes
    # as constants: LLVM then unrolls each window's positions, twice as fast
    # as the loops over KH and KW (docs/benchmarks.md).  The same positions
    # in the same order either way.
    if dh == 1 and dw == 1 and KH == 2 and KW == 2:
        _plane_run(out, idx, x, p0, p1, H, W, OH, OW, 2, 2, sh, sw, ph, pw, 1, 1)
    elif dh == 1 and dw == 1 and KH == 3 and KW == 3:
        _plane_run(out, idx, x, p0, p1, H, W, OH, OW, 3, 3, sh, sw, ph, pw, 1, 1)
    else:
        _plane_run(out, idx, x, p0, p1, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)


@kernel("pooling.max_windows", *[(_c(t, 3), _c(_I, 3), _c(t, 3)) + (_I,) * 8
                                 for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True, error_model="numpy")
def max_windows(out, idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
    """idx[p, oh, ow] = the in-plane index of the winner of window (oh, ow) of
    x[p]; out[p, oh, ow] = its value."""
    P, H, W = x.shape
    OH, OW = idx.shape[1], idx.shape[2]
    per_item = max(1, WINDOWS_PER_ITEM // max(1, OH * OW))
    xf, of, jf = x.reshape(-1), out.reshape(-1), idx.reshape(-1)
    for item in prange((P + per_item - 1) // per_item):
        p0 = item * per_item
        _planes(of, jf, xf, p0, min(P, p0 + per_item), H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)
