"""erf(x) for float32, correctly rounded (scheme: softrep/algorithms/math/exception_tables.py).

erf is odd: computed on a = |x| and the sign applied after (erf(+-0) = +-0,
erf(+-inf) = +-1).  For a > 4, 1 - erf a = erfc a < erfc 4 < 1.6e-8 < 2^-25
(half an ulp below 1): the result rounds to 1.

First step (`erf_fast`): erf_short, two polynomials to 2^-43.1 (below),
decided by the wide window 2^-39.  Where it cannot decide (about one input
in 2^15), the exception table's fast path (softrep/algorithms/math/erf_pieces.py):
a <= 1/2, a P(a^2) (2^-51.8); 1/2 < a <= 4, erf_mid, a polynomial of erf
itself on each of two pieces (< 2^-50.2).  Accurate path: the table below
(every input whose fast result cannot be rounded safely, with its MPFR
value).

float64 (`erf_f64`, scheme: multiword.py; pieces and error bounds: erf64.py):
* |x| >= 6: erfc 6 < 2^-55.3 < 2^-54 (half an ulp below 1): +-1.
* |x| < 1/4: the series a P(a^2): double-double < 2^-103, triple-double
  < 2^-149.5 (relative; a < 2^-80 scaled by 2^200 so that subnormal results
  round once).
* 1/4 <= |x| < 6: 1 - erfc a with erfc a = e^(-a^2) R(a) <= erfc(1/4) < 0.724
  and erf a > 0.276, so erfc's relative error counts at most 2.62 times:
  double-double 2.62 * 2^-100 plus the subtraction (dd_add, < 2^-104) < 2^-98.5;
  triple-double 2.62 * 2^-147.8 plus td_add (< 2^-153 (1 + 0.724) / 0.276
  < 2^-150.4) < 2^-146.
The rounding tests use 2^-99 (series) and 2^-97 (1 - erfc).
These make the second of three steps (`erf_dd_fast64`).  The first
(`erf_fast64`) is erf a = a G(a) in plain double, branch-free, with G = erf(a)/a
from a table of 768 degree-7 pieces on [0, 6) (< 2^-77.07, tested with 2^-74;
erf64.py, "erf a = a G(a)"); the third is the triple-double path.
Hard cases: CORE-MATH's list is exhaustive (>= 43 identical bits) for
2^-61 <= |x| < 5.92; below 2^-61 erf x = (2/sqrt(pi)) x (1 - x^2/3 ...) with
x^2/3 < 2^-123.6, whose hard cases are the list's of [2^-61, 2^-60) scaled
(normal results); for subnormal x every result lies on the 2^-1074 grid at
least 2^-57.3 of its spacing from a midpoint (continued fraction of
2/sqrt(pi)), far beyond the accurate path's 2^-96 of it.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import fabs, fma_rn, jitable, mul_rn, negate, sub_rn
from .erf_pieces import erf_mid, erf_small
from .core import (WIDE_WINDOW_HI, WIDE_WINDOW_LO, abs32, coefficient_tuple, dd_add, fast_two_sum, horner_pairs,
                   neg32, pow2, round_if_within, signbit32, two_prod)
from .erf64 import (SERIES_LIMIT, erf_ratio_fast, erf_ratio_piece, erf_series_dd, erf_series_td, erfc_large_dd,
                    erfc_large_td)
from .exact64 import bracket_err
from .exception_tables import decide, exception_arrays, finish_odd
from .multiword import dd_error, td_add, td_round, ziv_round

F64 = np.float64
NAN32 = np.float32(np.nan)
ONE = F64(1.0)
HALF_F32 = np.float32(0.5)
ONE_F32 = np.float32(1.0)
SATURATE_F32 = np.float32(4.0)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.algorithms.math.exception_tables scan erf): (bits of |x|, bits of erf|x|)
ERF_EXCEPTIONS = (
    (0x00aa320c, 0x00c00b88),
    (0x012a320c, 0x01400b88),
    (0x01aa320c, 0x01c00b88),
    (0x022a320c, 0x02400b88),
    (0x02aa320c, 0x02c00b88),
    (0x032a320c, 0x03400b88),
    (0x03aa320c, 0x03c00b88),
    (0x042a320c, 0x04400b88),
    (0x04aa320c, 0x04c00b88),
    (0x052a320c, 0x05400b88),
    (0x05aa320c, 0x05c00b88),
    (0x062a320c, 0x06400b88),
    (0x06aa320c, 0x06c00b88),
    (0x072a320c, 0x07400b88),
    (0x07aa320c, 0x07c00b88),
    (0x082a320c, 0x08400b88),
    (0x08aa320c, 0x08c00b88),
    (0x092a320c, 0x09400b88),
    (0x09aa320c, 0x09c00b88),
    (0x0a2a320c, 0x0a400b88),
    (0x0aaa320c, 0x0ac00b88),
    (0x0b2a320c, 0x0b400b88),
    (0x0baa320c, 0x0bc00b88),
    (0x0c2a320c, 0x0c400b88),
    (0x0caa320c, 0x0cc00b88),
    (0x0d2a320c, 0x0d400b88),
    (0x0daa320c, 0x0dc00b88),
    (0x0e2a320c, 0x0e400b88),
    (0x0eaa320c, 0x0ec00b88),
    (0x0f2a320c, 0x0f400b88),
    (0x0faa320c, 0x0fc00b88),
    (0x102a320c, 0x10400b88),
    (0x10aa320c, 0x10c00b88),
    (0x112a320c, 0x11400b88),
    (0x11aa320c, 0x11c00b88),
    (0x122a320c, 0x12400b88),
    (0x12aa320c, 0x12c00b88),
    (0x132a320c, 0x13400b88),
    (0x13aa320c, 0x13c00b88),
    (0x142a320c, 0x14400b88),
    (0x14aa320c, 0x14c00b88),
    (0x152a320c, 0x15400b88),
    (0x15aa320c, 0x15c00b88),
    (0x162a320c, 0x16400b88),
    (0x16aa320c, 0x16c00b88),
    (0x172a320c, 0x17400b88),
    (0x17aa320c, 0x17c00b88),
    (0x182a320c, 0x18400b88),
    (0x18aa320c, 0x18c00b88),
    (0x192a320c, 0x19400b88),
    (0x19aa320c, 0x19c00b88),
    (0x1a2a320c, 0x1a400b88),
    (0x1aaa320c, 0x1ac00b88),
    (0x1b2a320c, 0x1b400b88),
    (0x1baa320c, 0x1bc00b88),
    (0x1c2a320c, 0x1c400b88),
    (0x1caa320c, 0x1cc00b88),
    (0x1d2a320c, 0x1d400b88),
    (0x1daa320c, 0x1dc00b88),
    (0x1e2a320c, 0x1e400b88),
    (0x1eaa320c, 0x1ec00b88),
    (0x1f2a320c, 0x1f400b88),
    (0x1faa320c, 0x1fc00b88),
    (0x202a320c, 0x20400b88),
    (0x20aa320c, 0x20c00b88),
    (0x212a320c, 0x21400b88),
    (0x21aa320c, 0x21c00b88),
    (0x222a320c, 0x22400b88),
    (0x22aa320c, 0x22c00b88),
    (0x232a320c, 0x23400b88),
    (0x23aa320c, 0x23c00b88),
    (0x242a320c, 0x24400b88),
    (0x24aa320c, 0x24c00b88),
    (0x252a320c, 0x25400b88),
    (0x25aa320c, 0x25c00b88),
    (0x262a320c, 0x26400b88),
    (0x26aa320c, 0x26c00b88),
    (0x272a320c, 0x27400b88),
    (0x27aa320c, 0x27c00b88),
    (0x282a320c, 0x28400b88),
    (0x28aa320c, 0x28c00b88),
    (0x292a320c, 0x29400b88),
    (0x29aa320c, 0x29c00b88),
    (0x2a2a320c, 0x2a400b88),
    (0x2aaa320c, 0x2ac00b88),
    (0x2b2a320c, 0x2b400b88),
    (0x2baa320c, 0x2bc00b88),
    (0x2c2a320c, 0x2c400b88),
    (0x2caa320c, 0x2cc00b88),
    (0x2d2a320c, 0x2d400b88),
    (0x2daa320c, 0x2dc00b88),
    (0x2e2a320c, 0x2e400b88),
    (0x2eaa320c, 0x2ec00b88),
    (0x2f2a320c, 0x2f400b88),
    (0x2faa320c, 0x2fc00b88),
    (0x302a320c, 0x30400b88),
    (0x30aa320c, 0x30c00b88),
    (0x312a320c, 0x31400b88),
    (0x31aa320c, 0x31c00b88),
    (0x322a320c, 0x32400b88),
    (0x32aa320c, 0x32c00b88),
    (0x332a320c, 0x33400b88),
    (0x33aa320c, 0x33c00b88),
    (0x3425c046, 0x343b07b1),
    (0x358e9d2d, 0x35a0ec32),
    (0x35d2fadc, 0x35ee10bb),
    (0x36aea466, 0x36c51007),
    (0x37ee85c4, 0x3806926a),
    (0x3940ead6, 0x3959af14),
    (0x39c0057d, 0x39d8ac49),
    (0x3aa60e18, 0x3abb5f7a),
    (0x3b25a39d, 0x3b3ae741),
    (0x3c7c9e9f, 0x3c8e8399),
    (0x3e1fcc60, 0x3e32dc2d),
    (0x3f043a75, 0x3f08eed3),
    (0x3f44ddfd, 0x3f3923f8),
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(ERF_EXCEPTIONS)


@jitable
def erf_approx(a):
    """erf(a) in double for a float32 a >= 0 (+inf included), relative error < 2^-50.2.

    Branch-free, so that the vectorised fast loop can use it: both pieces are
    evaluated and one is selected (erf_small and erf_mid read no table, so
    any a is safe for both; what the unselected one computes is discarded)."""
    inline_into_callers()
    r = erf_mid(a)
    r = ONE if a > SATURATE_F32 else r
    return erf_small(a) if a <= HALF_F32 else r


# erf's first step, `erf_short`, to the wide window's accuracy only (the
# approximation of the exception table, `erf_approx`, evaluates three
# polynomials of 53 coefficients in all to 2^-50.2; this one two of 32).
# Both pieces are evaluated for every a and one is selected:
# * a <= 3/2: a P(a^2), P a fit of G(v) = erf(sqrt v)/sqrt v on [0, 9/4]:
#   mpmath.chebyfit(G, [0, 9/4], 12) at 160 bits, each coefficient rounded to
#   nearest double, lowest degree first.  As rounded it misses G by < 2^-43.21
#   relatively (measured, tests/test_mathlib2.py).  a^2 is exact (a has 24
#   bits); core.horner_pairs rounds each pair, each step and v^2 once, off
#   by at most 4.1 * 2^-53 of G (to first order; the factor is measured in
#   tests/test_mathlib2.py as Horner's is for erf_mid); the product by a
#   rounds once: < 2^-43.21 + 2^-50.96 + 2^-53 < 2^-43.1.
# * 3/2 < a <= 4: erf itself in d = a - 11/4 (exact: a's last bit is at
#   >= 2^-23), mpmath.chebyfit(lambda d: erf(11/4 + d), [-5/4, 5/4], 20) at
#   160 bits, rounded alike: < 2^-43.77 absolutely as rounded, horner_pairs'
#   roundings < 2.2 * 2^-53; erf a >= erf(3/2) > 0.966, so < 2^-43.6
#   relatively.
# Both polynomials by horner_pairs rather than Horner's rule: half the chain
# of dependent fmas, which the AVX2 loop waited on (docs/benchmarks.md).
# a > 4 is evaluated at 4: erf(4) = 1 - 1.5e-8 lies 2^-26.05 above the
# midpoint 1 - 2^-25, far outside the window, and rounds to 1, as erf of
# everything beyond does.
_ERF_SHORT_SMALL = [float.fromhex(h) for h in (
    "0x1.20dd750429a20p+0", "-0x1.812746b00df27p-2", "0x1.ce2f21926ce3cp-4", "-0x1.b82ce144d91e6p-6",
    "0x1.565baddfc864cp-8", "-0x1.c02b3570d2a0bp-11", "0x1.f9829b5b61371p-14", "-0x1.f3b8c2a570d36p-17",
    "0x1.b37a54d5d23dcp-20", "-0x1.462bfa424106dp-23", "0x1.797a4822b28f1p-27", "-0x1.ebba0926faf0ep-32")]
_ERF_SHORT_BIG = [float.fromhex(h) for h in (
    "0x1.fff2cfb045598p-1", "0x1.3360ccd2763dap-11", "-0x1.a6a519bd12a55p-10", "0x1.69cf4665bd1abp-9",
    "-0x1.ab0c261092256p-9", "0x1.6935969b75f1fp-9", "-0x1.b2756f63c7c68p-10", "0x1.52b61334c7e08p-11",
    "-0x1.755245996140fp-14", "-0x1.2ab8c5435cc02p-14", "0x1.cd3f751bd3986p-15", "-0x1.09e8108266effp-16",
    "-0x1.1a97de269ef3ep-20", "0x1.69c5ec49e2c00p-19", "-0x1.f4ad0d0f69aadp-21", "-0x1.2be207dad0320p-28",
    "0x1.f68b953a0e6fep-24", "-0x1.090f3b952dbdcp-25", "-0x1.4a221bc6f5eabp-28", "0x1.61d78a9550e45p-29")]
ERF_SHORT_COEFFS = (_ERF_SHORT_SMALL, _ERF_SHORT_BIG)  # for the tests
ERF_SHORT_SMALL = coefficient_tuple(_ERF_SHORT_SMALL)
ERF_SHORT_BIG = coefficient_tuple(_ERF_SHORT_BIG)
ERF_SHORT_CENTRE = F64(2.75)
ERF_SHORT_SPLIT = np.float32(1.5)


@jitable
def erf_short(a):
    """erf(a) in double for a float32 a >= 0, relative error < 2^-43.1 (the
    comment above; a above 4 is evaluated at 4, a NaN gives a NaN).
    Branch-free: both pieces are evaluated."""
    inline_into_callers()
    ad = F64(SATURATE_F32 if a > SATURATE_F32 else a)
    small = mul_rn(ad, horner_pairs(ERF_SHORT_SMALL, mul_rn(ad, ad)))
    big = horner_pairs(ERF_SHORT_BIG, sub_rn(ad, ERF_SHORT_CENTRE))
    return small if a <= ERF_SHORT_SPLIT else big


@jitable
def erf_fast(x):
    """(erf(x) correctly rounded, True), or (anything, False) where the first
    step cannot decide: erf_short(|x|) within 2^-43.1, decided by
    the wide window 2^-39, the sign applied after.  A NaN fails the test
    and is left to erf_table_fast.  Branch-free: vectorises in the CPU's
    decided-first loop."""
    inline_into_callers()
    r, ok = round_if_within(erf_short(abs32(x)), WIDE_WINDOW_LO, WIDE_WINDOW_HI)
    return (neg32(r) if signbit32(x) else r), ok


@jitable
def erf_table_fast(x):
    """(erf(x) correctly rounded, True), or (a float32 of the double
    approximation's window, with x's sign; False) where the exception
    table's rounding test cannot decide (erf_approx, window 2^-48)."""
    inline_into_callers()
    nan = x != x
    r, ok = decide(erf_approx(abs32(x)))
    r = neg32(r) if signbit32(x) else r
    return (x if nan else r), ok | nan


