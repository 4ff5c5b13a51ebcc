"""pow(x, y) = x^y for float32, correctly rounded (scheme: softrep/algorithms/math/core.py).

Special values (IEEE 754 pow, as C99 Annex F and torch): pow(x, +-0) = 1 for
every x (NaN too); pow(1, y) = 1 for every y (NaN too); pow(-1, +-inf) = 1;
otherwise a NaN argument gives NaN.  pow(x, +inf) = +inf for |x| > 1, +0 for
|x| < 1; pow(x, -inf) the reverse.  pow(+-0, y): y an odd integer: +-0 for
y > 0, +-inf for y < 0; other y: +0 for y > 0, +inf for y < 0.  pow(-inf, y)
= pow(-0, -y) with the same rule; pow(+inf, y) = +inf for y > 0, +0 for
y < 0.  A finite x < 0: NaN for a non-integer y, else (-1)^y |x|^y.  So below,
a = |x| is positive and finite, y finite and nonzero.

Fast path: z = y log(a) in double-double (`log_dd`, then one exact-ish dd
product), e^z by `exp_core` (2^-50.5).  log_dd's absolute error is below
2^-92 max(1, |log a|); |z| <= 104 outside the clamps and |log a| >= 2^-24.1
for a != 1 (a = 1 - 2^-24), so |y| < 2^31 and z's absolute error is
< 2^31 2^-92 + 104 2^-102 < 2^-60.9.  That is a relative error of e^z below
2^-60.8, so the fast result is within 2^-50.4 and `round_if_safe` (window
2^-46) decides.  Clamps: z > 89 rounds to +inf (float32 overflows from
z = 88.7228), z < -104 to +0 (e^-104 < 2^-150, half the smallest subnormal).

Accurate path: first the exact cases.  x^y can be a float32 or a float32
rounding midpoint (25 significant bits) only when (with a = A 2^ea, A odd,
y = Y 2^ey, Y odd):
* A = 1: x^y = 2^(ea y), exact iff ea y is an integer E; 2^E is rounded to
  float32 from an exact double (2^-150 ties to +0, 2^128 gives inf);
* A >= 3: y > 0 (a negative power of an odd A > 1 is not dyadic) and y =
  N / 2^k with k = max(0, -ey) <= 3: x^y = A^(N/2^k) 2^(ea N/2^k) is dyadic only
  if A = c^(2^k) for an integer c (N is odd when k > 0) and 2^k divides ea; then
  x^y = c^N 2^E with c^N < 2^25 (else more than 25 significant bits), so
  N <= 15 (c >= 3) and 2^k <= 15 (A < 2^24).
Those are computed exactly (integer arithmetic, then one exact double b 2^E
rounded to float32).  Otherwise e^z by `exp_dd` (2^-93) and `dd_to_f32`: the
total relative error is below 2^-60.8, so the result is correctly rounded
unless x^y lies within 2^-60.8 (relatively) of a rounding boundary without
being on it.  Unlike the unary functions this cannot be enumerated (2^64
argument pairs); tests/test_mathlib2.py checks random pairs (hypothesis),
integer and half-integer exponents and near-boundary pairs against MPFR.
"""

from fractions import Fraction

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, fabs, fma_rn, jitable, mul_rn, negate, sqrt_rn, sub_rn
from .core import (F64, ZERO, abs32, dd_mul, dd_to_f32, exp_core, exp_dd, fast_two_sum, log_dd, neg32, pow2,
                   round_if_safe, signbit32, two_prod, two_sum)
from .exact64 import bracket_err
from .exp import EXP64_FAST_HI, EXP64_FAST_LO
from .explog64 import (MIN_NORMAL, exp_dd as exp_dd64, exp_reduce_fast, exp_reduced_fast, exp_td, log_dd as log_dd64, log_dd_fast, log_split, log_td, td_horner_step)
from .multiword import dd_error, round_scaled, td_add, td_const, td_mul, td_round, ziv_round


NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)
ONE_F32 = np.float32(1.0)
Z_OVERFLOW = F64(89.0)
Z_UNDERFLOW = F64(-104.0)
_MANT = np.uint32(0x7FFFFF)
_HIDDEN = np.uint32(0x800000)
_U32_1 = np.uint32(1)


