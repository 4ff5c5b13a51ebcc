"""The correctly rounded float32 math library (part 1: exp, log, sinh/cosh/tanh, sigmoid families).

References are independent of softrep/algorithms/math: the platform libm in float64 with
a stated error bound, and MPFR (gmpy2) wherever that cannot decide
(softrep/tools/verify.py, whose own exact rounding is tested here against numpy).
The exhaustive proofs are `python -m softrep verify FUNC --exhaustive`
(docs/mathlib.md); CI runs the sampled version below.
"""

import hashlib
import math
from fractions import Fraction

import gmpy2
import numba
import numpy as np
import pytest
import torch

import softrep
import softrep.ops.math as M
from softrep.tools import verify as V

from golden import bit_pattern_tensor, check, normal_tensor
from references import worst_relative_error

PART1 = ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sinh", "cosh", "tanh", "sigmoid")
SAMPLE = 100_000


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


# --------------------------------------------------------------------------- the verifier itself


def test_round_to_f32_matches_ieee_conversion():
    """The verifier's exact rational rounding agrees with the hardware double -> float32
    conversion (normal, subnormal, overflow, ties)."""
    rng = np.random.Generator(np.random.PCG64(7))
    d = rng.integers(0, 2**64, size=20000, dtype=np.uint64).view(np.float64)
    d = d[np.isfinite(d)]
    scaled = np.concatenate([
        d, np.ldexp(rng.random(20000) + 1, rng.integers(-160, 130, 20000)) * rng.choice([-1, 1], 20000),
        np.array([2.0**-150, 3 * 2.0**-150, 2.0**-150 * (1 + 2.0**-40), 2.0**128 - 2.0**103,
                  2.0**128 - 2.0**103 - 2.0**70, 1 + 2.0**-24, 1 + 3 * 2.0**-24])])
    for v in scaled:
        with np.errstate(over="ignore"):
            expected = np.float32(v)
        assert bits(V.round_to_f32(Fraction(float(v)))) == bits(expected), v


def test_classify_detects_a_misrounded_output():
    """Flip the last bit of correct results: the verifier must count every one."""
    rng = np.random.Generator(np.random.PCG64(3))
    xs = (rng.standard_normal(5000) * 10).astype(np.float32)
    good = M.exp(torch.from_numpy(xs)).numpy()
    bad = (good.view(np.uint32) ^ np.uint32(1)).view(np.float32)
    assert (V.classify("exp", (xs,), good)[0] == V.MISROUNDED).sum() == 0
    status = V.classify("exp", (xs,), bad)[0]
    assert ((status == V.MISROUNDED) | (status == V.ASK_MPFR)).all()
    result = V.check_inputs("exp", xs[:300])
    assert result.misrounded == 0 and result.proven
    V._kernel_output, real = (lambda *a, **k: bad[:300]), V._kernel_output
    try:
        result = V.check_inputs("exp", xs[:300])
    finally:
        V._kernel_output = real
    assert result.misrounded == 300 and not result.proven


def test_positive_reference_decides_underflow_to_plus_zero():
    """erfc underflows in float64 on [26.55, 256): the verifier answers +0 there without
    MPFR.  MPFR agrees on a sample, and -0 or the smallest subnormal is caught."""
    rng = np.random.Generator(np.random.PCG64(4))
    xs = rng.uniform(26.6, 255.9, 2000).astype(np.float32)
    for x in xs[:20]:
        assert bits(V.mpfr_f32("erfc", x)[0]) == 0
    zeros = np.zeros_like(xs)
    assert (V.classify("erfc", (xs,), zeros)[0] == V.OK).all()
    for wrong in (np.float32(-0.0), np.float32(2.0**-149)):
        status = V.classify("erfc", (xs,), np.full_like(xs, wrong))[0]
        assert (status == V.MISROUNDED).all()


# --------------------------------------------------------------------------- the reference's error bound


def test_reference_errors_recorded_for_every_function():
    """Every function has a measured float64 reference error (libc, machine, input
    count recorded) and a window at least 8 times wider."""
    data = V.load_reference_errors()
    assert data["libc"] and data["machine"]
    assert set(data["functions"]) == set(M.FUNCTIONS)
    for name, entry in data["functions"].items():
        assert entry["inputs"] >= 100_000, name
        assert 0 <= entry["max_ulps"] < 2.0, name  # measured: every reference is within 2 ulps
        assert entry["window_ulps"] >= V.WINDOW_MARGIN * entry["max_ulps"], name
        assert entry["window_ulps"] == V.window_for(entry["max_ulps"]), name


def test_f64_error_ulps():
    assert V.f64_error_ulps(1.0, Fraction(1)) == 0
    assert V.f64_error_ulps(1.0 + 2.0**-52, Fraction(1)) == 1
    assert V.f64_error_ulps(1.0, Fraction(1) + Fraction(1, 2**54)) == 0.25
    assert V.f64_error_ulps(5e-324, Fraction(0)) == 1  # subnormal ulps are 2^-1074
    big = Fraction(2**1024 - 2**970)  # the float64 overflow threshold: inf is its rounding
    assert V.f64_error_ulps(float("inf"), big) == 0
    assert V.f64_error_ulps(float("inf"), big - 1) == 0.5
    assert V.f64_error_ulps(float("-inf"), big) > 2**53  # the wrong sign: -2^1024 against 2^1024
    assert V.f64_error_ulps(float("nan"), float("nan")) == 0
    assert V.f64_error_ulps(0.0, float("nan")) == float("inf")


@numba.njit
def _planted_exp(x):
    # exp with a relative error of 2^-40 (2^12 float64 ulps): far beyond the window
    return math.exp(x) * (1.0 + 2.0**-40)


@numba.njit
def _planted_exp_wrong_at_2(x):
    # exp, except at x = 2 where it is off by 2^-30 relatively: a defect at one input
    return math.exp(x) * (1.0 + 2.0**-30) if x == 2.0 else math.exp(x)


def _rounded(f, xs):
    return np.array([np.float32(f(float(x))) for x in xs], np.float32)


def test_reference_beyond_its_bound_is_detected(monkeypatch):
    """A float64 reference whose error exceeds the window is caught by the spot
    checks against MPFR, and the run is not a proof -- even though the (planted)
    outputs agree with that reference everywhere."""
    rng = np.random.Generator(np.random.PCG64(8))
    xs = (rng.standard_normal(4000) * 10).astype(np.float32)
    planted = V.Reference(_planted_exp, gmpy2.exp, positive=True, description="planted")
    monkeypatch.setitem(V.REFERENCES, "exp", planted)
    outputs = _rounded(_planted_exp, xs)
    monkeypatch.setattr(V, "_kernel_output", lambda *a, **k: outputs)
    result = V.check_inputs("exp", xs)
    assert result.reference_violations and not result.proven
    assert result.reference_max_ulps > 2**11
    assert "REFERENCE VIOLATION" in V.report(result)


