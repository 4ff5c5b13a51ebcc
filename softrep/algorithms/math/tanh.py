"""tanh(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

tanh is odd: computed on |x| (tanh(+-0) = +-0).  For |x| > 9.01, 1 - tanh|x| <
2 e^(-2|x|) < 2^-25 and the result rounds to 1; the clamp uses 20.

Fast path: tanh a = em / (em + 2) with em = expm1_core(2a) (2^-50, 2a exact);
em >= 0, so em + 2 and the division add one rounding each: < 2^-49.5.
Accurate path: em = exp_dd(2a) - 1 and em / (em + 2) in double-double; the
absolute error 2^-92 e^(2a) of em is < 2^-67 relatively for a >= 2^-25, and
below 2^-25 the fast path always decides (tanh a is within 2^-49 a of the
float32 a, rounding boundaries are 2^-25 a away).
"""

import numpy as np

from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, negate
from .core import (abs32, neg32, signbit32, F64, NAN32, ONE, TWO, ZERO, dd_add, dd_div, dd_to_f32, exp_dd, expm1_core,
                    round_if_safe)

TANH_SATURATE = np.float32(20.0)
ONE_F32 = np.float32(1.0)
ZERO_F32 = np.float32(0.0)

@jitable
def tanh_fast(x):
    """(tanh(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide.  Branch-free: |x| is clamped to the saturation bound
    (a NaN evaluates tanh(0)), the specials are selected at the end."""
    ax = abs32(x)
    nan, saturated = x != x, ax > TANH_SATURATE
    em = expm1_core(mul_rn(F64(ZERO_F32 if nan else (TANH_SATURATE if saturated else ax)), TWO))
    r, ok = round_if_safe(div_rn(em, add_rn(em, TWO)))
    r = ONE_F32 if saturated else r
    r = neg32(r) if signbit32(x) else r
    r = NAN32 if nan else r
    return r, ok or saturated or nan


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


TANH64_SATURATE = F64(20.0)  # 1 - tanh(20) < 2^-56: rounds to 1
TANH64_TINY = F64(2.0**-30)  # below, tanh x = x - x^3/3 (next term < 2^-120 |x|)
THIRD = F64(1.0 / 3.0)
ONE64 = F64(1.0)
ZERO64 = F64(0.0)


@jitable
def tanh_f64(x):
    """tanh for float64, faithfully rounded (not proven correctly rounded).
    |x| < 2^-30: fma(-x^2, x/3, x); else em/(em + 2) in double-double with
    em = exp_dd(2|x|) - 1 (absolute error 2^-92 e^(2|x|), relative < 2^-60 for
    |x| >= 2^-30), rounded to its leading double."""
    if x != x:
        return x
    a = fabs(x)
    if a > TANH64_SATURATE:
        r = ONE64
    elif a < TANH64_TINY:
        r = fma_rn(negate(mul_rn(a, a)), mul_rn(a, THIRD), a)
    else:
        eh, el = exp_dd(mul_rn(a, TWO), ZERO)
        mh, ml = dd_add(eh, el, negate(ONE), ZERO)
        dh, dl = dd_add(mh, ml, TWO, ZERO)
        h, l = dd_div(mh, ml, dh, dl)
        r = add_rn(h, l)
    if x < ZERO64 or (x == ZERO64 and bitcast(x) != bitcast(ZERO64)):
        return negate(r)
    return r
