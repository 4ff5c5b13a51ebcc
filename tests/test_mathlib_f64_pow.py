"""float64 pow: what is particular to it, against MPFR.

tests/test_mathlib_f64.py checks every float64 function the same way
(samples, hard cases, simulator, golden vectors, gradcheck).  Here: the
special values (the float32 rules, in binary64), the exact cases (x^y a
double or a midpoint between doubles, which no rounding test decides), the
near-1 accurate path, and the accurate path on its own (run directly on
inputs the fast path would decide, so that it is exercised far more often
than the ~2^-31 of random pairs that reach it).  MPFR (gmpy2) in a binary64
context returns the correctly rounded double itself: no error window.
"""

import math

import numba
import numpy as np
import pytest
import torch

import softrep
from softrep.algorithms.math.pow import (pow_dd_fast64, pow_eval_fast64, pow_exact64, pow_fast64, pow_near_one64,
                                         pow_positive64)
from softrep.primitives.rounding import fabs
from softrep.tools import verify_f64 as V64

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5,
                    1e-300, 1e300, 5e-324], np.float64)


def bits(a):
    return np.ascontiguousarray(a, np.float64).view(np.uint64)


@numba.njit(cache=True)
def _accurate(x, y, out):
    for i in range(x.size):
        out[i] = pow_positive64(fabs(x[i]), y[i])


@numba.njit(cache=True)
def _exact(x, y, found, out):
    for i in range(x.size):
        found[i], out[i] = pow_exact64(x[i], y[i])


@numba.njit(cache=True)
def _eval_fast(x, y, h, l, q, ph, w):
    for i in range(x.size):
        h[i], l[i], q[i], ph[i], w[i] = pow_eval_fast64(x[i], y[i])


@numba.njit(cache=True)
def _fast(x, y, out, decided, out_dd, decided_dd):
    for i in range(x.size):
        out[i], decided[i] = pow_fast64(x[i], y[i])
        out_dd[i], decided_dd[i] = pow_dd_fast64(x[i], y[i])


@numba.njit(cache=True)
def _near_one(x, y, out, decided):
    for i in range(x.size):
        out[i], decided[i] = pow_near_one64(x[i], y[i], y[i] * math.log(x[i]), 0.0, 0.0)


