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
times a power of two.  The products have fewer than 192 bits (wide_int.py's
integers hold 320): the comparison has no error term, so these functions need
neither a hard-case search nor a table.

All integer arithmetic stays in uint64 (a mix of uint64 and int64 would be
promoted to float64 by Numba).
"""

import numpy as np

from ...primitives.rounding import add_rd, add_rn, add_ru, bitcast, fabs, jitable, mul_rn, mul_ru, sub_rd, sub_rn
from .core import pow2

_INF64 = np.float64(np.inf)
_ZERO64 = np.float64(0.0)

F64 = np.float64
U64 = np.uint64
_Z = U64(0)
_ONE = U64(1)
_S52 = U64(52)
_MANT = U64(0x000FFFFFFFFFFFFF)
_HIDDEN = U64(0x0010000000000000)
_EXP = U64(0x7FF)


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
def bracket_err(h, l, err):
    """(RN(w_lo), RN(w_hi)) for some w_lo <= v <= w_hi, for every v within E of
    h + l, where err >= 2 E + 2^-52 |l| (h + l need not be normalized: the
    pairs of explog64.exp2_sum_fast have |l| up to 2^-19 |h|).  The inner sums
    l -+ err round by at most 2^-53 (|l| + err), which the slack covers, so
    h + RN(l - err) <= v <= h + RN(l + err); rounding to nearest is monotone,
    so when both ends are the same double, that is RN(v) -- for results in
    the normal range (they are not scaled afterwards).  Four additions: the
    cheap rounding test of the fast paths."""
    return add_rn(h, sub_rn(l, err)), add_rn(h, add_rn(l, err))


@jitable
def decide_scaled(x, h, l, q, eps, inside, above, below):
    """The decision of the exponential-like plain-double fast paths (exp,
    exp2, exp10): RN((h + l) 2^q) by `bracket_err` with err = eps h where
    `inside` (there the scaled result is a normal double, so RN(h + l) 2^q
    is exact and is the rounded result), inf where `above`, +0 where
    `below`, x itself for a NaN x; and whether the result is decided.
    Selects only, so the callers stay branch-free."""
    lo, hi = bracket_err(h, l, mul_rn(h, eps))
    r = mul_rn(lo, pow2(q))
    nan = x != x
    r = _INF64 if above else r
    r = _ZERO64 if below else r
    r = x if nan else r
    return r, (inside & (lo == hi)) | above | below | nan


# Results below 2^-1022.  A subnormal result v = (h + l) 2^q lies on the grid
# of multiples of 2^-1074, coarser than h's own: rounding h + l to a double
# and then scaling would round twice.  With s = 2^(q + 1074), H = h s is
# exact (the callers' v >= 2^-1080, so H >= 2^-6 is normal), L = l s rounds
# by at most 2^-1075 (where it is subnormal), and v / 2^-1074 = H + L < 2^52.
# n = RN(H + 1.5 2^52) - 1.5 2^52 is the integer nearest to H (exact for
# 0 <= H < 2^52), f = H - n is exact (|f| <= 1/2, a multiple of ulp(H)), and
# d = RN(f + L) is f + L to within 2^-53 (|f + L| < 1), |d| - 1/2 to within
# 2^-54 more.  RN(v / 2^-1074) is n - 1, n or n + 1 as f + L is below -1/2,
# between, or above 1/2; with an error E = eps H of H + L, the side is
# certain when ||d| - 1/2| > eps H + 2^-52 (a v on a midpoint is never
# decided: there ||d| - 1/2| is within that margin).  The integer times
# 2^-1074 is formed exactly in two scalings.
_SUB_SHIFT = F64(6755399441055744.0)  # 1.5 * 2^52
_SUB_SLACK = F64(2.0**-52)
_HALF = F64(0.5)
_MINUS_HALF = F64(-0.5)
_ONE_D = F64(1.0)
_TWO_M1000 = F64(2.0**-1000)
_TWO_M74 = F64(2.0**-74)
_Q_SUB = np.int32(1074)
_Q_CAP = np.int32(1023)


@jitable
def decide_subnormal(h, l, q, eps):
    """(RN((h + l) 2^q), decided) for a value (h + l) 2^q below 2^-1022 with
    h > 0 and a relative error below eps (above); rounded once, onto the
    subnormal grid.  Branch-free: a q out of range gives an unused result."""
    up = pow2(min(np.int32(q) + _Q_SUB, _Q_CAP))
    big = mul_rn(h, up)
    n = sub_rn(add_rn(big, _SUB_SHIFT), _SUB_SHIFT)
    d = add_rn(sub_rn(big, n), mul_rn(l, up))
    n = add_rn(n, _ONE_D) if d > _HALF else n
    n = sub_rn(n, _ONE_D) if d < _MINUS_HALF else n
    margin = add_rn(mul_rn(big, eps), _SUB_SLACK)
    distance = sub_rn(fabs(d), _HALF)
    return mul_rn(mul_rn(n, _TWO_M1000), _TWO_M74), fabs(distance) > margin


@jitable
def bracket(h, l, rel):
    """`bracket_err` with err = rel |h| for a relative error below rel/2 (h > 0)."""
    return bracket_err(h, l, mul_rn(h, rel))


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
