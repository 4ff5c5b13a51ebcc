"""The float64 exponential and logarithm cores shared by exp, exp2, exp10, expm1,
sinh, cosh, tanh, sigmoid, log, log2, log10 and log1p (scheme:
softrep/algorithms/math/multiword.py).

Exponential.  z = k ln2/64 + r with k = round(64 z/ln2), |r| <= ln2/128 (+ a
rounding of k, < 2^-7.5 in all), k = 64 q + j:

    e^z = 2^q * 2^(j/64) * e^r

2^(j/64) comes from a 64-entry table (triple-double, exact to 2^-159, computed
at import from an integer 64th root), e^r from its Taylor polynomial.  The
value V = 2^(j/64) e^r lies in [0.99, 2.02] and the caller rounds V 2^q once.

* Reduction: ln2/64 = L1 + L2 + L3 + L4 with L1 of 36 significant bits, so
  k L1 is exact for |k| < 2^17 (|z| < 1400) and z - k L1 is exact (the
  difference is a multiple of min(ulp(z), ulp(L1)) below 2^-7 in magnitude:
  at most 53 bits).  k L2 and k L3 are exact two_prods; k L4 (< 2^-132) is
  rounded once (< 2^-185); the tail of ln2/64 after L4 (< 2^-202) times k adds
  < 2^-185.  So r is exact to 2^-184 before the triple-double sums.
* Double-double (fast): the reduction keeps r to < 2^-129 absolutely (k L3
  rounded, < 2^-132; zl's addition, < 2^-132).  e^r: Taylor degree 10
  (remainder < |r|^11/11! < 2^-108); terms of degree >= 6 (< 2^-54.7) in
  double by Horner on rh (< 2^-51 of those terms, and dropping rl there
  < 2^-104), then five double-double Horner steps (dd_mul < 2^-102 of
  |p r| < 2^-7.5, dd_add < 2^-104 of a result <= 1.006: < 2^-103.8 in all,
  the factor |r| making each earlier step count less).  Times the table's
  leading two words (< 2^-106) by dd_mul (< 2^-102).  Relative error of V
  < 2^-101; the rounding tests use 2^-97.
* Triple-double (accurate): the same reduction in td_add (< 2^-159 absolute
  each), Taylor degree 15 (remainder < 2^-164.7) in triple-double Horner (each
  step td_mul < 2^-151 of |p r| and td_add < 2^-153 of (|p r| + |c|), the
  last one dominating: < 2^-150.5 in all), times the table entry (< 2^-159,
  td_mul < 2^-151).  Relative error of V < 2^-149.

Logarithm.  x = 2^e m with sqrt(1/2) <= m < sqrt(2) (exact); log x =
e ln2 + log m, with |log m| <= ln2/2, so for e != 0 the result is at least
|e| ln2 / 2 and the two parts' errors add up without cancellation.

* |m - 1| < 2^-4 ("series"): f = m - 1 (exact), s = f/(2 + f) with
  |s| < 2^-5, log m = 2 atanh(s) = 2s (1 + w/3 + w^2/5 + ...), w = s^2 < 2^-10.
  Double-double: s by dd_div (< 2^-100), terms up to w^10/21 (omitted
  < 2^-108), those of degree >= 5 in double (< 2^-52 of < 2^-53.4), five
  double-double Horner steps (< 2^-102 each): < 2^-98 relative.
  Triple-double: s by td_div (< 2^-148), terms up to w^15/31 (omitted
  < 2^-164.9), td Horner (< 2^-150): < 2^-147 relative.
* otherwise ("Newton", |log m| > 2^-4.1): y0 = log_core(m) (a double, relative
  error < 2^-51) and log m = y0 + log(m e^-y0) with m e^-y0 = 1 + d, |d| <
  2^-52.  Double-double: e^-y0 from the fast exponential (< 2^-101),
  d = m E - 1 in double-double (two_prod, the subtraction of 1 exact by
  Sterbenz), log(1 + d) = d - d^2/2 (omitted < 2^-157): absolute error
  < 2^-100, relative < 2^-95.9.  Triple-double: y0 is the fast path's
  double-double (error < 2^-95.9 relative, so |d| < 2^-96), E = e^-y0 from
  exp_td (< 2^-149), d = m E - 1 in triple-double (td_mul < 2^-151, the
  subtraction exact up to td_add's < 2^-152), log(1 + d) = d (omitted
  d^2/2 < 2^-193): absolute error < 2^-148.4, relative < 2^-144.3.
* e ln2 (|e| <= 1075 + 54): double-double e (LN2_H + LN2_L) with two_prod
  and one fma (< 2^-104 relative), triple-double with three exact two_prods
  (ln2 to 2^-159 in three words: < 2^-158); the sums add < 2^-104 (dd) and
  < 2^-152 (td) relative.

So log x: double-double < 2^-95.5 relative (rounding test: 2^-93),
triple-double < 2^-144 relative.
"""

from fractions import Fraction

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import add_rn, bitcast, div_rn, fma_rn, jitable, mul_rn, negate, sub_rn
from .core import (F2H, F2L, F3H, F3L, F4H, F4L, F5H, F5L, INV_LN2, INV_LN2_L, LN2_H, LN2_L, dd_add, dd_div, dd_mul,
                   fast_two_sum, log_core, log_reduce, pow2, two_prod, two_sum)
from .exact64 import bracket_err
from .multiword import FIX, LN10_Q, LN2_FIX, LN2_Q, fix_fraction, td_add, td_const, td_div, td_mul

F64 = np.float64
ZERO = F64(0.0)
ONE = F64(1.0)
TWO = F64(2.0)
HALF = F64(0.5)

# --------------------------------------------------------------------------- constants (exact, import time)


