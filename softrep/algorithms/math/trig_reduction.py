"""Range reduction and kernels shared by sin, cos and tan (float32).

Reduction (exact, Payne-Hanek with integers).  For a float32 a >= 1/2 write
a = m 2^e with m an integer in [2^23, 2^24) and -24 <= e <= 104.  We want
a * 2/pi = 4n + q + t with q in {0,1,2,3} and |t| <= 1/2.  Split
2/pi 2^(e+128) = H 2^160 + W + phi with integers H, W (0 <= W < 2^160; W is
row e + 24 of TWO_OVER_PI_LIMBS, five 32-bit limbs) and 0 <= phi < 1.  Then

    a * 2/pi = m H 2^32  +  m W 2^-128  +  m phi 2^-128.

The first term is a multiple of 4 (it changes nothing modulo 4), the last is
below 2^24 2^-128 = 2^-104.  So P = m W (184 bits, computed exactly in 32-bit
limbs) gives q = bits 128..129 of P and the fraction f = (P mod 2^128) 2^-128,
to within 2^-104 absolutely.  If f >= 1/2, q += 1 and t = f - 1 (two's
complement on 128 bits, exact).  t is converted to double by adding its four
32-bit limbs from the smallest (all of one sign: each addition rounds by
2^-53 relatively, < 3 * 2^-53 in total).

The smallest |t| over all float32 a >= 1/2 is 2^-29.8 (measured by running
this reduction on every float32, `python -m softrep.algorithms.math.exception_tables trigmin`),
so the 2^-104 truncation is < 2^-74 relatively: t has relative error
< 3 * 2^-53 + 2^-74 < 2^-51.4.

For a < 1/2 no reduction is needed: q = 0 and t = RN(a * RN(2/pi)), relative
error < 2^-53 + 2^-54 (a is exact in double; 2/pi is rounded once).

Kernels: sin(pi t / 2) = t S(t^2) and cos(pi t / 2) = C(t^2) with the
Chebyshev polynomials of _mathlib2_tables (approximation error < 2^-54.5 and
< 2^-55.4, coefficients as rounded).  Rounding errors, relative:
* t S(t^2): u = t^2 rounds once (2^-53) and S is flat (u S'(u)/S(u) <= 0.21),
  Horner with fma on terms that shrink by >= 2.4x per degree: < 1.3 * 2^-53,
  the product t S once more: with t's 2^-51.4 the total is < 6.4 * 2^-53
  = 2^-50.3.
* C(t^2): relative sensitivity to t is (pi t/2) tan(pi t/2) <= 0.79, to u is
  <= 0.4; Horner: 1 - 0.31 + ... with C >= 0.707: < 1.9 * 2^-53; total
  < 0.79 * 6 * 2^-53 + 0.4 * 2^-53 + 1.9 * 2^-53 + 2^-54.5 < 7.5 * 2^-53 = 2^-50.1.
* tan = S/C or C/S: the sum of both plus one division: < 15 * 2^-53 = 2^-49.1.
All below the 2^-49 the rounding test of _mathlib2 assumes (tan is the
tightest; the exhaustive verifier confirms every input).
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import abs32, coefficient_tuple, horner, neg32, signbit32
from .exception_tables import decide
from .coefficients import COS_HALFPI, SIN_HALFPI, TWO_OVER_PI, TWO_OVER_PI_LIMBS

F64 = np.float64
TWO_OVER_PI_D = F64(TWO_OVER_PI)
SIN_COEFFS = coefficient_tuple(SIN_HALFPI)
COS_COEFFS = coefficient_tuple(COS_HALFPI)
LIMBS = np.array(TWO_OVER_PI_LIMBS, dtype=np.uint32)  # rows: e = -24 .. 104
_LAST_ROW = LIMBS.shape[0] - 1
# The same limbs as 64-bit words: (limb 0 + limb 1 2^32, limb 2 + limb 3 2^32, limb 4).
LIMB_PAIRS = np.stack([LIMBS[:, 0].astype(np.uint64) | (LIMBS[:, 1].astype(np.uint64) << np.uint64(32)),
                       LIMBS[:, 2].astype(np.uint64) | (LIMBS[:, 3].astype(np.uint64) << np.uint64(32)),
                       LIMBS[:, 4].astype(np.uint64)], axis=1)

HALF_F32 = np.float32(0.5)
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_THREE = np.uint64(3)
_ONE = np.uint64(1)
_HALF_LIMB = np.uint64(0x80000000)
_MANT = np.uint32(0x7FFFFF)
_HIDDEN = np.uint32(0x800000)
_ROW_BIAS = 126  # biased float32 exponent of 1/2 -> row 0 (e = -24)
_P2M32 = F64(2.0**-32)
_P2M64 = F64(2.0**-64)
_P2M96 = F64(2.0**-96)
_P2M128 = F64(2.0**-128)

@jitable
def reduce_quadrant(a):
    """(q, t) with a * 2/pi = 4n + q + t, q in 0..3, |t| <= 1/2, for a finite
    float32 a >= 0; t a double with relative error < 2^-51.4 (module docstring).
    Any other a (inf, NaN) gives some finite (q, t) without touching memory
    outside the table.

    Branch-free, so that the vectorised fast loops of sin and cos can use it:
    both the a < 1/2 shortcut and the integer reduction are computed and one is
    selected, and the negative fraction is formed from every limb and selected.
    The integer steps are exact and the selections pick the values a branch
    would compute, so (q, t) is the same either way."""
    inline_into_callers()
    u = bitcast(a)
    # The row of a's exponent, clamped into the table: a < 1/2 (whose row would
    # be negative) takes the shortcut below, inf and NaN are never used.
    row = np.int64(u >> np.uint32(23)) - _ROW_BIAS
    row = np.uint64(0 if row < 0 else (_LAST_ROW if row > _LAST_ROW else row))
    m = np.uint64((u & _MANT) | _HIDDEN)
    # 24-bit m times 32-bit limbs: both widened from 32 bits, so the vector
    # code multiplies 32 x 32 -> 64 bits (vpmuludq) instead of 64 x 64.
    # The limbs are read in pairs (LIMB_PAIRS): three 64-bit loads of the row
    # instead of five 32-bit ones (one gather each in the vector code).
    w01 = LIMB_PAIRS[row, 0]
    w23 = LIMB_PAIRS[row, 1]
    p = m * (w01 & _M32)
    l0 = p & _M32
    p = m * (w01 >> _S32) + (p >> _S32)
    l1 = p & _M32
    p = m * (w23 & _M32) + (p >> _S32)
    l2 = p & _M32
    p = m * (w23 >> _S32) + (p >> _S32)
    l3 = p & _M32
    p = m * LIMB_PAIRS[row, 2] + (p >> _S32)
    q = np.int64(p & _THREE)
    negative = l3 >= _HALF_LIMB
    # 2^128 - (l3 l2 l1 l0): complement every limb, add one with carries
    c0 = (l0 ^ _M32) + _ONE
    c1 = (l1 ^ _M32) + (c0 >> _S32)
    c2 = (l2 ^ _M32) + (c1 >> _S32)
    c3 = (l3 ^ _M32) + (c2 >> _S32)
    q = (q + 1) & 3 if negative else q
    l0 = c0 & _M32 if negative else l0
    l1 = c1 & _M32 if negative else l1
    l2 = c2 & _M32 if negative else l2
    l3 = c3 & _M32 if negative else l3
    t = add_rn(mul_rn(F64(l0), _P2M128), mul_rn(F64(l1), _P2M96))
    t = add_rn(t, mul_rn(F64(l2), _P2M64))
    t = add_rn(t, mul_rn(F64(l3), _P2M32))
    t = negate(t) if negative else t
    small = a < HALF_F32
    q = 0 if small else q
    t = mul_rn(F64(a), TWO_OVER_PI_D) if small else t
    return q, t

# Cody-Waite reduction for a < 2^20 (`reduce_quadrant_small`): 2/pi = CW1 + CW2
# + CW3 + delta with CW1 and CW2 of at most 29 significant bits, CW3 =
# RN(2/pi - CW1 - CW2) and |delta| < 2^-115 (tests/test_mathlib2_trig_small.py checks
# all three against MPFR).
CW_LIMIT_F32 = np.float32(2.0**20)
CW1 = F64(float.fromhex("0x1.45f306ep-1"))
CW2 = F64(float.fromhex("-0x1.b1bbeadp-32"))
CW3 = F64(float.fromhex("-0x1.80f62a0b82b2dp-62"))
_SHIFT = F64(6755399441055744.0)  # 1.5 * 2^52: RN(z + _SHIFT) - _SHIFT rounds z to an integer (|z| < 2^51)
_Q_MASK64 = np.int64(3)


@jitable
def reduce_quadrant_small(a):
    """(q, t) with a * 2/pi = 4n + q + t, q in 0..3, |t| < 1/2, for a float32
    0 <= a < 2^20: the q and t of reduce_quadrant's exact reduction, t with
    relative error < 2^-51.9 (reduce_quadrant proves 2^-51.4, the bound the
    kernels' analysis takes).

    k = RN(a RN(2/pi) + 1.5 * 2^52) - 1.5 * 2^52 is the integer nearest to
    a RN(2/pi) (the product exact inside the fma), which lies within
    2^20 2^-55 = 2^-35 of a 2/pi.  For a >= 1/2, 2a is a float32 >= 1/2, so
    2a 2/pi is at least 2^-29.8 from every integer (module docstring: the
    smallest |t| over every float32 >= 1/2), i.e. a 2/pi is at least 2^-30.8
    from every half-integer: k is the integer nearest to a 2/pi, and T =
    a 2/pi - k, |T| <= 1/2 - 2^-30.8, is reduce_quadrant's exact t (q = k
    mod 4 its quadrant, the low bits of the shifted sum).  For a < 1/2,
    a 2/pi < 0.32 and k = 0.

    p1 = a CW1 is exact (24 + 29 bits) and below 2^20; t1 = p1 - k is exact:
    |t1| <= |T| + a |CW2 + CW3 + delta| <= 1/2 + 2^-11 < 1, so for p1 >= 1
    it is a multiple of ulp(p1) of at most 53 bits; CW2 + CW3 + delta < 0
    gives p1 > a 2/pi, so k = 0 (t1 = p1) wherever p1 < 1/2, and k = 1 for
    p1 in [1/2, 1) is exact by Sterbenz.  t2 =
    fma(a, CW2, t1) and t = fma(a, CW3, t2) round once each, the products
    inside exact.  With T = t1 + a CW2 + a CW3 + a delta and u = t1 + a CW2:
        t - T = u e1 (1 + e2) + (u + a CW3) e2 - a delta,  |e1|, |e2| <= 2^-53.
    For a >= 1/2, |T| >= 2^-29.8 while |a CW3| < 2^20 2^-61.4 = 2^-41.4, so
    |u| and |u + a CW3| are below (1 + 2^-11) |T|, and a |delta| < 2^-95 <
    2^-65 |T|: |t - T| < (2^-52 (1 + 2^-11) + 2^-105 + 2^-65) |T| < 2^-51.9 |T|.
    For a < 1/2, T = a 2/pi >= 0.63 a, |a CW3| < 2^-60 |T| and a |delta|
    < 2^-114 |T|: the same bound.  No product underflows (a >= 2^-149)."""
    inline_into_callers()
    ad = F64(a)
    shifted = fma_rn(ad, TWO_OVER_PI_D, _SHIFT)
    k = sub_rn(shifted, _SHIFT)
    t = sub_rn(mul_rn(ad, CW1), k)
    t = fma_rn(ad, CW2, t)
    t = fma_rn(ad, CW3, t)
    # q = k mod 4 from the low bits of shifted = 1.5 * 2^52 + k, whose
    # mantissa ends in k (0 <= k < 2^51): an integer in the double's lanes,
    # where a conversion of k gives 32-bit lanes that every select on q widens
    return np.int64(bitcast(shifted)) & _Q_MASK64, t


@jitable
def quadrant_small(x):
    """(q, t, small) for the float32 trig functions' branch-free first steps:
    reduce_quadrant_small of |x|, and `small`: |x| < 2^20.  Elsewhere (|x| >=
    2^20, infinities, NaN) q and t are meaningless but harmless (no memory is
    read), and the step leaves x undecided."""
    inline_into_callers()
    a = abs32(x)
    q, t = reduce_quadrant_small(a)
    return q, t, a < CW_LIMIT_F32


@jitable
def decide_quadrant(x, y, small, odd):
    """(result, decided) of such a first step from its approximation y of
    f(|x|) (within 2^-49): the rounding test in the exception tables' window,
    the sign of x put back for an odd f; decided only where `small` (NaN and
    infinities, which fail it, are left to the step after, with |x| >=
    2^20: one flag for all three)."""
    inline_into_callers()
    r, ok = decide(y)
    r = neg32(r) if odd and signbit32(x) else r
    return r, ok & small


@jitable
def sin_halfpi(t):
    """sin(pi t / 2) for |t| <= 1/2."""
    return mul_rn(t, horner(SIN_COEFFS, mul_rn(t, t)))

@jitable
def cos_halfpi(t):
    """cos(pi t / 2) for |t| <= 1/2."""
    return horner(COS_COEFFS, mul_rn(t, t))