@jitable
def _odd_significand(v):
    """(M, e) with |v| = M 2^e, M an odd integer (v a nonzero finite float32)."""
    u = bitcast(abs32(v))
    biased = np.int64(u >> np.uint32(23))
    m = np.int64(u & _MANT)
    if biased == 0:
        e = np.int64(-149)
    else:
        m = m | np.int64(0x800000)
        e = biased - 150
    while (m & 1) == 0:
        m = m >> 1
        e = e + 1
    return m, e


@jitable
def integer_kind(y):
    """0: y is not an integer; 1: an odd integer; 2: an even integer (y finite)."""
    if y == ZERO_F32:
        return 2
    m, e = _odd_significand(y)
    if e < 0:
        return 0
    if e == 0:
        return 1
    return 2


@jitable
def _int_root(v, k):
    """The integer c with c^(2^k) = v, or 0 if there is none (0 < v < 2^24, k <= 3):
    k exact square roots in double, each checked by an exact integer product."""
    for _ in range(k):
        c = np.int64(sqrt_rn(F64(v)))
        if c * c != v:
            return np.int64(0)
        v = c
    return v


@jitable
def pow_exact(a, y):
    """(True, float32 x^y) when a^y (a > 0, y finite nonzero, float32) is a float32
    or a float32 rounding midpoint, else (False, 0); see the module docstring."""
    am, ae = _odd_significand(a)
    ym, ye = _odd_significand(y)
    negative_y = y < ZERO_F32
    if am == 1:
        # a = 2^ae: a^y = 2^(ae * ym * 2^ye)
        if ye >= 0:
            if ye > 10:
                return False, ZERO_F32  # |E| >= 2^11: outside the clamps
            big = ae * ym * (np.int64(1) << ye)
        else:
            if (ae % (np.int64(1) << (-ye))) != 0:
                return False, ZERO_F32
            big = (ae >> (-ye)) * ym
        if negative_y:
            big = -big
        if big > 200 or big < -200:
            return False, ZERO_F32
        return True, np.float32(pow2(big))
    if negative_y:
        return False, ZERO_F32
    if ye >= 0:
        if ye > 4:
            return False, ZERO_F32
        n = ym << ye
        k = 0
    else:
        if ye < -3:
            return False, ZERO_F32
        n = ym
        k = -ye
    if n > 15:
        return False, ZERO_F32
    if k > 0:
        if (ae % (np.int64(1) << k)) != 0:
            return False, ZERO_F32
        c = _int_root(am, k)
        if c == 0:
            return False, ZERO_F32
        ae = ae >> k
    else:
        c = am
    b = np.int64(1)
    for _ in range(n):
        b = b * c
        if b >= (np.int64(1) << 25):
            return False, ZERO_F32
    e = ae * n
    if e > 200 or e < -250:
        return False, ZERO_F32
    return True, np.float32(mul_rn(F64(b), pow2(e)))


@jitable
def pow_positive(a, y):
    """a^y for a float32 a > 0 finite and y finite nonzero."""
    lh, ll = log_dd(F64(a), ZERO)
    zh, zl = dd_mul(F64(y), ZERO, lh, ll)
    if zh > Z_OVERFLOW:
        return INF32
    if zh < Z_UNDERFLOW:
        return ZERO_F32
    r, ok = round_if_safe(exp_core(zh, zl))
    if ok:
        return r
    exact, v = pow_exact(a, y)
    if exact:
        return v
    eh, el = exp_dd(zh, zl)
    return dd_to_f32(eh, el)


@jitable
def pow_f32(x, y):
    if y == ZERO_F32 or x == ONE_F32:
        return ONE_F32
    if x != x or y != y:
        return NAN32
    a = abs32(x)
    ay = abs32(y)
    if ay == INF32:
        if a == ONE_F32:
            return ONE_F32
        if (a > ONE_F32) == (y > ZERO_F32):
            return INF32
        return ZERO_F32
    kind = integer_kind(y)
    odd = kind == 1 and signbit32(x)  # (-|x|)^y = -(|x|^y) for an odd integer y
    if a == ZERO_F32 or a == INF32:
        # x^y is 0 or inf: +-0 with y > 0 or +-inf with y < 0 gives 0
        r = ZERO_F32 if (a == ZERO_F32) == (y > ZERO_F32) else INF32
    else:
        if x < ZERO_F32 and kind == 0:
            return NAN32
        r = pow_positive(a, y)
    if odd:
        return neg32(r)
    return r


