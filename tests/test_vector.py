"""The float32x8 and float32x16 vector primitives (softrep/primitives/vector.py) against MPFR.

`add_rn_f32x8` and `add_rn_f32x16` must be, in every lane, one IEEE-754 float32 addition rounded
to nearest (ties to even, subnormals kept, signed zeros as IEEE says): the
compiled CPU version (one LLVM vector fadd) and the Python semantics are both
checked lane by lane against gmpy2.  The data-movement operations (load,
store, transpose, lane extraction) must move bits unchanged.
"""

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from softrep.primitives import vector as V
from references import mpfr_op, same_bits
from strategies import floats

F32 = np.float32
LANES = V.LANES


@numba.njit
def _add_lanes(a, b, out):
    V.store_f32x8(out, 0, V.add_rn_f32x8(V.load_f32x8(a, 0), V.load_f32x8(b, 0)))


@numba.njit
def _chain(rows, out):
    # lane j: ((rows[0, j] + rows[1, j]) + rows[2, j]) + ..., as the sum kernels use it
    p = V.load_f32x8(rows[0], 0)
    for k in range(1, rows.shape[0]):
        p = V.add_rn_f32x8(p, V.load_f32x8(rows[k], 0))
    V.store_f32x8(out, 0, p)


@numba.njit
def _transpose(tile, out):
    cols = V.transpose_f32x8(V.load_f32x8(tile, 0), V.load_f32x8(tile, 8), V.load_f32x8(tile, 16),
                             V.load_f32x8(tile, 24), V.load_f32x8(tile, 32), V.load_f32x8(tile, 40),
                             V.load_f32x8(tile, 48), V.load_f32x8(tile, 56))
    for k in range(LANES):
        V.store_f32x8(out, LANES * k, cols[k])


@numba.njit
def _load_store(a, i, out, j):
    V.store_f32x8(out, j, V.load_f32x8(a, i))


def _check_lanes(a, b, got, where):
    for j in range(LANES):
        want = mpfr_op("add", (a[j], b[j]), F32)
        assert same_bits(F32(got[j]), want), (
            f"{where} lane {j}: add_rn({a[j]!r}, {b[j]!r}) = {got[j]!r}, MPFR says {want!r}")


def _both(a, b):
    out = np.empty(LANES, dtype=F32)
    _add_lanes(a, b, out)
    return out, V.add_rn_f32x8(a, b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(floats(F32), floats(F32)), min_size=LANES, max_size=LANES))
def test_each_lane_is_one_ieee_add(pairs):
    a = np.array([p[0] for p in pairs], dtype=F32)
    b = np.array([p[1] for p in pairs], dtype=F32)
    compiled, python = _both(a, b)
    _check_lanes(a, b, compiled, "compiled")
    _check_lanes(a, b, python, "python")


_TINY = F32(np.ldexp(1.0, -149))  # smallest subnormal
_MIN_NORMAL = F32(np.finfo(F32).tiny)
_MAX = F32(np.finfo(F32).max)
# (a, b) pairs that a flush-to-zero, a reassociating or a wrongly rounding
# vector add gets wrong; each group fills the 8 lanes.
_HAND = [
    # signed zeros: -0 + -0 = -0, the other sums of zeros and x + (-x) are +0 (nearest)
    [(-0.0, -0.0), (-0.0, 0.0), (0.0, -0.0), (0.0, 0.0), (3.0, -3.0), (-3.0, 3.0), (-_TINY, _TINY), (-0.0, 1.0)],
    # subnormals: operands, results, and a normal result from two subnormals
    [(_TINY, _TINY), (_TINY, -0.0), (-_TINY, 0.0), (_MIN_NORMAL, -_TINY), (_MIN_NORMAL, -_MIN_NORMAL / 2),
     (_MIN_NORMAL / 2, _MIN_NORMAL / 2), (F32(np.ldexp(1.5, -127)), F32(np.ldexp(-1.0, -126))),
     (F32(np.ldexp(3.0, -149)), F32(np.ldexp(-1.0, -148)))],
    # ties to even and one ulp above a tie
    [(1.0, F32(2.0**-24)), (F32(1 + 2**-23), F32(2.0**-24)), (-1.0, F32(-(2.0**-24))),
     (F32(2.0**24), 1.0), (F32(2.0**24 + 2), 1.0), (1.0, F32(2.0**-24 + 2.0**-47)),
     (F32(2.0**-126), F32(2.0**-150 * 3)), (16777216.0, -0.5)],
    # overflow, infinities, NaN
    [(_MAX, _MAX), (-_MAX, -_MAX), (_MAX, F32(np.ldexp(1.0, 103))), (_MAX, F32(np.ldexp(1.0, 102))),
     (np.inf, -np.inf), (np.inf, 1.0), (-np.inf, _MAX), (np.nan, 1.0)],
]


