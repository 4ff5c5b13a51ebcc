"""exp2(x) = 2^x for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

2^x overflows float32 for x >= 128 and rounds to +0 for x <= -150 (2^-150 is
the tie between 0 and the smallest subnormal, resolved to even = 0).  The
clamps use 128 and -151; -151 < x <= -150 is computed and rounds to 0.

z = x ln2 as a double-double: two_prod(x, LN2_H) is exact and x LN2_L adds one
rounding of relative size 2^-53 * 2^-53, so z is x ln2 to 2^-105 relative.
Fast path exp_core(z) (2^-50.5); accurate path exp_dd(z) (2^-92).
Integer x gives exactly 2^x on the fast path (the reduced argument is ~2^-100
and e^r rounds to 1), which passes the rounding test.
"""

import numpy as np

from ...primitives.rounding import fma_rn, jitable
from .core import (F64, INF32, LN2_H, LN2_L, NAN32, ZERO32, dd_to_f32, exp_core, exp_dd, round_if_safe,
                    two_prod)

EXP2_OVERFLOW = np.float32(128.0)
EXP2_UNDERFLOW = np.float32(-151.0)

@jitable
def exp2_f32(x):
    if x != x:
        return NAN32
    if x >= EXP2_OVERFLOW:
        return INF32
    if x < EXP2_UNDERFLOW:
        return ZERO32
    xd = F64(x)
    zh, zl = two_prod(xd, LN2_H)
    zl = fma_rn(xd, LN2_L, zl)
    r, ok = round_if_safe(exp_core(zh, zl))
    if ok:
        return r
    h, l = exp_dd(zh, zl)
    return dd_to_f32(h, l)