def test_reference_wrong_at_one_input_falls_back_to_mpfr(monkeypatch):
    """Where the float64 reference calls a correct output misrounded, MPFR decides:
    no false "misrounded", and the reference is flagged."""
    xs = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    monkeypatch.setitem(V.REFERENCES, "exp", V.Reference(_planted_exp_wrong_at_2, gmpy2.exp, positive=True))
    result = V.check_inputs("exp", xs)
    assert result.misrounded == 0
    assert [v[0] for v in result.reference_violations] == [(0x40000000,)]


def test_overflow_threshold_goes_to_mpfr():
    """A float64 value just above FLT_MAX + ulp/2 rounds to inf within the window
    but is within 2^-20 ulp of the overflow threshold: MPFR must decide it, as it
    decides values near a midpoint."""
    t = float(V._F32_OVERFLOW)
    r = np.array([t * (1 + 2.0**-45), t * (1 - 2.0**-45), t * (1 + 2.0**-30), t * 1.5])
    got = np.array([np.inf, np.float32(3.4028235e38), np.inf, np.inf], np.float32)
    status = V._classify(r, got, 16 * 2.0**-52, 16 * 2.0**-1074, V.HARD_ULPS, False, np.zeros(4))
    # 2^-15 and 2^-16 ulp of FLT_MAX from the threshold: MPFR; 2^-6 ulp and beyond: decided
    assert list(status) == [V.ASK_MPFR, V.ASK_MPFR, V.OK, V.OK]
    # the threshold is a boundary for the saved hard-case distance too
    assert V._midpoint_distance(V._F32_OVERFLOW + 2**80, np.float32(np.inf)) == 2.0**-24
    assert V._midpoint_distance(V._F32_OVERFLOW - 2**80, np.float32(3.4028235e38)) == 2.0**-24


def test_cbrt_reference_is_within_half_an_ulp():
    """numpy's cbrt in Numba is off by up to 2.3 ulps; with the Newton step the
    float64 cbrt reference is correctly rounded on these inputs up to 2^-40 ulp."""
    xs = V.measurement_inputs("cbrt", per_binade=4)[0]
    m = V.measure_reference("cbrt", (xs,))
    assert m["max_ulps"] < 0.5 + 2.0**-40

    @numba.njit
    def plain(x):
        return np.cbrt(x)

    r = V._evaluate1(plain, xs)
    assert max(V.f64_error_ulps(float(r[i]), V.mpfr_decide("cbrt", xs[i])[2]) for i in range(0, xs.size, 7)) > 1


# --------------------------------------------------------------------------- the fast paths' measured bounds


@pytest.mark.parametrize("coeffs_name, log2_bound", [("EXP_COEFFS", -55.8), ("EXP_SHORT_COEFFS", -40.2)])
def test_exp_core_polynomial_bound_is_measured(coeffs_name, log2_bound):
    # core.py's exp_core argues from |p(r) e^-r - 1| < 2^-55.8 on |r| <=
    # EXP_R_MAX for its degree-11 polynomial with the coefficients as
    # rounded, exp_core_short from < 2^-40.2 for its degree-8 one; measured
    # here with mpmath at 120 bits on 20001 points, the ends included (the
    # error curves have 13 and 10 extrema on the interval).
    import mpmath
    from softrep.algorithms.math import core

    coeffs = getattr(core, coeffs_name)
    with mpmath.workprec(120):
        a = mpmath.mpf(core.EXP_R_MAX)
        assert a > mpmath.log(2) / 2 + mpmath.mpf(2) ** -42  # the reduction's |r| fits
        worst = mpmath.mpf(0)
        for i in range(20001):
            r = -a + 2 * a * i / 20000
            p = mpmath.polyval([mpmath.mpf(float(c)) for c in coeffs[::-1]], r)
            worst = max(worst, abs(p * mpmath.exp(-r) - 1))
    assert worst < mpmath.mpf(2) ** log2_bound, float(mpmath.log(worst, 2))


@pytest.mark.parametrize("coeffs_name, log2_bound", [("ATANH_COEFFS", -50.8), ("ATANH_SHORT_COEFFS", -36.4)])
def test_atanh_polynomial_bound_is_measured(coeffs_name, log2_bound):
    # core.py's atanh_series argues from the relative error < 2^-50.8 of its
    # degree-6 polynomial P(w) = 2 (atanh(sqrt w)/sqrt w - 1)/w on [0,
    # ATANH_W_MAX], coefficients as rounded, log_core_short from < 2^-36.4 for
    # its degree-4 one: measured with mpmath at 2001 points, the ends included.
    import mpmath
    from softrep.algorithms.math import core

    coeffs = getattr(core, coeffs_name)
    with mpmath.workprec(120):
        top = mpmath.mpf(core.ATANH_W_MAX)
        assert top > (mpmath.sqrt(2) - 1) ** 2 / (mpmath.sqrt(2) + 1) ** 2  # |s| <= 0.1716 fits
        worst = mpmath.mpf(0)
        for i in range(2001):
            w = top * i / 2000
            exact = mpmath.mpf(2) / 3 if w == 0 else 2 * (mpmath.atanh(mpmath.sqrt(w)) / mpmath.sqrt(w) - 1) / w
            p = mpmath.polyval([mpmath.mpf(float(c)) for c in coeffs[::-1]], w)
            worst = max(worst, abs(p / exact - 1))
    assert worst < mpmath.mpf(2) ** log2_bound, float(mpmath.log(worst, 2))


def test_atanh_series_relative_error_against_mpfr():
    # atanh_series(s) is claimed within 2^-52 of 2 atanh(s) for |s| <= 0.1716
    # (log, log2, log10, log1p and pow's fast paths, and the first step of
    # the float64 log's Newton path, build on it): random s, tiny s and the
    # ends, against MPFR at 200 bits.
    from softrep.algorithms.math.core import atanh_series

    rng = np.random.default_rng(12)
    s = np.concatenate([rng.uniform(-0.1716, 0.1716, 3000), rng.uniform(-1, 1, 300) * 2.0 ** rng.integers(-60, -3, 300),
                        [0.17157287525381, -0.17157287525381]])
    got = numba.njit(lambda v: np.array([atanh_series(v[i]) for i in range(v.size)]))(s)
    worst = worst_relative_error(got, lambda i: 2 * gmpy2.atanh(gmpy2.mpfr(float(s[i]))))
    assert worst < -52, worst


