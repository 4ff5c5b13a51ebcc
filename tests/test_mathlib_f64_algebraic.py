"""float64 rsqrt, cbrt and hypot: correctly rounded, checked against MPFR.

MPFR (gmpy2) in a binary64 context -- precision 53, the exponent range of
binary64, subnormalize=True -- returns the correctly rounded double itself:
the reference has no error window.  Checked here: special values, both ends
of every binade, random bit patterns, CORE-MATH's worst cases kept in
tests/data/mathlib_hard_cases_f64/, exact ties (hypot), and the exact
decision itself, made to run on many inputs by widening the bracket
(`*_f64_window`, any width up to 2^-56 gives the same bits); the CPU kernels
against the CUDA simulator bit for bit; golden vectors; float64 gradcheck.
"""

import os
import sys

import gmpy2
import numba
import numpy as np
import pytest
import torch

import softrep
from softrep.algorithms.math.cbrt import cbrt_f64_window
from softrep.algorithms.math.hypot import hypot_f64_window
from softrep.algorithms.math.rsqrt import rsqrt_f64_window

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import bit_pattern_tensor, check, normal_tensor  # noqa: E402

HARD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mathlib_hard_cases_f64")
NAN_BITS = 0x7FF8000000000000
MPFR = {"rsqrt": gmpy2.rec_sqrt, "cbrt": gmpy2.cbrt, "hypot": gmpy2.hypot}
OPS = {"rsqrt": softrep.rsqrt, "cbrt": softrep.cbrt, "hypot": softrep.hypot}
WIDE = np.float64(2.0**-56)


def binary64():
    return gmpy2.context(precision=53, emin=-1073, emax=1024, subnormalize=True)


def reference(name, *args):
    """The correctly rounded double (bits), from MPFR; NaN as the canonical NaN."""
    if name == "rsqrt" and args[0] == 0.0:
        return np.float64(np.copysign(np.inf, args[0])).view(np.uint64)  # IEEE rSqrt(-0) = -inf
    with binary64():
        r = float(MPFR[name](*[gmpy2.mpfr(float(a)) for a in args]))
    return np.uint64(NAN_BITS) if r != r else np.float64(r).view(np.uint64)


def references(name, *cols):
    return np.array([reference(name, *a) for a in zip(*cols)], np.uint64)


def run(name, *cols):
    ts = [torch.from_numpy(np.ascontiguousarray(c, np.float64)) for c in cols]
    return OPS[name](*ts).numpy().view(np.uint64)


def assert_bits(name, got, want, *cols):
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, f"{name}: {bad.size} misrounded, first at " + ", ".join(
        float(c[bad[0]]).hex() for c in cols) + f": got {int(got[bad[0]]):016x}, MPFR {int(want[bad[0]]):016x}"


def special_values():
    bits = [0, 1, 2, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000,
            0x7FF8000000000000, 0x7FF0000000000001, 0x7FFFFFFFFFFFFFFF]
    for e in range(1, 2047):  # both ends of every binade
        bits += [e << 52, (e << 52) | 0xFFFFFFFFFFFFF, (e << 52) | 1]
    bits += [b | 0x8000000000000000 for b in bits]
    more = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 8.0, 27.0, 1e-300, 1e300, 0.1, 1 / 3], np.float64)
    return np.concatenate([np.array(bits, np.uint64).view(np.float64), more, -more])


def random_doubles(seed, n):
    rng = np.random.Generator(np.random.PCG64(seed))
    return rng.integers(0, 2**64, size=n, dtype=np.uint64).view(np.float64)


def hard_cases(name):
    rows = [line.split() for line in open(os.path.join(HARD_DIR, f"{name}.txt")) if not line.startswith("#")]
    nin = 2 if name == "hypot" else 1
    cols = [np.array([int(r[i], 16) for r in rows], np.uint64).view(np.float64) for i in range(nin)]
    want = np.array([int(r[nin], 16) for r in rows], np.uint64)
    if name == "cbrt":  # odd: the file lists |x|
        cols, want = [np.concatenate([cols[0], -cols[0]])], np.concatenate([want, want ^ np.uint64(1 << 63)])
    return cols, want


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


