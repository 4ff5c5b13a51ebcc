"""Exact rounding decisions for the algebraic float64 functions (rsqrt, cbrt, hypot).

These functions are evaluated in double-double with a relative error far
below 2^-98 (argued in each file).  `bracket` rounds the two ends
w_lo <= v <= w_hi of the error window to nearest in the (scaled) working range;
`to_grid` scales each back by a power of two, exactly for normal results, so
lo_d = RN(w_lo), hi_d = RN(w_hi).  Rounding to nearest is monotone, so when
both are the same double, that is RN(v).  (A result that may be subnormal
would be rounded twice this way; `bracket_outward` gives doubles
lo <= v <= hi instead, which `to_grid` rounds once each.)

Otherwise lo_d <= RN(v) <= hi_d, and RN(v) is found by walking from
r = lo_d up to hi_d (usually one step: the window is narrower than 2^-97 |v|,
doubles are at least 2^-53 |v| apart): compare v exactly with the midpoint
m = (2L + 1) 2^(k - 1) between r = L 2^k and the next double (`midpoint_of`;
this also holds when the next double is a power of two, at the
subnormal/normal border, and for r = DBL_MAX, whose next "double" is inf: m
is then the overflow threshold 2^1024 - 2^970), and stop at r when v is below
it (`settle`: on a tie, the even one).  Each function compares v with m
exactly, as integers: v^2 x against 1 (rsqrt), v^3 against x (cbrt), v^2
against x^2 + y^2 (hypot), with every factor an integer of at most 54 bits
times a power of two.  The products have at most 192 bits, held in six 32-bit
limbs of uint64 words (`Wide`): the comparison has no error term, so these
functions need neither a hard-case search nor a table.

All integer arithmetic stays in uint64 (a mix of uint64 and int64 would be
promoted to float64 by Numba).
"""

import numpy as np

from ...primitives.rounding import add_rd, add_rn, add_ru, bitcast, jitable, mul_rn, mul_ru, sub_rd, sub_rn

F64 = np.float64
U64 = np.uint64
_Z = U64(0)
_ONE = U64(1)
_M32 = U64(0xFFFFFFFF)
_S32 = U64(32)
_S52 = U64(52)
_MANT = U64(0x000FFFFFFFFFFFFF)
_HIDDEN = U64(0x0010000000000000)
_EXP = U64(0x7FF)


# --------------------------------------------------------------------------- 192-bit integers
# A Wide is a tuple of six uint64 limbs (l0, ..., l5), each below 2^32, least
# significant first: the value sum l_i 2^(32 i).  Products of a limb by a limb
# (< 2^64 - 2^33 + 1) plus two limbs' worth of carry stay below 2^64.

@jitable
def wide(u):
    """The Wide of a uint64 u."""
    return (u & _M32, u >> _S32, _Z, _Z, _Z, _Z)


@jitable
def _mul_limb(w, d):
    """w * d for a limb d < 2^32, modulo 2^192 (callers keep products below)."""
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
    return (r0, r1, r2, r3, r4, p & _M32)


@jitable
def wide_add(a, b):
    """a + b modulo 2^192."""
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
    return (r0, r1, r2, r3, r4, s & _M32)


@jitable
def wide_mul(w, u):
    """w * u for a uint64 u, modulo 2^192: w u0 + (w u1) 2^32 with u = u0 + u1 2^32."""
    lo = _mul_limb(w, u & _M32)
    hi = _mul_limb(w, u >> _S32)
    return wide_add(lo, (_Z, hi[0], hi[1], hi[2], hi[3], hi[4]))


