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

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, sqrt_rn, sub_rn
from .core import WINDOW_HI, WINDOW_LO, abs32, dd_add, fast_two_sum, round_if_safe, two_prod
from .exact64 import (bracket, bracket_err, bracket_outward, midpoint_of, next_up, settle, pow2_any, significand, split_exponent, to_grid)
from .wide_int import wide, wide_add, wide_cmp, wide_mul, wide_shl
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


# --------------------------------------------------------------------------- float64
#
# hypot_f64: correctly rounded for every pair of doubles, subnormal and
# overflowing results included, by an exact decision
# (softrep/algorithms/math/exact64.py); no hard-case table is involved.
#
# a = max(|x|, |y|), b = min.  If b <= 2^-28 a the result is a: the exact
# value is below a + b^2/(2a) <= a (1 + 2^-57), while ulp(a) > 2^-53 a (2^-52 a
# for subnormal a), so it lies less than ulp(a)/16 above a.  (2^28 b is exact
# or infinite.)  Otherwise b > 2^-28 a.
#
# Scaling: a = f 2^e with 1 <= f < 2; as = f and bs = b 2^-e, an exact scaling
# (two steps by 2^-floor(e/2), 2^-ceil(e/2), both representable; bs >= 2^-28,
# and every intermediate lies between b and bs, so nothing is rounded), and
# the result is RN(v' 2^e), v' = sqrt(as^2 + bs^2) in [1, 2.83).
#
# Double-double evaluation of v': as^2 = p1 + e1 and bs^2 = p2 + e2 exactly
# (two_prod; bs^2 >= 2^-56, no underflow), S = sh + sl by dd_add (positive
# terms: relative error < 2^-104); h = RN(sqrt(sh)); l = (sh - h^2 + sl)/(2h)
# with h^2 = q + qe exact, sh - q exact (Sterbenz), two more roundings of a
# value below 2^-51 S (< 2^-103 S absolutely) and the division (2^-53 of
# |l| <= 2^-52 h).  The omitted second-order term (S - h^2)^2/(8 h^3) is below
# 2^-107 h.  So |h + l - v'| < 2^-102 v'; the bracket uses 2^-98, and each end
# is scaled back by one multiplication by 2^e (`to_grid`: exact, or rounding
# to inf where the result overflows).  Where the result may be subnormal
# (e < -1021) the ends are rounded outward instead (`bracket_outward`), so
# that each is rounded once onto the subnormal grid.
#
# Decision (exact64.py), against the midpoint m after a candidate double:
# v > m  <=>  a^2 + b^2 > m^2  <=>
#   A^2 2^(2 (ea - E)) + B^2 2^(2 (eb - E)) > M^2 2^(2 (km - E)),   E = min(eb, km)
# with a = A 2^ea, b = B 2^eb, m = M 2^km.  Since b > 2^-28 a, ea - eb < 29;
# the lower window end is at least the double below a, so km >= ea - 2, and
# m < 1.5 a gives km <= ea + 1.  The terms are below 2^164, 2^106 and 2^170:
# the 320-bit integers hold them.  Ties (a^2 + b^2 = m^2 exactly) exist
# (scaled Pythagorean triples) and go to the even double; m = 2^1024 - 2^970
# (the overflow threshold, lower end DBL_MAX) ties to inf, as IEEE rounding does.

NAN64 = F64(np.nan)
INF64 = F64(np.inf)
ZERO64 = F64(0.0)
TWO_P28 = F64(2.0**28)
REL_2M98 = F64(2.0**-98)
SUBNORMAL_SCALE = -1021  # a < 2^-1021: the result may be subnormal (v < 2.83 * 2^-1022)


@jitable
def _hypot_ends(x, y, rel):
    """(lo, hi, True) with lo <= RN(hypot) <= hi from the double-double
    evaluation (bracket half-width rel), or (result, result, False) where the
    result is known without it (infinities, NaN, b <= 2^-28 a)."""
    a = fabs(x)
    b = fabs(y)
    if a == INF64 or b == INF64:
        return INF64, INF64, False
    if x != x or y != y:
        return NAN64, NAN64, False
    if a < b:
        a, b = b, a
    if mul_rn(b, TWO_P28) <= a:
        return a, a, False  # also hypot(+-0, +-0) = +0
    f, e = split_exponent(a)
    e1 = e // 2
    bs = mul_rn(mul_rn(b, pow2_any(-e1)), pow2_any(e1 - e))
    p1, q1 = two_prod(f, f)
    p2, q2 = two_prod(bs, bs)
    sh, sl = dd_add(p1, q1, p2, q2)
    h = sqrt_rn(sh)
    q, qe = two_prod(h, h)
    l = div_rn(add_rn(sub_rn(sub_rn(sh, q), qe), sl), add_rn(h, h))
    if e < SUBNORMAL_SCALE:
        lo, hi = bracket_outward(h, l, rel)
    else:
        lo, hi = bracket(h, l, rel)
    scale = pow2_any(e)
    return to_grid(lo, scale), to_grid(hi, scale), True