def test_exp_core_relative_error_against_mpfr():
    # exp_core(zh, zl) is claimed within 2^-51.8 of e^(zh + zl) for |zh| < 700
    # (exp, exp2, exp10, pow, sigmoid, sinh, cosh and erfc build on it):
    # random double-double arguments over the whole range, near multiples of
    # ln2/2 (the reduction's extremes) and near 0, against MPFR at 200 bits.
    from softrep.algorithms.math.core import exp_core

    rng = np.random.default_rng(11)
    zh = np.concatenate([rng.uniform(-700, 700, 3000), rng.uniform(-1, 1, 500) * 2.0 ** rng.integers(-60, 0, 500),
                         (rng.integers(-2020, 2020, 500) + 0.5) * math.log(2) / 2 + rng.uniform(-1e-9, 1e-9, 500)])
    zl = zh * rng.uniform(-2.0**-53, 2.0**-53, zh.size)
    run = numba.njit(lambda h, l: np.array([exp_core(h[i], l[i]) for i in range(h.size)]))
    got = run(zh, zl)
    worst = worst_relative_error(got, lambda i: gmpy2.exp(gmpy2.mpfr(float(zh[i])) + gmpy2.mpfr(float(zl[i]))))
    assert worst < -51.8, worst
    # the simulator runs the same source in Python: same bits
    assert all(float(exp_core(np.float64(h), np.float64(l))) == float(y) for h, l, y in zip(zh[:200], zl[:200], got))


def test_expm1_core_relative_error_against_mpfr():
    # expm1_core(z) is claimed within 2^-50 of e^z - 1 for -40 <= z <= 700
    # (the float32 expm1's and tanh's fast paths): random arguments over the
    # range, next to +-ln2/2 (where the reduction's k turns from 0 to +-1 and
    # the polynomial alone gives way to fma(2^k, q, 2^k - 1)), tiny ones, and
    # +-0, which come back with their sign.
    from softrep.algorithms.math.core import expm1_core

    rng = np.random.default_rng(14)
    half = math.log(2) / 2
    edges = half + np.arange(-4, 5) * np.spacing(half)
    z = np.concatenate([rng.uniform(-40, 700, 2000), rng.uniform(-1, 1, 1000),
                        rng.uniform(-1, 1, 500) * 2.0 ** rng.integers(-80, -1, 500),
                        edges, -edges, [-40.0, 700.0, 1e-300, -1e-300]])
    run = numba.njit(lambda v: np.array([expm1_core(v[i]) for i in range(v.size)]))
    got = run(z)
    worst = worst_relative_error(got, lambda i: gmpy2.expm1(gmpy2.mpfr(float(z[i]))))
    assert worst < -50, worst
    zeros = run(np.array([0.0, -0.0]))
    assert zeros[0] == 0 and not np.signbit(zeros[0]) and zeros[1] == 0 and np.signbit(zeros[1])
    assert all(float(expm1_core(np.float64(v))) == float(y) for v, y in zip(z[:200], got))


def test_exp_core_short_relative_error_against_mpfr():
    # exp_core_short(z) is claimed within 2^-40.1 of e^z for |z| <= 128 (the
    # float32 exp's and sigmoid's fast paths, which decide with the window
    # 2^-39): random arguments over the range, near odd multiples of ln2/2
    # (the reduction's extremes), the range's ends and near 0, against MPFR.
    from softrep.algorithms.math.core import exp_core_short

    rng = np.random.default_rng(12)
    z = np.concatenate([rng.uniform(-128, 128, 3000), rng.uniform(-1, 1, 500) * 2.0 ** rng.integers(-60, 0, 500),
                        (rng.integers(-369, 369, 500) + 0.5) * math.log(2) / 2 + rng.uniform(-1e-9, 1e-9, 500),
                        [-128.0, 128.0, -120.0, -104.0, 89.0, 0.0]])
    run = numba.njit(lambda v: np.array([exp_core_short(v[i]) for i in range(v.size)]))
    got = run(z)
    worst = worst_relative_error(got, lambda i: gmpy2.exp(gmpy2.mpfr(float(z[i]))))
    assert worst < -40.1, worst
    assert all(float(exp_core_short(np.float64(v))) == float(y) for v, y in zip(z[:200], got))


@pytest.mark.parametrize("name", ["exp", "exp2", "exp10"])
def test_exp_times_core_relative_error_against_mpfr(name):
    # exp.exp_times_core(x, c) is claimed within 2^-40.07 of e^x (c = 1,
    # -104 <= x <= 89), 2^x (c = LN2_H, -151 <= x <= 128) and 10^x (c =
    # LN10_H, -46 <= x <= 39): the first steps of the float32 exp, exp2 and
    # exp10, which decide with the window 2^-39.  Random float32 over each
    # range, its ends, the integers (exact powers) and tiny arguments,
    # against MPFR.
    from softrep.algorithms.math.core import LN10_H, LN2_H
    from softrep.algorithms.math.exp import exp_times_core

    c, lo, hi, base = {"exp": (1.0, -104.0, 89.0, math.e), "exp2": (LN2_H, -151.0, 128.0, 2),
                       "exp10": (LN10_H, -46.0, 39.0, 10)}[name]
    rng = np.random.default_rng(15)
    x = np.concatenate([rng.uniform(lo, hi, 4000), np.arange(lo, hi + 1), [lo, hi, 2.0**-149, -2.0**-149],
                        rng.uniform(-1, 1, 500) * 2.0 ** rng.integers(-40, 0, 500)]).astype(np.float32)
    run = numba.njit(lambda v: np.array([exp_times_core(v[i], c) for i in range(v.size)]))
    got = run(x)
    power = (lambda v: gmpy2.exp(v)) if name == "exp" else (lambda v: gmpy2.mpfr(base) ** v)
    worst = worst_relative_error(got, lambda i: power(gmpy2.mpfr(float(x[i]))))
    assert worst < -40.07, worst


