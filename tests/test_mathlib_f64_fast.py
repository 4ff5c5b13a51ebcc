"""The plain-double fast paths of the float64 math functions and the float64
decided-first CPU launcher (softrep/cpu/launch.py): the error bound each
rounding test relies on, measured against MPFR, and launches large enough to
run the two-loop schedule, with many undecided elements, against MPFR's
correctly rounded results.  (test_mathlib_f64.py checks every function on the
small-launch path, the hard cases, the simulator and the golden vectors.)"""

import gmpy2
import numpy as np
import pytest
import torch

import softrep.ops.math as M
import softrep.tools.verify_f64 as V64
from softrep.algorithms.math.explog64 import (EXP8_TH, EXP8_TL, LOG_INV, LOG_TH, LOG_TL, exp2_sum_fast,
                                              exp_by_exp2_fast, exp_dd_fast, exp_pm_fast, log_dd_fast)
from softrep.algorithms.math.core import LN10_H, LN10_L
from softrep.algorithms.math.exp10 import exp10_dd_fast, exp10_fast64
from softrep.algorithms.math.exp2 import exp2_fast64
from softrep.algorithms.math.rsqrt import rsqrt_dd
from softrep.algorithms.math.sigmoid import sigmoid_eval_fast64, sigmoid_fast64
from softrep.algorithms.math.tanh import tanh_series_fast
from softrep.algorithms.math.trig64 import COS, SIN, TAN, rounded_to_integer, trig_fast64, trig_fast64_cody_waite
from softrep.cpu.launch import SERIAL_MAX


def relative_error(h, l, q, exact):
    """|(h + l) 2^q - exact| / exact in MPFR at 300 bits."""
    got = (gmpy2.mpfr(float(h)) + gmpy2.mpfr(float(l))) * gmpy2.mpfr(2) ** int(q)
    return abs((got - exact) / exact)


def worst_relative_error(fast, exact, xs):
    """The largest relative error of the (h, l, q) that `fast` returns for the
    doubles xs against `exact` (a gmpy2 function) at 300 bits."""
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for x in xs:
            h, l, q = fast(np.float64(x))
            worst = max(worst, relative_error(h, l, q, exact(gmpy2.mpfr(float(x)))))
    return worst


def test_exp_table_is_exact_to_2m106():
    with gmpy2.context(precision=300):
        for j in range(256):
            v = gmpy2.exp2(gmpy2.mpfr(j) / 256)
            err = abs((gmpy2.mpfr(float(EXP8_TH[j])) + gmpy2.mpfr(float(EXP8_TL[j])) - v) / v)
            assert err < gmpy2.mpfr(2) ** -106, j


def test_exp_reduce_fast_bounds():
    """explog64.exp_reduce_fast: for |zh| <= 750 and |zl| <= 2^-42, zh + zl =
    k ln2/256 + rh + rl within 2^-94.9 (MPFR), with |rh| < 2^-9.5 and |rl| <=
    2^-63, the bounds exp_reduced_fast's analysis assumes.  Arguments: the
    largest |r| (half-steps of ln2/256), the ends of the range, tiny ones, and
    low words of both signs up to 2^-42."""
    from softrep.algorithms.math.explog64 import exp_reduce_fast

    rng = np.random.Generator(np.random.PCG64(8))
    step = float(gmpy2.log(2)) / 256
    halves = (rng.integers(-2**18, 2**18, 2000) + 0.5) * step
    zh = np.concatenate([halves[np.abs(halves) <= 750], rng.uniform(-750, 750, 2000), [750.0, -750.0, 0.0, 5e-324],
                         rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-60, 0, 500))])
    zl = rng.uniform(-1, 1, zh.size) * 2.0**-42 * (rng.random(zh.size) < 0.7)
    with gmpy2.context(precision=300):
        ln2_256 = gmpy2.log(2) / 256
        for a, b in zip(zh, zl):
            kd, rh, rl = exp_reduce_fast(np.float64(a), np.float64(b))
            assert abs(rh) < 2.0**-9.5 and abs(rl) <= 2.0**-63, (a, b)
            exact = gmpy2.mpfr(float(a)) + gmpy2.mpfr(float(b)) - int(kd) * ln2_256
            assert abs(gmpy2.mpfr(float(rh)) + gmpy2.mpfr(float(rl)) - exact) < gmpy2.mpfr(2) ** -94.9, (a, b)


def test_exp_dd_fast_error_bound():
    """explog64.exp_dd_fast: relative error < 2^-80.1 (argued in explog64.py; the
    rounding test of exp_fast64 assumes 2^-78.1).  Arguments: uniform over
    the range, small ones, and those with the largest reduced argument |r|
    (k + 1/2 steps of ln2/256, where the polynomial's error peaks)."""
    rng = np.random.Generator(np.random.PCG64(7))
    step = float(gmpy2.log(2)) / 256
    halves = (rng.integers(-2**18, 2**18, 1000) + 0.5) * step
    xs = np.concatenate([rng.uniform(-745.9, 745.9, 2000), rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-80, 0, 500)),
                         halves[np.abs(halves) < 745.9], [0.0, -0.0, 745.9, -745.9, 709.78, -708.3, 5e-324]])
    assert worst_relative_error(exp_dd_fast, gmpy2.exp, xs) < gmpy2.mpfr(2) ** -80.1


