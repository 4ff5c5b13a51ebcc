"""Shared building blocks of the correctly rounded float32 math library.

Every function `<name>_f32` in softrep/algorithms/math follows one scheme (CORE-MATH's):

1. **Fast path in double.**  The float32 argument is widened to float64 (exact)
   and the function is evaluated in float64 through the rounding primitives,
   with a relative error that the comments of each function bound by less than
   2^-49 (typically about 2^-51).

2. **Rounding test** (`round_if_safe`).  The true value lies in
   [y (1 - 2^-46), y (1 + 2^-46)], a window wider than the error bound by a
   factor >= 8 (the two products that form the window are themselves rounded,
   by at most 2^-53 relatively).  Rounding to float32 is monotone, so if both
   ends of the window round to the same float32, that float32 is the correctly
   rounded result.  This holds everywhere, subnormal and overflowing results
   included.  A float32 rounding boundary falls in the window for about 2^-21
   of the inputs (the window is 2^-45 wide relatively, float32 boundaries are
   2^-24 apart relatively), i.e. a few thousand of the 2^32 inputs.
   `round_if_within` takes other windows: exp's and sigmoid's fast paths,
   from `exp_core_short` (< 2^-40.1), decide with 2^-39, which leaves about
   2^-15 of their inputs undecided.

3. **Accurate path in double-double** for those inputs: `exp_dd` and `log_dd`
   below (relative error below 2^-92, argued there), and the functions derived
   from them in each file, followed by `dd_to_f32`, which rounds hi + lo to
   float32 exactly (round-to-odd, see there).  The accurate path is only
   wrong if the exact value lies within ~2^-70 (relatively) of a float32
   rounding boundary; the exhaustive verifier (`python -m softrep verify FUNC
   --exhaustive`) checks that no input of the 2^32 comes that close, so the
   result is proven correctly rounded for every input (docs/mathlib.md).

Because every operation is an IEEE primitive, the CPU kernels, the CUDA kernels
and the simulator compute the same bits, so one exhaustive CPU run covers all.

The helpers here take and return numpy float64 scalars (and Python/numpy ints
for exponents), so part 2 of the library (sin, erf, ...) can use them too.
"""

from fractions import Fraction

import numpy as np

from ...primitives.rounding import (add_rn, bitcast, div_rn, fma_rn, jitable, mul_rn, negate, sub_rn, wrapping_add,
                                    wrapping_sub)

F64 = np.float64
NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO32 = np.float32(0.0)
ONE32 = np.float32(1.0)
ZERO = F64(0.0)
NEG_ZERO = F64(-0.0)  # r + -0 is r for every r: LLVM drops the addition (r + +0 turns -0 into +0)
ONE = F64(1.0)
TWO = F64(2.0)
HALF = F64(0.5)

# --------------------------------------------------------------------------- constants
# Double-double constants: hi = RN(c), lo = RN(c - hi); |c - hi - lo| < 2^-106 |c|.
# Produced with mpmath at 300 bits.
LN2_H = F64(float.fromhex("0x1.62e42fefa39efp-1"))
LN2_L = F64(float.fromhex("0x1.abc9e3b39803fp-56"))
LN10_H = F64(float.fromhex("0x1.26bb1bbb55516p+1"))
LN10_L = F64(float.fromhex("-0x1.f48ad494ea3e9p-53"))
INV_LN2 = F64(float.fromhex("0x1.71547652b82fep+0"))
INV_LN10 = F64(float.fromhex("0x1.bcb7b1526e50ep-2"))
INV_LN10_L = F64(float.fromhex("0x1.95355baaafad3p-57"))
LOG10_2_H = F64(float.fromhex("0x1.34413509f79ffp-2"))
LOG10_2_L = F64(float.fromhex("-0x1.9dc1da994fd21p-59"))
INV_LN2_L = F64(float.fromhex("0x1.777d0ffda0d24p-56"))
SQRT2 = F64(float.fromhex("0x1.6a09e667f3bcdp+0"))

# 1.5 * 2^52: fma(z, 1/ln2, SHIFT) - SHIFT is z/ln2 rounded to the nearest integer
# for |z/ln2| < 2^51 (the addition pushes the fraction bits out of the mantissa).
SHIFT = F64(6755399441055744.0)