# --------------------------------------------------------------------------- float64
#
# pow_f64: correctly rounded (scheme: multiword.py).  The special values are
# those of pow_f32 above, in binary64.  For a = |x| > 0 finite and y finite
# nonzero, x^y = +-e^z with z = y log(a).
#
# Double-double path (`pow_dd_fast64`, the second step after the plain-double
# `pow_fast64` below).  log(a) = lh + ll by explog64.log_dd (relative
# error < 2^-95.5); z = y lh + y ll with y lh an exact two_prod and y ll + pl
# rounded once by an fma (< 2^-104 |z|): z has relative error < 2^-95.4.
# Outside the clamps |z| <= 745.2 < 2^9.55, so z's absolute error is below
# 2^-85.8; e^(zh + zl) by explog64.exp_dd (relative < 2^-101): the value V 2^q
# has relative error < 2^-85.7, and the rounding test uses 2^-85.  Clamps (on
# the rounded product y lh, within 2^-40 of z): above 709.79, e^z > 2^1024
# rounds to inf; below -745.2, e^z < 2^-1075 rounds to +0; |y lh| < 2^-60:
# e^z lies within 2^-59 of 1, farther than 2^-55 from every rounding
# boundary (1 + 2^-53 and 1 - 2^-54), so x^y rounds to +-1.  The clamps also
# keep the products away from overflow and underflow.
#
# Exact cases (`pow_exact64`, run when neither fast path decides).  No
# Ziv loop decides an x^y that is a double (it is then decided: it lies half
# an ulp from every rounding boundary) or a midpoint between doubles, so those
# are detected and rounded from their exact value.  With a = A 2^ea and
# y = Y 2^ey, A and Y odd, x^y is a dyadic number b 2^G only when
# * A = 1: x^y = 2^(ea y), dyadic iff ea y is an integer E;
# * A >= 3: then y > 0 (a negative power of an odd A > 1 is not dyadic), and
#   with k = max(0, -ey), N = y 2^k (odd if k > 0): A^(N/2^k) 2^(ea N/2^k) is
#   dyadic iff A = c^(2^k) for an integer c and 2^k divides ea.
# A midpoint has at most 54 significant bits, so b = c^N < 2^54: N <= 34
# (c >= 3) and 2^k <= 32 (c^(2^k) = A < 2^53, c >= 3).  These are the sets of
# Lauter and Lefevre, "An efficient rounding boundary test for pow(x, y) in
# double precision" (IEEE TC 58(2), 2009), also used by CORE-MATH's pow.  Every
# such b 2^G (b < 2^54 odd) is rounded once, exactly (`round_scaled`; ties,
# e.g. 2^-1075 or 54-bit squares, to even).
#
# Accurate path (`pow_f64`).  log(a) by explog64.log_td (relative < 2^-144),
# z = y log(a) by td_mul (< 2^-151): z's relative error is < 2^-143.9, its
# absolute error < 2^-134.3, and exp_td adds < 2^-149: the triple-double result
# has relative error < 2^-134.2 and is rounded once.  That decides every x^y
# farther than 2^-134.2 (relatively) from a rounding boundary.
#
# Near 1 (|z| < 2^-42) a bound relative to the result is not enough: pairs
# such as (1 - 3 2^-53)^(-1/3) = 1 + 2^-53 + tiny lie 2^-108.6 ulp from a
# midpoint for a structural reason (y log x nearly cancels the series' next
# terms), far inside the triple-double bound (~2^-81 ulp).  There x^y =
# 1 + w, w = e^z - 1, and the doubles near 1 are 1 + k u (u = 2^-52 above 1,
# 2^-53 below), so the rounding is the sign of d = w - B for the boundary
# B = +-(k + 1/2) u nearest to the leading word of z.  `pow_near_one64` keeps
# the leading word of z exact and everything else small: for |f| = |a - 1| <
# 2^-20, z = y f + y (log1p(f) - f) with y f an exact two_prod p1 + p2 and
# log1p(f) - f = f^2 (-1/2 + f/3 - ... + f^8/10) (omitted < f^10/11 <
# 2^-203 |f|) in triple-double (relative < 2^-149 of a term < 2^-20.9 |z|:
# < 2^-169.8 |z|); otherwise z by log_td (< 2^-143.9 |z|).  w - B = (p1 - B) +
# [p2 + y (log1p(f) - f) + z^2/2 + z^3/6 + z^4/24] (omitted < 2^-174 |z|),
# the bracket a triple-double below 2^-20.8 |z| summed with absolute error
# < 2^-172 |z|; p1 - B is an exact two_sum and the last td_add errs by less
# than 2^-153 (|p1 - B| + |bracket|).  d is compared with that bound, computed
# at run time: for the pair above (|z| ~ 2^-53, |d| ~ 2^-160.6) the bound is
# ~2^-218.
#
# What is proven: both fast paths, the exact cases and the near-1 path where its
# test decides (where it does not, it returns the side of B its approximation
# lies on; no such pair is known).  Elsewhere a result within 2^-134.2
# (relatively) of a rounding boundary could be misrounded; no such (x, y) is
# known (CORE-MATH's 4 published worst cases lie next to doubles, half an ulp
# from every round-to-nearest boundary), but the domain (2^128 pairs) is not
# searched exhaustively.  docs/mathlib.md states what was checked.

