"""Range reduction and kernels shared by the float64 sin, cos and tan.

All three evaluate sin(pi t/2) and cos(pi t/2) of the reduced argument t,
a 2/pi = n + t with n an integer and |t| <= 1/2 (a = |x|):

    sin a = S, C, -S, -C and cos a = C, -S, -C, S   for n mod 4 = 0, 1, 2, 3,
    S = sin(pi t/2), C = cos(pi t/2), tan a = S/C (n even), -C/S (n odd).

Constants (computed at import, exactly, from integers: no libm).
* pi to 1600 bits by Machin's formula pi = 16 atan(1/5) - 4 atan(1/239)
  (fixed point, each series term truncated: error < 2^-1580).
* T = floor(2^1313 / pi) (2/pi to 1312 bits after the point) as 32-bit limbs:
  the error of pi moves 2^1313/pi by < 2^-260, so T is floor(2^1313/pi) or
  one below; either way |2/pi - T 2^-1312| < 2^-1311.
* The table sin(pi k/512), cos(pi k/512), k = 0..128, as triple-doubles
  (Taylor series in 400-bit fixed point: error < 2^-390 before the split,
  < 2^-159 relatively after it), and pi/2, 2/pi as triple-doubles.

**Payne-Hanek reduction (exact to 2^-265, every double).**  a = M 2^E with M
an integer below 2^53.  With T = 2/pi 2^1312 - phi, 0 <= phi < 2:

    a 2/pi = M 2^(E - 1312) T + M 2^(E - 1312) phi.

The second term is below 2^(54 + E - 1312) <= 2^-287 (E <= 971).  Bits of T
at positions p >= 1314 - E give multiples of 4 M (irrelevant modulo 4); bits
below p0 = 994 - E (= 1312 - E - 318) contribute less than M 2^-318 < 2^-265.
So with W the 320 bits of T from position p0 (`_window`; p0 >= 23 for
E <= 971, and T is padded with zero limbs above its top bit for the small E
of arguments down to 2^-80), a 2/pi mod 4 = (M W mod 2^320) 2^-318 + err,
|err| < 2^-264.9 -- one 53 x 320-bit integer product (wide_int.py).  The top
two bits are n mod 4; bit 317 says whether the fraction is >= 1/2 (then n is
one more and t = fraction - 1, by a two's complement).  The smallest |t| of
any double is about 2^-62 (the closest a double comes to a multiple of pi/2,
x = 6381956970095103 2^797), so t's relative error from the truncation is
< 2^-200.  |t| >= 2^-63 means its highest nonzero limb is limb 7 or above;
the six limbs from there (192 bits) are summed exactly in pairs of triples
(`td_renorm`) and added (td_add: < 2^-153): t as a triple-double with
relative error < 2^-152.

**Cody-Waite reduction (fast path, a < 2^20).**  n = round(RN(a C_h)) and
t = (a C_h - n) + a C_m + a C_l with (C_h, C_m, C_l) = 2/pi: a C_h = p + pe
exactly (two_prod), p - n is exact (Sterbenz, or n = 0), the two fmas of the
small terms round at <= 2^-52 |a 2/pi|, and the tail of 2/pi is < 2^-159:
|error of t| < 2^-104.6 a (absolute).  It is converted into the error bound
of the rounding test, not assumed small: where t is tiny relatively to this
error, the test fails and the accurate path (Payne-Hanek) decides.

**Kernels.**  k = round(256 t), u = t - k/256 (exact: k/256 is a multiple of
ulp(t_h) and |u| <= 1/512 <= |t_h|... u's leading part is the exact
difference of two doubles within a factor 2 of each other, or t_h itself
for k = 0), |u| <= 1/512 + 2^-32, beta = u pi/2, |beta| < 2^-8.35, and

    sin(pi t/2) = S_k cos beta + C_k sin beta,  cos(pi t/2) = C_k cos beta - S_k sin beta

with S_k = sin(pi k/512), C_k = cos(pi k/512) (S_-k = -S_k, C_-k = C_k).
For k != 0, |pi t/2| >= pi/1024 and the sum is at least half its largest
term: cancellation costs at most a factor 2; for k = 0 it is sin beta alone.

* Fast path (double-double; error argued in `sincos_dd`): the same
  decomposition with the finer table k = round(2048 t), S_k = sin(pi k/4096),
  C_k = cos(pi k/4096), |beta| < 2^-11.35: relative error < 2^-73.7 of each
  result, plus the reduction's absolute error times pi/2.
* Accurate path (triple-double; `sincos_td`): sin beta = beta P(beta^2) to
  beta^13/13! (remainder < 2^-157 relatively), cos beta to beta^14/14!
  (remainder < 2^-178); about 20 triple-double operations of relative error
  < 2^-148 each on values within a factor 2 of the result, and the
  reduction's 2^-152 (relative to t, so < 2^-153 absolutely in u, which is
  < 2^-144 relatively to a result >= sin(pi/1024) when k != 0): relative
  error < 2^-140 for S and C, < 2^-138 for their quotient.
"""