# Window of the rounding test: 1 -+ 2^-46 (both exact doubles).
WINDOW_LO = F64(1.0 - 2.0**-46)
WINDOW_HI = F64(1.0 + 2.0**-46)
# The wider window of the fast paths built on `exp_core_short` (errors below
# 2^-40): 1 -+ 2^-39.  A float32 rounding boundary falls in it for about 2^-15 of the
# inputs.
WIDE_WINDOW_LO = F64(1.0 - 2.0**-39)
WIDE_WINDOW_HI = F64(1.0 + 2.0**-39)
SCALE_DOWN_8 = F64(2.0**-8)

def _dd_const(q):
    """(hi, lo) of an exact rational q, both rounded to nearest (pure Python, import time)."""
    hi = float(q)  # Fraction -> float rounds correctly
    lo = float(q - Fraction(hi))
    return F64(hi), F64(lo)

# Taylor coefficients 1/n!.  Double: the fast e^r - 1 polynomial; double-double:
# the accurate exp.
_FACT = [Fraction(1, 1)]
for _n in range(1, 20):
    _FACT.append(_FACT[-1] / _n)
(C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13) = (F64(float(_FACT[n])) for n in range(2, 14))
(F2H, F2L), (F3H, F3L), (F4H, F4L), (F5H, F5L), (F6H, F6L), (F7H, F7L), (F8H, F8L), (F9H, F9L) = (
    _dd_const(_FACT[n]) for n in range(2, 10))

# 1/(2n+1)!, n = 1..9: sinh(x) = x + x w (1/3! + w (1/5! + ...)), w = x^2.
(S3, S5, S7, S9, S11, S13, S15, S17, S19) = (F64(float(_FACT[2 * n + 1])) for n in range(1, 10))

_U64_1 = np.uint64(1)
_EXP_ONE = np.uint64(0x3FF0000000000000)
_LOG_REDUCE_OFFSET = np.uint64(0x3FF0000000000000 - 0x3FE6A09E667F3BCD)  # bits(1) - bits(SQRT2/2), for log_reduce
_FIELD_SHIFT = np.uint64(52)

# --------------------------------------------------------------------------- polynomials

def coefficient_tuple(values):
    """The coefficients of one polynomial for `horner`.  A tuple's length is
    known when the kernel compiles, so LLVM unrolls the Horner loop, which
    lets the decided-first loops (softrep/cpu/launch.py) vectorise around it;
    over an array the loop stays a loop and nothing vectorises."""
    return tuple(F64(v) for v in values)


@jitable
def horner(coeffs, u):
    """sum coeffs[i] u^i by Horner's rule with fma (coeffs lowest first: a
    tuple of float64, see `coefficient_tuple`, or a 1-d float64 array)."""
    n = len(coeffs)
    p = coeffs[n - 1]
    for i in range(n - 2, -1, -1):
        p = fma_rn(p, u, coeffs[i])
    return p


@jitable
def horner_pairs(coeffs, u):
    """sum coeffs[i] u^i by Horner's rule in u^2 over the pairs
    coeffs[i] + coeffs[i + 1] u (second-order Horner; coeffs lowest first, a
    tuple of float64): fma(... fma(c[n-1], u^2, c[n-3] + c[n-2] u) ..., u^2,
    c[0] + c[1] u) for odd n, the top pair in place of c[n-1] for even n.
    One multiplication more than `horner` and half its chain of dependent
    fmas: the pairs are independent of one another.  A vector loop that
    evaluates a long polynomial (erf's first step: 12 and 20 coefficients)
    waits on that chain where the core holds too few of them in flight (the
    AVX2 path; docs/benchmarks.md).  Each fma rounds once and u^2 rounds
    once: the bound on the roundings is not Horner's (the callers measure
    theirs).  LLVM unrolls the loop over erf's 20 coefficients, which the
    vector loop needs (tests/test_fast_paths_vectorise.py checks it)."""
    n = len(coeffs)
    u2 = mul_rn(u, u)
    if n % 2 == 1:
        p = coeffs[n - 1]
    else:
        p = fma_rn(coeffs[n - 1], u, coeffs[n - 2])
    for i in range(n - 3 if n % 2 == 1 else n - 4, -1, -2):
        p = fma_rn(p, u2, fma_rn(coeffs[i + 1], u, coeffs[i]))
    return p