@pytest.mark.parametrize("name", ["rsqrt", "cbrt"])
def test_unary_against_mpfr(name, backend):
    backend("cpu")
    xs = np.concatenate([special_values(), random_doubles(7, 20_000)])
    assert_bits(name, run(name, xs), references(name, xs), xs)


@pytest.mark.parametrize("name", ["rsqrt", "cbrt", "hypot"])
def test_hard_cases(name, backend):
    backend("cpu")
    cols, want = hard_cases(name)
    assert want.size > 1000
    assert_bits(name, run(name, *cols), want, *cols)


def test_hard_cases_hold_mpfr_values():
    """The committed expectations are MPFR's (a sample of each file)."""
    for name in MPFR:
        cols, want = hard_cases(name)
        idx = np.linspace(0, want.size - 1, 300).astype(int)
        assert_bits(name, want[idx], references(name, *[c[idx] for c in cols]), *[c[idx] for c in cols])


def test_hypot_against_mpfr(backend):
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(11))
    sv = special_values()
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


def test_a_planted_misrounding_is_caught():
    """The comparison above can fail: a result one ulp off at one input is reported."""
    xs = random_doubles(31, 50)
    xs = np.abs(xs[np.isfinite(xs)])
    got = run("cbrt", xs)
    got[3] += np.uint64(1)
    with pytest.raises(AssertionError, match="1 misrounded"):
        assert_bits("cbrt", got, references("cbrt", xs), xs)


def test_golden_vectors(backend):
    backend("cpu")
    for name in ("rsqrt", "cbrt"):
        check(f"mathlib_f64/{name}.json", "bits", OPS[name](bit_pattern_tensor(41, (4096,), torch.float64)))
        check(f"mathlib_f64/{name}.json", "normal",
              OPS[name](normal_tensor(42, (4096,), torch.float64, scale=100.0).abs()))
    x, y = bit_pattern_tensor(43, (4096,), torch.float64), bit_pattern_tensor(44, (4096,), torch.float64)
    check("mathlib_f64/hypot.json", "bits", softrep.hypot(x, y))
    a, b = normal_tensor(45, (4096,), torch.float64, 3.0), normal_tensor(46, (4096,), torch.float64, 3.0)
    check("mathlib_f64/hypot.json", "normal", softrep.hypot(a, b))


@pytest.mark.parametrize("name", ["rsqrt", "cbrt", "hypot"])
def test_gradcheck_float64(name, backend):
    backend("cpu")
    g = torch.Generator().manual_seed(5)
    x = (torch.rand(12, generator=g, dtype=torch.float64) * 3 + 0.2).requires_grad_()
    if name == "hypot":
        y = (torch.rand(12, generator=g, dtype=torch.float64) * 2 - 1).requires_grad_()
        assert torch.autograd.gradcheck(softrep.hypot, (x, y))
    else:
        assert torch.autograd.gradcheck(OPS[name], (x,))


@pytest.mark.simulator
def test_simulator_matches_cpu(monkeypatch):
    """The CUDA kernels under the simulator give the CPU bits (a small sample:
    the simulator runs every primitive in Python)."""
    xs = np.concatenate([special_values()[::97], random_doubles(51, 24), hard_cases("cbrt")[0][0][:4]])
    ys = np.concatenate([xs[1:], xs[:1]])
    xt, yt = pythagorean_ties(4, 52)
    xs2, ys2 = np.concatenate([xs, xt]), np.concatenate([ys, yt])
    for name, cols in (("rsqrt", (xs,)), ("cbrt", (xs,)), ("hypot", (xs2, ys2))):
        monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
        sim = run(name, *cols)
        monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
        assert_bits(name, sim, run(name, *cols), *cols)
