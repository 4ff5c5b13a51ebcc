"""exp(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Range: exp(x) overflows float32 (rounds to +inf) for x > 88.7228..., and
rounds to +0 for x < -103.972... (below 2^-150, half the smallest subnormal).
The fast path evaluates x clamped to [-104, 89], which holds both thresholds:
between them the double computation handles overflow and subnormal results
itself, and the clamped ends give the results of everything beyond (e^89
rounds to +inf, e^-104 to +0, both with room for the rounding test's window).

Fast path: `exp_core_short(x)`, relative error < 2^-40.1 (argued in
core.py), decided by `round_if_within` the wide window 2^-39; about one
argument in 2^15 is left undecided.
Accurate path: `exp_dd(x, 0)`, relative error < 2^-92.

float64 (`exp_f64`, correctly rounded; scheme: multiword.py): a fast path in
double with one table (explog64.exp_by_exp2_fast, 2^(x log2(e)) within
2^-69.2) and a rounding test of four additions; where it cannot decide, the
table-driven double-double exp of explog64.py with the exact rounding test,
else its triple-double version.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import jitable, mul_rn
from .core import (F64, NAN32, ONE, WIDE_WINDOW_HI, WIDE_WINDOW_LO, ZERO, clamp, dd_to_f32, exp_core_short, exp_dd,
                   round_if_within)
from .explog64 import decide_exp2_sum, exp_by_exp2_fast, exp_dd as exp_dd64, exp_td
from .multiword import dd_error, td_round, ziv_round

EXP_OVERFLOW = np.float32(89.0)
EXP_UNDERFLOW = np.float32(-104.0)

@jitable
def exp_times_core(x, c):
    """e^(x C) in double for a float32 x and the double c of a constant C,
    exp_core_short(RN(x c)): relative error < 2^-40.07 over exp's, exp2's
    and exp10's ranges (`exp_times_fast`)."""
    inline_into_callers()
    return exp_core_short(mul_rn(F64(x), c))


@jitable
def exp_times_fast(x, c, lo, hi):
    """(e^(x C) correctly rounded, True), or (undecided, False), for a float32
    x and the double c of a constant C: the first step of exp's (c = 1),
    exp2's (LN2_H) and exp10's (LN10_H) float32 kernels.  x is clamped to
    [lo, hi] by two selects, whose ends e^(lo C) and e^(hi C) round to +0
    and inf with room for the window, so everything beyond is decided too; a
    NaN passes through, fails the rounding test and is left to the scalar
    kernel.

    z = RN(x c) misses x C by < |x| |c - C| + |z| 2^-53: for exp z = x
    exactly; with c = LN2_H (|c - ln2| < 2^-55.26), |x| <= 151 and
    |z| <= 105, < 2^-48.02 + 2^-46.29; with c = LN10_H (|c - ln10| <
    2^-53.0), |x| <= 46 and |z| <= 106, < 2^-47.5 + 2^-46.27: below 2^-45.8,
    and e^z is e^(x C) within the same relatively (to first order; the
    square is far below).  With exp_core_short's 2^-40.1: < 2^-40.07, inside
    the wide window 2^-39.  An exact power (1, 2^n, 10^n a float32) is
    decided as itself."""
    inline_into_callers()
    return round_if_within(exp_times_core(clamp(x, lo, hi), c), WIDE_WINDOW_LO, WIDE_WINDOW_HI)


@jitable
def exp_fast(x):
    """(exp(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide: `exp_times_fast` with c = 1 (the product is exact)
    on [-104, 89] (a NaN is left to exp_f32)."""
    inline_into_callers()
    return exp_times_fast(x, ONE, EXP_UNDERFLOW, EXP_OVERFLOW)


@jitable
def exp_f32(x):
    r, ok = exp_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    h, l = exp_dd(F64(x), ZERO)
    return dd_to_f32(h, l)


EXP64_OVERFLOW = F64(709.79)  # above: e^x > 2^1024 (1 - 2^-54), rounds to inf
EXP64_UNDERFLOW = F64(-745.2)  # below: e^x < 2^-1075, rounds to +0
EXP64_EPS = F64(2.0**-97)  # exp_dd's relative error is < 2^-101 (explog64.py)
INF64 = F64(np.inf)
# The fast path decides between these: e^x from 2^-1021.9 to 2^1023.9, normal
# doubles, so RN(h + low) 2^q (explog64.scale_normal) is RN(e^x).  Outside
# (and between them and the overflow and underflow thresholds) the
# double-double path below rounds the scaled value.
EXP64_FAST_LO = F64(-708.3)
EXP64_FAST_HI = F64(709.7)


@jitable
def exp_fast64(x):
    """(exp(x) correctly rounded, True), or (anything, False) where the fast path
    cannot decide: explog64.exp_by_exp2_fast (absolute error below 2^-69.2 of
    h + low, h in [0.998, 2)) and a rounding test of four additions
    (explog64.decide_exp2_sum, as argued there), for
    -708.3 <= x <= 709.7; beyond the overflow and underflow thresholds, inf
    and +0.  Branch-free (out-of-range arguments are replaced by 0 and their
    result discarded), so that the CPU launcher vectorises it.  Undecided:
    about one argument in 2^14, NaN, and -745.2 <= x < -708.3, 709.7 < x <=
    709.79 (subnormal or nearly overflowing results), which `exp_f64` hands
    to the double-double path."""
    inline_into_callers()
    inside = (x >= EXP64_FAST_LO) & (x <= EXP64_FAST_HI)
    h, low, qf = exp_by_exp2_fast(x if inside else ZERO)
    return decide_exp2_sum(h, low, qf, inside, x > EXP64_OVERFLOW, x < EXP64_UNDERFLOW)


@jitable
def exp_dd_fast64(x):
    """(exp(x) correctly rounded, True), or (undecided, False) where the
    double-double path cannot decide (explog64.exp_dd, relative error
    < 2^-101, tested with 2^-97), for every x.  Between 709.7827 (ln of the
    overflow threshold) and 709.79, and between -745.2 and -745.1332 (ln
    2^-1075), the scaled rounding gives inf and 0 itself."""
    if x != x:
        return x, True
    if x > EXP64_OVERFLOW:
        return INF64, True
    if x < EXP64_UNDERFLOW:
        return ZERO, True
    h, l, q = exp_dd64(x, ZERO)
    return ziv_round(h, l, dd_error(h, EXP64_EPS), q)


@jitable
def exp_f64(x):
    """exp for float64, correctly rounded: the fast path, else the double-double
    one, else the triple-double exp_td (relative error < 2^-149) rounded once."""
    r, ok = exp_fast64(x)
    if ok:
        return r
    r, ok = exp_dd_fast64(x)
    if ok:
        return r
    h, m, l, q = exp_td(x, ZERO, ZERO)
    return td_round(h, m, l, q)
