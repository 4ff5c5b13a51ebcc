"""log(x) for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Specials: log(NaN or x < 0) = NaN, log(+-0) = -inf, log(+inf) = +inf,
log(1) = +0 (s = 0 in the series, and e = 0).
Fast path: `log_core_short` (x = 2^e m, sqrt(1/2) <= m < sqrt(2), log m = 2 atanh((m-1)/(m+1)),
relative error < 2^-42.9), decided by `round_if_within` the wide window 2^-39;
about one argument in 2^14 is left to the accurate path.  Subnormal float32
inputs are normal doubles.
Accurate path: `log_dd` (one Newton step on exp_dd; relative error < 2^-68).

float64 (`log_f64`, correctly rounded; scheme: multiword.py): a fast path in
double with a 256-entry table (explog64.log_dd_fast, relative error < 2^-67.0)
and a rounding test of four additions; where it cannot decide, explog64's
double-double log with the exact rounding test, else its triple-double
version.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import fabs, jitable, mul_rn, negate
from .core import (F64, INF32, NAN32, ONE, WIDE_WINDOW_HI, WIDE_WINDOW_LO, ZERO, dd_mul, dd_to_f32, log_core_short,
                   log_dd, round_if_within)
from .exact64 import bracket_err
from .explog64 import log_dd as log_dd64, log_dd_fast, log_split, log_td
from .multiword import dd_error, td_round, ziv_round

ZERO_F32 = np.float32(0.0)
NEG_INF32 = np.float32(-np.inf)

@jitable
def log_times_core(x, c):
    """log(x) C in double for a positive float32 x and the double c of a
    constant C, RN(log_core_short(x) c): relative error < 2^-42.8
    (`log_times_fast`)."""
    inline_into_callers()
    return mul_rn(log_core_short(F64(x)), c)


@jitable
def log_times_fast(x, c):
    """(log(x) c correctly rounded, True), or (undecided, False) where the fast
    path cannot decide, for a positive double c within 2^-53 of the constant
    meant (1, 1/ln2, 1/ln10): y = RN(log_core_short(x) c) misses log(x) times
    the constant by < (1 + 2^-42.9)(1 + 2^-53)^2 - 1 < 2^-42.8 relatively,
    inside the wide window 2^-39.  Exact results (log2 of a power of two,
    log10 of 10^n) are integers (or +0 at x = 1, where the core returns +0),
    decided as such.  Branch-free: the core evaluates x whatever it is (bit
    operations and arithmetic only, no memory read: outside 0 < x < inf,
    NaN included, its value is meaningless), and there the special result
    is selected, decided (the constant is positive, so log's specials are
    those of the product: -inf at +-0, +inf at +inf, NaN elsewhere).  One
    flag for the whole range and one select of the special value: three
    flags and three selects cost the AVX2 loop an eighth of its time, and
    a select of the core's argument a tenth."""
    inline_into_callers()
    inside = (x > ZERO_F32) & (x < INF32)
    r, ok = round_if_within(log_times_core(x, c), WIDE_WINDOW_LO, WIDE_WINDOW_HI)
    special = NEG_INF32 if x == ZERO_F32 else NAN32
    special = INF32 if x == INF32 else special
    return (r if inside else special), ok | (not inside)


@jitable
def log_fast(x):
    """(log(x) correctly rounded, True), or (undecided, False) where the fast
    path cannot decide: `log_times_fast` with the constant 1 (the product is
    exact)."""
    inline_into_callers()
    return log_times_fast(x, ONE)


@jitable
def log_f32(x):
    r, ok = log_fast(x)
    if ok:
        return r
    h, l = log_dd(F64(x), ZERO)
    return dd_to_f32(h, l)


ZERO64 = F64(0.0)
NAN64 = F64(np.nan)
INF64 = F64(np.inf)
LOG64_EPS = F64(2.0**-93)  # log_dd's relative error is < 2^-95.5 (explog64.py)


@jitable
def log_special64(x):
    """(result, True) for NaN, negative, zero and infinite x, else (x, False)."""
    if x != x or x < ZERO64:
        return NAN64, True
    if x == ZERO64:
        return negate(INF64), True
    if x == INF64:
        return INF64, True
    return x, False


