"""cbrt(x), the real cube root, for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

cbrt is odd: computed on a = |x|, sign applied after; cbrt(+-0) = +-0,
cbrt(+-inf) = +-inf, cbrt(NaN) = NaN.

Fast path, in double (a is a normal double, subnormal float32 included):
* y0 from the bits: (bits of a)/3 + 0x2A9F7893782DA1CE, within 3.3% of a^(1/3)
  (dividing the biased exponent and mantissa bits by 3 approximates log2
  a / 3; the constant re-biases).  Measured maximum: 3.21%.
* four steps y <- (2y + a/y^2)/3 (Newton for y^3 = a): the relative error e
  becomes about e^2 (exactly e^2 (1 + 2e/3...)/(1+e)^2 <= 1.1 e^2), so
  0.033 -> 1.2e-3 -> 1.6e-6 -> 2.8e-12 -> 8.6e-24, far below rounding.
* rounding in the last step: y^2 and a/y^2 (two roundings, the quotient's
  relative error 2^-52 weighted by 1/3), the sum 2y + t (2^-53), the product
  by RN(1/3) (2^-53 + 2^-54): < 2^-51.2.  `round_if_safe` (window 2^-46) decides.
Otherwise the exact value v lies within 2^-46 of the float32 rounding
boundary m between the window's ends, and v > m <=> a - m^3 > 0.  m has 25
significant bits, so m^2 is exact; fma(m^2, -m, a) rounds the exact a - m^3
once, keeping its sign.  A tie would need a = m^3 with m a 25-bit midpoint,
which has more than 24 significant bits: impossible.
"""

import numpy as np

from ...primitives.rounding import add_rn, bitcast, div_rn, fma_rn, jitable, mul_rn, negate
from .core import WINDOW_HI, WINDOW_LO, abs32, neg32, round_if_safe, signbit32
from .exception_tables import midpoint32, pick, window_ends

F64 = np.float64
THIRD = F64(1.0 / 3.0)
CBRT_MAGIC = np.uint64(0x2A9F7893782DA1CE)
THREE_U64 = np.uint64(3)
ZERO_F32 = np.float32(0.0)
INF32 = np.float32(np.inf)


@jitable
def cbrt_f32(x):
    if x != x:
        return x
    a = abs32(x)
    if a == ZERO_F32 or a == INF32:
        return x
    ad = F64(a)
    y = bitcast(bitcast(ad) // THREE_U64 + CBRT_MAGIC)
    for _ in range(4):
        y = mul_rn(add_rn(add_rn(y, y), div_rn(ad, mul_rn(y, y))), THIRD)
    r, ok = round_if_safe(y)
    if not ok:
        lo32, hi32 = window_ends(y, WINDOW_LO, WINDOW_HI)
        m = midpoint32(lo32, hi32)
        r = pick(lo32, hi32, fma_rn(mul_rn(m, m), negate(m), ad))
    if signbit32(x):
        return neg32(r)
    return r
