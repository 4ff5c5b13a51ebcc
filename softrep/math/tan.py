"""tan(x) for float32, correctly rounded (scheme: softrep/math/_mathlib2.py).

tan is odd: computed on a = |x| and the sign applied after (tan(+-0) = +-0).
tan(+-inf) and tan(NaN) are NaN.  No float32 is close enough to a pole for
an overflow: |t| >= 2^-29.8 after reduction, so |tan| < 2^30.

Fast path: a * 2/pi = 4n + q + t (softrep/math/_trig.py), tan(a) =
sin(pi t/2) / cos(pi t/2) for even q, -cos(pi t/2) / sin(pi t/2) for odd q;
relative error < 2^-49.1 (argued in _trig).
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
"""

import numpy as np

from ..rounding import bitcast, div_rn, jitable, negate
from ._mathlib2 import abs_f32, exception_arrays, finish, neg_f32, sign_bit_f32
from ._trig import cos_halfpi, reduce_quadrant, sin_halfpi

NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.math._mathlib2 scan tan): (bits of |x|, bits of tan|x|)
TAN_EXCEPTIONS = (
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(TAN_EXCEPTIONS)

@jitable
def tan_approx(a):
    """tan(a) in double for a finite float32 a >= 0, relative error < 2^-49.1."""
    q, t = reduce_quadrant(a)
    s = sin_halfpi(t)
    c = cos_halfpi(t)
    if q & 1 == 0:
        return div_rn(s, c)
    return negate(div_rn(c, s))

@jitable
def tan_f32(x):
    a = abs_f32(x)
    if x != x or a == INF32:
        return NAN32
    r = finish(tan_approx(a), _KEYS, _VALUES, bitcast(a))
    if sign_bit_f32(x):
        return neg_f32(r)
    return r