@pytest.mark.parametrize("name", ["log2", "log10"])
def test_log_times_core_relative_error_against_mpfr(name):
    # log.log_times_core(x, c) is claimed within 2^-42.8 of log2 x (c =
    # INV_LN2) and log10 x (c = INV_LN10) for every positive float32 x other
    # than 1 (where it is +0): random float32 over all binades, next to 1,
    # the powers of two and of ten, and the range's ends, against MPFR.
    from softrep.algorithms.math.core import INV_LN10, INV_LN2
    from softrep.algorithms.math.log import log_times_core

    c, ref = (INV_LN2, gmpy2.log2) if name == "log2" else (INV_LN10, gmpy2.log10)
    rng = np.random.default_rng(16)
    bits = np.concatenate([rng.integers(1, 0x7F800000, 4000), 0x3F800000 + rng.integers(-3000, 3000, 500),
                           [1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF]]).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), 2.0 ** np.arange(-149, 128), 10.0 ** np.arange(-45, 39)]).astype(np.float32)
    x = x[(x != 1) & (x > 0)]
    run = numba.njit(lambda v: np.array([log_times_core(v[i], c) for i in range(v.size)]))
    worst = worst_relative_error(run(x), lambda i: ref(gmpy2.mpfr(float(x[i]))))
    assert worst < -42.8, worst
    one = run(np.array([1.0], np.float32))[0]
    assert one == 0 and not np.signbit(one)


def test_log1p_short_relative_error_against_mpfr():
    # log1p.log1p_short(x) is claimed within 2^-42.9 of log1p(x) for every
    # finite float32 x > -1 (the float32 log1p's first step, window 2^-39):
    # random float32 over (-1, 0) and all positive binades, next to -1, both
    # sides of |x| = 2^-29 (where it switches from x - x^2/2 to log(1 + x)),
    # tiny and subnormal x, and x >= 2^53 (where 1 + x rounds), against MPFR.
    from softrep.algorithms.math.log1p import log1p_short

    rng = np.random.default_rng(18)
    small = 2.0**-29 * np.array([1 - 2.0**-24, 1, 1 + 2.0**-23])
    x = np.concatenate([-rng.uniform(0, 1, 1500), rng.integers(1, 0x7F800000, 2000).astype(np.uint32).view(np.float32),
                        -1 + 2.0**-24 * rng.integers(1, 2000, 300), small, -small, [2.0**53, 3e38, 2.0**-149, -2.0**-149],
                        rng.uniform(-1, 1, 500) * 2.0 ** rng.integers(-60, -20, 500)]).astype(np.float32)
    x = x[(x > -1) & (x != 0) & np.isfinite(x)]
    run = numba.njit(lambda v: np.array([log1p_short(v[i]) for i in range(v.size)]))
    worst = worst_relative_error(run(x), lambda i: gmpy2.log1p(gmpy2.mpfr(float(x[i]))))
    assert worst < -42.9, worst
    zeros = run(np.array([0.0, -0.0], np.float32))
    assert zeros[0] == 0 and not np.signbit(zeros[0]) and np.signbit(zeros[1])


def test_sigmoid_short_relative_error_against_mpfr():
    # sigmoid.sigmoid_short(x) = 1/(1 + exp_core_short(-x)) is claimed within
    # 2^-40 of sigmoid(x) for float32 -120 <= x <= 120 (the float32 sigmoid's
    # first step, window 2^-39), for both signs with one formula: random
    # float32 over the range, tiny ones, the ends and the region of
    # subnormal results, against MPFR.
    from softrep.algorithms.math.sigmoid import sigmoid_short

    rng = np.random.default_rng(20)
    x = np.concatenate([rng.uniform(-120, 120, 3000), rng.uniform(-1, 1, 500) * 2.0 ** rng.integers(-149, 0, 500),
                        rng.uniform(-104, -87, 500), [-120.0, 120.0, 0.0, 17.33, -17.33]]).astype(np.float32)
    run = numba.njit(lambda v: np.array([sigmoid_short(v[i]) for i in range(v.size)]))
    one = gmpy2.mpfr(1)
    worst = worst_relative_error(run(x), lambda i: one / (one + gmpy2.exp(-gmpy2.mpfr(float(x[i])))))
    assert worst < -40, worst


@pytest.mark.parametrize("name, bound", [("sinh", -49.4), ("cosh", -40.09)])
def test_sinh_cosh_first_steps_relative_error_against_mpfr(name, bound):
    # sinh.sinh_by_expm1(a) is claimed within 2^-49.4 of sinh a, and
    # cosh.cosh_short(a) within 2^-40.09 of cosh a, for float32 0 <= a <= 90:
    # the first steps of the float32 sinh (window 2^-46) and cosh (window
    # 2^-39).  Random float32 over the range, tiny and subnormal ones, and the
    # ends, against MPFR.
    from softrep.algorithms.math.cosh import cosh_short
    from softrep.algorithms.math.sinh import sinh_by_expm1

    step, ref = (sinh_by_expm1, gmpy2.sinh) if name == "sinh" else (cosh_short, gmpy2.cosh)
    rng = np.random.default_rng(17)
    a = np.concatenate([rng.uniform(0, 90, 3000), rng.uniform(0, 1, 1000) * 2.0 ** rng.integers(-149, 0, 1000),
                        [90.0, 89.4, 2.0**-149, 2.0**-126, 1.0]]).astype(np.float32)
    a = a[a > 0]
    run = numba.njit(lambda v: np.array([step(v[i]) for i in range(v.size)]))
    worst = worst_relative_error(run(a), lambda i: ref(gmpy2.mpfr(float(a[i]))))
    assert worst < bound, worst


def test_log_core_short_relative_error_against_mpfr():
    # log_core_short(x) is claimed within 2^-42.9 of log x for every positive
    # float32 x (the float32 log's fast path, which decides with the window
    # 2^-39): random float32 over all binades, subnormals included, next to 1
    # (where log x is tiny and e = 0), next to sqrt(2) and sqrt(1/2) (the
    # reduction's switch), and the range's ends, against MPFR.
    from softrep.algorithms.math.core import log_core_short

    rng = np.random.default_rng(13)
    bits = np.concatenate([rng.integers(1, 0x7F800000, 3000), 0x3F800000 + rng.integers(-3000, 3000, 500),
                           0x3FB504F3 + rng.integers(-200, 200, 200), 0x3F3504F3 + rng.integers(-200, 200, 200),
                           [1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800001, 0x3F7FFFFF]]).astype(np.uint32)
    x = bits.view(np.float32).astype(np.float64)
    x = x[x != 1.0]  # log 1 = +0 exactly (checked below); no relative error
    run = numba.njit(lambda v: np.array([log_core_short(v[i]) for i in range(v.size)]))
    got = run(x)
    worst = worst_relative_error(got, lambda i: gmpy2.log(gmpy2.mpfr(float(x[i]))))
    assert worst < -42.9, worst
    one = run(np.array([1.0]))[0]
    assert one == 0 and not np.signbit(one)
    assert all(float(log_core_short(np.float64(v))) == float(y) for v, y in zip(x[:200], got))