from fractions import Fraction

import numpy as np

from ...primitives.rounding import add_rn, bitcast, div_rn, fabs, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import dd_mul, fast_two_sum, two_prod, two_sum
from .exact64 import bracket_err, significand
from .multiword import dd_from_td, td_add, td_const, td_div, td_mul, td_neg, td_renorm, td_round
from .wide_int import wide_mul, wide_neg
from ...primitives.jit import inline_into_callers

F64 = np.float64
U64 = np.uint64
ZERO = F64(0.0)
ONE = F64(1.0)

# --------------------------------------------------------------------------- exact constants (import time)

_PI_BITS = 1600


def _atan_inv_fixed(n, bits):
    """atan(1/n) 2^bits, each term truncated (error < one unit per term)."""
    total, power, k, sign = 0, (1 << bits) // n, 0, 1
    while power:
        total += sign * (power // (2 * k + 1))
        power //= n * n
        k += 1
        sign = -sign
    return total


PI_FIXED = 16 * _atan_inv_fixed(5, _PI_BITS) - 4 * _atan_inv_fixed(239, _PI_BITS)  # pi 2^1600
PI_Q = Fraction(PI_FIXED, 1 << _PI_BITS)

TWO_OVER_PI_BITS = 1312
_T = (1 << (TWO_OVER_PI_BITS + 1 + _PI_BITS)) // PI_FIXED  # floor(2^1313 / pi), or one below
# 46 limbs (1472 bits): the zero limbs above bit 1312 serve the windows of arguments down to 2^-80 (E >= -132)
TWO_OVER_PI_LIMBS64 = np.array([(_T >> (32 * i)) & 0xFFFFFFFF for i in range(46)], dtype=np.uint64)

PIO2_H, PIO2_M, PIO2_L = td_const(PI_Q / 2)
TWO_OVER_PI_H, TWO_OVER_PI_M, TWO_OVER_PI_L = td_const(2 / PI_Q)


def _sin_cos_fixed(k, bits=400, steps=512):
    """(sin, cos)(pi k / steps) 2^bits by Taylor series (pi k/steps <= pi/4)."""
    one = 1 << bits
    alpha = (PI_FIXED >> (_PI_BITS - bits)) * k // steps
    s = c = 0
    term, n = one, 0  # alpha^n / n!
    while term:
        if n % 4 == 0:
            c += term
        elif n % 4 == 1:
            s += term
        elif n % 4 == 2:
            c -= term
        else:
            s -= term
        n += 1
        term = term * alpha // one // n
    return Fraction(s, one), Fraction(c, one)


_TABLE = [_sin_cos_fixed(k) for k in range(129)]
SIN_TABLE = np.array([td_const(s) for s, _ in _TABLE], dtype=np.float64)  # (129, 3)
COS_TABLE = np.array([td_const(c) for _, c in _TABLE], dtype=np.float64)
SIN_TABLE[0] = 0.0  # sin 0 = 0 exactly
# The fast path's finer table: sin(pi k/4096), cos(pi k/4096), k = 0..1024, as
# double-doubles (the first two words of td_const: |v - h - m| < 2^-106 |v|).
_FAST_TABLE = [_sin_cos_fixed(k, steps=4096) for k in range(1025)]
SIN_FAST_TABLE = np.array([td_const(s)[:2] for s, _ in _FAST_TABLE], dtype=np.float64)  # (1025, 2)
COS_FAST_TABLE = np.array([td_const(c)[:2] for _, c in _FAST_TABLE], dtype=np.float64)
SIN_FAST_TABLE[0] = 0.0

# Taylor coefficients: double for the fast path, triple-double for the accurate one.
_FACT = [1]
for _n in range(1, 20):
    _FACT.append(_FACT[-1] * _n)
S3, S5, S7 = (F64(float(Fraction((-1) ** i, _FACT[2 * i + 1]))) for i in range(1, 4))
C2, C4, C6 = (F64(float(Fraction((-1) ** i, _FACT[2 * i]))) for i in range(1, 4))
SIN_TD = np.array([td_const(Fraction((-1) ** i, _FACT[2 * i + 1])) for i in range(7)], dtype=np.float64)
COS_TD = np.array([td_const(Fraction((-1) ** i, _FACT[2 * i])) for i in range(8)], dtype=np.float64)

SHIFT = F64(6755399441055744.0)  # 1.5 2^52: (y + SHIFT) - SHIFT = y rounded to an integer, |y| < 2^51
_SHIFT_BITS = np.int64(0x4338000000000000)  # SHIFT's bit pattern
TABLE_STEPS = F64(256.0)
INV_TABLE_STEPS = F64(1.0 / 256.0)
FAST_TABLE_STEPS = F64(2048.0)
INV_FAST_TABLE_STEPS = F64(1.0 / 2048.0)
MINUS_HALF = F64(-0.5)
CODY_WAITE_LIMIT = F64(2.0**20)
_M32 = U64(0xFFFFFFFF)
_LIMB_SCALE = np.array([2.0 ** (32 * i - 318) for i in range(10)], dtype=np.float64)


# --------------------------------------------------------------------------- reductions

@jitable
def _window(e):
    """The 320 bits of T from bit 994 - e, as a Wide (module docstring)."""
    p0 = 994 - e
    i = p0 // 32
    s = U64(p0 % 32)
    c = U64(32) - s
    w0 = ((TWO_OVER_PI_LIMBS64[i] >> s) | (TWO_OVER_PI_LIMBS64[i + 1] << c)) & _M32
    w1 = ((TWO_OVER_PI_LIMBS64[i + 1] >> s) | (TWO_OVER_PI_LIMBS64[i + 2] << c)) & _M32
    w2 = ((TWO_OVER_PI_LIMBS64[i + 2] >> s) | (TWO_OVER_PI_LIMBS64[i + 3] << c)) & _M32
    w3 = ((TWO_OVER_PI_LIMBS64[i + 3] >> s) | (TWO_OVER_PI_LIMBS64[i + 4] << c)) & _M32
    w4 = ((TWO_OVER_PI_LIMBS64[i + 4] >> s) | (TWO_OVER_PI_LIMBS64[i + 5] << c)) & _M32
    w5 = ((TWO_OVER_PI_LIMBS64[i + 5] >> s) | (TWO_OVER_PI_LIMBS64[i + 6] << c)) & _M32
    w6 = ((TWO_OVER_PI_LIMBS64[i + 6] >> s) | (TWO_OVER_PI_LIMBS64[i + 7] << c)) & _M32
    w7 = ((TWO_OVER_PI_LIMBS64[i + 7] >> s) | (TWO_OVER_PI_LIMBS64[i + 8] << c)) & _M32
    w8 = ((TWO_OVER_PI_LIMBS64[i + 8] >> s) | (TWO_OVER_PI_LIMBS64[i + 9] << c)) & _M32
    w9 = ((TWO_OVER_PI_LIMBS64[i + 9] >> s) | (TWO_OVER_PI_LIMBS64[i + 10] << c)) & _M32
    return (w0, w1, w2, w3, w4, w5, w6, w7, w8, w9)


@jitable
def reduce_payne_hanek(a):
    """(n mod 4, t_h, t_m, t_l): a 2/pi = n + t, |t| <= 1/2, t as a triple-double
    with relative error < 2^-152, for a finite double 2^-80 <= a (module docstring)."""
    m, e = significand(a)  # a = m 2^e, m < 2^53 (a is normal here)
    f = wide_mul(_window(e), m)
    q = np.int64(f[9] >> U64(30))
    negative = ((f[9] >> U64(29)) & U64(1)) == U64(1)
    f = (f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9] & U64(0x3FFFFFFF))
    if negative:
        q = q + 1
        f = wide_neg(f)
        f = (f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9] & U64(0x3FFFFFFF))
    top = 9
    while f[top] == U64(0):
        top -= 1
    h, mm, l = td_renorm(mul_rn(F64(f[top]), _LIMB_SCALE[top]), mul_rn(F64(f[top - 1]), _LIMB_SCALE[top - 1]),
                         mul_rn(F64(f[top - 2]), _LIMB_SCALE[top - 2]))
    h2, m2, l2 = td_renorm(mul_rn(F64(f[top - 3]), _LIMB_SCALE[top - 3]),
                           mul_rn(F64(f[top - 4]), _LIMB_SCALE[top - 4]),
                           mul_rn(F64(f[top - 5]), _LIMB_SCALE[top - 5]))
    h, mm, l = td_add(h, mm, l, h2, m2, l2)
    if negative:
        h, mm, l = td_neg(h, mm, l)
    return q & 3, h, mm, l