def exp2_sum_worst_error(fast, exact, args):
    """The largest absolute error of h + low against exact(*a) / 2^q over the
    arguments `args` (tuples), for the (h, low, qf) that `fast` returns;
    also checks the ranges of h and low that the callers rely on."""
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for a in args:
            h, low, qf = fast(*(np.float64(v) for v in a))
            q = int(qf) >> 52
            assert int(qf) == q << 52 and 0.998 <= h < 2 and abs(low) < 2.0**-19, a
            value = exact(*(gmpy2.mpfr(float(v)) for v in a)) / gmpy2.mpfr(2) ** q
            worst = max(worst, abs(gmpy2.mpfr(float(h)) + gmpy2.mpfr(float(low)) - value))
    return worst


def test_exp2_sum_fast_error_bound():
    """explog64.exp2_sum_fast: 2^(yh + yl) = (h + low) 2^q within 2^-69.2
    absolutely (argued in explog64.py, where the rounding test's err =
    2^-67 assumes it).  Arguments: uniform over the range, the largest
    reduced arguments (odd multiples of 2^-9, halfway between two k/256),
    small ones and the ends, each with yl = 0 (exp2) and with low words of
    both signs up to 2^-42 (exp, sigmoid)."""
    rng = np.random.Generator(np.random.PCG64(9))
    halves = (2 * rng.integers(-2**18, 2**18, 1500) + 1) * 2.0**-9
    yh = np.concatenate([rng.uniform(-1100, 1100, 2000), halves[np.abs(halves) <= 1100],
                         rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-80, 0, 500)),
                         [0.0, -0.0, 1100.0, -1100.0, 1023.9, -1021.9, 5e-324]])
    yl = rng.uniform(-1, 1, yh.size) * 2.0**-42 * (rng.random(yh.size) < 0.5)
    worst = exp2_sum_worst_error(exp2_sum_fast, lambda a, b: gmpy2.exp2(a + b), zip(yh, yl))
    assert worst < gmpy2.mpfr(2) ** -69.2
    assert worst > gmpy2.mpfr(2) ** -76  # the bound is not vacuous: the errors come near it
    for e in range(-1021, 1024):
        assert exp2_fast64(np.float64(e)) == (2.0**e, True), e


def test_exp_by_exp2_fast_error_bound():
    """explog64.exp_by_exp2_fast: e^x = (h + low) 2^q within 2^-69.2
    absolutely, for |x| <= 746 (x log2(e) carries 2^-94.9 of its own).
    Arguments: uniform over the range, those whose x log2(e) falls halfway
    between two k/256, small ones and the ends."""
    rng = np.random.Generator(np.random.PCG64(10))
    step = float(gmpy2.log(2)) / 256
    halves = (rng.integers(-2**18, 2**18, 1500) + 0.5) * step
    xs = np.concatenate([rng.uniform(-746, 746, 2000), halves[np.abs(halves) <= 746],
                         rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-80, 0, 500)),
                         [0.0, -0.0, 746.0, -746.0, 709.7, -708.3, -700.0, 5e-324]])
    worst = exp2_sum_worst_error(exp_by_exp2_fast, gmpy2.exp, ((x,) for x in xs))
    assert worst < gmpy2.mpfr(2) ** -69.2


def test_sigmoid_eval_fast64_error_bound():
    """sigmoid.sigmoid_eval_fast64: sigmoid(x) = (vh + vl) 2^-q within 2^-68.99
    relative (argued in sigmoid.py, where the rounding test's err = 2^-67 vh
    assumes it), vh in [2^-59, 1.01] and |vl| < 2^-51.9 vh.  Arguments:
    uniform over [-700, 40], those whose -x log2(e) falls halfway between two
    k/256, small ones of both signs (where 2^-q and h change order), the
    ends; and the decided results against MPFR's."""
    rng = np.random.Generator(np.random.PCG64(14))
    step = float(gmpy2.log(2)) / 256
    halves = (rng.integers(-2**18, 2**18, 1500) + 0.5) * step
    xs = np.concatenate([rng.uniform(-700, 40, 2000), halves[(halves >= -700) & (halves <= 40)],
                         rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-60, 3, 500)),
                         [0.0, -0.0, 40.0, -700.0, np.log(2), -np.log(2), 5e-324]])

    def exact(x):
        return 1 / (1 + gmpy2.exp(-x))

    def eval_scaled(x):
        vh, vl, qf = sigmoid_eval_fast64(x)
        assert 2.0**-59 <= vh <= 1.01 and abs(vl) < 2.0**-51.9 * vh, x
        return vh, vl, -(int(qf) >> 52)

    worst = worst_relative_error(eval_scaled, exact, xs)
    assert worst < gmpy2.mpfr(2) ** -68.99
    assert worst > gmpy2.mpfr(2) ** -76  # the bound is not vacuous: the errors come near it
    undecided = 0
    with gmpy2.context(precision=300):
        for x in xs:
            r, ok = sigmoid_fast64(np.float64(x))
            undecided += not ok
            assert not ok or r == float(exact(gmpy2.mpfr(float(x)))), x  # float(): rounded to nearest
    assert undecided <= xs.size / 1024