@jitable
def erf_f32(x):
    r, ok = erf_fast(x)
    if ok:
        return r
    r, ok = erf_table_fast(x)
    if ok:
        return r
    return finish_odd(x, r, _KEYS, _VALUES)


# --------------------------------------------------------------------------- float64

NAN64 = F64(np.nan)
ZERO64 = F64(0.0)
ERF_SATURATE64 = F64(6.0)
REL_SERIES64 = F64(2.0**-99)
REL_LARGE64 = F64(2.0**-97)


# The plain-double first step: erf a = a G(a), G = erf(a)/a from the table
# of erf64.py ("erf a = a G(a)"), < 2^-77.07 relative for 0 <= a < 6.  For
# a < 2^-400, d = 0 (G = G(0) within 2^-800) and a is scaled by 2^600 (exact),
# so that the low words stay normal; the result (>= 1.128 a >= 2^-1022 for a
# normal a) is a normal double, so scaling the rounded value back is exact.
# Subnormal arguments are left undecided (their results are subnormal).
# bracket_err's window err = 2^-74 h exceeds 2 * 2^-77.07 |h + l| + 2^-52 |l|
# (|l| <= 2^-53 |h|) by more than 2^2.
ERF64_PLAIN_EPS = F64(2.0**-74)
ERF64_SQUARE_MIN = F64(2.0**-400)
ERF64_UP = F64(2.0**600)
ERF64_DOWN = F64(2.0**-600)
NORMAL_MIN64 = F64(2.0**-1022)


