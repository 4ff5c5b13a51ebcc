"""hypot(x, y) = sqrt(x^2 + y^2) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Special values (IEEE 754): hypot(+-inf, y) = hypot(x, +-inf) = +inf even when
the other argument is NaN; otherwise a NaN argument gives NaN.  hypot(+-0, +-0)
= +0.  The result never depends on the signs.

Fast path, in double: with a = max(|x|, |y|), b = min, a^2 and b^2 are exact
(48 bits; no overflow or underflow in double for any float32), s = fma(a, a,
b^2) rounds the sum once (2^-53), sqrt halves that and rounds once more:
relative error < 1.5 * 2^-53.  `round_if_safe` (window 2^-46) decides.
Otherwise the exact value v lies within 2^-46 of the float32 rounding
boundary m between the window's ends (m may be the overflow threshold), and
v > m <=> b^2 > (m - a)(m + a).  That product is exact: v <= sqrt2 a, so a is
at most one binade below m and both are multiples of g = ulp32(m)/2 (or of
2^-150 for subnormal results); |m - a| < 2^25 g and m + a < 2^26 g, so the
product is an integer multiple of g^2 below 2^51 g^2.  m - a and m + a are
exact as well (at most 26 significant bits in units of g).  Ties (integer
Pythagorean-like triples reaching a 25-bit midpoint) go to the even float32.
"""

import numpy as np

from ...primitives.rounding import add_rn, fma_rn, jitable, mul_rn, sqrt_rn, sub_rn
from .core import WINDOW_HI, WINDOW_LO, abs32, round_if_safe
from .exception_tables import midpoint32, pick, window_ends

F64 = np.float64
NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)


@jitable
def hypot_f32(x, y):
    ax = abs32(x)
    ay = abs32(y)
    if ax == INF32 or ay == INF32:
        return INF32
    if x != x or y != y:
        return NAN32
    if ax < ay:
        ax, ay = ay, ax
    a = F64(ax)
    b = F64(ay)
    b2 = mul_rn(b, b)
    h = sqrt_rn(fma_rn(a, a, b2))
    r, ok = round_if_safe(h)
    if ok:
        return r
    lo32, hi32 = window_ends(h, WINDOW_LO, WINDOW_HI)
    m = midpoint32(lo32, hi32)
    d = mul_rn(sub_rn(m, a), add_rn(m, a))
    return pick(lo32, hi32, sub_rn(b2, d))
