"""expm1(x) = e^x - 1 for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Overflow above x = 88.7228 (clamp at 89).  For x < -17.33, e^x < 2^-25 and
e^x - 1 rounds to -1 (the midpoint between -1 and its float32 neighbour
-(1 - 2^-24) is -1 + 2^-25); the clamp uses -18.

Fast path: `expm1_core` (relative error < 2^-50, no cancellation: the
polynomial is used directly for |x| <= ln2/2).  expm1(+-0) = +-0 through it.
`expm1_fast` is that step alone, branch-free, for the CPU's vectorised first
loop.
Accurate path: exp_dd(x) - 1 in double-double.  It only runs where the fast
path cannot decide, which never happens for |x| < 2^-25: there e^x - 1 =
x (1 + x/2 + ...) is within 2^-26 |x| of the float32 x, while rounding
boundaries are at least 2^-25 |x| away from it.  For |x| >= 2^-25 the absolute
error 2^-92 e^x becomes a relative error < 2^-67.

float64 (`expm1_f64`, correctly rounded; scheme: multiword.py):
* |x| < 2^-54: e^x - 1 = x (1 + x/2 + ...) is within 2^-55 |x| of x, less
  than half the spacing around x: the result is x (+-0 and subnormals too).
* |x| < 2^-5: the Taylor series x (1 + x/2! + ... ): double-double to degree
  13 (omitted < |x|^13/14! < 2^-101 relative; terms of degree >= 9, below
  2^-58.5 relative, in double; eight dd Horner steps < 2^-102 each, the
  factor |x| <= 2^-5 shrinking the earlier ones), < 2^-100; triple-double to
  degree 19 (omitted < 2^-156), < 2^-149.
* otherwise e^x 2^q from explog64's cores, scaled exactly by 2^q (q < 200),
  minus 1 (dd_add < 2^-104, td_add < 2^-152 relatively): e^x's relative
  error becomes e^x/|e^x - 1| <= 32.5 times larger (|x| >= 2^-5): < 2^-95.9
  (fast; the rounding test uses an absolute bound from both terms) and
  < 2^-143.9.  For q >= 200 the -1 is below 2^-199 relatively: the result is
  e^x rounded, with that term counted in the error.
* x > 709.79: inf; x < -38: e^x < 2^-54 and e^x - 1 rounds to -1.
The first of three steps (`expm1_fast64`) evaluates the same two ways in
plain double, with the series up to 2^-7 and explog64.exp_dd_fast above it
(< 2^-66.6 and < 2^-71.08, argued above it); what it cannot decide goes to
the double-double path (`expm1_dd_fast64`), then the triple-double one.
"""

from fractions import Fraction
from math import factorial

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, fabs, fma_rn, jitable, mul_rn, negate
from .core import (F2H, F2L, F3H, F3L, F4H, F4L, F5H, F5L, F6H, F6L, F7H, F7L, F8H, F8L, F64, INF32, ONE, ZERO,
                   ZERO32, dd_add, dd_mul, dd_to_f32, exp_dd, expm1_core, fast_two_sum, outside_range, pow2,
                   round_if_safe, two_prod, two_sum)
from .explog64 import (C9, C10, C11, C12, C13, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15, T16,
                       T17, T18, T19, TD_ONE, exp_dd as exp_dd64, exp_dd_fast, exp_td, td_horner_step)
from .exact64 import bracket_err
from .multiword import dd_error, td_add, td_mul, td_round, td_scale, ziv_round

EXPM1_OVERFLOW = np.float32(89.0)
EXPM1_SATURATE = np.float32(-18.0)
MINUS_ONE32 = np.float32(-1.0)

@jitable
def expm1_fast(x):
    """(expm1(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide.  Branch-free: an x outside [-18, 89] (NaN included)
    evaluates expm1_core(0), whose result is discarded, and inf, -1 or NaN
    is selected."""
    inline_into_callers()
    inside = (x >= EXPM1_SATURATE) & (x <= EXPM1_OVERFLOW)
    r, ok = round_if_safe(expm1_core(F64(x if inside else ZERO32)))
    return outside_range(x, r, ok, EXPM1_SATURATE, EXPM1_OVERFLOW, MINUS_ONE32, INF32)


@jitable
def expm1_f32(x):
    r, ok = expm1_fast(x)
    if ok:
        return r
    z = F64(x)
    eh, el = exp_dd(z, ZERO)
    h, l = dd_add(eh, el, negate(ONE), ZERO)
    return dd_to_f32(h, l)


EXPM1_64_OVERFLOW = F64(709.79)
EXPM1_64_SATURATE = F64(-38.0)
EXPM1_64_TINY = F64(2.0**-54)
EXPM1_64_SERIES = F64(2.0**-5)
EXPM1_64_SERIES_EPS = F64(2.0**-98)
EXPM1_64_EXP_EPS = F64(2.0**-99)  # exp_dd's < 2^-101, with room for the scaling and the sum
EXPM1_64_SUM_EPS = F64(2.0**-101)
INF64 = F64(np.inf)
MINUS_ONE64 = F64(-1.0)
SCALE_LIMIT = np.int64(200)