def test_special_values_follow_the_float32_rules():
    """Every pair of specials (zeros, infinities, NaN, +-1, halves, integers) gives
    MPFR's result, and the same value as the float32 kernel where both formats
    hold the inputs and the result (0, inf, NaN and +-1 with their signs)."""
    x, y = np.repeat(SPECIAL, SPECIAL.size), np.tile(SPECIAL, SPECIAL.size)
    got = softrep.pow(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    assert np.array_equal(bits(got), V64.reference_bits("pow", (x, y)))
    with np.errstate(over="ignore"):
        x32, y32 = x.astype(np.float32), y.astype(np.float32)
    f32 = softrep.pow(torch.from_numpy(x32), torch.from_numpy(y32)).numpy()
    same_inputs = ((x32.astype(np.float64) == x) | np.isnan(x)) & ((y32.astype(np.float64) == y) | np.isnan(y))
    special = same_inputs & (np.isnan(f32) | np.isinf(f32) | (f32 == 0) | (np.abs(f32) == 1))
    assert special.sum() > 150
    assert np.array_equal(bits(got[special]), bits(f32[special].astype(np.float64)))


def _dyadic_cases():
    """Pairs whose x^y is exactly b 2^G, b < 2^54 odd: doubles, midpoints (ties
    to even), subnormal midpoints and the 2^-1075 tie."""
    xs, ys = [], []
    for c, n in ((2**27 - 1, 2), (3, 33), (3, 34), (5, 23), (7, 19), (94906267, 2), (208063, 3), (9741, 4)):
        for k in range(0, 4):
            for e in (0, -40, 300, -560, -1000 // n):
                a = c ** (2**k)
                if a < 2**53 and abs(e * 2**k) <= 1000:
                    xs.append(math.ldexp(float(a), e * 2**k))
                    ys.append(n / 2**k)
    for e, y in ((1.0, -1075.0), (1.0, -1074.0), (2.0, -537.5), (-4.0, -268.75), (1.0, 1023.0), (1.0, 1024.0)):
        xs.append(2.0**e)
        ys.append(y)
    return np.array(xs), np.array(ys)


def test_exact_cases_are_detected_and_rounded_once():
    x, y = _dyadic_cases()
    found = np.zeros(x.size, np.bool_)
    out = np.empty(x.size)
    _exact(x, y, found, out)
    want = V64.reference_bits("pow", (x, y))
    assert found.all()
    assert np.array_equal(bits(out), want)
    assert bits(out)[(x == 2.0) & (y == -1075.0)][0] == 0  # 2^-1075: a tie, to even (+0)
    # the midpoints: (2^27 - 1)^2 has 54 bits; a result off by one ulp is caught
    assert not np.array_equal(bits(out) + np.uint64(1), want)
    got = softrep.pow(torch.from_numpy(-x), torch.from_numpy(y)).numpy()
    assert np.array_equal(bits(got), V64.reference_bits("pow", (-x, y)))
    # not dyadic: a negative power of an odd x, y = 1/3, (2^127)^(3/128)
    found = np.zeros(3, np.bool_)
    _exact(np.array([3.0, 8.0, 2.0**127]), np.array([-2.0, 1 / 3, 2.0**-7 * 3]), found, np.empty(3))
    assert not found.any()


def test_accurate_path_alone_is_correctly_rounded():
    """The triple-double path on inputs of every kind, most of which the fast path
    would have decided: it must give the same bits by itself."""
    rng = np.random.Generator(np.random.PCG64(12))
    x, y = V64.pair_sample("pow", 6000, rng)
    x = np.abs(x)
    want = V64.reference_bits("pow", (x, y))
    w = want.view(np.float64)
    keep = np.isfinite(w) & (w != 0) & (x != 1) & np.isfinite(x) & np.isfinite(y) & (y != 0) & (x != 0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        keep &= np.abs(np.log(x) * y) > 2.0**-58  # the fast path's clamp to +-1 is not in the accurate path
    out = np.empty(int(keep.sum()))
    _accurate(x[keep], y[keep], out)
    assert keep.sum() > 2000
    assert np.array_equal(bits(out), want[keep])


def test_near_one_boundaries_are_decided():
    """x near 1 and y chosen so that x^y lies next to a rounding boundary near 1
    (1 + (j + 1/2) 2^-52 or 1 - (j + 1/2) 2^-53): the near-1 path decides them
    all and MPFR agrees; the committed hard cases hold the closest of these."""
    import gmpy2

    rng = np.random.Generator(np.random.PCG64(3))
    xs, ys = [], []
    with gmpy2.context(precision=200):
        for _ in range(300):
            k = int(rng.integers(1, 2**30))
            x = 1 - k * 2.0**-53 if rng.integers(0, 2) else 1 + k * 2.0**-52
            b = (int(rng.integers(0, 4)) + 0.5) * (2.0**-52 if rng.integers(0, 2) else -2.0**-53)
            y = float(gmpy2.log1p(gmpy2.mpfr(b)) / gmpy2.log(gmpy2.mpfr(x)))
            xs += [x, x, x]
            ys += [y, np.nextafter(y, np.inf), np.nextafter(y, -np.inf)]
    x, y = np.array(xs), np.array(ys)
    out, decided = np.empty(x.size), np.zeros(x.size, np.bool_)
    _near_one(x, y, out, decided)
    want = V64.reference_bits("pow", (x, y))
    assert decided.all()
    assert np.array_equal(bits(out), want)
    got = softrep.pow(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    assert np.array_equal(bits(got), want)


@pytest.mark.simulator
def test_simulator_matches_cpu_on_every_path(backend):
    """The CUDA kernel (simulated) gives the CPU bits on each path: the exact
    cases, x^2 next to a midpoint (the triple-double path), near-1 boundaries
    (the near-1 path), and random pairs (the fast path)."""
    hx, hy = V64.load_hard_cases_f64("pow")
    near_one = np.flatnonzero(np.abs(hx - 1) < 2.0**-20)[:4]
    squares = np.flatnonzero(hy == 2.0)[:4]
    exact = np.arange(4)
    rx, ry = V64.pair_sample("pow", 8, np.random.Generator(np.random.PCG64(1)))
    idx = np.concatenate([near_one, squares, exact])
    x = torch.from_numpy(np.concatenate([hx[idx], rx, -hx[squares]]))
    y = torch.from_numpy(np.concatenate([hy[idx], ry, hy[squares]]))
    assert near_one.size == 4 and squares.size == 4
    backend("cuda")
    sim = softrep.pow(x, y)
    backend("cpu")
    cpu = softrep.pow(x, y)
    assert np.array_equal(bits(sim.numpy()), bits(cpu.numpy()))


def _fast_path_pairs(rng):
    """x over every normal binade with y giving z = y log x up to the fast
    range's ends, x next to 1 with large |y|, |z| next to +-708.3 and 709.7,
    small and huge |y|, and exact powers (2^k, 3^2, 10^2, 5^3, 7^-2, 4^0.5)."""
    import gmpy2

    xs, ys = [], []
    n = 1500
    x = np.ldexp(rng.uniform(1, 2, n), rng.integers(-1022, 1024, n))
    z = rng.uniform(-708.3, 709.7, n) * np.where(rng.integers(0, 2, n) == 1, 1, 2.0 ** rng.uniform(-60, 0, n))
    xs.append(x)
    ys.append(z / np.log(x))
    for sign, ulp in ((1, 2.0**-52), (-1, 2.0**-53)):
        k = np.floor(2.0 ** rng.uniform(0, 44, n))
        x = 1 + sign * k * ulp
        with gmpy2.context(precision=200):
            lx = np.array([float(gmpy2.log(gmpy2.mpfr(float(v)))) for v in x])
        xs.append(x)
        ys.append(rng.uniform(-708.3, 709.7, n) / lx)
    x = np.ldexp(rng.uniform(1, 2, n), rng.integers(-1022, 1024, n))
    edge = np.where(rng.integers(0, 2, n) == 1, 709.7, -708.3) - rng.uniform(0, 2.0**-20, n) * np.sign(
        rng.uniform(-1, 1, n))
    xs.append(x)
    ys.append(edge / np.log(x))
    x = rng.uniform(0.001, 30, n)
    ys.append(np.ldexp(rng.uniform(1, 2, n), rng.integers(-400, 9, n)) * np.where(rng.integers(0, 2, n), 1, -1))
    xs.append(x)
    k = np.arange(-1022, 1024, dtype=np.float64)
    xs.append(np.concatenate([np.full(k.size, 2.0), [3.0, 10.0, 5.0, 7.0, 4.0, 9.0, 0.5, 1.5, 1e10]]))
    ys.append(np.concatenate([k, [2.0, 2.0, 3.0, -2.0, 0.5, 1.5, -3.0, 4.0, 30.0]]))
    x, y = np.concatenate(xs), np.concatenate(ys)
    keep = np.isfinite(y) & (np.abs(y) >= 2.0**-400) & (np.abs(y) <= 2.0**900) & (x != 1)
    return x[keep], y[keep]


def test_fast_path_error_bound():
    """pow_eval_fast64 against MPFR (300 bits): the relative error of (h + l) 2^q
    is below the bound argued in pow.py, 2^-66.5 m (1 + 2^-52) + 2^-102.6 |z|
    + 2^-78.1 with m = min(|z|, 2^-9 |y|), and below w/2 - 2^-105 (the
    rounding test's half window), wherever the leading word of z lies in the
    fast range."""
    import gmpy2

    rng = np.random.Generator(np.random.PCG64(21))
    x, y = _fast_path_pairs(rng)
    h, l, ph, w = (np.empty(x.size) for _ in range(4))
    q = np.empty(x.size, np.int32)
    _eval_fast(x, y, h, l, q, ph, w)
    inside = (ph >= -708.3) & (ph <= 709.7)
    assert inside.sum() > 8000
    worst_ratio = gmpy2.mpfr(0)
    with gmpy2.context(precision=300):
        two = gmpy2.mpfr(2)
        for i in np.flatnonzero(inside):
            xv, yv = gmpy2.mpfr(float(x[i])), gmpy2.mpfr(float(y[i]))
            exact = gmpy2.exp(yv * gmpy2.log(xv))
            got = (gmpy2.mpfr(float(h[i])) + gmpy2.mpfr(float(l[i]))) * two ** int(q[i])
            rel = abs(got - exact) / exact
            m = min(abs(float(ph[i])), abs(float(y[i])) * 2.0**-9)
            bound = two**-66.5 * m * (1 + two**-52) + two**-102.6 * abs(float(ph[i])) + two**-78.1
            assert rel < bound, (x[i], y[i], float(rel), float(bound))
            assert rel < gmpy2.mpfr(float(w[i])) / 2 - two**-105, (x[i], y[i])
            worst_ratio = max(worst_ratio, rel / bound)
    assert worst_ratio > 2.0**-8  # the bound is not vacuous: measured errors come within a few bits of it


def test_fast_paths_decide_correctly():
    """Where the plain-double and the double-double fast paths decide, MPFR
    agrees (exact powers included); the plain one decides almost all of the
    random pairs in its range, and the specials it selects (y = 0, x = 1, NaN)."""
    rng = np.random.Generator(np.random.PCG64(22))
    x, y = _fast_path_pairs(rng)
    sx, sy = np.repeat(SPECIAL, SPECIAL.size), np.tile(SPECIAL, SPECIAL.size)
    x, y = np.concatenate([x, sx]), np.concatenate([y, sy])
    out, decided, out_dd, decided_dd = np.empty(x.size), np.zeros(x.size, np.bool_), np.empty(x.size), np.zeros(
        x.size, np.bool_)
    _fast(x, y, out, decided, out_dd, decided_dd)
    want = V64.reference_bits("pow", (x, y))
    got = np.where(np.isnan(out), np.nan, out)
    assert np.array_equal(bits(got)[decided], want[decided])
    assert np.array_equal(bits(np.where(np.isnan(out_dd), np.nan, out_dd))[decided_dd], want[decided_dd])
    assert decided[: x.size - sx.size].mean() > 0.85  # the rest: z out of range, x near 1 with a large |y|
    exact = (x == 2.0) & (y == np.round(y)) & (y >= -1021) & (y <= 1023)
    assert exact.sum() > 2000 and decided[exact].all()
    one = (sy == 0) | (sx == 1) | np.isnan(sx) | np.isnan(sy)
    assert decided[-sx.size:][one].all()
