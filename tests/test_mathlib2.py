"""Part 2 of the correctly rounded math library: sin, cos, tan, atan, erf, erfc,
rsqrt, cbrt (unary, float32), pow and hypot (binary), gelu.

References are independent of softrep/algorithms/math: MPFR through gmpy2 in the IEEE
binary32 context (precision 24, subnormalize: MPFR's functions are correctly
rounded, so this is the correctly rounded float32 result), and torch for the
gradients.  The exhaustive runs are `python -m softrep verify NAME --exhaustive`
(docs/mathlib.md); here: >= 10^5 random bit patterns per function plus ordinary
values, special values, both ends of every binade, every entry of the
function's exception table and the saved hard cases.
"""

import importlib
import os
import sys

import gmpy2
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import softrep
from softrep.ops.math import FUNCTIONS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import bit_pattern_tensor, check, normal_tensor  # noqa: E402
from references import worst_relative_error  # noqa: E402

UNARY = ["sin", "cos", "tan", "atan", "erf", "erfc", "rsqrt", "cbrt"]
MPFR_NAME = {"rsqrt": "rec_sqrt"}
HARD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mathlib_hard_cases")
NAN_BITS = 0x7FC00000


def _mpfr_unary(name, x):
    x = float(x)
    if name == "rsqrt" and x == 0.0:
        return np.float32(np.copysign(np.inf, x))  # IEEE rSqrt(-0) = -inf (MPFR says +inf)
    with gmpy2.context(gmpy2.ieee(32)):
        r = getattr(gmpy2, MPFR_NAME.get(name, name))(gmpy2.mpfr(x))
    return np.float32(float(r))


def reference_bits(name, xs):
    out = np.empty(xs.size, np.uint32)
    for i, x in enumerate(xs):
        r = _mpfr_unary(name, x)
        out[i] = NAN_BITS if np.isnan(r) else r.view(np.uint32)
    return out


def _mpfr_binary(name, x, y):
    with gmpy2.context(gmpy2.ieee(32)):
        a, b = gmpy2.mpfr(float(x)), gmpy2.mpfr(float(y))
        r = a ** b if name == "pow" else gmpy2.hypot(a, b)
    r = np.float32(float(r))
    return NAN_BITS if np.isnan(r) else int(r.view(np.uint32))


def special_values():
    bits = [0, 1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF]
    for e in range(1, 255):  # both ends of every binade
        bits += [e << 23, (e << 23) | 0x7FFFFF, (e << 23) | 1]
    bits += [b | 0x80000000 for b in bits]
    xs = np.array(bits, np.uint32).view(np.float32)
    more = np.array([np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi, 0.5, 1, 4, 10.25, -4, 3.9, 10.06, 1e30,
                     -1e30, 16, 1.0625, 0.0625], np.float32)
    return np.concatenate([xs, more, np.arange(-200, 201, dtype=np.float32) / 4])


def table_inputs(name):
    module = importlib.import_module(f"softrep.algorithms.math.{name}")
    keys = getattr(module, "_KEYS", np.zeros(0, np.uint32))
    keys = keys[keys != 0xFFFFFFFF]
    return np.concatenate([keys, keys | np.uint32(0x80000000)]).view(np.float32)


def hard_cases(name):
    """(inputs, expected bits) saved by the exhaustive verifier (both signs of |x|
    files of the scan)."""
    path = os.path.join(HARD_DIR, f"{name}.txt")
    if not os.path.exists(path):
        return np.zeros(0, np.float32), np.zeros(0, np.uint32)
    rows = [line.split() for line in open(path) if line.strip() and not line.startswith("#")]
    xs = np.array([int(r[0], 16) for r in rows], np.uint32).view(np.float32)
    ys = np.array([int(r[1], 16) for r in rows], np.uint32)
    return xs, ys


def run_op(name, xs):
    return FUNCTIONS[name].op(torch.from_numpy(np.ascontiguousarray(xs, np.float32))).numpy().view(np.uint32)