def test_rsqrt_dd_error_bound():
    """rsqrt.rsqrt_dd: y0 + c within 2^-101.5 of xm^(-1/2) relatively, |c| <
    2^-51.4 y0, for xm in [1/2, 4) (argued in rsqrt.py; the bracket of the
    fast path and of the exact decision, 2^-98, assumes it), and y0 =
    RN(RN(sqrt(xm)) RN(1/xm)) within 2^-51.41 (the first of its steps).
    Arguments: uniform over [1/2, 4), the ends of the three binades and
    their neighbours."""
    rng = np.random.Generator(np.random.PCG64(18))
    ends = np.array([0.5, 1.0, 2.0, 4.0])
    xs = np.concatenate([rng.uniform(0.5, 4.0, 3000), ends[:3], np.nextafter(ends[:3], 8.0),
                         np.nextafter(ends[1:], 0.0)])
    worst_y0 = worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for xm in xs:
            y0, c = rsqrt_dd(np.float64(xm))
            assert abs(c) < 2.0**-51.4 * y0, xm
            v = gmpy2.rec_sqrt(gmpy2.mpfr(float(xm)))
            worst_y0 = max(worst_y0, abs(gmpy2.mpfr(float(y0)) / v - 1))
            worst = max(worst, abs((gmpy2.mpfr(float(y0)) + gmpy2.mpfr(float(c))) / v - 1))
    assert worst_y0 < gmpy2.mpfr(2) ** -51.41
    assert worst < gmpy2.mpfr(2) ** -101.5
    assert worst > gmpy2.mpfr(2) ** -110  # the bound is not vacuous: the errors come near it


def test_exp10_dd_fast_error_bound():
    """exp10.exp10_dd_fast: relative error < 2^-80 (argued in exp10.py; the
    rounding test of exp10_fast64 assumes 2^-78.1), with LN10_H + LN10_L within
    2^-106.3 of ln10 (the analysis uses it).  Arguments: uniform over the
    range, small ones, and those with the largest reduced argument (halfway
    between two k log10(2)/256).  The powers 10^0 .. 10^22 (doubles) are
    decided as themselves; 10^23, an exact midpoint, is left undecided."""
    with gmpy2.context(precision=300):
        split = abs(gmpy2.log(10) - gmpy2.mpfr(float(LN10_H)) - gmpy2.mpfr(float(LN10_L)))
        assert split < gmpy2.mpfr(2) ** -106.3
    rng = np.random.Generator(np.random.PCG64(10))
    step = float(gmpy2.log10(2)) / 256
    halves = (rng.integers(-2**16, 2**16, 1000) + 0.5) * step
    xs = np.concatenate([rng.uniform(-324.0, 324.0, 2000), rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-80, 0, 500)),
                         halves[np.abs(halves) < 324], [0.0, -0.0, 324.0, -324.0, 308.2, -307.6, 5e-324]])
    assert worst_relative_error(exp10_dd_fast, gmpy2.exp10, xs) < gmpy2.mpfr(2) ** -80
    for n in range(23):
        assert exp10_fast64(np.float64(n)) == (float(10**n), True), n
    assert not exp10_fast64(np.float64(23))[1]


def test_exp_pm_fast_error_bound():
    """explog64.exp_pm_fast (the fast paths of cosh and sinh): e^a + e^-a
    within 2^-78.09 relative, e^a - e^-a within 2^-78.09 coth(a) + 2^-99
    (argued in explog64.py; cosh_fast64 and sinh_fast64 assume them).
    Arguments: uniform up to 710.47, small ones, and those with the largest
    reduced argument of exp_dd_fast.  cosh(0) is decided as exactly 1."""
    from softrep.algorithms.math.cosh import cosh_fast64

    rng = np.random.Generator(np.random.PCG64(11))
    step = float(gmpy2.log(2)) / 256
    halves = (rng.integers(0, 2**18, 600) + 0.5) * step
    xs = np.concatenate([rng.uniform(0, 710.47, 1500), np.exp2(rng.uniform(-40, 3, 500)),
                         halves[halves <= 710.47], [0.0, 2.0**-5, 710.47, 5e-324]])
    worst_sum = worst_diff = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for a in xs:
            a = np.float64(a)
            big, small = gmpy2.exp(gmpy2.mpfr(float(a))), gmpy2.exp(-gmpy2.mpfr(float(a)))
            h, l, q = exp_pm_fast(a, False)
            worst_sum = max(worst_sum, relative_error(h, l, q, big + small))
            if a >= 2.0**-5:
                h, l, q = exp_pm_fast(a, True)
                coth = (big + small) / (big - small)
                worst_diff = max(worst_diff, (relative_error(h, l, q, big - small) - gmpy2.mpfr(2) ** -99) / coth)
        assert worst_sum < gmpy2.mpfr(2) ** -78.09
        assert worst_diff < gmpy2.mpfr(2) ** -78.09
    assert cosh_fast64(np.float64(0.0)) == (1.0, True)


