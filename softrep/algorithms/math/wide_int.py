"""Unsigned 320-bit integers for exact decisions and the float64 trigonometric
reduction.

A Wide is a tuple of ten uint64 limbs (l0, ..., l9), each below 2^32, least
significant first: the value sum l_i 2^(32 i).  A limb times a limb is below
2^64 - 2^33 + 1, so a product plus a carry below 2^32 and a limb never
overflows a uint64.  Every operation works modulo 2^320; callers keep their
values below (argued where they are used).

All arithmetic stays in uint64 (Numba promotes a mix of uint64 and int64 to
float64).
"""

import numpy as np

from ...primitives.rounding import jitable

U64 = np.uint64
_Z = U64(0)
_M32 = U64(0xFFFFFFFF)
_S32 = U64(32)


@jitable
def wide(u):
    """The Wide of a uint64 u."""
    return (u & _M32, u >> _S32, _Z, _Z, _Z, _Z, _Z, _Z, _Z, _Z)


@jitable
def _mul_limb(w, d):
    """w * d for a limb d < 2^32, modulo 2^320."""
    p = w[0] * d
    r0 = p & _M32
    p = w[1] * d + (p >> _S32)
    r1 = p & _M32
    p = w[2] * d + (p >> _S32)
    r2 = p & _M32
    p = w[3] * d + (p >> _S32)
    r3 = p & _M32
    p = w[4] * d + (p >> _S32)
    r4 = p & _M32
    p = w[5] * d + (p >> _S32)
    r5 = p & _M32
    p = w[6] * d + (p >> _S32)
    r6 = p & _M32
    p = w[7] * d + (p >> _S32)
    r7 = p & _M32
    p = w[8] * d + (p >> _S32)
    r8 = p & _M32
    p = w[9] * d + (p >> _S32)
    return (r0, r1, r2, r3, r4, r5, r6, r7, r8, p & _M32)


@jitable
def wide_add(a, b):
    """a + b modulo 2^320."""
    s = a[0] + b[0]
    r0 = s & _M32
    s = a[1] + b[1] + (s >> _S32)
    r1 = s & _M32
    s = a[2] + b[2] + (s >> _S32)
    r2 = s & _M32
    s = a[3] + b[3] + (s >> _S32)
    r3 = s & _M32
    s = a[4] + b[4] + (s >> _S32)
    r4 = s & _M32
    s = a[5] + b[5] + (s >> _S32)
    r5 = s & _M32
    s = a[6] + b[6] + (s >> _S32)
    r6 = s & _M32
    s = a[7] + b[7] + (s >> _S32)
    r7 = s & _M32
    s = a[8] + b[8] + (s >> _S32)
    r8 = s & _M32
    s = a[9] + b[9] + (s >> _S32)
    return (r0, r1, r2, r3, r4, r5, r6, r7, r8, s & _M32)


@jitable
def wide_mul(w, u):
    """w * u for a uint64 u, modulo 2^320: w u0 + (w u1) 2^32 with u = u0 + u1 2^32."""
    lo = _mul_limb(w, u & _M32)
    hi = _mul_limb(w, u >> _S32)
    return wide_add(lo, (_Z, hi[0], hi[1], hi[2], hi[3], hi[4], hi[5], hi[6], hi[7], hi[8]))


@jitable
def wide_shl(w, k):
    """w * 2^k modulo 2^320, for 0 <= k < 320: whole limbs first, then bits."""
    r = w
    for _ in range(k // 32):
        r = (_Z, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])
    b = U64(k % 32)
    if b != _Z:
        c = U64(32) - b
        r = ((r[0] << b) & _M32,
             ((r[1] << b) | (r[0] >> c)) & _M32,
             ((r[2] << b) | (r[1] >> c)) & _M32,
             ((r[3] << b) | (r[2] >> c)) & _M32,
             ((r[4] << b) | (r[3] >> c)) & _M32,
             ((r[5] << b) | (r[4] >> c)) & _M32,
             ((r[6] << b) | (r[5] >> c)) & _M32,
             ((r[7] << b) | (r[6] >> c)) & _M32,
             ((r[8] << b) | (r[7] >> c)) & _M32,
             ((r[9] << b) | (r[8] >> c)) & _M32)
    return r


@jitable
def wide_neg(w):
    """2^320 - w modulo 2^320 (two's complement: every limb inverted, plus one)."""
    return wide_add((w[0] ^ _M32, w[1] ^ _M32, w[2] ^ _M32, w[3] ^ _M32, w[4] ^ _M32,
                     w[5] ^ _M32, w[6] ^ _M32, w[7] ^ _M32, w[8] ^ _M32, w[9] ^ _M32), wide(U64(1)))


@jitable
def wide_cmp(a, b):
    """-1, 0 or 1 as a < b, a == b, a > b (limbs compared from the most significant)."""
    for i in range(9, -1, -1):
        if a[i] != b[i]:
            return 1 if a[i] > b[i] else -1
    return 0
