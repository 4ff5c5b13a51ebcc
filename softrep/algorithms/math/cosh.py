"""cosh(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

cosh is even: computed on |x|.  Overflow for |x| > 89.4159...; clamp at 90.

Fast path: (E + 1/E)/2, E = exp_core(|x|) (2^-50.5), 1/E one rounding, the sum
of two positive terms one rounding: < 2^-49.5.
Before it, the branch-free first step of the CPU's vector loop
(`cosh_fast`): the same sum with E = exp_core_short(|x|) (< 2^-40.1): 1/E
adds a rounding, the sum another: < 2^-40.1 + 2^-52 < 2^-40.09, decided in
the wide window 2^-39 (as exp's fast path).
Accurate path: the same in double-double from exp_dd (< 2^-92).  It is needed
for instance near |x| = 2^-11.5, where cosh x = 1 + x^2/2 comes within 2^-71 of
the midpoint 1 + 2^-24.

float64 (`cosh_f64`, correctly rounded; scheme: multiword.py), on a = |x|:
first a plain-double fast path (`cosh_fast64`, branch-free): (E + 1/E)/2
from explog64.exp_pm_fast (relative error < 2^-78.09), tested with four
additions in a window of 2^-74 (more than twice the bound), for a <= 710.47
(the result is at most 2^1023.99, a normal double: RN(h + l) 2^(q-1) is
exact).  cosh(0) = 1 is decided exactly (E = 1/E = 1); every other cosh x
is transcendental, never a double or a midpoint.  Where it cannot decide:
* a < 2^-26: cosh a = 1 + a^2/2 + ... < 1 + 2^-53, below the midpoint above 1:
  the result is 1.
* otherwise (e^a + e^-a)/2 from explog64.exp_pm_dd / exp_pm_td, a sum of
  positive terms: < 2^-99.5 (rounding test 2^-97) and < 2^-147.5 relative.
* a > 710.48: inf (overflow above 710.4758...).
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, div_rn, fabs, jitable, mul_rn
from .core import (abs32, F64, HALF, INF32, NAN32, ONE, TWO, WIDE_WINDOW_HI, WIDE_WINDOW_LO, ZERO, dd_add, dd_div,
                    dd_to_f32, exp_core, exp_core_short, exp_dd, outside_range, pow2, round_if_safe, round_if_within)
from .exact64 import bracket_err
from .explog64 import exp_pm_dd, exp_pm_fast, exp_pm_td
from .multiword import dd_error, td_round, ziv_round

COSH_OVERFLOW = np.float32(90.0)
ZERO_F32 = np.float32(0.0)

@jitable
def cosh_short(a):
    """cosh(a) in double for a float32 0 <= a <= 90, (E + 1/E)/2 with E =
    exp_core_short(a): relative error < 2^-40.09 (module docstring)."""
    inline_into_callers()
    e = exp_core_short(F64(a))
    return mul_rn(add_rn(e, div_rn(ONE, e)), HALF)


@jitable
def cosh_fast(x):
    """(cosh(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide (module docstring).  Branch-free: an |x| above the
    overflow clamp (NaN included) evaluates cosh(0), and inf or NaN is
    selected."""
    inline_into_callers()
    ax = abs32(x)
    r, ok = round_if_within(cosh_short(ax if ax <= COSH_OVERFLOW else ZERO_F32), WIDE_WINDOW_LO, WIDE_WINDOW_HI)
    return outside_range(ax, r, ok, ZERO_F32, COSH_OVERFLOW, INF32, INF32)


@jitable
def cosh_f32(x):
    r, ok = cosh_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    ax = abs32(x)
    if ax > COSH_OVERFLOW:
        return INF32
    a = F64(ax)
    e = exp_core(a, ZERO)
    r, ok = round_if_safe(mul_rn(add_rn(e, div_rn(ONE, e)), HALF))
    if ok:
        return r
    eh, el = exp_dd(a, ZERO)
    ih, il = dd_div(ONE, ZERO, eh, el)
    h, l = dd_add(eh, el, ih, il)
    return dd_to_f32(mul_rn(h, HALF), mul_rn(l, HALF))


COSH64_OVERFLOW = F64(710.48)
COSH64_TINY = F64(2.0**-26)
COSH64_EPS = F64(2.0**-97)
INF64 = F64(np.inf)
ONE64 = F64(1.0)


COSH64_FAST_HI = F64(710.47)
COSH64_FAST_EPS = F64(2.0**-74)


@jitable
def half_scaled(r, q):
    """r 2^(q-1) for 1/8 <= r < 4 and 0 <= q <= 1025 (exact unless it
    overflows): 2^(q-2), a double for every such q, then a doubling."""
    return mul_rn(mul_rn(r, pow2(q - np.int32(2))), TWO)


@jitable
def cosh_fast64(x):
    """(cosh x correctly rounded, True), or (anything, False) where the fast
    path cannot decide (the analysis is above); branch-free."""
    inline_into_callers()
    a = fabs(x)
    inside = a <= COSH64_FAST_HI
    h, l, q = exp_pm_fast(a if inside else ZERO, False)
    lo, hi = bracket_err(h, l, mul_rn(h, COSH64_FAST_EPS))
    r = half_scaled(lo, q)
    above, nan = a > COSH64_OVERFLOW, x != x
    r = INF64 if above else r
    r = x if nan else r
    return r, (inside & (lo == hi)) | above | nan


@jitable
def cosh_dd_fast64(x):
    if x != x:
        return x, True
    a = fabs(x)
    if a < COSH64_TINY:
        return ONE64, True
    if a > COSH64_OVERFLOW:
        return INF64, True
    h, l, q = exp_pm_dd(a, False)
    return ziv_round(h, l, dd_error(h, COSH64_EPS), q - np.int64(1))


@jitable
def cosh_f64(x):
    r, ok = cosh_fast64(x)
    if ok:
        return r
    r, ok = cosh_dd_fast64(x)
    if ok:
        return r
    h, m, l, q = exp_pm_td(fabs(x), False)
    return td_round(h, m, l, q - np.int64(1))
