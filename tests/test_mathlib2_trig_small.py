"""The Cody-Waite reduction of float32 sin and cos for |x| < 2^20
(softrep/algorithms/math/trig_reduction.py, `reduce_quadrant_small`): its
constants, its bound against MPFR, and the fast paths built on it."""

import gmpy2
import numba
import numpy as np
import pytest

from softrep.algorithms.math import trig_reduction as T
from softrep.algorithms.math.cos import cos_fast, cos_window
from softrep.algorithms.math.sin import sin_fast, sin_window

PREC = 400
LIMIT = 2.0**20


def _two_over_pi():
    with gmpy2.context(gmpy2.get_context(), precision=PREC):
        return 2 / gmpy2.const_pi()


def _significant_bits(v):
    m, e = np.frexp(abs(v))
    bits = 0
    m = float(m)
    while m != int(m):
        m *= 2
        bits += 1
    return bits


def test_cody_waite_constants():
    tp = _two_over_pi()
    with gmpy2.context(gmpy2.get_context(), precision=PREC):
        assert _significant_bits(T.CW1) <= 29 and _significant_bits(T.CW2) <= 29
        assert tp - gmpy2.mpfr(float(T.CW1)) < 0  # CW2 + CW3 + delta < 0: a CW1 > a 2/pi
        rest = tp - gmpy2.mpfr(float(T.CW1)) - gmpy2.mpfr(float(T.CW2))
        assert float(T.CW3) == float(rest)  # float() rounds to nearest
        delta = rest - gmpy2.mpfr(float(T.CW3))
        assert abs(delta) < gmpy2.mpfr(2) ** -115
        assert float(T.TWO_OVER_PI_D) == float(tp)
    assert T.CW_LIMIT_F32 == np.float32(LIMIT)


@numba.njit
def _reduce_small(xs, qs, ts):
    for i in range(xs.size):
        q, t = T.reduce_quadrant_small(xs[i])
        qs[i] = q
        ts[i] = t


@numba.njit
def _reduce_exact(xs, qs, ts):
    for i in range(xs.size):
        q, t = T.reduce_quadrant(xs[i])
        qs[i] = q
        ts[i] = t


def _inputs():
    """Random float32 in [0, 2^20) (uniform in bits, so every binade), the ends,
    and the float32 next to multiples of pi/4 (|t| small, and a 2/pi near a
    half-integer, where the choice of k is decided)."""
    rng = np.random.Generator(np.random.PCG64(2026))
    top = int(np.float32(LIMIT).view(np.uint32))
    xs = [rng.integers(0, top, 40000, dtype=np.uint64).astype(np.uint32).view(np.float32)]
    xs.append(np.array([0.0, 1e-45, 1e-38, 0.49999997, 0.5, 0.50000006, 1.0,
                        np.nextafter(np.float32(LIMIT), np.float32(0))], np.float32))
    n = np.concatenate([np.arange(1, 3000), rng.integers(3000, int(LIMIT * 8 / np.pi), 20000)])
    near = (n * (np.pi / 4)).astype(np.float32)
    near = near[near < np.float32(LIMIT)]
    for step in (-1, 0, 1):
        xs.append((near.view(np.uint32).astype(np.int64) + step).astype(np.uint32).view(np.float32))
    xs = np.concatenate(xs)
    return xs[(xs >= 0) & (xs < np.float32(LIMIT))]


def test_small_reduction_is_the_exact_one_within_its_bound():
    xs = _inputs()
    qs, ts = np.empty(xs.size, np.int64), np.empty(xs.size)
    _reduce_small(xs, qs, ts)
    qe, te = np.empty(xs.size, np.int64), np.empty(xs.size)
    _reduce_exact(xs, qe, te)
    tp = _two_over_pi()
    bound = gmpy2.mpfr(2) ** gmpy2.mpfr(-51.9)
    worst = 0.0
    with gmpy2.context(gmpy2.get_context(), precision=PREC):
        for x, q, t in zip(xs.astype(np.float64), qs, ts):
            v = gmpy2.mpfr(float(x)) * tp
            k = gmpy2.rint(v)  # nearest integer (no float32 lies at a half-integer of a 2/pi)
            exact = v - k
            assert abs(exact) < 0.5
            assert int(q) == int(k) % 4, x
            assert abs(t) < 0.5
            if exact == 0:
                assert t == 0
                continue
            err = abs(gmpy2.mpfr(float(t)) - exact) / abs(exact)
            assert err < bound, (x, float(err))
            worst = max(worst, float(err))
    assert np.array_equal(qs, qe)  # the exact reduction's quadrant
    assert worst > 2.0**-54  # the check sees rounding errors, not only exact cases