@jitable
def wide_shl(w, k):
    """w * 2^k modulo 2^192, for 0 <= k < 192: whole limbs first, then bits."""
    r = w
    for _ in range(k // 32):
        r = (_Z, r[0], r[1], r[2], r[3], r[4])
    b = U64(k % 32)
    if b != _Z:
        c = U64(32) - b
        r = ((r[0] << b) & _M32,
             ((r[1] << b) | (r[0] >> c)) & _M32,
             ((r[2] << b) | (r[1] >> c)) & _M32,
             ((r[3] << b) | (r[2] >> c)) & _M32,
             ((r[4] << b) | (r[3] >> c)) & _M32,
             ((r[5] << b) | (r[4] >> c)) & _M32)
    return r


@jitable
def wide_cmp(a, b):
    """-1, 0 or 1 as a < b, a == b, a > b (limbs compared from the most significant)."""
    for i in range(5, -1, -1):
        if a[i] != b[i]:
            return 1 if a[i] > b[i] else -1
    return 0


# --------------------------------------------------------------------------- doubles as integers

@jitable
def significand(x):
    """(X, k) with x = X 2^k, X < 2^53 an integer, for a finite double x >= 0
    (subnormals included: X is then the raw mantissa and k = -1074)."""
    u = bitcast(x)
    e = (u >> _S52) & _EXP
    if e == _Z:
        return u & _MANT, -1074
    return (u & _MANT) | _HIDDEN, np.int64(e) - 1075


@jitable
def midpoint_of(lo):
    """(M, k): the midpoint between the double lo >= 0 and the next double up is
    M 2^k, M = 2L + 1 odd (at most 54 bits), for lo = L 2^(k+1) (module docstring)."""
    l, k = significand(lo)
    return l + l + _ONE, k - 1


_TWO54 = F64(2.0**54)
_MIN_NORMAL = F64(2.0**-1022)


@jitable
def split_exponent(x):
    """(f, e) with x = f 2^e, 1 <= f < 2, for a finite double x > 0 (a
    subnormal x is first scaled by 2^54, exactly); bit operations only."""
    shift = 0
    if x < _MIN_NORMAL:
        x = mul_rn(x, _TWO54)
        shift = 54
    u = bitcast(x)
    e = np.int64((u >> _S52) & _EXP) - 1023 - shift
    return bitcast((u & _MANT) | U64(0x3FF0000000000000)), e


@jitable
def with_exponent(f, e):
    """f 2^e for 1 <= f < 2 and -1022 <= e <= 1023, by setting the exponent bits (exact)."""
    return bitcast((bitcast(f) & _MANT) | (U64(e + 1023) << _S52))


@jitable
def pow2_any(k):
    """2^k as a double for -1074 <= k <= 1023 (subnormal powers included), from bits: exact."""
    if k >= -1022:
        return bitcast(U64(k + 1023) << _S52)
    return bitcast(_ONE << U64(k + 1074))


# --------------------------------------------------------------------------- the decision

@jitable
def bracket(h, l, rel):
    """(RN(w_lo), RN(w_hi)) for some w_lo <= v <= w_hi, for every v within
    rel |h| / 2 of h + l (h > 0, |l| < |h|, rel a power of two).  The inner
    sums l -+ rel h round by at most 2^-53 |l| + 2^-53 rel h, which the halved
    error allowance covers; rounding to nearest is monotone."""
    err = mul_rn(h, rel)
    return add_rn(h, sub_rn(l, err)), add_rn(h, add_rn(l, err))


@jitable
def bracket_outward(h, l, rel):
    """(lo, hi), doubles with lo <= v <= hi for every v within rel |h| of
    h + l (h > 0): the bound and both sums rounded outward.  For results that
    are scaled into the subnormals afterwards, where rounding twice (to
    nearest, then to the coarser grid) could differ from rounding once."""
    err = mul_ru(h, rel)
    return add_rd(h, sub_rd(l, err)), add_ru(h, add_ru(l, err))


@jitable
def to_grid(y, scale):
    """RN(y * scale) for a power of two `scale`: one rounding (exact unless the
    product is subnormal or overflows)."""
    return mul_rn(y, scale)


@jitable
def next_up(r):
    """The double after r >= 0 (DBL_MAX -> inf): the bits plus one."""
    return bitcast(bitcast(r) + _ONE)


@jitable
def settle(r, c):
    """The result once v has been compared with the midpoint between r and
    next_up(r) (c < 0: v below it; c == 0: v on it, ties to the double with an
    even last significand bit; callers go on to the next midpoint when c > 0)."""
    if c < 0 or (bitcast(r) & _ONE) == _Z:
        return r
    return next_up(r)