def test_expm1_fast_error_bounds():
    """expm1.expm1_series_fast (relative error < 2^-66.6 for 2^-54 <= |x| <
    2^-7) and expm1.expm1_exp_fast (< 2^-71.08 for 2^-7 <= |x|, -38 <= x <=
    709.7), argued in expm1.py; the rounding tests of expm1_fast64 assume
    them.  The exp-based bound is weakest at the smallest |x| (e^x - 1
    cancels), so those are sampled densely, with the largest reduced
    arguments of exp_dd_fast."""
    from softrep.algorithms.math.expm1 import expm1_exp_fast, expm1_series_fast

    rng = np.random.Generator(np.random.PCG64(12))
    sign = rng.choice([-1, 1], 2000)
    small = np.concatenate([np.exp2(rng.uniform(-54, -7, 2000)) * sign,
                            [2.0**-54, -2.0**-54, np.nextafter(2.0**-7, 0), -np.nextafter(2.0**-7, 0)]])
    step = float(gmpy2.log(2)) / 256
    halves = (rng.integers(-38 * 256 // 6, 2**18, 1000) + 0.5) * step
    large = np.concatenate([np.exp2(rng.uniform(-7, 2, 2000)) * sign, rng.uniform(-38, 709.7, 1000),
                            halves[(np.abs(halves) >= 2.0**-7) & (halves >= -38) & (halves <= 709.7)],
                            [2.0**-7, -2.0**-7, -38.0, 709.7]])

    def as_scaled(fast):
        return lambda x: fast(x) + (0,)

    assert worst_relative_error(as_scaled(expm1_series_fast), gmpy2.expm1, small) < gmpy2.mpfr(2) ** -66.6
    assert worst_relative_error(as_scaled(expm1_exp_fast), gmpy2.expm1, large) < gmpy2.mpfr(2) ** -71.08


def test_log1p_fast_error_bounds():
    """log1p.log1p_value_fast: the series on x itself (< 2^-67.8 relative for
    2^-54 <= |x| < 2^-9) and log(1 + x) (< 2^-66.99 for |x| >= 2^-9, -1 < x),
    argued in log1p.py; the rounding tests of log1p_fast64 assume them.
    Arguments: log-uniform near 0, near -1 (1 + x exact), just beyond 2^-9
    (the smallest results of the second), and log-uniform up to DBL_MAX,
    where 1 + x rounds."""
    from softrep.algorithms.math.log1p import log1p_value_fast

    rng = np.random.Generator(np.random.PCG64(13))
    sign = rng.choice([-1, 1], 2000)
    small = np.concatenate([np.exp2(rng.uniform(-54, -9, 2000)) * sign,
                            [2.0**-54, -2.0**-54, np.nextafter(2.0**-9, 0), -np.nextafter(2.0**-9, 0)]])
    large = np.concatenate([np.exp2(rng.uniform(-9, -1, 1000)) * sign[:1000], -1 + np.exp2(rng.uniform(-53, -1, 500)),
                            np.exp2(rng.uniform(-1, 1024, 1000)), rng.uniform(-0.9, 10, 500),
                            [2.0**-9, -2.0**-9, -1 + 2.0**-53, 1.7976931348623157e308, 2.0**53, 2.0**53 + 2]])

    def as_scaled(near):
        return lambda x: log1p_value_fast(x, near) + (0,)

    assert worst_relative_error(as_scaled(True), gmpy2.log1p, small) < gmpy2.mpfr(2) ** -67.8
    assert worst_relative_error(as_scaled(False), gmpy2.log1p, large) < gmpy2.mpfr(2) ** -66.99


def test_hypot_fast_error_bound():
    """hypot.hypot_eval_fast64: sqrt(a^2 + b^2) within 2^-102 relatively for
    2^-1000 <= a <= 2^1000, 2^-28 a < b <= a (argued in hypot.py; the
    rounding test of hypot_fast64 assumes it).  Pythagorean triples are
    decided as the exact result."""
    from softrep.algorithms.math.hypot import hypot_eval_fast64, hypot_fast64

    rng = np.random.Generator(np.random.PCG64(15))
    a = np.exp2(rng.uniform(-1000, 1000, 3000))
    b = a * np.exp2(rng.uniform(-27.9, 0, 3000))
    b[:300] = a[:300] * rng.uniform(0.999, 1.0, 300)  # b near a: the largest sum
    a[-2:], b[-2:] = [2.0**1000, 2.0**-1000], [2.0**1000, 2.0**-1000]
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for x, y in zip(a, b):
            h, l, scale = hypot_eval_fast64(np.float64(x), np.float64(y))
            exact = gmpy2.sqrt(gmpy2.mpfr(float(x)) ** 2 + gmpy2.mpfr(float(y)) ** 2)
            got = (gmpy2.mpfr(float(h)) + gmpy2.mpfr(float(l))) * gmpy2.mpfr(float(scale))
            worst = max(worst, abs((got - exact) / exact))
        assert worst < gmpy2.mpfr(2) ** -102
    for x, y, z in ((3.0, 4.0, 5.0), (5.0, 12.0, 13.0), (20.0, 21.0, 29.0), (3 * 2.0**-900, 4 * 2.0**-900, 5 * 2.0**-900)):
        assert hypot_fast64(np.float64(x), np.float64(y)) == (z, True)


def test_log_tables():
    """r = m LOG_INV[i] - 1 is exact (LOG_INV a multiple of 2^-9, |r| < 2^-8 on
    the whole interval) and T[i] = -log(LOG_INV[i]) (or -log(2 LOG_INV[i])) to 2^-107."""
    with gmpy2.context(precision=300):
        for i in range(256):
            inv = LOG_INV[i]
            assert inv * 512 == int(inv * 512)
            for m in (1 + i / 256, 1 + (i + 1) / 256):
                assert abs(gmpy2.mpfr(m) * gmpy2.mpfr(float(inv)) - 1) <= gmpy2.mpfr(2) ** -8
            t = -gmpy2.log(gmpy2.mpfr(float(inv)) * (2 if i >= 106 else 1))
            assert abs(gmpy2.mpfr(float(LOG_TH[i])) + gmpy2.mpfr(float(LOG_TL[i])) - t) <= gmpy2.mpfr(2) ** -107
        assert LOG_TH[0] == LOG_TL[0] == LOG_TH[255] == LOG_TL[255] == 0


def test_log_dd_fast_error_bound():
    """explog64.log_dd_fast: relative error < 2^-67.0 (argued in explog64.py; the
    rounding test of log_fast64 assumes it).  Arguments: log-uniform over all
    doubles (subnormals included), near 1 (where the result is log1p(x - 1)),
    and at both ends of every table interval."""
    rng = np.random.Generator(np.random.PCG64(8))
    ends = np.array([1 + i / 256 for i in range(257)])
    xs = np.concatenate([np.exp2(rng.uniform(-1074, 1024, 1500)), 1 + rng.uniform(-2.0**-9, 2.0**-8, 1000),
                         1 + rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-52, -9, 500)),
                         ends, np.nextafter(ends, 0), ends / 2, np.nextafter(ends, 3) * 2.0**-1000,
                         [5e-324, 1.7976931348623157e308, 1 - 2.0**-53, 1 + 2.0**-52]])
    xs = xs[(xs != 1.0) & (xs > 0) & np.isfinite(xs)]
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for x in xs:
            h, l = log_dd_fast(np.float64(x))
            worst = max(worst, relative_error(h, l, 0, gmpy2.log(gmpy2.mpfr(float(x)))))
        assert worst < gmpy2.mpfr(2) ** -67.0
    assert log_dd_fast(np.float64(1.0)) == (0.0, 0.0)


