"""expm1(x) = e^x - 1 for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Overflow above x = 88.7228 (clamp at 89).  For x < -17.33, e^x < 2^-25 and
e^x - 1 rounds to -1 (the midpoint between -1 and its float32 neighbour
-(1 - 2^-24) is -1 + 2^-25); the clamp uses -18.

Fast path: `expm1_core` (relative error < 2^-50, no cancellation: the
polynomial is used directly for |x| <= ln2/2).  expm1(+-0) = +-0 through it.
Accurate path: exp_dd(x) - 1 in double-double.  It only runs where the fast
path cannot decide, which never happens for |x| < 2^-25: there e^x - 1 =
x (1 + x/2 + ...) is within 2^-26 |x| of the float32 x, while rounding
boundaries are at least 2^-25 |x| away from it.  For |x| >= 2^-25 the absolute
error 2^-92 e^x becomes a relative error < 2^-67.

float64 (`expm1_f64`, correctly rounded; scheme: multiword.py):
* |x| < 2^-54: e^x - 1 = x (1 + x/2 + ...) is within 2^-55 |x| of x, less
  than half the spacing around x: the result is x (+-0 and subnormals too).
* |x| < 2^-5: the Taylor series x (1 + x/2! + ... ): double-double to degree
  13 (omitted < |x|^13/14! < 2^-101 relative; terms of degree >= 9, below
  2^-58.5 relative, in double; eight dd Horner steps < 2^-102 each, the
  factor |x| <= 2^-5 shrinking the earlier ones), < 2^-100; triple-double to
  degree 19 (omitted < 2^-156), < 2^-149.
* otherwise e^x 2^q from explog64's cores, scaled exactly by 2^q (q < 200),
  minus 1 (dd_add < 2^-104, td_add < 2^-152 relatively): e^x's relative
  error becomes e^x/|e^x - 1| <= 32.5 times larger (|x| >= 2^-5): < 2^-95.9
  (fast; the rounding test uses an absolute bound from both terms) and
  < 2^-143.9.  For q >= 200 the -1 is below 2^-199 relatively: the result is
  e^x rounded, with that term counted in the error.
* x > 709.79: inf; x < -38: e^x < 2^-54 and e^x - 1 rounds to -1.
"""

import numpy as np

from ...primitives.rounding import add_rn, bitcast, fabs, fma_rn, jitable, mul_rn, negate
from .core import (F2H, F2L, F3H, F3L, F4H, F4L, F5H, F5L, F6H, F6L, F7H, F7L, F8H, F8L, F64, INF32, NAN32, ONE,
                   ZERO, dd_add, dd_mul, dd_to_f32, exp_dd, expm1_core, round_if_safe)
from .explog64 import (C9, C10, C11, C12, C13, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15, T16,
                       T17, T18, T19, TD_ONE, exp_dd as exp_dd64, exp_td, td_horner_step)
from .multiword import dd_error, td_add, td_mul, td_round, td_scale, ziv_round

EXPM1_OVERFLOW = np.float32(89.0)
EXPM1_SATURATE = np.float32(-18.0)
MINUS_ONE32 = np.float32(-1.0)

@jitable
def expm1_f32(x):
    if x != x:
        return NAN32
    if x > EXPM1_OVERFLOW:
        return INF32
    if x < EXPM1_SATURATE:
        return MINUS_ONE32
    z = F64(x)
    r, ok = round_if_safe(expm1_core(z))
    if ok:
        return r
    eh, el = exp_dd(z, ZERO)
    h, l = dd_add(eh, el, negate(ONE), ZERO)
    return dd_to_f32(h, l)


EXPM1_64_OVERFLOW = F64(709.79)
EXPM1_64_SATURATE = F64(-38.0)
EXPM1_64_TINY = F64(2.0**-54)
EXPM1_64_SERIES = F64(2.0**-5)
EXPM1_64_SERIES_EPS = F64(2.0**-98)
EXPM1_64_EXP_EPS = F64(2.0**-99)  # exp_dd's < 2^-101, with room for the scaling and the sum
EXPM1_64_SUM_EPS = F64(2.0**-101)
INF64 = F64(np.inf)
MINUS_ONE64 = F64(-1.0)
SCALE_LIMIT = np.int64(200)


@jitable
def expm1_series_dd(x):
    """x (1 + x/2! + ... + x^12/13!) in double-double for |x| < 2^-5."""
    d = fma_rn(x, C13, C12)
    d = fma_rn(x, d, C11)
    d = fma_rn(x, d, C10)
    d = fma_rn(x, d, C9)
    h, l = dd_mul(d, ZERO, x, ZERO)
    h, l = dd_add(h, l, F8H, F8L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F7H, F7L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F6H, F6L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F5H, F5L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F4H, F4L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F3H, F3L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, F2H, F2L)
    h, l = dd_mul(h, l, x, ZERO)
    h, l = dd_add(h, l, ONE, ZERO)
    return dd_mul(h, l, x, ZERO)


@jitable
def expm1_series_td(x):
    """x (1 + x/2! + ... + x^18/19!) in triple-double for |x| < 2^-5."""
    ph, pm, pl = T19
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T18)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T17)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T16)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T15)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T14)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T13)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T12)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T11)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T10)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T9)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T8)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T7)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T6)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T5)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T4)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T3)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, T2)
    ph, pm, pl = td_horner_step(ph, pm, pl, x, ZERO, ZERO, TD_ONE)
    return td_mul(ph, pm, pl, x, ZERO, ZERO)


@jitable
def pow2_small(q):
    """2^q as a double for -1022 <= q <= 1023 (bits: exact)."""
    return bitcast(np.uint64(q + np.int64(1023)) << np.uint64(52))


@jitable
def expm1_fast64(x):
    if x != x:
        return x, True
    if x > EXPM1_64_OVERFLOW:
        return INF64, True
    if x < EXPM1_64_SATURATE:
        return MINUS_ONE64, True
    a = fabs(x)
    if a < EXPM1_64_TINY:
        return x, True
    if a < EXPM1_64_SERIES:
        h, l = expm1_series_dd(x)
        return ziv_round(h, l, dd_error(h, EXPM1_64_SERIES_EPS), np.int64(0))
    h, l, q = exp_dd64(x, ZERO)
    if q >= SCALE_LIMIT:
        return ziv_round(h, l, dd_error(h, EXPM1_64_EXP_EPS), q)
    s = pow2_small(q)
    hs, ls = mul_rn(h, s), mul_rn(l, s)
    vh, vl = dd_add(hs, ls, MINUS_ONE64, ZERO)
    err = add_rn(dd_error(hs, EXPM1_64_EXP_EPS), dd_error(vh, EXPM1_64_SUM_EPS))  # rounded: < 2^-52 of it
    return ziv_round(vh, vl, err, np.int64(0))


@jitable
def expm1_f64(x):
    r, ok = expm1_fast64(x)
    if ok:
        return r
    if fabs(x) < EXPM1_64_SERIES:
        h, m, l = expm1_series_td(x)
        return td_round(h, m, l, np.int64(0))
    h, m, l, q = exp_td(x, ZERO, ZERO)
    if q >= SCALE_LIMIT:
        return td_round(h, m, l, q)
    h, m, l = td_scale(h, m, l, pow2_small(q))
    h, m, l = td_add(h, m, l, MINUS_ONE64, ZERO, ZERO)
    return td_round(h, m, l, np.int64(0))
