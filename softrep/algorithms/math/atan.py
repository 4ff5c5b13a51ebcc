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

The CPU's vector loop runs the same values without a branch first
(`atan_fast`), decided in the exception tables' window; `atan_f32` takes
what it leaves.
"""

from fractions import Fraction
from math import isqrt

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import abs32, coefficient_tuple, fast_two_sum, horner, neg32, signbit32, two_prod
from .exact64 import bracket_err
from .multiword import td_add, td_const, td_div, td_mul, td_renorm, td_round
from .trig64 import PI_Q, PIO2_H, PIO2_L, PIO2_M
from .exception_tables import coefficient_array, decide, exception_arrays, finish
from .coefficients import ATAN_CENTER, ATAN_CENTER_COMPL, ATAN_SMALL

F64 = np.float64
NAN32 = np.float32(np.nan)
ONE_F32 = np.float32(1.0)
SIXTEEN_F32 = np.float32(16.0)
ONE = F64(1.0)
HALF = F64(0.5)
EIGHT = F64(8.0)
EIGHTH = F64(0.125)
ATAN_COEFFS = coefficient_tuple(ATAN_SMALL)
CENTER = coefficient_array(ATAN_CENTER)
CENTER_COMPL = coefficient_array(ATAN_CENTER_COMPL)
# atan c (j = 0..8) then pi/2 - atan c: the centres of both reductions, indexed by j + 9 (a > 1)
CENTERS = np.concatenate([CENTER, CENTER_COMPL])
NINE = np.uint32(9)
ZERO_F32 = np.float32(0.0)

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
def atan_fast(x):
    """(atan(x) correctly rounded, True), or (anything, False) where the
    rounding test cannot decide.  Branch-free, for the CPU's decided-first
    loop: the value of atan_approx with both reductions' operands selected
    per lane.  RN(8/a) is 8 RN(1/a) (a power-of-two scaling), so one
    reciprocal gives a > 1 its index and a >= 16 its u; j = 0 for a <= 1 is
    the same sum (atan 0 = +0, u = a/1).  An infinite a takes u = 1/a = 0:
    pi/2.  Indices go through int32 (AVX2 converts doubles to int32 only)."""
    inline_into_callers()
    a = abs32(x)
    nan = x != x
    ad = F64(ZERO_F32 if nan else a)
    big = a > ONE_F32
    huge = a >= SIXTEEN_F32
    inv = div_rn(ONE, ad)
    j = np.int32(add_rn(mul_rn(inv if big else ad, EIGHT), HALF))
    j = np.int32(0) if huge else j
    c = mul_rn(F64(j), EIGHTH)
    num = fma_rn(negate(c), ad, ONE) if big else sub_rn(ad, c)
    den = add_rn(ad, c) if big else fma_rn(ad, c, ONE)
    q = div_rn(num, den)
    t = atan_small(inv if huge else q)
    y = add_rn(CENTERS[np.uint32(j) + (NINE if big else np.uint32(0))], negate(t) if big else t)
    r, ok = decide(y)
    r = neg32(r) if signbit32(x) else r
    return (NAN32 if nan else r), ok | nan


@jitable
def atan_f32(x):
    r, ok = atan_fast(x)
    if ok:
        return r
    if x != x:
        return NAN32
    a = abs32(x)
    r = finish(atan_approx(a), _KEYS, _VALUES, bitcast(a))
    if signbit32(x):
        return neg32(r)
    return r


# --------------------------------------------------------------------------- float64
#
# atan_f64: correctly rounded (scheme: softrep/algorithms/math/multiword.py).
#
# Specials: NaN -> NaN; |x| <= 2^-27: atan x rounds to x (x^3/3 is below 2^-54
# |x|, less than half the gap to the neighbouring double, also below a power
# of two); |x| >= 2^54 (and +-inf): +-RN(pi/2), since pi/2 = RN(pi/2) + 0.276
# ulp and atan a = pi/2 - e with 0 < e <= 1/a <= 0.25 ulp: the exact value is
# within [0.026, 0.276] ulp above RN(pi/2).
#
# Reduction (a = |x|): v = a for a <= 1, v = 1/a otherwise (atan a = pi/2 - atan v);
# c = j/64 with j = round(64 v_h), and
#     atan v = atan c + atan u,   u = (v - c)/(1 + v c),   |u| <= 2^-7 (1 + 2^-40).
# v_h - c is exact (c is a multiple of 2^-6 >= ulp(v_h) and |v_h - c| <= 2^-7,
# or c = 0).  For j >= 1 the result is at least half of atan c (u >= -2^-7,
# c >= 2^-6): cancellation costs at most a factor 2; for a > 1 the result is
# >= pi/4 and pi/2 - atan v loses nothing.  atan(j/64), j = 0..64, are exact
# at import (400-bit fixed point: three argument halvings
# atan y = 2 atan(y / (1 + sqrt(1 + y^2))), integer square roots, then the
# series; error < 2^-390), stored as triple-doubles (< 2^-159 relatively).
#
# Fast path: plain double with a double-double quotient and its own
# reduction, around j/256 (atan_fast64, below); where it cannot decide, the
# accurate path.
# Accurate path (triple-double): the same steps with td_div, td_mul, td_add
# (< 2^-148 each), atan u to u^21/21 (remainder u^22/23 < 2^-158 relatively),
# Horner on 11 triple-double coefficients: < 2^-143, with the factor 2 of the
# cancellation; taken as 2^-140.

_ATAN_BITS = 400


def _atan_fixed(j, steps=64):
    """atan(j/steps) 2^400 for 0 <= j <= steps (three halvings, then the series)."""
    one = 1 << _ATAN_BITS
    y = (j << _ATAN_BITS) // steps
    for _ in range(3):
        y = (y << _ATAN_BITS) // (one + isqrt(one * one + y * y))
    total, power, k, y2 = 0, y, 0, y * y
    while power:
        total += (power // (2 * k + 1)) * (1 if k % 2 == 0 else -1)
        power = power * y2 >> (2 * _ATAN_BITS)
        k += 1
    return Fraction(8 * total, one)


ATAN_TABLE = np.array([td_const(_atan_fixed(j)) for j in range(65)], dtype=np.float64)  # (65, 3)
ATAN_TABLE[0] = 0.0  # atan 0 = 0 exactly
ATAN_TD = np.array([td_const(Fraction((-1) ** k, 2 * k + 1)) for k in range(11)], dtype=np.float64)
A3, A5, A7, A9 = (F64(float(Fraction((-1) ** k, 2 * k + 1))) for k in range(1, 5))
PIO2_64 = F64(float(PI_Q / 2))  # RN(pi/2)
ATAN_TINY = F64(2.0**-27)
ATAN_HUGE = F64(2.0**54)
TABLE_STEPS64 = F64(64.0)
INV_TABLE_STEPS64 = F64(1.0 / 64.0)
NAN64 = F64(np.nan)
ZERO64 = F64(0.0)
SHIFT64 = F64(6755399441055744.0)  # 1.5 2^52: (y + SHIFT) - SHIFT rounds y to an integer


@jitable
def _atan_special(x):
    """(result, True) for NaN, |x| <= 2^-27 and |x| >= 2^54 (infinities
    included), else (anything, False)."""
    if x != x:
        return NAN64, True
    a = fabs(x)
    if a <= ATAN_TINY:
        return x, True
    if a >= ATAN_HUGE:
        return (negate(PIO2_64) if x < ZERO64 else PIO2_64), True
    return ZERO64, False


@jitable
def _atan_centre(vh):
    """(j, c = j/64, v_h - c), j = round(64 v_h) (every step exact)."""
    jf = sub_rn(add_rn(mul_rn(vh, TABLE_STEPS64), SHIFT64), SHIFT64)
    return np.int64(jf), mul_rn(jf, INV_TABLE_STEPS64), fma_rn(negate(jf), INV_TABLE_STEPS64, vh)


# --------------------------------------------------------------------------- float64 fast path
#
# atan_fast64: plain-double operations only, branch-free (both reductions are
# computed and selected, the specials replaced at the end; arguments outside
# 2^-27 < a < 2^54, NaN included, evaluate a = 1), so that the CPU launcher's
# first loop vectorises.  Relative errors; each rounding counted, u = 2^-53.
#
# Reduction to |u| <= 2^-9 (1 + 2^-44) around c = j/256, j = 0..256, with the
# argument kept as a numerator and a denominator (no double-double 1/a):
# * a <= 1: j = round(256 a), u = (a - c)/(1 + a c), atan a = atan c + atan u.
#   N = a - c is exact (both are multiples of ulp(a), |a - c| <= 2^-9 <= a
#   for j >= 1; c = 0 for j = 0).  a c = p + pe exactly (two_prod; p <= 1),
#   1 + p = dh + dl0 exactly (fast_two_sum), dl = RN(dl0 + pe): D = 1 + a c
#   to 2^-105 absolutely, 1 <= D <= 2.
# * a > 1: j = round(256 RN(1/a)) (so |1/a - c| <= 2^-9 + 2^-53), u =
#   (1/a - c)/(1 + c/a) = (1 - c a)/(a + c), atan a = pi/2 - atan c - atan u.
#   N = (1 - p) - pe exactly, 1 - p exact: for j >= 1, a <= 512 and c a lies
#   in [2/3, 2 (1 + 2^-52)] (Sterbenz up to 2; above, p and 1 are multiples
#   of 2^-52 and |1 - p| < 2); p = pe = 0 for j = 0.  D = a + c = dh + dl
#   exactly (fast_two_sum, a > c).
#   j is read from the bits of RN(256 v + 1.5 2^52) (ulp 1 there: the integer
#   nearest 256 v sits in the low significand bits), an integer operation.
# * Quotient: inv = RN(1/dh), N1 = RN(nh + nl), uh = RN(N1 inv): uh = u (1 +
#   eta), |eta| < 3u + |dl/dh| + u^2 < 2^-50.6.  The remainder rho = N - uh D
#   = nh + nl - uh dh - uh dl by fma(-uh, dh, nh), + nl, fma(-uh, dl, .):
#   |rho| = |eta| |N| < 2^-50.6 D |u|, each rounding at most u (|rho| + |nl|
#   + |uh dl|): < 2^-103.6 |u| + 2^-104.9 absolutely; ul = RN(rho inv)
#   (relative 2^-51.4 of rho/D): |uh + ul - u| < 2^-101.5 |u| + 2^-104.9.
# * atan u = u - u^3/3 + u^5/5 - u^7/7 + u^9/9 - ..., z = u^2 <= 2^-18
#   (1 + 2^-43): the remainder is below u z^5/11 < 2^-93.4 |u|.  Computed as
#   uh + sl, sl = fma(uh z, P(z), ul (1 - z)), z = RN(uh^2), P = -1/3 + z/5
#   - z^2/7 + z^3/9 by Horner (A3 = RN(-1/3) to 2^-54, the last fma 2^-53,
#   the inner ones damped by z/0.6: 1.5u).  T = uh z P, |T| < 2^-19.58 |u|,
#   carries the roundings of z, uh z and P: 3.5u |T| < 2^-70.77 |u|; the
#   rounding of sl u |sl| < 2^-72.58 |u|; ul (1 - z) replaces ul/(1 + u^2)
#   (error z^2 |ul| < 2^-86 |u|) and T(uh) differs from T(u) by that first
#   order term, within 2^-100 |u|.  So atan u = uh + sl within 2^-70.37 |u|
#   + 2^-104.8.
# * Table: atan(j/256) as double-doubles Th + Tl (from the 400-bit values of
#   _atan_fixed, each rounded to nearest twice): relative error < 2^-106
#   (measured < 2^-107.1).  h1 + e1 = Th + uh exactly (fast_two_sum: Th >=
#   atan(2^-8) > |uh| for j >= 1, Th = 0 for j = 0), l1 = RN(RN(e1 + Tl) +
#   sl): roundings < 2^-105 h1 + u |l1| < 2^-72.58 |u| + 2^-104.9 h1.
#   atan v = h1 + l1 within 2^-70.0 |u| + 2^-103.9 atan v, and |u| <=
#   (1 + 2^-18) atan v (j = 1: atan v >= atan(2^-9); j = 0: atan u >= u (1 -
#   z/3)): within 2^-69.99 atan v.
# * a > 1: g + ge = PIO2_H - h1 exactly (fast_two_sum, h1 <= pi/4 + 2^-60),
#   gl = RN(RN(ge + PIO2_M) - l1) (fma, the product by -1 exact), rounding
#   < 2^-53 (2^-52 + 2^-28) < 2^-81; PIO2_H + PIO2_M is pi/2 to 2^-106; the
#   result is >= pi/4 >= atan v, so the relative error stays < 2^-69.99
#   (+ 2^-80).
# Finally h + l = fast_two_sum of the selected pair (exact, |l| <= 2^-53 |h|):
# within E < 2^-69.98 |h + l|.  The rounding test (exact64.bracket_err) uses
# err = 2^-67 |h|, more than 2 E + 2^-52 |l| with a margin of 2^1.9.  atan x
# is irrational for x != 0 (never a double or a midpoint), so a window that
# rounds alike gives RN(atan x); the results are normal doubles, >= 2^-27.

STEPS256 = 256
ATAN256_H = np.array([td_const(_atan_fixed(j, STEPS256))[0] for j in range(STEPS256 + 1)], dtype=np.float64)
ATAN256_L = np.array([td_const(_atan_fixed(j, STEPS256))[1] for j in range(STEPS256 + 1)], dtype=np.float64)
ATAN256_H[0] = ATAN256_L[0] = 0.0  # atan 0 = 0 exactly
TABLE_STEPS256 = F64(256.0)
INV_TABLE_STEPS256 = F64(1.0 / 256.0)
SHIFT64_BITS = np.uint64(0x4338000000000000)  # the bits of SHIFT64 = 1.5 2^52
REL_FAST64 = F64(2.0**-67)
NEG_ONE = F64(-1.0)


@jitable
def atan_eval_fast64(x):
    """(h, l, 0) with h + l within 2^-69.98 of atan|x| relatively, for
    2^-27 < |x| < 2^54 (comment above); other x evaluate atan(1).
    Branch-free: both reductions are computed, then selected; inlined into
    its callers (LLVM would leave a call to a function this large, which
    keeps the loop scalar)."""
    inline_into_callers()
    a = fabs(x)
    a = a if (a > ATAN_TINY) & (a < ATAN_HUGE) else ONE
    inverse = a > ONE
    q = div_rn(ONE, a)
    v = q if inverse else a
    t = add_rn(mul_rn(v, TABLE_STEPS256), SHIFT64)
    j = bitcast(t) - SHIFT64_BITS
    c = mul_rn(sub_rn(t, SHIFT64), INV_TABLE_STEPS256)
    p, pe = two_prod(a, c)
    nh = sub_rn(ONE, p) if inverse else sub_rn(a, c)
    nl = negate(pe) if inverse else ZERO64
    dh, dl = fast_two_sum(a if inverse else ONE, c if inverse else p)
    dl = dl if inverse else add_rn(dl, pe)
    inv = div_rn(ONE, dh)
    uh = mul_rn(add_rn(nh, nl), inv)
    rho = fma_rn(negate(uh), dl, add_rn(fma_rn(negate(uh), dh, nh), nl))
    ul = mul_rn(rho, inv)
    z = mul_rn(uh, uh)
    poly = fma_rn(z, fma_rn(z, fma_rn(z, A9, A7), A5), A3)
    sl = fma_rn(mul_rn(uh, z), poly, fma_rn(negate(ul), z, ul))  # atan u = uh + sl
    h1, e1 = fast_two_sum(ATAN256_H[j], uh)
    l1 = add_rn(add_rn(e1, ATAN256_L[j]), sl)
    # pi/2 - (h1 + l1) for a > 1, else 0 + (h1 + l1) (the same operations,
    # exact for a <= 1: fast_two_sum(0, h1) = (h1, 0), then l1 + 0): selects
    # of constants only, which keep the loop free of branches
    sign = NEG_ONE if inverse else ONE
    g, ge = fast_two_sum(PIO2_H if inverse else ZERO64, mul_rn(sign, h1))
    gl = fma_rn(sign, l1, add_rn(ge, PIO2_M if inverse else ZERO64))
    h, l = fast_two_sum(g, gl)
    return h, l, 0


@jitable
def atan_fast64(x):
    """(atan(x) correctly rounded, True), or (anything, False) where the fast
    path cannot decide: `atan_eval_fast64` and a rounding test of four
    additions (exact64.bracket_err) for 2^-27 < |x| < 2^54; NaN, |x| <=
    2^-27 (atan x rounds to x) and |x| >= 2^54 (+-RN(pi/2)) as in
    `_atan_special`.  Branch-free, so that the CPU launcher vectorises it.
    Undecided: about one argument in 2^13, which `atan_f64` hands to the
    triple-double path."""
    inline_into_callers()
    a = fabs(x)
    h, l, _ = atan_eval_fast64(x)
    lo, hi = bracket_err(h, l, mul_rn(h, REL_FAST64))
    r = negate(lo) if x < ZERO64 else lo
    r = x if a <= ATAN_TINY else r
    r = (negate(PIO2_64) if x < ZERO64 else PIO2_64) if a >= ATAN_HUGE else r
    r = NAN64 if x != x else r
    return r, (lo == hi) | (a <= ATAN_TINY) | (a >= ATAN_HUGE) | (x != x)


@jitable
def atan_accurate64(x):
    """atan(x) by the triple-double path alone (also used by tests)."""
    r, done = _atan_special(x)
    if done:
        return r
    a = fabs(x)
    inverse = a > ONE
    if inverse:
        vh, vm, vl = td_div(ONE, ZERO64, ZERO64, a, ZERO64, ZERO64)
    else:
        vh, vm, vl = a, ZERO64, ZERO64
    j, c, d = _atan_centre(vh)
    dh, dm, dl = td_renorm(d, vm, vl)
    ph, pm, pl = td_mul(vh, vm, vl, c, ZERO64, ZERO64)
    nh, nm, nl = td_add(ONE, ZERO64, ZERO64, ph, pm, pl)
    uh, um, ul = td_div(dh, dm, dl, nh, nm, nl)
    zh, zm, zl = td_mul(uh, um, ul, uh, um, ul)
    qh = ATAN_TD[10, 0]
    qm = ATAN_TD[10, 1]
    ql = ATAN_TD[10, 2]
    for k in range(9, -1, -1):
        qh, qm, ql = td_mul(qh, qm, ql, zh, zm, zl)
        qh, qm, ql = td_add(qh, qm, ql, ATAN_TD[k, 0], ATAN_TD[k, 1], ATAN_TD[k, 2])
    qh, qm, ql = td_mul(qh, qm, ql, uh, um, ul)  # atan u
    rh, rm, rl = td_add(ATAN_TABLE[j, 0], ATAN_TABLE[j, 1], ATAN_TABLE[j, 2], qh, qm, ql)
    if inverse:
        rh, rm, rl = td_add(PIO2_H, PIO2_M, PIO2_L, negate(rh), negate(rm), negate(rl))
    r = td_round(rh, rm, rl, 0)
    return negate(r) if x < ZERO64 else r


@jitable
def atan_f64(x):
    r, ok = atan_fast64(x)
    if ok:
        return r
    return atan_accurate64(x)
