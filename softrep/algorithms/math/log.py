"""log(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Specials: log(NaN or x < 0) = NaN, log(+-0) = -inf, log(+inf) = +inf,
log(1) = +0 (s = 0 in the series, and e = 0).
Fast path: `log_core` (x = 2^e m, sqrt(1/2) <= m < sqrt(2), log m = 2 atanh((m-1)/(m+1)),
relative error < 2^-50).  Subnormal float32 inputs are normal doubles.
Accurate path: `log_dd` (one Newton step on exp_dd; relative error < 2^-68).
"""

import numpy as np

from ...primitives.rounding import add_rn, jitable, mul_rn, negate
from .core import F64, INF32, NAN32, ZERO, dd_add, dd_to_f32, log_core, log_dd, round_if_safe

ZERO_F32 = np.float32(0.0)
ONE_F32 = np.float32(1.0)
NEG_INF32 = np.float32(-np.inf)

@jitable
def log_fast(x):
    """(log(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide.  Branch-free: specials evaluate log_core(1) and are
    selected at the end."""
    nan, zero, inf = x != x or x < ZERO_F32, x == ZERO_F32, x == INF32
    special = nan or zero or inf
    r, ok = round_if_safe(log_core(F64(ONE_F32 if special else x)))
    r = INF32 if inf else r
    r = NEG_INF32 if zero else r
    r = NAN32 if nan else r
    return r, ok or special


@jitable
def log_f32(x):
    r, ok = log_fast(x)
    if ok:
        return r
    h, l = log_dd(F64(x), ZERO)
    return dd_to_f32(h, l)


TWO_P54 = F64(2.0**54)
LN2_54_H = F64(float.fromhex("0x1.2b708872320e2p+5"))  # 54 ln2, double-double
LN2_54_L = F64(float.fromhex("-0x1.570da7e077bcbp-50"))
MIN_NORMAL64 = F64(2.0**-1022)
ZERO64 = F64(0.0)
NAN64 = F64(np.nan)
INF64 = F64(np.inf)


@jitable
def log_f64(x):
    """log for float64, faithfully rounded (not proven correctly rounded): log_dd
    (Newton step on exp_dd) rounded to its leading double.  Subnormal x are
    scaled by 2^54 first (exact) and 54 ln2 subtracted in double-double."""
    if x != x or x < ZERO64:
        return NAN64
    if x == ZERO64:
        return negate(INF64)
    if x == INF64:
        return INF64
    if x < MIN_NORMAL64:
        h, l = log_dd(mul_rn(x, TWO_P54), ZERO)
        h, l = dd_add(h, l, negate(LN2_54_H), negate(LN2_54_L))
    else:
        h, l = log_dd(x, ZERO)
    return add_rn(h, l)
