"""log10(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

x = 2^e m as in log: log10(x) = e log10(2) + log(m)/ln10.  e LOG10_2_H rounds
once (2^-53), log(m)/ln10 = fma(log m, 1/ln10, e LOG10_2_L) rounds once on top
of log m's 2^-51; |log(m)/ln10| <= 0.151 < e log10(2)/2 for e != 0, so the sum
cancels at most a factor 2: relative error < 2^-49.5.
Exact cases: log10(10^n) = n for n = 1..10 (10^n is a float32); the fast path
is within 2^-49 of n, far from a rounding boundary.
Before it, the branch-free first step of the CPU's vector loop (`log10_fast`):
log's short core times 1/ln10, < 2^-42.8, in the wide window 2^-39
(log.log_times_fast); it decides the exact cases too.
Accurate path: log_dd(x) * (1/ln10 as a double-double), relative error < 2^-67.

float64 (`log10_f64`, correctly rounded; scheme: multiword.py): first the
plain-double log of explog64.log_dd_fast times 1/ln10 with a four-addition
rounding test (`log10_fast64`, log.log_times_fast64: relative error
< 2^-66.99, window 2^-65.5); where it cannot decide, x = 2^e m as in
explog64.py, log10(x) = e log10(2) + log(m)/ln10: e log10(2) with an exact
two_prod and one fma (< 2^-104) or two two_prods and a rounded product
(< 2^-157), log m (< 2^-95.9, < 2^-144.3) times 1/ln10 (dd_mul / td_mul);
|log(m)/ln10| <= log10(2)/2, so for e != 0 the sum cancels at most a factor
2: < 2^-94.8 (rounding test: 2^-93) and < 2^-143.  Exact cases: log10(10^n)
= n for the doubles 10^n (n = 0 .. 22): the value is an integer, a double far
from every rounding boundary, which both paths decide; log10(x) is irrational
for every other double x.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, fma_rn, jitable, mul_rn
from .core import (F64, INF32, INV_LN10, INV_LN10_L, LOG10_2_H, LOG10_2_L, NAN32, ZERO, dd_add, dd_mul, dd_to_f32,
                    log_dd, log_reduce, logm_core, round_if_safe, two_prod)
from .explog64 import INV_LN10_TD, LOG10_2_TD, log_m_dd, log_m_td, log_split
from .log import log_special64, log_times_fast, log_times_fast64
from .multiword import dd_error, td_add, td_mul, td_round, ziv_round

ZERO_F32 = np.float32(0.0)
NEG_INF32 = np.float32(-np.inf)

@jitable
def log10_fast(x):
    """(log10(x) correctly rounded, True), or (undecided, False): log's short
    core times 1/ln10 in the wide window (log.log_times_fast); branch-free."""
    inline_into_callers()
    return log_times_fast(x, INV_LN10)


@jitable
def log10_f32(x):
    r, ok = log10_fast(x)
    if ok:
        return r
    if x != x or x < ZERO_F32:
        return NAN32
    if x == ZERO_F32:
        return NEG_INF32
    if x == INF32:
        return INF32
    xd = F64(x)
    e, m = log_reduce(xd)
    ed = F64(e)
    y = add_rn(mul_rn(ed, LOG10_2_H), fma_rn(logm_core(m), INV_LN10, mul_rn(ed, LOG10_2_L)))
    r, ok = round_if_safe(y)
    if ok:
        return r
    lh, ll = log_dd(xd, ZERO)
    h, l = dd_mul(lh, ll, INV_LN10, INV_LN10_L)
    return dd_to_f32(h, l)


LOG10_64_EPS = F64(2.0**-93)


@jitable
def log10_fast64(x):
    """The plain-double fast path: log(x)/ln10 (log.log_times_fast64)."""
    inline_into_callers()
    return log_times_fast64(x, INV_LN10, INV_LN10_L)


@jitable
def log10_dd64(x):
    r, special = log_special64(x)
    if special:
        return r, True
    e, m = log_split(x)
    ed = F64(np.int32(e))
    lh, ll = log_m_dd(m)
    ph, pl = dd_mul(lh, ll, INV_LN10, INV_LN10_L)
    eh, el = two_prod(ed, LOG10_2_H)
    el = fma_rn(ed, LOG10_2_L, el)
    h, l = dd_add(eh, el, ph, pl)
    return ziv_round(h, l, dd_error(h, LOG10_64_EPS), np.int64(0))


@jitable
def log10_f64(x):
    r, ok = log10_fast64(x)
    if ok:
        return r
    r, ok = log10_dd64(x)
    if ok:
        return r
    e, m = log_split(x)
    ed = F64(np.int32(e))
    lh, lm, ll = log_m_td(m)
    ph, pm, pl = td_mul(lh, lm, ll, INV_LN10_TD[0], INV_LN10_TD[1], INV_LN10_TD[2])
    ah, al = two_prod(ed, LOG10_2_TD[0])
    bh, bl = two_prod(ed, LOG10_2_TD[1])
    eh, em, el = td_add(ah, al, ZERO, bh, bl, mul_rn(ed, LOG10_2_TD[2]))
    h, mm, l = td_add(eh, em, el, ph, pm, pl)
    return td_round(h, mm, l, np.int64(0))
