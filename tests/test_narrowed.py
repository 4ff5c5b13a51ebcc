"""The float32 first step made of a float64 one (softrep/algorithms/math/narrowed.py).

`narrow(r, True)` takes r = RN64(f(x)) and must decide RN32(f(x)) for every
f(x) within half an ulp of r, or leave it undecided.  The tests put r at and
around float32 midpoints, where a plain conversion of r goes wrong, and check
with exact rational arithmetic (Fraction) that every decision is right for
both ends of r's half-ulp interval.
"""

from fractions import Fraction

import numpy as np
import pytest
from numba import njit

import softrep.algorithms.math as AM
from softrep.algorithms.math.narrowed import narrow


@njit
def _narrow_all(rs):
    out = np.empty(rs.size, np.float32)
    ok = np.empty(rs.size, np.bool_)
    for i in range(rs.size):
        out[i], ok[i] = narrow(rs[i], True)
    return out, ok


def _rn32_exact(q):
    """RN32 of an exact rational q (ties to even), q in float32's normal range.
    float(q) rounds q to double and its float32 conversion may round twice,
    so the result is decided from q's two float32 neighbours."""
    lo = np.float32(float(q))
    if Fraction(float(lo)) > q:
        lo = np.nextafter(lo, np.float32(-np.inf))
    hi = np.nextafter(lo, np.float32(np.inf))
    d_lo, d_hi = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if int(lo.view(np.uint32)) % 2 == 0 else hi


def _midpoints(rng, count):
    """Random float32 midpoints (as doubles) across many binades."""
    f = (rng.integers(1 << 23, 1 << 24, count) * 2 + 1).astype(np.float64)  # odd 25-bit significands
    e = rng.integers(-125, 100, count)  # float32 normal range: 2^-126 .. 2^127
    return np.ldexp(f, e - 25) * rng.choice([-1.0, 1.0], count)


def test_narrow_decides_only_correct_results_around_midpoints():
    rng = np.random.default_rng(1)
    mids = _midpoints(rng, 2000)
    rs = [mids]
    for k in (1, 2, 3, 5):  # k doubles away on either side
        up, down = mids.copy(), mids.copy()
        for _ in range(k):
            up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        rs += [up, down]
    n = mids.size
    rs = np.concatenate(rs)
    out, ok = _narrow_all(rs)
    for r, v, d in zip(rs, out, ok):
        if d:
            half = Fraction(float(np.spacing(abs(r)))) / 2
            for q in (Fraction(float(r)) - half, Fraction(float(r)) + half):
                assert _rn32_exact(q) == v, (r.hex(), v, q)
    # a midpoint is never decided; three doubles away (r 2^-52 is less than
    # two ulps of r) the window clears it.  (One or two away the window's end
    # can be the midpoint itself, which rounds to even: decided only when that
    # is the right side, as the loop above checks.)
    assert not ok[:n].any()
    assert ok[5 * n:].all()
    assert not ok[n:3 * n].all()


def test_narrow_decides_zeros_infinities_and_ordinary_values():
    rs = np.array([0.0, -0.0, 1e-320, -1e-320, 1e-200, np.inf, -np.inf, 1e300, 1.0, -3.0, 0.1, 2.0**-149,
                   2.0**-150 * 1.5], dtype=np.float64)
    out, ok = _narrow_all(rs)
    assert ok.all()
    want = np.array([0.0, -0.0, 0.0, -0.0, 0.0, np.inf, -np.inf, np.inf, 1.0, -3.0, np.float32(0.1), 2.0**-149,
                     2.0**-149], dtype=np.float32)
    assert (out.view(np.uint32) == want.view(np.uint32)).all()
    out, ok = _narrow_all(np.array([np.nan, -np.nan]))
    assert ok.all() and (out.view(np.uint32) == 0x7FC00000).all()


def test_narrow_window_is_needed():
    """Converting r alone gives the wrong float32 when r is a midpoint that
    f(x) is not: RN32 of a double just above the midpoint 1 + 2^-24 is
    1 + 2^-23, of the midpoint itself 1; narrow leaves both undecided."""
    mid = 1.0 + 2.0**-24
    above = np.nextafter(mid, 2.0)
    assert np.float32(mid) != np.float32(above)
    _, ok = _narrow_all(np.array([mid, above]))
    assert not ok.any()


@pytest.mark.parametrize("name", sorted(k.name for k in AM.KERNELS.values()
                                        if k.fast is not None and k.fast.__name__.endswith("_narrowed_fast")))
def test_narrowed_functions_match_their_float32_kernel(name):
    """Where the narrowed first step decides, it gives the float32 kernel's
    own (correctly rounded) result, as the launcher stores it (a NaN as the
    canonical NaN), on random float32 bit patterns."""
    k = AM.KERNELS[name]
    if k.arity == 1:
        fast, f32 = k.fast, k.f32
        step, kernel = njit(lambda x, y: fast(x)), njit(lambda x, y: f32(x))
    else:
        step, kernel = k.fast, k.f32

    @njit
    def both(x, y):
        a = np.empty(x.size, np.float32)
        b = np.empty(x.size, np.float32)
        ok = np.empty(x.size, np.bool_)
        for i in range(x.size):
            a[i], ok[i] = step(x[i], y[i])
            b[i] = kernel(x[i], y[i])
        return a, b, ok

    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    y = rng.uniform(-8, 8, x.size).astype(np.float32)
    a, b, ok = both(x, y)
    assert ok.mean() > 0.3, f"{name}: the narrowed step decides {ok.mean():.2%}"
    b[np.isnan(b)] = np.float32(np.nan)  # the launcher's canonical NaN, 0x7FC00000
    bad = ok & (a.view(np.uint32) != b.view(np.uint32))
    assert not bad.any(), f"{name}: {x[bad][:5]} -> {a[bad][:5]}, the kernel gives {b[bad][:5]}"