@jitable
def expm1_series_dd(x):
    """x (1 + x/2! + ... + x^12/13!) in double-double for |x| < 2^-5."""
    d = fma_rn(x, C13, C12)
    d = fma_rn(x, d, C11)
    d = fma_rn(x, d, C10)
    d = fma_rn(x, d, C9)
    h, l = dd_mul(d, ZERO, x, ZERO)
    h, l = dd_add(h, l, F8H, F8L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F7H, F7L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F6H, F6L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F5H, F5L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F4H, F4L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F3H, F3L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F2H, F2L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, ONE, ZERO)
    return dd_mul(h, l, x, ZERO)


@jitable
def expm1_series_td(x):
    """x (1 + x/2! + ... + x^18/19!) in triple-double for |x| < 2^-5."""
    ph, pm, pl = T19
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T18)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T17)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T16)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T15)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T14)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T13)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T12)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T11)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T10)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T9)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T8)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T7)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T6)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T5)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T4)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T3)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T2)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, TD_ONE)
    return td_mul(ph, pm, pl, x, ZERO, ZERO)


@jitable
def pow2_small(q):
    """2^q as a double for -1022 <= q <= 1023 (bits: exact)."""
    return bitcast(np.uint64(q + np.int64(1023)) << np.uint64(52))


@jitable
def expm1_dd_fast64(x):
    """(expm1(x) correctly rounded, True), or (undecided, False) where the
    double-double path cannot decide (the module docstring's bounds)."""
    if x != x:
        return x, True
    if x > EXPM1_64_OVERFLOW:
        return INF64, True
    if x < EXPM1_64_SATURATE:
        return MINUS_ONE64, True
    a = fabs(x)
    if a < EXPM1_64_TINY:
        return x, True
    if a < EXPM1_64_SERIES:
        h, l = expm1_series_dd(x)
        return ziv_round(h, l, dd_error(h, EXPM1_64_SERIES_EPS), np.int64(0))
    h, l, q = exp_dd64(x, ZERO)
    if q >= SCALE_LIMIT:
        return ziv_round(h, l, dd_error(h, EXPM1_64_EXP_EPS), q)
    s = pow2_small(q)
    hs, ls = mul_rn(h, s), mul_rn(l, s)
    vh, vl = dd_add(hs, ls, MINUS_ONE64, ZERO)
    err = add_rn(dd_error(hs, EXPM1_64_EXP_EPS), dd_error(vh, EXPM1_64_SUM_EPS))  # rounded: < 2^-52 of it
    return ziv_round(vh, vl, err, np.int64(0))


# --------------------------------------------------------------------------- fast path in double
#
# For 2^-54 <= |x| < 2^-7: expm1(x) = x + x^2/2 + x^3 P(x), P = 1/3! + x/4! +
# ... + x^6/9! (Taylor; the rest < |x|^10/10! / (1 - |x|/11) < 2^-84.8 |x|).
# * x^2 = wh + wl exactly (two_prod; x^2 >= 2^-108, no underflow), wh/2 and
#   wl/2 exact, (a, b) = x + wh/2 exactly (fast_two_sum: |wh/2| < |x|).
# * P by Horner in double (fma): RN(1/6) and the last rounding are within
#   2^-56 each of P > 1/6.1, the earlier steps scaled by |x| <= 2^-7: within
#   2^-52.3 P.  t = RN(RN(wh x) q): wh's own rounding, two more, and q's:
#   < 2^-50.8 |x^3 P|, and |x^3 P| < 2^-14 * 0.1681 |x| = 2^-16.57 |x|:
#   < 2^-67.4 |x|.
# * c = RN(t + wl/2) (|.| < 2^-16.5 |x|: < 2^-69.5 |x|), then b + c rounds
#   (< 2^-69.5 |x|).  So a + (b + c) is expm1(x) within 2^-66.7 |x|, and
#   |expm1(x)| >= |x| (1 - |x|/2) > 0.996 |x|: < 2^-66.6 relatively.
#
# For 2^-7 <= |x|, -38 <= x <= 709.7: e^x = (h + l) 2^q from
# explog64.exp_dd_fast (relative error < 2^-78.1; q >= -55, q <= 1023, so
# h 2^q and l 2^q are exact: normal doubles, e^709.7 < 2^1023.9), then
# (s, e) = h 2^q - 1 exactly (two_sum), e + l 2^q rounds once and (vh, vl)
# = s + that exactly (fast_two_sum).  e^x's error becomes e^x/|e^x - 1| <=
# e^(2^-7)/(e^(2^-7) - 1) < 128.6 times larger relatively (the worst case is
# the smallest |x|): < 2^-78.1 * 2^7.01 = 2^-71.09; the rounding of e + l 2^q
# is < 2^-53 (ulp(s)/2 + 2^-52 e^x) < 2^-97 |e^x - 1|: < 2^-71.08 in all.
#
# The rounding test (exact64.bracket_err) needs err >= 2E |v| + 2^-52 |l|:
# 2^-64 |h| for the series (a margin of 2^1.6) and 2^-68 |h| above it (a
# margin of 2^2.08).  expm1 of a nonzero double is never a double or a
# midpoint (e^x is transcendental), so only the window leaves an argument
# undecided: about one in 2^11 of the series range, one in 2^15 above.
EXPM1_64_FAST_SERIES = F64(2.0**-7)
EXPM1_64_FAST_HI = F64(709.7)
EXPM1_64_SERIES_FAST_EPS = F64(2.0**-64)
EXPM1_64_EXP_FAST_EPS = F64(2.0**-68)
(_X3, _X4, _X5, _X6, _X7, _X8, _X9) = (F64(float(Fraction(1, factorial(n)))) for n in range(3, 10))
HALF64 = F64(0.5)
ONE64 = F64(1.0)


