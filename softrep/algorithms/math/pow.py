"""pow(x, y) = x^y for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Special values (IEEE 754 pow, as C99 Annex F and torch): pow(x, +-0) = 1 for
every x (NaN too); pow(1, y) = 1 for every y (NaN too); pow(-1, +-inf) = 1;
otherwise a NaN argument gives NaN.  pow(x, +inf) = +inf for |x| > 1, +0 for
|x| < 1; pow(x, -inf) the reverse.  pow(+-0, y): y an odd integer: +-0 for
y > 0, +-inf for y < 0; other y: +0 for y > 0, +inf for y < 0.  pow(-inf, y)
= pow(-0, -y) with the same rule; pow(+inf, y) = +inf for y > 0, +0 for
y < 0.  A finite x < 0: NaN for a non-integer y, else (-1)^y |x|^y.  So below,
a = |x| is positive and finite, y finite and nonzero.

Fast path: z = y log(a) in double-double (`log_dd`, then one exact-ish dd
product), e^z by `exp_core` (2^-50.5).  log_dd's absolute error is below
2^-92 max(1, |log a|); |z| <= 104 outside the clamps and |log a| >= 2^-24.1
for a != 1 (a = 1 - 2^-24), so |y| < 2^31 and z's absolute error is
< 2^31 2^-92 + 104 2^-102 < 2^-60.9.  That is a relative error of e^z below
2^-60.8, so the fast result is within 2^-50.4 and `round_if_safe` (window
2^-46) decides.  Clamps: z > 89 rounds to +inf (float32 overflows from
z = 88.7228), z < -104 to +0 (e^-104 < 2^-150, half the smallest subnormal).

Accurate path: first the exact cases.  x^y can be a float32 or a float32
rounding midpoint (25 significant bits) only when (with a = A 2^ea, A odd,
y = Y 2^ey, Y odd):
* A = 1: x^y = 2^(ea y), exact iff ea y is an integer E; 2^E is rounded to
  float32 from an exact double (2^-150 ties to +0, 2^128 gives inf);
* A >= 3: y > 0 (a negative power of an odd A > 1 is not dyadic) and y =
  N / 2^k with k = max(0, -ey) <= 3: x^y = A^(N/2^k) 2^(ea N/2^k) is dyadic only
  if A = c^(2^k) for an integer c (N is odd when k > 0) and 2^k divides ea; then
  x^y = c^N 2^E with c^N < 2^25 (else more than 25 significant bits), so
  N <= 15 (c >= 3) and 2^k <= 15 (A < 2^24).
Those are computed exactly (integer arithmetic, then one exact double b 2^E
rounded to float32).  Otherwise e^z by `exp_dd` (2^-93) and `dd_to_f32`: the
total relative error is below 2^-60.8, so the result is correctly rounded
unless x^y lies within 2^-60.8 (relatively) of a rounding boundary without
being on it.  Unlike the unary functions this cannot be enumerated (2^64
argument pairs); tests/test_mathlib2.py checks random pairs (hypothesis),
integer and half-integer exponents and near-boundary pairs against MPFR.
"""

import numpy as np

from ...primitives.rounding import bitcast, jitable, mul_rn, sqrt_rn
from .core import (F64, ZERO, abs32, dd_mul, dd_to_f32, exp_core, exp_dd, log_dd, neg32, pow2,
                    round_if_safe, signbit32)


NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)
ONE_F32 = np.float32(1.0)
Z_OVERFLOW = F64(89.0)
Z_UNDERFLOW = F64(-104.0)
_MANT = np.uint32(0x7FFFFF)
_HIDDEN = np.uint32(0x800000)
_U32_1 = np.uint32(1)


@jitable
def _odd_significand(v):
    """(M, e) with |v| = M 2^e, M an odd integer (v a nonzero finite float32)."""
    u = bitcast(abs32(v))
    biased = np.int64(u >> np.uint32(23))
    m = np.int64(u & _MANT)
    if biased == 0:
        e = np.int64(-149)
    else:
        m = m | np.int64(0x800000)
        e = biased - 150
    while (m & 1) == 0:
        m = m >> 1
        e = e + 1
    return m, e


