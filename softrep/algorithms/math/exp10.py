"""exp10(x) = 10^x for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

10^x overflows float32 for x > 38.5318... and rounds to +0 below
x = -45.154... (2^-150); the clamps use 39 and -46.

z = x ln10 as a double-double (two_prod exact, x LN10_L rounded once: 2^-105
relative).  Fast path (`exp10_fast`, branch-free, for the CPU's vectorised
first loop): exp_core_short(RN(x LN10_H)) in the wide window 2^-39, < 2^-40.07
(exp.exp_times_fast); accurate path exp_dd(z) (2^-92).
Exact cases: 10^n for n = 0..10 is a float32; the fast path is within 2^-40 of
it, far from any rounding boundary.  10^n for n = 11..38 is an odd multiple of
5^n with 26 to 89 significant bits: not a float32 midpoint, and at least
2^-89 away from one relatively, which the accurate path resolves.

float64 (`exp10_f64`, correctly rounded; scheme: multiword.py): first a plain
double fast path (`exp10_fast64`: exp10_dd_fast, below, and a four-addition
rounding test, branch-free), then, where it cannot decide: integer x in
[-323, 308] reads 10^x from a table of the correctly rounded powers (exact
rationals rounded at import: 10^23 is an exact midpoint between two doubles,
and other integer powers are rationals that no error bound separates from a
midpoint in general).  Other x: z = x ln10 in triple-double (two exact
two_prods, one rounded product, td_add: < 2^-143.5 absolutely for |z| < 746),
then explog64's exp_dd on (zh, RN(zm + zl)) (z to 2^-96.5 absolutely, so
< 2^-95.9 relative in all; the rounding test uses 2^-94) or exp_td (< 2^-143).
10^x overflows above 308.2547... and rounds to +0 below -323.6066 (2^-1075);
the cut-offs 308.26 and -323.7 leave the values between to the scaled rounding.
"""

import numpy as np

from fractions import Fraction

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, fma_rn, jitable, mul_rn, sub_rn
from .core import F64, LN10_H, LN10_L, NAN32, clamp, dd_to_f32, exp_dd, two_prod
from .exp import exp_times_fast
from .exact64 import decide_scaled
from .explog64 import LN10_TD, SHIFT, exp_dd as exp_dd64, exp_reduce_fast, exp_reduced_fast, exp_td
from .multiword import dd_error, td_add, td_round, ziv_round

EXP10_OVERFLOW = np.float32(39.0)
EXP10_UNDERFLOW = np.float32(-46.0)

@jitable
def exp10_z(x):
    """z = x ln10 as a double-double (zh, zl) for a float32 x (module docstring)."""
    xd = F64(x)
    zh, zl = two_prod(xd, LN10_H)
    return zh, fma_rn(xd, LN10_L, zl)


@jitable
def exp10_fast(x):
    """(exp10(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide: exp.exp_times_fast with ln10 (module docstring) on x
    clamped to [-46, 39]: 10^39 rounds to inf, 10^-46 to +0; a NaN is left
    to exp10_f32."""
    inline_into_callers()
    return exp_times_fast(x, LN10_H, EXP10_UNDERFLOW, EXP10_OVERFLOW)


@jitable
def exp10_f32(x):
    r, ok = exp10_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    zh, zl = exp10_z(clamp(x, EXP10_UNDERFLOW, EXP10_OVERFLOW))
    h, l = exp_dd(zh, zl)
    return dd_to_f32(h, l)


EXP10_64_OVERFLOW = F64(308.26)
EXP10_64_UNDERFLOW = F64(-323.7)
EXP10_64_EPS = F64(2.0**-94)
POW10_MIN, POW10_MAX = -323, 308
# 10^k correctly rounded to float64 for k = -323 .. 308 (Fraction -> float rounds once,
# subnormals included)
POW10 = np.array([float(Fraction(10) ** k) for k in range(POW10_MIN, POW10_MAX + 1)], dtype=np.float64)
INF64 = F64(np.inf)
ZERO64 = F64(0.0)


@jitable
def exp10_z64(x):
    """x ln10 as a triple-double."""
    ah, al = two_prod(x, LN10_TD[0])
    bh, bl = two_prod(x, LN10_TD[1])
    return td_add(ah, al, ZERO64, bh, bl, mul_rn(x, LN10_TD[2]))


