"""sigmoid(x) = 1 / (1 + e^-x) for float32, rounded once (scheme: softrep/algorithms/math/core.py).

With t = e^-|x| in (0, 1]: sigmoid(x) = 1/(1 + t) for x >= 0 and t/(1 + t) for
x < 0 (the same value, without overflow).  sigmoid(x) < 2^-150 rounds to +0
for x < -103.97; the clamp uses -120 -> +0.  For x > 17.33, t < 2^-25 and the
result rounds to 1; the clamp uses 120 -> 1.

Fast path: t = exp_core(-|x|) (2^-50.5); 1 + t and the division round once
each, no cancellation: < 2^-49.5.
Accurate path: the same in double-double from exp_dd (< 2^-91).
"""

import numpy as np

from ...primitives.rounding import add_rn, div_rn, fabs, jitable, negate
from .exp import exp_f64
from .core import (abs32, clamp, neg32, F64, NAN32, ONE, ZERO, ZERO32, dd_add, dd_div, dd_to_f32, exp_core, exp_dd,
                    round_if_safe)

SIGMOID_HI = np.float32(120.0)
SIGMOID_LO = np.float32(-120.0)
ONE_F32 = np.float32(1.0)
ZERO_F32 = np.float32(0.0)

@jitable
def sigmoid_fast(x):
    """(sigmoid(x) correctly rounded, True), or (undecided, False) where the
    fast path cannot decide.  Branch-free: x is clamped to [SIGMOID_LO,
    SIGMOID_HI] (a NaN evaluates sigmoid(0)), the specials selected at the end."""
    nan, above, below = x != x, x > SIGMOID_HI, x < SIGMOID_LO
    xc = ZERO_F32 if nan else clamp(x, SIGMOID_LO, SIGMOID_HI)
    t = exp_core(negate(F64(abs32(xc))), ZERO)
    num = ONE if xc >= ZERO_F32 else t
    r, ok = round_if_safe(div_rn(num, add_rn(ONE, t)))
    r = ONE_F32 if above else r
    r = ZERO32 if below else r
    r = NAN32 if nan else r
    return r, ok or above or below or nan


@jitable
def sigmoid_f32(x):
    r, ok = sigmoid_fast(x)
    if ok:
        return r
    na = negate(F64(abs32(x)))
    th, tl = exp_dd(na, ZERO)
    dh, dl = dd_add(ONE, ZERO, th, tl)
    if x >= ZERO_F32:
        h, l = dd_div(ONE, ZERO, dh, dl)
    else:
        h, l = dd_div(th, tl, dh, dl)
    return dd_to_f32(h, l)


SIGMOID64_HI = F64(40.0)  # 1 - sigmoid(40) < 2^-57: rounds to 1
SIGMOID64_LO = F64(-708.0)  # below, 1 + e^x = 1 to 2^-1021: sigmoid(x) = exp(x)
ONE64 = F64(1.0)


@jitable
def sigmoid_f64(x):
    """sigmoid for float64, faithfully rounded (not proven correctly rounded):
    t = exp_dd(-|x|), 1/(1 + t) or t/(1 + t) in double-double, rounded to the
    leading double; below -708 it is exp_f64(x) (relative difference < 2^-1021)."""
    if x != x:
        return x
    if x > SIGMOID64_HI:
        return ONE64
    if x < SIGMOID64_LO:
        return exp_f64(x)
    th, tl = exp_dd(negate(fabs(x)), ZERO)
    dh, dl = dd_add(ONE, ZERO, th, tl)
    if x >= ZERO:
        h, l = dd_div(ONE, ZERO, dh, dl)
    else:
        h, l = dd_div(th, tl, dh, dl)
    return add_rn(h, l)
