"""erfc(x) = 1 - erf(x) for float32, correctly rounded (scheme: softrep/algorithms/math/exception_tables.py).

Ranges (erfc(-inf) = 2, erfc(+inf) = +0):
* x < -4: erfc x = 2 - erfc|x| with erfc|x| < 1.6e-8 < 2^-24 (half an ulp
  below 2): rounds to 2.
* -4 <= x < 0: 1 + erf|x| (erf's fast path, 2^-49.7): the result is >= 1 and
  erf|x| <= it, so the error stays < 2^-49.7 + 2^-53.
* 0 <= x <= 1/2: 1 - erf x with erf x <= 0.5205: the result is >= 0.4795,
  erf's error counts 1.09 times: < 1.09 * 2^-51.8 + 2^-53 < 2^-50.9.
* 1/2 < x <= 10.25: e^(-x^2) R(x) (softrep/algorithms/math/erf_pieces.py), < 2^-49.9.
* x > 10.25: erfc x < 2^-151 (erfc 10.07 < 2^-150 already): rounds to +0.
The double results for x close to 10 are normal doubles (about 2^-150), so
the float32 rounding to a subnormal happens once, in the rounding test.
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).

float64 (`erfc_f64`, scheme: multiword.py; pieces and error bounds: erf64.py):
* x <= -6: 2 - erfc 6, erfc 6 < 2^-55.3 < 2^-53 (half an ulp below 2): 2.
* |x| < 2^-80: 1 - erf x with |erf x| < 2^-79.8, far below half an ulp of 1: 1.
* |x| < 1/4: 1 - erf x with erf's series (erf x / erfc x < 0.382): double-double
  0.382 * 2^-103 plus dd_add (< 2^-104) < 2^-103; triple-double
  0.382 * 2^-149.5 plus td_add (< 2^-153 * 1.276 / 0.724) < 2^-149.
* 1/4 <= x < 27.25: e^(-x^2) R(x) (erf64.py), double-double < 2^-100,
  triple-double < 2^-147.8, rounded once with its power of two, so the
  subnormal results (x > 26.543) are rounded once.
* x >= 27.25: erfc x < erfc 27.25 < 2^-1076 (below half the smallest
  subnormal): +0.
* -6 < x <= -1/4: 2 - erfc|x|, erfc|x| < 0.724 < 0.57 (2 - erfc|x|): double-double
  0.57 * 2^-100 + 2^-104 < 2^-100, triple-double 0.57 * 2^-147.8 plus td_add
  (< 2^-153 * 2 / 1.276) < 2^-148.
The rounding tests use 2^-99 (|x| < 1/4) and 2^-98 (the others).
These make the second of three steps (`erfc_dd_fast64`): the first
(`erfc_fast64`) evaluates in plain double, branch-free, for 2^-80 <= |x| <
27.25 (< 2^-78.4, tested with 2^-74, and with an outward window where
the result may be subnormal; erf64.py's plain-double pieces) with one
formula, e^(-x^2) R(x) (and 2 - erfc|x| for x < 0) down to 2^-80, from a
table of R that covers [0, 1/4) too; the third is the triple-double path.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, fabs, jitable, mul_rn, negate, sub_rn
from .erf_pieces import erf_small, erfc_mid
from .core import WIDE_WINDOW_HI, WIDE_WINDOW_LO, abs32, dd_add, fast_two_sum, pow2, round_if_within
from .erf64 import (SERIES_LIMIT, TINY, erf_series_dd, erf_series_td, erfc_large_dd,
                    erfc_large_fast, erfc_large_td)
from .exact64 import bracket_err, decide_subnormal
from .multiword import dd_error, td_add, td_round, ziv_round
from .exception_tables import exception_arrays, finish
from .erf import erf_approx, erf_short

F64 = np.float64
ONE = F64(1.0)
TWO = F64(2.0)
HALF_F32 = np.float32(0.5)
ZERO_F32 = np.float32(0.0)
TWO_F32 = np.float32(2.0)
LOW_F32 = np.float32(-4.0)
HIGH_F32 = np.float32(10.25)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.algorithms.math.exception_tables scan erfc): (bits of x, bits of erfc x)
ERFC_EXCEPTIONS = (
    (0x32e2dfc3, 0x3f800000),
    (0x32e2dfc4, 0x3f800000),
    (0x32e2dfc5, 0x3f7fffff),
    (0x32e2dfc6, 0x3f7fffff),
    (0x33aa27d3, 0x3f7fffff),
    (0x340dcbdb, 0x3f7ffffd),
    (0x344683cc, 0x3f7ffffc),
    (0x347f3bbd, 0x3f7ffffc),
    (0x3514e2d9, 0x3f7ffff5),
    (0x357824bf, 0x3f7fffee),
    (0x36895d7c, 0x3f7fffb3),
    (0x36bafe6f, 0x3f7fff97),
    (0x36ec9f62, 0x3f7fff7a),
    (0x37ca4803, 0x3f7ffe37),
    (0x37fbe8f6, 0x3f7ffdc7),
    (0x382f956e, 0x3f7ffce7),
    (0x38707ff5, 0x3f7ffbc3),
    (0x38fc2fdc, 0x3f7ff71c),
    (0x3a182939, 0x3f7fd513),
    (0x3a73ad88, 0x3f7fbb43),
    (0x3be245d2, 0x3f7e015e),
    (0x3ca07463, 0x3f7a57c1),
    (0x3cfa05d7, 0x3f772fbd),
    (0x3e05c13f, 0x3f5a7b60),
    (0x3e33a78f, 0x3f4dd5eb),
    (0x400df51a, 0x3adfd6ed),
    (0x40c0d2a2, 0x23911688),
    (0xb362dfc4, 0x3f800000),
    (0xb362dfc5, 0x3f800001),
    (0xb4c683cc, 0x3f800004),
    (0xb594e2d9, 0x3f80000b),
    (0xb5f824bf, 0x3f800012),
    (0xb73afe6f, 0x3f800069),
    (0xb76c9f62, 0x3f800085),
    (0xbb6c9b37, 0x3f80857d),
    (0xbbbfcf4b, 0x3f80d86e),
    (0xbce492e9, 0x3f840768),
    (0xbde0b0ca, 0x3f8fc85d),
    (0xbe83501c, 0x3fa43f0d),
    (0xbf857a68, 0x3fee0b38),
    (0xc0041e6a, 0x3fff8d19),
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(ERFC_EXCEPTIONS)


@jitable
def erfc_approx(x):
    """erfc(x) in double for a float32 x (infinities included), relative error < 2^-49.7."""
    if x < LOW_F32:
        return TWO
    if x < ZERO_F32:
        return add_rn(ONE, erf_approx(abs32(x)))
    if x <= HALF_F32:
        return sub_rn(ONE, erf_small(x))
    if x > HIGH_F32:
        return F64(0.0)
    return erfc_mid(x)


@jitable
def erfc_fast(x):
    """(erfc(x) correctly rounded, True), or (anything, False) where the
    first step cannot decide; NaN gives x, decided (erfc_approx would index
    its table with it).  erfc_approx's ranges with erf's first-step
    approximation in place of erf_approx: 1 - E for 0 <= x <= 1/2 and 1 + E
    for -4 <= x < 0, E = erf.erf_short(|x|) within 2^-43.1 relatively: for
    x >= 0, erf x <= 0.5205 and erfc x >= 0.4795, so 1 - E is within
    1.086 * 2^-43.1 + 2^-53 < 2^-42.9; 1 + E within 2^-43.1 + 2^-53.
    erfc_mid (< 2^-49.9) on (1/2, 10.25], 2 below -4 and +0 above 10.25 as
    there.  All within 2^-40, decided by the wide window 2^-39; what it
    leaves goes to erfc_approx's window and the table.  Branch-free, for
    the CPU's decided-first loop: every range is evaluated (erfc_mid on an
    argument kept inside its pieces, 2 for those outside) and one selected."""
    inline_into_callers()
    nan = x != x
    e = erf_short(abs32(x))
    y = erfc_mid(x if (x > HALF_F32) & (x <= HIGH_F32) else TWO_F32)
    y = F64(0.0) if x > HIGH_F32 else y
    y = sub_rn(ONE, e) if x <= HALF_F32 else y
    y = add_rn(ONE, e) if x < ZERO_F32 else y
    y = TWO if x < LOW_F32 else y
    r, ok = round_if_within(y, WIDE_WINDOW_LO, WIDE_WINDOW_HI)
    return (x if nan else r), ok | nan


@jitable
def erfc_f32(x):
    r, ok = erfc_fast(x)
    if ok:
        return r
    return finish(erfc_approx(x), _KEYS, _VALUES, bitcast(x))


# --------------------------------------------------------------------------- float64

NAN64 = F64(np.nan)
ZERO64 = F64(0.0)
TWO_LIMIT64 = F64(-6.0)
ZERO_LIMIT64 = F64(27.25)
REL_SERIES64 = F64(2.0**-99)
REL_LARGE64 = F64(2.0**-98)
_E0 = np.int64(0)


@jitable
def _erfc_special64(x):
    """(result, True) for NaN, x <= -6, |x| < 2^-80 and x >= 27.25 (infinities
    included), else (anything, False)."""
    if x != x:
        return NAN64, True
    if x >= ZERO_LIMIT64:
        return ZERO64, True
    if x <= TWO_LIMIT64:
        return TWO, True
    if fabs(x) < TINY:
        return ONE, True
    return ZERO64, False


# The plain-double first step (erf64.py, "plain-double pieces"), one formula
# for 2^-80 <= a = |x| < 27.25:
# * 0 < x < 27.25: erfc x = (h + l) 2^q < 2^-78.5 relative (erf64.py's
#   bound holds on the whole piece [26, 28): its tails and the dominance of
#   the double-double steps are those of every piece), h >= 0.9999
#   erfcx(27.25) > 2^-5.7.
#   - h 2^q >= 2^-1022: RN(h + l) 2^q by bracket_err's window, then scaled
#     by 2^(q + 64) (exact) and by 2^-64 (exact where the rounded value is
#     at least 2^-1022, which the decision requires; a window's end just
#     below 2^-1022 leaves the argument undecided).
#   - h 2^q < 2^-1022 (x > 26.54): exact64.decide_subnormal rounds h + l
#     once onto the subnormal grid (h 2^q >= erfc 27.25 (1 - 2^-74) >
#     2^-1077, as it needs).
# * -6 < x < 0: 2 - erfc|x|, erfc|x| < 1 (scaled words normal, q >= -53),
#   2 - h exact, erfc|x| / (2 - erfc|x|) < 1: < 2^-78.5 + 2^-104.
# bracket_err's window err = 2^-74 h exceeds 2 * 2^-78.4 |h + l| + 2^-52 |l|
# by more than 2^3.
ERFC64_PLAIN_EPS = F64(2.0**-74)
ERFC64_SUBNORMAL_EPS = F64(2.0**-74)  # relative error of h + l < 2^-78.5 (above)
LARGE_SAFE64 = F64(1.0)
_SCALE_UP = np.int32(64)
_TWO_M64 = F64(2.0**-64)
_Q_MIN = np.int32(-1022)
_MIN_NORMAL = F64(2.0**-1022)


@jitable
def erfc_fast64(x):
    """(erfc(x) correctly rounded, True), or (anything, False) where the
    plain-double step cannot decide (above): erfc|x| = e^(-x^2) erfcx|x|,
    and 2 - erfc|x| for x < 0, 2, 1 and +0 for x <= -6, |x| < 2^-80 and
    x >= 27.25, NaN.  Branch-free (the formula runs on a safe argument where
    a special value is selected), so that the CPU launcher vectorises it.
    Undecided: about one argument in 2^20, which `erfc_f64` hands to the
    double-double step."""
    inline_into_callers()
    a = fabs(x)
    inside = (a >= TINY) & (x > TWO_LIMIT64) & (x < ZERO_LIMIT64)
    la = a if inside else LARGE_SAFE64
    ch, cl, q = erfc_large_fast(la)
    s = pow2(max(q, _Q_MIN))  # used where x < 0 (q >= -53)
    h, e = fast_two_sum(TWO, negate(mul_rn(ch, s)))
    nh, nl = fast_two_sum(h, sub_rn(e, mul_rn(cl, s)))
    negative = x < ZERO64
    h = nh if negative else ch
    l = nl if negative else cl
    up = pow2((np.int32(0) if negative else q) + _SCALE_UP)
    lo, hi = bracket_err(h, l, mul_rn(h, ERFC64_PLAIN_EPS))
    lo = mul_rn(mul_rn(lo, up), _TWO_M64)
    hi = mul_rn(mul_rn(hi, up), _TWO_M64)
    decided = (lo == hi) & (lo >= _MIN_NORMAL)
    below, below_decided = decide_subnormal(h, l, q, ERFC64_SUBNORMAL_EPS)
    subnormal = mul_rn(mul_rn(h, up), _TWO_M64) < _MIN_NORMAL
    lo = below if subnormal else lo
    decided = below_decided if subnormal else decided
    r = ONE if a < TINY else lo
    r = TWO if x <= TWO_LIMIT64 else r
    r = ZERO64 if x >= ZERO_LIMIT64 else r
    nan = x != x
    r = NAN64 if nan else r
    done = (a < TINY) | (x <= TWO_LIMIT64) | (x >= ZERO_LIMIT64) | nan
    return r, (inside & decided) | done


@jitable
def erfc_dd_fast64(x):
    """(erfc(x) correctly rounded, True) where the double-double path and its
    rounding test decide, else (anything, False): the second step."""
    r, done = _erfc_special64(x)
    if done:
        return r, True
    a = fabs(x)
    if a < SERIES_LIMIT:
        h, l, e = erf_series_dd(a)  # e = 0: a >= 2^-80
        if x > ZERO64:
            h, l = negate(h), negate(l)
        h, l = dd_add(ONE, ZERO64, h, l)
        return ziv_round(h, l, dd_error(h, REL_SERIES64), _E0)
    h, l, q = erfc_large_dd(a)
    if x > ZERO64:
        return ziv_round(h, l, dd_error(h, REL_LARGE64), q)
    s = pow2(q)  # q >= -57: the scaled words stay normal, exactly
    h, l = dd_add(TWO, ZERO64, negate(mul_rn(h, s)), negate(mul_rn(l, s)))
    return ziv_round(h, l, dd_error(h, REL_LARGE64), _E0)


@jitable
def erfc_accurate64(x):
    """erfc(x) by the triple-double path alone (also used by tests)."""
    r, done = _erfc_special64(x)
    if done:
        return r
    a = fabs(x)
    if a < SERIES_LIMIT:
        h, m, l, e = erf_series_td(a)
        if x > ZERO64:
            h, m, l = negate(h), negate(m), negate(l)
        h, m, l = td_add(ONE, ZERO64, ZERO64, h, m, l)
        return td_round(h, m, l, _E0)
    h, m, l, q = erfc_large_td(a)
    if x > ZERO64:
        return td_round(h, m, l, q)
    s = pow2(q)
    h, m, l = td_add(TWO, ZERO64, ZERO64, negate(mul_rn(h, s)), negate(mul_rn(m, s)), negate(mul_rn(l, s)))
    return td_round(h, m, l, _E0)


@jitable
def erfc_f64(x):
    """erfc for float64, correctly rounded: the plain-double step, else the
    double-double one, else the triple-double path."""
    r, ok = erfc_fast64(x)
    if ok:
        return r
    r, ok = erfc_dd_fast64(x)
    if ok:
        return r
    return erfc_accurate64(x)
