"""Double-precision pieces shared by erf and erfc (float32 arguments).

* `erf_small(a)`, 0 <= a <= 1/2: erf a = a P(a^2), P a Chebyshev fit in
  v = a^2 (relative error 2^-55.6).  a^2 is exact (a has 24 bits), Horner on
  P = 2/sqrt(pi) (1 - v/3 + ...) with terms shrinking >= 3x adds < 1.2 * 2^-53,
  the product 2^-53: relative error < 2.3 * 2^-53 = 2^-51.8.
* `erfc_mid(a)`, 1/2 < a <= 10.25: erfc a = e^(-a^2) R(a), R(a) = e^(a^2) erfc(a)
  (smooth, about 1/(a sqrt(pi))).  R is a degree-11 Chebyshev fit on each of
  39 pieces of width 1/4 in d = a - mid_j (relative error 2^-53.2, coefficients
  as rounded); d is exact (a has its last bit at >= 2^-24, mid_j = 5/8 + j/4).
  Horner in d, |d| <= 1/8, with |R'/R| < 1.3: < 1.4 * 2^-53.  e^(-a^2):
  a^2 exact, `exp_core` of _core (2^-50.5).  The product rounds once.
  Total < 2^-50.5 + (0.87 + 1.4 + 1) 2^-53 < 2^-49.9.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import jitable, mul_rn, negate, sub_rn
from .core import coefficient_tuple, exp_core, horner
from .exception_tables import coefficient_columns, horner_columns
from .coefficients import ERF_SMALL, ERFCX_PIECES

F64 = np.float64
ZERO = F64(0.0)
ERF_COEFFS = coefficient_tuple(ERF_SMALL)
ERFCX = coefficient_columns(ERFCX_PIECES)
PIECE_START = F64(0.5)
PIECES_PER_UNIT = F64(4.0)
MID_FIRST = F64(0.625)
PIECE_WIDTH = F64(0.25)
HALF_F32 = np.float32(0.5)
PIECE_LAST = np.int32(38)


@jitable
def erf_small(a):
    """erf(a) for a float32 0 <= a <= 1/2, relative error < 2^-51.8."""
    ad = F64(a)
    return mul_rn(ad, horner(ERF_COEFFS, mul_rn(ad, ad)))


@jitable
def erfc_mid(a):
    """erfc(a) for a float32 1/2 < a <= 10.25, relative error < 2^-49.9."""
    inline_into_callers()
    ad = F64(a)
    # The piece index (a - 1/2) * 4 is exact and lies in [0, 39]: its integer
    # part fits int32, and, being nonnegative, indexes the columns as an
    # unsigned integer (a signed index gets negative-index wraparound code).
    j = np.int32(mul_rn(sub_rn(ad, PIECE_START), PIECES_PER_UNIT))
    j = PIECE_LAST if j > PIECE_LAST else j
    d = sub_rn(ad, mul_rn(F64(j), PIECE_WIDTH))
    d = sub_rn(d, MID_FIRST)
    r = horner_columns(ERFCX, np.uint32(j), d)
    e = exp_core(negate(mul_rn(ad, ad)), ZERO)
    return mul_rn(e, r)
