"""sigmoid(x) = 1 / (1 + e^-x) for float32, rounded once (scheme: softrep/algorithms/math/core.py).

With t = e^-|x| in (0, 1]: sigmoid(x) = 1/(1 + t) for x >= 0 and t/(1 + t) for
x < 0 (the same value, without overflow).  sigmoid(x) < 2^-150 rounds to +0
for x < -103.97.  For x > 17.33, t < 2^-25 and the result rounds to 1.

Fast path: 1/(1 + T) with T = exp_core_short(-x) for x limited to [-120, 120]
(T up to e^120 < 2^174, a double; the ends' results, +0 and 1, are those of
everything beyond; a NaN passes through and is left to the accurate path):
T = e^-x (1 + e) with |e| < 2^-40.1; 1 + T and the division round once each.
T's error moves 1/(1 + T) by a factor 1 - e T/(1 + T) (to first order), so
by at most 2^-40.1 for every x, with no cancellation; with the two
roundings < 2^-40.1 + 2^-52 < 2^-40, decided by `round_if_within` the wide
window 2^-39.  (One formula for both signs: the select of the numerator t
or 1 by the sign of x cost the AVX2 loop a fifth of its time.)
Accurate path: the same in double-double from exp_dd (< 2^-91).

float64 (`sigmoid_f64`, correctly rounded; scheme: multiword.py): t = e^-|x| =
(h + l) 2^q from explog64 (< 2^-101 / < 2^-149), then
* x >= 0: 1/(1 + t), t scaled exactly (q >= -58): 1 + t (no cancellation,
  dd_add < 2^-104, td_add < 2^-152) and the division (< 2^-100 / < 2^-148):
  < 2^-99 (rounding test 2^-96) and < 2^-147 relative.
* x < 0: t/(1 + t) = (h + l)/(1 + (h + l) 2^q) times 2^q, rounded once with
  the scale (subnormal results below x = -708.4 included); for q < -160 the
  denominator is 1 to within 2^-159 and is left out.  Same bounds.
* |x| < 2^-30: sigmoid(x) = 1/2 + x/4 - x^3/48 + x^5/480 - ..., rounded exactly
  by `round_sum` (RN of 1/2 + x/4 + c with c = RN(-x^3/48)): 1/2 + x/4 is
  exact in the sum, and either it is a midpoint, which the sign of the cubic
  term decides (the quintic one is 2^-60 x^2 times smaller), or it lies at
  least ulp(x/4) >= 2^-55 |x| from every midpoint, far beyond the cubic term
  (< 2^-64 |x|).  This is the one place where no error bound would do: for
  x = -2^-53 the value is 2^-164 above a midpoint.
* x > 40: 1; x < -745.2: +0.
The first of three steps (`sigmoid_fast64`) evaluates -700 <= x <= 40 as
2^-q/(2^-q + h + low) from the faster explog64.exp_by_exp2_fast's e^-x =
(h + low) 2^q, for both signs (< 2^-68.99, argued above it); what it cannot
decide goes to the double-double path, then the triple-double one.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, div_rn, fabs, fma_rn, jitable, mul_rn, negate
from .core import (abs32, F64, NAN32, ONE, WIDE_WINDOW_HI, WIDE_WINDOW_LO, ZERO, clamp, dd_add, dd_div,
                   dd_to_f32, fast_two_sum, exp_core_short, exp_dd, pow2, round_if_within)
from .exact64 import bracket_err
from .explog64 import exp_by_exp2_fast, exp_dd as exp_dd64, exp_td, scale_normal
from .multiword import dd_error, round_sum, td_add, td_div, td_round, ziv_round

SIGMOID_HI = np.float32(120.0)
SIGMOID_LO = np.float32(-120.0)
ZERO_F32 = np.float32(0.0)

@jitable
def sigmoid_short(x):
    """sigmoid(x) in double for a float32 -120 <= x <= 120, 1/(1 + T) with
    T = exp_core_short(-x): relative error < 2^-40 (module docstring)."""
    inline_into_callers()
    return div_rn(ONE, add_rn(ONE, exp_core_short(negate(F64(x)))))


@jitable
def sigmoid_fast(x):
    """(sigmoid(x) correctly rounded, True), or (undecided, False) where the
    fast path cannot decide (module docstring).  Branch-free: x is limited to
    [-120, 120] by two selects (sigmoid(+-120) rounds to 1 and +0, as
    everything beyond does; a NaN passes through, fails the rounding test and
    is left to sigmoid_f32)."""
    inline_into_callers()
    return round_if_within(sigmoid_short(clamp(x, SIGMOID_LO, SIGMOID_HI)), WIDE_WINDOW_LO, WIDE_WINDOW_HI)


@jitable
def sigmoid_f32(x):
    r, ok = sigmoid_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    na = negate(F64(abs32(x)))
    th, tl = exp_dd(na, ZERO)
    dh, dl = dd_add(ONE, ZERO, th, tl)
    if x >= ZERO_F32:
        h, l = dd_div(ONE, ZERO, dh, dl)
    else:
        h, l = dd_div(th, tl, dh, dl)
    return dd_to_f32(h, l)


SIGMOID64_HI = F64(40.0)  # 1 - sigmoid(40) < e^-40 < 2^-57: rounds to 1
SIGMOID64_LO = F64(-745.2)  # sigmoid(x) < e^x < 2^-1075: rounds to +0
SIGMOID64_EPS = F64(2.0**-96)
SIGMOID64_DROP = np.int64(-160)  # x < 0 with q < -160: t < 2^-159, 1 + t is 1 for both paths
ONE64 = F64(1.0)
ZERO64 = F64(0.0)


SIGMOID64_TINY = F64(2.0**-30)
HALF64 = F64(0.5)
QUARTER64 = F64(0.25)
MINUS_1_48 = F64(-1.0 / 48.0)


# The fast path for -700 <= x <= 40, one formula for both signs: T = e^-x =
# (h + low) 2^q from explog64.exp_by_exp2_fast, T' = T (1 + eps0) with
# |eps0| < 2^-69.2 (argued there; h in [0.998, 2), |low| < 2^-19, q in
# [-58, 1010]).  With P = 2^-q (a normal double: bits(1) - q 2^52),
#
#     sigmoid(x) = 1/(1 + T) = P/D,  D = P + h + low,
#
# and the numerator is 1 whatever the sign of x: no select between 1 and T
# on the sign, and no quotient of two double-doubles.  Using T' for T
# multiplies 1/(1 + T) by 1/(1 + eps0 T/(1 + T)): < 2^-69.2 relative.
#
# D: P and h in order of magnitude (two selects), (s, e) = fast_two_sum of
# them, exact, |e| <= 2^-53 s (e is 0, +-P or a multiple of ulp(h): never
# subnormal); m = RN(e + low) rounds by at most 2^-53 (2^-53 + 2^-19) s
# < 2^-71.99 s (h <= s); (dh, dl) = fast_two_sum(s, m), exact and normalized.
# So dh + dl = D (1 + d1), |d1| < 2^-71.98.
#
# 1/(dh + dl): inv = RN(1/dh); rho = 1 - inv dh is a double (the residual of
# a correctly rounded reciprocal), so the inner fma is exact, |rho| <=
# 2^-53 inv dh; r = RN(rho - inv dl) (|inv dl| <= 2^-53 inv dh: the sum is
# below 2^-51.99 and rounds by < 2^-105); vl = RN(r inv) rounds by
# < 2^-104.99 inv.  With r' = 1 - inv (dh + dl) = r - (< 2^-105),
# 1/(dh + dl) = inv (1 + r' + r'^2/(1 - r')): vh + vl = inv + vl misses it
# by < inv (2^-105 + 2^-103.98 + 2^-104.99) < 2^-102.9 relative.
#
# Total: (vh + vl) 2^-q = sigmoid(x) (1 + eta), |eta| < 2^-69.2 + 2^-71.98 +
# 2^-102.9 < 2^-68.99 (measured: tests/test_mathlib_f64_fast.py).  The
# rounding test (exact64.bracket_err) needs err >= 2 |eta| v + 2^-52 |vl|
# (|vl| < 2^-51.9 vh) < 2^-67.98 vh: it uses 2^-67 vh.  The scaled result is
# at least sigmoid(-700) > 2^-1011, a normal double, so RN(vh + vl) 2^-q is
# exact and is the rounded result.  Every operand stays normal: P >= 2^-1010,
# inv >= 2^-59 (x86 takes a microcode assist of about a hundred cycles for a
# subnormal operand or result).
SIGMOID64_FAST_LO = F64(-700.0)
SIGMOID64_FAST_EPS = F64(2.0**-67)


@jitable
def sigmoid_eval_fast64(x):
    """(vh, vl, qf): sigmoid(x) = (vh + vl) 2^-q within 2^-68.99 relative, for
    -700 <= x <= 40 (the analysis above), qf = q 2^52 (for
    explog64.scale_normal with -qf), vh in [2^-59, 1.01], |vl| < 2^-51.9 vh.
    Branch-free."""
    inline_into_callers()
    h, low, qf = exp_by_exp2_fast(negate(x))
    p = scale_normal(ONE, -qf)
    p_larger = p > h
    s, e = fast_two_sum(p if p_larger else h, h if p_larger else p)
    dh, dl = fast_two_sum(s, add_rn(e, low))
    inv = div_rn(ONE, dh)
    return inv, mul_rn(fma_rn(negate(inv), dl, fma_rn(negate(inv), dh, ONE)), inv), qf


@jitable
def sigmoid_fast64(x):
    """(sigmoid(x) correctly rounded, True), or (anything, False) where the fast
    path cannot decide: for -700 <= x <= 40 (above), x > 40 (1) and x < -745.2
    (+0).  Branch-free (every case is evaluated and one selected; other
    arguments evaluate sigmoid(0)), so that the CPU launcher vectorises it.
    Undecided: about one argument in 2^14 of the evaluated range, NaN, the
    arguments near 0 whose 1/2 + x/4 lies within the window of a midpoint
    (x = -2^-53, and others with few significant bits: only the exact cubic
    of the module docstring decides them), and -745.2 <= x < -700
    (subnormal results); `sigmoid_f64` hands them to the double-double path.
    (The cubic's round_sum is left out here: its rounding to odd branches,
    and the loop would not vectorise.)"""
    inline_into_callers()
    inside = (x >= SIGMOID64_FAST_LO) & (x <= SIGMOID64_HI)
    vh, vl, qf = sigmoid_eval_fast64(x if inside else ZERO)
    lo, hi = bracket_err(vh, vl, mul_rn(vh, SIGMOID64_FAST_EPS))
    r = scale_normal(lo, -qf)
    above, below = x > SIGMOID64_HI, x < SIGMOID64_LO
    r = ONE64 if above else r
    r = ZERO64 if below else r
    return r, (inside & (lo == hi)) | above | below


@jitable
def sigmoid_dd_fast64(x):
    """(sigmoid(x) correctly rounded, True), or (undecided, False) where the
    double-double path cannot decide (< 2^-99, tested with 2^-96)."""
    if x != x:
        return x, True
    if x > SIGMOID64_HI:
        return ONE64, True
    if x < SIGMOID64_LO:
        return ZERO64, True
    if fabs(x) < SIGMOID64_TINY:
        # 1/2 + x/4 - x^3/48 + x^5/480 - ...: 1/2 + x/4 can be a midpoint exactly
        # (x = -2^-53), which only the cubic term decides, 2^-164 below it.
        return round_sum(HALF64, mul_rn(x, QUARTER64), mul_rn(mul_rn(mul_rn(x, x), x), MINUS_1_48)), True
    h, l, q = exp_dd64(negate(fabs(x)), ZERO)
    if x >= ZERO64:
        s = pow2(q)
        dh, dl = dd_add(ONE, ZERO, mul_rn(h, s), mul_rn(l, s))
        h, l = dd_div(ONE, ZERO, dh, dl)
        return ziv_round(h, l, dd_error(h, SIGMOID64_EPS), np.int64(0))
    if q >= SIGMOID64_DROP:
        s = pow2(q)
        dh, dl = dd_add(ONE, ZERO, mul_rn(h, s), mul_rn(l, s))
        h, l = dd_div(h, l, dh, dl)
    return ziv_round(h, l, dd_error(h, SIGMOID64_EPS), q)


@jitable
def sigmoid_f64(x):
    """sigmoid for float64, correctly rounded (module docstring)."""
    r, ok = sigmoid_fast64(x)
    if ok:
        return r
    r, ok = sigmoid_dd_fast64(x)
    if ok:
        return r
    h, m, l, q = exp_td(negate(fabs(x)), ZERO, ZERO)
    if x >= ZERO64:
        s = pow2(q)
        dh, dm, dl = td_add(ONE, ZERO, ZERO, mul_rn(h, s), mul_rn(m, s), mul_rn(l, s))
        h, m, l = td_div(ONE, ZERO, ZERO, dh, dm, dl)
        return td_round(h, m, l, np.int64(0))
    if q >= SIGMOID64_DROP:
        s = pow2(q)
        dh, dm, dl = td_add(ONE, ZERO, ZERO, mul_rn(h, s), mul_rn(m, s), mul_rn(l, s))
        h, m, l = td_div(h, m, l, dh, dm, dl)
    return td_round(h, m, l, q)