def _iroot(n, k):
    """floor(n^(1/k)) for integers n >= 1, k >= 1 (Newton from above)."""
    x = 1 << (n.bit_length() // k + 1)
    while True:
        y = ((k - 1) * x + n // x ** (k - 1)) // k
        if y >= x:
            return x
        x = y


_TABLE = [td_const(Fraction(_iroot(1 << (j + 64 * FIX), 64), 1 << FIX)) for j in range(64)]
# 2^(j/64) = EXP_TH[j] + EXP_TM[j] + EXP_TL[j] to 2^-159 relative (the integer
# root is exact to 2^-FIX = 2^-400)
EXP_TH = np.array([t[0] for t in _TABLE], dtype=np.float64)
EXP_TM = np.array([t[1] for t in _TABLE], dtype=np.float64)
EXP_TL = np.array([t[2] for t in _TABLE], dtype=np.float64)


def _split_ln2(steps, lead_bits, parts):
    """ln2/steps as `parts` doubles: the first with its last bit at 2^-lead_bits
    (so that k times it is exact for small integers k), each next one the
    rest rounded to a double, the last one the rest."""
    q = LN2_Q / steps
    words = [Fraction(round(q * 2**lead_bits), 2**lead_bits)]
    for _ in range(parts - 2):
        words.append(Fraction(float(q - sum(words))))
    words.append(q - sum(words))
    return tuple(F64(float(w)) for w in words)


# 36 significant bits for L1: ln2/64 is in [2^-7, 2^-6)
EXP_L1, EXP_L2, EXP_L3, EXP_L4 = _split_ln2(64, 42, 4)
INV_LN2_64 = F64(float(64 / LN2_Q))
SHIFT = F64(6755399441055744.0)  # 1.5 * 2^52: fma(z, 64/ln2, SHIFT) - SHIFT rounds to an integer

_FACT = [Fraction(1)]
for _n in range(1, 22):
    _FACT.append(_FACT[-1] / _n)
# 1/n! in double for the fast path's double Horner part
(C6, C7, C8, C9, C10) = (F64(float(_FACT[n])) for n in range(6, 11))
# 1/n! as triple-doubles, n = 2 .. 15
(T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15) = (td_const(_FACT[n]) for n in range(2, 16))

# 1/(2n+1): double for the high terms, double-double and triple-double below
(A11, A13, A15, A17, A19, A21) = (F64(1.0 / (2 * n + 1)) for n in range(5, 11))
(D3H, D3L), (D5H, D5L), (D7H, D7L), (D9H, D9L) = (
    (F64(float(Fraction(1, d))), F64(float(Fraction(1, d) - Fraction(float(Fraction(1, d)))))) for d in (3, 5, 7, 9))
(R3, R5, R7, R9, R11, R13, R15, R17, R19, R21, R23, R25, R27, R29, R31) = (
    td_const(Fraction(1, 2 * n + 1)) for n in range(1, 16))

LN2_TH, LN2_TM, LN2_TL = td_const(LN2_Q)
LN10_TD = td_const(LN10_Q)
INV_LN2_TD = td_const(1 / LN2_Q)
INV_LN10_TD = td_const(1 / LN10_Q)
LOG10_2_TD = td_const(LN2_Q / LN10_Q)
# 1/n! for n = 9 .. 13 in double and 16 .. 19 as triple-doubles (expm1's series)
(C11, C12, C13) = (F64(float(_FACT[n])) for n in range(11, 14))
(T16, T17, T18, T19) = (td_const(_FACT[n]) for n in range(16, 20))
TD_ONE = (ONE, ZERO, ZERO)
SERIES_LIMIT = F64(2.0**-4)  # |m - 1| below: the atanh series; above: the Newton step
TWO_P54 = F64(2.0**54)
MIN_NORMAL = F64(2.0**-1022)


# --------------------------------------------------------------------------- exponential


@jitable
def exp_reduce(zh):
    """(k as a double, z - k L1 exactly) with k = round(64 zh/ln2), |zh| < 1400."""
    kd = sub_rn(fma_rn(zh, INV_LN2_64, SHIFT), SHIFT)
    return kd, fma_rn(negate(kd), EXP_L1, zh)


@jitable
def exp_split(kd):
    """(q, j) with k = 64 q + j, 0 <= j < 64."""
    k = np.int64(kd)
    j = k & np.int64(63)
    return (k - j) >> np.int64(6), j


@jitable
def exp_dd(zh, zl):
    """(h, l, q): e^(zh + zl) = (h + l) 2^q, relative error < 2^-101, for
    |zh| < 1400, |zl| <= 2^-50 |zh|; h in [0.98, 2.03] (module docstring).
    r = (zh - k L1) - k L2 - k L3 + zl: the first difference exact, k L2 an
    exact two_prod, and dd_add (< 2^-104 of |r| <= 2^-7.5) adds the rest."""
    kd, r0 = exp_reduce(zh)
    ph, pl = two_prod(kd, EXP_L2)
    rh, rl = two_sum(r0, negate(ph))
    rh, rl = dd_add(rh, rl, zl, negate(fma_rn(kd, EXP_L3, pl)))
    return exp_dd_reduced(kd, rh, rl)


@jitable
def exp_dd_reduced(kd, rh, rl):
    """(h, l, q): 2^(k/64) e^(rh + rl) = (h + l) 2^q for an integer k (as a double)
    and |rh + rl| < 2^-7.4, relative error < 2^-101 (module docstring)."""
    d = fma_rn(rh, C10, C9)
    d = fma_rn(rh, d, C8)
    d = fma_rn(rh, d, C7)
    d = fma_rn(rh, d, C6)
    h, l = dd_mul(d, ZERO, rh, rl)
    h, l = dd_add(h, l, F5H, F5L)
    h, l = dd_mul(h, l, rh, rl)
    h, l = dd_add(h, l, F4H, F4L)
    h, l = dd_mul(h, l, rh, rl)
    h, l = dd_add(h, l, F3H, F3L)
    h, l = dd_mul(h, l, rh, rl)
    h, l = dd_add(h, l, F2H, F2L)
    h, l = dd_mul(h, l, rh, rl)
    h, l = dd_add(h, l, ONE, ZERO)
    h, l = dd_mul(h, l, rh, rl)
    h, l = dd_add(h, l, ONE, ZERO)
    q, j = exp_split(kd)
    h, l = dd_mul(EXP_TH[j], EXP_TM[j], h, l)
    return h, l, q


@jitable
def td_horner_step(ph, pm, pl, rh, rm, rl, c):
    """p r + c in triple-double."""
    ph, pm, pl = td_mul(ph, pm, pl, rh, rm, rl)
    return td_add(ph, pm, pl, c[0], c[1], c[2])


@jitable
def exp_td(zh, zm, zl):
    """(h, m, l, q): e^(zh + zm + zl) = (h + m + l) 2^q, relative error < 2^-149,
    for |zh| < 1400 and a normalized (zh, zm, zl) (module docstring)."""
    kd, r0 = exp_reduce(zh)
    ph, pl = two_prod(kd, EXP_L2)
    uh, ul = two_prod(kd, EXP_L3)
    rh, rm, rl = td_add(r0, ZERO, ZERO, negate(ph), negate(pl), ZERO)
    rh, rm, rl = td_add(rh, rm, rl, negate(uh), negate(ul), negate(mul_rn(kd, EXP_L4)))
    rh, rm, rl = td_add(rh, rm, rl, zm, zl, ZERO)
    return exp_td_reduced(kd, rh, rm, rl)


@jitable
def exp_td_reduced(kd, rh, rm, rl):
    """(h, m, l, q): 2^(k/64) e^r = (h + m + l) 2^q for an integer k (as a double)
    and |r| < 2^-7.4, relative error < 2^-149 (module docstring)."""
    ph, pm, pl = T15
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T14)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T13)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T12)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T11)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T10)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T9)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T8)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T7)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T6)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T5)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T4)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T3)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, T2)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, TD_ONE)
    ph, pm, pl = td_horner_step(ph, pm, pl, rh, rm, rl, TD_ONE)
    q, j = exp_split(kd)
    h, m, l = td_mul(EXP_TH[j], EXP_TM[j], EXP_TL[j], ph, pm, pl)
    return h, m, l, q


