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
The first of three steps (`sigmoid_fast64`) evaluates -700 <= x <= 40 from
the faster explog64.exp_by_exp2_fast instead (< 2^-69.1, argued above it);
what it cannot decide goes to the double-double path, then the
triple-double one.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, div_rn, fabs, jitable, mul_rn, negate
from .core import (abs32, F64, NAN32, ONE, WIDE_WINDOW_HI, WIDE_WINDOW_LO, ZERO, clamp, dd_add, dd_div,
                   dd_to_f32, fast_two_sum, exp_core_short, exp_dd, pow2, round_if_within)
from .exact64 import bracket_err
from .trig64 import dd_div_fast
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


# The fast path for -700 <= x <= 40: t = e^-|x| = (h + low) 2^q from
# explog64.exp_by_exp2_fast (within 2^-69.2 relative; q >= -1011, 2^q a
# normal double), normalized exactly (fast_two_sum) to h + l, |l| <= 2^-53 h.
# So t' = (h + l) 2^q = t (1 + eps), |eps| < 2^-69.2.  Then 1 + t' from the
# scaled parts: (s, e) = 1 + h 2^q exactly (fast_two_sum), |e| <= 2^-53, and
# e + l 2^q rounds once, by < 2^-53 (2^-53 + 2^-51.99) < 2^-104 <= 2^-104 (1 + t');
# the final fast_two_sum is exact.  (dd_add's longer sum, for the same bound,
# is not needed: 1 is the larger term.)  Where q < -200 the parts are scaled
# by 2^-200 instead: that t'' < 2^-199 is as far from t' as both are from 0,
# and 1 + t'' is 1 + t' within 2^-199; without the floor, l 2^q is subnormal
# below x = -671, and x86 takes a microcode assist of about a hundred cycles
# for each subnormal result.  Then one trig64.dd_div_fast (< 2^-100) of the
# numerator 1 (x >= 0) or h + l (x < 0, the result scaled by 2^q).  The two
# quotients depend on t' as 1/(1 + t') = (1/(1 + t)) (1 - eps t/(1 + t')) and
# t'/(1 + t') = (t/(1 + t)) (1 + eps/(1 + t')) (t <= 1): their relative errors
# are < 2^-69.2 + 2^-104 + 2^-100 + 2^-198 < 2^-69.1.  The value scaled by 2^q
# is at least e^-700/2 > 2^-1011, a normal double: RN(h' + l') 2^q is exact and
# is the rounded result.  The rounding test (exact64.bracket_err) needs
# err >= 2 * 2^-69.1 |v| + 2^-52 |l'| < 2^-68.0 |h'|; it uses 2^-67 |h'|.
SIGMOID64_FAST_LO = F64(-700.0)
SIGMOID64_FAST_EPS = F64(2.0**-67)
SIGMOID64_QF_FLOOR = np.int64(-200) << np.int64(52)  # explog64.exp2_sum_fast's q 2^52 for q = -200


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
    h, low, qf = exp_by_exp2_fast(negate(fabs(x)) if inside else ZERO)
    h, l = fast_two_sum(h, low)
    s = scale_normal(ONE, max(qf, SIGMOID64_QF_FLOOR))
    dh, e = fast_two_sum(ONE, mul_rn(h, s))
    dh, dl = fast_two_sum(dh, add_rn(e, mul_rn(l, s)))
    positive = x >= ZERO64
    th, tl = dd_div_fast(ONE if positive else h, ZERO if positive else l, dh, dl)
    lo, hi = bracket_err(th, tl, mul_rn(th, SIGMOID64_FAST_EPS))
    r = lo if positive else scale_normal(lo, qf)
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
