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

The plain-double first steps (the sections at the end) read two tables of
erf64_fast_tables.py with more pieces and lower degrees: erf(a)/a
(ERF_RATIO) and R (ERFCX_FAST).
"""

import base64
from fractions import Fraction
from math import factorial, isqrt

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import dd_add, dd_mul, fast_two_sum, two_prod, two_sum
from .erf64_data import ERFCX_TD_BASE64
from . import erf64_fast_tables as fast_tables
from .erf64_erfcx_fast_data import ERFCX_FAST_BASE64
from .erf64_ratio_data import ERF_RATIO_BASE64
from .erf64_table import DEGREE, PIECES_PER_BINADE
from .explog64 import exp_dd, exp_dd_fast, exp_td
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
_PIECE_BITS = np.uint64(4)  # 16 pieces per binade: the top 4 bits of the significand
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
def binade_piece(a, bits):
    """(j, d) for 1/4 <= a < 32 cut into 2^bits pieces per binade: the piece
    j = 2^bits (k + 2) + i of a = 2^k (1 + f), i the top `bits` bits of f, and
    d = a - c_j with c_j the piece's centre (a's sign, exponent and top bits,
    then a one in the next bit).  d is exact: a and c_j are multiples of
    ulp(a) and |d| <= 2^(k - bits - 1)."""
    u = bitcast(a)
    shift = _EXP_SHIFT - bits
    row = np.int64(u >> _EXP_SHIFT) - _BIAS_LOW
    j = (row << np.int64(bits)) + np.int64((u >> shift) & ((np.uint64(1) << bits) - np.uint64(1)))
    low = (np.uint64(1) << shift) - np.uint64(1)
    centre = bitcast((u & ~low) | (np.uint64(1) << (shift - np.uint64(1))))
    return j, sub_rn(a, centre)


@jitable
def erfcx_piece(a):
    """(j, d): the piece of 1/4 <= a < 32 (16 per binade) and d = a - c_j (exact)."""
    return binade_piece(a, _PIECE_BITS)


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


# --------------------------------------------------------------------------- plain-double pieces (first step)
#
# Branch-free evaluations in double for the vectorised first loop of the CPU
# launcher; every rounding counted, relative to the value (module docstring
# for the table).
#
# erfc a = e^(-a^2) R(a), 2^-80 <= a < 27.25, R from the table ERFCX_FAST of
# erf64_fast_tables.py (from 1/4, 128 pieces per binade; below, 128 pieces
# of width 1/512; a degree-8 interpolant on each: 13 words per element,
# where the 16-per-binade table of the double-double step needs degree 14
# and 20 words).  One formula from 2^-80 up: R is as smooth near 0 as
# beyond 1/4, and e^(-a^2) R(a) has no cancellation, so erfc's first step
# needs no series of its own below 1/4.  Relative to R, with the
# tails T_k of erf64_erfcx_fast_data.py (sum_{m >= k} |c_jm| h^m / min R, the
# maximum over all pieces):
# * d = a - c_j is exact (erfcx_fast_piece: a and c_j are multiples of
#   ulp(a), |d| <= 2^-8 a from 1/4 and |d| <= 2^-10 <= a below, where the
#   first piece's centre is 0 and d = a).
# * The rounded polynomial (coefficients of d^0 .. d^3 as double-doubles,
#   the others as doubles) is R within 2^-80.19 at 401 points on each of
#   the 1024 pieces; 2^-79.19 is used (a factor 2 for the points between).
# * k = 8 .. 4 by Horner in double on the exact d: each fma < 2^-53 of its
#   partial sum, which weighted by d^k is below T_k: < 2^-53 (T_4 + T_5 +
#   T_6 + T_7) < 2^-53 * 1.01 * 2^-32.0 < 2^-84.9.
# * k = 3 .. 0 by double-double steps: on every piece that meets
#   [0, 27.25), sum_{m > k} |c_m| h^(m-k) < 0.0044 |c_k| for k <= 3
#   (ERFCX_FAST_DOMINANCE, checked in the tests), so |p d| < |c_k| and
#   fast_two_sum(c_k, p d) is exact; the low word's three roundings < 2^-103
#   of the step, which is < 1.01 R: < 2^-100.
# R to < 2^-79.19 + 2^-84.9 + 2^-100 < 2^-79.14.  e^(-a^2): a^2 = s + t
# exactly (s >= 2^-160, and t is 0 or at least 2^-264: both normal),
# exp_dd_fast(-s) < 2^-80.1 (explog64.py); |t| <= ulp(s)/2 <= 2^-44
# (s < 742.6 < 2^10), and e^(-t) = 1 - t within t^2/2 < 2^-89; the factor
# applied to the low word by one fma (|el - eh t| < 2^-43.9 |eh|: < 2^-97)
# with el t dropped (< 2^-53 * 2^-44); the product with R by two_prod and
# two fmas (< 2^-103): erfc a to < 2^-79.14 + 2^-80.1 + 2^-88.9 < 2^-78.5
# relative.

ERFCX_FAST = fast_tables.load(fast_tables.ERFCX_FAST, ERFCX_FAST_BASE64)
ERFCX_FAST_DOMINANCE = 0.0044  # bound on sum_{m > k} |c_m| h^(m-k) / |c_k|, k < 4
_FAST_PIECE_BITS = np.uint64(7)  # 128 pieces per binade
_NEAR_ZERO_FIRST = np.int64(fast_tables.BINADE_PIECES)  # the first piece of [0, 1/4)
_NEAR_ZERO_END = F64(0.25)  # where the binade pieces start
_NEAR_ZERO_SCALE = F64(512.0)
_NEAR_ZERO_STEP = F64(1.0 / 512.0)
_HALF = F64(0.5)

# as written out in erfcx_fast_piece and erfcx_fast
assert (fast_tables.ERFCX_FAST.pieces, fast_tables.ERFCX_FAST.degree, fast_tables.ERFCX_FAST.low_words) == (1024, 8, 4)
assert fast_tables.ERFCX_FAST.piece_bounds(128 * 3 + 5) == (2 * (1 + 5 / 128), 2 * (1 + 6 / 128), 2 * (1 + 11 / 256))
assert fast_tables.ERFCX_FAST.piece_bounds(896 + 5) == (5 / 512, 6 / 512, 11 / 1024)
assert fast_tables.ERFCX_FAST.piece_bounds(896) == (0.0, 1 / 512, 0.0)


@jitable
def _dominated_dd_step(ph, pl, d, ch, cl):
    """(ph + pl) d + (ch + cl), d exact, |p d| < |c|: < 2^-103 of the result (above)."""
    s, t = two_prod(ph, d)
    t = fma_rn(pl, d, t)
    h, e = fast_two_sum(ch, s)
    return h, add_rn(e, add_rn(t, cl))


@jitable
def uniform_piece(a, scale, step):
    """(i, d): the piece i = floor(a scale) of a >= 0 cut into pieces of width
    step = 1/scale (a power of two), and d = a - c_i with c_i = (i + 1/2)
    step, or 0 for i = 0 (so that d = a for every tiny a).  For i >= 1, d is
    exact: a >= step and c_i, a multiple of step/2, are multiples of ulp(a)
    (a below 2^52 step), and |d| <= step/2 <= a."""
    i = np.int32(mul_rn(a, scale))
    c = mul_rn(add_rn(F64(i), _HALF), step)
    return i, sub_rn(a, ZERO if i == 0 else c)


@jitable
def erfcx_fast_piece(a):
    """(j, d): the piece of ERFCX_FAST that holds 0 <= a < 32 and d = a - c_j
    (exact): from 1/4, 128 pieces per binade (`binade_piece`); below, piece
    896 + i = [i/512, (i+1)/512) with i = floor(512 a) and centre
    (2i + 1)/1024, or 0 for i = 0, so that d = a for every tiny a (for
    i >= 1, a >= 2^-9 and the centre, a multiple of 2^-10, are multiples of
    ulp(a), and |d| <= 2^-10 <= a).  Branch-free: both selections are
    computed, one is kept."""
    j, d = binade_piece(a, _FAST_PIECE_BITS)
    i, e = uniform_piece(a, _NEAR_ZERO_SCALE, _NEAR_ZERO_STEP)
    near = a < _NEAR_ZERO_END
    return (_NEAR_ZERO_FIRST + np.int64(i)) if near else j, e if near else d


@jitable
def erfcx_fast(j, d):
    """R(c_j + d) as an unnormalised double-double (|l| < 2^-50 |h|), relative
    error < 2^-79.14 (above); (j, d) from `erfcx_fast_piece`.  Written out (no
    inner loop), so that the vectoriser sees straight-line code with one
    gather per coefficient word."""
    inline_into_callers()
    c = ERFCX_FAST
    p = fma_rn(c[j, 8], d, c[j, 7])
    p = fma_rn(p, d, c[j, 6])
    p = fma_rn(p, d, c[j, 5])
    p = fma_rn(p, d, c[j, 4])
    ph, pl = _dominated_dd_step(p, ZERO, d, c[j, 3], c[j, 12])
    ph, pl = _dominated_dd_step(ph, pl, d, c[j, 2], c[j, 11])
    ph, pl = _dominated_dd_step(ph, pl, d, c[j, 1], c[j, 10])
    return _dominated_dd_step(ph, pl, d, c[j, 0], c[j, 9])


@jitable
def erfc_large_fast(a):
    """(h, l, q): erfc a = (h + l) 2^q for 2^-80 <= a < 27.25, h + l
    normalised (fast_two_sum), h in [2^-6, 2], relative error < 2^-78.5
    (above); q an int32.  Branch-free."""
    inline_into_callers()
    s, t = two_prod(a, a)
    eh, el, q = exp_dd_fast(negate(s))
    el = fma_rn(negate(eh), t, el)  # e^(-s-t) = e^(-s) (1 - t) (above)
    j, d = erfcx_fast_piece(a)
    rh, rl = erfcx_fast(j, d)
    h, u = two_prod(eh, rh)
    l = fma_rn(eh, rl, fma_rn(el, rh, u))
    h, l = fast_two_sum(h, l)
    return h, l, q


# --------------------------------------------------------------------------- erf a = a G(a), 0 <= a < 6, plain double
#
# erf's first step (erf.py) evaluates G(a) = erf(a)/a from the table
# ERF_RATIO of erf64_fast_tables.py: piece j = floor(128 a) of [0, 6),
# d = a - c_j with c_j = (j + 1/2)/128 (c_0 = 0), and G(c_j + d) =
# sum_k g_jk d^k, k <= 7.
# Each coefficient word is one table read per element (a vector gather on
# the CPU, the costliest step there): 11 words, no exponential, and one
# formula from 0 to 6 (1 - e^(-a^2) R(a) beside the series would read 22).
#
# * d is exact: for j >= 1, a and c_j are multiples of ulp(a) (c_j is a
#   multiple of 2^-8 and a >= 2^-7 has ulp(a) <= 2^-59) and |d| <= 2^-8, so
#   d has at most 51 significant bits; for j = 0, d = a.
# * The rounded polynomial (coefficients of d^0 .. d^2 as double-doubles,
#   the others as doubles) is G within 2^-78.40 relative at 401 points per
#   piece (erf64_ratio_data.py); between the points the error curve of a
#   degree-7 interpolant is smooth, and 2^-77.4 is used: a factor 2 of slack.
# * d^7 .. d^3 by Horner in double on the exact d: each fma rounds by < 2^-53
#   of its partial sum, which weighted by d^k is below T_k (the tails of
#   erf64_ratio_data.py, sum_{m >= k} |g_m| h^m / min G): < 2^-53 (T_3 + T_4
#   + T_5 + T_6) < 2^-53 * 1.04 * 2^-26.5 < 2^-79.4.
# * d^2 .. d^0 by double-double steps (p_h + p_l) d + (g_h + g_l): two_prod
#   and two_sum exact (two_sum: g_2 and g_1 change sign from piece to piece,
#   so p d need not be smaller than g), then three roundings (the fma of the
#   low word and two additions), each < 2^-53 of a quantity below 2^-51
#   (|g_k| + |p d|): < 2^-102.4 (|g_k| + |p d|), which weighted by d^k is
#   below T_k + T_(k+1).  Together < 2^-102.4 (T_0 + 2 T_1 + 2 T_2 + T_3)
#   < 2^-102.3 (T_0 <= 1.001, T_1 < 2^-8.9).  The last step adds p d to g_0
#   by fast_two_sum: |p d| <= T_1 min G < g_0 (tests/test_mathlib_f64_erf.py).
# G to < 2^-77.4 + 2^-79.4 + 2^-102.3 < 2^-77.08; a G by two_prod and one
# fma (< 2^-104): erf a to < 2^-77.07 relative.  For a < 2^-400, d = 0 is
# used (G(a) = g_00 within G(0) a^2/3 < 2^-800 of G(0)), which keeps every
# operand normal; a is then passed scaled by 2^600 (exactly), as the caller
# does for the product.

ERF_RATIO = fast_tables.load(fast_tables.ERF_RATIO, ERF_RATIO_BASE64)
_RATIO_SCALE = F64(128.0)
_RATIO_STEP = F64(1.0 / 128.0)
_L0, _L1, _L2 = 8, 9, 10  # the low words' columns

# as written out in erf_ratio_piece and erf_ratio_fast
assert (fast_tables.ERF_RATIO.pieces, fast_tables.ERF_RATIO.degree, fast_tables.ERF_RATIO.low_words) == (768, 7, 3)
assert fast_tables.ERF_RATIO.piece_bounds(5) == (5 / 128, 6 / 128, 11 / 256)


@jitable
def _dd_step(ph, pl, d, gh, gl):
    """(ph + pl) d + (gh + gl), d exact, < 2^-102.4 (|g| + |p d|) (above)."""
    s, t = two_prod(ph, d)
    t = fma_rn(pl, d, t)
    h, e = two_sum(gh, s)
    return h, add_rn(e, add_rn(t, gl))


@jitable
def erf_ratio_piece(a):
    """(j, d): the piece j = floor(128 a) of 0 <= a < 6 and d = a - c_j (exact, above)."""
    return uniform_piece(a, _RATIO_SCALE, _RATIO_STEP)


@jitable
def erf_ratio_fast(j, d):
    """G(c_j + d) = erf(a)/a, a = c_j + d, as an unnormalised double-double
    (|l| < 2^-50 |h|) for 0 <= a < 6, relative error < 2^-77.08 (above); (j, d)
    from `erf_ratio_piece`.  Branch-free, written out (no inner loop) so that
    the vectoriser sees one gather per coefficient word."""
    inline_into_callers()
    g = ERF_RATIO
    p = fma_rn(g[j, 7], d, g[j, 6])
    p = fma_rn(p, d, g[j, 5])
    p = fma_rn(p, d, g[j, 4])
    p = fma_rn(p, d, g[j, 3])
    ph, pl = _dd_step(p, ZERO, d, g[j, 2], g[j, _L2])
    ph, pl = _dd_step(ph, pl, d, g[j, 1], g[j, _L1])
    return _dominated_dd_step(ph, pl, d, g[j, 0], g[j, _L0])  # |p d| < g_0 (above)

