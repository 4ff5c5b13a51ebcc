"""log10(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

x = 2^e m as in log: log10(x) = e log10(2) + log(m)/ln10.  e LOG10_2_H rounds
once (2^-53), log(m)/ln10 = fma(log m, 1/ln10, e LOG10_2_L) rounds once on top
of log m's 2^-51; |log(m)/ln10| <= 0.151 < e log10(2)/2 for e != 0, so the sum
cancels at most a factor 2: relative error < 2^-49.5.
Exact cases: log10(10^n) = n for n = 1..10 (10^n is a float32); the fast path
is within 2^-49 of n, far from a rounding boundary.
Accurate path: log_dd(x) * (1/ln10 as a double-double), relative error < 2^-67.
"""

import numpy as np

from ...primitives.rounding import add_rn, fma_rn, jitable, mul_rn
from .core import (F64, INF32, INV_LN10, INV_LN10_L, LOG10_2_H, LOG10_2_L, NAN32, ZERO, dd_mul, dd_to_f32,
                    log_dd, log_reduce, logm_core, round_if_safe)

ZERO_F32 = np.float32(0.0)
NEG_INF32 = np.float32(-np.inf)

@jitable
def log10_f32(x):
    if x != x or x < ZERO_F32:
        return NAN32
    if x == ZERO_F32:
        return NEG_INF32
    if x == INF32:
        return INF32
    xd = F64(x)
    e, m = log_reduce(xd)
    ed = F64(e)
    y = add_rn(mul_rn(ed, LOG10_2_H), fma_rn(logm_core(m), INV_LN10, mul_rn(ed, LOG10_2_L)))
    r, ok = round_if_safe(y)
    if ok:
        return r
    lh, ll = log_dd(xd, ZERO)
    h, l = dd_mul(lh, ll, INV_LN10, INV_LN10_L)
    return dd_to_f32(h, l)