@pytest.mark.parametrize("group", range(len(_HAND)))
def test_hand_picked_lanes(group):
    with np.errstate(all="ignore"):
        a = np.array([p[0] for p in _HAND[group]], dtype=F32)
        b = np.array([p[1] for p in _HAND[group]], dtype=F32)
    compiled, python = _both(a, b)
    _check_lanes(a, b, compiled, "compiled")
    _check_lanes(a, b, python, "python")
    # the same pairs in reversed lane order: no lane depends on its position
    compiled_r, _ = _both(a[::-1].copy(), b[::-1].copy())
    np.testing.assert_array_equal(compiled_r.view(np.uint32), compiled[::-1].view(np.uint32))


def test_signed_zero_and_subnormal_bits():
    # spelled out, independently of MPFR: -0 + -0 is -0, -0 + +0 is +0, and
    # the smallest subnormal survives (no flush to zero)
    a = np.array([-0.0, -0.0, _TINY, _TINY, -_TINY, 1.0, 1.0, 0.0], dtype=F32)
    b = np.array([-0.0, 0.0, 0.0, _TINY, 0.0, -1.0, 0.0, _TINY], dtype=F32)
    compiled, _ = _both(a, b)
    bits = compiled.view(np.uint32)
    assert list(bits) == [0x80000000, 0, 1, 2, 0x80000001, 0, 0x3F800000, 1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(floats(F32), min_size=LANES * 20, max_size=LANES * 20))
def test_a_chain_of_vector_adds_is_eight_sequential_sums(values):
    rows = np.array(values, dtype=F32).reshape(20, LANES)
    out = np.empty(LANES, dtype=F32)
    _chain(rows, out)
    for j in range(LANES):
        want = rows[0, j]
        for k in range(1, 20):
            want = mpfr_op("add", (want, rows[k, j]), F32)
        assert same_bits(F32(out[j]), want), f"lane {j}"


def test_compiled_add_is_a_plain_vector_fadd():
    # no fast-math flag (reassoc, nnan, ninf, nsz, contract, afn, arcp, fast)
    # may be attached: each would let LLVM change the result of some lane
    a = np.ones(LANES, dtype=F32)
    _add_lanes(a, a, np.empty(LANES, dtype=F32))
    ir_text = "\n".join(_add_lanes.inspect_llvm().values())
    adds = [line for line in ir_text.splitlines() if " fadd " in line]
    assert adds and all("<8 x float>" in line for line in adds), adds
    for flag in ("fast", "reassoc", "nnan", "ninf", "nsz", "contract", "afn", "arcp"):
        assert not any(f"fadd {flag}" in line for line in adds), adds


def test_transpose_and_load_store_move_bits_unchanged():
    rng = np.random.default_rng(3)
    tile = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(F32)  # NaN payloads included
    out = np.empty(64, dtype=F32)
    _transpose(tile, out)
    want = tile.view(np.uint32).reshape(LANES, LANES).T.reshape(-1)
    np.testing.assert_array_equal(out.view(np.uint32), want)
    python = np.stack(V.transpose_f32x8(*[tile[LANES * j:LANES * (j + 1)] for j in range(LANES)]))
    np.testing.assert_array_equal(python.view(np.uint32).reshape(-1), want)
    moved = np.zeros(20, dtype=F32)
    _load_store(tile, 5, moved, 11)
    np.testing.assert_array_equal(moved[11:19].view(np.uint32), tile[5:13].view(np.uint32))
    assert not moved[:11].any() and not moved[19:].any()


@numba.njit
def _lanes(a, out):
    v = V.load_f32x8(a, 0)
    for j in range(LANES):
        out[j] = V.lane_f32x8(v, j)


def test_lane_extraction_moves_bits_unchanged():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32).view(F32)  # NaN payloads included
    out = np.zeros(LANES, dtype=F32)
    _lanes(a, out)
    np.testing.assert_array_equal(out.view(np.uint32), a.view(np.uint32))
    assert [V.lane_f32x8(a, j).view(np.uint32) for j in range(LANES)] == list(a.view(np.uint32))