def test_log2_log10_constants_and_error_bound():
    """log.log_times_fast64 (the fast paths of log2 and log10) assumes the
    double-double 1/ln2 and 1/ln10 within 2^-104 and log_dd_fast times them
    (dd_mul) within 2^-66.99 of log2 x and log10 x; both measured here, and
    every power of 2 (log2) and of 10 (log10) decided as the exact integer."""
    from softrep.algorithms.math.core import INV_LN10, INV_LN10_L, INV_LN2, INV_LN2_L, dd_mul
    from softrep.algorithms.math.log import log_times_fast64

    rng = np.random.Generator(np.random.PCG64(10))
    xs = np.concatenate([np.exp2(rng.uniform(-1074, 1024, 1000)), 1 + rng.uniform(-2.0**-9, 2.0**-8, 500),
                         [5e-324, 1.7976931348623157e308, 1 - 2.0**-53, 1 + 2.0**-52, 10.0, 0.1]])
    with gmpy2.context(precision=300):
        for (ch, cl), base in (((INV_LN2, INV_LN2_L), 2), ((INV_LN10, INV_LN10_L), 10)):
            exact_c = 1 / gmpy2.log(gmpy2.mpfr(base))
            assert abs((gmpy2.mpfr(float(ch)) + gmpy2.mpfr(float(cl)) - exact_c) / exact_c) < gmpy2.mpfr(2) ** -104
            worst = gmpy2.mpfr(0)
            for x in xs[(xs != 1.0)]:
                h, l = log_dd_fast(np.float64(x))
                ph, pl = dd_mul(h, l, ch, cl)
                exact = gmpy2.log(gmpy2.mpfr(float(x))) * exact_c
                worst = max(worst, relative_error(ph, pl, 0, exact))
            assert worst < gmpy2.mpfr(2) ** -66.99, base
    for e in range(-1074, 1024):
        assert log_times_fast64(np.float64(2.0) ** e, INV_LN2, INV_LN2_L) == (float(e), True)
    for n in range(0, 23):
        assert log_times_fast64(np.float64(10.0 ** n), INV_LN10, INV_LN10_L) == (float(n), True)


def test_tanh_series_error_bound():
    """tanh.tanh_series_fast: relative error < 2^-77.1 on [2^-27, 2^-6) (argued in
    tanh.py; the rounding test of tanh_fast64 assumes < 2^-73)."""
    rng = np.random.Generator(np.random.PCG64(9))
    xs = np.concatenate([np.exp2(rng.uniform(-27, -6, 2000)), [2.0**-27, np.nextafter(2.0**-6, 0)]])
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        for x in xs:
            h, l = tanh_series_fast(np.float64(x))
            worst = max(worst, relative_error(h, l, 0, gmpy2.tanh(gmpy2.mpfr(float(x)))))
        assert worst < gmpy2.mpfr(2) ** -77.1


