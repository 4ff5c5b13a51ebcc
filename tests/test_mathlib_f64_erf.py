"""float64 erf and erfc: what is particular to them.

tests/test_mathlib_f64.py checks every float64 function the same way
(samples, hard cases, simulator, golden vectors, gradcheck).  Here: the
accurate path alone on many inputs, the error bounds stated in erf64.py for
both paths' pieces (against mpmath at 300 bits), the erfcx table and the
series constants, the tiny-argument worst cases in every binade, and the
inputs around the saturation thresholds.  Results are compared with MPFR
(gmpy2) in its binary64 context: the correctly rounded double, no error window.
"""

import mpmath
import numba
import numpy as np
import pytest
import torch

import softrep
from softrep.algorithms.math import erf64
from softrep.algorithms.math import erf64_table
from softrep.algorithms.math import erf64_fast_tables as fast_tables
from softrep.algorithms.math.erf64_table import piece_centre_half_width
from softrep.algorithms.math.erf import erf_accurate64, erf_fast64
from softrep.algorithms.math.erfc import erfc_accurate64, erfc_fast64
from softrep.tools import verify_f64 as V64

from test_mathlib_f64_trig import assert_bits

OPS = {"erf": softrep.erf, "erfc": softrep.erfc}


def run(name, xs):
    return OPS[name](torch.from_numpy(np.ascontiguousarray(xs, np.float64))).numpy().view(np.uint64)


@numba.njit
def _accurate_many(xs, erf_out, erfc_out):
    for i in range(xs.size):
        erf_out[i] = erf_accurate64(xs[i])
        erfc_out[i] = erfc_accurate64(xs[i])


def test_accurate_path_alone(backend):
    """The triple-double paths, run on every input (the fast paths skipped)."""
    backend("cpu")
    rng = np.random.Generator(np.random.PCG64(71))
    xs = np.concatenate([V64.special_inputs(), V64.random_bits(1000, rng), rng.uniform(-6.5, 6.5, 1000),
                         rng.uniform(0.2, 27.5, 1000), 2.0 ** rng.uniform(-80, -1, 300)])
    erf_out, erfc_out = np.empty(xs.size), np.empty(xs.size)
    _accurate_many(xs, erf_out, erfc_out)
    assert_bits("erf", erf_out.view(np.uint64), V64.reference_bits("erf", (xs,)), xs)
    assert_bits("erfc", erfc_out.view(np.uint64), V64.reference_bits("erfc", (xs,)), xs)


# --------------------------------------------------------------------------- the stated error bounds


@numba.njit
def _series(xs, dd, td):
    for i in range(xs.size):
        dd[i, 0], dd[i, 1], e = erf64.erf_series_dd(xs[i])
        td[i, 0], td[i, 1], td[i, 2], e = erf64.erf_series_td(xs[i])


@numba.njit
def _large(xs, dd, td, q):
    for i in range(xs.size):
        dd[i, 0], dd[i, 1], q[i, 0] = erf64.erfc_large_dd(xs[i])
        td[i, 0], td[i, 1], td[i, 2], q[i, 1] = erf64.erfc_large_td(xs[i])


def _rel_errors(words, exact, scale_exp):
    """max over rows of |sum(words) 2^scale_exp / exact - 1|, as log2."""
    worst = mpmath.mpf(0)
    for w, v, e in zip(words, exact, scale_exp):
        s = mpmath.ldexp(sum(mpmath.mpf(float(t)) for t in w), int(e))
        worst = max(worst, abs(s / v - 1))
    return float(mpmath.log(worst, 2)) if worst else -np.inf


def test_series_error_bounds():
    """erf's series: double-double < 2^-103, triple-double < 2^-149.5 (relative)."""
    rng = np.random.Generator(np.random.PCG64(72))
    xs = np.concatenate([2.0 ** rng.uniform(-90, -2, 400), np.nextafter(0.25, 0.0, dtype=np.float64)[None],
                         np.array([2.0**-80, np.nextafter(2.0**-80, 0.0), 5e-324, 1e-310])])
    dd, td = np.empty((xs.size, 2)), np.empty((xs.size, 3))
    _series(xs, dd, td)
    scale = np.where(xs < 2.0**-80, -200, 0)
    with mpmath.workprec(300):
        exact = [mpmath.erf(mpmath.mpf(float(x))) for x in xs]
        assert _rel_errors(dd, exact, scale) < -103
        assert _rel_errors(td, exact, scale) < -149.5