@jitable
def horner_from(p, coeffs, u):
    """Horner's rule continued from p over coeffs (lowest first):
    fma(... fma(fma(p, u, coeffs[n-1]), u, coeffs[n-2]) ..., u, coeffs[0]).
    `horner_from(horner(high, u), low, u)` is `horner(low + high, u)` step
    for step.  A polynomial of more than about 12 coefficients is written
    that way: LLVM fully unrolls a loop over a tuple of up to about 12
    coefficients only, and a loop it leaves rolled reads the tuple through
    a switch, which keeps the vectorised fast loops scalar."""
    n = len(coeffs)
    for i in range(n - 1, -1, -1):
        p = fma_rn(p, u, coeffs[i])
    return p


# --------------------------------------------------------------------------- float32 sign bit
# softrep.primitives.rounding.negate / fabs on float32 currently return float64 garbage on
# the CPU target (Numba promotes uint32 ^ uint32 to a 64-bit integer, which
# bitcast then reads as a float64).  These keep the integer at 32 bits.
_SIGN32 = np.uint32(0x80000000)
_ABS32 = np.uint32(0x7FFFFFFF)

@jitable
def neg32(x):
    """-x for a float32 x (sign-bit flip, exact)."""
    return bitcast(np.uint32(bitcast(x) ^ _SIGN32))

@jitable
def signbit32(x):
    """True if the sign bit of the float32 x is set (also for -0 and NaN)."""
    return bitcast(x) >= _SIGN32

@jitable
def abs32(x):
    """|x| for a float32 x (sign-bit clear, exact)."""
    return bitcast(np.uint32(bitcast(x) & _ABS32))

# --------------------------------------------------------------------------- rounding to float32

@jitable
def clamp(x, lo, hi):
    """x limited to [lo, hi] by comparisons and selects (builtin min/max become
    libdevice fminf/fmaxf calls on CUDA); a NaN passes through.  Each select
    compares the value it passes on, so that each is one x86 min or max
    instruction (those return their second operand, x, for a NaN)."""
    y = hi if x > hi else x
    return lo if y < lo else y

@jitable
def outside_range(x, r, ok, lo, hi, below, above):
    """(r, ok) of a float32 fast path that evaluated x only inside [lo, hi]
    (another argument in its place), with x < lo giving `below`, x > hi
    `above` and a NaN x the NaN, each decided."""
    r = above if x > hi else r
    r = below if x < lo else r
    r = NAN32 if x != x else r
    return r, ok | (not ((x >= lo) & (x <= hi)))

@jitable
def round_if_within(y, window_lo, window_hi):
    """(float32 nearest y, True) if every value within w |y| of y rounds to the
    same float32, for the window 1 -+ w given as (window_lo, window_hi), both
    exact doubles; else (the float32 of y window_lo, False).  y finite or
    infinite, not NaN.
    Each product rounds by at most 2^-53 relatively, which the callers'
    margins between their error bound and w absorb."""
    lo = np.float32(mul_rn(y, window_lo))
    hi = np.float32(mul_rn(y, window_hi))
    return lo, lo == hi

@jitable
def round_if_safe(y):
    """`round_if_within` the window 2^-46 of fast paths with an error below 2^-49."""
    return round_if_within(y, WINDOW_LO, WINDOW_HI)

@jitable
def dd_to_f32(hi, lo):
    """The float32 nearest to the exact sum hi + lo (|lo| <= ulp(hi)/2, hi normal).

    Round-to-odd: if lo != 0, replace hi by whichever of hi and its neighbour
    toward hi + lo has an odd last bit.  That double z has the same float32
    rounding as hi + lo: no float32 number or float32 midpoint (both have at
    least 28 trailing zero bits in a double mantissa) lies strictly between
    hi + lo and z, and z itself is neither (odd last bit).  This is Boldo and
    Melquiond's round-to-odd theorem, for 53 >= 24 + 2.
    """
    if lo != 0:
        u = bitcast(hi)
        if (u & _U64_1) == 0:
            if (lo > 0) == (hi > 0):
                u = u + _U64_1  # away from zero
            else:
                u = u - _U64_1  # toward zero
            hi = bitcast(u)
    return np.float32(hi)

# --------------------------------------------------------------------------- double-double

@jitable
def two_sum(a, b):
    """s + e == a + b exactly, s = RN(a + b) (Knuth)."""
    s = add_rn(a, b)
    bb = sub_rn(s, a)
    e = add_rn(sub_rn(a, sub_rn(s, bb)), sub_rn(b, bb))
    return s, e

@jitable
def fast_two_sum(a, b):
    """s + e == a + b exactly when |a| >= |b| (Dekker)."""
    s = add_rn(a, b)
    e = sub_rn(b, sub_rn(s, a))
    return s, e