@jitable
def reduce_cody_waite(a):
    """(n mod 4, t_h, t_l): a 2/pi = n + t_h + t_l + err, |err| < 2^-104.6 a,
    for 0 <= a < 2^20 (module docstring)."""
    p, pe = two_prod(a, TWO_OVER_PI_H)
    n, ni = rounded_to_integer(p)
    m = fma_rn(a, TWO_OVER_PI_L, fma_rn(a, TWO_OVER_PI_M, pe))
    th, tl = two_sum(sub_rn(p, n), m)
    return ni & 3, th, tl


# --------------------------------------------------------------------------- kernels

@jitable
def dd_div_fast(ah, al, bh, bl):
    """(ah + al)/(bh + bl) for normalized double-doubles, with one division:
    relative error < 2^-100 (fast paths; core.dd_div takes three).

    inv = RN(1/bh) (2^-53) and q_h = RN(a_h inv) are within 2^-52 of a_h/b_h;
    r = a_h - q_h b_h (one fma, < 2^-52 |a_h| rounded by 2^-105 |a_h|), plus
    a_l - q_h b_l (each < 2^-53 |a|; two roundings of < 2^-102.4 |a|); the
    correction q_l = r inv is below 2^-50.4 |q| and carries 2^-52 of itself,
    and dividing by b_h instead of b_h + b_l costs 2^-53 of it: < 2^-100.5 |q|
    in all.  The final fast_two_sum is exact.
    """
    inv = div_rn(ONE, bh)
    qh = mul_rn(ah, inv)
    r = fma_rn(negate(qh), bl, add_rn(fma_rn(negate(qh), bh, ah), al))
    return fast_two_sum(qh, mul_rn(r, inv))