def _fast_and_window(fast, window):
    @numba.njit
    def run(xs, r_fast, ok_fast, r_window, ok_window):
        for i in range(xs.size):
            r, ok = fast(xs[i])
            r_fast[i] = r
            ok_fast[i] = ok
            r, ok = window(xs[i])
            r_window[i] = r
            ok_window[i] = ok
    return run


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_fast_path_decides_correctly(name):
    """Where the Cody-Waite fast path decides, its result is MPFR's; it decides
    about as often as the exact reduction's window; it leaves |x| >= 2^20,
    NaN and infinities to the exact reduction's step, which gives NaN for
    the last two."""
    fast, window = (sin_fast, sin_window) if name == "sin" else (cos_fast, cos_window)
    xs = _inputs()[::4]
    big = np.array([2.0**20, 3e7, 1e30, 3.4e38], np.float32)
    special = np.array([np.nan, np.inf, -np.inf], np.float32)
    xs = np.concatenate([xs, -xs[:2000], big, -big, special])
    n = xs.size
    rf, of, rw, ow = np.empty(n, np.float32), np.empty(n, np.bool_), np.empty(n, np.float32), np.empty(n, np.bool_)
    _fast_and_window(fast, window)(xs, rf, of, rw, ow)
    fn = getattr(gmpy2, name)
    with gmpy2.context(gmpy2.ieee(32)):
        for x, r, ok, rw_, ow_ in zip(xs, rf, of, rw, ow):
            if np.isnan(x) or np.isinf(x):
                assert not ok and ow_ and rw_.view(np.uint32) == 0x7FC00000
                continue
            if abs(x) >= np.float32(LIMIT):
                assert not ok
                continue
            if ok:
                expected = np.float32(float(fn(gmpy2.mpfr(float(x)))))
                assert r.view(np.uint32) == expected.view(np.uint32), x
    small = np.abs(xs) < np.float32(LIMIT)
    assert of[small].mean() > 0.99


@pytest.mark.simulator
def test_simulator_matches_cpu_across_the_limit(monkeypatch):
    """The CUDA kernels (simulated) give the CPU bits on both sides of 2^20 and
    next to multiples of pi/4, where the fast path and the exact reduction
    meet."""
    import torch

    from softrep.ops.math import FUNCTIONS

    edge = np.float32(LIMIT).view(np.uint32)
    xs = np.concatenate([np.arange(edge - 3, edge + 3, dtype=np.uint32).view(np.float32),
                         (np.arange(1, 9) * (np.pi / 4)).astype(np.float32),
                         np.array([1e-45, 0.5, 3e5, 6e5, -7.25], np.float32)])
    t = torch.from_numpy(np.concatenate([xs, -xs]))
    for name in ("sin", "cos"):
        monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
        sim = FUNCTIONS[name].op(t)
        monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
        cpu = FUNCTIONS[name].op(t)
        assert torch.equal(sim.view(torch.int32), cpu.view(torch.int32)), name


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_three_step_launch_matches_mpfr(name):
    """The CPU launcher runs the Cody-Waite fast path, then, in chunks it left
    undecided, the exact reduction's window, then the table: on a mixture of
    small and large arguments across several chunks every result is MPFR's."""
    import torch

    from softrep.cpu.launch import CHUNK
    from softrep.ops.math import FUNCTIONS

    assert FUNCTIONS[name].kernel.decided_fast2 is not None
    rng = np.random.Generator(np.random.PCG64(7))
    n = 3 * CHUNK + 17
    xs = rng.uniform(-10, 10, n).astype(np.float32)
    big = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    # per chunk, the share of arbitrary bit patterns: none, 0.1 %, half, all
    share = np.array([0.0, 0.001, 0.5, 1.0]).repeat(CHUNK)[:n]
    xs = np.where(rng.random(n) < share, big, xs).astype(np.float32)
    got = FUNCTIONS[name].op(torch.from_numpy(xs)).numpy()
    fn = getattr(gmpy2, name)
    with gmpy2.context(gmpy2.ieee(32)):
        for x, r in zip(xs, got):
            if np.isnan(x) or np.isinf(x):
                assert np.isnan(r)
                continue
            expected = np.float32(float(fn(gmpy2.mpfr(float(x)))))
            assert r.view(np.uint32) == expected.view(np.uint32), x
