"""erf(x) for float32, correctly rounded (scheme: softrep/math/_mathlib2.py).

erf is odd: computed on a = |x| and the sign applied after (erf(+-0) = +-0,
erf(+-inf) = +-1).  For a > 4, 1 - erf a = erfc a < erfc 4 < 1.6e-8 < 2^-25
(half an ulp below 1): the result rounds to 1.

Fast path (softrep/math/_erf.py): a <= 1/2, a P(a^2) (2^-51.8); 1/2 < a <= 4,
1 - erfc a with erfc a <= 0.48 (2^-49.9): the result is >= 0.52, so erfc's
error counts 0.92 times, plus one rounding: < 2^-49.7.
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
"""

import numpy as np

from ..rounding import bitcast, jitable, sub_rn
from ._erf import erf_small, erfc_mid
from ._core import abs32, neg32, signbit32
from ._mathlib2 import exception_arrays, finish

F64 = np.float64
NAN32 = np.float32(np.nan)
ONE = F64(1.0)
HALF_F32 = np.float32(0.5)
SATURATE_F32 = np.float32(4.0)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.math._mathlib2 scan erf): (bits of |x|, bits of erf|x|)
ERF_EXCEPTIONS = (
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(ERF_EXCEPTIONS)


@jitable
def erf_approx(a):
    """erf(a) in double for a float32 a >= 0 (+inf included), relative error < 2^-49.7."""
    if a <= HALF_F32:
        return erf_small(a)
    if a > SATURATE_F32:
        return ONE
    return sub_rn(ONE, erfc_mid(a))


@jitable
def erf_f32(x):
    if x != x:
        return x
    a = abs32(x)
    r = finish(erf_approx(a), _KEYS, _VALUES, bitcast(a))
    if signbit32(x):
        return neg32(r)
    return r
