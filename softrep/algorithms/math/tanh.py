"""tanh(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

tanh is odd: computed on |x| (tanh(+-0) = +-0).  For |x| > 9.01, 1 - tanh|x| <
2 e^(-2|x|) < 2^-25 and the result rounds to 1; the fast path gives +-1 above 20.

Fast path: tanh a = em / (em + 2) with em = expm1_core(2a) (2^-50, 2a exact);
em >= 0, so em + 2 and the division add one rounding each: < 2^-49.5.
Accurate path: em = exp_dd(2a) - 1 and em / (em + 2) in double-double; the
absolute error 2^-92 e^(2a) of em is < 2^-67 relatively for a >= 2^-25, and
below 2^-25 the fast path always decides (tanh a is within 2^-49 a of the
float32 a, rounding boundaries are 2^-25 a away).

float64 (`tanh_f64`, correctly rounded; scheme: multiword.py), on a = |x|,
tanh a = em/(em + 2) with em = e^(2a) - 1 > 0 (no cancellation in em + 2 or
the division):
* a < 2^-27: tanh a is within a^2/3 < 2^-55.5 a of a, less than half the
  spacing below a: the result is x (+-0, subnormals).
* a < 2^-6: em from expm1's series on 2a (exact): < 2^-100 / < 2^-149.
* otherwise em = e^(2a) 2^q - 1 (exact scaling, q <= 64): e^(2a)/em <= 32.5,
  so < 2^-96 / < 2^-144 relative.
* em + 2 (dd_add < 2^-104, td_add < 2^-152) and the division (dd_div < 2^-100,
  td_div < 2^-148): < 2^-95.4 (rounding test 2^-93) and < 2^-143.5.
* a > 22: 1 - tanh a < 2^-62, the result is +-1.
The first of three steps (`tanh_fast64`) evaluates 2^-6 <= a <= 22 from the
faster explog64.exp_dd_fast instead, and 2^-27 <= a < 2^-6 from tanh's own
series (< 2^-73, argued above it); what it cannot decide goes to the
double-double path, then the triple-double one.
"""

from fractions import Fraction

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, div_rn, fabs, fma_rn, jitable, mul_rn, negate
from .core import (abs32, neg32, signbit32, F64, NAN32, ONE, TWO, ZERO, dd_add, dd_div, dd_to_f32, exp_dd, expm1_core,
                    fast_two_sum, pow2, round_if_safe, two_prod, two_sum)
from .exact64 import bracket_err
from .trig64 import dd_div_fast
from .explog64 import exp_dd as exp_dd64, exp_td
from .expm1 import expm1_exp_fast, expm1_series_dd, expm1_series_td
from .multiword import dd_error, td_add, td_const, td_div, td_round, ziv_round

TANH_SATURATE = np.float32(20.0)
ONE_F32 = np.float32(1.0)
ZERO_F32 = np.float32(0.0)

@jitable
def tanh_fast(x):
    """(tanh(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide.  Branch-free: an |x| above the saturation bound (NaN
    included) evaluates tanh(0), and the specials are selected at the end
    (one select of the input, flags combined with `|`: as in exp_fast)."""
    inline_into_callers()
    ax = abs32(x)
    nan, saturated = x != x, ax > TANH_SATURATE
    em = expm1_core(mul_rn(F64(ax if ax <= TANH_SATURATE else ZERO_F32), TWO))
    r, ok = round_if_safe(div_rn(em, add_rn(em, TWO)))
    r = ONE_F32 if saturated else r
    r = neg32(r) if signbit32(x) else r
    r = NAN32 if nan else r
    return r, ok | saturated | nan


@jitable
def tanh_f32(x):
    r, ok = tanh_fast(x)
    if ok:
        return r
    a2 = mul_rn(F64(abs32(x)), TWO)
    eh, el = exp_dd(a2, ZERO)
    mh, ml = dd_add(eh, el, negate(ONE), ZERO)
    dh, dl = dd_add(mh, ml, TWO, ZERO)
    h, l = dd_div(mh, ml, dh, dl)
    r = dd_to_f32(h, l)
    if signbit32(x):
        return neg32(r)
    return r