@jitable
def two_prod(a, b):
    """p + e == a * b exactly (no underflow), p = RN(a * b)."""
    p = mul_rn(a, b)
    e = fma_rn(a, b, negate(p))
    return p, e

@jitable
def dd_add(ah, al, bh, bl):
    """(ah + al) + (bh + bl), relative error < 2^-104 (accurate sum of Li et al.)."""
    s, e = two_sum(ah, bh)
    t, f = two_sum(al, bl)
    e = add_rn(e, t)
    s, e = fast_two_sum(s, e)
    e = add_rn(e, f)
    return fast_two_sum(s, e)

@jitable
def dd_mul(ah, al, bh, bl):
    """(ah + al)(bh + bl), relative error < 2^-102."""
    p, e = two_prod(ah, bh)
    e = fma_rn(ah, bl, e)
    e = fma_rn(al, bh, e)
    return fast_two_sum(p, e)

@jitable
def dd_div(ah, al, bh, bl):
    """(ah + al)/(bh + bl): quotient digit q1, exact-ish remainder, two corrections;
    relative error < 2^-100."""
    q1 = div_rn(ah, bh)
    ph, pl = dd_mul(q1, ZERO, bh, bl)
    rh, rl = dd_add(ah, al, negate(ph), negate(pl))
    q2 = div_rn(rh, bh)
    ph, pl = dd_mul(q2, ZERO, bh, bl)
    rh, rl = dd_add(rh, rl, negate(ph), negate(pl))
    q3 = div_rn(rh, bh)
    qh, ql = fast_two_sum(q1, q2)
    return dd_add(qh, ql, q3, ZERO)

@jitable
def pow2(k):
    """2^k as a double, for an integer or integer-valued double -1022 <= k <= 1023
    (built from bits: exact).

    k goes through int32 (exact in this range): AVX2 converts 4 doubles to
    int32 in one instruction but has no double -> int64 vector conversion, so
    an int64 one made LLVM scalarise that step of the vectorised fast loops
    (exp's ran ~25% slower)."""
    return bitcast(np.uint64(np.int64(np.int32(k)) + 1023) << np.uint64(52))

@jitable
def round_to_int(z):
    """z/ln2 rounded to an integer (as a double); |z| < 2^50."""
    return sub_rn(fma_rn(z, INV_LN2, SHIFT), SHIFT)

# --------------------------------------------------------------------------- fast paths (double)

@jitable
def expm1_poly(r):
    """e^r - 1 for |r| <= 0.3466 (ln2/2), relative error < 2^-51.5.

    Taylor to degree 13: the remainder is below |r|^14/14! < 2^-57.7 |r|, i.e.
    < 2^-57 relative to e^r - 1 (which is >= 0.85 |r| on this range).  Horner
    with fma: each of the 12 steps rounds once (2^-53 relative) a value whose
    variable part is <= |r|/2 < 0.18 of it, so the errors of the inner steps
    shrink geometrically and sum to < 1.3 * 2^-53 of 1 + r/2 + ...; the final
    product adds 2^-53.  Total < 2^-51.5.
    """
    p = fma_rn(r, C13, C12)
    p = fma_rn(r, p, C11)
    p = fma_rn(r, p, C10)
    p = fma_rn(r, p, C9)
    p = fma_rn(r, p, C8)
    p = fma_rn(r, p, C7)
    p = fma_rn(r, p, C6)
    p = fma_rn(r, p, C5)
    p = fma_rn(r, p, C4)
    p = fma_rn(r, p, C3)
    p = fma_rn(r, p, C2)
    p = fma_rn(r, p, ONE)
    return mul_rn(r, p)

@jitable
def exp_reduce(zh, zl):
    """(k, r) with zh + zl = k ln2 + r + err, |r| <= 0.3467, |err| < 2^-53.8.

    k = round(zh/ln2).  zh - k LN2_H is computed by one fma (rounding error
    <= ulp(r)/2 <= 2^-55); the k LN2_L and zl corrections are each rounded once
    more (<= 2^-55 each).  LN2_H + LN2_L is ln2 to 2^-106, times |k| <= 2^9.
    """
    kd = round_to_int(zh)
    r = fma_rn(negate(kd), LN2_H, zh)
    r = fma_rn(negate(kd), LN2_L, r)
    r = add_rn(r, zl)
    return kd, r

