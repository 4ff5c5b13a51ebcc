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

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import WINDOW_HI, WINDOW_LO, abs32, fast_two_sum, neg32, round_if_safe, signbit32, two_prod
from .exact64 import (bracket, bracket_err, midpoint_of, next_up, settle, pow2_any, significand, split_exponent, to_grid, with_exponent)
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
# cbrt_f64: correctly rounded for every double: the plain-double fast path
# (cbrt_fast64, below), and where it cannot decide, the double-double
# evaluation and an exact decision (softrep/algorithms/math/exact64.py); no
# hard-case table is involved.
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


# --------------------------------------------------------------------------- float64 fast path
#
# cbrt_fast64: plain-double operations only, branch-free (every case is
# evaluated with a safe argument and the specials are selected at the end),
# so that the CPU launcher's first loop vectorises.
#
# Reduction by bit operations, for a normal a = |x| with biased exponent E
# (1 <= E <= 2046): t = E + 1020 = (E - 1023) + 3 * 681 lies in [1021, 3066];
# q = floor(t / 3) = (t * 43691) >> 17, since 43691 = (2^17 + 1)/3 gives
# t * 43691 / 2^17 = t/3 + t/(3 * 2^17), and for t < 2^17 the added term is
# below 1/3 while the fractional part of t/3 is at most 2/3: no integer is
# crossed (all t of the range are also checked in the tests).  Then
# k = q - 681 = floor((E - 1023)/3), j = t - 3q in {0, 1, 2}, f = the
# significand in [1, 2), am = f 2^j in [1, 8), cbrt(a) = cbrt(am) 2^k with
# 2^k = bits (q + 342) << 52, a normal power of two for -341 <= k <= 341.
# A subnormal a is first multiplied by 2^54 = 2^(3 * 18), exactly (a normal
# a by 1), and k lowered by 18 (then -358 <= k <= -342; the scaled exponent
# E is at least 3, t stays in the range); so a normal input never meets a
# subnormal operand (which costs a microcode assist per element on x86).
# Zero, infinite and NaN inputs evaluate f = 1 and are replaced at the end.
#
# Evaluation of v = am^(1/3) (relative errors; each rounding counted,
# u = 2^-53 per rounding to nearest):
# * y0 = c0 + c1 f + (c2 + c3 f) f^2, a cubic fit of f^(1/3) on [1, 2]
#   (coefficients of CORE-MATH's cbrt): relative error < 2^-13.7 (measured
#   on a dense grid in the tests), < 2^-13.6 with its four roundings.
# * H = y0^3/f - 1, |H| <= (1 + 2^-13.6)^3 - 1 < 2^-12.0, computed as
#   h = fma(RN(y0^2), RN(y0 r), -1) with r = RN(1/f): three roundings in the
#   product (3u (1 + H)) and one of h (u |H|): |h - H| < 2^-51.4.
# * y1 = y0 - (h y0)(1/3 - 2h/9), the cubic step for f^(1/3) =
#   y0 (1 + H)^(-1/3) = y0 (1 - H/3 + 2H^2/9 - 14H^3/81 + ...): the omitted
#   terms are below 0.173 |H|^3 < 2^-38.5, the error of h contributes
#   < 2^-51.4 (1/3 + 4|h|/9) < 2^-52.9, the correction (< 2^-13.5 y0, three
#   roundings, < 2^-51.6 of it) < 2^-65, the final fma u: |y1/f^(1/3) - 1|
#   < 2^-38.45.
# * y = RN(y1 S_j), S_j = RN(2^(j/3)) (2^-53 relatively, exact for j = 0):
#   y = v (1 + eps), |eps| < 2^-38.4.
# * d = am - y^3: p = RN(y^2), pe = y^2 - p exactly (fma), so y^3 = y p + y pe;
#   d0 = fma(-y, p, am) = RN(d + y pe), d = fma(-y, pe, d0): two roundings at
#   the magnitude of d plus u |y pe| <= u^2 y^3, so
#   |d_computed - d| < 2^-52 |d| + 2^-105.9 am.
# * v = y (1 - D)^(-1/3) exactly, D = d/am, |D| <= 3.0001 |eps| < 2^-36.8;
#   the series 1 + D/3 + 2D^2/9 + 14D^3/81 + ... is cut after 2D^2/9
#   (remainder < 0.173 |D|^3 < 2^-112).  D = RN(d r 2^-j) (r 2^-j is 1/am to
#   u, one more rounding: D within 2^-51 relatively, plus 2^-105.8),
#   s = fma(D, RN(2/9), RN(1/3)) (RN(1/3) within 2^-54 relatively, the fma
#   2^-53.4 of 1/3: 2^-52.7), c = RN(y RN(D s)) (two roundings): c is within
#   2^-50.15 |c| + 2^-107 y of y (D/3 + 2D^2/9), and |c| < 2^-38.4 y.
# So |y + c - v| < 2^-88.5 y + 2^-107 y + 2^-112 y < 2^-88.4 v, taken as
# 2^-88 (the tests measure it against MPFR).  h + l = fast_two_sum(y, c) is
# exact (|c| < |y|), |l| <= 2^-53 |h|; the rounding test (exact64.bracket_err)
# uses err = 2^-80 h, more than 2 * 2^-88 |h + l| + 2^-52 |l| with a margin
# of 2^6.9.  The results are normal doubles, so RN(w 2^k) = RN(w) 2^k: the
# window's ends are rounded in [1, 2) and scaled exactly.  An exact cube root
# (v a double) has both ends round to v; v is never a midpoint (argued above
# for the exact decision), so a window that rounds alike gives RN(v).