NAN64 = F64(np.nan)
INF64 = F64(np.inf)
ZERO64 = F64(0.0)
ONE64 = F64(1.0)
Z64_OVERFLOW = F64(709.79)  # above: e^z > 2^1024 (1 - 2^-54), rounds to inf
Z64_UNDERFLOW = F64(-745.2)  # below: e^z < 2^-1075, rounds to +0
Z64_ONE = F64(2.0**-60)  # below (in magnitude): e^z rounds to 1
Z64_NEAR_ONE = F64(2.0**-42)  # below: the near-1 accurate path
F_SPLIT = F64(2.0**-20)  # |a - 1| below: z = y f + y (log1p(f) - f)
POW64_EPS = F64(2.0**-85)  # the double-double path's relative error is < 2^-85.7
ULP_ABOVE_ONE = F64(2.0**-52)
ULP_BELOW_ONE = F64(2.0**-53)
INV_ULP_ABOVE_ONE = F64(2.0**52)
INV_ULP_BELOW_ONE = F64(2.0**53)
NEAR_ONE_Z_EPS = F64(2.0**-143)  # z's relative error when z comes from log_td (< 2^-143.9)
NEAR_ONE_SPLIT_EPS = F64(2.0**-166)  # z and the bracket's error with the split (< 2^-168.7 |z|)
TD_ADD_EPS = F64(2.0**-152)  # td_add: < 2^-153 (|a| + |b|)
_MANT64 = np.uint64(0x000FFFFFFFFFFFFF)
_HIDDEN64 = np.uint64(0x0010000000000000)
_TWO53 = np.int64(1) << np.int64(53)
_TWO54 = np.int64(1) << np.int64(54)
# (-1)^(n+1)/n for n = 2 .. 10: log1p(f) - f = f^2 sum_{n>=2} (-1)^(n+1) f^(n-2)/n
(LOG1P_C2, LOG1P_C3, LOG1P_C4, LOG1P_C5, LOG1P_C6, LOG1P_C7, LOG1P_C8, LOG1P_C9, LOG1P_C10) = (
    td_const(Fraction((-1) ** (n + 1), n)) for n in range(2, 11))
INV_FACT2, INV_FACT3, INV_FACT4 = (td_const(Fraction(1, d)) for d in (2, 6, 24))


@jitable
def odd_significand64(v):
    """(M, e) with |v| = M 2^e, M an odd integer (v a nonzero finite double)."""
    u = bitcast(fabs(v))
    biased = np.int64(u >> np.uint64(52))
    m = np.int64(u & _MANT64)
    if biased == 0:
        e = np.int64(-1074)
    else:
        m = m | np.int64(_HIDDEN64)
        e = biased - 1075
    while (m & 1) == 0:
        m = m >> 1
        e = e + 1
    return m, e