@jitable
def integer_kind(y):
    """0: y is not an integer; 1: an odd integer; 2: an even integer (y finite)."""
    if y == ZERO_F32:
        return 2
    m, e = _odd_significand(y)
    if e < 0:
        return 0
    if e == 0:
        return 1
    return 2


@jitable
def _int_root(v, k):
    """The integer c with c^(2^k) = v, or 0 if there is none (0 < v < 2^24, k <= 3):
    k exact square roots in double, each checked by an exact integer product."""
    for _ in range(k):
        c = np.int64(sqrt_rn(F64(v)))
        if c * c != v:
            return np.int64(0)
        v = c
    return v


@jitable
def pow_exact(a, y):
    """(True, float32 x^y) when a^y (a > 0, y finite nonzero, float32) is a float32
    or a float32 rounding midpoint, else (False, 0); see the module docstring."""
    am, ae = _odd_significand(a)
    ym, ye = _odd_significand(y)
    negative_y = y < ZERO_F32
    if am == 1:
        # a = 2^ae: a^y = 2^(ae * ym * 2^ye)
        if ye >= 0:
            if ye > 10:
                return False, ZERO_F32  # |E| >= 2^11: outside the clamps
            big = ae * ym * (np.int64(1) << ye)
        else:
            if (ae % (np.int64(1) << (-ye))) != 0:
                return False, ZERO_F32
            big = (ae >> (-ye)) * ym
        if negative_y:
            big = -big
        if big > 200 or big < -200:
            return False, ZERO_F32
        return True, np.float32(pow2(big))
    if negative_y:
        return False, ZERO_F32
    if ye >= 0:
        if ye > 4:
            return False, ZERO_F32
        n = ym << ye
        k = 0
    else:
        if ye < -3:
            return False, ZERO_F32
        n = ym
        k = -ye
    if n > 15:
        return False, ZERO_F32
    if k > 0:
        if (ae % (np.int64(1) << k)) != 0:
            return False, ZERO_F32
        c = _int_root(am, k)
        if c == 0:
            return False, ZERO_F32
        ae = ae >> k
    else:
        c = am
    b = np.int64(1)
    for _ in range(n):
        b = b * c
        if b >= (np.int64(1) << 25):
            return False, ZERO_F32
    e = ae * n
    if e > 200 or e < -250:
        return False, ZERO_F32
    return True, np.float32(mul_rn(F64(b), pow2(e)))


@jitable
def pow_positive(a, y):
    """a^y for a float32 a > 0 finite and y finite nonzero."""
    lh, ll = log_dd(F64(a), ZERO)
    zh, zl = dd_mul(F64(y), ZERO, lh, ll)
    if zh > Z_OVERFLOW:
        return INF32
    if zh < Z_UNDERFLOW:
        return ZERO_F32
    r, ok = round_if_safe(exp_core(zh, zl))
    if ok:
        return r
    exact, v = pow_exact(a, y)
    if exact:
        return v
    eh, el = exp_dd(zh, zl)
    return dd_to_f32(eh, el)


@jitable
def pow_f32(x, y):
    if y == ZERO_F32 or x == ONE_F32:
        return ONE_F32
    if x != x or y != y:
        return NAN32
    a = abs32(x)
    ay = abs32(y)
    if ay == INF32:
        if a == ONE_F32:
            return ONE_F32
        if (a > ONE_F32) == (y > ZERO_F32):
            return INF32
        return ZERO_F32
    kind = integer_kind(y)
    odd = kind == 1 and signbit32(x)  # (-|x|)^y = -(|x|^y) for an odd integer y
    if a == ZERO_F32 or a == INF32:
        # x^y is 0 or inf: +-0 with y > 0 or +-inf with y < 0 gives 0
        r = ZERO_F32 if (a == ZERO_F32) == (y > ZERO_F32) else INF32
    else:
        if x < ZERO_F32 and kind == 0:
            return NAN32
        r = pow_positive(a, y)
    if odd:
        return neg32(r)
    return r
