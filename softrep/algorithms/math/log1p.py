"""log1p(x) = log(1 + x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Specials: NaN and x < -1 give NaN, log1p(-1) = -inf, log1p(+inf) = +inf,
log1p(+-0) = +-0 (through the series).

Fast path.  For sqrt(1/2) - 1 <= x <= sqrt(2) - 1, log1p(x) = 2 atanh(s) with
s = x/(2 + x), |s| <= 0.1716: 2 + x and the division round once each, s has
relative error < 2^-52 and `atanh_series` adds 2^-52: < 2^-50.5, with no
cancellation at any x.  Outside that range |log1p(x)| >= 0.34: 1 + x = u + c
exactly (two_sum), log(1 + x) = log(u) + log(1 + c/u) = log_core(u) + c/u to
within (c/u)^2 < 2^-106: relative error < 2^-50 + 2^-52.
Accurate path: log_dd(u, c) (one Newton step; relative error < 2^-67 since
|log1p(x)| >= 2^-25 whenever the fast path cannot decide: below, log1p(x) =
x (1 - x/2 + ...) is within 2^-26 |x| of the float32 x, while rounding
boundaries are at least 2^-25 |x| away from it).
"""

import numpy as np

from ...primitives.rounding import add_rn, div_rn, jitable
from .core import (F64, INF32, NAN32, ONE, TWO, atanh_series, dd_to_f32, log_core, log_dd, round_if_safe,
                    two_sum)

MINUS_ONE32 = np.float32(-1.0)
NEG_INF32 = np.float32(-np.inf)
SERIES_LO = F64(-0.2928932188134524)  # sqrt(1/2) - 1, rounded toward zero
SERIES_HI = F64(0.41421356237309503)  # sqrt(2) - 1, rounded toward zero

@jitable
def log1p_f32(x):
    if x != x or x < MINUS_ONE32:
        return NAN32
    if x == MINUS_ONE32:
        return NEG_INF32
    if x == INF32:
        return INF32
    xd = F64(x)
    if SERIES_LO <= xd and xd <= SERIES_HI:
        y = atanh_series(div_rn(xd, add_rn(TWO, xd)))
    else:
        u, c = two_sum(ONE, xd)
        y = add_rn(log_core(u), div_rn(c, u))
    r, ok = round_if_safe(y)
    if ok:
        return r
    u, c = two_sum(ONE, xd)
    h, l = log_dd(u, c)
    return dd_to_f32(h, l)
