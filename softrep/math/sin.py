"""sin(x) for float32, correctly rounded (scheme: softrep/math/_mathlib2.py).

sin is odd: computed on a = |x| and the sign applied after (sin(+-0) = +-0).
sin(+-inf) and sin(NaN) are NaN.

Fast path: a * 2/pi = 4n + q + t (softrep/math/_trig.py, exact reduction for
every float32), sin(a) = sin(pi t/2), cos(pi t/2), -sin(pi t/2), -cos(pi t/2)
for q = 0, 1, 2, 3; relative error < 2^-50.1 (argued in _trig).
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
"""

import numpy as np

from ..rounding import bitcast, jitable, negate
from ._mathlib2 import abs_f32, exception_arrays, finish, neg_f32, sign_bit_f32
from ._trig import cos_halfpi, reduce_quadrant, sin_halfpi

NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.math._mathlib2 scan sin): (bits of |x|, bits of sin|x|)
SIN_EXCEPTIONS = (
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(SIN_EXCEPTIONS)

@jitable
def sin_approx(a):
    """sin(a) in double for a finite float32 a >= 0, relative error < 2^-50.1."""
    q, t = reduce_quadrant(a)
    if q & 1 == 0:
        s = sin_halfpi(t)
    else:
        s = cos_halfpi(t)
    if q >= 2:
        s = negate(s)
    return s

@jitable
def sin_f32(x):
    a = abs_f32(x)
    if x != x or a == INF32:
        return NAN32
    r = finish(sin_approx(a), _KEYS, _VALUES, bitcast(a))
    if sign_bit_f32(x):
        return neg_f32(r)
    return r
