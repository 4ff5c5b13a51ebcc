"""log1p(x) = log(1 + x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Specials: NaN and x < -1 give NaN, log1p(-1) = -inf, log1p(+inf) = +inf,
log1p(+-0) = +-0 (through the series).

Fast path.  For sqrt(1/2) - 1 <= x <= sqrt(2) - 1, log1p(x) = 2 atanh(s) with
s = x/(2 + x), |s| <= 0.1716: 2 + x and the division round once each, s has
relative error < 2^-52 and `atanh_series` adds 2^-52: < 2^-50.5, with no
cancellation at any x.  Outside that range |log1p(x)| >= 0.34: 1 + x = u + c
exactly (two_sum), log(1 + x) = log(u) + log(1 + c/u) = log_core(u) + c/u to
within (c/u)^2 < 2^-106: relative error < 2^-50 + 2^-52.
Before it, the branch-free first step of the CPU's vector loop (`log1p_fast`,
`log1p_short`), decided in the wide window 2^-39: for |x| >= 2^-29, u = RN(1 + x)
is 1 + x exactly (x's lowest bit is at least 2^-52 and its highest below
2^53) or, for x >= 2^53, within 2^-53 of it, which moves log u by < 2^-53
against log1p(x) >= 36; log u by `core.log_core_short` (< 2^-42.9 for every
positive double below 2^129 and at least 2^-24, u's range).  For |x| < 2^-29,
RN(x - x^2/2) by one fma: the omitted x^3/3 is < 2^-59 |x|.  So < 2^-42.9.
Accurate path: log_dd(u, c) (one Newton step; relative error < 2^-67 since
|log1p(x)| >= 2^-25 whenever the fast path cannot decide: below, log1p(x) =
x (1 - x/2 + ...) is within 2^-26 |x| of the float32 x, while rounding
boundaries are at least 2^-25 |x| away from it).

float64 (`log1p_f64`, correctly rounded; scheme: multiword.py):
* |x| < 2^-54: log1p(x) = x (1 - x/2 + ...) is within 2^-55 |x| of x, less
  than half the spacing around x: the result is x (+-0, subnormals).
* |x| < 2^-4: explog64's atanh series on f = x itself (exact), < 2^-98 and
  < 2^-147 relative.  The accurate path for |x| < 2^-20 instead computes
  T = log1p(x) - x = x^2 (-1/2 + x/3 - x^2/4 + ... + x^8/10) (omitted
  < 2^-180 |T|; triple-double Horner in x, < 2^-150, times the exact x^2:
  < 2^-148 |T|) and rounds x + T exactly (`round_sum`; the rounding of
  Tm + Tl adds < 2^-106 |T|).  The error is then relative to T ~ x^2/2, not
  to x: < 2^-167 |x|, so inputs of the form m 2^-k with few bits, whose
  series terms nearly cancel their distance to a midpoint (CORE-MATH's list
  has one 2^-101 ulp away), are decided by the bound too.
* otherwise 1 + x = u + c exactly (two_sum), |c| <= ulp(u)/2, and
  log1p(x) = log(u) + log(1 + t), t = c/u (|t| <= 2^-53):
  log(1 + t) = t - t^2/2 + t^3/3 - ..., the t^3 term < 2^-159.  log u from
  explog64 (< 2^-95.5, < 2^-144); t by dd_div / td_div.  |log1p(x)| >=
  log(1 + 2^-4) > 2^-4.1 here, so t's errors (< 2^-153 absolutely) and the
  omitted terms are < 2^-149 relatively; the sum adds < 2^-104 / 2^-152:
  < 2^-95 (rounding test: 2^-93) and < 2^-143.9.
The first of three steps (`log1p_fast64`) evaluates in plain double: log's
series on x itself up to 2^-9, explog64.log_dd_fast(u) + c/u above it
(< 2^-67.8 and < 2^-66.99, argued above it); what it cannot decide goes to
the double-double path (`log1p_dd_fast64`), then the triple-double one.
"""

from fractions import Fraction

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, div_rn, fabs, fma_rn, jitable, mul_rn, negate
from .core import (F64, INF32, NAN32, ONE, TWO, WIDE_WINDOW_HI, WIDE_WINDOW_LO, atanh_series, dd_add, dd_div, dd_to_f32,
                   fast_two_sum, log_core, log_core_short, log_dd, round_if_safe, round_if_within, two_prod, two_sum)
from .exact64 import bracket_err
from .explog64 import (SERIES_LIMIT, log1p_series_dd, log1p_series_td, log_dd as log_dd64, log_finish_fast,
                       log_reduce_fast, log_split, log_td, td_horner_step)
from .multiword import dd_error, round_sum, td_add, td_const, td_div, td_mul, td_round, ziv_round

MINUS_ONE32 = np.float32(-1.0)
NEG_INF32 = np.float32(-np.inf)
SERIES_LO = F64(-0.2928932188134524)  # sqrt(1/2) - 1, rounded toward zero
SERIES_HI = F64(0.41421356237309503)  # sqrt(2) - 1, rounded toward zero