def test_tanh_exp_error_bound():
    """tanh.tanh_exp_fast: relative error < 2^-73 on [2^-6, 22] (argued in
    tanh.py; the rounding test of tanh_fast64 assumes it), weakest at the
    smallest a, where e^(2a) - 1 cancels."""
    from softrep.algorithms.math.tanh import tanh_exp_fast

    rng = np.random.Generator(np.random.PCG64(14))
    xs = np.concatenate([np.exp2(rng.uniform(-6, -2, 1500)), rng.uniform(2.0**-6, 22, 1000), [2.0**-6, 22.0]])
    assert worst_relative_error(lambda a: tanh_exp_fast(a) + (0,), gmpy2.tanh, xs) < gmpy2.mpfr(2) ** -73


def test_trig_fast_without_branches_is_trig_fast64():
    """trig64.trig_fast64_cody_waite (sin_fast64, cos_fast64, tan_fast64) runs
    trig_fast64's operations with selects: where it decides, trig_fast64
    decides the same bits, and below 2^20 it decides wherever trig_fast64
    does (Python: the simulator's arithmetic)."""
    rng = np.random.Generator(np.random.PCG64(10))
    xs = np.concatenate([rng.uniform(-10, 10, 80), np.exp2(rng.uniform(-30, 21, 80)) * rng.choice([-1, 1], 80),
                         [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-27, -2.0**-27, 2.0**20, np.nextafter(2.0**20, 0)]])
    for which in (SIN, COS, TAN):
        for x in xs.astype(np.float64):
            r1, ok1 = trig_fast64(x, which)
            r2, ok2 = trig_fast64_cody_waite(x, which)
            assert ok2 == (ok1 and (abs(x) < 2.0**20 or not np.isfinite(x))), (which, x)
            if ok2:
                assert np.float64(r2).view(np.uint64) == np.float64(r1).view(np.uint64) or np.isnan(r1) and np.isnan(r2)


def test_rounded_to_integer_from_bits():
    """trig64.rounded_to_integer: y rounded to the nearest integer, ties to
    even, as a double and as the int64 read from y + 1.5 2^52's bit pattern,
    for |y| < 2^51 of both signs: halves, near-integers, small and large."""
    rng = np.random.Generator(np.random.PCG64(19))
    ys = np.concatenate([rng.uniform(-2.0**20, 2.0**20, 2000), rng.integers(-2**12, 2**12, 500) + 0.5,
                         rng.uniform(-1, 1, 500) * np.exp2(rng.integers(-60, 51, 500)),
                         [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.0**51 - 1, -(2.0**51 - 1), np.nextafter(0.5, 0)]])
    for y in ys:
        n, ni = rounded_to_integer(np.float64(y))
        assert n == np.rint(y) and ni == int(np.rint(y)), y


def test_cbrt_reduction_and_first_approximation():
    """cbrt.cbrt_eval_fast64's reduction: floor(t/3) = (t * 43691) >> 17 on the
    whole range t = E + 1020 of the normal biased exponents E; the cubic fit
    of f^(1/3) within 2^-13.7 relatively on [1, 2] (the analysis in cbrt.py
    starts from it; exact arithmetic on a dense grid, both ends included)."""
    from softrep.algorithms.math.cbrt import CBRT_C0, CBRT_C1, CBRT_C2, CBRT_C3

    t = np.arange(1 + 1020, 2046 + 1021, dtype=np.uint64)
    assert np.array_equal((t * np.uint64(43691)) >> np.uint64(17), t // np.uint64(3))
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=200):
        cs = [gmpy2.mpfr(float(c)) for c in (CBRT_C0, CBRT_C1, CBRT_C2, CBRT_C3)]
        for i in range(20001):
            f = gmpy2.mpfr(1) + gmpy2.mpfr(i) / 20000
            y = cs[0] + f * (cs[1] + f * (cs[2] + f * cs[3]))
            worst = max(worst, abs(y / gmpy2.cbrt(f) - 1))
        assert worst < gmpy2.mpfr(2) ** -13.7


