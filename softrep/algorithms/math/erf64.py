"""The pieces shared by the float64 erf and erfc (scheme: multiword.py): the
series of erf near 0 and erfc(a) = e^(-a^2) R(a) for a >= 1/4, each in
double-double (fast) and triple-double (accurate), with their error bounds.
erf.py and erfc.py put them together and round.

Series, 0 <= a < 1/4.  erf a = a P(v), v = a^2 <= 2^-4,
P(v) = (2/sqrt(pi)) sum_n (-1)^n v^n / (n! (2n + 1)), alternating with terms
decreasing by more than 16x, so the omitted tail is below its first term, and
P >= (2/sqrt(pi)) (1 - 1/48) > 1.1.
* Double-double: terms n <= 15 (first omitted, n = 16: < 2^-64 / (16! 33) <
  2^-113 of P).  Terms 9 .. 15 (< 2^-58.6 of P together) by Horner in double on
  RN(v) (their coefficients rounded to double, the rounding errors and the
  dropped low word of v < 2^-109 of P); terms 0 .. 8 by double-double Horner
  steps p v + c_n (dd_mul < 2^-102 of |p v|, dd_add < 2^-104 of the result;
  |p v| < |c_n|/16 and every step's error is multiplied by v^n < 2^-4n in P):
  < 2^-104 (1 + 2^-4 + ...) + 2^-102 / 48 < 2^-103.8.  v = a^2 is an exact
  two_prod and a P by two_prod and one fma (< 2^-104): erf a to < 2^-103,
  relative.
* Triple-double: terms n <= 21 (first omitted < 2^-88 / (22! 45) < 2^-163 of P),
  td_mul (< 2^-151) and td_add (< 2^-153) per step, damped the same way, the
  constants exact to 2^-159: < 2^-150 for P, < 2^-149.5 for a P.
* a < 2^-80: v/3 < 2^-161, so P = 2/sqrt(pi) within the bounds above; v is not
  formed (a^2 could underflow).  a is scaled by 2^200 (exact) so that the
  rounding (multiword.round_scaled) sees a normal value and rounds the
  possibly subnormal result once.

erfc, 1/4 <= a < 32.  erfc a = e^(-a^2) R(a), R the erfcx table of
erf64_table.py: piece j of [1/4, 32) (16 per binade), d = a - c_j (exact: a and
c_j are multiples of ulp(a), |d| <= 2^k/32 has at most 48 significant bits),
R(c_j + d) = sum_k c_jk d^k, k <= 25, measured error < 2^-157 relative
(erf64_data.py; 401 points per piece against mpmath at 320 bits; the
Chebyshev interpolant's error curve is smooth at that sampling, and even a
measurement off by 2^7 would stay below the 2^-150 used here).
* Double-double: the tail sum_{m >= K} |c_jm| h^m < 2^-60.7 min R for
  K = FAST_SPLIT = 12 (erf64_data.py lists it for every K); those terms by
  Horner in double on the exact d with coefficients rounded to double
  (< 2^-52 of their sum: < 2^-112 of R); the others by double-double steps
  p d + c_k with d exact: two_prod (exact), the low word by one fma (< 2^-105
  of |p d|), dd_add (< 2^-104 of the result).  The sum of |c_k d^k| is below
  1.07 R (the terms of degree >= 1 are < 2^-5 of min R together, the same
  tails), so the steps add < 2^-104 * 1.07 * 2 < 2^-102.9: R to < 2^-102.5
  relative.
  e^(-a^2): a^2 = s + t exactly (two_prod), exp_dd(-s, -t) < 2^-101;
  the product dd_mul < 2^-102.  erfc a to < 2^-100 relative.
* Triple-double: 26 steps td_mul by d (< 2^-151 of |p d|) and td_add
  (< 2^-153 of the sum of magnitudes), the same 1.07 factor: < 2^-149.9, plus
  the fit (< 2^-150 used): R to < 2^-148.9; exp_td(-s, -t, 0) < 2^-149;
  td_mul < 2^-151: erfc a to < 2^-147.8 relative.
The result is returned as (value near 2^-6 .. 2, power of two q) so that the
caller rounds once also where erfc a is subnormal (a > 26.543).
"""