def test_erfc_error_bounds():
    """erfc a = e^(-a^2) R(a) on [1/4, 27.25): double-double < 2^-100,
    triple-double < 2^-147.8 (relative), every piece of the table sampled."""
    rng = np.random.Generator(np.random.PCG64(73))
    pieces = np.arange(erf64.ERFCX_TD.shape[0])
    centres = np.array([piece_centre_half_width(j)[0] for j in pieces])
    halves = np.array([piece_centre_half_width(j)[1] for j in pieces])
    xs = np.concatenate([(centres + halves * rng.uniform(-1, 1, (3, pieces.size))).ravel(), centres - halves,
                         np.nextafter(centres + halves, 0.0)])
    xs = xs[(xs >= 0.25) & (xs < 27.25)]
    dd, td, q = np.empty((xs.size, 2)), np.empty((xs.size, 3)), np.empty((xs.size, 2), np.int64)
    _large(xs, dd, td, q)
    with mpmath.workprec(300):
        exact = [mpmath.erfc(mpmath.mpf(float(x))) for x in xs]
        assert _rel_errors(dd, exact, q[:, 0]) < -100
        assert _rel_errors(td, exact, q[:, 1]) < -147.8


@numba.njit
def _pieces(xs, j, d):
    for i in range(xs.size):
        j[i], d[i] = erf64.erfcx_piece(xs[i])


def test_piece_selection_is_exact():
    """Every a in [1/4, 32) falls in its piece, |d| <= h, and d = a - c_j exactly."""
    rng = np.random.Generator(np.random.PCG64(74))
    starts = np.array([piece_centre_half_width(j)[0] - piece_centre_half_width(j)[1]
                       for j in range(erf64.ERFCX_TD.shape[0])])
    xs = np.concatenate([starts, np.nextafter(starts, 0.0)[1:], np.nextafter(32.0, 0.0)[None],
                         rng.uniform(0.25, 32.0, 2000)])
    j, d = np.empty(xs.size, np.int64), np.empty(xs.size)
    _pieces(xs, j, d)
    for x, jj, dd in zip(xs, j, d):
        c, h = piece_centre_half_width(int(jj))
        assert abs(dd) <= h and c - h <= x < c + h
        assert mpmath.mpf(float(x)) - mpmath.mpf(c) == mpmath.mpf(float(dd))


def test_constants():
    """2/sqrt(pi) and the series coefficients to 2^-159, against mpmath."""
    with mpmath.workprec(400):
        k = 2 / mpmath.sqrt(mpmath.pi)
        for n, row in enumerate(erf64.ERF_SERIES_TD):
            want = k * (-1) ** n / (mpmath.factorial(n) * (2 * n + 1))
            got = sum(mpmath.mpf(float(w)) for w in row)
            assert abs(got / want - 1) < mpmath.mpf(2) ** -159


# --------------------------------------------------------------------------- inputs of particular kinds


def test_tiny_worst_cases_in_every_binade(backend):
    """For |x| < 2^-61, erf x = (2/sqrt(pi)) x (1 - x^2/3 ...) with x^2/3 < 2^-123.6:
    its hard cases are those of 2x/sqrt(pi), the same in every binade with a
    normal result.  The committed cases of [2^-61, 2^-60), scaled into every
    binade down to the subnormal results (both signs), are correctly rounded."""
    backend("cpu")
    hard = V64.load_hard_cases_f64("erf")[0]
    a = np.abs(hard)
    base = a[(a >= 2.0**-61) & (a < 2.0**-60)][:8]
    assert base.size > 0
    xs = np.concatenate([np.ldexp(base, -k) for k in range(0, 1014, 3)])
    xs = np.concatenate([xs[xs != 0], -xs[xs != 0][::7]])
    assert_bits("erf", run("erf", xs), V64.reference_bits("erf", (xs,)), xs)


def test_thresholds(backend):
    """Around the constants where the functions saturate or switch method:
    erf's 1/4, 2^-80 and 6; erfc's -6, 2^-80, 1/4 and 27.25 (the underflow to
    +0), and the subnormal results of erfc."""
    backend("cpu")
    points = [0.25, 2.0**-80, 6.0, -6.0, 27.25, 26.55, 27.0, 27.2, 5.9215871957945]
    xs = []
    for p in points:
        x = np.float64(p)
        down = up = x
        for _ in range(4):
            down, up = np.nextafter(down, -np.inf), np.nextafter(up, np.inf)
            xs += [down, up]
        xs += [x, -x]
    rng = np.random.Generator(np.random.PCG64(75))
    xs = np.concatenate([np.array(xs), rng.uniform(26.4, 27.3, 500)])
    for name in OPS:
        assert_bits(name, run(name, xs), V64.reference_bits(name, (xs,)), xs)