def test_log_reduce_splits_every_binade():
    # log_reduce(x) = (e, m), x = 2^e m exactly with SQRT2/2 <= m < SQRT2
    # (SQRT2 the double nearest sqrt(2)), by integer operations on x's bits:
    # against frexp and a comparison with SQRT2, for doubles over every binade
    # (normal: the float64 paths use it too), both sides of SQRT2's
    # significand in each, and the ends, compiled and in Python.
    from softrep.algorithms.math.core import SQRT2, log_reduce

    def expected(x):
        f, e = math.frexp(float(x))  # x = f 2^e, 1/2 <= f < 1
        return (e, f) if 2 * f >= SQRT2 else (e - 1, 2 * f)

    rng = np.random.default_rng(21)
    significand = int(np.float64(SQRT2).view(np.uint64)) & (2**52 - 1)
    near = [(b << 52 | significand) + d for b in (1, 1000, 1022, 1023, 1024, 2046) for d in (-1, 0, 1)]
    xs = np.concatenate([np.exp2(rng.uniform(-1022, 1023.99, 4000)), np.array(near, np.uint64).view(np.float64),
                         [2.0**-1022, np.finfo(np.float64).max, 1.0, 0.5, 2.0, np.nextafter(1.0, 0), 2.0**-150]])
    run = numba.njit(lambda v: [log_reduce(v[i]) for i in range(v.size)])
    for x, (e, m) in zip(xs, run(xs)):
        assert (e, m) == expected(x), x
    for x in xs[::50]:
        assert log_reduce(np.float64(x)) == expected(x), x


# --------------------------------------------------------------------------- output hashes


def test_hash_file_covers_every_function():
    """Every function has a recorded output hash, or is listed as pending (its
    2^32-input hash not computed yet; docs/mathlib.md says which)."""
    data = V.load_hashes()
    hashed, pending = set(data["sha256"]), set(data.get("pending", ()))
    assert hashed | pending == set(M.FUNCTIONS) and not hashed & pending
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in data["sha256"].values())


@pytest.mark.parametrize("name", ["exp", "hypot"])
def test_output_hash_is_sha256_of_the_output_array(name):
    """The chunked digest equals hashlib's digest of the whole little-endian uint32
    output array, in input order, over a small range of `hash_inputs`."""
    lo, hi = 0x3F7F0000, 0x3F7F0000 + 5000
    arity = M.FUNCTIONS[name].arity
    inputs = [torch.from_numpy(a.copy()) for a in V.hash_inputs(arity, lo, hi)]
    out = M.FUNCTIONS[name].op(*inputs).numpy()
    expected = hashlib.sha256(out.astype("<f4").tobytes()).hexdigest()
    assert V.output_sha256(name, lo, hi, chunk=1024) == expected
    assert V.output_sha256(name, lo, hi, chunk=5000) == expected
    assert V.output_sha256(name, lo, hi - 1, chunk=1024) != expected


def test_hash_inputs():
    xs, = V.hash_inputs(1, 2**32 - 3, 2**32)
    assert list(xs.view(np.uint32)) == [2**32 - 3, 2**32 - 2, 2**32 - 1]
    xs, ys = V.hash_inputs(2, 0, 1 << 16)
    assert np.array_equal(xs.view(np.uint32), np.arange(1 << 16, dtype=np.uint32))
    assert np.unique(ys.view(np.uint32)).size == 1 << 16  # distinct: a permutation's image
    assert int(ys[5:6].view(np.uint32)[0]) == (5 * 0x9E3779B1) % 2**32


@pytest.mark.parametrize("name", PART1)
def test_mpfr_reference_agrees_with_gmpy2_ieee_context(name):
    """Ziv's loop + exact rounding gives MPFR's own IEEE-binary32 result."""
    rng = np.random.Generator(np.random.PCG64(11))
    xs = (rng.standard_normal(200) * 4).astype(np.float32)
    fn = getattr(gmpy2, name, None)  # sigmoid has no MPFR function: Ziv path only
    for x in xs:
        got, _ = V.mpfr_f32(name, x)
        if fn is None:
            continue
        with gmpy2.context(gmpy2.ieee(32)):
            exp = np.float32(float(fn(gmpy2.mpfr(float(x)))))
        assert bits(got) == bits(exp) or (np.isnan(got) and np.isnan(exp)), (name, x)


# --------------------------------------------------------------------------- correct rounding


@pytest.mark.parametrize("name", PART1)
def test_sampled_correctly_rounded(name):
    """>= 10^5 random bit patterns, special values, both ends of every binade,
    integers and half-integers, and every saved hard case, bit for bit."""
    result = V.run(name, sample=SAMPLE, seed=2024, progress=False, save=False)
    assert result.checked >= SAMPLE
    assert result.misrounded == 0, V.report(result)


@pytest.mark.parametrize("name", PART1)
def test_ordinary_range_against_mpfr_directly(name):
    """Values of ordinary size, each checked with MPFR (no libm shortcut)."""
    rng = np.random.Generator(np.random.PCG64(5))
    xs = np.concatenate([(rng.standard_normal(400) * 3).astype(np.float32),
                         (rng.random(100) * 2).astype(np.float32),
                         np.float32(2.0) ** rng.integers(-140, 7, 100).astype(np.float32)])
    got = M.FUNCTIONS[name].op(torch.from_numpy(xs)).numpy()
    for x, g in zip(xs, got):
        expected, _ = V.mpfr_f32(name, x)
        if np.isnan(expected):
            assert bits(g) == 0x7FC00000, (name, x)
        else:
            assert bits(g) == bits(expected), (name, x, g, expected)


SPECIAL = {
    # name: [(x, expected)] with exact, well-known values (signed zeros matter)
    "exp": [(0.0, 1.0), (-0.0, 1.0), (np.inf, np.inf), (-np.inf, 0.0), (89.0, np.inf), (-104.0, 0.0)],
    "exp2": [(3.0, 8.0), (-149.0, 2.0**-149), (-150.0, 0.0), (128.0, np.inf), (-np.inf, 0.0), (0.5, np.sqrt(2))],
    "exp10": [(2.0, 100.0), (10.0, 1e10), (0.0, 1.0), (-np.inf, 0.0), (39.0, np.inf)],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (-np.inf, -1.0), (np.inf, np.inf), (-20.0, -1.0)],
    "log": [(1.0, 0.0), (0.0, -np.inf), (-0.0, -np.inf), (-1.0, np.nan), (np.inf, np.inf)],
    "log2": [(8.0, 3.0), (2.0**-149, -149.0), (1.0, 0.0), (0.0, -np.inf), (-np.inf, np.nan)],
    "log10": [(1000.0, 3.0), (1e10, 10.0), (1.0, 0.0), (0.0, -np.inf)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -np.inf), (-2.0, np.nan), (np.inf, np.inf)],
    "sinh": [(0.0, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-np.inf, -np.inf), (-100.0, -np.inf)],
    "cosh": [(0.0, 1.0), (-0.0, 1.0), (-np.inf, np.inf), (100.0, np.inf)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0), (-30.0, -1.0)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (np.inf, 1.0), (-np.inf, 0.0), (-200.0, 0.0)],
}