# --------------------------------------------------------------------------- logarithm


@jitable
def log_split(x):
    """(e, m) with x = 2^e m, sqrt(1/2) <= m < sqrt(2), for a positive finite x != 0
    (subnormal x scaled by 2^54 first: exact)."""
    shift = np.int64(0)
    if x < MIN_NORMAL:
        x = mul_rn(x, TWO_P54)
        shift = np.int64(54)
    e, m = log_reduce(x)
    return np.int64(e) - shift, m


@jitable
def log1p_series_dd(f):
    """log(1 + f) = 2 atanh(f/(2 + f)) for |f| < 2^-4, double-double, relative
    error < 2^-98 (module docstring)."""
    dh, dl = two_sum(TWO, f)
    sh, sl = dd_div(f, ZERO, dh, dl)
    wh, wl = dd_mul(sh, sl, sh, sl)
    d = fma_rn(wh, A21, A19)
    d = fma_rn(wh, d, A17)
    d = fma_rn(wh, d, A15)
    d = fma_rn(wh, d, A13)
    d = fma_rn(wh, d, A11)
    h, l = dd_mul(d, ZERO, wh, wl)
    h, l = dd_add(h, l, D9H, D9L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, D7H, D7L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, D5H, D5L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, D3H, D3L)
    h, l = dd_mul(h, l, wh, wl)
    h, l = dd_add(h, l, ONE, ZERO)
    return dd_mul(h, l, add_rn(sh, sh), add_rn(sl, sl))


@jitable
def _newton_dd(m):
    """log m for |m - 1| >= 2^-4: y0 + log(1 + d), d = m e^-y0 - 1, double-double."""
    y0 = log_core(m)
    eh, el, q = exp_dd(negate(y0), ZERO)
    g = mul_rn(m, bitcast(np.uint64(q + np.int64(1023)) << np.uint64(52)))  # m 2^q, exact
    ph, pl = two_prod(g, eh)
    dh = sub_rn(ph, ONE)  # exact: ph is within 2^-50 of 1
    dl = fma_rn(g, el, pl)
    dh, dl = two_sum(dh, dl)
    dl = fma_rn(mul_rn(dh, F64(-0.5)), dh, dl)  # - d^2/2
    return dd_add(y0, ZERO, dh, dl)


@jitable
def log_m_dd(m):
    """log m for sqrt(1/2) <= m < sqrt(2), double-double, relative error < 2^-95.9."""
    if add_rn(m, F64(-1.0)) < SERIES_LIMIT and sub_rn(ONE, m) < SERIES_LIMIT:
        return log1p_series_dd(sub_rn(m, ONE))  # m - 1 exact (Sterbenz)
    return _newton_dd(m)


@jitable
def log_dd(e, m):
    """e ln2 + log m as a double-double, relative error < 2^-95.5."""
    h, l = log_m_dd(m)
    ed = F64(np.int32(e))
    ph, pl = two_prod(ed, LN2_H)
    pl = fma_rn(ed, LN2_L, pl)
    return dd_add(ph, pl, h, l)


@jitable
def log1p_series_td(f):
    """log(1 + f) for |f| < 2^-4, triple-double, relative error < 2^-147."""
    dh, dl = two_sum(TWO, f)
    sh, sm, sl = td_div(f, ZERO, ZERO, dh, dl, ZERO)
    wh, wm, wl = td_mul(sh, sm, sl, sh, sm, sl)
    ph, pm, pl = R31
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R29)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R27)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R25)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R23)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R21)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R19)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R17)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R15)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R13)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R11)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R9)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R7)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R5)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, R3)
    ph, pm, pl = td_horner_step(ph, pm, pl, wh, wm, wl, TD_ONE)
    return td_mul(ph, pm, pl, add_rn(sh, sh), add_rn(sm, sm), add_rn(sl, sl))


@jitable
def _newton_td(m):
    y0h, y0l = _newton_dd(m)
    eh, em, el, q = exp_td(negate(y0h), negate(y0l), ZERO)
    g = mul_rn(m, bitcast(np.uint64(q + np.int64(1023)) << np.uint64(52)))  # m 2^q, exact
    ph, pm, pl = td_mul(g, ZERO, ZERO, eh, em, el)
    dh, dm, dl = td_add(ph, pm, pl, F64(-1.0), ZERO, ZERO)
    return td_add(y0h, y0l, ZERO, dh, dm, dl)


@jitable
def log_m_td(m):
    """log m for sqrt(1/2) <= m < sqrt(2), triple-double, relative error < 2^-144.3."""
    if add_rn(m, F64(-1.0)) < SERIES_LIMIT and sub_rn(ONE, m) < SERIES_LIMIT:
        return log1p_series_td(sub_rn(m, ONE))
    return _newton_td(m)


@jitable
def log_td(e, m):
    """e ln2 + log m as a triple-double, relative error < 2^-144."""
    h, mm, l = log_m_td(m)
    ed = F64(np.int32(e))
    ah, al = two_prod(ed, LN2_TH)
    bh, bl = two_prod(ed, LN2_TM)
    ph, pm, pl = td_add(ah, al, ZERO, bh, bl, mul_rn(ed, LN2_TL))
    return td_add(ph, pm, pl, h, mm, l)


# --------------------------------------------------------------------------- e^a +- e^-a

COSH_SINH_DROP = np.int64(80)  # q >= 80: e^-a < 2^-158 e^a, below both paths' errors


@jitable
def exp_pm_dd(a, subtract):
    """(h, l, q): e^a - e^-a (subtract) or e^a + e^-a = (h + l) 2^q for 0 <= a < 1400,
    from exp_dd: E = (h + l) 2^q, 1/E = (1/(h + l)) 2^-q by dd_div (< 2^-100),
    2^-2q exact (q < 80), dd_add (< 2^-104 of the result).  For q >= 80 the
    e^-a term is below 2^-158 of the result and is left out.  Relative error
    < 2^-99.5 for the sum; for the difference the same absolute error, i.e.
    < 2^-99.5 e^a / (e^a - e^-a)."""
    h, l, q = exp_dd(a, ZERO)
    if q < COSH_SINH_DROP:
        rh, rl = dd_div(ONE, ZERO, h, l)
        s = pow2(np.int64(-2) * q)
        rh, rl = mul_rn(rh, s), mul_rn(rl, s)
        if subtract:
            rh, rl = negate(rh), negate(rl)
        h, l = dd_add(h, l, rh, rl)
    return h, l, q


