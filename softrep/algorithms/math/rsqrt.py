"""rsqrt(x) = 1/sqrt(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Special values (IEEE 754 rSqrt): rsqrt(+0) = +inf, rsqrt(-0) = -inf,
rsqrt(+inf) = +0, rsqrt(x < 0) = NaN, rsqrt(NaN) = NaN.

Fast path: y = RN(RN(sqrt(x)) RN(1/x)) in double (x is exact in double,
subnormal float32 included): y = x^(-1/2) (1 + d1)(1 + d2)(1 + d3), |di| <=
2^-53, so the relative error is < 2^-51.41; `round_if_safe` (window 2^-46)
decides.  The square root and the reciprocal are independent: the divider
runs them side by side (RN(1/RN(sqrt(x))) waits for the root).
Otherwise the exact value v lies within 2^-46 of the float32 rounding
boundary m between the window's ends (`_mathlib2.midpoint32`), and
v > m  <=>  m^2 x < 1.  m has 25 significant bits, so m^2 is exact in double,
and fma(m^2, x, -1) is the exact m^2 x - 1 rounded once, which keeps its sign
(it is a multiple of 2^-300 or so, far from double underflow).  A tie
(m^2 x = 1) would need x = 1/m^2 with m a 25-bit midpoint: impossible for a
float32 x unless m is a power of two, which a midpoint is not.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import bitcast, div_rn, fma_rn, jitable, mul_rn, negate, sqrt_rn
from .core import WINDOW_HI, WINDOW_LO, neg32, round_if_safe, signbit32
from .exact64 import (bracket, midpoint_of, next_up, settle, pow2_any, significand, split_exponent, to_grid, with_exponent)
from .wide_int import wide, wide_cmp, wide_mul, wide_shl
from .exception_tables import midpoint32, pick, window_ends

F64 = np.float64
ONE = F64(1.0)
MINUS_ONE = F64(-1.0)
NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)
ONE_F32 = np.float32(1.0)


@jitable
def rsqrt_double(x):
    """RN(RN(sqrt(x)) RN(1/x)) for a positive finite double x: x^(-1/2)
    within 2^-51.41 relatively (three roundings), unless 1/x is subnormal."""
    inline_into_callers()
    return mul_rn(sqrt_rn(x), div_rn(ONE, x))


@jitable
def rsqrt_fast(x):
    """(rsqrt(x) correctly rounded, True), or (anything, False) where the window
    test cannot decide: the fast path of the module docstring without
    branches, so that the CPU launcher's first loop vectorises (as
    `rsqrt_f32`, with its branches for the special values, the AVX2 loop
    stayed scalar: docs/benchmarks.md).  The special values (NaN for a NaN
    or negative x, +-inf for +-0, +0 for +inf) are selected, x replaced by 1
    in the evaluation; every positive finite float32, subnormals included,
    is exact in double."""
    inline_into_callers()
    inside = (x > ZERO_F32) & (x < INF32)
    r, ok = round_if_safe(rsqrt_double(F64(x if inside else ONE_F32)))
    special = ZERO_F32 if x == INF32 else NAN32
    special = (neg32(INF32) if signbit32(x) else INF32) if x == ZERO_F32 else special
    return (r if inside else special), ok | (not inside)


@jitable
def rsqrt_f32(x):
    r, ok = rsqrt_fast(x)
    if ok:
        return r
    # a positive finite x whose y lies within the window of a midpoint
    xd = F64(x)
    y = rsqrt_double(xd)
    lo32, hi32 = window_ends(y, WINDOW_LO, WINDOW_HI)
    m = midpoint32(lo32, hi32)
    e = fma_rn(mul_rn(m, m), xd, MINUS_ONE)
    return pick(lo32, hi32, negate(e))


# --------------------------------------------------------------------------- float64
#
# rsqrt_f64: correctly rounded for every double, by an exact decision
# (softrep/algorithms/math/exact64.py); no hard-case table is involved.
#
# Reduction: x = f 2^(2k + j), 1 <= f < 2, j in {0, 1}; xm = f 2^j in [1, 4)
# and rsqrt(x) = rsqrt(xm) 2^-k, an exact scaling (the result lies in
# [2^-512, 2^537], never subnormal, never overflowing).
#
# Double-double evaluation of v = xm^(-1/2) in (1/2, sqrt(2)] for xm in
# [1/2, 4) (the first step reduces to [1/2, 2), the exact path to [1, 4)):
# * y0 = RN(RN(sqrt(xm)) RN(1/xm)): relative error < 3.0001 * 2^-53 < 2^-51.41.
#   The square root and the reciprocal both start from xm (RN(1/RN(sqrt(xm))),
#   < 2^-51.9, would wait for the root before dividing).
# * r = 1 - xm y0^2 = 1 - (1 + e0)^2, |r| < 2^-50.41, to within 2^-103 by
#   two fmas: q = RN(xm y0) and d = xm y0 - q (an fma, exact: the error of a
#   rounded product is a double); xm y0^2 = q y0 + d y0 with q <= 2.01 and
#   |d| <= 2^-52, so |1 - q y0| < 2^-50.41 + 2^-52 < 2^-50, and
#   r1 = RN(1 - q y0) (an fma) and r = RN(r1 - d y0) (an fma) round values
#   below 2^-50 by at most 2^-104 each.
# * v = y0 (1 - r)^(-1/2) = y0 (1 + r/2 + 3r^2/8 + 5r^3/16 + ...): the
#   correction c = RN(y0 r/2) (r/2 exact) rounds by 2^-53 of a value below
#   2^-51.4 y0 (< 2^-104.4 y0); the omitted terms are below 3r^2/8 (1 + 2^-49)
#   < 2^-102.24 y0; the error of r contributes < 2^-104 y0 (through r/2).
#   So |y0 + c - v| < 2^-101.6 y0 < 2^-101.5 v; the bracket uses 2^-98
#   (exact64.bracket: a relative error below 2^-99).
# Decision (exact64.py) against the midpoint m after a candidate double:
# v > m  <=>  m^2 x < 1  <=>  M^2 X < 2^p  (m = M 2^km, x = X 2^kx, p = -(2 km + kx)).
# M^2 X is within 2^-96 of 2^p relatively, so 106 <= p <= 161: the integers
# fit the 320-bit comparison.  A tie needs M^2 X = 2^p with M > 1 odd:
# impossible.

NAN64 = F64(np.nan)
INF64 = F64(np.inf)
ZERO64 = F64(0.0)
HALF64 = F64(0.5)
REL_2M98 = F64(2.0**-98)
ONE_U64 = np.uint64(1)


@jitable
def rsqrt_dd(xm):
    """(y0, c): xm^(-1/2) within 2^-101.5 relatively as y0 + c (|c| < 2^-51.4
    y0), for xm in [1/2, 4): the double-double evaluation above."""
    inline_into_callers()
    y0 = rsqrt_double(xm)
    q = mul_rn(xm, y0)
    d = fma_rn(xm, y0, negate(q))
    r = fma_rn(negate(d), y0, fma_rn(negate(q), y0, ONE))
    return y0, mul_rn(y0, mul_rn(r, HALF64))


@jitable
def _rsqrt_bracket(xm, rel):
    """(lo, hi) with lo <= RN(xm^(-1/2)) <= hi for xm in [1/2, 4): `rsqrt_dd`
    bracketed with the relative half-width rel."""
    inline_into_callers()
    y0, c = rsqrt_dd(xm)
    return bracket(y0, c, rel)


@jitable
def _rsqrt_ends(x, rel):
    """(lo, hi, True) with lo <= RN(rsqrt x) <= hi from the double-double
    evaluation (bracket half-width rel), or (result, result, False) for the
    special values."""
    if x != x or x < ZERO64:
        return NAN64, NAN64, False
    if x == ZERO64:
        r = div_rn(ONE, x)  # +inf for +0, -inf for -0
        return r, r, False
    if x == INF64:
        return ZERO64, ZERO64, False
    f, e = split_exponent(x)
    k = e // 2
    lo, hi = _rsqrt_bracket(with_exponent(f, e - 2 * k), rel)
    scale = pow2_any(-k)
    return to_grid(lo, scale), to_grid(hi, scale), True


@jitable
def rsqrt_f64_window(x, rel):
    """rsqrt_f64 with the bracket's relative half-width `rel` as a parameter:
    any 2^-98 <= rel <= 2^-56 (a window narrower than the spacing of doubles)
    gives the same, correctly rounded, bits; a wide one sends many inputs
    through the exact decision (tests)."""
    lo, hi, finite = _rsqrt_ends(x, rel)
    if not finite:
        return lo
    xx, kx = significand(x)
    r = lo
    while r != hi:
        mm, km = midpoint_of(r)
        m2x = wide_mul(wide_mul(wide(mm), mm), xx)
        c = wide_cmp(wide_shl(wide(ONE_U64), -(2 * km + kx)), m2x)
        if c <= 0:
            return settle(r, c)
        r = next_up(r)
    return r


_MIN_NORMAL64 = F64(2.0**-1022)
_MANTISSA_AND_LOW_EXPONENT = np.uint64(0x001FFFFFFFFFFFFF)  # the significand's field and the exponent's lowest bit
_HALF_FIELD = np.uint64(1022 << 52)  # 0.5's exponent field, lowest bit 0
_FIELD_SHIFT = np.uint64(52)
_SCALE_FIELD = np.uint64(1534)  # the exponent field of 2^-k is 1534 - floor(E/2)
_SIGN = np.uint64(0x8000000000000000)


@jitable
def rsqrt_fast64(x):
    """(rsqrt(x) correctly rounded, True) where both ends of the bracket round
    alike, else (anything, False): the exact decision is needed.  The
    evaluation of `_rsqrt_ends` without its branches, so that the CPU
    launcher's loop vectorises on every host (with them, the AVX2 loop stayed
    scalar: docs/benchmarks.md), and with a reduction of three bit
    operations: a normal x with exponent field E is xm 2^(2k), xm in [1/2, 2)
    keeping x's significand and E's lowest bit over 0.5's exponent field
    (1022, lowest bit 0: an OR), 2k = E - 1022 - (E mod 2), so 2^-k (|k| <=
    512) is the double with exponent field 1534 - floor(E/2).  The special
    values (NaN for a NaN or negative x, +-inf for +-0, +0 for +inf) are
    selected, x replaced by 1 in the evaluation.  A subnormal x is left
    undecided (`rsqrt_f64` scales it by 2^54 first; as a select here, every
    element would pay for the scaling).  Both ends are compared before the
    scaling, which is exact.  The results are rsqrt_f64's, bit for bit."""
    inline_into_callers()
    inside = (x >= _MIN_NORMAL64) & (x < INF64)
    u = bitcast(x if inside else ONE)
    lo, hi = _rsqrt_bracket(bitcast((u & _MANTISSA_AND_LOW_EXPONENT) | _HALF_FIELD), REL_2M98)
    r = mul_rn(lo, bitcast((_SCALE_FIELD - (u >> (_FIELD_SHIFT + np.uint64(1)))) << _FIELD_SHIFT))
    infinity = bitcast(bitcast(INF64) | (bitcast(x) & _SIGN))  # +-inf for +-0
    result = ZERO64 if x == INF64 else NAN64
    result = infinity if x == ZERO64 else result
    special = (x != x) | (x <= ZERO64) | (x == INF64)
    return (r if inside else result), special | (inside & (lo == hi))


@jitable
def rsqrt_f64(x):
    return rsqrt_f64_window(x, REL_2M98)