@jitable
def integer_kind64(y):
    """0: y is not an integer; 1: an odd integer; 2: an even integer (y finite)."""
    if y == ZERO64:
        return 2
    m, e = odd_significand64(y)
    if e < 0:
        return 0
    if e == 0:
        return 1
    return 2


@jitable
def _int_root64(v, k):
    """The integer c with c^(2^k) = v, or 0 if there is none (0 < v < 2^53, k <= 5):
    k square roots in double (correctly rounded, so exact when the root is an
    integer), each checked by an exact integer product."""
    for _ in range(k):
        c = np.int64(sqrt_rn(F64(v)))
        if c * c != v:
            return np.int64(0)
        v = c
    return v


@jitable
def _round_dyadic(b, g):
    """RN(b 2^g) for an integer 1 <= b < 2^54, once (ties to even), any integer g."""
    if g > 1100:
        return INF64
    if g < -1200:
        return ZERO64  # b 2^g < 2^-1146
    if b < _TWO53:
        h, l = F64(b), ZERO64
    else:
        h, l = F64(b - (b & 1)), F64(b & 1)  # 54 bits: an even part and the last bit, both exact
    return round_scaled(mul_rn(h, F64(2.0**-53)), mul_rn(l, F64(2.0**-53)), ZERO64, g + 53)


@jitable
def pow_exact64(a, y):
    """(True, RN(a^y)) when a^y (a > 0 finite, y finite nonzero, both doubles) is a
    dyadic number b 2^G with b < 2^54 -- every case where a^y is a double or a
    midpoint between doubles -- else (False, 0); see the comment above."""
    am, ae = odd_significand64(a)
    if am == 1:
        if fabs(y) > F64(4096.0):
            return False, ZERO64  # |ea y| >= 4096 (ea != 0): the double-double path's clamps decide
        ym, ye = odd_significand64(y)
        if ye >= 0:
            big = ae * ym * (np.int64(1) << ye)
        else:
            if ye < -11 or (ae % (np.int64(1) << (-ye))) != 0:
                return False, ZERO64  # |ea| <= 1127 < 2^11
            big = (ae >> (-ye)) * ym
        if y < ZERO64:
            big = -big
        return True, _round_dyadic(np.int64(1), big)
    if y < ZERO64 or y > F64(34.0):
        return False, ZERO64
    ym, ye = odd_significand64(y)
    if ye >= 0:
        n = ym << ye
        k = np.int64(0)
    else:
        if ye < -5:
            return False, ZERO64
        n = ym
        k = -ye
    if n > 34:
        return False, ZERO64
    if k > 0:
        if (ae % (np.int64(1) << k)) != 0:
            return False, ZERO64
        c = _int_root64(am, k)
        if c == 0:
            return False, ZERO64
        ae = ae >> k
    else:
        c = am
    b = np.int64(1)
    for _ in range(n):
        if b > _TWO54 // c:
            return False, ZERO64  # c^N >= 2^54: more than 54 significant bits
        b = b * c
    if b >= _TWO54:
        return False, ZERO64
    return True, _round_dyadic(b, ae * n)