@jitable
def rounded_to_integer(y):
    """(n, the same as an int64): y rounded to the nearest integer, |y| < 2^51.
    y + SHIFT rounds y to an integer n, and as SHIFT + n lies in [2^52, 2^53),
    where consecutive doubles are 1 apart, its bit pattern is SHIFT's plus n:
    the integer is a subtraction of bit patterns, not a conversion (which no
    AVX2 instruction does for int64)."""
    t = add_rn(y, SHIFT)
    return sub_rn(t, SHIFT), np.int64(bitcast(t)) - _SHIFT_BITS


@jitable
def _split_table(th):
    """(k, |k|, t_h - k/256) with k = round(256 t_h) (both steps exact)."""
    kf, k = rounded_to_integer(mul_rn(th, TABLE_STEPS))
    return k, (k if k >= 0 else -k), fma_rn(negate(kf), INV_TABLE_STEPS, th)


@jitable
def _split_fast_table(th):
    """(k, |k|, t_h - k/2048) with k = round(2048 t_h) (both steps exact: 2048 t_h
    is a power-of-two scaling, and t_h - k/2048 is a multiple of ulp(t_h) no
    larger than |t_h|)."""
    kf, k = rounded_to_integer(mul_rn(th, FAST_TABLE_STEPS))
    return k, (k if k >= 0 else -k), fma_rn(negate(kf), INV_FAST_TABLE_STEPS, th)