@pytest.mark.parametrize("name", PART1)
def test_special_values(name):
    xs = np.array([x for x, _ in SPECIAL[name]] + [np.nan, -np.nan], np.float32)
    nan_payload = np.array([0x7FA00001, 0xFFC00123], np.uint32).view(np.float32)
    xs = np.concatenate([xs, nan_payload])
    got = M.FUNCTIONS[name].op(torch.from_numpy(xs)).numpy()
    expected = np.array([e for _, e in SPECIAL[name]] + [np.nan] * 4, np.float32)
    for x, g, e in zip(xs, got, expected):
        if np.isnan(e):
            assert bits(g) == 0x7FC00000, (name, x)
        else:
            assert bits(g) == bits(e), (name, x, g, e)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(M.FUNCTIONS))
def test_nan_inputs_give_the_canonical_nan_through_the_launchers(name, dtype):
    # NaNs with payloads -- the undecided marker among them, and the negative
    # quiet NaN x86 produces -- at the ends of the decided-first launcher's
    # chunks, in a parallel launch and in a serial one: every result is the
    # canonical NaN (a fast path that decides a NaN returns its argument;
    # the launcher hands it to the scalar kernel, which canonicalises it).
    from softrep.cpu.launch import CHUNK

    fn = M.FUNCTIONS[name]
    if dtype == np.float64 and fn.f64 is None:
        pytest.skip(f"{name} has no float64 kernel")
    udtype, canon = (np.uint32, 0x7FC00000) if dtype == np.float32 else (np.uint64, 0x7FF8000000000000)
    payloads = (np.array([0x7FC00001, 0xFFC00000, 0x7FA00001, 0xFFC00123], np.uint32) if dtype == np.float32 else
                np.array([0x7FF8000000000001, 0xFFF8000000000000, 0x7FF4000000000001, 0xFFF8000000000123], np.uint64))
    for n in (3 * CHUNK + 5, 37):
        xs = np.full(n, 0.75, dtype)
        spots = [0, n - 1, min(CHUNK - 1, n - 2), min(CHUNK, n - 3)]
        xs[spots] = payloads.view(dtype)
        args = [torch.from_numpy(xs)] + [torch.full((n,), 1.5, dtype=torch.from_numpy(xs).dtype)] * (fn.arity - 1)
        got = fn.op(*args).numpy().view(udtype)
        assert all(int(g) == canon for g in got[spots]), (name, [hex(int(g)) for g in got[spots]])
        assert not np.isnan(got.view(dtype)[1])


# --------------------------------------------------------------------------- API and autograd


def test_public_names():
    for name in PART1:
        assert getattr(softrep, name) is M.FUNCTIONS[name].op
        assert name in softrep.__all__


@pytest.mark.parametrize("name", sorted(M.FUNCTIONS))
@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float64])
def test_dtype_errors_name_the_dtypes_each_function_takes(name, dtype):
    fn = M.FUNCTIONS[name]
    takes = ("torch.float32" if fn.f64 is None else "torch.float32 or torch.float64") \
        + " or torch.bfloat16 or torch.float16"
    if dtype == torch.float64 and fn.f64 is not None:
        return
    x = torch.ones(3, dtype=dtype)
    with pytest.raises(TypeError, match=f"argument '{fn.arg_names[0]}' has dtype {dtype}; softrep.{name} takes {takes}$"):
        fn.op(*(x,) * fn.arity)


F64_FUNCTIONS = ("exp", "log", "tanh", "sigmoid")


def _mpfr64(name, x):
    """float64 reference: MPFR at 300 bits, then rounded to float64 in binary64's context."""
    with gmpy2.context(precision=300, emin=-(1 << 20), emax=1 << 20):
        v = gmpy2.mpfr(float(x))
        w = 1 / (1 + gmpy2.exp(-v)) if name == "sigmoid" else getattr(gmpy2, name)(v)
    with gmpy2.context(gmpy2.ieee(64)):
        return float(gmpy2.mpfr(w))


@pytest.mark.parametrize("name", F64_FUNCTIONS)
def test_float64_faithful(name):
    """The float64 versions are documented as faithfully rounded: within one ulp of
    MPFR's correctly rounded value (almost always equal to it)."""
    rng = np.random.Generator(np.random.PCG64(12))
    xs = np.concatenate([rng.standard_normal(1500) * 10, rng.standard_normal(300) * 400,
                         np.ldexp(rng.random(200), rng.integers(-1074, 0, 200)),
                         [0.0, -0.0, np.inf, -np.inf, 1.0, -745.0, -740.0, 709.7, 1e-20, -1e-20]])
    if name == "log":
        xs = np.abs(xs)
    got = M.FUNCTIONS[name].op(torch.from_numpy(xs)).numpy()
    for x, g in zip(xs, got):
        e = _mpfr64(name, x)
        if np.isnan(e):
            assert np.isnan(g)
            continue
        if g == e and np.signbit(g) == np.signbit(e):
            continue
        assert np.isfinite(e) and abs(g - e) <= abs(np.nextafter(e, np.inf) - e), (name, x, g, e)


@pytest.mark.parametrize("name", F64_FUNCTIONS)
def test_gradcheck_float64(name):
    x = torch.linspace(0.2, 3, 11, dtype=torch.float64) if name == "log" else \
        torch.linspace(-3, 3, 11, dtype=torch.float64)
    assert torch.autograd.gradcheck(M.FUNCTIONS[name].op, (x.requires_grad_(),))


def test_argument_errors():
    with pytest.raises(TypeError, match="'input'"):
        softrep.log(torch.ones(3, dtype=torch.int32))
    with pytest.raises(TypeError, match="'input'"):
        softrep.log("x")


def test_noncontiguous_zero_element_and_inputs_untouched():
    x = torch.randn(6, 8)
    before = x.clone()
    y = softrep.tanh(x.t())
    assert torch.equal(y, softrep.tanh(x.t().contiguous()))
    assert torch.equal(x, before)
    assert softrep.exp(torch.empty(0, 3)).shape == (0, 3)
    assert softrep.sigmoid(torch.tensor(0.0)).item() == 0.5


