"""sinh(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

sinh is odd: computed on |x| and the sign put back (sinh(+-0) = +-0).
Overflow: sinh(x) > FLT_MAX + ulp/2 for |x| > 89.4159...; the clamp uses 90.

Fast path.  |x| < 1: odd Taylor series x + x w (1/3! + w (1/5! + ... + w/19!)),
w = x^2 (remainder < x^21/21! < 2^-65 |x|; the tail is < 0.18 |x| and its
rounding errors < 2^-51 of itself; the last fma rounds once): < 2^-52.
|x| >= 1: (E - 1/E)/2 with E = exp_core(|x|) (2^-50.5); 1/E rounds once;
E - 1/E >= 0.76 (E + 1/E), so errors grow at most 1.31x: < 2^-49.5.
Accurate path: (E - 1/E)/2 in double-double with E = exp_dd(|x|): the absolute
error 2^-92 E turns into a relative one < 2^-92 E/sinh|x| <= 2^-67 for
|x| >= 2^-25; below 2^-25 the fast path always decides (sinh x is within
2^-51 |x| of the float32 x, rounding boundaries are 2^-25 |x| away).
"""

import numpy as np

from ...primitives.rounding import fabs, fma_rn, jitable, mul_rn, negate, sub_rn, div_rn
from .core import (abs32, neg32, signbit32, F64, HALF, INF32, NAN32, ONE, S3, S5, S7, S9, S11, S13, S15, S17, S19, ZERO, dd_add,
                    dd_div, dd_to_f32, exp_core, exp_dd, round_if_safe)

SINH_OVERFLOW = np.float32(90.0)
ONE_F32 = np.float32(1.0)

@jitable
def sinh_abs(a):
    """sinh(a) in double for 0 <= a <= 90 (float32 a), relative error < 2^-49.5."""
    if a < ONE:
        w = mul_rn(a, a)
        p = fma_rn(w, S19, S17)
        p = fma_rn(w, p, S15)
        p = fma_rn(w, p, S13)
        p = fma_rn(w, p, S11)
        p = fma_rn(w, p, S9)
        p = fma_rn(w, p, S7)
        p = fma_rn(w, p, S5)
        p = fma_rn(w, p, S3)
        return fma_rn(mul_rn(a, w), p, a)
    e = exp_core(a, ZERO)
    return mul_rn(sub_rn(e, div_rn(ONE, e)), HALF)

@jitable
def sinh_f32(x):
    if x != x:
        return NAN32
    ax = abs32(x)
    if ax > SINH_OVERFLOW:
        r = INF32
    else:
        a = F64(ax)
        r, ok = round_if_safe(sinh_abs(a))
        if not ok:
            eh, el = exp_dd(a, ZERO)
            ih, il = dd_div(ONE, ZERO, eh, el)
            h, l = dd_add(eh, el, negate(ih), negate(il))
            r = dd_to_f32(mul_rn(h, HALF), mul_rn(l, HALF))
    if signbit32(x):
        return neg32(r)
    return r
