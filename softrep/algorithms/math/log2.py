"""log2(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

x = 2^e m as in log: log2(x) = e + log(m)/ln2, formed as fma(log m, 1/ln2, e):
log(m) has relative error < 2^-51, 1/ln2 is rounded (2^-53), the fma rounds
once; |log(m)/ln2| <= 1/2, so for e != 0 there is no cancellation beyond a
factor 2: relative error < 2^-49.5.  Powers of two give e exactly (m = 1).
Before it, the branch-free first step of the CPU's vector loop (`log2_fast`):
log's short core times 1/ln2, < 2^-42.8, in the wide window 2^-39
(log.log_times_fast).
Accurate path: log_dd(x) * (1/ln2 as a double-double), relative error < 2^-67.

float64 (`log2_f64`, correctly rounded; scheme: multiword.py): first the
plain-double log of explog64.log_dd_fast times 1/ln2 with a four-addition
rounding test (`log2_fast64`, log.log_times_fast64: relative error
< 2^-66.99, window 2^-65.5); where it cannot decide, x = 2^e m as in
explog64.py, log2(x) = e + log(m)/ln2 with e exact: log m (double-double
< 2^-95.9, triple-double < 2^-144.3) times 1/ln2 (dd_mul < 2^-102 and the
constant's 2^-106; td_mul < 2^-151 and 2^-159), plus e (|log2 m| <= 1/2, so
for e != 0 the sum cancels at most a factor 2, and dd_add / td_add add
< 2^-104 / 2^-152): < 2^-94.8 (the rounding test uses 2^-93) and < 2^-143.
Powers of two give e exactly (m = 1).  log2(x) is irrational for every other
double x, so no other result is a double or a midpoint.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import fma_rn, jitable
from .core import (F64, INF32, INV_LN2, INV_LN2_L, NAN32, ZERO, dd_add, dd_mul, dd_to_f32, log_dd, log_reduce,
                    logm_core, round_if_safe)
from .explog64 import INV_LN2_TD, log_m_dd, log_m_td, log_split
from .log import log_special64, log_times_fast, log_times_fast64
from .multiword import dd_error, td_add, td_mul, td_round, ziv_round

ZERO_F32 = np.float32(0.0)
NEG_INF32 = np.float32(-np.inf)

@jitable
def log2_fast(x):
    """(log2(x) correctly rounded, True), or (undecided, False): log's short
    core times 1/ln2 in the wide window (log.log_times_fast); branch-free."""
    inline_into_callers()
    return log_times_fast(x, INV_LN2)


@jitable
def log2_f32(x):
    r, ok = log2_fast(x)
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
    r, ok = round_if_safe(fma_rn(logm_core(m), INV_LN2, F64(e)))
    if ok:
        return r
    lh, ll = log_dd(xd, ZERO)
    h, l = dd_mul(lh, ll, INV_LN2, INV_LN2_L)
    return dd_to_f32(h, l)


LOG2_64_EPS = F64(2.0**-93)
ONE64 = F64(1.0)


@jitable
def log2_fast64(x):
    """The plain-double fast path: log(x)/ln2 (log.log_times_fast64)."""
    inline_into_callers()
    return log_times_fast64(x, INV_LN2, INV_LN2_L)


@jitable
def log2_dd64(x):
    r, special = log_special64(x)
    if special:
        return r, True
    e, m = log_split(x)
    if m == ONE64:
        return F64(np.int32(e)), True
    lh, ll = log_m_dd(m)
    ph, pl = dd_mul(lh, ll, INV_LN2, INV_LN2_L)
    h, l = dd_add(F64(np.int32(e)), ZERO, ph, pl)
    return ziv_round(h, l, dd_error(h, LOG2_64_EPS), np.int64(0))


@jitable
def log2_f64(x):
    r, ok = log2_fast64(x)
    if ok:
        return r
    r, ok = log2_dd64(x)
    if ok:
        return r
    e, m = log_split(x)
    lh, lm, ll = log_m_td(m)
    ph, pm, pl = td_mul(lh, lm, ll, INV_LN2_TD[0], INV_LN2_TD[1], INV_LN2_TD[2])
    h, mm, l = td_add(F64(np.int32(e)), ZERO, ZERO, ph, pm, pl)
    return td_round(h, mm, l, np.int64(0))
