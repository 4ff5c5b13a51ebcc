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

from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import WINDOW_HI, WINDOW_LO, abs32, neg32, round_if_safe, signbit32, two_prod
from .exact64 import (bracket, midpoint_of, next_up, settle, pow2_any, significand, split_exponent, to_grid, with_exponent)
from .wide_int import wide, wide_cmp, wide_mul, wide_shl
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


# --------------------------------------------------------------------------- float64
#
# cbrt_f64: correctly rounded for every double, by an exact decision
# (softrep/algorithms/math/exact64.py); no hard-case table is involved.
#
# Reduction: a = |x| = f 2^(3k + j), 1 <= f < 2, j in {0, 1, 2}; am = f 2^j in
# [1, 8) and cbrt(a) = cbrt(am) 2^k, an exact scaling (results lie in
# [2^-358, 2^342): never subnormal, never overflowing).
#
# Double-double evaluation of v = am^(1/3):
# * y0: the bit trick and four Newton steps of the float32 path, now on am:
#   relative error < 2^-51.2 (argued above).
# * d = am - y0^3, |d| < 2^-49.6 am, almost exactly: y0^2 = p + pe and
#   y0 p = q + qe are exact (two_prod); am - q is exact (Sterbenz); the
#   subtractions of qe and RN(y0 pe) (|y0 pe| < 2^-102 am) round at the
#   magnitude of d: |error| < 2^-102 am.
# * v = y0 (1 + D)^(1/3) with D = d / y0^3 exactly; delta = RN(d / q)
#   (relative error < 2^-52 against D, since q = y0^3 (1 + 2^-104)), the
#   correction c = y0 delta (1/3 - delta/9) (series 1 + D/3 - D^2/9 + 5D^3/81)
#   has relative rounding error < 2^-50.5 and is below 2^-50.7 y0; the omitted
#   term is below 2^-150 y0, the error of d contributes < 2^-103 y0.
#   So |y0 + c - v| < 2^-100 v; the bracket uses 2^-98.
# Decision: v > m  <=>  a > m^3  <=>  A 2^(ka - 3 km) > M^3 (a = A 2^ka,
# m = M 2^km).  M^3 < 2^162 is within 2^-96 of A 2^(ka - 3km) relatively, so
# the shift is at least 106 and both sides stay below 2^192 (of the 320 bits).  A tie needs
# a = m^3 with M > 1 odd: M^3 has more than 53 significant bits, impossible.

NAN64 = F64(np.nan)
INF64 = F64(np.inf)
ZERO64 = F64(0.0)
NEG_NINTH = F64(-1.0 / 9.0)
REL_2M98 = F64(2.0**-98)


@jitable
def _cbrt_ends(x, rel):
    """(lo, hi, True) with lo <= RN(cbrt |x|) <= hi from the double-double
    evaluation (bracket half-width rel), or (result, result, False) for NaN,
    +-0 and +-inf."""
    if x != x:
        return NAN64, NAN64, False
    a = fabs(x)
    if a == ZERO64 or a == INF64:
        return x, x, False
    f, e = split_exponent(a)
    k = e // 3
    am = with_exponent(f, e - 3 * k)
    y = bitcast(bitcast(am) // THREE_U64 + CBRT_MAGIC)
    for _ in range(4):
        y = mul_rn(add_rn(add_rn(y, y), div_rn(am, mul_rn(y, y))), THIRD)
    p, pe = two_prod(y, y)
    q, qe = two_prod(y, p)
    d = sub_rn(sub_rn(sub_rn(am, q), qe), mul_rn(y, pe))
    delta = div_rn(d, q)
    c = mul_rn(y, mul_rn(delta, fma_rn(delta, NEG_NINTH, THIRD)))
    lo, hi = bracket(y, c, rel)
    scale = pow2_any(k)
    return to_grid(lo, scale), to_grid(hi, scale), True


@jitable
def cbrt_f64_window(x, rel):
    """cbrt_f64 with the bracket's relative half-width as a parameter (any
    2^-98 <= rel <= 2^-56 gives the same bits; tests widen it to exercise
    the exact decision)."""
    lo, hi, finite = _cbrt_ends(x, rel)
    if not finite:
        return lo
    aa, ka = significand(fabs(x))
    r = lo
    while r != hi:
        mm, km = midpoint_of(r)
        c = wide_cmp(wide_shl(wide(aa), ka - 3 * km), wide_mul(wide_mul(wide(mm), mm), mm))
        if c <= 0:
            r = settle(r, c)
            break
        r = next_up(r)
    return negate(r) if x < ZERO64 else r


@jitable
def cbrt_fast64(x):
    """(cbrt(x) correctly rounded, True) where both ends of the bracket round
    alike, else (anything, False): the exact decision is needed."""
    lo, hi, finite = _cbrt_ends(x, REL_2M98)
    return (negate(lo) if finite and x < ZERO64 else lo), (not finite) or lo == hi


@jitable
def cbrt_f64(x):
    return cbrt_f64_window(x, REL_2M98)