# e^r on |r| <= EXP_R_MAX = 1.0005 ln2/2 (past the reduction's |r| < 0.3466,
# below): a near-minimax polynomial of degree 11, mpmath.chebyfit(mpmath.exp,
# [-EXP_R_MAX, EXP_R_MAX], 12) at 200 bits with each coefficient rounded to
# nearest double, lowest degree first.  With the coefficients as rounded,
# |p(r) e^-r - 1| < 2^-55.8 on the interval (tests/test_mathlib.py measures
# it against mpmath).  Degree 11 rather than the Taylor series' 13 (which
# needs |r|^14/14! < 2^-57 at the ends): two fewer fmas per element.
EXP_R_MAX = 0.34674687707511265
EXP_COEFFS = coefficient_tuple(float.fromhex(h) for h in (
    "0x1.0000000000000p+0", "0x1.0000000000000p+0", "0x1.0000000000011p-1", "0x1.555555555555ap-3",
    "0x1.555555554f067p-5", "0x1.111111110f205p-7", "0x1.6c16c1881156bp-10", "0x1.a01a01b150ad2p-13",
    "0x1.a01991731e6fap-16", "0x1.71ddf5514be0cp-19", "0x1.28b43a93fe57ap-22", "0x1.af635e4f6b5eep-26"))
_EXPONENT_SHIFT = np.int64(52)


@jitable
def exp_core(zh, zl):
    """e^(zh + zl) for |zh| < 700, |zl| <= ulp(zh)/2, relative error < 2^-51.8
    (its callers' proofs use 2^-50.5).

    Reduction.  t = RN(zh INV_LN2 + SHIFT) is SHIFT + k for the integer k
    nearest zh/ln2 (to within 1010 * 2^-53 from INV_LN2's rounding), so
    |k| <= 1010, and kd = t - SHIFT = k exactly.  r = zh - k LN2_H by one
    fma, then - k LN2_L by another, then + zl: |r| < ln2/2 + 2^-42 < 0.3466,
    each of the three roundings is at most half an ulp of a value below 1/2,
    2^-55, and LN2_H + LN2_L misses ln2 by < 2^-106 (times |k|: < 2^-96).
    So r is zh + zl - k ln2 to within 3 * 2^-55 + 2^-96 < 0.76 * 2^-53, a
    relative error of e^r of the same size.

    Polynomial.  p(r) misses e^r by < 2^-55.8 = 0.15 * 2^-53 relatively (the
    fit above).  Horner with fma: the last step rounds a value in [0.70,
    1.42] once (half an ulp: 2^-53 absolute above 1, 2^-54 below); the step
    before rounds 1 + r/2 + ... in [0.84, 1.19] by 2^-53, which enters
    multiplied by |r| < 0.35; the one before that, 1/2 + r/6 + ..., by
    2^-54 times r^2 < 0.121; the rest are smaller still (< 0.01 * 2^-53 in
    all).  Relative to p >= 0.707: < (1 + 0.35 + 0.061 + 0.01) * 2^-53 =
    1.42 * 2^-53 above 1, < (0.5 + 0.42) / 0.707 * 2^-53 below.

    Scaling.  2^k is applied by adding k to p's exponent field: the low 12
    bits of t's bit pattern are k mod 2^12, shifted to bits 52..63 they are
    k 2^52 modulo 2^64.  p's exponent is -1 or 0 and -1010 <= k <= 1010, so
    the result is a normal double and the addition is exact.  (No integer
    conversion of kd and no multiplication: two integer operations.)

    Total < (0.76 + 0.15 + 1.42) * 2^-53 < 2^-51.8.  NaN and infinite zh
    give NaN (r is NaN; NaN's exponent field is all ones and k is 0).
    """
    t = fma_rn(zh, INV_LN2, SHIFT)
    kd = sub_rn(t, SHIFT)
    r = fma_rn(negate(kd), LN2_H, zh)
    r = fma_rn(negate(kd), LN2_L, r)
    r = add_rn(r, zl)
    p = horner(EXP_COEFFS, r)
    scale = np.int64(bitcast(t)) << _EXPONENT_SHIFT
    return bitcast(np.uint64(np.int64(bitcast(p)) + scale))

