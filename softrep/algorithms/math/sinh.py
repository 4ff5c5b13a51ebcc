"""sinh(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

sinh is odd: computed on |x| and the sign put back (sinh(+-0) = +-0).
Overflow: sinh(x) > FLT_MAX + ulp/2 for |x| > 89.4159...; the clamp uses 90.

Fast path.  |x| < 1: odd Taylor series x + x w (1/3! + w (1/5! + ... + w/19!)),
w = x^2 (remainder < x^21/21! < 2^-65 |x|; the tail is < 0.18 |x| and its
rounding errors < 2^-51 of itself; the last fma rounds once): < 2^-52.
|x| >= 1: (E - 1/E)/2 with E = exp_core(|x|) (2^-50.5); 1/E rounds once;
E - 1/E >= 0.76 (E + 1/E), so errors grow at most 1.31x: < 2^-49.5.
Before it, the branch-free first step of the CPU's vector loop
(`sinh_fast`): with u = expm1_core(|x|) (< 2^-50), sinh|x| = (u + u/(u + 1))/2,
two positive terms.  u/(u + 1) has the relative condition 1/(u + 1) <= 1 in
u, so it carries u's error plus two roundings; the sum adds one more, the
halving none: < 2^-50 + 3 * 2^-53 < 2^-49.4, decided by round_if_safe.
Accurate path: (E - 1/E)/2 in double-double with E = exp_dd(|x|): the absolute
error 2^-92 E turns into a relative one < 2^-92 E/sinh|x| <= 2^-67 for
|x| >= 2^-25; below 2^-25 the fast path always decides (sinh x is within
2^-51 |x| of the float32 x, rounding boundaries are 2^-25 |x| away).

float64 (`sinh_f64`, correctly rounded; scheme: multiword.py), on a = |x|:
first a plain-double fast path (`sinh_fast64`, branch-free): for
2^-5 <= a <= 710.47, (E - 1/E)/2 from explog64.exp_pm_fast, relative error
< 2^-78.09 coth(a) + 2^-99 <= 2^-78.09 * 32.01 + 2^-99 < 2^-73.08,
tested with four additions in a window of 2^-70 (more than twice the
bound); the result is at least 0.03, at most 2^1023.99, a normal double, so
RN(h + l) 2^(q-1) is exact.  sinh x is transcendental for x != 0, never a
double or a midpoint.  a < 2^-26 gives x (below); the rest goes on to:
* a < 2^-26: sinh a = a (1 + a^2/6 + ...) is within 2^-53.6 a of a, less than
  half the spacing above a: the result is x (+-0, subnormals).
* a < 2^-5: a (1 + w/3! + w^2/5! + ...), w = a^2 < 2^-10 (exact two_prod):
  double-double to w^6/13! (omitted < 2^-110), the terms from w^4/9!
  (< 2^-58.5) in double, four dd Horner steps: < 2^-100; triple-double to
  w^9/19! (omitted < 2^-165): < 2^-149.
* otherwise (e^a - e^-a)/2 from explog64.exp_pm_dd / exp_pm_td: absolute
  error < 2^-99.5 e^a (2^-147.5 e^a) and e^a/(e^a - e^-a) <= 16.6 for
  a >= 2^-5: < 2^-95.4 (rounding test 2^-94) and < 2^-143.4 relative.
* a > 710.48: inf (sinh overflows above 710.4758...; between, the scaled
  rounding does).
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, div_rn, fabs, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import (abs32, neg32, signbit32, F64, HALF, INF32, NAN32, ONE, S3, S5, S7, S9, S11, S13, S15, S17, S19, ZERO, dd_add,
                    dd_div, dd_mul, dd_to_f32, exp_core, exp_dd, expm1_core, round_if_safe, two_prod)
from .cosh import half_scaled
from .exact64 import bracket_err
from .explog64 import (T3, T5, T7, T9, T11, T13, T15, T17, T19, TD_ONE, exp_pm_dd, exp_pm_fast, exp_pm_td,
                       td_horner_step)
from .multiword import dd_error, td_mul, td_round, ziv_round

SINH_OVERFLOW = np.float32(90.0)
ZERO_F32 = np.float32(0.0)
ONE_F32 = np.float32(1.0)

@jitable
def sinh_abs(a):
    """sinh(a) in double for 0 <= a <= 90 (float32 a), relative error < 2^-49.5."""
    if a < ONE:
        w = mul_rn(a, a)
        p = fma_rn(w, S19, S17)
        p = fma_rn(w, p, S15)
        p = fma_rn(w, p, S13)
        p = fma_rn(w, p, S11)
        p = fma_rn(w, p, S9)
        p = fma_rn(w, p, S7)
        p = fma_rn(w, p, S5)
        p = fma_rn(w, p, S3)
        return fma_rn(mul_rn(a, w), p, a)
    e = exp_core(a, ZERO)
    return mul_rn(sub_rn(e, div_rn(ONE, e)), HALF)

@jitable
def sinh_by_expm1(a):
    """sinh(a) in double for a float32 0 <= a <= 90, (u + u/(u + 1))/2 with
    u = expm1_core(a): relative error < 2^-49.4 (module docstring)."""
    inline_into_callers()
    u = expm1_core(F64(a))
    return mul_rn(add_rn(u, div_rn(u, add_rn(u, ONE))), HALF)


@jitable
def sinh_fast(x):
    """(sinh(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide (module docstring).  Branch-free: an |x| above the
    overflow clamp (NaN included) evaluates sinh(0), and +-inf or NaN is
    selected; sinh(+-0) = +-0 (expm1_core returns +0 at +0)."""
    inline_into_callers()
    ax = abs32(x)
    inside = ax <= SINH_OVERFLOW
    r, ok = round_if_safe(sinh_by_expm1(ax if inside else ZERO_F32))
    r = INF32 if ax > SINH_OVERFLOW else r
    r = neg32(r) if signbit32(x) else r
    r = NAN32 if x != x else r
    return r, ok | (not inside)


@jitable
def sinh_f32(x):
    r, ok = sinh_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    ax = abs32(x)
    if ax > SINH_OVERFLOW:
        r = INF32
    else:
        a = F64(ax)
        r, ok = round_if_safe(sinh_abs(a))
        if not ok:
            eh, el = exp_dd(a, ZERO)
            ih, il = dd_div(ONE, ZERO, eh, el)
            h, l = dd_add(eh, el, negate(ih), negate(il))
            r = dd_to_f32(mul_rn(h, HALF), mul_rn(l, HALF))
    if signbit32(x):
        return neg32(r)
    return r


SINH64_OVERFLOW = F64(710.48)
SINH64_FAST_HI = F64(710.47)
SINH64_FAST_EPS = F64(2.0**-70)
SINH64_TINY = F64(2.0**-26)
SINH64_SERIES = F64(2.0**-5)
SINH64_SERIES_EPS = F64(2.0**-98)
SINH64_EXP_EPS = F64(2.0**-94)
(D3H, D3L), (D5H, D5L), (D7H, D7L) = ((T[0], T[1]) for T in (T3, T5, T7))
(E9, E11, E13) = (T9[0], T11[0], T13[0])
INF64 = F64(np.inf)
ZERO64 = F64(0.0)
ONE64 = F64(1.0)


@jitable
def sinh_series_dd(a):
    wh, wl = two_prod(a, a)
    d = fma_rn(wh, E13, E11)
    d = fma_rn(wh, d, E9)
    h, l = dd_mul(d, ZERO64, wh, wl)
    h, l = dd_add(h, l, D7H, D7L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, D5H, D5L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, D3H, D3L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, ONE64, ZERO64)
    return dd_mul(h, l, a, ZERO64)


@jitable
def sinh_series_td(a):
    wh, wl = two_prod(a, a)
    ph, pm, pl = T19
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T17)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T15)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T13)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T11)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T9)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T7)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T5)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, T3)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wl, ZERO64, TD_ONE)
    return td_mul(ph, pm, pl, a, ZERO64, ZERO64)


@jitable
def sinh_abs_fast64(a):
    """(sinh a, decided) for 2^-26 <= a <= 710.48."""
    if a < SINH64_SERIES:
        h, l = sinh_series_dd(a)
        return ziv_round(h, l, dd_error(h, SINH64_SERIES_EPS), np.int64(0))
    h, l, q = exp_pm_dd(a, True)
    return ziv_round(h, l, dd_error(h, SINH64_EXP_EPS), q - np.int64(1))


@jitable
def sinh_fast64(x):
    """(sinh x correctly rounded, True), or (anything, False) where the fast
    path cannot decide (the analysis is above); branch-free."""
    inline_into_callers()
    a = fabs(x)
    inside = (a >= SINH64_SERIES) & (a <= SINH64_FAST_HI)
    h, l, q = exp_pm_fast(a if inside else SINH64_SERIES, True)
    lo, hi = bracket_err(h, l, mul_rn(h, SINH64_FAST_EPS))
    tiny, above, nan = a < SINH64_TINY, a > SINH64_OVERFLOW, x != x
    r = INF64 if above else half_scaled(lo, q)
    r = negate(r) if x < ZERO64 else r
    r = x if tiny | nan else r
    return r, (inside & (lo == hi)) | tiny | above | nan


@jitable
def sinh_dd_fast64(x):
    if x != x:
        return x, True
    a = fabs(x)
    if a < SINH64_TINY:
        return x, True
    if a > SINH64_OVERFLOW:
        r, ok = INF64, True
    else:
        r, ok = sinh_abs_fast64(a)
    return (negate(r) if x < ZERO64 else r), ok


@jitable
def sinh_f64(x):
    r, ok = sinh_fast64(x)
    if ok:
        return r
    r, ok = sinh_dd_fast64(x)
    if ok:
        return r
    a = fabs(x)
    if a < SINH64_SERIES:
        h, m, l = sinh_series_td(a)
        r = td_round(h, m, l, np.int64(0))
    else:
        h, m, l, q = exp_pm_td(a, True)
        r = td_round(h, m, l, q - np.int64(1))
    return negate(r) if x < ZERO64 else r