TANH64_SATURATE = F64(22.0)  # 1 - tanh(22) < 2^-62: rounds to 1
TANH64_TINY = F64(2.0**-27)  # below, tanh a = a (1 - a^2/3 + ...) rounds to a
TANH64_SERIES = F64(2.0**-6)  # below, e^(2a) - 1 by expm1's series (2a < 2^-5)
TANH64_EPS = F64(2.0**-93)
ONE64 = F64(1.0)
ZERO64 = F64(0.0)
MINUS_ONE64 = F64(-1.0)
TWO64 = F64(2.0)


@jitable
def tanh_em_dd(a):
    """e^(2a) - 1 as a double-double for 2^-27 <= a <= 22 (module docstring)."""
    a2 = mul_rn(a, TWO64)
    if a < TANH64_SERIES:
        h, l = expm1_series_dd(a2)
        return h, l
    h, l, q = exp_dd64(a2, ZERO64)
    s = pow2(q)
    return dd_add(mul_rn(h, s), mul_rn(l, s), MINUS_ONE64, ZERO64)


# The fast path for 2^-6 <= a <= 22: em = e^(2a) - 1 from expm1.expm1_exp_fast
# (e^(2a) from explog64.exp_dd_fast, relative error < 2^-78.1; 2a exact, the
# scaling exact, the -1 by an exact two_sum and one rounding < 2^-97 |em|),
# so em is within 2^-78.1 * 32.5 + 2^-97 < 2^-73.07 of itself (e^(2a)/em <=
# e^(1/32)/(e^(1/32) - 1) < 32.5).  em + 2: an exact two_sum, and its low
# part plus em's in one rounding (< 2^-104 of the sum); em's error is
# 2^-78.1 e^(2a) + 2^-97 em absolutely, so em + 2 is within 2^-78.09 of
# itself.  The division (trig64.dd_div_fast: one division instead of
# core.dd_div's three) adds < 2^-100: < 2^-73 in all.
#
# For 2^-27 <= a < 2^-6, the odd series tanh a = a + a w P(w), w = a^2 <= 2^-12,
# P = -1/3 + 2/15 w - 17/315 w^2 + 62/2835 w^3 - 1382/155925 w^4 (alternating,
# decreasing terms: the rest < 21844/6081075 w^6 < 2^-80.1 of a).  w = wh + wl
# exactly (two_prod); P = (P1H + P1L) + wh R with -1/3 = P1H + P1L to 2^-107 and
# R (the last four terms over w) by Horner in double (< 2^-51.5 of |R| <=
# 0.134, times w^2: < 2^-78.4 of a); y = w P = wh P1H (exact two_prod) +
# (wl P1H + wh (P1L + wh R)) in fmas (< 2^-53 * 2^-14.8 w each: < 2^-79.8 of
# a); a y = a yh (exact) + a yl (one fma, < 2^-79.8 of a), added to a exactly
# (fast_two_sum) and the low parts in one rounding (< 2^-105): < 2^-77.1 in
# all, relative to tanh a > 0.9999 a.
#
# The rounding test (exact64.bracket_err) needs err >= 2 * 2^-73 |v| +
# 2^-52 |l|; it uses 2^-69 |h|, a margin of 2^3.
TANH64_FAST_EPS = F64(2.0**-69)
_P1H, _P1L = td_const(Fraction(-1, 3))[:2]
(_K2, _K3, _K4, _K5) = (F64(float(Fraction(n, d))) for n, d in ((2, 15), (-17, 315), (62, 2835), (-1382, 155925)))