@jitable
def erf_fast64(x):
    """(erf(x) correctly rounded, True), or (anything, False) where the
    plain-double step cannot decide: a G(a) for |x| < 6 (above), +-1 beyond,
    x itself for +-0 and NaN.  Branch-free (arguments outside are replaced by
    1 and their result discarded), so that the CPU launcher vectorises it.
    Undecided: subnormal x and about one argument in 2^19, which `erf_f64`
    hands to the double-double step."""
    inline_into_callers()
    a = fabs(x)
    inside = (a >= NORMAL_MIN64) & (a < ERF_SATURATE64)
    small = a < ERF64_SQUARE_MIN
    la = a if inside else ONE
    j, d = erf_ratio_piece(la)
    gh, gl = erf_ratio_fast(j, ZERO64 if small else d)
    sa = mul_rn(la, ERF64_UP) if small else la
    h, l = two_prod(sa, gh)
    h, l = fast_two_sum(h, fma_rn(sa, gl, l))
    lo, hi = bracket_err(h, l, mul_rn(h, ERF64_PLAIN_EPS))
    r = mul_rn(lo, ERF64_DOWN) if small else lo
    saturated = a >= ERF_SATURATE64
    r = ONE if saturated else r
    r = negate(r) if x < ZERO64 else r
    zero = a == ZERO64
    nan = x != x
    r = x if zero else r
    r = NAN64 if nan else r
    return r, (inside & (lo == hi)) | saturated | zero | nan


