"""exp(x) for float32, correctly rounded (scheme: softrep/math/_core.py).

Range: exp(x) overflows float32 (rounds to +inf) for x > 88.7228..., and
rounds to +0 for x < -103.972... (below 2^-150, half the smallest subnormal).
The clamps below use 89 and -104, outside both thresholds; between them the
double computation handles overflow and subnormal results itself.

Fast path: `exp_core(x, 0)`, relative error < 2^-50.5 (argued in _core).
Accurate path: `exp_dd(x, 0)`, relative error < 2^-93.
"""

import numpy as np

from ..rounding import jitable
from ._core import F64, INF32, NAN32, ZERO, ZERO32, dd_to_f32, exp_core, exp_dd, round_if_safe

EXP_OVERFLOW = np.float32(89.0)
EXP_UNDERFLOW = np.float32(-104.0)

@jitable
def exp_f32(x):
    if x != x:
        return NAN32
    if x > EXP_OVERFLOW:
        return INF32
    if x < EXP_UNDERFLOW:
        return ZERO32
    z = F64(x)
    r, ok = round_if_safe(exp_core(z, ZERO))
    if ok:
        return r
    h, l = exp_dd(z, ZERO)
    return dd_to_f32(h, l)


def grad(g, out, x):
    """Input gradient mul(g, out) (softrep ops, rounded to nearest; docs/order.md)."""
    from ..elementwise import mul

    return (mul(g, out),)