# explog64.log_dd_fast's relative error is < 2^-67.0 (explog64.py; measured
# < 2^-69): the rounding test's window, err = 2^-65.5 |h|, is more than
# 2 * 2^-67.0 |h + l| + 2^-52 |l| < 2^-65.99 |h| (exact64.bracket_err's
# condition; |l| <= 2^-52 |h|), with a margin of 2^0.49.  The narrower the
# window, the fewer arguments go on to the double-double path (about one in
# 2^12 here).
LOG64_FAST_EPS = F64(2.0**-65.5)
ONE64 = F64(1.0)


@jitable
def log_fast64(x):
    """(log(x) correctly rounded, True), or (anything, False) where the fast path
    cannot decide: explog64.log_dd_fast and a rounding test of four additions
    (exact64.bracket_err) for positive finite x, subnormals included (every
    log x is a normal double or 0); the specials of `log_special64`.
    Branch-free (the specials evaluate log(1) and their result is discarded),
    so that the CPU launcher vectorises it.  Undecided: about one argument in
    2^12, which `log_f64` hands to the double-double path.  log(1) = +0 (r = 0,
    every term is +0)."""
    inline_into_callers()
    finite = (x > ZERO64) & (x < INF64)
    h, l = log_dd_fast(x if finite else ONE64)
    lo, hi = bracket_err(h, l, mul_rn(fabs(h), LOG64_FAST_EPS))
    r = INF64 if x == INF64 else lo
    r = negate(INF64) if x == ZERO64 else r
    r = NAN64 if (x != x) | (x < ZERO64) else r
    return r, (lo == hi) | (not finite)


@jitable
def log_times_fast64(x, ch, cl):
    """(log(x) (ch + cl) correctly rounded, True), or (anything, False) where
    the rounding test cannot decide: log2 and log10 (ch + cl = 1/ln2, 1/ln10)
    from the plain-double log.  explog64.log_dd_fast (< 2^-67.0) times the
    constant (dd_mul, < 2^-102; the constant's own error, measured in
    tests/test_mathlib_f64_fast.py, < 2^-104) is within 2^-66.99 of the exact
    value, relatively, so the window of log_fast64, 2^-65.5 |h|, keeps its
    margin of 2^0.49 over exact64.bracket_err's condition.  Exact results (x a
    power of 2 for log2, of 10 for log10, where the value is an integer) are
    doubles far from every rounding boundary, so both ends of the window
    round to them; no other result is a double or a midpoint (the values are
    irrational).  Branch-free, as log_fast64, whose specials it shares."""
    inline_into_callers()
    finite = (x > ZERO64) & (x < INF64)
    h, l = log_dd_fast(x if finite else ONE64)
    ph, pl = dd_mul(h, l, ch, cl)
    lo, hi = bracket_err(ph, pl, mul_rn(fabs(ph), LOG64_FAST_EPS))
    r = INF64 if x == INF64 else lo
    r = negate(INF64) if x == ZERO64 else r
    r = NAN64 if (x != x) | (x < ZERO64) else r
    return r, (lo == hi) | (not finite)


@jitable
def log_dd_fast64(x):
    """(log(x) correctly rounded, True), or (undecided, False) where the
    double-double path (explog64.log_dd) cannot decide.  log(1) = +0
    (the series of log m gives an exact 0)."""
    r, special = log_special64(x)
    if special:
        return r, True
    e, m = log_split(x)
    h, l = log_dd64(e, m)
    return ziv_round(h, l, dd_error(h, LOG64_EPS), 0)


@jitable
def log_f64(x):
    """log for float64, correctly rounded: the fast path, else the double-double
    one, else the triple-double log_td (relative error < 2^-144) rounded once."""
    r, ok = log_fast64(x)
    if ok:
        return r
    r, ok = log_dd_fast64(x)
    if ok:
        return r
    e, m = log_split(x)
    h, mm, l = log_td(e, m)
    return td_round(h, mm, l, 0)