LOG1P_SMALL = F64(2.0**-29)  # below: 1 + x is not exact in double
MINUS_HALF = F64(-0.5)
ZERO_F32 = np.float32(0.0)


@jitable
def log1p_short(x):
    """log1p(x) in double for a float32 x > -1, finite: relative error
    < 2^-42.9 (module docstring)."""
    inline_into_callers()
    xd = F64(x)
    series = fma_rn(mul_rn(xd, MINUS_HALF), xd, xd)
    full = log_core_short(add_rn(ONE, xd))
    return series if fabs(xd) < LOG1P_SMALL else full


@jitable
def log1p_fast(x):
    """(log1p(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide: `log1p_short` in the wide window 2^-39.  Branch-free:
    log1p_short evaluates x whatever it is (no memory read), and outside
    -1 < x < inf (NaN included) the special result is selected, decided
    (-inf at -1, +inf at +inf, NaN elsewhere), as in log.log_times_fast;
    log1p(+-0) = +-0 (the series returns x)."""
    inline_into_callers()
    inside = (x > MINUS_ONE32) & (x < INF32)
    r, ok = round_if_within(log1p_short(x), WIDE_WINDOW_LO, WIDE_WINDOW_HI)
    special = NEG_INF32 if x == MINUS_ONE32 else NAN32
    special = INF32 if x == INF32 else special
    return (r if inside else special), ok | (not inside)


@jitable
def log1p_f32(x):
    r, ok = log1p_fast(x)
    if ok:
        return r
    if x != x or x < MINUS_ONE32:
        return NAN32
    if x == MINUS_ONE32:
        return NEG_INF32
    if x == INF32:
        return INF32
    xd = F64(x)
    if SERIES_LO <= xd and xd <= SERIES_HI:
        y = atanh_series(div_rn(xd, add_rn(TWO, xd)))
    else:
        u, c = two_sum(ONE, xd)
        y = add_rn(log_core(u), div_rn(c, u))
    r, ok = round_if_safe(y)
    if ok:
        return r
    u, c = two_sum(ONE, xd)
    h, l = log_dd(u, c)
    return dd_to_f32(h, l)


LOG1P_64_TINY = F64(2.0**-54)
LOG1P_64_NEAR = F64(2.0**-20)
# (-1)^(n+1)/n, n = 2 .. 10, as triple-doubles: log1p(x) - x = sum_n Q_n x^n
(Q2, Q3, Q4, Q5, Q6, Q7, Q8, Q9, Q10) = (td_const(Fraction((-1) ** (n + 1), n)) for n in range(2, 11))
LOG1P_64_EPS = F64(2.0**-93)
MINUS_ONE64 = F64(-1.0)
MINUS_HALF64 = F64(-0.5)
ZERO64 = F64(0.0)
INF64 = F64(np.inf)
NAN64 = F64(np.nan)


@jitable
def log1p_dd_fast64(x):
    """(log1p(x) correctly rounded, True), or (undecided, False) where the
    double-double path cannot decide (the module docstring's bounds)."""
    if x != x or x < MINUS_ONE64:
        return NAN64, True
    if x == MINUS_ONE64:
        return negate(INF64), True
    if x == INF64:
        return INF64, True
    a = fabs(x)
    if a < LOG1P_64_TINY:
        return x, True
    if a < SERIES_LIMIT:
        h, l = log1p_series_dd(x)
        return ziv_round(h, l, dd_error(h, LOG1P_64_EPS), np.int64(0))
    u, c = two_sum(ONE, x)
    e, m = log_split(u)
    lh, ll = log_dd64(e, m)
    th, tl = dd_div(c, ZERO64, u, ZERO64)
    tl = fma_rn(mul_rn(th, MINUS_HALF64), th, tl)  # - t^2/2
    h, l = dd_add(lh, ll, th, tl)
    return ziv_round(h, l, dd_error(h, LOG1P_64_EPS), np.int64(0))