@jitable
def exp_pm_td(a, subtract):
    """exp_pm_dd in triple-double from exp_td and td_div: relative error < 2^-147.5
    for the sum, absolute < 2^-147.5 e^a for the difference."""
    h, m, l, q = exp_td(a, ZERO, ZERO)
    if q < COSH_SINH_DROP:
        rh, rm, rl = td_div(ONE, ZERO, ZERO, h, m, l)
        s = pow2(np.int64(-2) * q)
        rh, rm, rl = mul_rn(rh, s), mul_rn(rm, s), mul_rn(rl, s)
        if subtract:
            rh, rm, rl = negate(rh), negate(rm), negate(rl)
        h, m, l = td_add(h, m, l, rh, rm, rl)
    return h, m, l, q


# --------------------------------------------------------------------------- exponential, fast path in double
#
# e^z = 2^q 2^(j/256) e^r with k = round(256 z/ln2) = 256 q + j (0 <= j < 256)
# and |r| <= ln2/512 (+ the rounding of k): one 256-entry table of
# double-doubles and a degree-7 polynomial whose two leading terms are kept
# exactly -- about sixty operations and two table reads without a branch,
# against about 200 for exp_dd (a degree-10 polynomial with five
# double-double Horner steps), for a weaker bound (2^-80 instead of 2^-101)
# that still leaves the rounding test undecided for only about one input in
# 2^20.  (Two 64-entry tables for a finer reduction, 2^(i/64) 2^(j/4096),
# shorten the polynomial but read four words per element; reading table
# words, one element at a time or by vector gathers, costs more than the
# polynomial's extra terms.)
#
# Reduction (`exp_reduce_fast`), for z = zh + zl with |zh| <= 750 and
# |zl| <= 2^-42 (zl = 0 for exp itself; the low word of x ln10 for exp10, of
# y log x for pow):
# * k = RN(zh * RN(256/ln2)) as an integer: the constant's error (< 2^-53
#   relative) times |zh 256/ln2| < 2^18.08 moves it by < 2^-34.9, so
#   |zh 256/ln2 - k| <= 1/2 + 2^-34.9, |k| < 2^18.1, and |r| = |zh - k ln2/256|
#   < (1/2 + 2^-34.9) ln2/256 < 2^-9.53.
# * ln2/256 = L1 + L2 + L3 + tau, L1 a multiple of 2^-42 (34 significant
#   bits: ln2/256 is in [2^-9, 2^-8)), |L2| <= 2^-43, |L3| <= 2^-96, |tau| <=
#   2^-149.  k L1 is exact (19 + 34 bits).  r0 = zh - k L1 (one fma) is exact:
#   it is a multiple of min(ulp(zh), 2^-42) below 2^-9.53 + 2^18.1 * 2^-43 <
#   2^-9.52 in magnitude, and for k != 0, |zh| > 2^-10, so ulp(zh) >= 2^-62
#   and the multiple has at most 53 bits (k = 0: r0 = zh).
# * (ph, pl) = k L2 and (rh, e) = r0 - ph are exact (|ph| < 2^-24.9, |pl| <=
#   2^-78, |rh| < 2^-9.51, |e| <= ulp(rh)/2 <= 2^-63); c = RN(k L3 + pl)
#   (|c| < 2^-76.9: rounds by < 2^-130), RN(e - c) (< 2^-116), + zl (< 2^-95
#   where zl != 0, exact where zl = 0), then (rh, rl) = two_sum (exact):
#   |rh| < 2^-9.51 + 2^-41.9 < 2^-9.5, |rl| <= ulp(rh)/2 <= 2^-63.
# So z = k ln2/256 + rh + rl + d with |d| < 2^-95 + 2^-116 + 2^-130 + k tau
# < 2^-94.9 (< 2^-115.9 for zl = 0): e^z = 2^(k/256) e^(rh + rl) within
# 2^-94.8 relative.
#
# Evaluation (`exp_reduced_fast`), for an integer k (|k| < 2^20), |rh| <
# 2^-9.5 and |rl| < 2^-62.5 (exp2's reduction gives rl up to 2^-62.6):
# * e^(rh + rl) = e^rh (1 + rl) within rl^2 < 2^-124.  e^rh = 1 + rh + rh^2/2
#   + rh^3 P, P = 1/6 + rh/24 + rh^2/120 + rh^3/720 + rh^4/5040 + R with
#   |R| < |rh|^5/8! * 1.001 < 2^-62.8: dropping R costs |rh^3 R| < 2^-91.3.
#   P by Horner in double (fma): the last rounding and 1/6's <= 2^-56 each
#   (P < 1/4), the earlier ones and the other coefficients' (<= 2^-58 each)
#   scaled by |rh| < 2^-9.5: |p - P| < 2^-54.99, < 2^-52.39 relative
#   (P > 0.166).  rh^2 = s2h + s2l exactly
#   (two_prod; |s2h| < 2^-19, |s2l| <= 2^-72).  t = RN(RN(s2h rh) p): three
#   roundings and s2l's omission (2^-53 each) plus p's error: < 2^-50.8
#   relative of |rh^3 P| < 2^-31.08: < 2^-81.9.  w = RN(s2l/2 + t) (< 2^-84.08:
#   |w| < 2^-31); u = RN(rl (1 + rh)) (< 2^-116; the dropped rl (e^rh - 1 -
#   rh) < 2^-62.5 * 2^-20 = 2^-82.5); v = RN(w + u) (< 2^-84).  (a, b) = rh +
#   s2h/2 exactly (fast_two_sum: |s2h/2| < 2^-10 |rh|), lo = RN(b + v)
#   (|b| <= 2^-63: < 2^-84).  So 1 + a + lo is e^(rh + rl) within 2^-91.3 +
#   2^-81.9 + 2^-84.08 + 2^-82.5 + 2 * 2^-84 + 2^-115 < 2^-80.5 absolutely,
#   relative too (e^(rh + rl) > 0.9986); |a| < 2^-9.49, |lo| < 2^-31.
#   (Where |rh| < 2^-511, rh^2 underflows; the terms it feeds are then below
#   2^-1022, absolutely.)
# * 2^(j/256) = TH + TL (EXP8_TH, EXP8_TL) within 2^-106 relative (|TL| <=
#   2^-53 TH).  (TH + TL)(1 + a + lo): (ph, pl) = TH a exactly (two_prod),
#   (h0, e) = TH + ph exactly (fast_two_sum, |ph| < TH), g = RN(TL (1 + a))
#   (< 2^-105 TH), m = RN(TH lo + g) (|m| < 2^-30: < 2^-83.9 of the value,
#   which is > 0.998 TH), c = RN(e + pl) (< 2^-105.9 h0), low = RN(c + m)
#   (< 2^-83.9), TL lo dropped (< 2^-84 TH), then (h, l) = h0 + low exactly
#   (fast_two_sum): < 3 * 2^-83.9 + 2^-104 < 2^-82.3.
#
# Relative error of (h + l) 2^q against 2^(k/256) e^(rh + rl): < 2^-80.5 +
# 2^-82.3 < 2^-80.1; h in [0.998, 2) (TH <= 2^(255/256) (1 + 2^-53), e^(rh
# + rl) in [0.9986, 1.0014]).  exp_dd_fast (zl = 0): < 2^-80.1 against e^x.
# Measured: tests/test_mathlib_f64_fast.py compares them with MPFR on random
# and extreme arguments.