@pytest.mark.parametrize("name", PART1)
def test_gradient_matches_torch(name):
    """Backward (softrep ops) against torch's derivative, float32, loose tolerance."""
    torch_fn = {"exp10": lambda t: torch.pow(10.0, t), "sigmoid": torch.sigmoid}.get(name) or getattr(torch, name)
    x = torch.linspace(-3, 3, 97)
    if name in ("log", "log2", "log10"):
        x = torch.linspace(0.1, 5, 97)
    if name == "log1p":
        x = torch.linspace(-0.9, 5, 97)
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    g = torch.randn(97, generator=torch.Generator().manual_seed(0))
    M.FUNCTIONS[name].op(a).backward(g)
    torch_fn(b).backward(g)
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-6)


def test_broadcast_free_grad_is_exact_formula():
    """exp's gradient is exactly mul(g, out), bit for bit."""
    x = torch.randn(50, requires_grad=True)
    y = softrep.exp(x)
    g = torch.randn(50)
    y.backward(g)
    assert torch.equal(x.grad, softrep.mul(g, y.detach()))


# --------------------------------------------------------------------------- golden vectors


@pytest.mark.parametrize("name", PART1)
def test_golden(name):
    op = M.FUNCTIONS[name].op
    check("mathlib.json", f"{name}.bits", op(bit_pattern_tensor(401, (4096,))))
    check("mathlib.json", f"{name}.normal", op(normal_tensor(402, (4096,), scale=8.0)))


# --------------------------------------------------------------------------- simulator


def _sim_inputs(name):
    rng = np.random.Generator(np.random.PCG64(9))
    xs = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-40, 0.5, 20.0, -50.0], np.float32),
          (rng.standard_normal(12) * 5).astype(np.float32),
          rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32).view(np.float32),
          V.load_hard_cases(name)[:3].view(np.float32)]
    return torch.from_numpy(np.concatenate(xs))


@pytest.mark.simulator
@pytest.mark.parametrize("name", PART1)
def test_simulator_matches_cpu(name, backend):
    """The CUDA kernel (simulated; its primitives are exact rational arithmetic)
    gives the CPU kernel's bits, including on hard cases (accurate path)."""
    x = _sim_inputs(name)
    op = M.FUNCTIONS[name].op
    backend("cuda")
    sim = op(x)
    backend("cpu")
    cpu = op(x)
    assert np.array_equal(bits(sim.numpy()), bits(cpu.numpy()))


@pytest.mark.simulator
def test_simulator_float64_matches_cpu(backend):
    x = torch.tensor([0.0, -0.0, 1e-300, 0.5, -3.0, 30.0, -740.0, np.nan], dtype=torch.float64)
    for name in F64_FUNCTIONS:
        xs = x.abs() if name == "log" else x
        backend("cuda")
        sim = M.FUNCTIONS[name].op(xs)
        backend("cpu")
        cpu = M.FUNCTIONS[name].op(xs)
        assert np.array_equal(sim.numpy().view(np.uint64), cpu.numpy().view(np.uint64)), name


@pytest.mark.simulator
def test_simulator_accurate_path():
    """Inputs known to take the double-double path (the rounding test fails)."""
    backend_inputs = {"cosh": np.array([0x39b504f3, 0x39b504f4], np.uint32).view(np.float32)}
    for name, xs in backend_inputs.items():
        got = M.FUNCTIONS[name].op(torch.from_numpy(xs)).numpy()
        for x, g in zip(xs, got):
            expected, _ = V.mpfr_f32(name, x)
            assert bits(g) == bits(expected)


# float32 functions with a first step of their own (<name>_fast), and those
# of them defined for positive arguments only
OWN_FIRST_STEPS = ["exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sinh", "cosh", "tanh", "sigmoid",
                   "sin", "cos", "tan", "atan", "erf", "erfc"]
POSITIVE_ONLY = ("log", "log2", "log10", "log1p")


@pytest.mark.parametrize("name", OWN_FIRST_STEPS)
def test_two_loop_launcher_hands_undecided_inputs_to_the_accurate_path(name):
    # float32 CPU launches of these functions run <name>_fast (branch-free, so
    # the loop vectorises) over every input, then <name>_f32 where the fast
    # path could not decide.  The saved hard cases include such inputs (for
    # exp and sigmoid, whose fast paths decide with a wide window, all of
    # them), mixed here with ordinary ones: the op must still round them
    # correctly (MPFR), and the decided ones too.
    import importlib

    from references import correctly_rounded_f32

    assert M.FUNCTIONS[name].kernel.decided_fast is not None
    fast = getattr(importlib.import_module(f"softrep.algorithms.math.{name}"), f"{name}_fast")
    ordinary = (np.random.Generator(np.random.PCG64(9)).standard_normal(100) * 4).astype(np.float32)
    hard = np.concatenate([V.load_hard_cases(name).view(np.float32)[:400], np.abs(ordinary) if name in POSITIVE_ONLY else ordinary])
    decided = np.array([fast(x)[1] for x in hard])
    assert 0 < np.count_nonzero(~decided) < len(hard)
    got = M.FUNCTIONS[name].op(torch.from_numpy(hard.copy())).numpy()
    want = np.array([correctly_rounded_f32(name, x) for x in hard], dtype=np.float32)
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("name", OWN_FIRST_STEPS)
def test_decided_first_launcher_across_chunks(name):
    """Undecided inputs at the first and last element of launcher chunks, in several
    chunks, among ordinary ones: they and a sample of the others equal the scalar
    kernel's result."""
    import importlib

    from softrep.cpu.launch import CHUNK

    mod = importlib.import_module(f"softrep.algorithms.math.{name}")
    fast, scalar = getattr(mod, f"{name}_fast"), getattr(mod, f"{name}_f32")
    hard = V.load_hard_cases(name).view(np.float32)
    undecided = hard[[not fast(x)[1] for x in hard[:400]] + [False] * (hard.size - min(hard.size, 400))]
    assert undecided.size >= 5
    rng = np.random.Generator(np.random.PCG64(5))
    xs = (rng.standard_normal(3 * CHUNK + 11) * 4).astype(np.float32)
    if name in POSITIVE_ONLY:
        xs = np.abs(xs)
    spots = [0, CHUNK - 1, CHUNK, 2 * CHUNK + 7, xs.size - 1]
    xs[spots] = undecided[:5]
    got = M.FUNCTIONS[name].op(torch.from_numpy(xs)).numpy()
    check = np.unique(np.concatenate([spots, np.arange(0, xs.size, 97)]))  # the scalar kernel runs in Python here
    want = np.array([scalar(x) for x in xs[check]], dtype=np.float32)
    assert np.array_equal(bits(got[check]), bits(want))


