"""atan(x) for float32, correctly rounded (scheme: softrep/algorithms/math/exception_tables.py).

atan is odd: computed on a = |x| and the sign applied after (atan(+-0) = +-0,
atan(+-inf) = +-RN(pi/2)).

Reduction to |u| <= 1.01/16 around the nine points c = j/8, j = 0..8:
* a <= 1: j = floor(8a + 1/2), u = (a - c)/(1 + a c), atan a = atan c + atan u.
  For j >= 1, a >= 1/16 has its last bit at >= 2^-28, so a - c is exact, and
  a c (<= 1, last bit >= 2^-31) plus 1 fits in 32 bits: exact.  For j = 0,
  u = a.  u is one rounded division: relative error 2^-53.
* 1 < a < 16: j = floor(RN(8/a) + 1/2) in 1..8 and u = (1 - c a)/(a + c), so
  atan a = (pi/2 - atan c) - atan u; c a has its last bit at >= 2^-26 and is
  <= 8.5, so 1 - c a and a + c are exact.  |8/a - j| <= 1/2 + 2^-50 keeps
  |u| <= 1.01/16.
* a >= 16 (and +inf): u = RN(1/a), atan a = pi/2 - atan u.
atan u = u A(u^2), A a Chebyshev fit with relative error 2^-63.8.

Error (relative): atan u carries u's 2^-53 (d atan(u)/du u/atan u <= 1), u^2
rounded (2^-53, times u^2 A'/A < 2^-9), Horner on 1 - u^2/3 + ... (< 1.1 *
2^-53) and the product (2^-53): < 3.2 * 2^-53.  The table values are rounded
once (2^-53).  Combining, for a <= 1 and j >= 1 the result is >= atan(1/8) -
atan(1.01/16) >= 0.061 while atan c <= 2 * result and |atan u| <= 1.03 *
result: < (2 + 3.3 + 1) 2^-53 = 2^-50.3.  For a > 1 the result is >= pi/4
and |atan u| <= 0.063: < 2.4 * 2^-53.  All below 2^-49.
"""

import numpy as np

from ...primitives.rounding import add_rn, bitcast, div_rn, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import abs32, neg32, signbit32
from .exception_tables import coefficient_array, exception_arrays, finish, horner
from .coefficients import ATAN_CENTER, ATAN_CENTER_COMPL, ATAN_SMALL

F64 = np.float64
NAN32 = np.float32(np.nan)
ONE_F32 = np.float32(1.0)
SIXTEEN_F32 = np.float32(16.0)
ONE = F64(1.0)
HALF = F64(0.5)
EIGHT = F64(8.0)
EIGHTH = F64(0.125)
ATAN_COEFFS = coefficient_array(ATAN_SMALL)
CENTER = coefficient_array(ATAN_CENTER)
CENTER_COMPL = coefficient_array(ATAN_CENTER_COMPL)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.algorithms.math.exception_tables scan atan): (bits of |x|, bits of atan|x|)
ATAN_EXCEPTIONS = (
    (0x3a27ba3b, 0x3a27ba3a),
    (0x3aac434b, 0x3aac4344),
    (0x3ad637fa, 0x3ad637ee),
    (0x3b06f308, 0x3b06f2fc),
    (0x3b7c1bc9, 0x3b7c1b78),
    (0x3be8237b, 0x3be8227d),
    (0x3d8d6b23, 0x3d8d31c3),
    (0x3dbb6ac7, 0x3dbae583),
    (0x3e242361, 0x3e22c0f5),
    (0x3ee06db1, 0x3ed38381),
    (0x3f89058c, 0x3f51c5ec),
    (0x40357f1d, 0x3f9dab29),
    (0x40bf14c5, 0x3fb3d2b6),
    (0x421ae6b6, 0x3fc5c1e1),
    (0x4241b6f5, 0x3fc66b54),
    (0x424dd4a2, 0x3fc69324),
    (0x4252099d, 0x3fc69fe4),
    (0x426bef73, 0x3fc6e45e),
    (0x43d8ed1a, 0x3fc8c453),
    (0x4630da7d, 0x3fc90cf6),
    (0x46a8d965, 0x3fc90e56),
    (0x46c99109, 0x3fc90e96),
    (0x48b90f72, 0x3fc90fc4),
    (0x494a1b01, 0x3fc90fd1),
    (0x497bcdba, 0x3fc90fd2),
    (0x49f7be1b, 0x3fc90fd7),
    (0x4a2367a3, 0x3fc90fd7),
    (0x4ae1e272, 0x3fc90fd9),
    (0x4c700513, 0x3fc90fda),
    (0x4c700514, 0x3fc90fda),
    (0x4c700515, 0x3fc90fda),
    (0x4c700516, 0x3fc90fda),
    (0x4c700517, 0x3fc90fda),
    (0x4c700518, 0x3fc90fdb),
    (0x4c700519, 0x3fc90fdb),
    (0x4c70051a, 0x3fc90fdb),
    (0x4c70051b, 0x3fc90fdb),
    (0x4c70051c, 0x3fc90fdb),
    (0x4c70051d, 0x3fc90fdb),
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(ATAN_EXCEPTIONS)


@jitable
def atan_small(u):
    """atan(u) for |u| <= 1.01/16."""
    return mul_rn(u, horner(ATAN_COEFFS, mul_rn(u, u)))


@jitable
def atan_approx(a):
    """atan(a) in double for a float32 a >= 0 (+inf included), relative error < 2^-50.3."""
    ad = F64(a)
    if a <= ONE_F32:
        j = np.int64(add_rn(mul_rn(ad, EIGHT), HALF))
        if j == 0:
            return atan_small(ad)
        c = mul_rn(F64(j), EIGHTH)
        u = div_rn(sub_rn(ad, c), fma_rn(ad, c, ONE))
        return add_rn(CENTER[j], atan_small(u))
    if a >= SIXTEEN_F32:
        return sub_rn(CENTER_COMPL[0], atan_small(div_rn(ONE, ad)))
    j = np.int64(add_rn(div_rn(EIGHT, ad), HALF))
    c = mul_rn(F64(j), EIGHTH)
    u = div_rn(fma_rn(negate(c), ad, ONE), add_rn(ad, c))
    return sub_rn(CENTER_COMPL[j], atan_small(u))


@jitable
def atan_f32(x):
    if x != x:
        return NAN32
    a = abs32(x)
    r = finish(atan_approx(a), _KEYS, _VALUES, bitcast(a))
    if signbit32(x):
        return neg32(r)
    return r
