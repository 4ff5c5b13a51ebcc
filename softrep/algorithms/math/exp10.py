"""exp10(x) = 10^x for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

10^x overflows float32 for x > 38.5318... and rounds to +0 below
x = -45.154... (2^-150); the clamps use 39 and -46.

z = x ln10 as a double-double (two_prod exact, x LN10_L rounded once: 2^-105
relative).  Fast path exp_core(z) (2^-50.5), accurate path exp_dd(z) (2^-92).
Exact cases: 10^n for n = 0..10 is a float32; the fast path is within 2^-50 of
it, far from any rounding boundary.  10^n for n = 11..38 is an odd multiple of
5^n with 26 to 89 significant bits: not a float32 midpoint, and at least
2^-89 away from one relatively, which the accurate path resolves.
"""

import numpy as np

from ...primitives.rounding import fma_rn, jitable
from .core import (F64, INF32, LN10_H, LN10_L, NAN32, ZERO32, dd_to_f32, exp_core, exp_dd, round_if_safe,
                    two_prod)

EXP10_OVERFLOW = np.float32(39.0)
EXP10_UNDERFLOW = np.float32(-46.0)

@jitable
def exp10_f32(x):
    if x != x:
        return NAN32
    if x > EXP10_OVERFLOW:
        return INF32
    if x < EXP10_UNDERFLOW:
        return ZERO32
    xd = F64(x)
    zh, zl = two_prod(xd, LN10_H)
    zl = fma_rn(xd, LN10_L, zl)
    r, ok = round_if_safe(exp_core(zh, zl))
    if ok:
        return r
    h, l = exp_dd(zh, zl)
    return dd_to_f32(h, l)
