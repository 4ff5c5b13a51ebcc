"""Triple-double arithmetic and correct rounding to float64: the building blocks of
the correctly rounded float64 math library.

Every float64 function `<name>_f64` follows CORE-MATH's two-step scheme:

1. **Fast path in double-double.**  The function is evaluated as hi + lo with an
   absolute error bound `err` (a double, computed at run time from the bound
   the function's comments argue).
2. **Rounding test** (`ziv_round`): the exact value lies in
   [hi + lo - err, hi + lo + err]; rounding to nearest is monotone, so if both
   ends round to the same float64, that is the correctly rounded result.  The
   ends are rounded exactly (`round_sum`: no extra error, no fudge factor).
3. **Accurate path in triple-double** (hi + mid + lo) where the test fails,
   with a relative error of about 2^-140 or better (argued per function), then
   rounded once (`round_scaled`).  It returns the correctly rounded result for
   every input whose exact value lies farther than that error from a rounding
   boundary; the published worst cases (tests/data/mathlib_hard_cases_f64/)
   and docs/mathlib.md say for which domains this is proven.

Results are carried as a value V (a double-double or triple-double near 1) and
a power-of-two exponent e: the function is V 2^e.  `round_scaled` rounds V 2^e
to float64 in one step, subnormal and overflowing results included (no double
rounding), so every function evaluates V in the normal range whatever its
result.

Triple-doubles here are (h, m, l) with h + m + l the value, normalized
(`td_renorm`): |m| <= ulp(h)/2 <= 2^-53 |h| and |l| <= ulp(m)/2 <= 2^-53 |m|
(for the inputs each operation's comments assume).  The error bounds below
are relative, for normalized operands, and ignore underflow (every caller keeps
its values within [2^-900, 2^900]).
"""

from fractions import Fraction

import numpy as np

from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, negate
from .core import fast_two_sum, two_prod, two_sum

F64 = np.float64
ZERO = F64(0.0)
ONE = F64(1.0)
_U64_1 = np.uint64(1)
_EXP_FIELD = np.uint64(52)


def td_const(q):
    """(h, m, l): the exact rational q (a Fraction) as three doubles, each rounded to
    nearest; |q - h - m - l| < 2^-159 |q| (pure Python, import time)."""
    h = float(q)
    m = float(q - Fraction(h))
    l = float(q - Fraction(h) - Fraction(m))
    return F64(h), F64(m), F64(l)


# --------------------------------------------------------------------------- exact constants (import time)
# Fixed-point integers with FIX fractional bits; every series is summed to far
# below 2^-FIX, so the constants split by `td_const` are correct to 2^-159.

FIX = 400


def _atanh_inv(n):
    """atanh(1/n) * 2^FIX, truncated (n >= 2): sum 1/((2k+1) n^(2k+1))."""
    total, power, k = 0, (1 << FIX) // n, 0
    while power:
        total += power // (2 * k + 1)
        power //= n * n
        k += 1
    return total


LN2_FIX = 2 * _atanh_inv(3)  # ln 2 = 2 atanh(1/3)
LN10_FIX = 3 * LN2_FIX + 2 * _atanh_inv(9)  # ln 10 = 3 ln 2 + ln(5/4), ln(5/4) = 2 atanh(1/9)


def fix_fraction(v):
    return Fraction(v, 1 << FIX)


LN2_Q = fix_fraction(LN2_FIX)
LN10_Q = fix_fraction(LN10_FIX)

# --------------------------------------------------------------------------- triple-double arithmetic


@jitable
def td_renorm(a, b, c):
    """(h, m, l) with h + m + l == a + b + c exactly, normalized when no more than
    two of a, b, c cancel (five exact two_sums)."""
    b, c = two_sum(b, c)
    a, b = two_sum(a, b)
    b, c = two_sum(b, c)
    a, b = two_sum(a, b)
    b, c = two_sum(b, c)
    return a, b, c