@jitable
def sincos_dd(th, tl):
    """(S_h, S_l, C_h, C_l): sin(pi t/2) and cos(pi t/2) for t = t_h + t_l,
    |t_h| <= 1/2 + 2^-32, |t_l| <= 2^-53 |t_h|, each as a double-double with
    relative error < 2^-73.7.

    k = round(2048 t_h) (|k| <= 1024), u = t_h - k/2048 + t_l exactly
    (two_sum), |u| <= 2^-12 + 2^-54; beta = u pi/2 as b_h + b_l (dd_mul,
    < 2^-102, and PIO2_L left out, < 2^-106), |beta| < B = 2^-11.348, and
    S = S_k cos beta + C_k sin beta, C = C_k cos beta - S_k sin beta with
    S_k = sin(pi k/4096), C_k = cos(pi k/4096) (SIN_FAST_TABLE,
    COS_FAST_TABLE: double-doubles within 2^-106 relatively; S_-k = -S_k).
    Errors below are absolute, in units of |b_h| or of |S_k|.

    * sin beta = b_h + s_l, s_l = b_l (1 - z/2) + RN(b_h z) P_s(z), with
      z = RN(b_h^2) (z <= 2^-22.69) and P_s = S3 + z S5 + z^2 S7 (Taylor;
      remainder < beta^9/9! < 2^-109 |beta|).  The cubic term is below
      b_h^2/6 |b_h| < 2^-25.28 |b_h|; its factors carry the roundings of z
      and of RN(b_h z) (2^-53 each), of S3 (2^-53.4) and of the Horner
      steps (2^-53 |P_s|, the inner ones scaled by z): < 2^-51.1 of it,
      2^-76.38 |b_h|.  b_l (1 - z/2) stands for b_l cos b_h (the dropped
      b_l b_h^4/24 and b_l^2 terms are below 2^-140 |b_h|) and rounds by
      2^-106 |b_h|; the fma forming s_l (|s_l| < 2^-25.27 |b_h|) rounds by
      < 2^-78.27 |b_h|.  With beta's 2^-101.9: sin beta within 2^-76.0 |b_h|.
    * cos beta - 1 = c = z P_c(z) + (z_e (-1/2) - RN(b_h b_l)), with
      b_h^2 = z + z_e exactly (two_prod) and P_c = -1/2 + z C4 + z^2 C6
      (remainder < beta^8/8! < 2^-106): the inner fma's terms are below
      2^-75.6 and round by < 2^-128, RN(b_h b_l) by < 2^-128, the dropped
      b_l b_h^3/6 and b_l^2/2 are below 2^-120; P_c's last step rounds by
      2^-55 (|P_c| < 1/2), 2^-77.69 once multiplied by z, and the final fma
      by 2^-77 (|c| < 2^-23.69): |error of c| < 2^-76.3.
    * S = S_k + S_k c + C_k (b_h + s_l): S_k + C_kh b_h exactly (two_prod,
      two_sum); the other terms are summed by fmas, the largest partial sums
      below 2^-23.67 |S_k| and 2^-25.25 |b_h| (and 2^-51 (|S_k| + |b_h|) for
      the exact errors), rounding by < 2^-76.6 (|S_k| + |b_h|) in all; the
      one term left out, C_kl s_l, is below 2^-78.27 |b_h|.  With the errors
      of sin beta and c, |error of S| < 2^-75.1 |b_h| + 2^-75.4 |S_k|.  For
      k != 0, |pi k/4096| >= 2 |beta| (1 - 2^-42), so with theta = pi k/4096
      and |theta + beta| >= |theta|/2 (1 - 2^-42): |S| >= |S_k|/2 (1 - 2^-41)
      (sin theta <= 2 sin(theta/2)) and |S| >= |b_h| (1 - 2^-24); for k = 0,
      S = sin beta, S_k = 0.  So |error| < (2^-75.1 + 2 * 2^-75.4) |S| (1 + 2^-24)
      < 2^-73.7 |S|.
    * C = C_k + C_k c - S_k (b_h + s_l), the same sums with S_k's and C_k's
      roles exchanged: C_k times c's error (2^-76.3), the roundings (2^-76.67),
      S_k < 0.71 times sin beta's error (2^-87): < 2^-75.4 absolutely, and
      C = cos(pi t/2) >= cos(pi/4 + 2^-31) > 0.7071: < 2^-74.9 |C|.
    The final fast_two_sums are exact.
    """
    inline_into_callers()
    k, ka, uh = _split_fast_table(th)
    uh, ul = two_sum(uh, tl)
    bh, bl = dd_mul(uh, ul, PIO2_H, PIO2_M)
    z, ze = two_prod(bh, bh)
    ps = fma_rn(z, fma_rn(z, S7, S5), S3)
    pc = fma_rn(z, fma_rn(z, C6, C4), C2)
    sl = fma_rn(mul_rn(bh, z), ps, fma_rn(bl, mul_rn(z, MINUS_HALF), bl))  # sin beta = bh + sl
    c = fma_rn(z, pc, fma_rn(ze, MINUS_HALF, negate(mul_rn(bh, bl))))  # cos beta = 1 + c
    sk_h = SIN_FAST_TABLE[ka, 0]
    sk_l = SIN_FAST_TABLE[ka, 1]
    if k < 0:
        sk_h = negate(sk_h)
        sk_l = negate(sk_l)
    ck_h = COS_FAST_TABLE[ka, 0]
    ck_l = COS_FAST_TABLE[ka, 1]
    # S = S_k + S_k c + C_k (bh + sl)
    p, pe = two_prod(ck_h, bh)
    sh, se = two_sum(sk_h, p)
    slo = fma_rn(sk_h, c, fma_rn(sk_l, c, fma_rn(ck_h, sl, fma_rn(ck_l, bh, add_rn(add_rn(se, pe), sk_l)))))
    sh, slo = fast_two_sum(sh, slo)
    # C = C_k + C_k c - S_k (bh + sl)
    p, pe = two_prod(negate(sk_h), bh)
    ch, ce = two_sum(ck_h, p)
    clo = fma_rn(ck_h, c, fma_rn(ck_l, c, fma_rn(negate(sk_h), sl,
                                                 fma_rn(negate(sk_l), bh, add_rn(add_rn(ce, pe), ck_l)))))
    ch, clo = fast_two_sum(ch, clo)
    return sh, slo, ch, clo


