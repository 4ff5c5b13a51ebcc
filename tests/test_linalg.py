"""Matrix products: mm, bmm, matmul, dot, linear, addmm.

The reference is an fma chain evaluated by MPFR (gmpy2) in an IEEE binary32 /
binary64 context, following docs/order.md ("Matrix products") and sharing no
code with softrep.  Bits are compared exactly (NaN against the canonical NaN).
"""

import os
import subprocess
import sys

import gmpy2
import numba
import numpy as np
import pytest
import torch

import softrep
from softrep.ops import products as P
from golden import bit_pattern_tensor, check, normal_tensor
from references import batch_tree
from test_backend_sources import schedule_findings

DTYPES = (torch.float32, torch.float64)
GOLDEN = "linalg.json"


# --------------------------------------------------------------------------- oracle


def _ctx(dtype):
    return gmpy2.ieee(32 if dtype == torch.float32 else 64)


def oracle_mm(a, b, addend=None):
    """acc = +0; acc = fma(a[i,k], b[k,j], acc) for k = 0..K-1; then add_rn(acc, addend)."""
    a64, b64 = a.detach().double().numpy(), b.detach().double().numpy()
    m, k_count = a64.shape
    n = b64.shape[1]
    ctx = _ctx(a.dtype)
    add = None if addend is None else addend.detach().double().expand(m, n).numpy()
    out = np.empty((m, n), np.float64)
    with gmpy2.context(ctx):
        am = [[gmpy2.mpfr(float(v)) for v in row] for row in a64]
        bm = [[gmpy2.mpfr(float(b64[kk, j])) for kk in range(k_count)] for j in range(n)]
        for i in range(m):
            for j in range(n):
                acc = gmpy2.mpfr(0)
                for x, y in zip(am[i], bm[j]):
                    acc = gmpy2.fma(x, y, acc)
                if add is not None:
                    acc = acc + gmpy2.mpfr(float(add[i, j]))
                out[i, j] = float(acc)
    return torch.from_numpy(out).to(a.dtype)


def oracle_sum(values, dtype):
    """softrep's documented sum (docs/order.md): blocks of 128 added left to
    right from their first element, then a pairwise tree over the partials."""
    if len(values) == 0:
        return 0.0
    with gmpy2.context(_ctx(dtype)):
        parts = []
        for start in range(0, len(values), 128):
            p = gmpy2.mpfr(float(values[start]))
            for v in values[start + 1:start + 128]:
                p = p + gmpy2.mpfr(float(v))
            parts.append(p)
        while len(parts) > 1:
            parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        return float(parts[0])


def bits(t):
    """Bit patterns with every NaN canonical, for exact comparison."""
    t = t.detach().cpu().contiguous()
    t = torch.where(torch.isnan(t), torch.full_like(t, float("nan")), t)
    return t.numpy().view(np.uint32 if t.dtype == torch.float32 else np.uint64)