def _exp_fix(t):
    """e^t * 2^FIX for a fixed-point 0 <= t < 2^FIX (t/2^FIX < 1): the Taylor
    series in integers, each term truncated (error < 2^-FIX per term)."""
    total = term = 1 << FIX
    n = 1
    while term:
        term = term * t // (n << FIX)
        total += term
        n += 1
    return total


# 34 significant bits for L1: ln2/256 is in [2^-9, 2^-8)
EXP8_L1, EXP8_L2, EXP8_L3 = _split_ln2(256, 42, 3)
INV_LN2_256 = F64(float(256 / LN2_Q))
_TABLE8 = [td_const(Fraction(_exp_fix(j * LN2_FIX // 256), 1 << FIX)) for j in range(256)]
# 2^(j/256) = EXP8_TH[j] + EXP8_TL[j] to 2^-106 relative (the fixed-point
# value is exact to 2^-390)
EXP8_TH = np.array([t[0] for t in _TABLE8], dtype=np.float64)
EXP8_TL = np.array([t[1] for t in _TABLE8], dtype=np.float64)
# 1/n! rounded, for P
(P3, P4, P5, P6, P7) = (F64(float(_FACT[n])) for n in range(3, 8))
_TABLE_BITS = np.int32(8)  # 256 entries: k = 256 q + j
_J_MASK = np.uint64(255)
TWO_FIFTY_SIX = F64(256.0)


@jitable
def exp_reduce_fast(zh, zl):
    """(kd, rh, rl): e^(zh + zl) = 2^(k/256) e^(rh + rl) within 2^-94.8 relative
    for |zh| <= 750, |zl| <= 2^-42, k = kd an integer (as a double), |rh| <
    2^-9.5, |rl| <= 2^-63; branch-free (the analysis above)."""
    kd = sub_rn(fma_rn(zh, INV_LN2_256, SHIFT), SHIFT)
    r0 = fma_rn(negate(kd), EXP8_L1, zh)
    ph, pl = two_prod(kd, EXP8_L2)
    rh, e = two_sum(r0, negate(ph))
    rl = add_rn(sub_rn(e, fma_rn(kd, EXP8_L3, pl)), zl)
    rh, rl = two_sum(rh, rl)
    return kd, rh, rl


@jitable
def exp_dd_fast(x):
    """(h, l, q): e^x = (h + l) 2^q with relative error < 2^-80.1, for |x| <= 746,
    h in [0.998, 2); branch-free (the analysis is above)."""
    kd, rh, rl = exp_reduce_fast(x, ZERO)
    return exp_reduced_fast(kd, rh, rl)


@jitable
def exp_reduced_fast(kd, rh, rl):
    """(h, l, q): 2^(k/256) e^(rh + rl) = (h + l) 2^q for an integer k = kd
    (|k| < 2^20), |rh| < 2^-9.5, |rl| < 2^-62.5; relative error < 2^-80.1
    (the analysis above), h in [0.998, 2); branch-free.  The second half of
    exp_dd_fast, and of the fast paths of exp2, exp10 and pow."""
    s2h, s2l = two_prod(rh, rh)
    p = fma_rn(rh, P7, P6)
    p = fma_rn(rh, p, P5)
    p = fma_rn(rh, p, P4)
    p = fma_rn(rh, p, P3)
    t = mul_rn(mul_rn(s2h, rh), p)
    w = fma_rn(s2l, HALF, t)
    v = add_rn(w, fma_rn(rh, rl, rl))
    a, b = fast_two_sum(rh, mul_rn(s2h, HALF))
    lo = add_rn(b, v)
    k = np.int32(kd)  # |k| < 2^20; int32: AVX2 converts doubles to int32 (see core.pow2)
    j = np.uint64(np.int64(k)) & _J_MASK  # two's complement: k mod 256
    th = EXP8_TH[j]
    tl = EXP8_TL[j]
    ph, pl = two_prod(th, a)
    h, e = fast_two_sum(th, ph)
    low = add_rn(add_rn(e, pl), fma_rn(th, lo, fma_rn(tl, a, tl)))
    h, l = fast_two_sum(h, low)
    return h, l, k >> _TABLE_BITS


# --------------------------------------------------------------------------- 2^(yh + yl), a shorter fast path in double
#
# The first step of exp2, exp and sigmoid: 2^y for y = yh + yl (|yh| <= 1100,
# |yl| <= 2^-42: yl = 0 for exp2, the low word of x log2(e) for exp and
# sigmoid), as (h + low) 2^q with an absolute error below 2^-69.2 for h in
# [0.998, 2), h + low not normalized (|low| < 2^-19).  Fewer operations
# than exp_reduced_fast (which keeps the square of the reduced argument in
# double-double, for 2^-80.1) for a weaker bound: its rounding test, with
# err = EXP2_SUM_ERR = 2^-67, leaves about one argument in 2^14 undecided.
#
# Reduction: Y = 256 yh is exact (|Y| < 2^18.1); b = RN(Y + SHIFT) is SHIFT + k
# for the integer k nearest Y (b is in [2^52, 2^53), where the spacing is 1),
# and u = Y - (b - SHIFT) is exact (b - SHIFT = k by Sterbenz's lemma; Y - k
# is a multiple of ulp(Y) below 1/2 in magnitude, or Y itself for k = 0), so
# y = (k + u)/256 + yl, |u| <= 1/2, and with k = 256 q + j (0 <= j < 256)
#
#     2^y = 2^q 2^(j/256) e^r,  r = u ln2/256 + yl ln2,  |u ln2/256| < 2^-9.52.
#
# The bits of b are those of SHIFT plus k (the mantissa field counts in
# units of 1; below 2^63): j is their low 8 bits, and (bits << 44) keeps
# bits 8 to 19, q mod 2^12, in the top 12 bits, which as a signed integer is
# q 2^52 (|q| < 2^11): adding that to the bits of a positive double
# multiplies it by 2^q wherever the product is a normal double.
#
# The exponent: ln2/256 = C1H + C1L + c (C1H, C1L: LN2_H and LN2_L over 256,
# exact; |c| < 2^-117).  (ah, al) = u C1H exactly (two_prod; |ah| < 2^-9.52,
# |al| <= 2^-63), s0 = RN(yl LN2_H + RN(u C1L + al)): the inner sum (< 2^-62)
# rounds by < 2^-115, the outer (< 2^-42.4) by < 2^-95.4, and LN2_H's own
# error (2^-54 relative) costs |yl| 2^-54 < 2^-96.  So r = ah + d with
# d = s0 + (< 2^-94.5), |d| < 2^-42.4.
#
# e^r = e^ah (1 + d) + (< d^2 < 2^-84.7), and e^ah = 1 + ah + Q, Q = ah^2 P,
# P = 1/2 + ah/6 + ah^2/24 + ah^3/120 + ah^4/720 + (the rest < |ah|^5/5040
# < 2^-59.9: dropping it costs < 2^-78.9).  P by Horner in double from the
# rounded coefficients 1/n!: the last rounding (p in [0.4997, 0.5003]) is
# < 2^-54, the earlier ones and the coefficients' are scaled by |ah|:
# |p - P| < 2^-53.99, 2^-52.98 relative.  ah2 = RN(ah^2) (2^-53 relative), so
# ah2 p is Q within 2^-51.99 of |Q| < 2^-20.04: < 2^-72.03.  Then
#
#     s = RN(s0 E1 + RN(ah2 p + s0)),  E1 = RN(ah2 p + ah) (e^ah - 1 to 2^-62),
#
# is Q + d (1 + ah + Q) = e^r - 1 - ah within 2^-72.03 (Q) + 2^-73.03 and
# 2^-73.02 (the two roundings; |s| < 2^-20.02) + 2^-78.9 + 2^-84.7 + 2^-94.5
# (+ s0 E1's own error, < 2^-42.4 2^-62) < 2^-71.0.  So e^r = 1 + ah + s +
# (< 2^-71.0).
#
# The table: 2^(j/256) = TH + TL within 2^-106 relative (EXP8_TH, EXP8_TL;
# TH in [1, 2), |TL| <= 2^-53).  T (1 + ah + s) = TH + TH ah + TH s + TL (1 + ah)
# + TL s: (ph, pl) = TH ah exactly (two_prod; |ph| < 2^-8.52, |pl| <= 2^-62),
# (h, e) = TH + ph exactly (fast_two_sum: |ph| < TH; |e| <= 2^-53, h in
# [0.998, 2)), m = RN(TH s + RN(TL ah + TL)) (|m| < 2^-19.02: < 2^-72.02;
# the inner rounding < 2^-106), low = RN(RN(e + pl) + m) (the inner sum
# rounds by < 2^-106; |low| < 2^-19.01: < 2^-72.01), and TL s is dropped
# (< 2^-73).  Absolute error of h + low against 2^(j/256) e^r: T times 2^-71.0
# (T < 2: < 2^-70.0) + 2^-72.02 + 2^-72.01 + 2^-73 + 2^-104 < 2^-69.3, and the
# same relative to the value (which is at least 0.998).
#
# The rounding test: exact64.bracket_err needs err >= 2 E + 2^-52 |low|, which
# is < 2^-68.2 + 2^-71.0 < 2^-67.9 for E < 2^-69.2 (the condition holds for an
# unnormalized pair too: the sums low -+ err round by at most 2^-53 (|low| +
# err), which the 2^-52 |low| term covers); EXP2_SUM_ERR = 2^-67.  Measured:
# tests/test_mathlib_f64_fast.py (the largest error seen is about 2^-70.6).
#
# e^x for |x| <= 746 (`exp_by_exp2_fast`): y = x log2(e) as yh + yl =
# two_prod(x, INV_LN2) and one fma with INV_LN2_L.  The constant's two words
# miss 1/ln2 by < 2^-106 of it (< 2^-95.9 times |x|), the fma's sum (< 2^-42.9:
# |x INV_LN2_L| < 2^-45.9, the product's low word <= 2^-43) rounds by
# < 2^-95.9, so y is x log2(e) within 2^-94.9, |yl| < 2^-42.9, and 2^y is e^x
# within 2^-95.4 relative: (h + low) 2^q is e^x within 2^-69.3 + 2^-94.4 <
# 2^-69.2, absolutely (on the scale of h) and relative to e^x, and the same
# err serves.

EXP2_SUM_ERR = F64(2.0**-67)
_C1H = F64(LN2_H / 256.0)  # exact: a power-of-two scaling
_C1L = F64(LN2_L / 256.0)
_FACT2 = F64(0.5)
_Q_FIELD_SHIFT = np.int64(44)
_Q_FIELD = np.int64(-(1 << 52))  # the top 12 bits


@jitable
def exp2_sum_fast(yh, yl):
    """(h, low, qf): 2^(yh + yl) = (h + low) 2^q within 2^-69.2 absolutely, for
    |yh| <= 1100 and |yl| <= 2^-42, with h in [0.998, 2), |low| < 2^-19,
    and qf = q 2^52 (an int64) for `scale_normal`; branch-free
    (the analysis above)."""
    inline_into_callers()
    y = mul_rn(yh, TWO_FIFTY_SIX)
    b = add_rn(y, SHIFT)
    u = sub_rn(y, sub_rn(b, SHIFT))
    ah, al = two_prod(u, _C1H)
    s0 = fma_rn(yl, LN2_H, fma_rn(u, _C1L, al))
    ah2 = mul_rn(ah, ah)
    p = fma_rn(ah, P6, P5)
    p = fma_rn(ah, p, P4)
    p = fma_rn(ah, p, P3)
    p = fma_rn(ah, p, _FACT2)
    s = fma_rn(s0, fma_rn(ah2, p, ah), fma_rn(ah2, p, s0))
    bits = bitcast(b)
    j = bits & _J_MASK
    th = EXP8_TH[j]
    ph, pl = two_prod(th, ah)
    h, e = fast_two_sum(th, ph)
    m = fma_rn(th, s, fma_rn(EXP8_TL[j], ah, EXP8_TL[j]))
    low = add_rn(add_rn(e, pl), m)
    return h, low, (np.int64(bits) << _Q_FIELD_SHIFT) & _Q_FIELD


@jitable
def exp_by_exp2_fast(x):
    """exp2_sum_fast's (h, low, qf) for e^x = 2^(x log2(e)), |x| <= 746: the same
    bounds (the analysis above)."""
    inline_into_callers()
    yh, yl = two_prod(x, INV_LN2)
    return exp2_sum_fast(yh, fma_rn(x, INV_LN2_L, yl))


@jitable
def scale_normal(v, qf):
    """v 2^q for qf = q 2^52 from exp2_sum_fast, exactly, where v is a positive
    double and v 2^q a normal one: q is added to the exponent field."""
    return bitcast(np.uint64(np.int64(bitcast(v)) + qf))


_INF = F64(np.inf)


@jitable
def decide_exp2_sum(h, low, qf, inside, above, below):
    """The decision of exp2's and exp's first steps, for exp2_sum_fast's
    (h, low, qf): RN((h + low) 2^q) by exact64.bracket_err with EXP2_SUM_ERR
    where `inside` (where the result is a normal double), inf where `above`,
    +0 where `below`; and whether the result is decided.  Selects only, so
    the callers stay branch-free."""
    lo, hi = bracket_err(h, low, EXP2_SUM_ERR)
    r = scale_normal(lo, qf)
    r = _INF if above else r
    r = ZERO if below else r
    return r, (inside & (lo == hi)) | above | below


# --------------------------------------------------------------------------- e^a +- e^-a, fast path in double
#
# For cosh and sinh: E = e^a = (h + l) 2^q from exp_dd_fast (relative error
# < 2^-78.1), 1/E = (rh + rl) 2^-q with rh = RN(1/h) and the residual
# e1 = h rh - 1 exact (one fma: the residual of a correctly rounded
# quotient is a double), so 1/(h + l) = rh/(1 + u), u = e1 + l rh, |u| <=
# 2^-53 + 2^-52 * 1.0002 < 2^-51.4; rl = RN(-rh RN(u)) (two roundings of
# < 2^-104.4 relative each) and the dropped u^2 < 2^-102.8: rh + rl is
# 1/(h + l) within 2^-101.8, so 1/E within 2^-78.1 + 2^-101.8 relative.
# The second term is scaled by 2^(-2q) relative to the first; for q > 400
# it is dropped (0 stands for it), an error below 2^-799 relative to the
# first term.  So no operand is ever subnormal: x86 takes a microcode assist
# of about a hundred cycles per subnormal operand or result.  The sum of
# (h, l) and the scaled (th, tl), |th| <= 1.0001 |h|: (s, e) = h + th
# exactly (two_sum), e + RN(l + tl) rounds twice, by at most 2^-53 (|l| +
# |tl|) + 2^-53 (|e| + |l| + |tl|) (1 + 2^-53) < 2^-104 (|h| + |th|) +
# 2^-106 |s|, and fast_two_sum is exact (|e| is far below |s|).  (The
# shorter sum than dd_add's keeps the loop vectorised.)  Relative to the
# result:
#     E + 1/E: < 2^-78.1 + 2^-101.8 + 2^-103.9 < 2^-78.09;
#     E - 1/E: < 2^-78.09 coth(a) + 2^-99 for a >= 2^-5 (the terms' absolute
#     errors over the difference, and |h| + |th| < 33 |h - th|, as
#     1 - e^(-2a) > 1/16.5).


_Q_DROP = np.int32(400)


@jitable
def exp_pm_fast(a, subtract):
    """(h, l, q): e^a + e^-a (or e^a - e^-a with `subtract`) = (h + l) 2^q for
    0 <= a <= 746 (a >= 2^-5 with `subtract`), with the relative errors
    above; branch-free."""
    h, l, q = exp_dd_fast(a)
    rh = div_rn(ONE, h)
    e1 = fma_rn(h, rh, negate(ONE))
    rl = mul_rn(negate(rh), fma_rn(l, rh, e1))
    scale = pow2(np.int32(-2) * min(q, _Q_DROP))
    scale = ZERO if q > _Q_DROP else scale
    th, tl = mul_rn(rh, scale), mul_rn(rl, scale)
    th = negate(th) if subtract else th
    tl = negate(tl) if subtract else tl
    s, e = two_sum(h, th)
    s, e = fast_two_sum(s, add_rn(e, add_rn(l, tl)))
    return s, e, q


# --------------------------------------------------------------------------- logarithm, fast path in double
#
# x = 2^e m, 1 <= m < 2 (a subnormal x scaled by 2^54 first, exactly), i = the
# top 8 bits of m's fraction: m in [1 + i/256, 1 + (i + 1)/256).  LOG_INV[i]
# is the multiple of 2^-9 nearest to 1/m over the interval (1 for i = 0, 1/2
# for i = 255), so r = m LOG_INV[i] - 1 is exact (one fma: a multiple of
# 2^-61 below 2^-8 in magnitude; |r| < 2^-8.4 for 0 < i < 255, checked at
# import), and
#
#     log x = E ln2 + T[i] + log1p(r),
#
# E = e and T[i] = -log(LOG_INV[i]) for i < 106 (m < 1.414), E = e + 1 and
# T[i] = -log(2 LOG_INV[i]) above (so |T[i]| <= ln2/2: for E != 0 the result
# is at least 0.34, no cancellation; T[0] = T[255] = 0 exactly, so for x in
# [1 - 2^-9, 1 + 2^-8) the result is log1p(r) with r = x - 1 exact, and
# elsewhere |log x| >= 2^-9.01).
#
# * log1p(r) = r - r^2/2 + r^3 Q(r), Q = 1/3 - r/4 + ... - r^7/10 (Taylor;
#   the rest < |r|^11/11 / (1 - |r|) < 2^-83 |r|).  r^2 = s2h + s2l exactly
#   (two_prod); (a, b) = r - s2h/2 exactly (fast_two_sum, |r| >= r^2/2).  Q by
#   Horner in double: the last rounding and 1/3's < 2^-55 each, the earlier
#   ones scaled by |r|: relative < 2^-52.4; t = RN(RN(s2h r) q) adds three
#   roundings: |t - r^3 Q| < 2^-50.8 |r^3 Q| < 2^-50.8 * 2^-16 * 0.335 |r| =
#   2^-68.4 |r|.  c = RN(t - s2l/2) (|.| < 2^-17.5 |r|: < 2^-70.5 |r|), then
#   b + c rounds (< 2^-70.5 |r|).  log1p(r) = a + (b + c) within 2^-67.9 |r|.
# * E ln2: LOG_LN2_H has 42 bits, so E LOG_LN2_H is exact (|E| <= 1076 + 54 <
#   2^11); E LOG_LN2_L rounds (< 2^-84), the rest of ln2 times E < 2^-84.
#   T[i] to 2^-107 (double-double).  (sh, sl) = E LOG_LN2_H + T_h exactly
#   (two_sum), sl + (E LOG_LN2_L + T_l) rounds once more (< 2^-97).
# * The sum: (s, e) = sh + a exactly (two_sum); e + sl rounds (both below
#   2^-52.9 (|s| + |sh|): < 2^-105.8 (|s| + |sh|)), then + b, whose size is
#   not that of a low word (|b| < 2^-17.4 |r|, the r^3 terms): the sum is below
#   2^-17.3 |r| + 2^-51.9 (|s| + |sh|), its rounding < 2^-70.3 |r| + 2^-104.9
#   (|s| + |sh|); fast_two_sum(s, .) is exact (the addend is far below |s|).
#   (dd_add, the longer sum, rounds the same e + b term once as well; its
#   extra steps cost 40% of the function's time.)
#
# Relative error: x in [1 - 2^-9, 1 + 2^-8) (E = 0, T = 0: sh = sl = 0, the
# sum is (a, b) itself): < 2^-67.9 |r| / (|r| (1 - |r|/2)) < 2^-67.8; elsewhere
# with E = 0, |log x| >= 2^-9.01 and |sh| <= |log x| + |a| < 2.6 |log x|:
# < ((2^-67.9 + 2^-70.3) 2^-8.4 + 2^-83 + 2^-97) / 2^-9.01 + 2^-104.9 * 5.2
# < 2^-67.0; with E != 0 far less.  So < 2^-67.0.  Measured:
# tests/test_mathlib_f64_fast.py.


def _log_fix(num, den):
    """log(num/den) * 2^FIX for integers num, den > 0 (2 atanh((num - den)/(num + den)),
    each term truncated: error < 2^-FIX per term)."""
    p, q = num - den, num + den
    total, power, k = 0, (abs(p) << FIX) // q, 0
    while power:
        total += power // (2 * k + 1)
        power = power * p * p // (q * q)
        k += 1
    return 2 * total if p >= 0 else -2 * total


LOG_SHIFT_FROM = 106  # m >= 1 + 106/256 = 1.4140625: E = e + 1, T = -log(2 inv)


def _log_tables():
    invs, th, tl = [], [], []
    for i in range(256):
        lo, hi = Fraction(256 + i, 256), Fraction(257 + i, 256)
        if i == 0:
            inv = Fraction(1)
        elif i == 255:
            inv = Fraction(1, 2)
        else:
            # the multiple of 2^-9 that minimises max |m inv - 1| over the interval
            inv = min((Fraction(n, 512) for n in range(256, 513)), key=lambda v: max(abs(lo * v - 1), abs(hi * v - 1)))
            assert max(abs(lo * inv - 1), abs(hi * inv - 1)) < Fraction(3, 2**10)  # < 2^-8.41
        invs.append(inv)
        two = 2 if i >= LOG_SHIFT_FROM else 1
        t = td_const(fix_fraction(_log_fix(inv.denominator, inv.numerator * two)))  # -log(two * inv)
        th.append(t[0])
        tl.append(t[1])
    return (np.array([float(v) for v in invs]), np.array(th, dtype=np.float64), np.array(tl, dtype=np.float64))


LOG_INV, LOG_TH, LOG_TL = _log_tables()
LOG_LN2_H = F64(float(Fraction(round(LN2_Q * 2**42), 2**42)))  # 42 significant bits
LOG_LN2_L = F64(float(LN2_Q - Fraction(float(LOG_LN2_H))))
(G3, G4, G5, G6, G7, G8, G9, G10) = (F64((-1.0) ** (n + 1) / n) for n in range(3, 11))  # log1p's coefficients
_U44 = np.uint64(44)
_U255 = np.uint64(255)
_MANT = np.uint64(0x000FFFFFFFFFFFFF)
_EXP_ONE = np.uint64(0x3FF0000000000000)
_EXP_FIELD = np.uint64(0x7FF)


@jitable
def log1p_series_fast(r):
    """(a, b): log1p(r) = a + b within 2^-67.9 |r| for 2^-54 <= |r| < 2^-8.4
    (or r = 0: (0, 0)), the series of the first item above; branch-free.
    Also log1p's fast path near 0 (log1p.log1p_fast64)."""
    s2h, s2l = two_prod(r, r)
    a, b = fast_two_sum(r, mul_rn(s2h, F64(-0.5)))
    q = fma_rn(r, G10, G9)
    q = fma_rn(r, q, G8)
    q = fma_rn(r, q, G7)
    q = fma_rn(r, q, G6)
    q = fma_rn(r, q, G5)
    q = fma_rn(r, q, G4)
    q = fma_rn(r, q, G3)
    c = fma_rn(s2l, F64(-0.5), mul_rn(mul_rn(s2h, r), q))
    return a, add_rn(b, c)


@jitable
def log_reduce_fast(x):
    """(r, ed, i): log x = ed ln2 + T[i] + log1p(r) for a positive finite x
    (subnormals included), r = m LOG_INV[i] - 1 exact, |r| < 2^-8 (the
    analysis above); branch-free.  The first half of log_dd_fast."""
    subnormal = x < MIN_NORMAL
    u = bitcast(mul_rn(x, TWO_P54) if subnormal else x)
    e = np.int32((u >> np.uint64(52)) & _EXP_FIELD) - np.int32(1023) - (np.int32(54) if subnormal else np.int32(0))
    i = (u >> _U44) & _U255
    m = bitcast((u & _MANT) | _EXP_ONE)
    r = fma_rn(m, LOG_INV[i], F64(-1.0))
    ed = F64(e + (np.int32(1) if i >= np.uint64(LOG_SHIFT_FROM) else np.int32(0)))
    return r, ed, i


@jitable
def log_finish_fast(r, ed, i):
    """(h, l) = ed ln2 + T[i] + log1p(r), the second half of log_dd_fast
    (the analysis above).  With ed = 0 and i = 0 (T[0] = 0 exactly) it is
    log1p_series_fast(r) itself, renormalised (the sum's first two_sum is
    exact with a zero operand): log1p's fast path near 0 uses it so."""
    a, b = log1p_series_fast(r)
    sh, sl = two_sum(mul_rn(ed, LOG_LN2_H), LOG_TH[i])
    sl = add_rn(sl, fma_rn(ed, LOG_LN2_L, LOG_TL[i]))
    s, e = two_sum(sh, a)
    return fast_two_sum(s, add_rn(add_rn(e, sl), b))


@jitable
def log_dd_fast(x):
    """(h, l): log x = h + l with relative error < 2^-67.0, for a positive finite
    x (subnormals included); branch-free (the analysis is above)."""
    r, ed, i = log_reduce_fast(x)
    return log_finish_fast(r, ed, i)