@pytest.mark.parametrize("form", ["count", "or"])
@pytest.mark.parametrize("name", ["exp", "log", "sin"])
def test_either_form_of_the_undecided_flag_finishes_the_chunk(monkeypatch, name, form):
    """The launcher's chunk notes whether its first loop left an element
    undecided: a count with 512-bit vectors, an OR without
    (softrep/cpu/launch.py, PENDING_FORMS).  Each form, compiled here whatever
    the host, must hand the marked elements on -- past sin's second step
    (`fast2`) too -- so that they equal the scalar kernel's result."""
    from numba import njit

    import softrep.algorithms.math as AM
    import softrep.cpu.launch as cpu_launch

    none, note = cpu_launch.PENDING_FORMS[form]
    monkeypatch.setattr(cpu_launch, "_NONE_PENDING", none)
    monkeypatch.setattr(cpu_launch, "_note_pending", note)
    k = AM.KERNELS[name]
    chunk = njit(error_model="numpy")(cpu_launch._decided_chunk(k.f32, k.fast, 1, k.fast2).py_func)
    hard = V.load_hard_cases(name).view(np.float32)[:400]
    undecided = hard[[not k.fast(x)[1] for x in hard]]
    assert undecided.size >= 3
    xs = (np.random.Generator(np.random.PCG64(3)).standard_normal(500) * 4).astype(np.float32)
    if name in POSITIVE_ONLY:
        xs = np.abs(xs)
    xs[[0, 250, 499]] = undecided[:3]
    got = np.empty_like(xs)
    chunk(got, xs, 0, xs.size)
    want = np.array([k.f32(x) for x in xs], dtype=np.float32)
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_out_that_is_the_input_gets_the_undecided_elements_right(dtype):
    """The decided-first launcher marks undecided elements in `out` and then
    computes them from the input: with `out` the input itself (exp(x, out=x))
    it must not read its own marks.  The op (its parallel launch) and both
    launcher forms called directly, serial on addresses and parallel on
    arrays, against exp of a separate copy."""
    from numba import njit

    import softrep.cpu.launch as cpu_launch
    from softrep.algorithms.math import exp as E

    fast = E.exp_fast if dtype == np.float32 else E.exp_fast64

    @njit
    def decided(xs, ok):
        for i in range(xs.size):
            ok[i] = fast(xs[i])[1]

    def raw(a):
        return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else np.uint64)

    rng = np.random.Generator(np.random.PCG64(11))
    candidates = (V.load_hard_cases("exp").view(np.float32) if dtype == np.float32
                  else rng.uniform(-700, 700, 1 << 20))
    ok = np.empty(candidates.size, np.bool_)
    decided(candidates, ok)
    undecided = candidates[~ok]
    assert undecided.size >= 3
    x = (rng.standard_normal(1 << 17) * 4).astype(dtype)
    x[::997] = np.resize(undecided, x[::997].size)
    want = softrep.exp(torch.from_numpy(x.copy())).numpy()

    t = torch.from_numpy(x.copy())
    assert softrep.exp(t, out=t) is t
    assert np.array_equal(raw(t.numpy()), raw(want))

    run = cpu_launch.elementwise(M.FUNCTIONS["exp"].kernel, 1)
    assert run.writes_marks
    y = x.copy()
    run(y, y)
    assert np.array_equal(raw(y), raw(want))
    small = x[:4096].copy()
    cpu_launch.launch_serial(run, np.dtype(dtype), small.ctypes.data, [small.ctypes.data], small.size)
    assert np.array_equal(raw(small), raw(want[:4096]))


def test_pow_zero_sign_decided_by_the_sign_rule():
    """pow's float64 zeros are decided by the sign rule (negative iff x < 0 and y an
    odd integer); MPFR agrees, and a zero of the wrong sign is caught."""
    xs = np.array([-0.5, 0.5, -0.5, -0.0, -np.inf, 0.0, -2.0**-100], np.float32)
    ys = np.array([2001, 2001, 2000, 3, -3, 5, 1e20], np.float32)
    want = [V.mpfr_f32("pow", x, y)[0] for x, y in zip(xs, ys)]
    assert [np.signbit(w) for w in want] == [True, False, False, True, True, False, False]
    assert all(w == 0 for w in want)
    right = np.array(want, np.float32)
    assert (V.classify("pow", (xs, ys), right)[0] == V.OK).all()
    assert (V.classify("pow", (xs, ys), -right)[0] == V.MISROUNDED).all()


def test_verify_all_names_what_it_skips(monkeypatch):
    names, skipped = V.plan(sorted(M.FUNCTIONS), exhaustive=False)
    assert names == sorted(M.FUNCTIONS) and not skipped  # every function has a reference
    names, skipped = V.plan(sorted(M.FUNCTIONS), exhaustive=True)
    assert set(skipped) == {"pow", "hypot"} and "two arguments" in skipped["pow"]
    monkeypatch.delitem(V.REFERENCES, "cbrt")
    names, skipped = V.plan(sorted(M.FUNCTIONS), exhaustive=False)
    assert "cbrt" not in names and "no reference" in skipped["cbrt"]


@pytest.mark.parametrize("name", ["log", "sin", "tanh", "erf", "exp", "log2"])
def test_nan_results_of_a_large_input_are_canonical(name):
    """NaN inputs (one with the launcher's undecided payload), domain errors
    and numbers mixed in a tensor large enough for the parallel decided-first
    launcher: every NaN result is the canonical NaN, every number is the
    float32 kernel's result (a NaN the first step decides is stored by the
    marked pass's vector loop, the rest by the kernel)."""
    base = np.array([np.nan, -1.5, np.inf, 2.0, -np.inf, 0.5, 0.0, -0.0], dtype=np.float32)
    x = np.tile(base, 40000)
    x[::7] = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)[0]  # the undecided marker as an input
    x[3::11] = np.array([0xFFF00001], dtype=np.uint32).view(np.float32)[0]  # a signalling NaN
    out = getattr(softrep, name)(torch.from_numpy(x)).numpy()
    nan = np.isnan(out)
    assert (out.view(np.uint32)[nan] == 0x7FC00000).all()
    for v in base[~np.isnan(base)]:
        want = getattr(softrep, name)(torch.tensor([v])).numpy()[0]
        got = out[x.view(np.uint32) == v.view(np.uint32)]
        assert got.size and (got.view(np.uint32) == want.view(np.uint32)).all(), (name, v)
    assert nan[np.isnan(x)].all()