import base64
from fractions import Fraction
from math import factorial, isqrt

import numpy as np

from ...primitives.rounding import bitcast, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import dd_add, dd_mul, fast_two_sum, two_prod
from .erf64_data import ERFCX_TD_BASE64
from .erf64_table import DEGREE, PIECES_PER_BINADE
from .explog64 import exp_dd, exp_td
from .multiword import td_add, td_const, td_mul
from .trig64 import PI_Q

F64 = np.float64
ZERO = F64(0.0)
ONE = F64(1.0)

# 2/sqrt(pi) to 2^-398: isqrt(floor(2^800 4/pi)) / 2^400 (PI_Q is exact to 2^-1600)
TWO_OVER_SQRT_PI_Q = Fraction(isqrt((4 << 800) * PI_Q.denominator // PI_Q.numerator), 1 << 400)

SERIES_TERMS_TD = 22  # n = 0 .. 21
SERIES_TERMS_DD = 16  # n = 0 .. 15
SERIES_SPLIT = 9  # n >= 9 in double
_SERIES = [TWO_OVER_SQRT_PI_Q * Fraction((-1) ** n, factorial(n) * (2 * n + 1)) for n in range(SERIES_TERMS_TD)]
ERF_SERIES_TD = np.array([td_const(q) for q in _SERIES], dtype=np.float64)  # (22, 3)

ERFCX_TD = np.frombuffer(base64.b64decode("".join(ERFCX_TD_BASE64)), dtype="<f8").astype(np.float64).reshape(
    -1, DEGREE + 1, 3)
FAST_SPLIT = 12  # coefficients k >= FAST_SPLIT in double (module docstring)

SERIES_LIMIT = F64(0.25)  # below: the series; above: e^(-a^2) R(a)
TINY = F64(2.0**-80)  # below: P = 2/sqrt(pi) (v not formed)
TINY_SCALE = F64(2.0**200)
TINY_EXPONENT = np.int64(-200)
_PIECE_SHIFT = np.uint64(52 - 4)  # 16 pieces per binade: the top 4 bits of the significand
_PIECE_MASK = np.uint64(15)
_CENTRE_CLEAR = np.uint64(0xFFFF000000000000)  # keeps the sign, exponent and top 4 significand bits
_CENTRE_HALF = np.uint64(1) << np.uint64(52 - 5)  # + half a piece
_EXP_SHIFT = np.uint64(52)
_BIAS_LOW = np.int64(1023 - 2)  # binade 2^-2 is piece row 0

assert PIECES_PER_BINADE == 16


# --------------------------------------------------------------------------- series, 0 <= a < 1/4


@jitable
def _series_argument(a):
    """(a', e, vh, vl) for 0 < a < 1/4: a = a' 2^e and vh + vl = a'^2 exactly.
    Below TINY, a is scaled up by TINY_SCALE (exactly) so that the result is
    rounded once even where it is subnormal, and the square, below 2^-160
    relative to 1, is left out of P (vh = vl = 0)."""
    if a < TINY:
        return mul_rn(a, TINY_SCALE), TINY_EXPONENT, ZERO, ZERO
    vh, vl = two_prod(a, a)
    return a, np.int64(0), vh, vl


@jitable
def erf_series_dd(a):
    """(h, l, e): erf a = (h + l) 2^e for 0 < a < 1/4, relative error < 2^-103."""
    a, e, vh, vl = _series_argument(a)
    p = ERF_SERIES_TD[SERIES_TERMS_DD - 1, 0]
    for n in range(SERIES_TERMS_DD - 2, SERIES_SPLIT - 1, -1):
        p = fma_rn(p, vh, ERF_SERIES_TD[n, 0])
    ph, pl = p, ZERO
    for n in range(SERIES_SPLIT - 1, -1, -1):
        ph, pl = dd_mul(ph, pl, vh, vl)
        ph, pl = dd_add(ph, pl, ERF_SERIES_TD[n, 0], ERF_SERIES_TD[n, 1])
    h, l = two_prod(ph, a)
    h, l = fast_two_sum(h, fma_rn(pl, a, l))
    return h, l, e


@jitable
def erf_series_td(a):
    """(h, m, l, e): erf a = (h + m + l) 2^e for 0 < a < 1/4, relative error < 2^-149.5."""
    a, e, vh, vl = _series_argument(a)
    ph = ERF_SERIES_TD[SERIES_TERMS_TD - 1, 0]
    pm = ERF_SERIES_TD[SERIES_TERMS_TD - 1, 1]
    pl = ERF_SERIES_TD[SERIES_TERMS_TD - 1, 2]
    for n in range(SERIES_TERMS_TD - 2, -1, -1):
        ph, pm, pl = td_mul(ph, pm, pl, vh, vl, ZERO)
        ph, pm, pl = td_add(ph, pm, pl, ERF_SERIES_TD[n, 0], ERF_SERIES_TD[n, 1], ERF_SERIES_TD[n, 2])
    h, m, l = td_mul(ph, pm, pl, a, ZERO, ZERO)
    return h, m, l, e


# --------------------------------------------------------------------------- erfc a = e^(-a^2) R(a), 1/4 <= a < 32


@jitable
def erfcx_piece(a):
    """(j, d): the piece of 1/4 <= a < 32 and d = a - c_j (exact)."""
    u = bitcast(a)
    row = np.int64(u >> _EXP_SHIFT) - _BIAS_LOW
    j = row * np.int64(16) + np.int64((u >> _PIECE_SHIFT) & _PIECE_MASK)
    centre = bitcast((u & _CENTRE_CLEAR) | _CENTRE_HALF)
    return j, sub_rn(a, centre)


@jitable
def erfcx_dd(j, d):
    """R(c_j + d) in double-double, relative error < 2^-102.5."""
    p = ERFCX_TD[j, DEGREE, 0]
    for k in range(DEGREE - 1, FAST_SPLIT - 1, -1):
        p = fma_rn(p, d, ERFCX_TD[j, k, 0])
    ph, pl = p, ZERO
    for k in range(FAST_SPLIT - 1, -1, -1):
        s, t = two_prod(ph, d)
        ph, pl = dd_add(s, fma_rn(pl, d, t), ERFCX_TD[j, k, 0], ERFCX_TD[j, k, 1])
    return ph, pl


@jitable
def erfcx_td(j, d):
    """R(c_j + d) in triple-double, relative error < 2^-148.9."""
    ph = ERFCX_TD[j, DEGREE, 0]
    pm = ERFCX_TD[j, DEGREE, 1]
    pl = ERFCX_TD[j, DEGREE, 2]
    for k in range(DEGREE - 1, -1, -1):
        ph, pm, pl = td_mul(ph, pm, pl, d, ZERO, ZERO)
        ph, pm, pl = td_add(ph, pm, pl, ERFCX_TD[j, k, 0], ERFCX_TD[j, k, 1], ERFCX_TD[j, k, 2])
    return ph, pm, pl


@jitable
def erfc_large_dd(a):
    """(h, l, q): erfc a = (h + l) 2^q for 1/4 <= a < 32, h in [2^-7, 2],
    relative error < 2^-100."""
    s, t = two_prod(a, a)
    eh, el, q = exp_dd(negate(s), negate(t))
    j, d = erfcx_piece(a)
    rh, rl = erfcx_dd(j, d)
    h, l = dd_mul(eh, el, rh, rl)
    return h, l, q


@jitable
def erfc_large_td(a):
    """(h, m, l, q): erfc a = (h + m + l) 2^q for 1/4 <= a < 32, relative error < 2^-147.8."""
    s, t = two_prod(a, a)
    eh, em, el, q = exp_td(negate(s), negate(t), ZERO)
    j, d = erfcx_piece(a)
    rh, rm, rl = erfcx_td(j, d)
    h, m, l = td_mul(eh, em, el, rh, rm, rl)
    return h, m, l, q