def test_cbrt_eval_fast_error_bound():
    """cbrt.cbrt_eval_fast64: relative error < 2^-88 (argued in cbrt.py; the
    rounding test of cbrt_fast64 assumes it).  Arguments: log-uniform over
    all finite doubles of both signs (subnormals, scaled by 2^54, included),
    both ends of every binade (so of every residue of the exponent mod 3),
    exact cubes and their neighbours.  Decisions: the specials as themselves,
    two arguments whose cube root lies within 2^-100 of a midpoint undecided
    (and cbrt_f64 rounds them as MPFR does), the rest of the sample decided
    as MPFR rounds it."""
    from softrep.algorithms.math.cbrt import cbrt_eval_fast64, cbrt_f64, cbrt_fast64

    rng = np.random.Generator(np.random.PCG64(12))
    ends = np.array([2.0**e for e in range(-1022, 1024)] + [np.nextafter(2.0**e, 0) for e in range(-1021, 1024)])
    cubes = np.arange(1, 2**17, 97, dtype=np.float64) ** 3
    xs = np.concatenate([np.exp2(rng.uniform(-1074, 1024, 3000)), ends[::7], ends[1::11], cubes,
                         np.nextafter(cubes, 0), np.nextafter(cubes, np.inf),
                         [5e-324, np.nextafter(2.0**-1022, 0), 2.0**-1022, 1.7976931348623157e308]])
    xs = xs[xs > 0]
    xs = xs * rng.choice([-1, 1], xs.size)
    assert worst_relative_error(cbrt_eval_fast64, lambda v: gmpy2.cbrt(abs(v)), xs) < gmpy2.mpfr(2) ** -88
    with gmpy2.context(gmpy2.ieee(64)):
        for x in np.concatenate([xs[:2000], xs[-4:]]):
            r, ok = cbrt_fast64(np.float64(x))
            assert ok and r == float(gmpy2.cbrt(gmpy2.mpfr(float(x)))), x
    for x in (0.0, -0.0, np.inf, -np.inf):
        r, ok = cbrt_fast64(np.float64(x))
        assert ok and np.float64(r).view(np.uint64) == np.float64(x).view(np.uint64)
    assert cbrt_fast64(np.float64(np.nan))[1] and np.isnan(cbrt_fast64(np.float64(np.nan))[0])
    for x in (float.fromhex("0x1.9b78223aa307cp+1"), float.fromhex("0x1.a202bfc89ddffp+2")):
        assert not cbrt_fast64(np.float64(x))[1]
        with gmpy2.context(gmpy2.ieee(64)):
            assert cbrt_f64(np.float64(x)) == float(gmpy2.cbrt(gmpy2.mpfr(x))), x


def test_atan_table_256():
    """atan.ATAN256_H + ATAN256_L within 2^-106 of atan(j/256), relatively (the
    analysis of atan_eval_fast64 uses it)."""
    from softrep.algorithms.math.atan import ATAN256_H, ATAN256_L

    assert ATAN256_H[0] == ATAN256_L[0] == 0
    with gmpy2.context(precision=300):
        for j in range(1, 257):
            v = gmpy2.atan(gmpy2.mpfr(j) / 256)
            err = abs((gmpy2.mpfr(float(ATAN256_H[j])) + gmpy2.mpfr(float(ATAN256_L[j])) - v) / v)
            assert err < gmpy2.mpfr(2) ** -106, j


def test_atan_eval_fast_error_bound():
    """atan.atan_eval_fast64: relative error < 2^-69.98 (argued in atan.py; the
    rounding test of atan_fast64 assumes it).  Arguments: log-uniform over
    2^-27 < |x| < 2^54 (both signs), the table points j/256, the points
    halfway between them (the largest reduced argument), their images under
    1/x, their neighbours, both sides of 1 and of 512 (where j = 0 begins for
    1/x).  Decisions: the specials, and the sample decided as MPFR rounds it,
    with at most one argument in 2^10 undecided."""
    from softrep.algorithms.math.atan import atan_eval_fast64, atan_fast64

    rng = np.random.Generator(np.random.PCG64(13))
    points = np.concatenate([np.arange(1, 257) / 256, (np.arange(0, 256) + 0.5) / 256])
    points = np.concatenate([points, 1 / points])
    xs = np.concatenate([np.exp2(rng.uniform(-26.9, 53.9, 3000)), points, np.nextafter(points, 0),
                         np.nextafter(points, np.inf), 1 + rng.uniform(-2.0**-8, 2.0**-8, 300),
                         512 + rng.uniform(-8, 8, 100), [np.nextafter(2.0**-27, 1), np.nextafter(2.0**54, 0)]])
    xs = xs * rng.choice([-1, 1], xs.size)
    assert worst_relative_error(atan_eval_fast64, lambda v: gmpy2.atan(abs(v)), xs) < gmpy2.mpfr(2) ** -69.98
    undecided = 0
    with gmpy2.context(gmpy2.ieee(64)):
        for x in xs:
            r, ok = atan_fast64(np.float64(x))
            undecided += not ok
            assert not ok or r == float(gmpy2.atan(gmpy2.mpfr(float(x)))), x
    assert undecided <= xs.size / 1024
    for x, want in ((0.0, 0.0), (-0.0, -0.0), (2.0**-27, 2.0**-27), (-5e-324, -5e-324), (np.inf, np.pi / 2),
                    (-np.inf, -np.pi / 2), (2.0**54, np.pi / 2), (-1e300, -np.pi / 2)):
        r, ok = atan_fast64(np.float64(x))
        assert ok and np.float64(r).view(np.uint64) == np.float64(want).view(np.uint64), x
    assert atan_fast64(np.float64(np.nan))[1] and np.isnan(atan_fast64(np.float64(np.nan))[0])