def assert_same_bits(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype
    g, w = bits(got), bits(want)
    bad = np.argwhere(g != w)
    assert bad.size == 0, f"{len(bad)} elements differ, first at {bad[0].tolist()}: {got.reshape(-1)[0]}"


def assert_canonical_nans(t):
    t = t.detach().contiguous()
    if t.dtype == torch.float32:
        raw = t.numpy().view(np.uint32)[np.isnan(t.numpy())]
        assert np.all(raw == 0x7FC00000)
    else:
        raw = t.numpy().view(np.uint64)[np.isnan(t.numpy())]
        assert np.all(raw == 0x7FF8000000000000)


def tricky(seed, shape, dtype):
    """Normal values with exact cancellations, tiny products (underflow to +-0),
    subnormals, signed zeros, infinities and a NaN sprinkled in."""
    x = normal_tensor(seed, shape, dtype).reshape(-1).clone()
    rng = np.random.Generator(np.random.PCG64(seed + 1000))
    tiny = torch.finfo(dtype).tiny
    specials = [0.0, -0.0, tiny / 8, -tiny / 2, 1e-30, -1e-30, 2.0 ** 60, -(2.0 ** 60), float("inf"), float("nan")]
    n = x.numel()
    if n:
        idx = rng.choice(n, size=min(n, max(1, n // 6)), replace=False)
        for t, i in enumerate(idx):
            x[int(i)] = specials[t % len(specials)] if n > 20 else specials[t % 8]
    return x.reshape(shape)


SHAPES = [  # (M, K, N): K = 0 and 1, tiny, and sizes that are not multiples of MR (6, 8), NR (8 to 32), KC=256
    (1, 0, 1), (3, 0, 5), (1, 1, 1), (4, 1, 9), (7, 5, 17), (6, 16, 16), (13, 31, 19), (2, 300, 3), (25, 3, 40),
    (9, 7, 33),
]


# --------------------------------------------------------------------------- products against the oracle


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_mm_matches_oracle(m, k, n, dtype):
    a, b = tricky(m * 100 + k, (m, k), dtype), tricky(n * 100 + k + 7, (k, n), dtype)
    out = P.mm(a, b)
    assert_same_bits(out, oracle_mm(a, b))
    assert_canonical_nans(out)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mm_ordinary_values_match_oracle(dtype):
    a, b = normal_tensor(1, (9, 70), dtype), normal_tensor(2, (70, 23), dtype)
    assert_same_bits(P.mm(a, b), oracle_mm(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_and_strided_inputs(dtype):
    base_a = tricky(3, (12, 20), dtype)
    base_b = tricky(4, (30, 14), dtype)
    a = base_a[::2, 1::2].t()          # (10, 6), transposed and strided
    b = base_b[::5, ::2]               # (6, 7), strided
    out = P.mm(a, b)
    assert_same_bits(out, oracle_mm(a.contiguous(), b.contiguous()))
    assert_same_bits(P.mm(b.t(), a.t()), oracle_mm(b.t().contiguous(), a.t().contiguous()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("serial_fmas", [-1, None], ids=["packed", "serial"])
def test_transposed_operands_on_the_packed_path(dtype, serial_fmas, monkeypatch):
    """A transposed operand (a weight's t(), the backward's transposes) is
    read from its own layout, by the packed path (softrep/cpu/linalg.py
    `pack_a`, `pack_b`) and by the serial one: the same bits as the
    contiguous copy, edges not a multiple of the register block included;
    some outputs against the oracle."""
    from softrep.cpu import linalg

    m, k, n = 67, 45, 83
    if serial_fmas is not None:
        monkeypatch.setattr(linalg, "SERIAL_FMAS", serial_fmas)
    assert (m * k * n > linalg.SERIAL_FMAS) == (serial_fmas is not None)
    a, b = normal_tensor(40, (m, k), dtype), normal_tensor(41, (k, n), dtype)
    at, bt = a.t().contiguous().t(), b.t().contiguous().t()
    assert not at.is_contiguous() and not bt.is_contiguous()
    want = P.mm(a, b)
    for x, y in ((at, b), (a, bt), (at, bt)):
        assert_same_bits(P.mm(x, y), want)
    assert_same_bits(want[:3, -4:], oracle_mm(a[:3], b[:, -4:]))
    ab, bb = normal_tensor(42, (3, m, k), dtype), normal_tensor(43, (3, k, n), dtype)
    wantb = P.bmm(ab, bb)
    got = P.bmm(ab.transpose(1, 2).contiguous().transpose(1, 2), bb.transpose(1, 2).contiguous().transpose(1, 2))
    assert_same_bits(got, wantb)


@pytest.mark.parametrize("dtype", DTYPES)
def test_products_split_among_threads_match_oracle(dtype, monkeypatch):
    """From linalg.SPLIT_FMAS fmas on, a serial-size product shares its row
    panels among the threads (each packing its own rows): the oracle's
    chains, with row counts that are not a multiple of MR, transposed
    operands and a bias; and the weight gradient's tree product, each
    sample's chain then the batch tree."""
    from softrep.cpu import linalg

    if numba.get_num_threads() < 2:
        pytest.skip("one thread: nothing to split")
    monkeypatch.setattr(linalg, "SPLIT_FMAS", 1)
    split = []
    tasks = linalg._tasks
    monkeypatch.setattr(linalg, "_tasks", lambda *shape: split.append(tasks(*shape)) or split[-1])
    for m, k, n in ((13, 31, 19), (25, 3, 40), (67, 45, 83)):
        a, b = tricky(m + k, (m, k), dtype), tricky(n + k, (k, n), dtype)
        want = oracle_mm(a, b)
        assert_same_bits(P.mm(a, b), want)
        assert_same_bits(P.mm(a.t().contiguous().t(), b.t().contiguous().t()), want)
        bias = tricky(n, (n,), dtype)
        assert_same_bits(P.linear(a, b.t(), bias), oracle_mm(a, b, bias))
    g, x = normal_tensor(47, (6, 5, 37), dtype), normal_tensor(48, (6, 5, 11), dtype)
    nodes = P.tree_product(g.unsqueeze(1), x.unsqueeze(1), [(0, 4), (4, 2)])
    per_sample = [oracle_mm(g[s].t(), x[s]).numpy() for s in range(6)]
    assert_same_bits(nodes[0, 0], torch.from_numpy(batch_tree(per_sample[:4])))
    assert_same_bits(nodes[1, 0], torch.from_numpy(batch_tree(per_sample[4:])))
    assert split and min(split) > 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_matches_oracle(dtype):
    a, b = tricky(5, (3, 5, 7), dtype), tricky(6, (3, 7, 9), dtype)
    out = P.bmm(a, b)
    for i in range(3):
        assert_same_bits(out[i], oracle_mm(a[i], b[i]))


MATMUL_SHAPES = [
    ((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5,)), ((5,), (2, 5, 3)),
    ((2, 1, 4, 5), (3, 5, 2)), ((2, 3, 4, 5), (5, 6)), ((4, 5), (2, 5, 3)), ((0, 5), (5, 2)), ((3, 0), (0, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_matches_oracle(sa, sb, dtype):
    a, b = tricky(7, sa, dtype), tricky(8, sb, dtype)
    out = P.matmul(a, b)
    want_shape = torch.matmul(a, b).shape
    assert out.shape == want_shape
    # oracle per batch, with torch's broadcasting spelled out
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(1) if b.dim() == 1 else b
    batch = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    nb = int(np.prod(batch))
    a3 = a2.expand(*batch, *a2.shape[-2:]).reshape(nb, *a2.shape[-2:])
    b3 = b2.expand(*batch, *b2.shape[-2:]).reshape(nb, *b2.shape[-2:])
    want = torch.stack([oracle_mm(x, y) for x, y in zip(a3, b3)]) if a3.shape[0] else torch.empty(
        0, a3.shape[1], b3.shape[2], dtype=dtype)
    assert_same_bits(out, want.reshape(want_shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_linear_addmm_match_oracle(dtype):
    x, y = tricky(9, (37,), dtype), tricky(10, (37,), dtype)
    assert_same_bits(P.dot(x, y), oracle_mm(x[None], y[:, None]).reshape(()))
    inp, w, bias = tricky(11, (2, 3, 6), dtype), tricky(12, (5, 6), dtype), tricky(13, (5,), dtype)
    out = P.linear(inp, w, bias)
    want = oracle_mm(inp.reshape(6, 6), w.t(), bias).reshape(2, 3, 5)
    assert_same_bits(out, want)
    assert_same_bits(P.linear(inp, w), oracle_mm(inp.reshape(6, 6), w.t()).reshape(2, 3, 5))
    m1, m2 = tricky(14, (4, 7), dtype), tricky(15, (7, 3), dtype)
    for addend in (tricky(16, (4, 3), dtype), tricky(17, (3,), dtype), tricky(18, (4, 1), dtype)):
        assert_same_bits(P.addmm(addend, m1, m2), oracle_mm(m1, m2, addend))


# --------------------------------------------------------------------------- order (FPRev-style)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k_count", [40, 600])
def test_order_is_sequential_in_k(dtype, k_count):
    """Row i holds +big at p_i and -big at q_i, ones elsewhere; b is all ones.

    Only a chain from +0 in k order gives K-1-max(p, q): the ones before the
    big pair are absorbed by it, the pair cancels exactly, and the ones after
    it survive.  A split K, a tree, or a reversed order gives another count.
    """
    big = 2.0 ** 50 if dtype == torch.float32 else 2.0 ** 100
    rng = np.random.Generator(np.random.PCG64(k_count))
    m, n = 20, 19
    a = torch.ones((m, k_count), dtype=dtype)
    expect = torch.empty((m, n), dtype=dtype)
    for i in range(m):
        p, q = rng.choice(k_count, size=2, replace=False)
        a[i, p], a[i, q] = big, -big
        expect[i] = k_count - 1 - max(p, q)
    b = torch.ones((k_count, n), dtype=dtype)
    assert_same_bits(P.mm(a, b), expect)
    assert_same_bits(P.mm(b.t(), a.t()), expect.t())  # the same chains along columns


@pytest.mark.parametrize("dtype", DTYPES)
def test_addend_is_added_after_the_chain(dtype):
    big = 2.0 ** 50 if dtype == torch.float32 else 2.0 ** 100
    a = torch.tensor([[big, 1.0]], dtype=dtype)
    b = torch.ones((2, 1), dtype=dtype)
    # chain: fma(big, 1, +0) = big; fma(1, 1, big) = big (1 absorbed); + (-big) = 0.
    # Starting the chain from the addend would give 1.
    out = P.addmm(torch.tensor([[-big]], dtype=dtype), a, b)
    assert out.item() == 0.0
    assert P.linear(a, b.t(), torch.tensor([-big], dtype=dtype)).item() == 0.0


# --------------------------------------------------------------------------- invariances


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_invariance(dtype):
    a, b = normal_tensor(20, (23, 300), dtype), normal_tensor(21, (300, 37), dtype)
    full = P.mm(a, b)
    for m in range(1, 24):
        assert_same_bits(P.mm(a[:m], b), full[:m])
    for n in (1, 5, 17, 36):
        assert_same_bits(P.mm(a, b[:, :n]), full[:, :n])
    ab, bb = normal_tensor(22, (5, 7, 30), dtype), normal_tensor(23, (5, 30, 9), dtype)
    fullb = P.bmm(ab, bb)
    for s in range(1, 6):
        assert_same_bits(P.bmm(ab[:s], bb[:s]), fullb[:s])
        assert_same_bits(P.bmm(ab[s - 1:s], bb[s - 1:s]), fullb[s - 1:s])


@pytest.mark.parametrize("dtype", DTYPES)
def test_layout_invariance(dtype):
    a, b = normal_tensor(24, (19, 41), dtype), normal_tensor(25, (41, 29), dtype)
    want = P.mm(a, b)
    relayout = lambda x: x.t().contiguous().t()  # noqa: E731
    assert not relayout(a).is_contiguous()
    assert_same_bits(P.mm(relayout(a), b), want)
    assert_same_bits(P.mm(a, relayout(b)), want)
    assert_same_bits(P.mm(relayout(a), relayout(b)), want)


_THREAD_SCRIPT = """
import hashlib, numpy as np, torch
from softrep.ops import products as P
rng = np.random.Generator(np.random.PCG64(5))
h = hashlib.sha256()
for dtype in (np.float32, np.float64):
    a = torch.from_numpy(rng.standard_normal((130, 700)).astype(dtype))
    b = torch.from_numpy(rng.standard_normal((700, 90)).astype(dtype))
    h.update(P.mm(a, b).numpy().tobytes())
    h.update(P.bmm(a.reshape(2, 65, 700), b.t().reshape(1, 90, 700).expand(2, 90, 700).transpose(1, 2)).numpy().tobytes())
print(h.hexdigest())
"""


def test_thread_count_invariance():
    digests = {}
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, SOFTREP_BACKEND="cpu")
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        proc = subprocess.run([sys.executable, "-c", _THREAD_SCRIPT], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        digests[threads] = proc.stdout.strip().splitlines()[-1]
    assert digests["1"] == digests["2"]


_BLOCKING_SCRIPT = r"""
import sys
import numpy as np
import torch
from softrep.cpu import linalg
from softrep.ops import products as P
out_dir = sys.argv[1]
print(linalg.BLOCKING_NAME, linalg.MR, linalg.NR[np.dtype(np.float32)], linalg.NR[np.dtype(np.float64)])
for i, (m, k, n) in enumerate(%(shapes)r):
    for dtype in (torch.float32, torch.float64):
        a = torch.load(f"{out_dir}/a{i}{dtype}.pt")
        b = torch.load(f"{out_dir}/b{i}{dtype}.pt")
        c = torch.load(f"{out_dir}/c{i}{dtype}.pt")
        for path, serial_fmas in (("serial", linalg.SERIAL_FMAS), ("packed", -1)):
            linalg.SERIAL_FMAS = serial_fmas
            torch.save(P.mm(a, b), f"{out_dir}/mm{i}{dtype}{path}.pt")
            torch.save(P.addmm(c, a, b), f"{out_dir}/addmm{i}{dtype}{path}.pt")
"""

# Odd shapes, each on the serial and on the packed path: M below and between
# MR, N not a multiple of NR, K across a k-block boundary; M and N over
# several cache blocks (MC_PANELS, NC_PANELS panels at most), evened out by
# `equal_blocks` into blocks of unequal panel counts.
_BLOCKING_SHAPES = [(37, 300, 53), (5, 270, 101), (20, 70, 131), (70, 300, 530)]


@pytest.mark.parametrize("name", ["avx2", "avx512"])
def test_every_register_blocking_gives_the_chain(name, tmp_path):
    """Each host blocking, forced through SOFTREP_CPU_BLOCKING, gives the bits of the
    oracle's k-order chain (and so the same bits as every other blocking)."""
    from softrep.cpu import linalg

    assert set(linalg.BLOCKINGS) == {"avx2", "avx512"}
    cases = {}
    for i, (m, k, n) in enumerate(_BLOCKING_SHAPES):
        for dtype in DTYPES:
            a, b = tricky(i * 10 + 1, (m, k), dtype), tricky(i * 10 + 2, (k, n), dtype)
            c = tricky(i * 10 + 3, (n,), dtype)
            for tag, t in (("a", a), ("b", b), ("c", c)):
                torch.save(t, tmp_path / f"{tag}{i}{dtype}.pt")
            cases[i, dtype] = a, b, c
    env = dict(os.environ, SOFTREP_CPU_BLOCKING=name, SOFTREP_BACKEND="cpu")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    script = _BLOCKING_SCRIPT % {"shapes": _BLOCKING_SHAPES}
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    blocking = linalg.BLOCKINGS[name]
    assert proc.stdout.split() == [name, str(blocking.mr), str(blocking.nr[np.dtype(np.float32)]),
                                   str(blocking.nr[np.dtype(np.float64)])]
    for (i, dtype), (a, b, c) in cases.items():
        for path in ("serial", "packed"):
            assert_same_bits(torch.load(tmp_path / f"mm{i}{dtype}{path}.pt"), oracle_mm(a, b))
            assert_same_bits(torch.load(tmp_path / f"addmm{i}{dtype}{path}.pt"), oracle_mm(a, b, c))


def test_unknown_blocking_is_refused():
    env = dict(os.environ, SOFTREP_CPU_BLOCKING="avx9000", SOFTREP_BACKEND="cpu")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", "import softrep.cpu.linalg"], env=env, capture_output=True,
                          text=True)
    assert proc.returncode != 0
    assert "SOFTREP_CPU_BLOCKING='avx9000'" in proc.stderr and "avx512" in proc.stderr


# --------------------------------------------------------------------------- golden vectors


def _golden_cases(dtype):
    name = "float32" if dtype == torch.float32 else "float64"
    a, b = normal_tensor(30, (21, 300), dtype), normal_tensor(31, (300, 19), dtype)
    wild_a, wild_b = bit_pattern_tensor(32, (7, 3), dtype), bit_pattern_tensor(33, (3, 5), dtype)
    x3, y3 = normal_tensor(34, (3, 6, 11), dtype), normal_tensor(35, (3, 11, 4), dtype)
    v = normal_tensor(36, (50,), dtype)
    bias = normal_tensor(37, (19,), dtype)
    yield f"mm.{name}", lambda: P.mm(a, b)
    yield f"mm_bits.{name}", lambda: P.mm(wild_a, wild_b)
    yield f"bmm.{name}", lambda: P.bmm(x3, y3)
    yield f"matmul.{name}", lambda: P.matmul(x3[:, None], y3[None])
    yield f"dot.{name}", lambda: P.dot(v, v.flip(0))
    yield f"linear.{name}", lambda: P.linear(a.reshape(3, 7, 300), b.t(), bias)
    yield f"addmm.{name}", lambda: P.addmm(bias, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_golden_vectors(dtype):
    for key, run in _golden_cases(dtype):
        check(GOLDEN, key, run())


# --------------------------------------------------------------------------- autograd and maths


def _grad_cases():
    d = torch.float64
    g = lambda *s: torch.randn(*s, dtype=d, requires_grad=True)  # noqa: E731
    torch.manual_seed(0)
    yield "mm", P.mm, (g(3, 4), g(4, 5))
    yield "bmm", P.bmm, (g(2, 3, 4), g(2, 4, 2))
    yield "matmul_broadcast", P.matmul, (g(2, 1, 3, 4), g(3, 4, 2))
    yield "matmul_fold", P.matmul, (g(2, 3, 4), g(4, 2))
    yield "matmul_left2d", P.matmul, (g(3, 4), g(2, 4, 2))
    yield "matmul_vec", P.matmul, (g(4), g(2, 4, 3))
    yield "matmul_matvec", P.matmul, (g(2, 3, 4), g(4))
    yield "dot", P.dot, (g(6), g(6))
    yield "linear", P.linear, (g(2, 3, 4), g(5, 4), g(5))
    yield "linear_nobias", P.linear, (g(3, 4), g(5, 4))
    yield "addmm", P.addmm, (g(3), g(2, 4), g(4, 3))
    yield "addmm_col", P.addmm, (g(2, 1), g(2, 4), g(4, 3))


@pytest.mark.parametrize("case", list(_grad_cases()), ids=lambda c: c[0])
def test_gradcheck(case):
    _, fn, args = case
    assert torch.autograd.gradcheck(fn, args)


def test_backward_is_the_documented_product():
    a, b = normal_tensor(40, (5, 8)).requires_grad_(), normal_tensor(41, (8, 3)).requires_grad_()
    g = normal_tensor(42, (5, 3))
    P.mm(a, b).backward(g)
    assert_same_bits(a.grad, oracle_mm(g, b.detach().t()))
    assert_same_bits(b.grad, oracle_mm(a.detach().t(), g))
    for rows in (6, 300):  # one block of the sum, and several blocks plus the tree
        x, w, bias = (normal_tensor(43, (rows, 4)).requires_grad_(), normal_tensor(44, (3, 4)).requires_grad_(),
                      normal_tensor(45, (3,)).requires_grad_())
        gl = normal_tensor(46, (rows, 3))
        P.linear(x, w, bias).backward(gl)
        assert_same_bits(x.grad, oracle_mm(gl, w.detach()))
        # each row is a sample: its partial is the chain of its one row, then the batch tree
        per_row = [oracle_mm(gl[r:r + 1].t(), x.detach()[r:r + 1]).numpy() for r in range(rows)]
        assert_same_bits(w.grad, torch.from_numpy(batch_tree(per_row)))
        assert_same_bits(bias.grad, torch.from_numpy(batch_tree(list(gl.numpy()))))


@pytest.mark.parametrize("dtype", DTYPES)
def test_close_to_torch(dtype):
    a, b = normal_tensor(50, (33, 129), dtype), normal_tensor(51, (129, 65), dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(P.mm(a, b), a @ b, **tol)
    x, y = normal_tensor(52, (2, 3, 5, 7), dtype), normal_tensor(53, (3, 7, 4), dtype)
    torch.testing.assert_close(P.matmul(x, y), torch.matmul(x, y), **tol)
    bias = normal_tensor(54, (65,), dtype)
    torch.testing.assert_close(P.linear(a, b.t(), bias), torch.nn.functional.linear(a, b.t(), bias), **tol)


def test_inputs_not_modified():
    a, b = normal_tensor(60, (4, 5)), normal_tensor(61, (5, 3))
    a0, b0 = a.clone(), b.clone()
    P.mm(a, b)
    assert torch.equal(a, a0) and torch.equal(b, b0)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call,exc,words", [
    (lambda: P.mm(torch.ones(2, 3), torch.ones(4, 2)), ValueError, ["inner", "input", "mat2"]),
    (lambda: P.mm(torch.ones(2, 3, 1), torch.ones(3, 2)), ValueError, ["'input'", "2-D"]),
    (lambda: P.mm(torch.ones(2, 3), torch.ones(3)), ValueError, ["'mat2'"]),
    (lambda: P.mm(torch.ones(2, 3, dtype=torch.int64), torch.ones(3, 2)), TypeError, ["'input'", "int64"]),
    (lambda: P.mm(torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64)), TypeError, ["'mat2'", "promote"]),
    (lambda: P.mm(torch.ones(2, 3), torch.ones(3, 2, device="meta")), ValueError, ["'mat2'", "meta"]),
    (lambda: P.bmm(torch.ones(2, 2, 3), torch.ones(3, 3, 2)), ValueError, ["batch"]),
    (lambda: P.dot(torch.ones(3), torch.ones(4)), ValueError, ["'tensor'"]),
    (lambda: P.matmul(torch.ones(2, 3, 4), torch.ones(3, 4, 2)), ValueError, ["batch", "'other'"]),
    (lambda: P.matmul(torch.ones(()), torch.ones(3)), ValueError, ["'input'"]),
    (lambda: P.linear(torch.ones(2, 3), torch.ones(4, 5)), ValueError, ["'input'", "'weight'"]),
    (lambda: P.linear(torch.ones(2, 3), torch.ones(4, 3), torch.ones(5)), ValueError, ["'bias'"]),
    (lambda: P.addmm(torch.ones(3, 3), torch.ones(2, 4), torch.ones(4, 3)), ValueError, ["'input'"]),
    (lambda: P.addmm(torch.ones(3), torch.ones(2, 4), torch.ones(4, 3), beta="2"), TypeError, ["'beta'"]),
    (lambda: P.addmm(torch.ones(3), torch.ones(2, 4), torch.ones(4, 3), alpha=True), TypeError, ["'alpha'"]),
    (lambda: P.mm([[1.0]], torch.ones(1, 1)), TypeError, ["'input'"]),
])
def test_bad_input(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# --------------------------------------------------------------------------- PTX audit


def test_ptx_audit_linalg_kernels():
    from softrep.tools import kernel_audit

    names = [n for n in kernel_audit.load_kernels(("cuda",))["cuda"] if n.startswith("linalg.")]
    # bmm, bmm_add and the batch-tree product, each in float32 and float64
    assert len(names) == 6
    count, findings = kernel_audit.audit(("cuda",), names=names)
    assert count == 6 * len(kernel_audit.CCS)
    assert not findings, "\n".join(map(str, findings))


# --------------------------------------------------------------------------- one algorithm source


@pytest.mark.parametrize("blocking", ["avx2", "avx512"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_micro_kernel_steps_through_the_shared_chain(blocking, dtype):
    """The generated CPU micro-kernel advances each accumulator with
    `chain_step`, the step the CUDA kernel's `dot_chain` takes, and nothing else."""
    from softrep.algorithms import products
    from softrep.cpu import linalg

    mr, nr = linalg.BLOCKINGS[blocking].mr, linalg.BLOCKINGS[blocking].nr[np.dtype(dtype)]
    source = products._micro_source("micro", mr, nr, "ZERO32")
    assert source.count("chain_step(") == mr * nr
    assert not schedule_findings(source)  # no fma_rn, add_rn, ... of its own


# --------------------------------------------------------------------------- CUDA kernels in the simulator


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(1, 0, 1), (1, 1, 1), (3, 5, 6), (5, 9, 3)])
def test_simulator_mm_matches_oracle(m, k, n, dtype):
    a, b = tricky(m * 10 + k, (m, k), dtype), tricky(n * 10 + k, (k, n), dtype)
    out = P.mm(a, b)
    assert_same_bits(out, oracle_mm(a, b))
    assert_canonical_nans(out)
    addend = tricky(3, (n,), dtype)
    assert_same_bits(P.addmm(addend, a, b), oracle_mm(a, b, addend))


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
def test_simulator_matches_cpu(dtype, backend):
    a, b = normal_tensor(70, (2, 5, 6), dtype), normal_tensor(71, (6, 3), dtype)
    ab = normal_tensor(72, (2, 6, 3), dtype)
    x = normal_tensor(73, (6,), dtype)
    runs = lambda: [P.matmul(a, b), P.bmm(a, ab), P.dot(x, x), P.linear(a, b.t(), x[:3]),  # noqa: E731
                    P.matmul(a.transpose(1, 2)[:, :5], a)]
    backend("cuda")
    sim = runs()
    backend("cpu")
    cpu = runs()
    for s, c in zip(sim, cpu):
        assert_same_bits(s, c)


@pytest.mark.simulator
def test_simulator_order_and_batch_invariance(backend):
    backend("cuda")
    big = 2.0 ** 50
    a = torch.ones((3, 9))
    a[0, 2], a[0, 5] = big, -big
    a[1, 8], a[1, 0] = big, -big
    a[2, 1], a[2, 3] = -big, big
    out = P.mm(a, torch.ones((9, 2)))
    assert out[:, 0].tolist() == [3.0, 0.0, 5.0]
    full = P.mm(normal_tensor(80, (6, 7)), normal_tensor(81, (7, 5)))
    for m in range(1, 6):
        assert_same_bits(P.mm(normal_tensor(80, (6, 7))[:m], normal_tensor(81, (7, 5))), full[:m])


@pytest.mark.simulator
def test_simulator_golden_vectors(backend):
    backend("cuda")
    d = torch.float32
    wild_a, wild_b = bit_pattern_tensor(32, (7, 3), d), bit_pattern_tensor(33, (3, 5), d)
    check(GOLDEN, "mm_bits.float32", P.mm(wild_a, wild_b))
    x3, y3 = normal_tensor(34, (3, 6, 11), d), normal_tensor(35, (3, 11, 4), d)
    check(GOLDEN, "bmm.float32", P.bmm(x3, y3))


def test_golden_file_covers_every_op():
    import json

    with open(os.path.join(os.path.dirname(__file__), "golden", GOLDEN)) as f:
        keys = json.load(f)
    for op in ("mm", "bmm", "matmul", "dot", "linear", "addmm"):
        for dt in ("float32", "float64"):
            assert f"{op}.{dt}" in keys


@pytest.mark.parametrize("x_shape,w_shape", [((5, 0), (3, 0)), ((5, 4), (0, 4)), ((0, 4), (3, 4)), ((2, 5, 0), (3, 0)),
                                             ((2, 0, 4), (3, 4))])
@pytest.mark.parametrize("light", [True, False], ids=["light-kernels", "separate-paths"])
def test_linear_gradients_of_empty_dims_are_torchs(x_shape, w_shape, light, monkeypatch):
    """No input features, no output features, no samples, no rows: the
    gradients have torch's shapes and values (+0 where nothing is summed),
    on the light kernels and on the separate paths."""
    if not light:
        monkeypatch.setattr(P, "_linear_grads_light", lambda *args: None)
    got = []
    for linear in (softrep.linear, torch.nn.functional.linear):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(*x_shape, generator=gen).requires_grad_()
        w = torch.randn(*w_shape, generator=gen).requires_grad_()
        b = torch.randn(w_shape[0], generator=gen).requires_grad_()
        y = linear(x, w, b)
        got.append(torch.autograd.grad(y, (x, w, b), torch.ones_like(y)))
    for ours, theirs in zip(*got):
        assert ours.shape == theirs.shape and torch.equal(ours, theirs)
