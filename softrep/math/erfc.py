"""erfc(x) = 1 - erf(x) for float32, correctly rounded (scheme: softrep/math/_mathlib2.py).

Ranges (erfc(-inf) = 2, erfc(+inf) = +0):
* x < -4: erfc x = 2 - erfc|x| with erfc|x| < 1.6e-8 < 2^-24 (half an ulp
  below 2): rounds to 2.
* -4 <= x < 0: 1 + erf|x| (erf's fast path, 2^-49.7): the result is >= 1 and
  erf|x| <= it, so the error stays < 2^-49.7 + 2^-53.
* 0 <= x <= 1/2: 1 - erf x with erf x <= 0.5205: the result is >= 0.4795,
  erf's error counts 1.09 times: < 1.09 * 2^-51.8 + 2^-53 < 2^-50.9.
* 1/2 < x <= 10.25: e^(-x^2) R(x) (softrep/math/_erf.py), < 2^-49.9.
* x > 10.25: erfc x < 2^-151 (erfc 10.07 < 2^-150 already): rounds to +0.
The double results for x close to 10 are normal doubles (about 2^-150), so
the float32 rounding to a subnormal happens once, in the rounding test.
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
"""

import numpy as np

from ..rounding import add_rn, bitcast, jitable, sub_rn
from ._erf import erf_small, erfc_mid
from ._core import abs32
from ._mathlib2 import exception_arrays, finish
from .erf import erf_approx

F64 = np.float64
ONE = F64(1.0)
TWO = F64(2.0)
HALF_F32 = np.float32(0.5)
ZERO_F32 = np.float32(0.0)
TWO_F32 = np.float32(2.0)
LOW_F32 = np.float32(-4.0)
HIGH_F32 = np.float32(10.25)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.math._mathlib2 scan erfc): (bits of x, bits of erfc x)
ERFC_EXCEPTIONS = (
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(ERFC_EXCEPTIONS)


@jitable
def erfc_approx(x):
    """erfc(x) in double for a float32 x (infinities included), relative error < 2^-49.7."""
    if x < LOW_F32:
        return TWO
    if x < ZERO_F32:
        return add_rn(ONE, erf_approx(abs32(x)))
    if x <= HALF_F32:
        return sub_rn(ONE, erf_small(x))
    if x > HIGH_F32:
        return F64(0.0)
    return erfc_mid(x)


@jitable
def erfc_f32(x):
    if x != x:
        return x
    return finish(erfc_approx(x), _KEYS, _VALUES, bitcast(x))
