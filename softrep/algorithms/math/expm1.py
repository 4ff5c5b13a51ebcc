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
"""

import numpy as np

from ...primitives.rounding import jitable, negate
from .core import (F64, INF32, NAN32, ONE, ZERO, dd_add, dd_to_f32, exp_dd, expm1_core, round_if_safe)

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