# e^r on |r| <= EXP_R_MAX to about 2^-40 only, for the fast paths that decide
# with the wide window (float32 exp and sigmoid): a degree-8 minimax
# polynomial for the relative error (Remez exchange on e^r, at 200 bits with
# mpmath), each coefficient rounded to nearest double, lowest degree first.
# As rounded, |p(r) e^-r - 1| < 2^-40.2 on the interval (measured in
# tests/test_mathlib.py).  Three fmas fewer than EXP_COEFFS.
EXP_SHORT_COEFFS = coefficient_tuple(float.fromhex(h) for h in (
    "0x1.ffffffffff799p-1", "0x1.ffffffffd5387p-1", "0x1.00000000887e4p-1", "0x1.555555a0bae57p-3",
    "0x1.55555404107f2p-5", "0x1.11108266e9b70p-7", "0x1.6c18b436c9a9ep-10", "0x1.a1a8812afdcdfp-13",
    "0x1.9eda43d6713f5p-16"))


@jitable
def exp_core_short(z):
    """e^z for |z| <= 128 (a widened float32 argument, limited by the caller),
    relative error < 2^-40.1: `exp_core` with a shorter reduction and
    polynomial, for the wide-window fast paths (exp's and sigmoid's).

    Reduction.  t and k as in exp_core, |k| <= 185.  r = z - k LN2_H by one
    fma (at most 2^-55, half an ulp of a value below 1/2), with LN2_H alone:
    LN2_H misses ln2 by < 2^-55.3, so k LN2_H misses k ln2 by < 185 * 2^-55.3
    < 2^-47.7.  |r| < ln2/2 + 2^-45 <= EXP_R_MAX, and e^r is off by < 2^-47.6
    relatively.

    Polynomial.  p(r) misses e^r by < 2^-40.2 (the fit above); Horner rounds
    as in exp_core, < 1.42 * 2^-53.  Scaling by 2^k is exact, as there.

    Total < 2^-40.2 + 2^-47.6 + 2^-52.5 < 2^-40.1."""
    t = fma_rn(z, INV_LN2, SHIFT)
    kd = sub_rn(t, SHIFT)
    r = fma_rn(negate(kd), LN2_H, z)
    p = horner(EXP_SHORT_COEFFS, r)
    scale = np.int64(bitcast(t)) << _EXPONENT_SHIFT
    return bitcast(np.uint64(np.int64(bitcast(p)) + scale))

@jitable
def expm1_core(z):
    """e^z - 1 for -40 <= z <= 700, relative error < 2^-50.

    e^z - 1 = 2^k (1 + q) - 1 = fma(2^k, q, 2^k - 1), q = expm1_poly(r) for
    z = k ln2 + r (`exp_reduce`).  Where k = 0 (every |z| <= ln2/2 but those
    within an ulp or two of +-ln2/2, whose z/ln2 may round to +-1), r = z
    exactly, 2^k - 1 = +0, and the fma returns q itself: the polynomial
    alone, with no cancellation (z = +-0 is returned as it is: r loses the
    sign of -0).  Otherwise 2^k - 1 is exact for -53 <= k <= 53 (rounded,
    2^-53 relative, beyond, where it is -1 or 2^k to within 2^-53), and the
    fma rounds once.  For k >= 1 the result is at least 2^k * 0.707 - 1 >= 0.41
    while |2^k q| <= 0.42 * 2^k, so q's relative error (2^-51.5) is amplified
    at most 2.1x; for k <= -1 the result is within [-1, -0.29] and 2^k q is
    <= 0.21.  Total < 2^-50.  One polynomial per argument and no branch, so
    the vectorised fast loops (tanh's, expm1's) evaluate one, not one per
    case.
    """
    kd, r = exp_reduce(z, ZERO)
    s = pow2(kd)
    large = fma_rn(s, expm1_poly(r), sub_rn(s, ONE))
    return z if z == ZERO else large

# P(w) = 2 (atanh(s)/s - 1)/w, w = s^2 in [0, ATANH_W_MAX] (|s| <= 0.1716 gives
# w < 0.02944): a near-minimax polynomial of degree 6, mpmath.chebyfit(P,
# [0, ATANH_W_MAX], 7) at 200 bits with each coefficient rounded to nearest
# double, lowest degree first; with the coefficients as rounded its relative
# error is < 2^-50.8 (tests/test_mathlib.py measures it against mpmath).  The
# Taylor series 2/3 + 2w/5 + ... needs degree 9 for the same use.
ATANH_W_MAX = 0.0295
ATANH_COEFFS = coefficient_tuple(float.fromhex(h) for h in (
    "0x1.5555555555558p-1", "0x1.99999999951f5p-2", "0x1.2492492e0b70cp-2", "0x1.c71c62c42db89p-3",
    "0x1.7462be245eae3p-3", "0x1.39fd25d62ab23p-3", "0x1.2b6776a1bf0b9p-3"))