@jitable
def expm1_series_fast(x):
    """expm1(x) as a double-double for 2^-54 <= |x| < 2^-7, relative error
    < 2^-66.6 (the series above)."""
    wh, wl = two_prod(x, x)
    a, b = fast_two_sum(x, mul_rn(wh, HALF64))
    p = fma_rn(x, _X9, _X8)
    p = fma_rn(x, p, _X7)
    p = fma_rn(x, p, _X6)
    p = fma_rn(x, p, _X5)
    p = fma_rn(x, p, _X4)
    p = fma_rn(x, p, _X3)
    c = fma_rn(wl, HALF64, mul_rn(mul_rn(wh, x), p))
    return a, add_rn(b, c)


@jitable
def expm1_exp_fast(x):
    """e^x - 1 as a double-double for 2^-7 <= |x|, -38 <= x <= 709.7,
    relative error < 2^-71.08 (above)."""
    h, l, q = exp_dd_fast(x)
    s = pow2(q)
    vh, e = two_sum(mul_rn(h, s), MINUS_ONE64)
    return fast_two_sum(vh, add_rn(e, mul_rn(l, s)))


@jitable
def expm1_fast64(x):
    """(expm1(x) correctly rounded, True), or (anything, False) where the fast
    path cannot decide: the series for 2^-54 <= |x| < 2^-7, e^x - 1 from
    exp's fast path for 2^-7 <= |x|, -38 <= x <= 709.7 (above); x for |x|
    < 2^-54 (+-0 and subnormals too), inf above 709.79, -1 below -38, and
    NaN.  Branch-free (both evaluations run on substituted arguments and
    one is selected), so that the CPU launcher vectorises it.  Undecided:
    the arguments whose window holds a rounding boundary, and 709.7 < x <=
    709.79, which `expm1_f64` hands to the double-double path."""
    inline_into_callers()
    a = fabs(x)
    series = (a >= EXPM1_64_TINY) & (a < EXPM1_64_FAST_SERIES)
    exp_range = (a >= EXPM1_64_FAST_SERIES) & (x >= EXPM1_64_SATURATE) & (x <= EXPM1_64_FAST_HI)
    sh, sl = expm1_series_fast(x if series else EXPM1_64_TINY)
    eh, el = expm1_exp_fast(x if exp_range else ONE64)
    h = sh if series else eh
    l = sl if series else el
    eps = EXPM1_64_SERIES_FAST_EPS if series else EXPM1_64_EXP_FAST_EPS
    lo, hi = bracket_err(h, l, mul_rn(fabs(h), eps))
    above, below = x > EXPM1_64_OVERFLOW, x < EXPM1_64_SATURATE
    exact = (a < EXPM1_64_TINY) | (x != x)
    r = INF64 if above else lo
    r = MINUS_ONE64 if below else r
    r = x if exact else r
    return r, ((series | exp_range) & (lo == hi)) | above | below | exact


@jitable
def expm1_f64(x):
    """expm1 for float64, correctly rounded: the fast path in double, else the
    double-double one, else triple-double (module docstring)."""
    r, ok = expm1_fast64(x)
    if ok:
        return r
    r, ok = expm1_dd_fast64(x)
    if ok:
        return r
    if fabs(x) < EXPM1_64_SERIES:
        h, m, l = expm1_series_td(x)
        return td_round(h, m, l, np.int64(0))
    h, m, l, q = exp_td(x, ZERO, ZERO)
    if q >= SCALE_LIMIT:
        return td_round(h, m, l, q)
    h, m, l = td_scale(h, m, l, pow2_small(q))
    h, m, l = td_add(h, m, l, MINUS_ONE64, ZERO, ZERO)
    return td_round(h, m, l, np.int64(0))