def test_table_is_what_its_generator_fits():
    """Three pieces of the committed erfcx table (first, middle, last) refitted
    by erf64_table.fit_piece give the same words, and meet the stated error."""
    for j in (0, 55, erf64.ERFCX_TD.shape[0] - 1):
        rows, worst, tails = erf64_table.fit_piece(j)
        assert np.array_equal(rows.view(np.uint64), erf64.ERFCX_TD[j].view(np.uint64)), j
        assert worst < mpmath.mpf(2) ** -150
        assert tails[erf64.FAST_SPLIT] < mpmath.mpf(2) ** -60


def test_subnormal_arguments_are_far_from_every_midpoint():
    """For a subnormal x = X 2^-1074 (X < 2^52), erf x = (2/sqrt(pi)) X 2^-1074 to
    within 2^-2000 relative, and every result (subnormal or in [2^-1022, 2^-1021))
    lies on the grid of 2^-1074: its distance to a midpoint is
    |2 b X - (2k + 1)| / 2 with b = 2/sqrt(pi), at least |q_n b - p_n| / 2 for the
    last convergent p_n/q_n of b with q_n <= 2^53 (best approximation).  That is
    2^-57.3 units of 2^-1074, far above the accurate path's < 2^-96 units: every
    subnormal argument is decided, without a list."""
    with mpmath.workprec(600):
        b = 2 / mpmath.sqrt(mpmath.pi)
        p_prev, q_prev, p, q = 1, 0, int(mpmath.floor(b)), 1
        frac = b - mpmath.floor(b)
        while True:
            frac = 1 / frac
            a = int(mpmath.floor(frac))
            frac -= a
            p_next, q_next = a * p + p_prev, a * q + q_prev
            if q_next > 2**53:
                break
            p_prev, q_prev, p, q = p, q, p_next, q_next
        distance = abs(q * b - p) / 2
        assert distance > mpmath.mpf(2) ** -58


# --------------------------------------------------------------------------- the plain-double first step


@numba.njit
def _plain_large(xs, out, q):
    for i in range(xs.size):
        out[i, 0], out[i, 1], q[i] = erf64.erfc_large_fast(xs[i])


def _mpfr_rel_error(words, xs, scale_exp, fn, arg_scale_exp=None):
    """max over rows of |sum(words) 2^scale_exp / fn(x) - 1| as log2, by MPFR at 320 bits
    (x = xs[i] 2^arg_scale_exp[i], exactly)."""
    import gmpy2
    worst = gmpy2.mpfr(0)
    with gmpy2.local_context(gmpy2.context(), precision=320):
        for i, (w, x, e) in enumerate(zip(words, xs, scale_exp)):
            xm = gmpy2.mpfr(float(x))
            if arg_scale_exp is not None:
                xm = gmpy2.mul_2exp(xm, int(arg_scale_exp[i]))
            s = gmpy2.mul_2exp(gmpy2.mpfr(float(w[0])) + gmpy2.mpfr(float(w[1])), int(e))
            worst = max(worst, abs(s / fn(xm) - 1))
        return float(gmpy2.log2(worst)) if worst else -np.inf


def test_plain_erfc_error_bound():
    """erf64.erfc_large_fast: erfc a to < 2^-78.5 relative on [2^-80, 26.5),
    every piece of its table sampled (random points and both ends), tiny a
    (the first piece of [0, 1/4), whose d is a itself) in every binade."""
    import gmpy2
    rng = np.random.Generator(np.random.PCG64(77))
    bounds = np.array([fast_tables.ERFCX_FAST.piece_bounds(j) for j in range(erf64.ERFCX_FAST.shape[0])])
    lo, hi = bounds[:, 0], bounds[:, 1]
    xs = np.concatenate([(lo + (hi - lo) * rng.random((6, lo.size))).ravel(), lo, np.nextafter(hi, 0.0),
                         rng.uniform(5.9, 6.0, 200),
                         2.0 ** rng.uniform(-80, -9, 500),
                         np.array([2.0**-80, 0.25, np.nextafter(0.25, 0.0), np.nextafter(6.0, 0.0),
                                   np.nextafter(26.5, 0.0), 26.25])])
    xs = xs[(xs >= 2.0**-80) & (xs < 26.5)]
    out, q = np.empty((xs.size, 2)), np.empty(xs.size, np.int64)
    _plain_large(xs, out, q)
    got = _mpfr_rel_error(out, xs, q, gmpy2.erfc)
    assert got < -78.5, got


@numba.njit
def _plain_steps(xs, r1, ok1, r2, ok2):
    for i in range(xs.size):
        r1[i], ok1[i] = erf_fast64(xs[i])
        r2[i], ok2[i] = erfc_fast64(xs[i])