LAUNCH_CASES = {
    # name: (a uniform range that the fast path evaluates, a range it leaves undecided or is weakest in)
    "exp": ((-700.0, 700.0), (-745.2, -708.3)),
    "exp2": ((-1020.0, 1020.0), (-1075.0, -1021.9)),  # subnormal results: the double-double path
    "exp10": ((-300.0, 300.0), (-323.6, -307.6)),
    "cosh": ((-700.0, 700.0), (710.47, 710.48)),  # nearly overflowing results: the double-double path
    "sinh": ((-700.0, 700.0), (2.0**-26, 2.0**-5)),  # the series
    "tanh": ((-20.0, 20.0), (2.0**-27, 2.0**-6)),  # the series
    "sigmoid": ((-700.0, 40.0), (-745.2, -700.0)),
    "expm1": ((-38.0, 709.7), (2.0**-54, 2.0**-7)),  # the series (rounding test 2^-64)
    "log1p": ((-0.999, 8.0), (2.0**-54, 2.0**-9)),  # the series (rounding test 2^-64)
    "sin": ((-10.0, 10.0), (2.0**20, 2.0**40)),  # Payne-Hanek
    "cos": ((-10.0, 10.0), (2.0**20, 2.0**40)),
    "tan": ((-10.0, 10.0), (2.0**20, 2.0**40)),
    "log": ((-1074.0, 1024.0), (1 - 2.0**-9, 1 + 2.0**-8)),  # log2 of x; none left out: near 1, log1p's series
    "log2": ((-1074.0, 1024.0), (1 - 2.0**-9, 1 + 2.0**-8)),
    "log10": ((-1074.0, 1024.0), (1 - 2.0**-9, 1 + 2.0**-8)),
    "cbrt": ((-1074.0, 1024.0), (0.0, 2.0**-1022)),  # log2 of |x|; subnormals: scaled by 2^54
    "atan": ((-30.0, 60.0), (1 - 2.0**-8, 1 + 2.0**-8)),  # log2 of |x|; around 1 the reduction turns to 1/x
    "erf": ((-6.5, 6.5), (0.0, 2.0**-1022)),  # subnormal arguments: the double-double path
    "erfc": ((-6.5, 26.5), (26.5, 27.25)),  # results near and below 2^-1022: rounded onto the subnormal grid
    "rsqrt": ((-1074.0, 1024.0), (0.0, 2.0**-1022)),  # log2 of x; subnormals: scaled by 2^54
}
# two-argument functions: (the range of both arguments, a range of the second that the fast path leaves undecided)
LAUNCH_CASES2 = {
    "hypot": ((-100.0, 100.0), (2.0**-1074, 2.0**-1000)),  # the second range: both arguments (a < 2^-1000)
    "pow": ((0.0, 30.0), (2.0**-1074, 2.0**-1000)),  # the second: x subnormal or y below 2^-400 (undecided)
}
LOG2_RANGES = {"log", "log2", "log10", "cbrt", "atan", "rsqrt"}  # the first range is that of log2 |x|


@pytest.mark.parametrize("name", sorted(LAUNCH_CASES))
def test_two_loop_launch_matches_mpfr(name):
    """More than SERIAL_MAX elements (the parallel two-loop schedule), a third of
    them in a range the fast path does not decide (the second loop computes
    them), the specials and the committed hard cases, against MPFR."""
    (lo, hi), (ulo, uhi) = LAUNCH_CASES[name]
    rng = np.random.Generator(np.random.PCG64(3))
    n = SERIAL_MAX + 5000
    main = rng.uniform(lo, hi, 2 * n // 3)
    positive = name in ("log", "log2", "log10", "rsqrt")
    if name in LOG2_RANGES:
        main = np.exp2(main) if positive else np.exp2(main) * rng.choice([-1, 1], main.size)
    sign = 1 if positive else rng.choice([-1, 1], n // 3)
    x = np.concatenate([main, rng.uniform(ulo, uhi, n // 3) * sign,
                        V64.special_inputs(), V64.load_hard_cases_f64(name)[0]])
    x = x[rng.permutation(x.size)]
    got = M.FUNCTIONS[name].op(torch.from_numpy(x)).numpy().view(np.uint64)
    want = V64.reference_bits(name, (x,))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (x[bad[:5]], got[bad[:5]], want[bad[:5]])


@pytest.mark.parametrize("name", sorted(LAUNCH_CASES2))
def test_two_loop_launch_matches_mpfr_two_arguments(name):
    """The two-input decided-first launch (softrep/cpu/launch.py) with more than
    SERIAL_MAX pairs, a third of them undecided by the fast path, the
    specials' pairs and the committed hard cases, against MPFR."""
    (lo, hi), (ulo, uhi) = LAUNCH_CASES2[name]
    rng = np.random.Generator(np.random.PCG64(4))
    n = SERIAL_MAX + 5000
    x = np.concatenate([rng.uniform(lo, hi, 2 * n // 3), rng.uniform(ulo, uhi, n // 3)])
    y = np.concatenate([rng.uniform(lo, hi, 2 * n // 3), rng.uniform(ulo, uhi, n // 3)])
    specials = V64.special_inputs()
    partners = [rng.permutation(specials)] + [np.full(specials.size, v) for v in (0.0, -0.0, np.inf, np.nan, 1.0)]
    sx, sy = np.tile(specials, len(partners)), np.concatenate(partners)
    hx, hy = V64.load_hard_cases_f64(name)
    x, y = np.concatenate([x, sx, hx]), np.concatenate([y, sy, hy])
    order = rng.permutation(x.size)
    x, y = x[order], y[order]
    got = M.FUNCTIONS[name].op(torch.from_numpy(x), torch.from_numpy(y)).numpy().view(np.uint64)
    want = V64.reference_bits(name, (x, y))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (x[bad[:5]], y[bad[:5]], got[bad[:5]], want[bad[:5]])