@jitable
def tanh_series_fast(a):
    """tanh a as a double-double for 2^-27 <= a < 2^-6, relative error < 2^-77.1
    (the series above)."""
    wh, wl = two_prod(a, a)
    r = fma_rn(wh, _K5, _K4)
    r = fma_rn(wh, r, _K3)
    r = fma_rn(wh, r, _K2)
    yh, yl = two_prod(wh, _P1H)
    yl = fma_rn(wh, fma_rn(wh, r, _P1L), fma_rn(wl, _P1H, yl))
    ph, pl = two_prod(a, yh)
    pl = fma_rn(a, yl, pl)
    th, tl = fast_two_sum(a, ph)
    return th, add_rn(tl, pl)


@jitable
def tanh_exp_fast(a):
    """tanh a = em/(em + 2), em = e^(2a) - 1, as a double-double for 2^-6 <= a
    <= 22, relative error < 2^-73 (above)."""
    inline_into_callers()
    mh, ml = expm1_exp_fast(mul_rn(a, TWO64))
    dh, e = two_sum(mh, TWO64)
    dh, dl = fast_two_sum(dh, add_rn(e, ml))
    return dd_div_fast(mh, ml, dh, dl)


@jitable
def tanh_fast64(x):
    """(tanh(x) correctly rounded, True), or (anything, False) where the fast
    path cannot decide: for 2^-27 <= |x| <= 22 (above), and |x| < 2^-27 (x),
    |x| > 22 (+-1) and NaN.  Branch-free (both evaluations run and one is
    selected; other arguments evaluate tanh(0)), so that the CPU launcher
    vectorises it.  Undecided: about one argument in 2^15, which `tanh_f64`
    hands to the double-double path."""
    inline_into_callers()
    a = fabs(x)
    inside = (a >= TANH64_TINY) & (a <= TANH64_SATURATE)
    series = a < TANH64_SERIES
    th, tl = tanh_exp_fast(a if inside & (not series) else ONE64)
    sh, sl = tanh_series_fast(a if inside & series else TANH64_TINY)
    th = sh if series else th
    tl = sl if series else tl
    lo, hi = bracket_err(th, tl, mul_rn(th, TANH64_FAST_EPS))
    saturated = a > TANH64_SATURATE
    r = ONE64 if saturated else lo
    r = negate(r) if x < ZERO64 else r
    exact = (a < TANH64_TINY) | (x != x)
    r = x if exact else r
    return r, (inside & (lo == hi)) | saturated | exact


@jitable
def tanh_dd_fast64(x):
    """(tanh(x) correctly rounded, True), or (undecided, False) where the
    double-double path cannot decide (< 2^-95.4, tested with 2^-93)."""
    if x != x:
        return x, True
    a = fabs(x)
    if a < TANH64_TINY:
        return x, True
    if a > TANH64_SATURATE:
        r, ok = ONE64, True
    else:
        mh, ml = tanh_em_dd(a)
        dh, dl = dd_add(mh, ml, TWO64, ZERO64)
        h, l = dd_div(mh, ml, dh, dl)
        r, ok = ziv_round(h, l, dd_error(h, TANH64_EPS), np.int64(0))
    return (negate(r) if x < ZERO64 else r), ok


@jitable
def tanh_f64(x):
    """tanh for float64, correctly rounded (module docstring)."""
    r, ok = tanh_fast64(x)
    if ok:
        return r
    r, ok = tanh_dd_fast64(x)
    if ok:
        return r
    a = fabs(x)
    a2 = mul_rn(a, TWO64)
    if a < TANH64_SERIES:
        mh, mm, ml = expm1_series_td(a2)
    else:
        h, m, l, q = exp_td(a2, ZERO64, ZERO64)
        s = pow2(q)
        mh, mm, ml = td_add(mul_rn(h, s), mul_rn(m, s), mul_rn(l, s), MINUS_ONE64, ZERO64, ZERO64)
    dh, dm, dl = td_add(mh, mm, ml, TWO64, ZERO64, ZERO64)
    h, m, l = td_div(mh, mm, ml, dh, dm, dl)
    r = td_round(h, m, l, np.int64(0))
    return negate(r) if x < ZERO64 else r
