"""rsqrt(x) = 1/sqrt(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Special values (IEEE 754 rSqrt): rsqrt(+0) = +inf, rsqrt(-0) = -inf,
rsqrt(+inf) = +0, rsqrt(x < 0) = NaN, rsqrt(NaN) = NaN.

Fast path: y = RN(1 / RN(sqrt(x))) in double (x is exact in double, subnormal
float32 included): y = (1 + d2) / (sqrt(x) (1 + d1)), |d1|, |d2| <= 2^-53, so
the relative error is < 2^-51.9; `round_if_safe` (window 2^-46) decides.
Otherwise the exact value v lies within 2^-46 of the float32 rounding
boundary m between the window's ends (`_mathlib2.midpoint32`), and
v > m  <=>  m^2 x < 1.  m has 25 significant bits, so m^2 is exact in double,
and fma(m^2, x, -1) is the exact m^2 x - 1 rounded once, which keeps its sign
(it is a multiple of 2^-300 or so, far from double underflow).  A tie
(m^2 x = 1) would need x = 1/m^2 with m a 25-bit midpoint: impossible for a
float32 x unless m is a power of two, which a midpoint is not.
"""

import numpy as np

from ...primitives.rounding import div_rn, fma_rn, jitable, mul_rn, negate, sqrt_rn
from .core import WINDOW_HI, WINDOW_LO, round_if_safe
from .exception_tables import midpoint32, pick, window_ends

F64 = np.float64
ONE = F64(1.0)
MINUS_ONE = F64(-1.0)
NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)
ONE_F32 = np.float32(1.0)


@jitable
def rsqrt_f32(x):
    if x != x or x < ZERO_F32:
        return NAN32
    if x == ZERO_F32:
        return div_rn(ONE_F32, x)  # +inf for +0, -inf for -0
    if x == INF32:
        return ZERO_F32
    xd = F64(x)
    y = div_rn(ONE, sqrt_rn(xd))
    r, ok = round_if_safe(y)
    if ok:
        return r
    lo32, hi32 = window_ends(y, WINDOW_LO, WINDOW_HI)
    m = midpoint32(lo32, hi32)
    e = fma_rn(mul_rn(m, m), xd, MINUS_ONE)
    return pick(lo32, hi32, negate(e))