@jitable
def hypot_f64_window(x, y, rel):
    """hypot_f64 with the bracket's relative half-width as a parameter (any
    2^-98 <= rel <= 2^-56 gives the same bits; tests widen it to exercise
    the exact decision)."""
    lo, hi, finite = _hypot_ends(x, y, rel)
    if not finite:
        return lo
    a = fabs(x)
    b = fabs(y)
    if a < b:
        a, b = b, a
    aa, ea = significand(a)
    bb, eb = significand(b)
    r = lo
    while r != hi:
        mm, km = midpoint_of(r)
        base = eb if eb < km else km
        lhs = wide_add(wide_shl(wide_mul(wide(aa), aa), 2 * (ea - base)),
                       wide_shl(wide_mul(wide(bb), bb), 2 * (eb - base)))
        c = wide_cmp(lhs, wide_shl(wide_mul(wide(mm), mm), 2 * (km - base)))
        if c <= 0:
            return settle(r, c)
        r = next_up(r)
    return r


# --------------------------------------------------------------------------- fast path, branch-free
#
# hypot_fast64 evaluates the same double-double v' for 2^-1000 <= a <= 2^1000
# and b > 2^-28 a with selects only (a = max(|x|, |y|), b = min), so that the
# CPU launcher's first loop vectorises:
# * 2^-e from a's exponent bits (-1000 <= e <= 1000: a normal power of two),
#   f = a 2^-e in [1, 2) and bs = b 2^-e >= 2^-28 exactly.
# * S = f^2 + bs^2: p1 + q1 and p2 + q2 exactly (two_prod), (sh, t) = p1 + p2
#   exactly (fast_two_sum, p1 >= p2), sl = RN(RN(q1 + q2) + t): |q1|, |q2| <=
#   2^-53 p1 and |t| <= 2^-53 sh, two roundings of at most 3 2^-53 sh: S =
#   sh + sl within 2^-103.4 S (the longer dd_add is not needed: its extra
#   steps keep the loop from vectorising).  sl is not renormalised: |sl| <=
#   3.01 2^-53 sh.
# * h = RN(sqrt(sh)), l = RN(RN(RN(sh - q) - qe) + sl)/RN(2h)) with h^2 = q + qe
#   exact (sh - q exact, Sterbenz): as in the module's evaluation above, the
#   roundings of a value below 2^-50.4 S and the omitted (S - h^2)^2/(8 h^3) <
#   2^-105 h: |h + l - v'| < 2^-102 v'; the window 2^-98 h (exact64.bracket_err
#   needs 2 2^-102 v' + 2^-52 |l| < 2^-100 h).
# * the ends lie in [1, 2.83), the result v' 2^e is a normal double (e >=
#   -1000), RN(v' 2^e) = RN(v') 2^e, exact.
# An exact result (v' a double: Pythagorean triples) has l = 0 and both ends
# round to h; a midpoint leaves the window undecided, for the exact decision.
# Infinities (inf even with a NaN), NaN and b <= 2^-28 a (the result a, +0 for
# two zeros) are selected; everything else is undecided: a outside
# [2^-1000, 2^1000] and the windows that hold a rounding boundary.
_HYPOT_FAST_LO = F64(2.0**-1000)
_HYPOT_FAST_HI = F64(2.0**1000)
ONE64 = F64(1.0)
_EXP_BITS = np.uint64(0x7FF0000000000000)
_TWO_EXP_BIAS = np.uint64(0x7FE0000000000000)  # bits(2^-e) = 0x7FE... - bits(2^e) for a normal 2^e


@jitable
def hypot_eval_fast64(a, b):
    """(h, l, 2^e): sqrt(a^2 + b^2) = (h + l) 2^e within 2^-102 relatively,
    1 <= h < 2.83, for 2^-1000 <= a <= 2^1000 and 2^-28 a < b <= a (above);
    branch-free."""
    scale_bits = bitcast(a) & _EXP_BITS
    inv = bitcast(_TWO_EXP_BIAS - scale_bits)
    f, bs = mul_rn(a, inv), mul_rn(b, inv)
    p1, q1 = two_prod(f, f)
    p2, q2 = two_prod(bs, bs)
    sh, t = fast_two_sum(p1, p2)
    sl = add_rn(add_rn(q1, q2), t)
    h = sqrt_rn(sh)
    q, qe = two_prod(h, h)
    l = div_rn(add_rn(sub_rn(sub_rn(sh, q), qe), sl), add_rn(h, h))
    return h, l, bitcast(scale_bits)


@jitable
def hypot_fast64(x, y):
    """(hypot(x, y) correctly rounded, True), or (anything, False) where the
    fast path cannot decide (above); branch-free."""
    inline_into_callers()
    ax, ay = fabs(x), fabs(y)
    a = ax if ax >= ay else ay
    b = ay if ax >= ay else ax
    inside = (a >= _HYPOT_FAST_LO) & (a <= _HYPOT_FAST_HI) & (mul_rn(b, TWO_P28) > a)
    h, l, scale = hypot_eval_fast64(a if inside else ONE64, b if inside else ONE64)
    lo, hi = bracket_err(h, l, mul_rn(h, REL_2M98))
    r = mul_rn(lo, scale)
    small = mul_rn(b, TWO_P28) <= a
    r = a if small else r
    nan = (x != x) | (y != y)
    r = NAN64 if nan else r
    infinite = (ax == INF64) | (ay == INF64)
    r = INF64 if infinite else r
    return r, (inside & (lo == hi)) | small | nan | infinite


@jitable
def hypot_f64(x, y):
    return hypot_f64_window(x, y, REL_2M98)
