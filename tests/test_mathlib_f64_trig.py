"""float64 sin, cos, tan and atan: what is particular to them.

tests/test_mathlib_f64.py checks every float64 function the same way
(samples, hard cases, simulator, golden vectors, gradcheck).  Here: arguments
near multiples of pi/2, the accurate path alone on many inputs, the stated
error bounds of both reductions and of the fast kernel (mpmath), and the
constants (2/pi's bits, the sin/cos and atan tables).  The reference for
results is MPFR (gmpy2) in a binary64 context (precision 53, binary64's
exponent range, subnormalize=True): the correctly rounded double itself, no
error window.
"""

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

from softrep.tools import verify_f64 as V64

NAMES = ("sin", "cos", "tan", "atan")
WHICH = {"sin": SIN, "cos": COS, "tan": TAN}
OPS = {"sin": softrep.sin, "cos": softrep.cos, "tan": softrep.tan, "atan": softrep.atan}


def references(name, xs):
    """MPFR's correctly rounded doubles (bits; NaN canonical)."""
    return V64.reference_bits(name, (xs,))


def run(name, xs):
    return OPS[name](torch.from_numpy(np.ascontiguousarray(xs, np.float64))).numpy().view(np.uint64)


def assert_bits(name, got, want, xs):
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{name}: {bad.size} misrounded, first at {float(xs[bad[0]]).hex()}: "
                           f"got {int(got[bad[0]]):016x}, MPFR {int(want[bad[0]]):016x}")


def ordinary(seed, n):
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.concatenate([rng.uniform(-10, 10, n), rng.uniform(-1e6, 1e6, n // 4),
                           rng.standard_normal(n // 4) * 1e-5,
                           # near multiples of pi/2: cancellation in the reduction
                           np.round(rng.uniform(-1e5, 1e5, n // 4)) * (np.pi / 2)])


@pytest.mark.parametrize("name", NAMES)
def test_against_mpfr(name, backend):
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(61))
    xs = np.concatenate([V64.special_inputs(), V64.random_bits(10_000, rng), ordinary(62, 8000)])
    assert_bits(name, run(name, xs), references(name, xs), xs)


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
    xs = np.concatenate([V64.random_bits(1500, np.random.Generator(np.random.PCG64(63))), ordinary(64, 1000)])
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
    """sincos_dd: relative error < 2^-73.7 for sin, < 2^-74.9 for cos (mpmath at
    300 bits).  Besides uniform and small arguments: the table points, and
    the midpoints between them and their neighbours, where |beta| is largest
    (for k = +-1 with u of the other sign, also the largest cancellation)."""
    mpmath.mp.prec = 300
    rng = np.random.Generator(np.random.PCG64(66))
    mids = (np.arange(-1024, 1024) + 0.5) / 2048.0
    th = np.concatenate([rng.uniform(-0.5, 0.5, 3000), rng.uniform(-1e-3, 1e-3, 500),
                         np.ldexp(rng.uniform(-1, 1, 500), rng.integers(-60, -10, 500)),
                         np.arange(-1024, 1025) / 2048.0 + 2.0**-40, mids, np.nextafter(mids, 0),
                         np.nextafter(mids, 1), [0.5 + 2.0**-33, -0.5 - 2.0**-33]])
    tl = th * rng.uniform(-2.0**-53, 2.0**-53, th.size)
    out = np.empty((th.size, 4))
    _sincos(np.stack([th, tl], axis=1), out)
    worst = [mpmath.mpf(0), mpmath.mpf(0)]
    for h, l, o in zip(th, tl, out):
        arg = mpmath.pi / 2 * (mpmath.mpf(h) + mpmath.mpf(l))
        for i, got, exact in ((0, mpmath.mpf(o[0]) + mpmath.mpf(o[1]), mpmath.sin(arg)),
                              (1, mpmath.mpf(o[2]) + mpmath.mpf(o[3]), mpmath.cos(arg))):
            if exact != 0:
                worst[i] = max(worst[i], abs((got - exact) / exact))
    assert worst[0] < mpmath.mpf(2) ** -73.7, float(mpmath.log(worst[0], 2))
    assert worst[1] < mpmath.mpf(2) ** -74.9, float(mpmath.log(worst[1], 2))


@numba.njit
def _quotients(a, b, out):
    for i in range(a.shape[0]):
        out[i, 0], out[i, 1] = trig64.dd_div_fast(a[i, 0], a[i, 1], b[i, 0], b[i, 1])


def test_fast_quotient_within_its_bound():
    """dd_div_fast (tan's and atan's fast paths): relative error < 2^-100."""
    mpmath.mp.prec = 300
    rng = np.random.Generator(np.random.PCG64(67))
    hi = np.ldexp(rng.uniform(1, 2, (4000, 2)), rng.integers(-40, 40, (4000, 2)))
    a = np.stack([hi[:, 0], hi[:, 0] * rng.uniform(-2.0**-53, 2.0**-53, 4000)], axis=1)
    b = np.stack([hi[:, 1], hi[:, 1] * rng.uniform(-2.0**-53, 2.0**-53, 4000)], axis=1)
    out = np.empty((4000, 2))
    _quotients(a, b, out)
    for x, y, q in zip(a, b, out):
        exact = (mpmath.mpf(x[0]) + mpmath.mpf(x[1])) / (mpmath.mpf(y[0]) + mpmath.mpf(y[1]))
        assert abs(mpmath.mpf(q[0]) + mpmath.mpf(q[1]) - exact) < abs(exact) * mpmath.mpf(2) ** -100


def test_fast_table_against_mpmath():
    """SIN_FAST_TABLE, COS_FAST_TABLE: sin and cos of pi k/4096 within 2^-106 relatively."""
    mpmath.mp.prec = 300
    for k in range(1025):
        for table, f in ((trig64.SIN_FAST_TABLE, mpmath.sin), (trig64.COS_FAST_TABLE, mpmath.cos)):
            exact = f(mpmath.pi * k / 4096)
            got = mpmath.mpf(table[k, 0]) + mpmath.mpf(table[k, 1])
            assert abs(got - exact) <= abs(exact) * mpmath.mpf(2) ** -106, k


def test_fast_path_undecided_rate():
    """The first step (sin_fast64, cos_fast64, tan_fast64) leaves at most one
    argument in 2^14 of [-10, 10] undecided; where it decides, MPFR agrees."""
    rng = np.random.Generator(np.random.PCG64(68))
    xs = rng.uniform(-10, 10, 1 << 16)
    for name, which in WHICH.items():
        r = np.empty(xs.size)
        ok = np.empty(xs.size, np.bool_)
        _first_step(xs, which, r, ok)
        assert (~ok).sum() <= xs.size >> 14, (name, int((~ok).sum()))
        want = references(name, xs[ok])
        assert_bits(name, r[ok].view(np.uint64), want, xs[ok])


@numba.njit
def _first_step(xs, which, r, ok):
    for i in range(xs.size):
        r[i], ok[i] = trig64.trig_fast64_cody_waite(xs[i], which)


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


