"""float64 sin, cos, tan and atan: correctly rounded, checked against MPFR.

The reference is MPFR (gmpy2) in a binary64 context (precision 53, binary64's
exponent range, subnormalize=True): it returns the correctly rounded double,
so it has no error window.  Checked: special values and both ends of every
binade, random bit patterns and ordinary arguments, CORE-MATH's worst cases
(tests/data/mathlib_hard_cases_f64/), the accurate path alone on many inputs,
the stated error bounds of the reductions and of the fast kernel against
mpmath, the 2/pi and table constants, CPU against the CUDA simulator, golden
vectors and float64 gradcheck.
"""

import os
import sys

import gmpy2
import mpmath
import numba
import numpy as np
import pytest
import torch

import softrep
from softrep.algorithms.math import atan as atan_module, trig64
from softrep.algorithms.math.atan import atan_accurate64
from softrep.algorithms.math.trig64 import (COS, SIN, TAN, reduce_cody_waite, reduce_payne_hanek, sincos_dd,
                                            trig_accurate64)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import bit_pattern_tensor, check, normal_tensor  # noqa: E402
from test_mathlib_f64_algebraic import assert_bits, random_doubles, special_values  # noqa: E402

HARD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mathlib_hard_cases_f64")
NAN_BITS = 0x7FF8000000000000
NAMES = ("sin", "cos", "tan", "atan")
WHICH = {"sin": SIN, "cos": COS, "tan": TAN}
MPFR = {"sin": gmpy2.sin, "cos": gmpy2.cos, "tan": gmpy2.tan, "atan": gmpy2.atan}
OPS = {"sin": softrep.sin, "cos": softrep.cos, "tan": softrep.tan, "atan": softrep.atan}


def references(name, xs):
    out = np.empty(xs.size, np.uint64)
    with gmpy2.context(precision=53, emin=-1073, emax=1024, subnormalize=True):
        for i, x in enumerate(xs):
            r = float(MPFR[name](gmpy2.mpfr(float(x))))
            out[i] = NAN_BITS if r != r else np.float64(r).view(np.uint64)
    return out


def run(name, xs):
    return OPS[name](torch.from_numpy(np.ascontiguousarray(xs, np.float64))).numpy().view(np.uint64)


def hard_cases(name):
    """Both signs of the |x| listed (sin, tan and atan are odd, cos even)."""
    rows = [line.split() for line in open(os.path.join(HARD_DIR, f"{name}.txt")) if not line.startswith("#")]
    xs = np.array([int(r[0], 16) for r in rows], np.uint64).view(np.float64)
    want = np.array([int(r[1], 16) for r in rows], np.uint64)
    sign = np.uint64(0) if name == "cos" else np.uint64(1 << 63)
    return np.concatenate([xs, -xs]), np.concatenate([want, want ^ sign])


