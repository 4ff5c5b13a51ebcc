"""exp(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Range: exp(x) overflows float32 (rounds to +inf) for x > 88.7228..., and
rounds to +0 for x < -103.972... (below 2^-150, half the smallest subnormal).
The clamps below use 89 and -104, outside both thresholds; between them the
double computation handles overflow and subnormal results itself.

Fast path: `exp_core(x, 0)`, relative error < 2^-50.5 (argued in _core).
Accurate path: `exp_dd(x, 0)`, relative error < 2^-92.
"""

import numpy as np

from ...primitives.rounding import add_rn, jitable, mul_rn, negate, sub_rn
from .core import F64, INF32, NAN32, ZERO, ZERO32, clamp, dd_to_f32, exp_core, exp_dd, round_if_safe, two_sum

EXP_OVERFLOW = np.float32(89.0)
EXP_UNDERFLOW = np.float32(-104.0)

@jitable
def exp_fast(x):
    """(exp(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide.  Branch-free: the specials are selected at the end,
    and the clamp keeps the double evaluation in range (a NaN evaluates exp(0))."""
    above, below, nan = x > EXP_OVERFLOW, x < EXP_UNDERFLOW, x != x
    r, ok = round_if_safe(exp_core(F64(ZERO32 if nan else clamp(x, EXP_UNDERFLOW, EXP_OVERFLOW)), ZERO))
    r = INF32 if above else r
    r = ZERO32 if below else r
    r = NAN32 if nan else r
    return r, ok or above or below or nan


@jitable
def exp_f32(x):
    r, ok = exp_fast(x)
    if ok:
        return r
    h, l = exp_dd(F64(x), ZERO)
    return dd_to_f32(h, l)


EXP64_OVERFLOW = F64(709.8)  # e^709.79 > DBL_MAX + ulp/2
EXP64_UNDERFLOW = F64(-745.2)  # e^-745.14 < 2^-1075: rounds to +0
EXP64_SUBNORMAL = F64(-708.0)  # below, the result is (nearly) subnormal: scale by 2^-512
SHIFT512_H = F64(float.fromhex("0x1.62e42fefa39efp+8"))  # 512 ln2, double-double
SHIFT512_L = F64(float.fromhex("0x1.abc9e3b39803fp-47"))
TWO_M512 = F64(2.0**-512)
TWO_P512 = F64(2.0**512)
EXP64_LARGE = F64(700.0)  # above, 2^k would overflow inside exp_dd: scale by 2^512
INF64 = F64(np.inf)


@jitable
def exp_f64(x):
    """exp for float64, faithfully rounded (not proven correctly rounded): the
    double-double exp_dd (relative error < 2^-92) rounded to its leading double
    (hi = RN(hi + lo) after the final fast_two_sum).  Deterministic on every
    backend, like everything built from the primitives.  Results below 2^-1022:
    e^(x + 512 ln2) 2^-512, the last product rounding once into the subnormals;
    above 700, e^(x - 512 ln2) 2^512."""
    if x != x:
        return x
    if x > EXP64_OVERFLOW:
        return INF64
    if x < EXP64_UNDERFLOW:
        return ZERO
    if x < EXP64_SUBNORMAL:
        zh, zl = two_sum(x, SHIFT512_H)
        h, l = exp_dd(zh, add_rn(zl, SHIFT512_L))
        return mul_rn(add_rn(h, l), TWO_M512)
    if x > EXP64_LARGE:
        zh, zl = two_sum(x, negate(SHIFT512_H))
        h, l = exp_dd(zh, sub_rn(zl, SHIFT512_L))
        return mul_rn(add_rn(h, l), TWO_P512)  # exact, or overflow to inf
    h, l = exp_dd(x, ZERO)
    return add_rn(h, l)