@jitable
def td_add(ah, am, al, bh, bm, bl):
    """a + b, absolute error < 2^-153 (|a| + |b|).

    ah + bh and am + bm are exact two_sums (|am + bm| <= 2^-52 M, M = max(|ah|, |bh|));
    e0 + s1 too.  What is left, e1 + (al + bl) + f1 with each term <= 2^-104 M,
    is summed in three roundings of at most 2^-53 * 2^-102.4 M each: < 2^-153 M.
    The final renormalization is exact.
    """
    s0, e0 = two_sum(ah, bh)
    s1, e1 = two_sum(am, bm)
    t1, f1 = two_sum(e0, s1)
    t2 = add_rn(add_rn(e1, add_rn(al, bl)), f1)
    return td_renorm(s0, t1, t2)


@jitable
def td_mul(ah, am, al, bh, bm, bl):
    """a b, relative error < 2^-151.

    The product splits into orders 1 (ah bh), 2^-53 (ah bm, am bh), 2^-106
    (ah bl, am bm, al bh) and 2^-159 (am bl, al bm) and below.  The first two
    orders are exact two_prods, combined by exact two_sums; the 2^-106 terms and
    the error terms (e1, e2 <= 2^-106, f1 <= 2^-105, f2 <= 2^-104) add up to
    < 2^-102.4 and are summed in six roundings of < 2^-155.4 each; the dropped
    terms are < 2^-158.  Total < 2^-151 of |a b|.
    """
    p0, e0 = two_prod(ah, bh)
    p1, e1 = two_prod(ah, bm)
    p2, e2 = two_prod(am, bh)
    s, f1 = two_sum(p1, p2)
    s, f2 = two_sum(s, e0)
    t = fma_rn(ah, bl, fma_rn(am, bm, mul_rn(al, bh)))
    t = add_rn(t, add_rn(e1, e2))
    t = add_rn(t, add_rn(f1, f2))
    return td_renorm(p0, s, t)


@jitable
def td_div(ah, am, al, bh, bm, bl):
    """a / b, relative error < 2^-148.

    Three quotient digits q1, q2, q3, each the double quotient of the current
    remainder by bh (relative error < 2^-52 each, so every remainder is
    < 2^-51.5 of the previous one): r1 = a - q1 b and r2 = r1 - q2 b in
    triple-double (td_mul, td_add: < 2^-150 of |a| each, the cancellation in
    the subtraction is exact because the two_sums are).  The final digit's error
    2^-52 |r2/b| < 2^-155 |a/b|; the remainders' errors < 2^-149 |a/b|.
    """
    q1 = div_rn(ah, bh)
    ph, pm, pl = td_mul(q1, ZERO, ZERO, bh, bm, bl)
    rh, rm, rl = td_add(ah, am, al, negate(ph), negate(pm), negate(pl))
    q2 = div_rn(rh, bh)
    ph, pm, pl = td_mul(q2, ZERO, ZERO, bh, bm, bl)
    rh, rm, rl = td_add(rh, rm, rl, negate(ph), negate(pm), negate(pl))
    q3 = div_rn(rh, bh)
    return td_renorm(q1, q2, q3)


@jitable
def td_scale(h, m, l, s):
    """(h s, m s, l s) for a power of two s (exact while no part underflows)."""
    return mul_rn(h, s), mul_rn(m, s), mul_rn(l, s)


@jitable
def td_neg(h, m, l):
    return negate(h), negate(m), negate(l)


# --------------------------------------------------------------------------- rounding to float64


@jitable
def pow2_wide(e):
    """(2^e1, 2^e2) with e1 + e2 = e, each a normal double, for -2044 <= e <= 2046:
    a product by both is a product by 2^e with at most one rounding (the last)."""
    e1 = e // 2
    e2 = e - e1
    return (bitcast(np.uint64(np.int64(e1) + 1023) << _EXP_FIELD),
            bitcast(np.uint64(np.int64(e2) + 1023) << _EXP_FIELD))


@jitable
def round_odd(s, t):
    """s, or its neighbour toward s + t, whichever has an odd last bit (s = RN(s + t)
    of an exact two_sum, t != 0 or not).  The result z is the round-to-odd of the
    exact s + t: no double with an even last bit lies between s + t and z."""
    if t != ZERO:
        u = bitcast(s)
        if (u & _U64_1) == 0:
            if (t > ZERO) == (s > ZERO):
                u = u + _U64_1  # away from zero
            else:
                u = u - _U64_1  # toward zero
            s = bitcast(u)
    return s