def test_python_semantics_reject_bad_arguments():
    v = np.zeros(LANES, dtype=F32)
    with pytest.raises(TypeError, match="float32x8"):
        V.add_rn_f32x8(v, np.zeros(LANES, dtype=np.float64))
    with pytest.raises(TypeError, match="argument 'a'"):
        V.load_f32x8(np.zeros((2, 8), dtype=F32), 0)
    with pytest.raises(IndexError, match="argument 'i'"):
        V.load_f32x8(np.zeros(10, dtype=F32), 3)
    with pytest.raises(IndexError, match="argument 'j'"):
        V.lane_f32x8(v, 8)


@numba.njit
def _even_lanes(a, out):
    V.store_f32x8(out, 0, V.even_lanes_f32x8(V.load_f32x8(a, 0), V.load_f32x8(a, LANES)))


def test_even_lanes_move_bits_unchanged():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**32, 2 * LANES, dtype=np.uint64).astype(np.uint32).view(F32)  # NaN payloads included
    out = np.zeros(LANES, dtype=F32)
    _even_lanes(a, out)
    np.testing.assert_array_equal(out.view(np.uint32), a[::2].view(np.uint32))
    python = V.even_lanes_f32x8(a[:LANES].copy(), a[LANES:].copy())
    np.testing.assert_array_equal(python.view(np.uint32), a[::2].view(np.uint32))


WIDE = 2 * LANES


@numba.njit
def _add_lanes16(a, b, out):
    p = V.add_rn_f32x16(V.load_f32x8_pair(a, 0, LANES), V.load_f32x8_pair(b, 0, LANES))
    for j in range(WIDE):
        out[j] = V.lane_f32x16(p, j)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(floats(F32), floats(F32)), min_size=WIDE, max_size=WIDE))
def test_each_of_sixteen_lanes_is_one_ieee_add(pairs):
    a = np.array([p[0] for p in pairs], dtype=F32)
    b = np.array([p[1] for p in pairs], dtype=F32)
    out = np.empty(WIDE, dtype=F32)
    _add_lanes16(a, b, out)
    python = V.add_rn_f32x16(a, b)
    for j in range(WIDE):
        want = mpfr_op("add", (a[j], b[j]), F32)
        assert same_bits(F32(out[j]), want), f"compiled lane {j}: {a[j]!r} + {b[j]!r}"
        assert same_bits(F32(python[j]), want), f"Python lane {j}: {a[j]!r} + {b[j]!r}"


@numba.njit
def _transpose_pairs(tiles, out):
    # rows r of the first tile at 8r, of the second at 64 + 8r
    cols = V.transpose_f32x8_pairs(V.load_f32x8_pair(tiles, 0, 64), V.load_f32x8_pair(tiles, 8, 72),
                                   V.load_f32x8_pair(tiles, 16, 80), V.load_f32x8_pair(tiles, 24, 88),
                                   V.load_f32x8_pair(tiles, 32, 96), V.load_f32x8_pair(tiles, 40, 104),
                                   V.load_f32x8_pair(tiles, 48, 112), V.load_f32x8_pair(tiles, 56, 120))
    for k in range(LANES):
        for j in range(WIDE):
            out[WIDE * k + j] = V.lane_f32x16(cols[k], j)


def test_paired_transpose_and_loads_move_bits_unchanged():
    rng = np.random.default_rng(6)
    tiles = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32).view(F32)  # NaN payloads included
    out = np.empty(128, dtype=F32)
    _transpose_pairs(tiles, out)
    first, second = tiles.view(np.uint32)[:64].reshape(LANES, LANES), tiles.view(np.uint32)[64:].reshape(LANES, LANES)
    want = np.concatenate([first.T, second.T], axis=1).reshape(-1)  # column k: the first tile's, then the second's
    np.testing.assert_array_equal(out.view(np.uint32), want)
    python = np.stack(V.transpose_f32x8_pairs(*[V.load_f32x8_pair(tiles, LANES * r, 64 + LANES * r)
                                                for r in range(LANES)]))
    np.testing.assert_array_equal(python.view(np.uint32).reshape(-1), want)
    assert [V.lane_f32x16(python[0], j).view(np.uint32) for j in range(WIDE)] == list(want[:WIDE])


def test_sixteen_lane_python_semantics_reject_bad_arguments():
    v = np.zeros(WIDE, dtype=F32)
    with pytest.raises(TypeError, match="float32x16"):
        V.add_rn_f32x16(v, np.zeros(LANES, dtype=F32))
    with pytest.raises(IndexError, match="argument 'j'"):
        V.load_f32x8_pair(np.zeros(20, dtype=F32), 0, 13)
    with pytest.raises(IndexError, match="argument 'j'"):
        V.lane_f32x16(v, 16)