@pytest.mark.parametrize("name", UNARY)
def test_unary_against_mpfr(name, backend):
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(1234))
    random_bits = rng.integers(0, 2**32, size=100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ordinary = (rng.standard_normal(20_000) * 4).astype(np.float32)
    xs = np.concatenate([special_values(), table_inputs(name), random_bits, ordinary])
    got = run_op(name, xs)
    want = reference_bits(name, xs)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(xs[i:i + 1].view(np.uint32)[0]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", UNARY)
def test_saved_hard_cases(name, backend):
    backend("cpu")
    xs, want = hard_cases(name)
    assert xs.size > 0, f"no hard cases saved for {name} (run `python -m softrep verify {name} --exhaustive`)"
    got = run_op(name, xs)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(xs[i:i + 1].view(np.uint32)[0]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    sample = xs[:: max(1, xs.size // 200)]  # the files' expected values are themselves MPFR's
    assert np.array_equal(run_op(name, sample), reference_bits(name, sample))


def test_exception_tables_hold_mpfr_values():
    for name in ["sin", "cos", "tan", "atan", "erf", "erfc"]:
        module = importlib.import_module(f"softrep.algorithms.math.{name}")
        keys, values = module._KEYS, module._VALUES
        assert np.all(np.diff(keys.astype(np.int64)) > 0), name  # sorted: binary search
        live = keys != 0xFFFFFFFF
        assert np.array_equal(values[live], reference_bits(name, keys[live].view(np.float32))), name


def _fit_and_horner_factor(coeffs, f, lo, hi, relative, pairs=False):
    """(worst fit error, Horner factor) of the polynomial sum coeffs[k] u^k
    (the coefficients as rounded) against f on a grid of 2001 points of
    [lo, hi], at 120 bits: the fit's error, absolute or relative to f, and
    the factor whose product with 2^-53 bounds the evaluation's roundings
    (to first order), divided by |f(u)| when relative.  `horner`: the sum
    over its steps k of max |u|^k |p_k(u)|, p_k the polynomial of the steps
    from k up.  `horner_pairs` (pairs=True): each step i (even) rounds
    |u|^i |p_i(u)| and its pair c_i + c_(i+1) u rounds |u|^i of itself (the
    top coefficient of an odd count is exact, the top pair is the first
    step), and u^2's rounding moves the j-th power of u^2 by j of itself:
    j |u|^2j times the pair it multiplies."""
    import mpmath

    with mpmath.workprec(120):
        c = [mpmath.mpf(v) for v in coeffs]
        grid = [mpmath.mpf(lo) + (mpmath.mpf(hi) - mpmath.mpf(lo)) * i / 2000 for i in range(2001)]
        scale = (lambda u: abs(f(u))) if relative else (lambda u: 1)
        fit = max(abs(mpmath.polyval(c[::-1], u) - f(u)) / scale(u) for u in grid)
        if not pairs:
            terms = [lambda u, k=k: abs(u) ** k * abs(mpmath.polyval(c[k:][::-1], u)) for k in range(len(c))]
        else:
            n = len(c)
            top = n - 1 if n % 2 else n - 2
            pair = lambda u, i: c[i] + c[i + 1] * u if i + 1 < n else c[i]  # noqa: E731
            steps = [lambda u, i=i: abs(u) ** i * abs(mpmath.polyval(c[i:][::-1], u))
                     for i in range(0, n, 2) if i != n - 1]
            pairs_rounded = [lambda u, i=i: abs(u) ** i * abs(pair(u, i)) for i in range(0, top, 2)]
            square = [lambda u, i=i: (i // 2) * abs(u) ** i * abs(pair(u, i)) for i in range(2, n, 2)]
            terms = steps + pairs_rounded + square
        factor = sum(max(term(u) / scale(u) for u in grid[::10]) for term in terms)
        return float(mpmath.log(fit, 2)), float(factor)


def test_erf_mid_bounds_are_measured():
    # erf_pieces.erf_mid's error bound rests on two measured numbers per
    # piece ([1/2, 2] and [2, 4]): the fit's absolute error with the
    # coefficients as rounded (< 2^-52.4) and the Horner error factor
    # (< 1.75 and < 1.05).
    import mpmath
    from softrep.algorithms.math import erf_pieces as P

    for coeffs, centre, half, factor in ((P.ERF_MID_COEFFS[0], 1.25, 0.75, 1.75), (P.ERF_MID_COEFFS[1], 3.0, 1.0, 1.05)):
        fit, horner = _fit_and_horner_factor(coeffs, lambda d: mpmath.erf(centre + d), -half, half, False)
        assert fit < -52.4 and horner < factor, (centre, fit, horner)


def test_erf_short_bounds_are_measured():
    # erf.erf_short's bound (2^-43.1) rests on: a P(a^2) for a <= 3/2, P
    # within 2^-43.21 of erf(sqrt v)/sqrt v relatively on [0, 9/4] with a
    # horner_pairs factor < 4.1 (relative to P); erf(11/4 + d) on
    # [-5/4, 5/4] within 2^-43.77 absolutely, horner_pairs factor < 2.2.
    import mpmath
    from softrep.algorithms.math.erf import ERF_SHORT_COEFFS

    ratio = lambda v: mpmath.erf(mpmath.sqrt(v)) / mpmath.sqrt(v) if v else 2 / mpmath.sqrt(mpmath.pi)  # noqa: E731
    fit, factor = _fit_and_horner_factor(ERF_SHORT_COEFFS[0], ratio, 0, 2.25, True, pairs=True)
    assert fit < -43.21 and factor < 4.1, (fit, factor)
    fit, factor = _fit_and_horner_factor(ERF_SHORT_COEFFS[1], lambda d: mpmath.erf(2.75 + d), -1.25, 1.25, False,
                                         pairs=True)
    assert fit < -43.77 and factor < 2.2, (fit, factor)


def test_horner_pairs_is_the_polynomial():
    # core.horner_pairs evaluates sum c_i u^i for odd and even counts (its
    # pairs and its top), against exact rational evaluation: within the
    # rounding factor the erf test above measures, for the first eight
    # lengths and for erf's twenty coefficients.
    from fractions import Fraction
    from numba import njit
    from softrep.algorithms.math.core import coefficient_tuple, horner_pairs
    from softrep.algorithms.math.erf import ERF_SHORT_COEFFS

    rng = np.random.default_rng(23)
    cases = [list(rng.uniform(-1, 1, n)) for n in range(1, 9)] + [ERF_SHORT_COEFFS[1]]
    for coeffs in cases:
        evaluate = njit(lambda u, c=coefficient_tuple(coeffs): horner_pairs(c, u))
        for u in rng.uniform(-1.25, 1.25, 50):
            exact = sum(Fraction(c) * Fraction(u) ** i for i, c in enumerate(coeffs))
            scale = sum(abs(Fraction(c)) * abs(Fraction(u)) ** i for i, c in enumerate(coeffs))
            assert abs(Fraction(evaluate(u)) - exact) <= len(coeffs) ** 2 * scale * Fraction(2) ** -53, (coeffs, u)


def test_erf_mid_against_mpfr():
    # erf_mid is claimed within 2^-50.2 (relative) of erf on (1/2, 4], both
    # pieces and their ends, compiled and in Python (the simulator's path).
    from numba import njit
    from softrep.algorithms.math.erf_pieces import erf_mid

    rng = np.random.default_rng(21)
    a = np.concatenate([rng.uniform(0.5, 4.0, 4000), [0.50000006, 1.25, 1.9999999, 2.0, 2.0000002, 3.0, 4.0]])
    a = a.astype(np.float32)
    got = njit(lambda v: np.array([erf_mid(v[i]) for i in range(v.size)]))(a)
    worst = worst_relative_error(got, lambda i: gmpy2.erf(gmpy2.mpfr(float(a[i]))))
    assert worst < -50.2, worst
    assert all(float(erf_mid(x)) == float(y) for x, y in zip(a[:100], got[:100]))


def test_erf_short_against_mpfr():
    # erf_short is claimed within 2^-43.1 (relative) of erf on [0, 4]: both
    # pieces, their ends and the tiny and subnormal arguments of the first,
    # compiled and in Python (the simulator's path).
    from numba import njit
    from softrep.algorithms.math.erf import erf_short

    rng = np.random.default_rng(22)
    ends = [1e-45, 2.0**-126, 2.0**-60, 1e-4, 1.5, 1.5000001, 1.4999999, 2.75, 3.9999998, 4.0]
    a = np.concatenate([rng.uniform(0.0, 4.0, 4000), 2.0 ** rng.uniform(-149, 0.6, 1000), ends]).astype(np.float32)
    a = a[a > 0]
    got = njit(lambda v: np.array([erf_short(v[i]) for i in range(v.size)]))(a)
    worst = worst_relative_error(got, lambda i: gmpy2.erf(gmpy2.mpfr(float(a[i]))))
    assert worst < -43.1, worst
    assert all(float(erf_short(x)) == float(y) for x, y in zip(a[:100], got[:100]))


def test_signs_and_specials(backend):
    backend("cpu")
    f = lambda name, v: run_op(name, np.array([v], np.float32))[0]  # noqa: E731
    neg0, pos0 = 0x80000000, 0
    assert f("sin", -0.0) == neg0 and f("tan", -0.0) == neg0 and f("atan", -0.0) == neg0
    assert f("erf", -0.0) == neg0 and f("cbrt", -0.0) == neg0 and f("sin", 0.0) == pos0
    assert f("rsqrt", -0.0) == 0xFF800000 and f("rsqrt", 0.0) == 0x7F800000 and f("rsqrt", -1.0) == NAN_BITS
    for name in ["sin", "cos", "tan"]:
        assert f(name, np.inf) == NAN_BITS and f(name, -np.inf) == NAN_BITS
    assert f("erfc", -np.inf) == np.float32(2).view(np.uint32) and f("erfc", np.inf) == 0
    assert f("atan", np.inf) == np.float32(np.pi / 2).view(np.uint32)
    assert f("erf", np.nan) == NAN_BITS and f("cbrt", np.float32(-8.0)) == np.float32(-2).view(np.uint32)
    # a signalling-NaN payload comes out canonical
    snan = np.array([0x7F800001], np.uint32).view(np.float32)
    for name in UNARY:
        assert run_op(name, snan)[0] == NAN_BITS, name


# --------------------------------------------------------------------------- pow, hypot

def run_binary(name, xs, ys):
    op = FUNCTIONS[name].op
    x = torch.from_numpy(np.ascontiguousarray(xs, np.float32))
    y = torch.from_numpy(np.ascontiguousarray(ys, np.float32))
    return op(x, y).numpy().view(np.uint32)


def check_binary(name, xs, ys):
    xs, ys = np.asarray(xs, np.float32), np.asarray(ys, np.float32)
    got = run_binary(name, xs, ys)
    want = np.array([_mpfr_binary(name, x, y) for x, y in zip(xs, ys)], np.uint32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(xs[i]), float(ys[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


def binary_hard_cases(name):
    """(xs, ys, expected bits) saved in tests/data/mathlib_hard_cases/<name>.txt."""
    rows = [line.split() for line in open(os.path.join(HARD_DIR, f"{name}.txt"))
            if line.strip() and not line.startswith("#")]
    cols = np.array([[int(v, 16) for v in r[:3]] for r in rows], np.uint32)
    return cols[:, 0].view(np.float32), cols[:, 1].view(np.float32), cols[:, 2]


@pytest.mark.parametrize("name", ["pow", "hypot"])
def test_binary_saved_hard_cases(name, backend):
    """Every saved hard pair (CORE-MATH's worst cases, exact ties, near-midpoint
    searches) gives the saved correctly rounded bits; a sample of those is MPFR's."""
    backend("cpu")
    xs, ys, want = binary_hard_cases(name)
    assert xs.size > 1000
    got = run_binary(name, xs, ys)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(xs[i]), float(ys[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    step = max(1, xs.size // 150)
    check_binary(name, xs[::step], ys[::step])


@pytest.mark.parametrize("name", ["pow", "hypot"])
def test_binary_verifier_sampled(name, backend):
    """`python -m softrep verify pow` / `hypot` on a small sample: special pairs, the
    hard cases, every combination of signs and binades, pairs in range."""
    from softrep.tools import verify as V

    backend("cpu")
    result = V.run(name, sample=5000, seed=7, progress=False, save=False)
    assert result.checked > 300_000
    assert result.proven, V.report(result)


SPECIAL_PAIRS = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
                          2.5, -2.5, 1e-45, -1e-45, 3e38, -3e38, 16777216.0, -16777215.0], np.float32)


@pytest.mark.parametrize("name", ["pow", "hypot"])
def test_binary_special_values(name, backend):
    backend("cpu")
    xs, ys = np.meshgrid(SPECIAL_PAIRS, SPECIAL_PAIRS)
    check_binary(name, xs.ravel(), ys.ravel())


def test_pow_ieee_special_cases(backend):
    backend("cpu")
    nan = np.float32(np.nan)
    f = lambda x, y: run_binary("pow", [x], [y])[0]  # noqa: E731
    one = np.float32(1).view(np.uint32)
    assert f(nan, 0.0) == one and f(nan, -0.0) == one and f(1.0, nan) == one
    assert f(-1.0, np.inf) == one and f(-1.0, -np.inf) == one
    assert f(-0.0, 3.0) == 0x80000000 and f(-0.0, -3.0) == 0xFF800000 and f(-0.0, -2.0) == 0x7F800000
    assert f(-np.inf, 3.0) == 0xFF800000 and f(-np.inf, -3.0) == 0x80000000 and f(-2.0, 0.5) == NAN_BITS
    assert f(-2.0, 3.0) == np.float32(-8).view(np.uint32)


def test_pow_exact_and_midpoint_cases(backend):
    """x^y exactly a float32 or a float32 rounding midpoint (e.g. 4097^2 = 2^24 + 8193)."""
    backend("cpu")
    k = np.arange(1, 5000)
    check_binary("pow", k, np.full(k.size, 2.0))
    check_binary("pow", k[:300], np.full(300, 3.0))
    check_binary("pow", k[:4096] ** 2, np.full(4096, 0.5))
    check_binary("pow", k[:4096] ** 2, np.full(4096, 1.5))
    check_binary("pow", k[:60] ** 4, np.full(60, 0.75))
    check_binary("pow", k[:7] ** 8, np.full(7, 0.125))
    rng = np.random.Generator(np.random.PCG64(7))
    e = rng.integers(-149, 128, 3000).astype(np.float64)
    check_binary("pow", np.exp2(e), rng.integers(-300, 300, 3000) / rng.choice([1, 2, 4, 8, 16], 3000))
    check_binary("pow", [2.0, 0.5, 4.0, 2.0, 0.5], [-150.0, 150.0, -75.0, 128.0, 149.0])


def test_pow_random(backend):
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(8))
    n = 5000
    check_binary("pow", rng.uniform(0.01, 100, n), rng.uniform(-20, 20, n))
    check_binary("pow", 1 + rng.uniform(-1e-3, 1e-3, n), rng.uniform(-1e5, 1e5, n))
    check_binary("pow", rng.uniform(-50, 50, n), rng.integers(-30, 31, n))


def test_hypot_random_and_ties(backend):
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(9))
    bits = rng.integers(0, 2**32, size=(2, 20000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    check_binary("hypot", bits[0], bits[1])
    check_binary("hypot", rng.standard_normal(5000), rng.standard_normal(5000) * 1e-3)
    # Pythagorean triples scaled to 24 bits, subnormal and huge pairs
    m, n = rng.integers(2, 3000, 3000), rng.integers(1, 2000, 3000)
    m, n = np.maximum(m, n + 1), np.minimum(m - 1, n)
    a, b = m * m - n * n, 2 * m * n
    check_binary("hypot", a.astype(np.float64), b.astype(np.float64))
    check_binary("hypot", a * 2.0**-160, b * 2.0**-160)
    check_binary("hypot", np.full(50, 3e38), rng.uniform(0, 3e38, 50))


float32s = st.floats(width=32, allow_nan=True, allow_infinity=True)


@settings(max_examples=400, deadline=None)
@given(float32s, float32s)
def test_pow_hypothesis(x, y):
    check_binary("pow", [x], [y])


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=2.0**-10, max_value=1024.0, width=32), st.floats(min_value=-40.0, max_value=40.0, width=32))
def test_pow_hypothesis_ordinary(x, y):
    check_binary("pow", [x], [y])


@settings(max_examples=400, deadline=None)
@given(float32s, float32s)
def test_hypot_hypothesis(x, y):
    check_binary("hypot", [x], [y])


# --------------------------------------------------------------------------- gelu, gradients, API

def test_gelu_matches_documented_order(backend):
    backend("cpu")
    x = normal_tensor(3, (4096,), scale=3.0)
    E, M = softrep.ops.elementwise, softrep.ops.math
    exact = E.mul(E.mul(x, 0.5), E.add(M.erf(E.mul(x, 0.7071067811865476)), 1.0))
    assert torch.equal(softrep.gelu(x), exact)
    torch.testing.assert_close(softrep.gelu(x), torch.nn.functional.gelu(x), rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(softrep.gelu(x, approximate="tanh"),
                               torch.nn.functional.gelu(x, approximate="tanh"), rtol=2e-6, atol=1e-6)
    with pytest.raises(ValueError, match="approximate"):
        softrep.gelu(x, approximate="fast")
    assert softrep.gelu(torch.empty(0, 3)).shape == (0, 3)


TORCH_FN = {"sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "atan": torch.atan, "erf": torch.erf,
            "erfc": torch.erfc, "rsqrt": torch.rsqrt, "cbrt": lambda x: torch.sign(x) * x.abs() ** (1 / 3)}


@pytest.mark.parametrize("name", UNARY)
def test_gradients_against_torch(name, backend):
    backend("cpu")
    x = normal_tensor(11, (257,), scale=2.0)
    if name in ("rsqrt", "cbrt"):
        x = x.abs() + 0.1
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    g = normal_tensor(12, (257,))
    FUNCTIONS[name].op(a).backward(g)
    TORCH_FN[name](b).backward(g)
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-6)


def test_binary_gradients_against_torch(backend):
    backend("cpu")
    x = normal_tensor(13, (100,)).abs() + 0.5
    y = normal_tensor(14, (100,))
    for ours, theirs in ((softrep.pow, torch.pow), (softrep.hypot, torch.hypot)):
        a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
        c, d = x.clone().requires_grad_(), y.clone().requires_grad_()
        ours(a, b).sum().backward()
        theirs(c, d).sum().backward()
        torch.testing.assert_close(a.grad, c.grad, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(b.grad, d.grad, rtol=1e-5, atol=1e-6)


def test_gelu_gradient_against_torch(backend):
    backend("cpu")
    x = normal_tensor(15, (300,), scale=3.0)
    for approximate in ("none", "tanh"):
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        softrep.gelu(a, approximate=approximate).sum().backward()
        torch.nn.functional.gelu(b, approximate=approximate).sum().backward()
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=2e-6)


def test_api_inputs_untouched_noncontiguous_and_errors(backend):
    backend("cpu")
    x = normal_tensor(16, (8, 6)).t()
    before = x.clone()
    assert torch.equal(softrep.sin(x), softrep.sin(x.contiguous()))
    assert torch.equal(x, before)
    assert softrep.atan(torch.empty(0)).shape == (0,)
    assert torch.equal(softrep.hypot(x, 2.0), softrep.hypot(x, torch.full_like(x, 2.0)))
    with pytest.raises(TypeError, match="argument 'input' has dtype torch.int32"):
        softrep.erf(x.to(torch.int32))
    with pytest.raises(TypeError, match="exponent"):
        softrep.pow(x, torch.ones(1, dtype=torch.float64))


# --------------------------------------------------------------------------- golden vectors, simulator

GOLDEN = "mathlib2.json"


@pytest.mark.parametrize("name", UNARY)
def test_golden_unary(name, backend):
    backend("cpu")
    check(GOLDEN, f"{name}.bits", FUNCTIONS[name].op(bit_pattern_tensor(21, (4096,))))
    check(GOLDEN, f"{name}.normal", FUNCTIONS[name].op(normal_tensor(22, (4096,), scale=4.0)))


def test_golden_binary_and_gelu(backend):
    backend("cpu")
    x, y = bit_pattern_tensor(23, (4096,)), bit_pattern_tensor(24, (4096,))
    check(GOLDEN, "pow.bits", softrep.pow(x, y))
    check(GOLDEN, "hypot.bits", softrep.hypot(x, y))
    a, b = normal_tensor(25, (4096,), scale=3.0).abs(), normal_tensor(26, (4096,), scale=3.0)
    check(GOLDEN, "pow.normal", softrep.pow(a, b))
    check(GOLDEN, "hypot.normal", softrep.hypot(a, b))
    check(GOLDEN, "gelu.none", softrep.gelu(b))
    check(GOLDEN, "gelu.tanh", softrep.gelu(b, approximate="tanh"))


@pytest.mark.simulator
def test_simulator_matches_cpu(monkeypatch):
    """The CUDA kernels (simulator: the primitives' exact Python semantics) give
    the CPU bits, on a tiny sample: special values, table entries, ordinary values."""
    rng = np.random.Generator(np.random.PCG64(31))
    base = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 0.3, -2.5, 7.0, 1e30, -4.5, 10.1], np.float32)
    for name in UNARY:
        xs = np.concatenate([base, table_inputs(name)[:2], (rng.standard_normal(4) * 3).astype(np.float32)])
        t = torch.from_numpy(xs)
        monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
        sim = FUNCTIONS[name].op(t)
        monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
        cpu = FUNCTIONS[name].op(t)
        assert torch.equal(sim.view(torch.int32), cpu.view(torch.int32)), name
    xs = torch.tensor([2.0, -2.0, 4097.0, 0.5, 0.0, 3e38, 1.5], dtype=torch.float32)
    ys = torch.tensor([0.5, 3.0, 2.0, -150.0, -1.0, 2.0, 2.5], dtype=torch.float32)
    for op in (softrep.pow, softrep.hypot):
        monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
        sim = op(xs, ys)
        monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
        cpu = op(xs, ys)
        assert torch.equal(sim.view(torch.int32), cpu.view(torch.int32)), op.__name__