def test_plain_step_decides_correctly():
    """The plain-double steps erf_fast64 and erfc_fast64 on their own: every
    decided result is the correctly rounded one (MPFR), around 0, 2^-1022,
    2^-400, 2^-80, 1/4, 6, 26.5 and 27.25 and at random, and they leave
    undecided only the stated ranges and a small fraction of the rest."""
    rng = np.random.Generator(np.random.PCG64(78))
    points = [2.0**-1022, 2.0**-400, 2.0**-80, 0.25, 6.0, 26.5, 27.25, 5e-324, 0.0]
    near = []
    for p in points:
        down = up = np.float64(p)
        for _ in range(6):
            down, up = np.nextafter(down, -np.inf), np.nextafter(up, np.inf)
            near += [down, up]
    near = np.array(near + points)
    xs = np.concatenate([near, -near, rng.uniform(-6.5, 6.5, 100000), rng.uniform(-0.25, 0.25, 30000),
                         rng.uniform(0.25, 27.5, 30000), 2.0 ** rng.uniform(-1030, -2, 20000), V64.special_inputs()])
    r1, r2 = np.empty(xs.size), np.empty(xs.size)
    ok1, ok2 = np.empty(xs.size, np.bool_), np.empty(xs.size, np.bool_)
    _plain_steps(xs, r1, ok1, r2, ok2)
    for name, r, ok in (("erf", r1, ok1), ("erfc", r2, ok2)):
        want = V64.reference_bits(name, (xs,))
        bad = ok & (r.view(np.uint64) != want)
        assert not bad.any(), (name, xs[bad][:5])
    a = np.abs(xs)
    normal = (a >= 2.0**-1022) | (a == 0) | np.isnan(xs)
    assert not ok1[(a > 0) & (a < 2.0**-1022)].any()
    assert (~ok1[normal]).mean() < 1e-3
    assert (~ok2).mean() < 1e-3


def test_plain_erfc_step_rounds_subnormal_results_once():
    """Where erfc x is subnormal or near 2^-1022 (26.5 <= x < 27.25), the
    plain-double step rounds h + l once onto the subnormal grid
    (exact64.decide_subnormal): every decided result is MPFR's, every
    argument beyond the 2^-1022 crossing's neighbourhood is decided, and
    more than 99.9% of all."""
    rng = np.random.Generator(np.random.PCG64(79))
    top = 26.543258  # erfc(top) is about 2^-1022
    xs = np.concatenate([rng.uniform(26.5, 27.25, 40000), rng.uniform(top - 1e-4, top + 1e-4, 20000),
                         rng.uniform(27.15, 27.25, 20000)])
    r, ok = np.empty(xs.size), np.empty(xs.size, np.bool_)
    _plain_steps(xs, np.empty(xs.size), np.empty(xs.size, np.bool_), r, ok)
    want = V64.reference_bits("erfc", (xs,))
    bad = ok & (r.view(np.uint64) != want)
    assert not bad.any(), xs[bad][:5]
    subnormal = (want > 0) & (want < np.float64(2.0**-1022).view(np.uint64))
    assert subnormal.sum() > 30000 and (want == 0).any()
    assert ok[xs > top + 1e-4].all()
    assert ok.mean() > 0.999


def test_plain_erfc_steps_are_dominated():
    """erfcx_fast's double-double steps add p d to c_k with fast_two_sum, exact
    only for |p d| <= |c_k|: on every piece of its table below 27.25,
    sum_{m > k} |c_m| h^(m-k) < ERFCX_FAST_DOMINANCE |c_k| for k < 4 (exact
    rationals)."""
    from fractions import Fraction
    table = erf64.ERFCX_FAST
    spec = fast_tables.ERFCX_FAST
    for j in range(table.shape[0]):
        lo, hi, c = spec.piece_bounds(j)
        if lo >= 27.25:
            continue
        h = Fraction(hi) - Fraction(c)
        for k in range(spec.low_words):
            rest = sum(abs(Fraction(table[j, m])) * h ** (m - k) for m in range(k + 1, spec.degree + 1))
            assert rest < Fraction(erf64.ERFCX_FAST_DOMINANCE) * abs(Fraction(table[j, k])), (j, k)


# --------------------------------------------------------------------------- erf's first step: a G(a)


@numba.njit
def _ratio(xs, j, d, out):
    for i in range(xs.size):
        j[i], d[i] = erf64.erf_ratio_piece(xs[i])
        h, l = erf64.erf_ratio_fast(j[i], d[i])
        out[i, 0], out[i, 1] = erf64.two_prod(xs[i], h)
        out[i, 1] = erf64.fma_rn(xs[i], l, out[i, 1])


