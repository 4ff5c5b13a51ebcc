"""Reductions: sum, mean, var, std, amax, amin, argmax, argmin, sum_to_shape.

The reference for every sum is an independent emulation of the order written
in docs/order.md: numpy float32/float64 scalar additions (IEEE round to
nearest, one rounding each) in the documented sequence, with the pairwise tree
built level by level here.  Results are compared bit for bit.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import softrep
from softrep.algorithms import reduction as O
from softrep.cpu import reduce as cpu_reduce
from golden import bit_pattern_tensor, check, normal_tensor
from references import documented_sum

DTYPES = [torch.float32, torch.float64]
NP = {torch.float32: np.float32, torch.float64: np.float64}
UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


# --------------------------------------------------------------------------- the reference


def rows_of(x, dims):
    """numpy x reshaped to [M, n]: reduced dims last, in row-major order."""
    x = np.asarray(x)
    if x.ndim == 0:
        return x.reshape(1, 1), ()
    dims = sorted(d % x.ndim for d in dims)
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, kept + dims)
    n = int(np.prod([x.shape[d] for d in dims]))
    m = int(np.prod([x.shape[d] for d in kept]))
    return moved.reshape(m, n), tuple(x.shape[d] for d in kept)


def _canon(a):
    a = np.array(a)
    a[np.isnan(a)] = np.nan
    return a


def ref_reduce(x, dims, fn, keepdim=False):
    """Apply fn(row) -> scalar to each row; shape as torch with keepdim."""
    x = np.asarray(x)
    if dims is None:
        dims = tuple(range(x.ndim))
    rows, kept_shape = rows_of(x, dims)
    out = np.array([fn(r) for r in rows], dtype=rows.dtype if rows.dtype.kind == "f" else None)
    if keepdim and x.ndim:
        shape = tuple(1 if d in [e % x.ndim for e in dims] else s for d, s in enumerate(x.shape))
        return out.reshape(shape)
    return out.reshape(kept_shape)


def ref_sum_row(row):
    s = documented_sum(row)
    return row.dtype.type(0.0) if s is None else s


def ref_mean_row(row):
    with np.errstate(all="ignore"):
        return ref_sum_row(row) / row.dtype.type(len(row))


def ref_var_row(row, correction=1):
    t = row.dtype.type
    with np.errstate(all="ignore"):
        m = ref_mean_row(row)
        squares = [(v - m) * (v - m) for v in row]
        s = documented_sum(squares)
        s = t(0.0) if s is None else s
        return s / t(max(len(row) - correction, 0))


def order_key(v):
    """The documented total order: NaN largest, then +inf > ... > +0 > -0 > ... > -inf."""
    if np.isnan(v):
        return (2, 0)
    return (1, float(v), 0 if np.signbit(v) else 1)


def ref_argmax_row(row):
    keys = [order_key(v) for v in row]
    best = max(keys)
    return keys.index(best)


def ref_argmin_row(row):
    keys = [(2, 0) if np.isnan(v) else (1, -float(v), 1 if np.signbit(v) else 0) for v in row]
    return keys.index(max(keys))


def bits(t):
    a = np.ascontiguousarray(t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t)
    return a.view(UINT[a.dtype]) if a.dtype.kind == "f" else a


def assert_bits_equal(got, want):
    got_a = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    want_a = np.asarray(want, dtype=got_a.dtype)
    assert got_a.shape == want_a.shape, (got_a.shape, want_a.shape)
    if got_a.dtype.kind == "f":
        want_a = _canon(want_a)
    np.testing.assert_array_equal(bits(got_a), bits(want_a))


def wide_values(seed, shape, dtype):
    """Values over a wide exponent range, so that a change of order changes the bits."""
    rng = np.random.default_rng(seed)
    np_t = NP[dtype]
    n = int(np.prod(shape))
    span = 20 if dtype == torch.float32 else 60
    v = rng.standard_normal(n) * np.exp2(rng.integers(-span, span, n))
    return torch.from_numpy(v.astype(np_t)).reshape(shape)


# (shape, dim, keepdim): n = 0, 1, 127, 128, 129, 256, 1000, tuples, negative dims
CASES = [
    ((3, 0), 1, False),
    ((0, 4), 0, False),
    ((5, 1), 1, False),
    ((4, 127), 1, False),
    ((3, 128), -1, True),
    ((3, 129), 1, False),
    ((2, 256), 1, False),
    ((2, 1000), 1, True),
    ((1000, 3), 0, False),
    ((4, 5, 6), (0, 2), False),
    ((4, 5, 6), (-1, -3), True),
    ((6, 7, 40), (1, 2), False),
    ((3, 50, 2, 3), (1, 3), False),
    # a middle run of dims, read in place (kept dims on both sides)
    ((4, 300, 6), 1, False),
    ((3, 5, 7, 4), (1, 2), True),
    ((2, 129, 3), -2, False),
    # reduced dims on both sides of the kept ones, read in place: runs of 300
    # (groups of 8 blocks cross them), of 49 (< one block), of 1100 (the
    # first group inside one run, the second across two)
    ((3, 4, 300), (0, 2), False),
    ((5, 2, 7, 7), (0, 2, 3), True),
    ((2, 3, 1100), (0, -1), False),
    ((37,), None, False),
    ((2, 3, 4), None, True),
    ((2, 3, 4), (), False),
    ((), None, False),
]


def _call(fn, x, dim, keepdim, **kw):
    if dim is None:
        return fn(x, keepdim=keepdim, **kw) if keepdim else fn(x, **kw)
    return fn(x, dim, keepdim=keepdim, **kw)


def _ref_dims(x, dim):
    if dim is None or dim == ():
        return tuple(range(x.dim()))
    return dim if isinstance(dim, tuple) else (dim,)


# --------------------------------------------------------------------------- sum order, bit for bit


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim,keepdim", CASES)
def test_sum_mean_var_std_match_documented_order(dtype, shape, dim, keepdim):
    x = wide_values(1, shape, dtype)
    dims = _ref_dims(x, dim)
    xn = x.numpy()
    assert_bits_equal(_call(softrep.sum, x, dim, keepdim), ref_reduce(xn, dims, ref_sum_row, keepdim))
    assert_bits_equal(_call(softrep.mean, x, dim, keepdim), ref_reduce(xn, dims, ref_mean_row, keepdim))
    with np.errstate(all="ignore"):
        v = ref_reduce(xn, dims, ref_var_row, keepdim)
        assert_bits_equal(_call(softrep.var, x, dim, keepdim), v)
        assert_bits_equal(_call(softrep.std, x, dim, keepdim), np.sqrt(v))
        v0 = ref_reduce(xn, dims, lambda r: ref_var_row(r, 0), keepdim)
        assert_bits_equal(_call(softrep.var, x, dim, keepdim, correction=0), v0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim,keepdim", CASES)
def test_extremes_match_reference(dtype, shape, dim, keepdim):
    x = wide_values(2, shape, dtype)
    if x.numel() > 3:  # ties, signed zeros, NaN and infinities
        flat = x.view(-1)
        flat[0], flat[-1], flat[1] = 0.0, -0.0, float("inf")
        flat[len(flat) // 2] = float("nan")
    dims = _ref_dims(x, dim)
    xn = x.numpy()
    n = int(np.prod([x.shape[d] for d in dims])) if x.dim() else 1
    if n == 0:
        with pytest.raises(ValueError, match="input"):
            _call(softrep.amax, x, dim, keepdim)
        return
    amax_ref = ref_reduce(xn, dims, lambda r: r[ref_argmax_row(r)], keepdim)
    amin_ref = ref_reduce(xn, dims, lambda r: r[ref_argmin_row(r)], keepdim)
    assert_bits_equal(_call(softrep.amax, x, dim if dim is not None else (), keepdim), amax_ref)
    assert_bits_equal(_call(softrep.amin, x, dim if dim is not None else (), keepdim), amin_ref)
    if dim is None or isinstance(dim, int):
        am = _call(softrep.argmax, x, dim, keepdim)
        want = ref_reduce(xn, dims, ref_argmax_row, keepdim)
        if dim is None and not keepdim:
            want = want.reshape(())
        np.testing.assert_array_equal(am.numpy(), want)
        assert am.dtype == torch.int64
        np.testing.assert_array_equal(_call(softrep.argmin, x, dim, keepdim).numpy(),
                                      ref_reduce(xn, dims, ref_argmin_row, keepdim).reshape(am.shape))


def test_sum_non_contiguous_inputs():
    base = wide_values(3, (40, 300), torch.float32)
    for x in (base.t(), base[::3, 7:280:2], base.t()[5:200:3]):
        assert not x.is_contiguous()
        for dim in (0, 1, (0, 1)):
            dims = dim if isinstance(dim, tuple) else (dim,)
            want = ref_reduce(x.numpy(), dims, ref_sum_row)
            assert_bits_equal(softrep.sum(x, dim), want)
            assert_bits_equal(softrep.sum(x.contiguous(), dim), want)


def test_signed_zero_and_empty_sums():
    z = torch.full((3, 300), -0.0)
    assert bits(softrep.sum(z, 1)).tolist() == [0x80000000] * 3  # blocks start at their first element
    assert bits(softrep.sum(torch.zeros(2, 0), 1)).tolist() == [0, 0]  # n = 0: +0
    assert bits(softrep.sum(torch.zeros(0, 3, dtype=torch.float64), 0)).tolist() == [0, 0, 0]


def test_middle_dims_read_in_place_keep_zeros_and_nan(monkeypatch):
    calls = []
    slabs = cpu_reduce.sum_values_of_slabs
    monkeypatch.setattr(cpu_reduce, "sum_values_of_slabs", lambda *a: calls.append(a) or slabs(*a))
    payload = np.array([0x7FC12345], dtype=np.uint32).view(np.float32)[0]
    x = torch.full((2, 300, 3), -0.0)
    x[1, 200, 2] = float(payload)
    got = bits(softrep.sum(x, 1))
    assert calls
    assert got.tolist() == [[0x80000000] * 3, [0x80000000, 0x80000000, 0x7FC00000]]
    assert bits(softrep.sum(torch.zeros(2, 0, 3), 1)).tolist() == [[0] * 3] * 2  # n = 0: +0


def test_dims_around_the_kept_ones_read_in_place(monkeypatch):
    # NCHW over (0, 2, 3): each channel's sequence is N runs of H*W elements,
    # read from the input without a copy into rows; more than one work item
    # per channel (RUN_SPAN elements each), blocks and groups across runs
    calls = []
    for name in ("sum_values_of_runs", "sum_centered_squares_of_runs"):
        launcher = getattr(cpu_reduce, name)
        monkeypatch.setattr(cpu_reduce, name, lambda *a, f=launcher, name=name: calls.append(name) or f(*a))
    for dtype in DTYPES:
        x = wide_values(4, (3, 2, 71, 91), dtype)  # 19383 elements per channel
        assert 3 * 71 * 91 > cpu_reduce.RUN_SPAN
        want = ref_reduce(x.numpy(), (0, 2, 3), ref_sum_row)
        assert_bits_equal(softrep.sum(x, (0, 2, 3)), want)
        with np.errstate(all="ignore"):
            assert_bits_equal(softrep.var(x, (0, 2, 3), correction=0),
                              ref_reduce(x.numpy(), (0, 2, 3), lambda r: ref_var_row(r, 0)))
    assert calls == ["sum_values_of_runs", "sum_values_of_runs", "sum_centered_squares_of_runs"] * 2
    payload = np.array([0x7FC12345], dtype=np.uint32).view(np.float32)[0]
    z = torch.full((3, 2, 300), -0.0)
    z[2, 1, 299] = float(payload)
    assert bits(softrep.sum(z, (0, 2))).tolist() == [0x80000000, 0x7FC00000]  # blocks start at their first element
    assert bits(softrep.sum(torch.zeros(2, 3, 0), (0, 2))).tolist() == [0, 0, 0]  # n = 0: +0


def test_extremes_read_in_place(monkeypatch):
    # amax/amin/argmax over a middle run of dims and over dims on both sides
    # of the kept ones, without a copy into rows (amax and amin over a middle
    # run by their values alone): ties (repeated values, +-0) keep the first
    # index in row-major order, a NaN wins canonical
    calls = []
    for name in ("extreme_of_slabs", "extreme_values_of_slabs", "extreme_of_runs"):
        launcher = getattr(cpu_reduce, name)
        monkeypatch.setattr(cpu_reduce, name, lambda *a, f=launcher, name=name: calls.append(name) or f(*a))
    payload = np.array([0x7FC12345], dtype=np.uint32).view(np.float32)[0]
    shape = (3, 12, 4, 130)  # more than OUTPUT_CHUNK outputs per slab
    for dtype, ties in ((torch.float32, True), (torch.float64, True), (torch.float32, False), (torch.float64, False)):
        rng = np.random.default_rng(5)
        x = (torch.from_numpy(rng.integers(-3, 4, shape).astype(NP[dtype])) if ties  # many ties
             else wide_values(6, shape, dtype))  # distinct values, the extremes anywhere
        flat = x.view(-1)
        flat[7] = -0.0
        flat[1000] = float(payload)  # sample 0, channel 1: a NaN in channel 1 and in row (0, 1, 3)
        xn = x.numpy()
        for dims in ((1,), (1, 2), (0, 2, 3), (0, 3)):
            want_max = ref_reduce(xn, dims, lambda r: r[ref_argmax_row(r)])
            want_min = ref_reduce(xn, dims, lambda r: r[ref_argmin_row(r)])
            assert_bits_equal(softrep.amax(x, dims), want_max)
            assert_bits_equal(softrep.amin(x, dims), want_min)
        for dim in (1, 2):
            np.testing.assert_array_equal(softrep.argmax(x, dim).numpy(), ref_reduce(xn, (dim,), ref_argmax_row))
            np.testing.assert_array_equal(softrep.argmin(x, dim).numpy(), ref_reduce(xn, (dim,), ref_argmin_row))
    # per input: amax and amin over two slab and two run layouts, argmax and argmin over two slab layouts
    assert [calls.count(name) for name in ("extreme_values_of_slabs", "extreme_of_runs", "extreme_of_slabs")] == \
        [4 * 4, 4 * 4, 4 * 4]
    assert bits(softrep.amax(torch.full((2, 3, 300), -0.0), (0, 2))).tolist() == [0x80000000] * 3


def test_nan_outputs_are_canonical():
    payload = np.array([0x7FC12345], dtype=np.uint32).view(np.float32)[0]
    x = torch.ones(2, 300)
    x[0, 17] = float(payload)
    assert bits(x)[0, 17] == 0x7FC12345
    assert bits(softrep.sum(x, 1))[0] == 0x7FC00000
    assert bits(softrep.amax(x, 1))[0] == 0x7FC00000
    assert bits(softrep.amin(x, 1))[0] == 0x7FC00000
    assert softrep.argmax(x, 1).tolist() == [17, 0]


# --------------------------------------------------------------------------- order tests (FPRev style)


def _alternative_orders():
    def sequential(r):
        p = r[0]
        for v in r[1:]:
            p = p + v
        return p

    def blocks(size, from_zero=False, right_tree=False):
        def f(r):
            ps = []
            for s in range(0, len(r), size):
                p = r.dtype.type(0.0) if from_zero else r[s]
                for v in r[s + (0 if from_zero else 1):s + size]:
                    p = p + v
                ps.append(p)
            while len(ps) > 1:
                if right_tree and len(ps) % 2:  # odd partial carried from the front
                    ps = [ps[0]] + [ps[2 * t + 1] + ps[2 * t + 2] for t in range(len(ps) // 2)]
                else:
                    nxt = [ps[2 * t] + ps[2 * t + 1] for t in range(len(ps) // 2)]
                    ps = nxt + ([ps[-1]] if len(ps) % 2 else [])
            return ps[0]
        return f

    def sequential_partials(r):
        ps = [documented_sum(r[s:s + 128]) for s in range(0, len(r), 128)]
        return sequential(np.array(ps, dtype=r.dtype))

    return {
        "sequential": sequential,
        "blocks of 64": blocks(64),
        "blocks of 256": blocks(256),
        "tree carrying from the front": blocks(128, right_tree=True),
        "partials added sequentially": sequential_partials,
        "numpy pairwise": lambda r: np.sum(r),
    }


def _fprev_inputs(n, dtype):
    """Rows of ones with one +2**k and one -2**k: the ones absorbed by the big
    values, hence the sum, reveal where in the order the two meet."""
    big = 2.0 ** (40 if dtype == np.float32 else 70)  # absorbs any partial of ones
    rng = np.random.default_rng(n)
    pairs = [(0, n - 1), (0, 128), (127, 128), (n // 2, n - 1), (1, n - 2)]
    pairs += [tuple(rng.choice(n, 2, replace=False)) for _ in range(20)]
    rows = []
    for i, j in pairs:
        r = np.ones(n, dtype=dtype)
        r[i], r[j] = big, -big
        rows.append(r)
    return np.array(rows)


@pytest.mark.parametrize("n", [640, 1153, 1500])  # 5, 10, 12 blocks (3 blocks: any tree is sequential)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fprev_only_the_documented_order_explains_the_sums(n, dtype):
    rows = _fprev_inputs(n, dtype)
    got = softrep.sum(torch.from_numpy(rows), 1).numpy()
    want = np.array([documented_sum(r) for r in rows], dtype=dtype)
    np.testing.assert_array_equal(got, want)
    for name, order in _alternative_orders().items():
        alt = np.array([order(r) for r in rows], dtype=dtype)
        assert not np.array_equal(alt, got), f"the inputs do not tell the documented order from {name!r}"


def test_fprev_signed_zero_tells_the_block_start():
    # -0 + -0 = -0 but +0 + -0 = +0: only blocks that start from their first element give -0.
    assert bits(softrep.sum(torch.full((129,), -0.0))) == 0x80000000
    from_zero = np.float32(0.0)
    for v in np.full(129, -0.0, np.float32):
        from_zero = from_zero + v
    assert not np.signbit(from_zero)


# --------------------------------------------------------------------------- invariances


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_invariance(dtype):
    x = wide_values(4, (50, 700), dtype)
    for op in (softrep.sum, softrep.mean, softrep.var, softrep.std, softrep.amax, softrep.argmax):
        full = op(x, 1)
        for m in (1, 7, 33):
            np.testing.assert_array_equal(bits(op(x[:m], 1)), bits(full[:m]))
    # the column layout (dim 0, outputs contiguous) agrees with the rows of the transpose
    np.testing.assert_array_equal(bits(softrep.sum(x.t().contiguous(), 0)), bits(softrep.sum(x, 1)))
    np.testing.assert_array_equal(bits(softrep.sum(x.t().contiguous()[:, :9], 0)), bits(softrep.sum(x, 1)[:9]))
    # ... for every op, over outputs in several chunks (cpu/reduce.py's
    # OUTPUT_CHUNK), with ties, signed zeros and NaN for the extremes
    x = wide_values(6, (600, 300), dtype)
    x[::7, ::3] = 2.0
    x[::5, 1::4], x[1::5, 1::4] = 0.0, -0.0
    x[3::11, ::5] = float("nan")
    for op in (softrep.sum, softrep.mean, softrep.var, softrep.amax, softrep.amin, softrep.argmax, softrep.argmin):
        np.testing.assert_array_equal(bits(op(x.t().contiguous(), 0)), bits(op(x, 1)), err_msg=op.__name__)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layout_invariance(dtype):
    x = wide_values(5, (6, 40, 90), dtype)
    layouts = [x, x.permute(2, 0, 1).contiguous().permute(1, 2, 0), x.transpose(0, 1).contiguous().transpose(0, 1),
               torch.empty(6, 40, 180, dtype=dtype)[:, :, ::2].copy_(x)]
    for dim in (0, 1, 2, (0, 2), (1, 2), None):
        for op in (softrep.sum, softrep.amin):
            results = [bits(op(t, dim) if dim is not None else op(t)) for t in layouts]
            for r in results[1:]:
                np.testing.assert_array_equal(r, results[0])


_THREAD_SCRIPT = r"""
import hashlib, json, numpy as np, torch, softrep
rng = np.random.default_rng(7)
a = torch.from_numpy((rng.standard_normal(10**6) * np.exp2(rng.integers(-20, 20, 10**6))).astype(np.float32))
m = a[: 600 * 1500].reshape(600, 1500)
d = {}
for name, t in [("sum_all", softrep.sum(a)), ("sum_dim0", softrep.sum(m, 0)), ("sum_dim1", softrep.sum(m, 1)),
                ("amax_dim0", softrep.amax(m, 0)), ("argmax_all", softrep.argmax(a))]:
    d[name] = hashlib.sha256(t.numpy().tobytes()).hexdigest()