# --------------------------------------------------------------------------- float64 fast path in plain double
#
# `pow_fast64`: the first step of pow_f64, without a branch, so that the CPU
# launcher's first loop vectorises.  It handles x a positive normal double,
# x != 1, 2^-400 <= |y| <= 2^900, and z = y log x (its leading word) in
# [-708.3, 709.7], where x^y is a normal double (as exp's fast path,
# exp.EXP64_FAST_LO/HI); beyond 709.79 it selects inf, below -745.2 it selects
# +0 (the double-double path's clamps); y = 0 or x = 1 gives 1, another NaN
# argument NaN.  Everything else (x <= 0, x subnormal or infinite, y tiny or
# huge or infinite, z in the scaled ranges, and pairs the rounding test does
# not decide) is left to `pow_dd_fast64`.  Out-of-range elements evaluate
# x = 2, y = 1 (their result is discarded), so no subnormal, infinite or NaN
# operand reaches the evaluation.
#
# * log x = lh + ll by explog64.log_dd_fast (the analysis there).  Its
#   absolute error: the series is within 2^-67.9 |r|, |r| < 2^-8 (2^-8.4 for
#   0 < i < 255): < 2^-75.9; E LOG_LN2_L and its fma with T_l round by
#   < 2^-86 (|E| <= 1024, |LOG_LN2_L| < 2^-43), ln2's tail after the two
#   words times E < 2^-96 2^10 = 2^-86, sl's last addition < 2^-96 (|sl| <=
#   2^-44 as |sh| < 710), T to 2^-107 relative; the final sum rounds the
#   series' second word once (< 2^-70.3 |r| < 2^-78.3) and the rest by
#   < 2^-104.9 (|s| + |sh|) < 2^-103 |lh|.  For x in [1 - 2^-9, 1 + 2^-8) (E
#   = 0, T = 0, the sum exact) the relative error is < 2^-67.8, and |log x| <
#   2^-8 there; elsewhere |log x| >= 2^-9.01 and the absolute error is
#   < 2^-75.63 + 2^-103 |lh|.  Both are below
#       2^-66.5 min(|lh|, 2^-9) + 2^-103 |lh|
#   (near 1: 2^-66.5 |lh| > 2^-67.8 |lh|, and 2^-66.5 2^-9 > 2^-67.8 2^-8;
#   elsewhere 2^-66.5 2^-9.01 = 2^-75.51 > 2^-75.63).
# * z = y lh + y ll: (ph, pl) = y lh exactly (two_prod; |y| >= 2^-400 and
#   |lh| >= 2^-53.1 keep |y lh| > 2^-454: no underflow), zl = RN(y ll + pl) (|y ll + pl| <=
#   2^-52 |ph| (1 + 2^-52): < 2^-105 |ph| (1 + 2^-51)).  With |y lh| <=
#   |ph| (1 + 2^-53), ph + zl differs from y log x by
#       err_z < 2^-66.5 min(|ph|, 2^-9 |y|) (1 + 2^-52) + 2^-102.6 |ph|.
# * explog64.exp_reduce_fast(ph, zl) (|ph| <= 709.7 and |zl| < 2^-42.4, as
#   it needs): e^(ph + zl) = 2^(k/256) e^(rh + rl) within 2^-94.8, and
#   exp_reduced_fast: (h + l) 2^q is e^(ph + zl) within 2^-94.8 + 2^-80.1
#   relative.
# * The result: relative error eps_tot < err_z (1 + 2^-50) + 2^-80.1 +
#   2^-94.7 < err_z (1 + 2^-50) + 2^-78.1 (the window below is sized for
#   this larger bound).
# * The rounding test (exact64.bracket_err) needs err >= 2 E + 2^-52 |l| with
#   E < eps_tot |h| (1 + 2^-51) and |l| <= 2^-53 |h| (1 + 2^-52), i.e. err/|h|
#   >= 2^-65.5 m (1 + 2^-48) + 2^-101.6 2^9.48 + 2^-77.1 + 2^-104.9 with m =
#   min(|ph|, 2^-9 |y|) (|ph| < 2^9.48).  It uses err = RN(h RN(m c + a))
#   with c = RN(2^-65.3) and a = 2^-76: three roundings (< 2^-51.4 relative
#   in all) against margins of 2^0.2 on the m term and 2^1.1 on the
#   constant.  For |y| <= 2^9 and x away from 1 the window is ~2^-75 |h|:
#   about one pair in 2^22 undecided; it widens with |y| (x near 1 with a
#   large y: ~2^-65.3 |z| |h|).
# Exact x^y (2^3, 3^2, 10^2) are decided when the window holds them and both
# ends round alike, which they do (a double is half an ulp from every
# rounding boundary); exact midpoints straddle the window and stay
# undecided (pow_exact64 rounds them).

POW_FAST_Y_MIN = F64(2.0**-400)
POW_FAST_Y_MAX = F64(2.0**900)
POW_FAST_DBL_MAX = F64(np.finfo(np.float64).max)
POW_FAST_M_SCALE = F64(2.0**-9)
POW_FAST_C = F64(2.0**-65.3)
POW_FAST_A = F64(2.0**-76)
TWO64 = F64(2.0)