@jitable
def erf_dd_fast64(x):
    """(erf(x) correctly rounded, True) where the double-double path and its
    rounding test decide, else (anything, False): the second step."""
    if x != x:
        return NAN64, True
    a = fabs(x)
    if a == ZERO64:
        return x, True
    if a >= ERF_SATURATE64:
        r, ok = ONE, True
    elif a < SERIES_LIMIT:
        h, l, e = erf_series_dd(a)
        r, ok = ziv_round(h, l, dd_error(h, REL_SERIES64), e)
    else:
        h, l, q = erfc_large_dd(a)
        s = pow2(q)  # q >= -57: the scaled words stay normal, exactly
        h, l = dd_add(ONE, ZERO64, negate(mul_rn(h, s)), negate(mul_rn(l, s)))
        r, ok = ziv_round(h, l, dd_error(h, REL_LARGE64), np.int64(0))
    return (negate(r) if x < ZERO64 else r), ok


@jitable
def erf_accurate64(x):
    """erf(x) by the triple-double path alone (also used by tests)."""
    if x != x:
        return NAN64
    a = fabs(x)
    if a == ZERO64:
        return x
    if a >= ERF_SATURATE64:
        r = ONE
    elif a < SERIES_LIMIT:
        h, m, l, e = erf_series_td(a)
        r = td_round(h, m, l, e)
    else:
        h, m, l, q = erfc_large_td(a)
        s = pow2(q)
        h, m, l = td_add(ONE, ZERO64, ZERO64, negate(mul_rn(h, s)), negate(mul_rn(m, s)), negate(mul_rn(l, s)))
        r = td_round(h, m, l, np.int64(0))
    return negate(r) if x < ZERO64 else r


@jitable
def erf_f64(x):
    """erf for float64, correctly rounded: the plain-double step, else the
    double-double one, else the triple-double path."""
    r, ok = erf_fast64(x)
    if ok:
        return r
    r, ok = erf_dd_fast64(x)
    if ok:
        return r
    return erf_accurate64(x)