@jitable
def round_sum(a, b, c):
    """RN(a + b + c) exactly, for |b| + |c| <= |a|/8 and |a| >= 2^-900.

    (s, t) = two_sum(b, c) is exact; z = round_odd(s, t).  The result lies in
    a's binade or a neighbouring one, so every rounding boundary near it is
    a + B with B a multiple of ulp(a)/4 and |B| <= |a|/4: a double that is a
    multiple of 2 ulp(s) (ulp(s) <= 2^-52 |s| <= ulp(a)/8), so its last bit at
    the precision of s is even.  So b + c and z lie on the same side of every B,
    z is never one (odd last bit), and RN(a + z) -- one IEEE addition -- is
    RN(a + b + c).  Ties (b + c exactly a boundary) have t = 0, z = b + c and
    are resolved by that addition, to even.
    """
    s, t = two_sum(b, c)
    return add_rn(a, round_odd(s, t))


@jitable
def round_scaled(h, m, l, e):
    """RN((h + m + l) 2^e) for a normalized (h, m, l) with 2^-900 <= |h| <= 2^900
    and e an integer with -2000 <= e <= 2000, subnormal and overflowing results
    included, rounded once.

    Normal result: RN(h + m + l) (`round_sum`) times 2^e is exact, or overflows
    to inf exactly when the result does (RN(V) 2^e >= 2^1024 iff
    V 2^e >= 2^1024 (1 - 2^-54)).
    Subnormal result (|h| < C = 2^(-1022 - e)): C + V lies in [C, 2C), whose
    float64 spacing is ulp(C) = 2^(-1074 - e), the subnormal spacing scaled by
    2^-e.  So RN(C + V) - C (exact, Sterbenz) times 2^e (exact: a multiple of
    2^-1074 below 2^-1022) is the correctly rounded subnormal.  RN(C + h + m + l):
    (u, v) = two_sum(C, h) exactly, (p, q) = two_sum(v, m) exactly, and
    round_sum(u, p, q + l), where q + l rounds once (< 2^-53 |q + l|,
    < 2^-158 |V| relative to the exact value: callers count it in their error).
    """
    e1, e2 = pow2_wide(e)
    if e >= -100:  # |V 2^e| >= 2^-1000: normal or overflowing
        return mul_rn(mul_rn(round_sum(h, m, l), e1), e2)
    c1, c2 = pow2_wide(-1022 - e)
    c = mul_rn(c1, c2)  # exact: 2^(-1022 - e), a normal double (e < -100)
    if fabs(h) >= c:
        return mul_rn(mul_rn(round_sum(h, m, l), e1), e2)
    if h < ZERO:
        c = negate(c)
    u, v = two_sum(c, h)
    p, q = two_sum(v, m)
    r = round_sum(u, p, add_rn(q, l))
    return mul_rn(mul_rn(add_rn(r, negate(c)), e1), e2)


@jitable
def ziv_round(h, l, err, e):
    """(RN((h + l) 2^e), True) if every value within err of h + l gives the same
    float64 after scaling by 2^e, else (that float64, False).  (h, l) a
    normalized double-double with 2^-900 <= |h| <= 2^900, 0 <= err <= 2^-60 |h|.

    Both ends h + l -+ err are rounded exactly (`round_scaled`), and rounding is
    monotone: if they agree, every value between them, the exact one included,
    rounds to that float64.
    """
    lo = round_scaled(h, l, negate(err), e)
    hi = round_scaled(h, l, err, e)
    return lo, bitcast(lo) == bitcast(hi)


@jitable
def td_round(h, m, l, e):
    """RN((h + m + l) 2^e), the accurate path's final rounding (`round_scaled`)."""
    return round_scaled(h, m, l, e)


@jitable
def dd_error(h, eps):
    """An absolute error bound eps |h| as a double, rounded up (|h| eps (1 + 2^-52)):
    the rounding test's err for a relative bound eps (a power of two)."""
    return fma_rn(fabs(h), eps, mul_rn(fabs(h), mul_rn(eps, F64(2.0**-52))))


@jitable
def dd_normalize(h, l):
    """(h, l) with h = RN(h + l) (exact two_sum; no assumption on the magnitudes)."""
    return two_sum(h, l)


@jitable
def dd_from_td(h, m, l):
    """The double-double nearest-ish to h + m + l: (h, m + l) renormalized (error
    < 2^-105 |h|)."""
    return fast_two_sum(h, add_rn(m, l))