@jitable
def _td_horner(coeffs, n, zh, zm, zl):
    """sum_i coeffs[i] z^i for i < n (triple-double Horner)."""
    ph = coeffs[n - 1, 0]
    pm = coeffs[n - 1, 1]
    pl = coeffs[n - 1, 2]
    for i in range(n - 2, -1, -1):
        ph, pm, pl = td_mul(ph, pm, pl, zh, zm, zl)
        ph, pm, pl = td_add(ph, pm, pl, coeffs[i, 0], coeffs[i, 1], coeffs[i, 2])
    return ph, pm, pl


@jitable
def sincos_td(th, tm, tl):
    """sin(pi t/2) and cos(pi t/2) for the triple-double t, |t| <= 1/2, as two
    triple-doubles with relative error < 2^-140 (module docstring)."""
    k, ka, uh = _split_table(th)
    uh, um, ul = td_renorm(uh, tm, tl)
    bh, bm, bl = td_mul(uh, um, ul, PIO2_H, PIO2_M, PIO2_L)
    zh, zm, zl = td_mul(bh, bm, bl, bh, bm, bl)
    sh, sm, sl = _td_horner(SIN_TD, 7, zh, zm, zl)
    sh, sm, sl = td_mul(sh, sm, sl, bh, bm, bl)  # sin beta
    ch, cm, cl = _td_horner(COS_TD, 8, zh, zm, zl)  # cos beta
    skh = SIN_TABLE[ka, 0]
    skm = SIN_TABLE[ka, 1]
    skl = SIN_TABLE[ka, 2]
    if k < 0:
        skh, skm, skl = td_neg(skh, skm, skl)
    ckh = COS_TABLE[ka, 0]
    ckm = COS_TABLE[ka, 1]
    ckl = COS_TABLE[ka, 2]
    ah, am, al = td_mul(skh, skm, skl, ch, cm, cl)
    bh2, bm2, bl2 = td_mul(ckh, ckm, ckl, sh, sm, sl)
    s_h, s_m, s_l = td_add(ah, am, al, bh2, bm2, bl2)
    ah, am, al = td_mul(ckh, ckm, ckl, ch, cm, cl)
    bh2, bm2, bl2 = td_mul(skh, skm, skl, sh, sm, sl)
    c_h, c_m, c_l = td_add(ah, am, al, negate(bh2), negate(bm2), negate(bl2))
    return s_h, s_m, s_l, c_h, c_m, c_l