# --------------------------------------------------------------------------- fast path in double
#
# One evaluation serves both ranges (a vector lane pays for every path it
# computes): explog64's log_reduce_fast on u, then log_finish_fast on r, the
# series' argument, with the table row i and the exponent ed.
# For 2^-54 <= |x| < 2^-9 ("near"): u = 1 and c = 0 are substituted, so r = 0,
# ed = 0, i = 0, and finishing with x itself in r's place gives
# explog64.log1p_series_fast(x) (T[0] = 0 and ed = 0 make every other term of
# the sum an exact zero), within 2^-67.9 |x|; c/u = 0 and both final sums are
# exact.  |log1p(x)| >= |x| (1 - |x|/2): relative error < 2^-67.8.
# For |x| >= 2^-9 (-1 < x < inf): 1 + x = u + c exactly (two_sum), |c| <=
# ulp(u)/2, u >= 2^-53 (x >= -1 is a multiple of 2^-53 below -1/2, where u =
# 1 + x is exact and c = 0), and log1p(x) = log u + log(1 + t), t = c/u, |t|
# <= 2^-53.  log u = lh + ll from log_finish_fast(log_reduce_fast(u)), which
# is explog64.log_dd_fast (< 2^-67.0 of |log u|, and |log u| <= |log1p(x)| +
# 2^-52.9); log(1 + t) ~ RN(c/u) within 2^-53 |t| + t^2/2 < 2^-105.4; (s, e)
# = lh + RN(c/u) exactly (fast_two_sum: |c/u| <= 2^-53 < |lh|, since
# |log1p(x)| >= log(1 + 2^-9) > 2^-9.003), e + ll rounds once (< 2^-104 |lh|),
# and the last fast_two_sum is exact.  Relative to |log1p(x)| > 2^-9.003:
# < 2^-67.0 (1 + 2^-43) + 2^-96.3 + 2^-104 < 2^-66.99.
# The rounding test (exact64.bracket_err) needs err >= 2E |v| + 2^-52 |l|;
# both use 2^-65.5 |h|, as log_fast64 (a margin of 2^0.49 over 2 * 2^-66.99 +
# 2^-104).  log1p of a nonzero double is never a double or a midpoint (it is
# transcendental), so only the window leaves an argument undecided: about one
# in 2^12.
LOG1P_64_FAST_NEAR = F64(2.0**-9)
LOG1P_64_FAST_EPS = F64(2.0**-65.5)


@jitable
def log1p_value_fast(x, near):
    """log1p(x) as a double-double: the series on x itself where `near`
    (2^-54 <= |x| < 2^-9, relative error < 2^-67.8), else log(1 + x) for
    |x| >= 2^-9, -1 < x < inf (< 2^-66.99); one evaluation (above)."""
    u, c = two_sum(ONE, x)
    u = ONE if near else u
    c = ZERO64 if near else c
    r, ed, i = log_reduce_fast(u)
    lh, ll = log_finish_fast(x if near else r, ed, i)
    s, e = fast_two_sum(lh, div_rn(c, u))
    return fast_two_sum(s, add_rn(e, ll))


@jitable
def log1p_fast64(x):
    """(log1p(x) correctly rounded, True), or (anything, False) where the fast
    path cannot decide: the series for 2^-54 <= |x| < 2^-9, log(1 + x) from
    log's fast path for |x| >= 2^-9 (above); x for |x| < 2^-54 (+-0 and
    subnormals too), NaN for x < -1 and NaN, -inf at -1, inf at inf.
    Branch-free (one evaluation on substituted arguments, the specials
    selected), so that the CPU launcher vectorises it.  What it cannot decide
    `log1p_f64` hands to the double-double path."""
    inline_into_callers()
    a = fabs(x)
    near = (a >= LOG1P_64_TINY) & (a < LOG1P_64_FAST_NEAR)
    far = (a >= LOG1P_64_FAST_NEAR) & (x > MINUS_ONE64) & (x < INF64)
    h, l = log1p_value_fast(x if near | far else ONE, near)
    lo, hi = bracket_err(h, l, mul_rn(fabs(h), LOG1P_64_FAST_EPS))
    r = INF64 if x == INF64 else lo
    r = negate(INF64) if x == MINUS_ONE64 else r
    r = NAN64 if (x != x) | (x < MINUS_ONE64) else r
    r = x if a < LOG1P_64_TINY else r
    return r, ((near | far) & (lo == hi)) | (not (near | far))


@jitable
def log1p_minus_x_td(x):
    """log1p(x) - x for 2^-54 <= |x| < 2^-20 as a triple-double, relative error < 2^-148."""
    ph, pm, pl = Q10
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q9)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q8)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q7)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q6)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q5)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q4)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q3)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO64, ZERO64, Q2)
    sh, sl = two_prod(x, x)
    return td_mul(ph, pm, pl, sh, sl, ZERO64)


@jitable
def log1p_f64(x):
    """log1p for float64, correctly rounded: the fast path in double, else the
    double-double one, else triple-double (module docstring)."""
    r, ok = log1p_fast64(x)
    if ok:
        return r
    r, ok = log1p_dd_fast64(x)
    if ok:
        return r
    if fabs(x) < LOG1P_64_NEAR:
        th, tm, tl = log1p_minus_x_td(x)
        return round_sum(x, th, add_rn(tm, tl))
    if fabs(x) < SERIES_LIMIT:
        h, m, l = log1p_series_td(x)
        return td_round(h, m, l, np.int64(0))
    u, c = two_sum(ONE, x)
    e, mm = log_split(u)
    h, m, l = log_td(e, mm)
    th, tm, tl = td_div(c, ZERO64, ZERO64, u, ZERO64, ZERO64)
    sh, sm, sl = td_mul(th, tm, tl, mul_rn(th, MINUS_HALF64), mul_rn(tm, MINUS_HALF64), mul_rn(tl, MINUS_HALF64))
    th, tm, tl = td_add(th, tm, tl, sh, sm, sl)
    h, m, l = td_add(h, m, l, th, tm, tl)
    return td_round(h, m, l, np.int64(0))