@jitable
def pow_eval_fast64(x, y):
    """(h, l, q, ph, w) for a normal x > 0, x != 1, 2^-400 <= |y| <= 2^900: ph
    the leading word of z = y log x and, where -708.3 <= ph <= 709.7, x^y =
    (h + l) 2^q with relative error below w/2 - 2^-105 (the comment above;
    elsewhere e^0); branch-free, and inlined into its callers (a call left in
    the launcher's loop keeps it scalar)."""
    inline_into_callers()
    lh, ll = log_dd_fast(x)
    ph, pl = two_prod(y, lh)
    zl = fma_rn(y, ll, pl)
    inside = (ph >= EXP64_FAST_LO) & (ph <= EXP64_FAST_HI)
    zh = ph if inside else ZERO64
    zl = zl if inside else ZERO64
    kd, rh, rl = exp_reduce_fast(zh, zl)
    h, l, q = exp_reduced_fast(kd, rh, rl)
    m1 = fabs(zh)
    m2 = mul_rn(fabs(y), POW_FAST_M_SCALE)  # exact: a power of two, no underflow
    w = fma_rn(m1 if m1 < m2 else m2, POW_FAST_C, POW_FAST_A)
    return h, l, q, ph, w


@jitable
def pow_fast64(x, y):
    """(pow(x, y) correctly rounded, True), or (anything, False) where the
    plain-double fast path cannot decide (the comment above); branch-free,
    inlined into the launcher's loop."""
    inline_into_callers()
    ay = fabs(y)
    base = ((x >= MIN_NORMAL) & (x <= POW_FAST_DBL_MAX) & (x != ONE64)
            & (ay >= POW_FAST_Y_MIN) & (ay <= POW_FAST_Y_MAX))
    h, l, q, ph, w = pow_eval_fast64(x if base else TWO64, y if base else ONE64)
    lo, hi = bracket_err(h, l, mul_rn(h, w))
    r = mul_rn(lo, pow2(q))
    inside = base & (ph >= EXP64_FAST_LO) & (ph <= EXP64_FAST_HI)
    above = base & (ph > Z64_OVERFLOW)
    below = base & (ph < Z64_UNDERFLOW)
    one = (y == ZERO64) | (x == ONE64)
    nan = (x != x) | (y != y)  # y = 0 or x = 1 take precedence (selected last)
    r = INF64 if above else r
    r = ZERO64 if below else r
    r = NAN64 if nan else r
    r = ONE64 if one else r
    return r, (inside & (lo == hi)) | above | below | nan | one


@jitable
def pow_dd_fast64(x, y):
    """(pow(x, y) correctly rounded, True), or (undecided, False) where the
    double-double path cannot decide (the comment above); every special value
    is decided here.  The second step of `pow_f64`, after `pow_fast64`."""
    if y == ZERO64 or x == ONE64:
        return ONE64, True
    if x != x or y != y:
        return NAN64, True
    a = fabs(x)
    ay = fabs(y)
    if ay == INF64:
        if a == ONE64:
            return ONE64, True
        if (a > ONE64) == (y > ZERO64):
            return INF64, True
        return ZERO64, True
    kind = integer_kind64(y)
    odd = kind == 1 and (bitcast(x) >> np.uint64(63)) != np.uint64(0)  # (-|x|)^y = -(|x|^y), -0 and -inf too
    if a == ZERO64 or a == INF64:
        # x^y is 0 or inf: +-0 with y > 0 or +-inf with y < 0 gives 0
        r = ZERO64 if (a == ZERO64) == (y > ZERO64) else INF64
        ok = True
    elif x < ZERO64 and kind == 0:
        return NAN64, True
    else:
        r, ok = _pow_positive_fast64(a, y)
    if odd:
        return negate(r), ok
    return r, ok


@jitable
def _pow_positive_fast64(a, y):
    e, m = log_split(a)
    lh, ll = log_dd64(e, m)
    ph, pl = two_prod(y, lh)
    if ph > Z64_OVERFLOW:
        return INF64, True
    if ph < Z64_UNDERFLOW:
        return ZERO64, True
    if fabs(ph) < Z64_ONE:
        return ONE64, True
    zh, zl = fast_two_sum(ph, fma_rn(y, ll, pl))
    h, l, q = exp_dd64(zh, zl)
    return ziv_round(h, l, dd_error(h, POW64_EPS), q)


