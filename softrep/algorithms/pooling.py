"""max_pool2d's window winner: the per-output code that both backends run.

A window's positions are (ih0 + kh dh, iw0 + kw dw) in row-major (kh, kw)
order, ih0 = oh sh - ph and iw0 = ow sw - pw (docs/order.md, "Pooling").
The winner is the element with the largest `order_key` (amax's total order:
-inf < ... < -0 < +0 < ... < +inf < NaN); a later position wins only with a
strictly larger key, so the first of equal elements wins, and positions
outside the plane (padding) are never candidates.  Only integer keys are
compared: no floating-point operation is involved.  The window's value
(`winner_value`) is the winner itself, copied, a NaN made canonical.
"""

import numpy as np

from ..primitives.jit import inline_into_callers
from ..primitives.rounding import canonical, jitable
from .reduction import order_key


# Below every key: a float's key is at least -(2^63 - 2^52) - 1 (order_key).
_BELOW_ALL = np.int64(-(2**63))


@jitable
def window_argmax(x, base, H, W, ih0, iw0, KH, KW, dh, dw):
    """ih * W + iw of the winner of the window starting at (ih0, iw0) of the
    H x W plane whose element (ih, iw) is x[base + ih * W + iw] (x flat, base
    unsigned), or -1 if no position of the window lies inside the plane
    (torch's output sizes rule that out).  Flat storage: a plane view per
    call, or a 2-D index, costs more than the window's own comparisons.
    Inlined: so does a call per window."""
    inline_into_callers()
    best = np.int64(-1)
    best_key = _BELOW_ALL
    if ih0 >= 0 and iw0 >= 0 and ih0 + (KH - 1) * dh < H and iw0 + (KW - 1) * dw < W:
        # the whole window inside the plane (no padding reached): the same
        # candidates in the same order, without a bounds test per position
        for kh in range(KH):
            row = (ih0 + kh * dh) * W + iw0
            for kw in range(KW):
                at = row + kw * dw
                key = order_key(x[base + np.uint64(at)], True)
                if key > best_key:
                    best = np.int64(at)
                    best_key = key
        return best
    for kh in range(KH):
        ih = ih0 + kh * dh
        if ih >= 0 and ih < H:
            for kw in range(KW):
                iw = iw0 + kw * dw
                if iw >= 0 and iw < W:
                    # unsigned offsets: both indices are checked nonnegative,
                    # and a signed index gets negative-wraparound code on
                    # every read
                    key = order_key(x[base + np.uint64(ih * W + iw)], True)
                    if key > best_key:
                        best = np.int64(ih * W + iw)
                        best_key = key
    return best


@jitable
def winner_value(x, base, index):
    """The element of in-plane index `index` of the plane at x[base:] (as in
    `window_argmax`), copied (any NaN canonical): the value of the window
    whose winner it is."""
    inline_into_callers()
    return canonical(x[base + np.uint64(index)])