U64 = np.uint64
_MANT64 = U64(0x000FFFFFFFFFFFFF)
_EXP_ONE = U64(0x3FF0000000000000)
_S52 = U64(52)
_EXP_MAX = U64(0x7FF)
_T_OFFSET = U64(1020)  # t = E + 1020 = (E - 1023) + 3 * 681
_DIV3_MUL = U64(43691)  # (2^17 + 1)/3: floor(t/3) = (t * 43691) >> 17 for t < 2^17
_DIV3_SHIFT = U64(17)
_SCALE_BIAS = U64(342)  # k + 1023 = q - 681 + 1023
_BIAS = U64(1023)
_Z64 = U64(0)
# a cubic fit of f^(1/3) on [1, 2] (CORE-MATH's cbrt), relative error < 2^-13.7
CBRT_C0 = F64(float.fromhex("0x1.1b0babccfef9cp-1"))
CBRT_C1 = F64(float.fromhex("0x1.2c9a3e94d1da5p-1"))
CBRT_C2 = F64(float.fromhex("-0x1.4dc30b1a1ddbap-3"))
CBRT_C3 = F64(float.fromhex("0x1.7a8d3e4ec9b07p-6"))
CBRT2 = F64(float.fromhex("0x1.428a2f98d728bp+0"))  # RN(2^(1/3))
CBRT4 = F64(float.fromhex("0x1.965fea53d6e3dp+0"))  # RN(2^(2/3))
TWO_NINTHS = F64(2.0 / 9.0)
ONE64 = F64(1.0)
NEG_ONE64 = F64(-1.0)
REL_FAST64 = F64(2.0**-80)
TWO54 = F64(2.0**54)
_SUB_SHIFT = U64(18)  # cbrt(2^54) = 2^18


@jitable
def cbrt_eval_fast64(x):
    """(h, l, k) with (h + l) 2^k within 2^-88 of cbrt|x| relatively, for a
    finite x != 0, subnormals included (comment above); 1 <= h < 2.  Zero,
    infinite and NaN x evaluate cbrt(1) (h = 1, l = 0, k = 0).  Branch-free:
    bit operations and selects."""
    a = fabs(x)
    sub = (bitcast(a) >> _S52) == _Z64  # subnormal or zero
    u = bitcast(mul_rn(a, TWO54 if sub else ONE64))
    e = u >> _S52
    u = u if (e != _Z64) & (e != _EXP_MAX) else _EXP_ONE
    t = (u >> _S52) + _T_OFFSET
    q = (t * _DIV3_MUL) >> _DIV3_SHIFT
    j = t - (q + q + q)
    mant = u & _MANT64
    f = bitcast(mant | _EXP_ONE)
    am = bitcast(mant | ((j + _BIAS) << _S52))
    r = div_rn(ONE64, f)
    # y0 ~ f^(1/3) to 2^-13.6, then the cubic step: y1 ~ f^(1/3) to 2^-38.45
    f2 = mul_rn(f, f)
    y = fma_rn(f2, fma_rn(CBRT_C3, f, CBRT_C2), fma_rn(CBRT_C1, f, CBRT_C0))
    h = fma_rn(mul_rn(y, y), mul_rn(y, r), NEG_ONE64)
    y = fma_rn(negate(mul_rn(h, y)), fma_rn(negate(TWO_NINTHS), h, THIRD), y)
    s_j = CBRT2 if j == U64(1) else ONE64
    s_j = CBRT4 if j == U64(2) else s_j
    y = mul_rn(y, s_j)
    # d = am - y^3 to 2^-52 |d| + 2^-105.9 am; D = d / am; c = y (D/3 + 2D^2/9)
    p = mul_rn(y, y)
    pe = fma_rn(y, y, negate(p))
    d = fma_rn(negate(y), pe, fma_rn(negate(y), p, am))
    big_d = mul_rn(d, mul_rn(r, bitcast((_BIAS - j) << _S52)))
    c = mul_rn(y, mul_rn(big_d, fma_rn(big_d, TWO_NINTHS, THIRD)))
    hh, ll = fast_two_sum(y, c)
    return hh, ll, np.int64(q + _SCALE_BIAS - (_SUB_SHIFT if sub else _Z64)) - 1023


@jitable
def cbrt_fast64(x):
    """(cbrt(x) correctly rounded, True), or (anything, False) where the fast
    path cannot decide: `cbrt_eval_fast64` and a rounding test of four
    additions (exact64.bracket_err) for finite x != 0 (every result is a
    normal double); NaN, +-0 and +-inf decided as themselves (NaN
    canonical).  Branch-free, so that the CPU launcher vectorises it.
    Undecided: about one argument in 2^26, which `cbrt_f64` hands to the
    double-double evaluation and its exact decision."""
    inline_into_callers()
    a = fabs(x)
    h, l, k = cbrt_eval_fast64(x)
    lo, hi = bracket_err(h, l, mul_rn(h, REL_FAST64))
    r = mul_rn(lo, bitcast(U64(k + 1023) << _S52))
    r = negate(r) if x < ZERO64 else r
    special = (a == ZERO64) | (a == INF64)
    r = x if special else r
    r = NAN64 if x != x else r
    return r, (lo == hi) | special | (x != x)


@jitable
def cbrt_f64(x):
    """cbrt for float64, correctly rounded: the plain-double fast path, else
    the double-double evaluation with the exact decision."""
    r, ok = cbrt_fast64(x)
    if ok:
        return r
    return cbrt_f64_window(x, REL_2M98)