# P to about 2^-36 only, for the fast path that decides with the wide window
# (float32 log): the same fit with degree 4, mpmath.chebyfit(P, [0,
# ATANH_W_MAX], 5) at 200 bits, each coefficient rounded to nearest double,
# lowest degree first; as rounded its relative error is < 2^-36.4 (measured in
# tests/test_mathlib.py).  Two fmas fewer than ATANH_COEFFS.
ATANH_SHORT_COEFFS = coefficient_tuple(float.fromhex(h) for h in (
    "0x1.555555556514ap-1", "0x1.999998c93029ap-2", "0x1.2493255328889p-2", "0x1.c67a24806c68ep-3",
    "0x1.8c99d4b7f356bp-3"))


@jitable
def atanh_series(s):
    """2 atanh(s) = log((1+s)/(1-s)) for |s| <= 0.1716, relative error < 2^-52.

    2s + s w P(w), w = s^2 <= 0.02944 < 2^-5.08, P the polynomial above
    (< 2^-50.8).  The tail s w P(w) is below 0.0098 |2s| (P < 0.667 + 0.4 w
    + ... < 0.68), so its errors -- P's own, w's rounding, Horner's (the
    terms shrink by a factor >= 30: < 1.1 * 2^-53 of P) and the product
    s w (2^-53), together < 2^-50 of the tail -- are below 2^-56.6 of the
    result, which is at least |2s|; the final fma rounds once (2^-53).
    """
    return atanh_by(ATANH_COEFFS, s)


@jitable
def atanh_by(coeffs, s):
    """2s + s w P(w), w = s^2, with P's coefficients `coeffs` (ATANH_COEFFS or
    ATANH_SHORT_COEFFS): `atanh_series`'s evaluation, whose error it argues."""
    w = mul_rn(s, s)
    return fma_rn(mul_rn(s, w), horner(coeffs, w), add_rn(s, s))

@jitable
def log_reduce(x):
    """(e, m) with x = 2^e m, SQRT2/2 <= m < SQRT2 (SQRT2 = RN(sqrt 2)), for a
    positive normal double x, by integer operations on the bits u of x (exact,
    no comparison): t = u + bits(1) - bits(SQRT2/2) has exponent field
    F = 1023 + e, because subtracting SQRT2/2's significand borrows from x's
    exponent field exactly when x's significand is below SQRT2's; then
    m = x 2^-e, whose bits are u + bits(1) - (F << 52).  (For x's
    significand f: f >= SQRT2's gives e = E + 1 and m = f/2, else e = E and
    m = f, E x's exponent.)  For any other x (negative, +0, +inf, NaN:
    values the branch-free first steps evaluate and discard) the sums wrap
    modulo 2^64 and the result is meaningless."""
    u = bitcast(x)
    f = wrapping_add(u, _LOG_REDUCE_OFFSET) >> _FIELD_SHIFT
    return np.int64(f) - 1023, bitcast(wrapping_sub(wrapping_add(u, _EXP_ONE), f << _FIELD_SHIFT))

@jitable
def logm_core(m):
    """log(m) for sqrt(1/2) <= m < sqrt(2), relative error < 2^-51.

    s = (m - 1)/(m + 1): m - 1 is exact (Sterbenz), m + 1 and the division
    round once each, so s has relative error < 2^-52; |s| <= 0.1716.
    log(m) = 2 atanh(s) (`atanh_series`, 2^-52), and d(2 atanh s)/ds s / (2 atanh s)
    <= 1.01, so the error of s passes through almost unchanged.
    """
    f = sub_rn(m, ONE)
    s = div_rn(f, add_rn(m, ONE))
    return atanh_series(s)

@jitable
def log_core(x):
    """log(x) for a positive normal double x, relative error < 2^-50.

    e ln2 + log(m): e LN2_H rounds once (2^-53), e LN2_L + log(m) once; since
    |log m| <= ln2/2, the result is at least |e| ln2 / 2 when e != 0 (no
    cancellation beyond a factor 2): total < 4 * 2^-53 + 2^-51 < 2^-50.
    """
    e, m = log_reduce(x)
    lm = logm_core(m)
    ed = F64(np.int32(e))  # |e| <= 1075; int32 -> double vectorises on AVX2, int64 does not
    return add_rn(mul_rn(ed, LN2_H), fma_rn(ed, LN2_L, lm))