@jitable
def _log1p_minus_f_td(f):
    """log1p(f) - f for |f| < 2^-20 as a triple-double, relative error < 2^-149:
    f^2 (an exact two_prod) times the series' Horner sum in triple-double."""
    ph, pm, pl = LOG1P_C10
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C9)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C8)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C7)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C6)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C5)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C4)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C3)
    ph, pm, pl = td_horner_step(ph, pm, pl, f, ZERO64, ZERO64, LOG1P_C2)
    sh, sl = two_prod(f, f)
    return td_mul(ph, pm, pl, sh, sl, ZERO64)


@jitable
def pow_near_one64(a, y, zh, zm, zl):
    """RN(a^y) for |z| = |y log a| < 2^-42, with z ~ zh + zm + zl from log_td; and
    whether the sign of w - B was decided (the comment above)."""
    f = sub_rn(a, ONE64)  # exact when |f| < 2^-20 (Sterbenz)
    if fabs(f) < F_SPLIT:
        p1, p2 = two_prod(y, f)
        ch, cm, cl = _log1p_minus_f_td(f)
        ch, cm, cl = td_mul(ch, cm, cl, y, ZERO64, ZERO64)
        th, tm, tl = td_add(p2, ZERO64, ZERO64, ch, cm, cl)
        zh, zm, zl = td_add(p1, ZERO64, ZERO64, th, tm, tl)
        eps = NEAR_ONE_SPLIT_EPS
    else:
        p1 = zh
        th, tm, tl = zm, zl, ZERO64
        eps = NEAR_ONE_Z_EPS
    # z^2/2 + z^3/6 + z^4/24 = z^2 (1/2 + z (1/6 + z/24))
    sh, sm, sl = INV_FACT4
    sh, sm, sl = td_horner_step(sh, sm, sl, zh, zm, zl, INV_FACT3)
    sh, sm, sl = td_horner_step(sh, sm, sl, zh, zm, zl, INV_FACT2)
    qh, qm, ql = td_mul(zh, zm, zl, zh, zm, zl)
    sh, sm, sl = td_mul(sh, sm, sl, qh, qm, ql)
    th, tm, tl = td_add(th, tm, tl, sh, sm, sl)
    above = p1 > ZERO64
    u = ULP_ABOVE_ONE if above else ULP_BELOW_ONE
    k = F64(np.int64(mul_rn(fabs(p1), INV_ULP_BELOW_ONE if not above else INV_ULP_ABOVE_ONE)))  # floor, < 2^11
    b = mul_rn(add_rn(k, F64(0.5)), u)
    if not above:
        b = negate(b)
    gh, gl = two_sum(p1, negate(b))  # p1 - B, exact
    dh, dm, dlo = td_add(gh, gl, ZERO64, th, tm, tl)
    err = add_rn(mul_rn(eps, fabs(p1)), mul_rn(TD_ADD_EPS, add_rn(add_rn(fabs(gh), fabs(gl)), fabs(th))))
    step = k if (dh > ZERO64) != above else add_rn(k, ONE64)  # the double on d's side of B
    r = add_rn(ONE64, mul_rn(step, u) if above else negate(mul_rn(step, u)))
    return r, fabs(dh) > add_rn(err, err)


@jitable
def pow_positive64(a, y):
    """a^y for a double a > 0 finite and y finite nonzero, once neither fast path has
    decided: the exact cases, the near-1 path, else triple-double."""
    exact, v = pow_exact64(a, y)
    if exact:
        return v
    e, m = log_split(a)
    lh, lm, ll = log_td(e, m)
    zh, zm, zl = td_mul(y, ZERO64, ZERO64, lh, lm, ll)
    if fabs(zh) < Z64_NEAR_ONE:
        r, decided = pow_near_one64(a, y, zh, zm, zl)
        return r
    h, mm, l, q = exp_td(zh, zm, zl)
    return td_round(h, mm, l, q)


@jitable
def pow_f64(x, y):
    """pow for float64, correctly rounded: the plain-double fast path, else the
    double-double one (which also takes every special value), else the exact
    cases, the near-1 path or triple-double."""
    r, ok = pow_fast64(x, y)
    if ok:
        return r
    r, ok = pow_dd_fast64(x, y)
    if ok:
        return r
    r = pow_positive64(fabs(x), y)
    if x < ZERO64 and integer_kind64(y) == 1:
        return negate(r)
    return r