@jitable
def fast_sincos(a):
    """(q, S_h, S_l, C_h, C_l, eps): the fast path for 2^-27 < a < inf, with
    twice the absolute error bound of the reduction times pi/2 (eps) to add to
    each result's relative 2^-73.7 in the rounding test's err (Payne-Hanek:
    eps = 0; t's error there, 2^-152 relative, and the double-double
    truncation of t, 2^-104 relative, move S and C by < 2^-103 relatively,
    inside the margin of REL_FAST)."""
    if a < CODY_WAITE_LIMIT:
        q, th, tl = reduce_cody_waite(a)
        eps = mul_rn(a, CW_EPS)
    else:
        q, th, tm, tl = reduce_payne_hanek(a)
        th, tl = dd_from_td(th, tm, tl)
        eps = ZERO
    sh, sl, ch, cl = sincos_dd(th, tl)
    return q, sh, sl, ch, cl, eps


# The rounding test (`bracket_err`) takes err >= 2 E + 2^-52 |l| for a true error E:
CW_EPS = F64(2.0**-102)  # above 2 * pi/2 * 2^-104.6: twice the Cody-Waite error carried into the result
# sin, cos: 2^-70 |h| >= 2 * 2^-73.7 |v| + 2^-52 |l| (|l| <= 2^-53 |h|) with a margin of 2^2.7, which covers
# err's own rounding; tan: the quotient's 2 * 2^-73.7 + 2^-100 < 2^-72.7, a margin of 2^1.7.
REL_FAST = F64(2.0**-70)
TINY = F64(2.0**-27)
ONE_AND_HALF = F64(1.5)
INF64 = F64(np.inf)
NAN64 = F64(np.nan)
SIN, COS, TAN = 0, 1, 2


@jitable
def _decide(q, sh, sl, ch, cl, eps, which):
    """(S, C or their quotient rounded, decided) from the fast path's S and C
    (fast_sincos).  Selects rather than branches (the same values), so that
    the branch-free `trig_fast64_cody_waite` shares it."""
    odd = (q & 1) == 1
    if which == TAN:  # a constant: resolved at compile time
        h, l = dd_div_fast(ch if odd else sh, cl if odd else sl, sh if odd else ch, sl if odd else cl)
        # The quotient's relative error is the sum of its parts' (2^-73.7 + E/|part|, E the
        # reduction's absolute error, eps = 2E) and the division's (2^-100).  With |C| >= 0.7071:
        # S/C: |h| E (1/|S| + 1/|C|) = E (1/|C| + |h|/|C|) <= 1.4143 E (1 + |h|);
        # C/S: |h| E (1/|C| + 1/|S|) = E (|h|/|C| + |h|^2/|C|) <= 1.4143 E |h| (1 + |h|).
        # So err = 2^-70 |h| + 1.5 eps (1 + |h|) (times |h| for C/S) is at least twice that.
        ah = fabs(h)
        t = mul_rn(mul_rn(eps, ONE_AND_HALF), add_rn(ONE, ah))
        err = fma_rn(ah, REL_FAST, mul_rn(t, ah) if odd else t)
    else:
        use_sin = odd if which == COS else not odd
        h = sh if use_sin else ch
        l = sl if use_sin else cl
        err = fma_rn(fabs(h), REL_FAST, eps)
    lo, hi = bracket_err(h, l, err)
    return lo, lo == hi


@jitable
def _fast(a, which):
    """(S, C or their quotient rounded, decided, n mod 4) by the fast path, 2^-27 < a < inf."""
    q, sh, sl, ch, cl, eps = fast_sincos(a)
    r, ok = _decide(q, sh, sl, ch, cl, eps, which)
    return r, ok, q


