"""float64 rsqrt, cbrt and hypot: their exact decision, against MPFR.

tests/test_mathlib_f64.py checks every float64 function the same way
(samples, hard cases, simulator, golden vectors, gradcheck).  Here: what is
particular to these three -- the exact integer decision, made to run on many
inputs by widening the bracket (`*_f64_window`: any width up to 2^-56 gives
the same bits), exact ties (hypot of scaled Pythagorean triples), subnormal
and overflowing hypot results.  MPFR (gmpy2) in a binary64 context --
precision 53, the exponent range of binary64, subnormalize=True -- returns
the correctly rounded double itself: the reference has no error window.
"""


import numba
import numpy as np
import pytest
import torch

import softrep
from softrep.algorithms.math.cbrt import cbrt_f64_window
from softrep.algorithms.math.hypot import hypot_f64_window
from softrep.algorithms.math.rsqrt import rsqrt_f64_window
from softrep.tools import verify_f64 as V64


OPS = {"rsqrt": softrep.rsqrt, "cbrt": softrep.cbrt, "hypot": softrep.hypot}
WIDE = np.float64(2.0**-56)


def references(name, *cols):
    """MPFR's correctly rounded doubles (bits; NaN canonical)."""
    return V64.reference_bits(name, cols)


def run(name, *cols):
    ts = [torch.from_numpy(np.ascontiguousarray(c, np.float64)) for c in cols]
    return OPS[name](*ts).numpy().view(np.uint64)


def assert_bits(name, got, want, *cols):
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, f"{name}: {bad.size} misrounded, first at " + ", ".join(
        float(c[bad[0]]).hex() for c in cols) + f": got {int(got[bad[0]]):016x}, MPFR {int(want[bad[0]]):016x}"


def random_doubles(seed, n):
    return V64.random_bits(n, np.random.Generator(np.random.PCG64(seed)))


def pythagorean_ties(n, seed):
    """Pairs (u^2 - v^2, 2uv) 2^s whose hypotenuse (u^2 + v^2) 2^s is an odd
    54-bit integer times 2^s: exactly a midpoint between two doubles (also
    where s = -1074 puts the legs among the subnormals)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    xs, ys = [], []
    while len(xs) < n:
        u = int(rng.integers(int(1.25 * 2**26), int(1.4 * 2**26)))
        v = int(rng.integers(int(0.62 * 2**26), int(0.75 * 2**26)))
        a, b, c = u * u - v * v, 2 * u * v, u * u + v * v
        if c % 2 == 0 or not (2**53 <= c < 2**54) or max(a, b) >= 2**53:
            continue
        s = int(rng.choice([-1074, -1000, -600, -60, 0, 40, 900, 969]))
        xs.append(float(a) * 2.0**s if s > -1074 else float(a) * 2.0**-537 * 2.0**-537)
        ys.append(float(b) * 2.0**s if s > -1074 else float(b) * 2.0**-537 * 2.0**-537)
    return np.array(xs), np.array(ys)


def test_hypot_against_mpfr(backend):
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(11))
    sv = V64.special_inputs()
    x1, y1 = np.repeat(sv[::37], 60), np.tile(sv[::37], 60)[: sv[::37].size * 60]
    x2, y2 = random_doubles(12, 20_000), random_doubles(13, 20_000)
    x3 = random_doubles(14, 10_000)
    with np.errstate(invalid="ignore", over="ignore"):
        y3 = x3 * rng.uniform(2.0**-30, 1.5, 10_000)  # comparable magnitudes (inf * 0.5 etc.)
    x4 = rng.integers(0, 2**53, 4000).astype(np.float64) * 2.0**-537 * 2.0**-537  # subnormal results
    y4 = rng.integers(0, 2**53, 4000).astype(np.float64) * 2.0**-537 * 2.0**-537
    big = np.finfo(np.float64).max
    x5 = np.array([big, big, big * 0.75, 2.0**1023, 1.3e308, 1e308, 2.0**-1074, 0.0, -0.0, 3.0, 5e-324])
    y5 = np.array([big, 1.0, big * 0.6, 2.0**1023, 1.1e308, 1e308, 2.0**-1074, -0.0, np.nan, 4.0, 5e-324])
    xt, yt = pythagorean_ties(400, 15)
    xs = np.concatenate([x1, x2, x3, x4, x5, xt])
    ys = np.concatenate([y1, y2, y3, y4, y5, yt])
    assert_bits("hypot", run("hypot", xs, ys), references("hypot", xs, ys), xs, ys)


@numba.njit
def _rsqrt_window(xs, rel, out):
    for i in range(xs.size):
        out[i] = rsqrt_f64_window(xs[i], rel)


@numba.njit
def _cbrt_window(xs, rel, out):
    for i in range(xs.size):
        out[i] = cbrt_f64_window(xs[i], rel)


@numba.njit
def _hypot_window(xs, ys, rel, out):
    for i in range(xs.size):
        out[i] = hypot_f64_window(xs[i], ys[i], rel)


def test_exact_decision_with_a_wide_bracket():
    """With the bracket widened to 2^-56, about one input in 6 reaches the
    exact integer decision; compiled CPU code and the Python semantics of the
    primitives (what the simulator runs) must both give MPFR's bits."""
    xs = np.abs(random_doubles(21, 6000))
    xs = xs[np.isfinite(xs)]
    ys = xs * np.random.default_rng(23).uniform(0.05, 1.2, xs.size)
    for name, kernel, cols in (("rsqrt", _rsqrt_window, (xs,)), ("cbrt", _cbrt_window, (xs,)),
                               ("hypot", _hypot_window, (xs, ys))):
        out = np.empty(xs.size)
        kernel(*cols, WIDE, out)
        assert_bits(name, out.view(np.uint64), references(name, *cols), *cols)
    py = {"rsqrt": rsqrt_f64_window, "cbrt": cbrt_f64_window, "hypot": hypot_f64_window}
    for name, cols in (("rsqrt", (xs[:300],)), ("cbrt", (xs[:300],)), ("hypot", (xs[:300], ys[:300]))):
        got = np.array([py[name](*[np.float64(c[i]) for c in cols], WIDE) for i in range(300)]).view(np.uint64)
        assert_bits(name, got, references(name, *cols), *cols)


@pytest.mark.simulator
def test_simulator_matches_cpu_on_ties(monkeypatch):
    """hypot's ties and subnormal results under the CUDA simulator give the CPU bits."""
    xt, yt = pythagorean_ties(6, 52)
    xs = np.concatenate([xt, [5e-324, 3e-310, np.finfo(np.float64).max]])
    ys = np.concatenate([yt, [5e-324, 4e-310, 1e308]])
    monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
    sim = run("hypot", xs, ys)
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
    assert_bits("hypot", sim, run("hypot", xs, ys), xs, ys)
