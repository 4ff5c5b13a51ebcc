"""log2(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

x = 2^e m as in log: log2(x) = e + log(m)/ln2, formed as fma(log m, 1/ln2, e):
log(m) has relative error < 2^-51, 1/ln2 is rounded (2^-53), the fma rounds
once; |log(m)/ln2| <= 1/2, so for e != 0 there is no cancellation beyond a
factor 2: relative error < 2^-49.5.  Powers of two give e exactly (m = 1).
Accurate path: log_dd(x) * (1/ln2 as a double-double), relative error < 2^-67.
"""

import numpy as np

from ...primitives.rounding import fma_rn, jitable
from .core import (F64, INF32, INV_LN2, INV_LN2_L, NAN32, ZERO, dd_mul, dd_to_f32, log_dd, log_reduce,
                    logm_core, round_if_safe)

ZERO_F32 = np.float32(0.0)
NEG_INF32 = np.float32(-np.inf)

@jitable
def log2_f32(x):
    if x != x or x < ZERO_F32:
        return NAN32
    if x == ZERO_F32:
        return NEG_INF32
    if x == INF32:
        return INF32
    xd = F64(x)
    e, m = log_reduce(xd)
    r, ok = round_if_safe(fma_rn(logm_core(m), INV_LN2, F64(e)))
    if ok:
        return r
    lh, ll = log_dd(xd, ZERO)
    h, l = dd_mul(lh, ll, INV_LN2, INV_LN2_L)
    return dd_to_f32(h, l)