@jitable
def _accurate(a, which):
    """(S, C or their quotient rounded, n mod 4) by the accurate path, 2^-27 < a < inf."""
    q, th, tm, tl = reduce_payne_hanek(a)
    s_h, s_m, s_l, c_h, c_m, c_l = sincos_td(th, tm, tl)
    odd = (q & 1) == 1
    if which == TAN:
        if odd:
            rh, rm, rl = td_div(c_h, c_m, c_l, s_h, s_m, s_l)
        else:
            rh, rm, rl = td_div(s_h, s_m, s_l, c_h, c_m, c_l)
    elif (odd if which == COS else not odd):
        rh, rm, rl = s_h, s_m, s_l
    else:
        rh, rm, rl = c_h, c_m, c_l
    return td_round(rh, rm, rl, 0), q


@jitable
def _finish(x, which, q, r):
    """The quadrant's sign and x's (sin, tan odd) applied to r, S, C or their
    quotient rounded: sin = S, C, -S, -C; cos = C, -S, -C, S; tan = S/C, -C/S
    for n mod 4 = 0, 1, 2, 3.  Rounding to nearest is symmetric."""
    if which == SIN:
        flip = q >= 2
    elif which == COS:
        flip = q == 1 or q == 2
    else:
        flip = (q & 1) == 1
    if flip:
        r = negate(r)
    if which != COS and x < ZERO:
        r = negate(r)
    return r


@jitable
def _special(x, which):
    """(result, True) for NaN, +-inf and |x| <= 2^-27, else (anything, False).

    |x| <= 2^-27: sin x and tan x round to x, cos x to 1 (x^3/6, x^3/3 and
    x^2/2 are below 2^-54 of the result, less than half the gap to the
    neighbouring double, also below a power of two; no ties)."""
    if x != x or fabs(x) == INF64:
        return NAN64, True
    if fabs(x) <= TINY:
        return (ONE if which == COS else x), True
    return ZERO, False


@jitable
def trig_fast64(x, which):
    """(sin, cos or tan of x correctly rounded, True) where the fast path
    decides (which = SIN, COS, TAN), else (anything, False)."""
    r, done = _special(x, which)
    if done:
        return r, True
    r, ok, q = _fast(fabs(x), which)
    return _finish(x, which, q, r), ok


@jitable
def trig_fast64_cody_waite(x, which):
    """`trig_fast64` without branches, for the CPU's vectorised first loop:
    for 2^-27 < |x| < 2^20 the same operations on the same values
    (fast_sincos's Cody-Waite case, `_decide`), so it decides exactly where
    trig_fast64 does and gives its result; NaN, +-inf and |x| <= 2^-27 as
    `_special`, by selects.  |x| >= 2^20 (Payne-Hanek, loops over the bits of
    2/pi) is left undecided: `trig_f64` runs the whole fast path, then the
    accurate one, there."""
    inline_into_callers()
    a = fabs(x)
    special = (x != x) | (a == INF64)
    tiny = a <= TINY
    inside = (a > TINY) & (a < CODY_WAITE_LIMIT)
    ar = a if inside else ONE
    q, th, tl = reduce_cody_waite(ar)
    sh, sl, ch, cl = sincos_dd(th, tl)
    lo, ok = _decide(q, sh, sl, ch, cl, mul_rn(ar, CW_EPS), which)
    r = _finish(x, which, q, lo)
    r = (ONE if which == COS else x) if tiny else r
    r = NAN64 if special else r
    return r, (inside & ok) | tiny | special


@jitable
def trig_accurate64(x, which):
    """sin, cos or tan of x by the accurate path alone (tests)."""
    r, done = _special(x, which)
    if done:
        return r
    r, q = _accurate(fabs(x), which)
    return _finish(x, which, q, r)


@jitable
def trig_f64(x, which):
    """sin, cos or tan (which = SIN, COS, TAN) of a double, correctly rounded:
    the fast path (double-double, relative error 2^-73.7 plus the reduction's
    absolute error) and its rounding test; where that fails, the accurate path
    (Payne-Hanek, triple-double, < 2^-138) rounded once."""
    r, ok = trig_fast64(x, which)
    if ok:
        return r
    return trig_accurate64(x, which)