def ordinary(seed, n):
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.concatenate([rng.uniform(-10, 10, n), rng.uniform(-1e6, 1e6, n // 4),
                           rng.standard_normal(n // 4) * 1e-5,
                           # near multiples of pi/2: cancellation in the reduction
                           np.round(rng.uniform(-1e5, 1e5, n // 4)) * (np.pi / 2)])


@pytest.mark.parametrize("name", NAMES)
def test_against_mpfr(name, backend):
    backend("cpu")
    xs = np.concatenate([special_values(), random_doubles(61, 10_000), ordinary(62, 8000)])
    assert_bits(name, run(name, xs), references(name, xs), xs)


@pytest.mark.parametrize("name", NAMES)
def test_hard_cases(name, backend):
    backend("cpu")
    xs, want = hard_cases(name)
    assert want.size > 5000
    assert_bits(name, run(name, xs), want, xs)


def test_hard_cases_hold_mpfr_values():
    for name in NAMES:
        xs, want = hard_cases(name)
        idx = np.linspace(0, want.size - 1, 200).astype(int)
        assert_bits(name, want[idx], references(name, xs[idx]), xs[idx])


@numba.njit
def _accurate_many(xs, which, out):
    for i in range(xs.size):
        out[i] = trig_accurate64(xs[i], which)


@numba.njit
def _atan_accurate_many(xs, out):
    for i in range(xs.size):
        out[i] = atan_accurate64(xs[i])


def test_accurate_path_alone():
    """The triple-double path, run on every input (the fast path skipped)."""
    xs = np.concatenate([random_doubles(63, 1500), ordinary(64, 1000)])
    xs = xs[np.isfinite(xs)]
    for name in NAMES:
        out = np.empty(xs.size)
        if name == "atan":
            _atan_accurate_many(xs, out)
        else:
            _accurate_many(xs, WHICH[name], out)
        assert_bits(name, out.view(np.uint64), references(name, xs), xs)


@numba.njit
def _payne_hanek(xs, q, t):
    for i in range(xs.size):
        q[i], t[i, 0], t[i, 1], t[i, 2] = reduce_payne_hanek(xs[i])


@numba.njit
def _cody_waite(xs, q, t):
    for i in range(xs.size):
        q[i], t[i, 0], t[i, 1] = reduce_cody_waite(xs[i])


@numba.njit
def _sincos(t, out):
    for i in range(t.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = sincos_dd(t[i, 0], t[i, 1])


def _exact_reduction(x):
    v = mpmath.mpf(float(x)) * 2 / mpmath.pi
    n = int(mpmath.nint(v))
    return n % 4, v - n


def test_reductions_within_their_bounds():
    """Payne-Hanek: relative error < 2^-152 of t, for every exponent; Cody-Waite:
    absolute error < 2^-104.6 a below 2^20 (mpmath at 3000 bits)."""
    mpmath.mp.prec = 3000
    rng = np.random.Generator(np.random.PCG64(65))
    xs = np.ldexp(rng.uniform(1, 2, 2100), rng.integers(-80, 1024, 2100))
    # the double closest to a multiple of pi/2, and its neighbours
    xs = np.concatenate([xs, [6381956970095103 * 2.0**797, np.nextafter(6381956970095103 * 2.0**797, 0)]])
    q = np.empty(xs.size, np.int64)
    t = np.empty((xs.size, 3))
    _payne_hanek(xs, q, t)
    for x, qi, ti in zip(xs, q, t):
        n4, exact = _exact_reduction(x)
        assert qi == n4, x
        got = mpmath.mpf(ti[0]) + mpmath.mpf(ti[1]) + mpmath.mpf(ti[2])
        assert abs(got - exact) <= abs(exact) * mpmath.mpf(2) ** -152, x
    xs = np.concatenate([rng.uniform(0, 2.0**20, 2000), np.round(rng.uniform(0, 6e5, 500)) * (np.pi / 2)])
    q = np.empty(xs.size, np.int64)
    t = np.empty((xs.size, 2))
    _cody_waite(xs, q, t)
    for x, qi, ti in zip(xs, q, t):
        n4, exact = _exact_reduction(x)
        assert qi == n4, x
        assert abs(mpmath.mpf(ti[0]) + mpmath.mpf(ti[1]) - exact) <= mpmath.mpf(float(x)) * mpmath.mpf(2) ** -104.6


def test_fast_kernel_within_its_bound():
    """sincos_dd: relative error < 2^-65 for both results (mpmath at 300 bits)."""
    mpmath.mp.prec = 300
    rng = np.random.Generator(np.random.PCG64(66))
    th = np.concatenate([rng.uniform(-0.5, 0.5, 3000), rng.uniform(-1e-3, 1e-3, 500),
                         np.ldexp(rng.uniform(-1, 1, 500), rng.integers(-60, -10, 500)),
                         np.arange(-128, 129) / 256.0 + 2.0**-40])
    tl = th * rng.uniform(-2.0**-53, 2.0**-53, th.size)
    out = np.empty((th.size, 4))
    _sincos(np.stack([th, tl], axis=1), out)
    worst = mpmath.mpf(0)
    for h, l, o in zip(th, tl, out):
        arg = mpmath.pi / 2 * (mpmath.mpf(h) + mpmath.mpf(l))
        for got, exact in ((o[0] + mpmath.mpf(o[1]), mpmath.sin(arg)), (o[2] + mpmath.mpf(o[3]), mpmath.cos(arg))):
            worst = max(worst, abs((mpmath.mpf(got) - exact) / exact))
    assert worst < mpmath.mpf(2) ** -65, float(mpmath.log(worst, 2))


def test_constants_against_mpmath():
    mpmath.mp.prec = 1500
    assert trig64._T == int(mpmath.floor(mpmath.mpf(2) ** 1313 / mpmath.pi))
    mpmath.mp.prec = 300
    for k in (1, 7, 64, 100, 128):
        exact = mpmath.sin(mpmath.pi * k / 512)
        got = sum(mpmath.mpf(v) for v in trig64.SIN_TABLE[k])
        assert abs(got - exact) < abs(exact) * mpmath.mpf(2) ** -158
        exact = mpmath.cos(mpmath.pi * k / 512)
        got = sum(mpmath.mpf(v) for v in trig64.COS_TABLE[k])
        assert abs(got - exact) < abs(exact) * mpmath.mpf(2) ** -158


def test_atan_table_against_mpmath():
    mpmath.mp.prec = 300
    for j in range(1, 65):
        exact = mpmath.atan(mpmath.mpf(j) / 64)
        got = sum(mpmath.mpf(v) for v in atan_module.ATAN_TABLE[j])
        assert abs(got - exact) < exact * mpmath.mpf(2) ** -158, j


def test_golden_vectors(backend):
    backend("cpu")
    for name in NAMES:
        check(f"mathlib_f64/{name}.json", "bits", OPS[name](bit_pattern_tensor(71, (4096,), torch.float64)))
        check(f"mathlib_f64/{name}.json", "normal", OPS[name](normal_tensor(72, (4096,), torch.float64, scale=10.0)))


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_float64(name, backend):
    backend("cpu")
    x = (torch.rand(12, generator=torch.Generator().manual_seed(6), dtype=torch.float64) * 2.4 - 1.2)
    assert torch.autograd.gradcheck(OPS[name], (x.requires_grad_(),))


@pytest.mark.simulator
def test_simulator_matches_cpu(monkeypatch):
    """CUDA kernels under the simulator give the CPU bits, on a few inputs of
    both paths (the simulator runs the primitives in Python: slow)."""
    xs = np.array([0.0, -0.0, np.inf, np.nan, 1e-300, 2.0**-27, 3.0, -1e6, 1e300, 6381956970095103 * 2.0**797])
    for name in NAMES:
        hard = hard_cases(name)[0]
        t = torch.from_numpy(np.concatenate([xs, hard[:3], hard[-2:]]))
        monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
        sim = OPS[name](t)
        monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
        assert torch.equal(sim.view(torch.int64), OPS[name](t).view(torch.int64)), name
