"""exp2(x) = 2^x for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

2^x overflows float32 for x >= 128 and rounds to +0 for x <= -150 (2^-150 is
the tie between 0 and the smallest subnormal, resolved to even = 0).  The
clamps use 128 and -151; -151 < x <= -150 is computed and rounds to 0.

z = x ln2 as a double-double: two_prod(x, LN2_H) is exact and x LN2_L adds one
rounding of relative size 2^-53 * 2^-53, so z is x ln2 to 2^-105 relative.
Fast path (`exp2_fast`, branch-free, for the CPU's vector loop):
exp_core_short(RN(x LN2_H)) in the wide window 2^-39, < 2^-40.07
(exp.exp_times_fast); accurate path exp_dd(z) (2^-92).
Integer x: the fast path's value is 2^x within 2^-40.07, and the window
around it rounds to the float32 2^x at both ends: decided as 2^x.

float64 (`exp2_f64`, correctly rounded; scheme: multiword.py): first a plain
double fast path (`exp2_fast64`: explog64.exp2_sum_fast and a four-addition
rounding test, branch-free), then, where it cannot decide: k = round(64 x)
and t = x - k/64 are exact (64 x is exact, and 64 x - k is exact by Sterbenz's
lemma), |t| <= 1/128; 2^x = 2^(k/64) e^(t ln2) with t ln2 formed exactly to
2^-106 (double-double: two_prod and one fma) or 2^-158 (triple-double: two
two_prods and one rounded product, td_add) relative, then the reduced
exponential cores of explog64.py (< 2^-101 and < 2^-149).  Integer x: t = 0,
the value is exactly 2^x (table entry 1, e^0 = 1).  2^x overflows for
x >= 1024 and rounds to +0 for x <= -1075 (2^-1075 is the tie between 0 and
the smallest subnormal, resolved to even); between, the scaled rounding
handles subnormal results.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, fma_rn, jitable, mul_rn, sub_rn
from .core import F64, LN2_H, LN2_L, NAN32, clamp, dd_to_f32, exp_dd, two_prod
from .exp import exp_times_fast
from .explog64 import (LN2_TH, LN2_TL, LN2_TM, SHIFT, decide_exp2_sum, exp2_sum_fast, exp_dd_reduced,
                       exp_td_reduced)
from .multiword import dd_error, td_add, td_round, ziv_round

EXP2_OVERFLOW = np.float32(128.0)
EXP2_UNDERFLOW = np.float32(-151.0)

@jitable
def exp2_z(x):
    """z = x ln2 as a double-double (zh, zl) for a float32 x (module docstring)."""
    xd = F64(x)
    zh, zl = two_prod(xd, LN2_H)
    return zh, fma_rn(xd, LN2_L, zl)


@jitable
def exp2_fast(x):
    """(exp2(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide: exp.exp_times_fast with ln2 (module docstring) on x
    clamped to [-151, 128]: 2^128 rounds to inf, 2^-151 to +0; a NaN is
    left to exp2_f32."""
    inline_into_callers()
    return exp_times_fast(x, LN2_H, EXP2_UNDERFLOW, EXP2_OVERFLOW)


@jitable
def exp2_f32(x):
    r, ok = exp2_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    zh, zl = exp2_z(clamp(x, EXP2_UNDERFLOW, EXP2_OVERFLOW))
    h, l = exp_dd(zh, zl)
    return dd_to_f32(h, l)


EXP2_64_OVERFLOW = F64(1024.0)
EXP2_64_UNDERFLOW = F64(-1075.0)
EXP2_64_EPS = F64(2.0**-97)
SIXTY_FOUR = F64(64.0)
INV_SIXTY_FOUR = F64(1.0 / 64.0)
INF64 = F64(np.inf)
ZERO64 = F64(0.0)


@jitable
def exp2_reduce64(x):
    """(k, t) with x = k/64 + t exactly, k an integer (as a double), |t| <= 1/128."""
    y = mul_rn(x, SIXTY_FOUR)
    kd = sub_rn(add_rn(y, SHIFT), SHIFT)
    return kd, mul_rn(sub_rn(y, kd), INV_SIXTY_FOUR)


# --------------------------------------------------------------------------- the plain-double fast path
#
# 2^x = (h + low) 2^q from explog64.exp2_sum_fast(x, 0) (absolute error below
# 2^-69.2, h in [0.998, 2)), rounded by exact64.bracket_err with
# explog64.EXP2_SUM_ERR, as argued there (explog64.decide_exp2_sum).  For -1021.9 <= x <= 1023.9, 2^x is a
# normal double, so RN(h + low) 2^q (explog64.scale_normal) is the rounded
# result.  Integer x: u = 0, so ah = s = 0, the table entry is 1 and h + low
# = 1 exactly, decided.  For every other double x, 2^x is irrational, so no
# other result is a double or a midpoint.

EXP2_64_FAST_LO = F64(-1021.9)
EXP2_64_FAST_HI = F64(1023.9)


@jitable
def exp2_fast64(x):
    """(2^x correctly rounded, True), or (anything, False) where the fast path
    cannot decide: explog64.exp2_sum_fast and a rounding test of four
    additions (explog64.decide_exp2_sum), for -1021.9 <= x <= 1023.9; beyond the
    overflow and underflow thresholds, inf and +0.  Branch-free (arguments
    outside are replaced by 0 and their result discarded), so that the CPU
    launcher vectorises it.  Undecided: about one argument in 2^14, NaN, and
    the subnormal or nearly overflowing results, which `exp2_f64` hands to
    the double-double path."""
    inline_into_callers()
    inside = (x >= EXP2_64_FAST_LO) & (x <= EXP2_64_FAST_HI)
    h, low, qf = exp2_sum_fast(x if inside else ZERO64, ZERO64)
    return decide_exp2_sum(h, low, qf, inside, x >= EXP2_64_OVERFLOW, x <= EXP2_64_UNDERFLOW)


@jitable
def exp2_dd_fast64(x):
    if x != x:
        return x, True
    if x >= EXP2_64_OVERFLOW:
        return INF64, True
    if x <= EXP2_64_UNDERFLOW:
        return ZERO64, True
    kd, t = exp2_reduce64(x)
    rh, rl = two_prod(t, LN2_H)
    rl = fma_rn(t, LN2_L, rl)
    h, l, q = exp_dd_reduced(kd, rh, rl)
    return ziv_round(h, l, dd_error(h, EXP2_64_EPS), q)


@jitable
def exp2_f64(x):
    r, ok = exp2_fast64(x)
    if ok:
        return r
    r, ok = exp2_dd_fast64(x)
    if ok:
        return r
    kd, t = exp2_reduce64(x)
    ah, al = two_prod(t, LN2_TH)
    bh, bl = two_prod(t, LN2_TM)
    rh, rm, rl = td_add(ah, al, ZERO64, bh, bl, mul_rn(t, LN2_TL))
    h, m, l, q = exp_td_reduced(kd, rh, rm, rl)
    return td_round(h, m, l, q)