# --------------------------------------------------------------------------- the plain-double fast path
#
# 10^x = e^(x ln10): x ln10 as a double-double, then explog64's reduction
# and evaluation, as exp's fast path (explog64.exp_dd_fast).
#
# * x ln10 = ah + al + d1: (ah, e0) = x LN10_H exactly (two_prod), al =
#   RN(x LN10_L + e0): |ah| < 747 < 2^10, |e0| <= ulp(ah)/2 <= 2^-44, |x
#   LN10_L| < 324 * 2^-52 < 2^-43.6, so |al| < 2^-42 and its rounding is
#   < 2^-96; LN10_H + LN10_L misses ln10 by < 2^-106.3 (measured in the
#   tests), times |x|: < 2^-97.9.  So |d1| < 2^-95.4.
# * explog64.exp_reduce_fast(ah, al) (|ah| < 747, |al| <= 2^-42, as it
#   needs): e^(ah + al) = 2^(k/256) e^(rh + rl) within 2^-94.8, and
#   exp_reduced_fast: < 2^-80.1.
#
# So (h + l) 2^q is 10^x within 2^-80.1 + 2^-94.8 + 2^-95.4 < 2^-80 relative,
# and the window of exp's fast path (2^-74 h) serves.
#
# Range: for -307.6 <= x <= 308.2, 10^x is a normal double (2^-1021.83 to
# 2^1023.85), so RN(h + l) 2^q is exact, as in exp_fast64.  The test decides
# only what its bound proves: 10^n for n = 0..22 (exact doubles, far from
# any midpoint) is decided as the exact power; 10^23 is an exact midpoint
# and stays undecided; the other integer powers are decided where the bound
# separates them from a midpoint, else left to exp10_dd_fast64's table.  For
# non-integer x, 10^x is irrational, never a double or a midpoint.

EXP10_64_FAST_LO = F64(-307.6)
EXP10_64_FAST_HI = F64(308.2)
EXP10_64_FAST_EPS = F64(2.0**-74)


@jitable
def exp10_dd_fast(x):
    """(h, l, q): 10^x = (h + l) 2^q with relative error < 2^-80, for
    |x| <= 324, h in [0.998, 2); branch-free (the analysis is above)."""
    ah, e0 = two_prod(x, LN10_H)
    kd, rh, rl = exp_reduce_fast(ah, fma_rn(x, LN10_L, e0))
    return exp_reduced_fast(kd, rh, rl)


@jitable
def exp10_fast64(x):
    """(10^x correctly rounded, True), or (anything, False) where the fast path
    cannot decide: exp10_dd_fast and a rounding test of four additions
    (exact64.bracket_err), for -307.6 <= x <= 308.2; NaN, and beyond the
    overflow and underflow cut-offs, inf and +0.  Branch-free, so that the
    CPU launcher vectorises it.  Undecided: about one argument in 2^20, some
    integers, and the subnormal or nearly overflowing results, which
    `exp10_f64` hands to the double-double path."""
    inline_into_callers()
    inside = (x >= EXP10_64_FAST_LO) & (x <= EXP10_64_FAST_HI)
    h, l, q = exp10_dd_fast(x if inside else ZERO64)
    return decide_scaled(x, h, l, q, EXP10_64_FAST_EPS, inside, x > EXP10_64_OVERFLOW, x < EXP10_64_UNDERFLOW)


@jitable
def exp10_dd_fast64(x):
    if x != x:
        return x, True
    if x > EXP10_64_OVERFLOW:
        return INF64, True
    if x < EXP10_64_UNDERFLOW:
        return ZERO64, True
    n = sub_rn(add_rn(x, SHIFT), SHIFT)  # the integer nearest to x (|x| < 2^51)
    if n == x:
        return POW10[np.int64(n) - POW10_MIN], True
    zh, zm, zl = exp10_z64(x)
    h, l, q = exp_dd64(zh, add_rn(zm, zl))
    return ziv_round(h, l, dd_error(h, EXP10_64_EPS), q)


@jitable
def exp10_f64(x):
    r, ok = exp10_fast64(x)
    if ok:
        return r
    r, ok = exp10_dd_fast64(x)
    if ok:
        return r
    zh, zm, zl = exp10_z64(x)
    h, m, l, q = exp_td(zh, zm, zl)
    return td_round(h, m, l, q)