def _ratio_pieces():
    return [fast_tables.ERF_RATIO.piece_bounds(j) for j in range(erf64.ERF_RATIO.shape[0])]


@numba.njit
def _ratio_pieces_of(xs, j, d):
    for i in range(xs.size):
        j[i], d[i] = erf64.erf_ratio_piece(xs[i])


@numba.njit
def _erfcx_fast_pieces_of(xs, j, d):
    for i in range(xs.size):
        j[i], d[i] = erf64.erfcx_fast_piece(xs[i])


@pytest.mark.parametrize("name, select, top", [("ERF_RATIO", _ratio_pieces_of, 6.0),
                                               ("ERFCX_FAST", _erfcx_fast_pieces_of, 32.0)])
def test_fast_table_piece_selection_is_exact(name, select, top):
    """Every a of a plain-double table's range (ERF_RATIO: [0, 6), ERFCX_FAST:
    [0, 32); tiny and subnormal a included) falls in its piece, and
    d = a - c_j exactly."""
    spec = getattr(fast_tables, name)
    rng = np.random.Generator(np.random.PCG64(80))
    starts = np.sort([spec.piece_bounds(j)[0] for j in range(spec.pieces)])
    assert starts[0] == 0
    tiny = 2.0 ** rng.uniform(-1074, -7, 500)
    xs = np.concatenate([starts, np.nextafter(starts, 0.0)[1:], np.nextafter(top, 0.0)[None],
                         rng.uniform(starts[0], top, 3000), tiny])
    j, d = np.empty(xs.size, np.int64), np.empty(xs.size)
    select(xs, j, d)
    for x, jj, dd in zip(xs, j, d):
        lo, hi, c = spec.piece_bounds(int(jj))
        assert lo <= x < hi
        assert mpmath.mpf(float(x)) - mpmath.mpf(c) == mpmath.mpf(float(dd))


def test_plain_ratio_error_bound():
    """erf64.erf_ratio_fast times a (two_prod and one fma, as erf_fast64 does):
    erf a to < 2^-77.07 relative on [2^-400, 6), every piece of the table
    sampled (random points and both ends)."""
    import gmpy2
    rng = np.random.Generator(np.random.PCG64(81))
    lo = np.array([p[0] for p in _ratio_pieces()])
    xs = np.concatenate([(lo + rng.uniform(0, 2.0**-7, (8, lo.size))).ravel(), lo[1:], np.nextafter(lo[1:], 0.0),
                         np.nextafter(6.0, 0.0)[None], 2.0 ** rng.uniform(-400, -7, 2000)])
    out = np.empty((xs.size, 2))
    _ratio(xs, np.empty(xs.size, np.int32), np.empty(xs.size), out)
    got = _mpfr_rel_error(out, xs, np.zeros(xs.size, np.int64), gmpy2.erf)
    assert got < -77.07, got


@pytest.mark.parametrize("name, pieces, error, tails", [
    ("ERF_RATIO", (0, 300, 767), -78.4, {1: -8.9, 3: -26.5}),
    ("ERFCX_FAST", (0, 128, 400, 895, 896, 1000, 1023), -80.19, {4: -32.0}),
])
def test_fast_tables_are_what_their_generator_fits(name, pieces, error, tails):
    """Pieces of the committed plain-double tables, refitted by
    erf64_fast_tables.fit_piece, give the same words, and meet the error and
    the tails that erf64.py's analyses use."""
    spec, table = getattr(fast_tables, name), getattr(erf64, name)
    for j in pieces:
        row, worst, got = fast_tables.fit_piece(spec, j)
        assert np.array_equal(row.view(np.uint64), table[j].view(np.uint64)), j
        assert worst < mpmath.mpf(2) ** error
        assert all(got[k] < mpmath.mpf(2) ** bound for k, bound in tails.items())


def test_plain_ratio_last_step_is_dominated():
    """erf_ratio_fast adds p d to g_0 with fast_two_sum, exact only for
    |p d| <= |g_0|: on every piece, sum_{m >= 1} |g_m| h^m < |g_0| (exact
    rationals, h the largest |d| of the piece)."""
    from fractions import Fraction
    table = erf64.ERF_RATIO
    for j, (lo, hi, c) in enumerate(_ratio_pieces()):
        h = max(abs(Fraction(lo) - Fraction(c)), abs(Fraction(hi) - Fraction(c)))
        rest = sum(abs(Fraction(table[j, m])) * h**m for m in range(1, fast_tables.ERF_RATIO.degree + 1))
        assert rest < abs(Fraction(table[j, 0])), j