@jitable
def log_core_short(x):
    """log(x) for a positive double 2^-150 < x < 2^129 (every positive float32,
    and log1p's 1 + x) as a double, relative error < 2^-42.9:
    `log_core` to the accuracy of the wide window 2^-39 only, for the float32
    log's fast path (as exp_core_short for exp's).

    log m = atanh_by(ATANH_SHORT_COEFFS, s): s's relative error (2^-52, as in
    logm_core) passes through almost unchanged (1.01 * 2^-52), the final fma
    rounds once (2^-53), and the tail s w P(w), below 0.0099 of the result,
    carries P's 2^-36.4 and its own roundings (a few 2^-53): below 2^-43.07
    of the result.  In all < 2^-43.0.

    Then e ln2 + log m by one fma, e LN2_H + lm rounded once (2^-53): such an
    x has |e| <= 150, and LN2_H misses ln2 by < 2^-55.26, so e LN2_H misses
    e ln2 by < |e| 2^-55.26.  For e = 0 the fma returns lm itself.  Otherwise
    |log x| >= |e| ln2 - ln2/2 >= |e| ln2/2 >= |log m|, so the three errors are
    below 2^-43.0 + 2^-53.73 + 2^-53 < 2^-42.9 of the result.
    """
    e, m = log_reduce(x)
    lm = atanh_by(ATANH_SHORT_COEFFS, div_rn(sub_rn(m, ONE), add_rn(m, ONE)))
    return fma_rn(F64(np.int32(e)), LN2_H, lm)

# --------------------------------------------------------------------------- accurate paths (double-double)

@jitable
def exp_dd(zh, zl):
    """e^(zh + zl) as a double-double, |zh| < 700 and the result normal,
    relative error < 2^-92.

    * k = round(zh/ln2); r = (zh + zl) - k (LN2_H + LN2_L) in double-double:
      k ln2 is formed with two_prod plus one fma (error < |k| 2^-106 * ln2 <= 2^-96
      for |k| <= 2^10) and subtracted with dd_add (2^-104 relative): |r| < 0.35.
    * r' = r / 2^8 (exact), |r'| < 2^-9.5.  e^r' by Taylor to degree 9 in
      double-double Horner: remainder r'^10/10! < 2^-116; each dd step < 2^-101.
    * (e^r')^256 by eight dd squarings: a relative error d becomes 2d + 2^-102 at
      each, so the 2^-101 of the polynomial (and the 2^-99.5 of the reduction)
      grow to < 2^8 * 2^-100 = 2^-92.  Then the exact scaling by 2^k.
    """
    kd = round_to_int(zh)
    kh, kl = two_prod(kd, LN2_H)
    kl = fma_rn(kd, LN2_L, kl)
    rh, rl = dd_add(zh, zl, negate(kh), negate(kl))
    rh = mul_rn(rh, SCALE_DOWN_8)
    rl = mul_rn(rl, SCALE_DOWN_8)
    ph, pl = dd_mul(F9H, F9L, rh, rl)
    ph, pl = dd_add(ph, pl, F8H, F8L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, F7H, F7L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, F6H, F6L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, F5H, F5L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, F4H, F4L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, F3H, F3L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, F2H, F2L)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, ONE, ZERO)
    ph, pl = dd_mul(ph, pl, rh, rl)
    ph, pl = dd_add(ph, pl, ONE, ZERO)
    for _ in range(8):
        ph, pl = dd_mul(ph, pl, ph, pl)
    s = pow2(kd)
    return mul_rn(ph, s), mul_rn(pl, s)

@jitable
def log_dd(xh, xl):
    """log(xh + xl) as a double-double, xh positive normal.

    One Newton step for f(y) = e^y - x from y0 = log_core(xh):
    y1 = y0 + (x - e^y0)/e^y0.  With d = y0 - log x (|d| < 2^-50 |log x|), the
    step leaves d^2/2 < 2^-101 |log x|^2 <= 2^-94 |log x| for |log x| <= 104,
    and exp_dd's relative error 2^-92 becomes an absolute error 2^-92 in the
    correction.  So the relative error is < 2^-91 / min(1, |log x|); the
    smallest |log x| of a float32 x != 1 is 2^-24, giving 2^-68.
    """
    y0 = log_core(xh)
    eh, el = exp_dd(y0, ZERO)
    dh, dl = dd_add(xh, xl, negate(eh), negate(el))
    th, tl = dd_div(dh, dl, eh, el)
    return dd_add(y0, ZERO, th, tl)