print(json.dumps(d))
"""


def test_thread_count_invariance():
    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, SOFTREP_BACKEND="cpu")
        proc = subprocess.run([sys.executable, "-c", _THREAD_SCRIPT], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        digests.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert digests[0] == digests[1]


# --------------------------------------------------------------------------- streaming helpers


def _stream_sum_py(values):
    stack = np.zeros(O.STACK, dtype=values.dtype)
    count = 0
    for v in values:
        count = O.stream_add(stack, count, v)
    return O.stream_total(stack, count)


def _tree_sum_py(values):
    stack = np.zeros(O.STACK, dtype=values.dtype)
    nb = 0
    for s in range(0, len(values), O.BLOCK):
        nb = O.tree_push(stack, nb, O.block_sum(values, s, min(s + O.BLOCK, len(values))))
    return O.tree_total(stack, nb)


@pytest.fixture(scope="module")
def jitted_helpers():
    from numba import njit

    @njit
    def stream(values):
        stack = np.empty(O.STACK, dtype=values.dtype)
        count = 0
        for i in range(values.size):
            count = O.stream_add(stack, count, values[i])
        return O.stream_total(stack, count)

    @njit
    def tree(values):
        stack = np.empty(O.STACK, dtype=values.dtype)
        nb = 0
        for s in range(0, values.size, O.BLOCK):
            nb = O.tree_push(stack, nb, O.block_sum(values, s, min(s + O.BLOCK, values.size)))
        return O.tree_total(stack, nb)

    return stream, tree


@pytest.mark.parametrize("n", [0, 1, 127, 128, 129, 256, 1000, 128 * 7 + 5, 128 * 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streaming_helpers_follow_the_order(n, dtype, jitted_helpers):
    vals = wide_values(n, (n,), torch.float32 if dtype == np.float32 else torch.float64).numpy()
    want = documented_sum(vals)
    want = dtype(0.0) if want is None else want
    stream, tree = jitted_helpers
    for got in (_stream_sum_py(vals), _tree_sum_py(vals), stream(vals), tree(vals)):
        assert type(got) in (dtype, float) or np.asarray(got).dtype == dtype
        assert bits(np.asarray(got, dtype=dtype)) == bits(np.asarray(want, dtype=dtype))


@pytest.fixture(scope="module")
def jitted_row_sum():
    from numba import njit

    @njit
    def row_sum(values):
        return O.row_sum(values, np.empty(64, dtype=values.dtype))

    return row_sum


ROW_SUM_LENGTHS = [1, 2, 8, 64, 127, 128, 129, 136, 255, 256, 300, 640, 1000, 1023, 1024, 1025, 8 * 128 + 7,
                   8 * 128 + 8, 15 * 128, 15 * 128 + 1, 16 * 128, 16 * 128 + 100, 3000]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_sum_follows_the_order_for_every_group_shape(dtype, jitted_row_sum):
    # row_sum (softmax's denominators, the norms' row sums) advances groups of
    # up to 8 blocks side by side, the last group with a shorter last block
    # and spare chains that are discarded: whole groups, groups of 1 to 7
    # blocks, a short last block or a whole one, and a reversed (negative
    # stride) row, compiled and in Python (the simulator's path), against the
    # reference's left-to-right blocks and tree.  Compiled float32 rows of a
    # length that is a multiple of 8 take the vector tiles
    # (`row_partials_tiles`), the others the scalar chains.  NaN payloads,
    # infinities and signed zeros ride along.
    for n in ROW_SUM_LENGTHS:
        vals = wide_values(n, (n,), torch.float32 if dtype == np.float32 else torch.float64).numpy()
        if n > 200:
            vals[n // 3] = -0.0
            vals[n - 2] = np.inf if n % 2 else vals[n - 2]
        for row in (vals, vals[::-1]):
            want = bits(np.asarray(documented_sum(row), dtype=dtype))
            assert bits(np.asarray(jitted_row_sum(row), dtype=dtype)) == want, n
            if n <= 1025:
                assert bits(np.asarray(O.row_sum(row, np.empty(64, dtype=dtype)), dtype=dtype)) == want, n


# --------------------------------------------------------------------------- golden vectors


@pytest.mark.parametrize("dtype", DTYPES)
def test_golden(dtype):
    name = str(dtype).split(".")[-1]
    normal = normal_tensor(11, (33, 517), dtype)
    pattern = bit_pattern_tensor(12, (9, 300), dtype)
    check("reduction.json", f"sum.{name}.dim1", softrep.sum(normal, 1))
    check("reduction.json", f"sum.{name}.dim0", softrep.sum(normal, 0))
    check("reduction.json", f"sum.{name}.all", softrep.sum(normal))
    check("reduction.json", f"mean.{name}.dim1", softrep.mean(normal, 1))
    check("reduction.json", f"var.{name}.dim0", softrep.var(normal, 0))
    check("reduction.json", f"std.{name}.all", softrep.std(normal))
    check("reduction.json", f"sum.{name}.bits", softrep.sum(pattern, 1))
    check("reduction.json", f"amax.{name}.bits", softrep.amax(pattern, 1))
    check("reduction.json", f"amin.{name}.bits", softrep.amin(pattern, 0))
    check("reduction.json", f"argmax.{name}.bits", softrep.argmax(pattern, 1))
    _small_golden(dtype)


def _small_golden(dtype):
    # small enough for the simulator, which checks the same digests
    name = str(dtype).split(".")[-1]
    small = normal_tensor(13, (3, 300), dtype)
    check("reduction.json", f"small.sum.{name}", softrep.sum(small, 1))
    check("reduction.json", f"small.var.{name}", softrep.var(small, 0))
    check("reduction.json", f"small.amax.{name}", softrep.amax(bit_pattern_tensor(14, (3, 40), dtype), 1))


# --------------------------------------------------------------------------- autograd


def _grad_ops():
    return {
        "sum": lambda t: softrep.sum(t, (0, 2)),
        "sum_all": lambda t: softrep.sum(t),
        "mean": lambda t: softrep.mean(t, 1, keepdim=True),
        "var": lambda t: softrep.var(t, 1),
        "var_c0": lambda t: softrep.var(t, (0, 2), correction=0),
        "std": lambda t: softrep.std(t, -1),
        "amax": lambda t: softrep.amax(t, 1),
        "amin": lambda t: softrep.amin(t, (0, 2), keepdim=True),
        "sum_to_shape": lambda t: softrep.ops.reduction.sum_to_shape(t, (4, 1)),
    }


@pytest.mark.parametrize("name", list(_grad_ops()))
def test_gradcheck_float64(name):
    x = torch.randn(2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3), requires_grad=True)
    assert torch.autograd.gradcheck(_grad_ops()[name], (x,))
    if name in ("sum", "var"):
        assert torch.autograd.gradgradcheck(_grad_ops()[name], (x,))


def test_amax_gradient_shared_among_ties_like_torch():
    for vals in ([1.0, 3.0, 3.0], [3.0, -0.0, 0.0, 3.0, 3.0], [0.0, -0.0], [1.0, float("nan"), 2.0]):
        x = torch.tensor(vals, requires_grad=True)
        y = torch.tensor(vals, requires_grad=True)
        softrep.amax(x).backward(torch.tensor(2.0))
        torch.amax(y).backward(torch.tensor(2.0))
        np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "amax", "amin"])
def test_float32_close_to_torch(name):
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(4), requires_grad=True)
    y = x.detach().clone().requires_grad_(True)
    torch_ops = {"sum": lambda t: torch.sum(t, (0, 2)), "mean": lambda t: torch.mean(t, 1, keepdim=True),
                 "var": lambda t: torch.var(t, 1), "std": lambda t: torch.std(t, -1),
                 "amax": lambda t: torch.amax(t, 1), "amin": lambda t: torch.amin(t, (0, 2), keepdim=True)}
    a, b = _grad_ops()[name](x), torch_ops[name](y)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    g = torch.randn(a.shape, generator=torch.Generator().manual_seed(5))
    a.backward(g)
    b.backward(g)
    torch.testing.assert_close(x.grad, y.grad, rtol=1e-5, atol=1e-6)


def test_backward_orders_are_the_documented_formulas():
    x = wide_values(6, (3, 200), torch.float64).requires_grad_(True)
    g = wide_values(7, (3,), torch.float64)
    softrep.mean(x, 1).backward(g)
    assert_bits_equal(x.grad, np.broadcast_to((g.numpy() / np.float64(200))[:, None], (3, 200)))
    x.grad = None
    softrep.var(x, 1).backward(g)
    m = ref_reduce(x.detach().numpy(), (1,), ref_mean_row, keepdim=True)
    scale = (g.numpy() * 2.0 / np.float64(199))[:, None]
    assert_bits_equal(x.grad, scale * (x.detach().numpy() - m))


def test_var_degrees_of_freedom_like_torch():
    for vals, c in (([1.0], 1), ([], 1), ([1.0, 2.0], 3), ([1.0, 1.0], 3), ([1.0, 2.0], 0.5)):
        x = torch.tensor(vals)
        np.testing.assert_array_equal(softrep.var(x, correction=c).numpy(),
                                      torch.var(x, correction=c).numpy())


# --------------------------------------------------------------------------- bad input


def test_bad_arguments_name_the_argument():
    x = torch.ones(2, 3)
    with pytest.raises(IndexError, match="dim"):
        softrep.sum(x, 2)
    with pytest.raises(IndexError, match="dim"):
        softrep.mean(x, (0, -3))
    with pytest.raises(ValueError, match="dim"):
        softrep.var(x, (1, -1))
    with pytest.raises(TypeError, match="dim"):
        softrep.sum(x, 1.0)
    with pytest.raises(TypeError, match="dim"):
        softrep.argmax(x, (0, 1))
    for op in (softrep.sum, softrep.mean, softrep.var, softrep.std, softrep.amax, softrep.argmax):
        with pytest.raises(TypeError, match="input"):
            op(torch.ones(2, 3, dtype=torch.int64))
        with pytest.raises(TypeError, match="input"):
            op([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="dtype"):
        softrep.sum(x, dtype=torch.float64)
    assert softrep.sum(x, dtype=torch.float32).item() == 6.0
    with pytest.raises(ValueError, match="input"):
        softrep.amax(torch.ones(0, 3), 0)
    with pytest.raises(TypeError, match="correction"):
        softrep.var(x, correction="1")


def test_inputs_are_not_modified():
    x = wide_values(8, (5, 300), torch.float32)
    before = bits(x).copy()
    for op in (softrep.sum, softrep.var, softrep.amax):
        op(x, 1)
        op(x.t(), 0)
    np.testing.assert_array_equal(bits(x), before)


# --------------------------------------------------------------------------- CUDA kernels in the simulator

SIM_CASES = [((3, 0), 1), ((2, 1), 1), ((2, 129), 1), ((2, 3, 130), (0, 2)), ((300, 2), 0), ((7,), 0)]


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", SIM_CASES)
def test_simulator_matches_reference_and_cpu(dtype, shape, dim, backend):
    x = wide_values(9, shape, dtype)
    if x.numel() > 2:
        x.view(-1)[1] = -0.0
    dims = dim if isinstance(dim, tuple) else (dim,)
    backend("cuda")
    got = {name: op(x, dim) for name, op in
           [("sum", softrep.sum), ("var", softrep.var), ("mean", softrep.mean)]}
    if x.numel():
        got["amax"], got["amin"] = softrep.amax(x, dim), softrep.amin(x, dim)
        if isinstance(dim, int):
            got["argmax"] = softrep.argmax(x, dim)
    assert_bits_equal(got["sum"], ref_reduce(x.numpy(), dims, ref_sum_row))
    with np.errstate(all="ignore"):
        assert_bits_equal(got["var"], ref_reduce(x.numpy(), dims, ref_var_row))
    backend("cpu")
    for name, value in got.items():
        op = getattr(softrep, name)
        np.testing.assert_array_equal(bits(value), bits(op(x, dim)), err_msg=name)


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
def test_simulator_golden(dtype, backend):
    backend("cuda")
    _small_golden(dtype)


@pytest.mark.simulator
def test_simulator_group_pass(backend):
    # 65 block partials: one group pass of 64 and a second, short group
    x = wide_values(10, (1, 64 * 128 + 129), torch.float32)
    backend("cuda")
    got = softrep.sum(x, 1)
    backend("cpu")
    np.testing.assert_array_equal(bits(got), bits(softrep.sum(x, 1)))
    assert_bits_equal(got, ref_reduce(x.numpy(), (1,), ref_sum_row))


@pytest.mark.simulator
def test_simulator_gradients_match_cpu(backend):
    x = wide_values(11, (3, 140), torch.float64)
    results = {}
    for kind in ("cuda", "cpu"):
        backend(kind)
        grads = []
        for op in (lambda t: softrep.var(t, 1), lambda t: softrep.amax(t, 0)):
            t = x.clone().requires_grad_(True)
            op(t).sum().backward()
            grads.append(bits(t.grad))
        results[kind] = grads
    for a, b in zip(results["cuda"], results["cpu"]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
def test_simulator_strided_input(dtype, backend):
    # A column of a matrix: a 1-D input with stride 3 (the simulator's device
    # arrays once rejected such buffers).
    x = wide_values(11, (5, 3), dtype)[:, 1]
    backend("cuda")
    got = softrep.sum(x), softrep.amax(x, 0)
    assert_bits_equal(got[0], ref_reduce(x.numpy(), (0,), ref_sum_row))
    backend("cpu")
    assert_bits_equal(got[1], softrep.amax(x, 0))


@pytest.mark.parametrize("n", [8 * 128, 8 * 128 + 1, 16 * 128 - 1, 3 * 8 * 128 + 129, 40000])
def test_vectorised_block_partials_follow_the_order(monkeypatch, n):
    # float32 rows of unit stride take the 8-blocks-per-vector path of
    # softrep/cpu/reduce.py for every full group of 8 blocks and the scalar
    # chains for the rest; both must give the documented order's bits.
    # (Inputs this small would take the serial kernel: it is turned off.)
    import softrep.cpu.reduce as cpu_reduce
    monkeypatch.setattr(cpu_reduce, "SERIAL_MAX", 0)
    x = wide_values(20 + n % 97, (3, n), torch.float32)
    assert_bits_equal(softrep.sum(x, 1), ref_reduce(x.numpy(), (1,), ref_sum_row))
    strided = wide_values(21, (n, 2), torch.float32)[:, 0]  # stride 2: the scalar path only
    assert_bits_equal(softrep.sum(strided), ref_reduce(strided.numpy(), (0,), ref_sum_row))


@pytest.mark.parametrize("m,n", [(8, 8), (13, 64), (17, 256), (9, 1000), (8, 2048), (3, 64), (10, 2056), (11, 100),
                                 (8 * 16 * 2 + 13, 64), (8 * 16 + 8, 136), (9, 512), (9, 640), (16, 1152),
                                 (24, 128), (40, 8), (16, 32), (24, 640), (16, 1024), (16, 384), (16, 200),
                                 (8 * 64 + 8 * 3 + 5, 64), (32, 128), (8 * 4 * 3 + 8 * 3 + 3, 32), (64, 16)])
def test_short_rows_side_by_side_follow_the_order(monkeypatch, m, n):
    # Contiguous float32 rows of a length that is a multiple of 8, up to
    # SHORT_ROW_MAX, take the 8-rows-per-vector path of softrep/cpu/reduce.py
    # for each whole group of 8 rows and the general path for the rest
    # (3 x 64: general only; 2056 and 100: general only), several groups of
    # 8 rows per work item, and more than one work item; rows of at most
    # COPIED_ROW_MAX (512) elements are read from a local copy of each group;
    # rows of at most one block, and uncopied rows whose stride is not a
    # multiple of 4 KB, go two groups at a time where two are left (24 x 128
    # and 24 x 640: a pair, then one group; 16 x 1024: one at a time), and
    # with 512-bit vectors rows of one block four groups at a time first
    # (32 x 128: one quad; 123 x 32: three quads, a pair, one group and 3
    # rows of the general path); a
    # group that goes alone takes its rows' whole blocks two at a time (384:
    # a pair and one block; 200: one whole block and a partial one; 640: two
    # pairs and one block; 1024 and 2048: pairs only).  The light path's
    # serial kernel, which small sums take, is turned off here.
    monkeypatch.setattr(cpu_reduce, "SERIAL_MAX", 0)
    x = wide_values(40 + m + n, (m, n), torch.float32)
    assert_bits_equal(softrep.sum(x, 1), ref_reduce(x.numpy(), (1,), ref_sum_row))
    assert_bits_equal(softrep.mean(x, 1), ref_reduce(x.numpy(), (1,), ref_mean_row))
    # values of one magnitude too: there a swap of two elements anywhere in a
    # block moves bits, where a larger wide value can absorb it
    y = torch.from_numpy(np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32))
    assert_bits_equal(softrep.sum(y, 1), ref_reduce(y.numpy(), (1,), ref_sum_row))
    # the sums of centred squares (var) take the same path, their terms
    # written to scratch first: two groups at a time, then a last one alone
    assert_bits_equal(softrep.var(y, 1), ref_reduce(y.numpy(), (1,), ref_var_row))
    x3 = x.reshape(1, m, n).expand(2, m, n).contiguous()
    assert_bits_equal(softrep.sum(x3, -1), ref_reduce(x3.numpy(), (2,), ref_sum_row))


@pytest.mark.parametrize("n", [8, 64, 128])
def test_sixteen_rows_per_vector_follow_the_order(n):
    # The 32-row form of 512-bit hosts (`_four_groups`), called directly so
    # that it runs on every host (LLVM splits its 16-lane vectors where
    # registers are narrower): each row's left-to-right sum, NaNs canonical,
    # the other rows untouched by a NaN or an inf - inf in one lane.
    x = wide_values(50 + n, (32, n), torch.float32)
    bits = x.view(torch.int32)
    bits[1, 3] = 0x7FC00123
    bits[20, n - 1] = -0x00400000
    x[27, 0], x[27, n - 1] = float("inf"), float("-inf")
    x[9] = -0.0  # a row of negative zeros sums to -0
    flat = np.concatenate([x.numpy().reshape(-1), np.zeros(64, np.float32)])  # the prefetch's reach past the rows
    out = np.full(40, 7.0, dtype=np.float32)
    cpu_reduce._four_groups(out, flat, 0, n, 4)
    assert_bits_equal(torch.from_numpy(out[4:36]), ref_reduce(x.numpy(), (1,), ref_sum_row))
    assert [int(v) for v in torch.from_numpy(out[4:36]).view(torch.int32)[[1, 20, 27]]] == [0x7FC00000] * 3
    assert (out[:4] == 7).all() and (out[36:] == 7).all()


@pytest.mark.parametrize("n", [64, 128, 640])
def test_short_rows_side_by_side_give_the_canonical_nan(monkeypatch, n):
    # The 8-rows-per-vector path adds NaN payloads lane by lane; each row's
    # NaN total must still be the canonical NaN, and the other lanes' rows
    # must be untouched by it (the light path turned off, as above).
    monkeypatch.setattr(cpu_reduce, "SERIAL_MAX", 0)
    x = wide_values(7 + n, (16, n), torch.float32)
    bits = x.view(torch.int32)
    bits[1, 3] = 0x7FC00123  # a quiet NaN with a payload
    bits[6, n - 1] = -0x00400000  # 0xFFC00000: a negative quiet NaN
    x[9, 0], x[9, 5] = float("inf"), float("-inf")  # inf - inf inside the chain
    got = softrep.sum(x, 1)
    assert_bits_equal(got, ref_reduce(x.numpy(), (1,), ref_sum_row))
    assert [int(got.view(torch.int32)[i]) for i in (1, 6, 9)] == [0x7FC00000] * 3
    got = softrep.var(x, 1)
    assert_bits_equal(got, ref_reduce(x.numpy(), (1,), ref_var_row))
    assert [int(got.view(torch.int32)[i]) for i in (1, 6, 9)] == [0x7FC00000] * 3


@pytest.mark.parametrize("m,n", [(5, 1), (17, 16), (33, 17), (9, 64), (20, 1000), (3, 4096), (2, 4097)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_short_row_extremes_take_the_first_winner(m, n, dtype):
    # Rows of at most one chunk take the one-pass path (largest key, then its
    # first index), which must agree with the reference on values, NaNs,
    # signed zeros and the first index of ties.
    rng = np.random.Generator(np.random.PCG64(m * 1000 + n))
    xn = rng.integers(-4, 5, (m, n)).astype(NP[dtype])  # many ties
    xn[rng.random((m, n)) < 0.05] = -0.0
    if m > 2:
        xn[1, n // 2] = np.nan
        xn[2, :] = 0.0
        xn[2, -1] = -0.0
    x = torch.from_numpy(xn)
    assert_bits_equal(softrep.amax(x, 1), ref_reduce(xn, (1,), lambda r: r[ref_argmax_row(r)]))
    assert_bits_equal(softrep.amin(x, 1), ref_reduce(xn, (1,), lambda r: r[ref_argmin_row(r)]))
    np.testing.assert_array_equal(softrep.argmax(x, 1).numpy(), ref_reduce(xn, (1,), ref_argmax_row))
    np.testing.assert_array_equal(softrep.argmin(x, 1).numpy(), ref_reduce(xn, (1,), ref_argmin_row))


# --------------------------------------------------------------------------- amax / amin without indices


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_key_value_inverts_order_key(dtype):
    """amax and amin take the winner's bits from its order key (`key_value`);
    the compiled and the Python forms (the simulator's) both invert order_key,
    NaNs giving the canonical NaN."""
    from numba import njit

    uint = np.uint32 if dtype == np.float32 else np.uint64
    rng = np.random.default_rng(5)
    patterns = rng.integers(0, np.iinfo(uint).max, 2000, dtype=uint, endpoint=True)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, np.finfo(dtype).tiny / 2,
                         -np.finfo(dtype).max], dtype=dtype)
    values = np.concatenate([patterns.view(dtype), specials, -np.abs(patterns[:10].view(dtype))])

    @njit
    def roundtrip(xs, largest, out):
        for i in range(xs.size):
            out[i] = O.key_value(xs[i], O.order_key(xs[i], largest), largest)

    canonical = np.where(np.isnan(values), dtype(np.nan), values)
    for largest in (True, False):
        out = np.empty_like(values)
        roundtrip(values, largest, out)
        np.testing.assert_array_equal(out.view(uint), canonical.view(uint))
        python = np.array([O.key_value(v, O.order_key(v, largest), largest) for v in values[:200]], dtype=dtype)
        np.testing.assert_array_equal(python.view(uint), canonical[:200].view(uint))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrow_keys_keep_the_order_of_order_key(dtype):
    """The CPU row maximum compares narrow keys (int32 for float32) and widens
    the winner's: narrow keys must order every pair of numbers as order_key
    does, and widen back to order_key, compiled and in Python."""
    from numba import njit

    uint = np.uint32 if dtype == np.float32 else np.uint64
    rng = np.random.default_rng(6)
    patterns = rng.integers(0, np.iinfo(uint).max, 3000, dtype=uint, endpoint=True)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, np.finfo(dtype).tiny / 2,
                         -np.finfo(dtype).tiny / 2, np.finfo(dtype).max, -np.finfo(dtype).max], dtype=dtype)
    values = np.concatenate([patterns.view(dtype), specials])

    @njit
    def keys(xs, largest, narrow, wide, back):
        for i in range(xs.size):
            narrow[i] = O.narrow_key(xs[i], largest)
            wide[i] = O.order_key(xs[i], largest)
            back[i] = O.widen_key(xs[i], O.narrow_key(xs[i], largest))

    for largest in (True, False):
        narrow, wide, back = (np.empty(values.size, np.int64) for _ in range(3))
        keys(values, largest, narrow, wide, back)
        np.testing.assert_array_equal(back, wide)
        np.testing.assert_array_equal(np.argsort(narrow, kind="stable"), np.argsort(wide, kind="stable"))
        if dtype == np.float32:
            assert narrow.min() >= -2**31 and narrow.max() <= 2**31 - 1
        python = [int(O.narrow_key(v, largest)) for v in values[:300]]
        assert python == narrow[:300].tolist()
        assert [int(O.widen_key(v, O.narrow_key(v, largest))) for v in values[:300]] == wide[:300].tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((5000, 9), 1), ((9, 5000), 1), ((3, 70000), 1), ((40, 1000), 0)])
def test_amax_amin_are_the_values_at_argmax_argmin(dtype, shape, dim):
    """Large inputs (not the light path): the values-only kernel against the
    values at the indices the index kernel finds."""
    x = wide_values(4, shape, dtype)
    flat = x.view(-1)
    flat[3], flat[7], flat[len(flat) // 3] = -0.0, float("nan"), float("-inf")
    x[:, 0] = 0.0
    for value_op, index_op in ((softrep.amax, softrep.argmax), (softrep.amin, softrep.argmin)):
        want = torch.gather(x, dim, index_op(x, dim, keepdim=True)).squeeze(dim)
        want = torch.where(want.isnan(), torch.full_like(want, float("nan")), want)
        assert_bits_equal(value_op(x, dim), want.numpy())
