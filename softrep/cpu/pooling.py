"""CPU launcher of max_pool2d's windows (softrep.algorithms.pooling).

`x` is (P, H, W) planes, C-contiguous; `idx` (P, OH, OW) receives the
in-plane index of each window's winner and `out` (P, OH, OW) its value.  One
work item per plane; every output is found alone by the algorithm's
`window_argmax` and copied by `winner_value`, so neither the split nor the
thread count changes a result.
"""

from numba import njit, prange, types

from ..algorithms.pooling import window_argmax, winner_value
from .launch import kernel

_I = types.int64


def _c(t, ndim):
    return types.Array(t, ndim, "C")


@njit(cache=True, error_model="numpy")
def _plane(out, idx, plane, KH, KW, sh, sw, ph, pw, dh, dw):
    OH, OW = idx.shape
    for oh in range(OH):
        for ow in range(OW):
            best = window_argmax(plane, oh * sh - ph, ow * sw - pw, KH, KW, dh, dw)
            idx[oh, ow] = best
            out[oh, ow] = winner_value(plane, best)


@kernel("pooling.max_windows", *[(_c(t, 3), _c(_I, 3), _c(t, 3)) + (_I,) * 8
                                 for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True)
def max_windows(out, idx, x, KH, KW, sh, sw, ph, pw, dh, dw):
    """idx[p, oh, ow] = the in-plane index of the winner of window (oh, ow) of
    x[p]; out[p, oh, ow] = its value."""
    for p in prange(x.shape[0]):
        _plane(out[p], idx[p], x[p], KH, KW, sh, sw, ph, pw, dh, dw)
