"""conv1d / conv2d forward and backward against an MPFR (gmpy2) oracle that
follows docs/order.md ("Convolution") term by term, written with plain loops
and sharing no code with softrep."""

import os

import gmpy2
import numba
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from softrep.ops import conv as C
from golden import check, normal_tensor
from references import batch_tree, documented_sum, identical_bits

DTYPES = (torch.float32, torch.float64)
GOLDEN = "conv.json"


def _ctx(dtype):
    return gmpy2.ieee(32 if dtype == torch.float32 else 64)


def _mp(t):
    return np.vectorize(lambda v: gmpy2.mpfr(float(v)), otypes=[object])(t.detach().double().numpy())


def _pads(padding, k, d, dims):
    if padding == "valid":
        return [(0, 0)] * dims
    if padding == "same":
        return [(d[i] * (k[i] - 1) // 2, d[i] * (k[i] - 1) - d[i] * (k[i] - 1) // 2) for i in range(dims)]
    p = padding if isinstance(padding, tuple) else (padding,) * dims
    return [(v, v) for v in p]


def oracle_conv2d(x, w, bias, stride, pads, dil, groups):
    """Returns (out, grad_fn) where grad_fn(g) -> (gx, gw, gb) in the documented orders."""
    dtype = x.dtype
    n, c_in, h, wd = x.shape
    c_out, c_g, kh, kw = w.shape
    (pt, pb), (pl, pr) = pads
    hp, wp = h + pt + pb, wd + pl + pr
    oh = (hp - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wp - dil[1] * (kw - 1) - 1) // stride[1] + 1
    xm, wm = _mp(x), _mp(w)
    zero = gmpy2.mpfr(0)

    def xpad(b, c, i, j):
        i, j = i - pt, j - pl
        return xm[b, c, i, j] if 0 <= i < h and 0 <= j < wd else zero

    out = np.empty((n, c_out, oh, ow))
    co_g = c_out // groups
    with gmpy2.context(_ctx(dtype)):
        for b in range(n):
            for co in range(c_out):
                grp = co // co_g
                for i in range(oh):
                    for j in range(ow):
                        acc = gmpy2.mpfr(0)
                        for c in range(c_g):
                            for a in range(kh):
                                for e in range(kw):
                                    acc = gmpy2.fma(xpad(b, grp * c_g + c, i * stride[0] + a * dil[0],
                                                         j * stride[1] + e * dil[1]), wm[co, c, a, e], acc)
                        if bias is not None:
                            acc = acc + gmpy2.mpfr(float(bias[co].detach()))
                        out[b, co, i, j] = float(acc)

    def grads(g):
        gm = _mp(g)
        gx = np.empty((n, c_in, h, wd))
        gw = np.empty(w.shape)
        gb = np.empty((c_out,))
        with gmpy2.context(_ctx(dtype)):
            for b in range(n):
                for ci in range(c_in):
                    grp, c = ci // c_g, ci % c_g
                    for ih in range(h):
                        for iw in range(wd):
                            acc = gmpy2.mpfr(0)
                            for co in range(grp * co_g, (grp + 1) * co_g):
                                for a in range(kh - 1, -1, -1):      # kernel flipped: kh = KH-1 .. 0
                                    for e in range(kw - 1, -1, -1):
                                        vh, vw = ih + pt - a * dil[0], iw + pl - e * dil[1]
                                        val = zero                   # zero-inserted gradient
                                        if (vh >= 0 and vw >= 0 and vh % stride[0] == 0 and vw % stride[1] == 0
                                                and vh // stride[0] < oh and vw // stride[1] < ow):
                                            val = gm[b, co, vh // stride[0], vw // stride[1]]
                                        acc = gmpy2.fma(val, wm[co, c, a, e], acc)
                            gx[b, ci, ih, iw] = float(acc)
            for co in range(c_out):
                grp = co // co_g
                for c in range(c_g):
                    for a in range(kh):
                        for e in range(kw):
                            per = []  # the batch order: a chain per sample, then the tree
                            for b in range(n):
                                acc = gmpy2.mpfr(0)
                                for i in range(oh):
                                    for j in range(ow):
                                        acc = gmpy2.fma(gm[b, co, i, j], xpad(b, grp * c_g + c, i * stride[0] + a * dil[0],
                                                                                j * stride[1] + e * dil[1]), acc)
                                per.append(acc)
                            gw[co, c, a, e] = float(batch_tree(per))
                gb[co] = float(batch_tree([gmpy2.mpfr(oracle_sum([gm[b, co, i, j] for i in range(oh)
                                                                  for j in range(ow)])) for b in range(n)]))
        t = lambda a: torch.from_numpy(a).to(dtype)  # noqa: E731
        return t(gx), t(gw), t(gb)

    return torch.from_numpy(out).to(dtype), grads


def oracle_sum(values):
    """softrep's documented sum (docs/order.md), in the current gmpy2 context:
    blocks of 128 added left to right from their first element, then a
    pairwise tree over the block partials."""
    if not values:
        return 0.0
    parts = []
    for start in range(0, len(values), 128):
        p = values[start]
        for v in values[start + 1:start + 128]:
            p = p + v
        parts.append(p)
    while len(parts) > 1:
        parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return float(parts[0])


def bits(t):
    t = t.detach().cpu().contiguous()
    t = torch.where(torch.isnan(t), torch.full_like(t, float("nan")), t)
    return t.numpy().view(np.uint32 if t.dtype == torch.float32 else np.uint64)


def assert_same_bits(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    bad = np.argwhere(bits(got) != bits(want))
    assert bad.size == 0, f"{len(bad)} elements differ, first at {bad[0].tolist()}"


CASES = [  # N, Cin, Cout, H, W, (KH, KW), stride, padding, dilation, groups
    (2, 4, 6, 5, 6, (3, 2), (2, 1), 1, (1, 1), 2),
    (1, 3, 2, 5, 5, (3, 3), (1, 1), "same", (2, 1), 1),
    (1, 2, 4, 6, 5, (2, 3), (3, 2), (2, 1), (2, 2), 2),
    (2, 2, 2, 4, 4, (1, 1), (1, 1), "valid", (1, 1), 1),
    (1, 3, 3, 4, 4, (2, 2), (2, 2), 0, (1, 1), 3),
    (1, 2, 3, 3, 3, (3, 3), (1, 1), 2, (1, 1), 1),
    # stride 1 with padding beyond the kernel's reach (the input gradient
    # then computes the whole padded input and crops it) and an even "same"
    (1, 2, 3, 4, 3, (2, 2), (1, 1), (2, 1), (1, 1), 1),
    (1, 2, 2, 4, 5, (2, 4), (1, 1), "same", (1, 1), 1),
]


def _inputs(case, dtype, seed=0):
    n, ci, co, h, w, k, s, p, d, g = case
    x = normal_tensor(seed + 1, (n, ci, h, w), dtype)
    wt = normal_tensor(seed + 2, (co, ci // g, *k), dtype)
    b = normal_tensor(seed + 3, (co,), dtype)
    return x, wt, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_conv2d_forward_and_backward_match_oracle(case, dtype):
    n, ci, co, h, w, k, s, p, d, g = case
    x, wt, b = _inputs(case, dtype)
    x.requires_grad_(), wt.requires_grad_(), b.requires_grad_()
    out = C.conv2d(x, wt, b, s, p, d, g)
    want, grads = oracle_conv2d(x, wt, b, s, _pads(p, k, d, 2), d, g)
    assert_same_bits(out, want)
    gout = normal_tensor(9, out.shape, dtype)
    got = torch.autograd.grad(out, (x, wt, b), gout)
    for name, u, v in zip(("input", "weight", "bias"), got, grads(gout)):
        assert_same_bits(u, v), name
    assert_same_bits(C.conv2d(x, wt, None, s, p, d, g), oracle_conv2d(x, wt, None, s, _pads(p, k, d, 2), d, g)[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d_matches_oracle(dtype):
    x = normal_tensor(11, (2, 4, 9), dtype).requires_grad_()
    w = normal_tensor(12, (6, 2, 3), dtype).requires_grad_()
    b = normal_tensor(13, (6,), dtype).requires_grad_()
    out = C.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2)
    want, grads = oracle_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), [(0, 0), (1, 1)], (1, 2), 2)
    assert_same_bits(out, want[:, :, 0])
    g = normal_tensor(14, out.shape, dtype)
    got = torch.autograd.grad(out, (x, w, b), g)
    gx, gw, gb = grads(g[:, :, None])
    assert_same_bits(got[0], gx[:, :, 0])
    assert_same_bits(got[1], gw[:, :, 0])
    assert_same_bits(got[2], gb)
    # unbatched input, "same" padding
    u = C.conv1d(x[0], w, None, padding="same", groups=2)
    assert_same_bits(u, oracle_conv2d(x[:1, :, None], w[:, :, None], None, (1, 1), [(0, 0), (1, 1)], (1, 1), 2)[0][0, :, 0])


def test_padding_positions_are_fma_terms():
    """A padded position is the term fma(0, w, acc): with w = inf it turns the output into NaN."""
    x = torch.ones((1, 1, 1, 1))
    w = torch.full((1, 1, 1, 3), float("inf"))
    w[0, 0, 0, 1] = 1.0
    out = C.conv2d(x, torch.tensor([[[[0.0, 1.0, 0.0]]]]), padding=(0, 1))
    assert out.item() == 1.0
    out = C.conv2d(x, w, padding=(0, 1))
    assert torch.isnan(out).all() and bits(out)[0, 0, 0, 0] == 0x7FC00000


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,pads", [((2, 3, 5, 4), ((1, 2), (2, 3))),  # small planes: zeroed whole, then filled
                                        ((1, 2, 50, 47), ((2, 1), (3, 1)))])  # large: the frame written alone
def test_padding_scratch_moves_values(shape, pads, dtype):
    """The CPU launcher's padded copy (softrep.cpu.conv.pad_into_scratch) is
    numpy's zero padding bit for bit: -0 and a NaN payload moved as they are,
    the frame +0, whatever the buffer held before."""
    from softrep.cpu.conv import pad_into_scratch

    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    x = np.random.default_rng(31).standard_normal(shape).astype(np_dtype)
    x[0, 0, 0, 0], x[0, 1, 2, 1] = -0.0, np.nan
    want = np.pad(x, ((0, 0), (0, 0)) + pads)
    pad_into_scratch(np.full(want.shape, np.nan, np_dtype), ((0, 0), (0, 0)))  # NaNs all over the scratch buffer
    got = pad_into_scratch(x, pads)
    uint = np.uint32 if dtype == torch.float32 else np.uint64
    assert np.array_equal(got.view(uint), want.view(uint))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pixels", [(12, 12), (3, 5)])
def test_bias_gradient_order(dtype, pixels):
    """grad_bias[c]: per sample the documented sum of g[n, c] over (oh, ow) --
    144 pixels are two blocks -- then the batch tree over 5 samples (odd at
    two levels); a NaN with a payload comes out canonical, an inf and -0
    take part as terms."""
    h, w = pixels
    x = normal_tensor(21, (5, 2, h, w), dtype)
    wt = normal_tensor(22, (3, 2, 1, 1), dtype)
    b = normal_tensor(23, (3,), dtype).requires_grad_()
    out = C.conv2d(x, wt, b)
    rng = np.random.default_rng(24)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    g = (rng.standard_normal(out.shape) * np.exp2(rng.integers(-30, 30, out.shape))).astype(np_dtype)
    g[1, 0, 0, 1] = np.array(0x7FC01234 if dtype == torch.float32 else 0x7FF8000000001234,
                             np.uint32 if dtype == torch.float32 else np.uint64).view(np_dtype)
    g[2, 1, 1, 0], g[3, 1, 0, 0] = np.inf, -0.0
    (gb,) = torch.autograd.grad(out, b, torch.from_numpy(g))
    for c in range(3):
        want = batch_tree([documented_sum(list(g[s, c].reshape(-1))) for s in range(5)])
        assert identical_bits(gb[c].numpy(), want), (c, gb[c].item(), want)


@pytest.mark.parametrize("with_bias", [False, True])
def test_nan_outputs_are_canonical(with_bias):
    """Input NaNs with other payloads (a quiet one with payload bits, a
    negative one) reach every output whose window holds them as the
    canonical NaN 0x7FC00000, with and without a bias, forward and input
    gradient (the CPU's chain ends run in a pass of their own)."""
    x = normal_tensor(11, (2, 3, 12, 12), torch.float32)
    x.view(torch.int32)[0, 1, 4, 5] = 0x7FC12345
    x.view(torch.int32)[1, 2, 7, 3] = -0x003FFFFF  # 0xFFC00001
    w = normal_tensor(12, (5, 3, 3, 3), torch.float32)
    b = normal_tensor(13, (5,), torch.float32) if with_bias else None
    out = C.conv2d(x, w, b, padding=1)
    nan_bits = out.detach().view(torch.int32)[torch.isnan(out)]  # raw bits (`bits` makes NaNs canonical)
    assert nan_bits.numel() == 2 * 5 * 9 and (nan_bits == 0x7FC00000).all()
    g = torch.zeros_like(out)
    g.view(torch.int32)[0, 2, 6, 6] = 0x7FC54321
    x.requires_grad_(True)
    (gx,) = torch.autograd.grad(C.conv2d(x, w, b, padding=1), x, g)
    nan_bits = gx.view(torch.int32)[torch.isnan(gx)]
    assert nan_bits.numel() == 3 * 9 and (nan_bits == 0x7FC00000).all()


def test_order_is_sequential_over_channels_then_kernel():
    """FPRev-style: +big and -big at two (c, kh, kw) positions, ones elsewhere;
    only the documented (c, kh, kw) chain from +0 gives the count of the
    ones that come after the pair."""
    big = 2.0 ** 50
    rng = np.random.Generator(np.random.PCG64(3))
    c, kh, kw = 5, 3, 2
    positions = [(ci, a, e) for ci in range(c) for a in range(kh) for e in range(kw)]
    for _ in range(6):
        p, q = rng.choice(len(positions), size=2, replace=False)
        w = torch.ones((1, c, kh, kw))
        w[(0, *positions[p])], w[(0, *positions[q])] = big, -big
        out = C.conv2d(torch.ones((1, c, kh, kw)), w)
        assert out.item() == len(positions) - 1 - max(p, q)


STRIDED_CASES = [  # N, Cin, Cout, H, W, (KH, KW), stride, padding, dilation, groups
    (2, 4, 6, 7, 9, (3, 3), (2, 2), 1, (1, 1), 2),
    (1, 2, 3, 8, 8, (1, 1), (2, 2), 0, (1, 1), 1),  # half the input positions get no tap
    (1, 3, 2, 9, 7, (4, 2), (3, 2), (3, 1), (2, 1), 1),
    (2, 2, 4, 6, 11, (2, 3), (2, 3), (0, 2), (2, 2), 2),
    (1, 1, 2, 5, 5, (3, 3), (2, 2), 4, (1, 1), 1),  # padding wider than the kernel
]


def _input_grad(x, w, case, g, zero_inserted, monkeypatch):
    """grad_input of conv2d, the strided one by its phases, or (zero_inserted)
    through the zero-inserted gradient of the documented order."""
    n, ci, co, h, wd, k, s, p, d, groups = case
    taken = []
    phases = C._input_grad_by_phases
    with monkeypatch.context() as m:
        m.setattr(C, "_input_grad_by_phases",
                  (lambda *args: None) if zero_inserted else (lambda *args: taken.append(phases(*args)) or taken[-1]))
        xx = x.clone().requires_grad_()
        (gx,) = torch.autograd.grad(C.conv2d(xx, w, None, s, p, d, groups), xx, g)
    return gx, taken


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", STRIDED_CASES)
def test_strided_input_grad_by_phases_is_the_zero_inserted_one(case, dtype, monkeypatch):
    """The phases drop only the zero terms of gz; with infinities and NaNs in g
    they still give the bits of the zero-inserted chains."""
    x, w, _ = _inputs(case, dtype, seed=30)
    out = C.conv2d(x, w, None, *case[6:9], case[9])
    g = normal_tensor(34, out.shape, dtype)
    g.view(-1)[::7] = float("inf")
    g.view(-1)[3::11] = float("nan")
    g.view(-1)[5::13] = -0.0
    got, taken = _input_grad(x, w, case, g, False, monkeypatch)
    want, _ = _input_grad(x, w, case, g, True, monkeypatch)
    assert len(taken) == 1 and taken[0] is not None  # the phases ran
    assert_same_bits(got, want)


def test_strided_input_grad_keeps_the_zero_terms_where_they_count(monkeypatch):
    """Two chains where a dropped term fma(0, w, acc) would move a bit: an
    infinite weight (0 * inf is NaN), and an accumulator at -0 (an underflow)
    that a zero term with w > 0 turns into +0.  Both take the zero-inserted
    gradient, and the MPFR oracle agrees."""
    case = (1, 1, 1, 1, 5, (1, 3), (1, 2), 0, (1, 1), 1)
    x = torch.zeros((1, 1, 1, 5))
    g = torch.tensor([[[[-1e-30, 1.0]]]])
    # input 2 gets, k = 2 .. 0: g[0] * w[2] (underflows to -0), a zero of gz
    # times w[1] (-0 + +0 = +0), g[1] * w[0] (+0 + -0 stays +0)
    w = torch.tensor([[[[-0.0, 1.0, 1e-30]]]])
    got, taken = _input_grad(x, w, case, g, False, monkeypatch)
    assert taken == [None]
    _, grads = oracle_conv2d(x, w, None, (1, 2), [(0, 0), (0, 0)], (1, 1), 1)
    want = grads(g)[0]
    assert_same_bits(got, want)
    assert bits(got)[0, 0, 0, 2] == 0  # +0
    w_inf = torch.tensor([[[[1.0, float("inf"), 2.0]]]])
    got, taken = _input_grad(x, w_inf, case, torch.ones((1, 1, 1, 2)), False, monkeypatch)
    assert taken == [None] and torch.isnan(got[0, 0, 0, 2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_invariance(dtype):
    case = CASES[0]
    x, w, b = _inputs(case, dtype)
    x = normal_tensor(20, (5, 4, 5, 6), dtype)
    full = C.conv2d(x, w, b, (2, 1), 1, 1, 2)
    for m in range(1, 6):
        assert_same_bits(C.conv2d(x[:m], w, b, (2, 1), 1, 1, 2), full[:m])
        assert_same_bits(C.conv2d(x[m - 1:m], w, b, (2, 1), 1, 1, 2), full[m - 1:m])


def test_layout_invariance():
    x = normal_tensor(21, (2, 3, 6, 6))
    w = normal_tensor(22, (4, 3, 3, 3))
    want = C.conv2d(x, w, padding=1)
    x_cl = x.contiguous(memory_format=torch.channels_last)
    assert_same_bits(C.conv2d(x_cl, w, padding=1), want)
    assert_same_bits(C.conv2d(x.transpose(2, 3).contiguous().transpose(2, 3), w, padding=1), want)


def test_gradcheck():
    d = torch.float64
    torch.manual_seed(0)
    x = torch.randn(2, 4, 5, 5, dtype=d, requires_grad=True)
    w = torch.randn(6, 2, 3, 2, dtype=d, requires_grad=True)
    b = torch.randn(6, dtype=d, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: C.conv2d(x, w, b, (2, 1), (1, 2), (1, 2), 2), (x, w, b))
    x1 = torch.randn(2, 2, 7, dtype=d, requires_grad=True)
    w1 = torch.randn(3, 2, 3, dtype=d, requires_grad=True)
    b1 = torch.randn(3, dtype=d, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: C.conv1d(x, w, b, 2, "valid", 2), (x1, w1, b1))
    assert torch.autograd.gradcheck(lambda x, w: C.conv1d(x, w, padding="same"), (x1, w1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_close_to_torch(dtype):
    x = normal_tensor(30, (2, 8, 10, 10), dtype)
    w = normal_tensor(31, (8, 4, 3, 3), dtype)
    b = normal_tensor(32, (8,), dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(C.conv2d(x, w, b, 2, 1, 1, 2), F.conv2d(x, w, b, 2, 1, 1, 2), **tol)
    torch.testing.assert_close(C.conv2d(x, w, b, 1, "same", 2, 2), F.conv2d(x, w, b, 1, "same", 2, 2), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_golden_vectors(dtype):
    name = "float32" if dtype == torch.float32 else "float64"
    x = normal_tensor(40, (2, 4, 7, 6), dtype).requires_grad_()
    w = normal_tensor(41, (6, 2, 3, 3), dtype).requires_grad_()
    b = normal_tensor(42, (6,), dtype).requires_grad_()
    out = C.conv2d(x, w, b, (2, 1), 1, (1, 2), 2)
    check(GOLDEN, f"conv2d.{name}", out)
    gx, gw, gb = torch.autograd.grad(out, (x, w, b), normal_tensor(43, out.shape, dtype))
    check(GOLDEN, f"conv2d_grad_input.{name}", gx)
    check(GOLDEN, f"conv2d_grad_weight.{name}", gw)
    check(GOLDEN, f"conv2d_grad_bias.{name}", gb)
    check(GOLDEN, f"conv1d.{name}", C.conv1d(x[:, :, 0], w[:, :, 0], b, 1, "same", 2, 2))


@pytest.mark.parametrize("call,exc,words", [
    (lambda: C.conv2d(torch.ones(1, 4, 5, 5), torch.ones(6, 2, 3, 3), groups=3), ValueError, ["'groups'"]),
    (lambda: C.conv2d(torch.ones(1, 3, 5, 5), torch.ones(4, 1, 3, 3), groups=2), ValueError, ["'groups'"]),
    (lambda: C.conv2d(torch.ones(1, 4, 5, 5), torch.ones(6, 3, 3, 3)), ValueError, ["'weight'", "'input'"]),
    (lambda: C.conv2d(torch.ones(5, 5), torch.ones(1, 1, 3, 3)), ValueError, ["'input'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 3, 3)), ValueError, ["'weight'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5, dtype=torch.int32), torch.ones(1, 1, 3, 3)), TypeError, ["'input'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3, dtype=torch.float64)), TypeError, ["'weight'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3), torch.ones(2)), ValueError, ["'bias'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3), stride=0), ValueError, ["'stride'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3), padding="full"), ValueError, ["'padding'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3), stride=2, padding="same"), ValueError,
     ["same", "stride"]),
    (lambda: C.conv2d(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3), padding_mode="reflect"), NotImplementedError,
     ["'padding_mode'"]),
    (lambda: C.conv2d(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 3, 3)), ValueError, ["'input'", "kernel"]),
    (lambda: C.conv1d(torch.ones(1, 1, 5), torch.ones(1, 1, 3), dilation=(1, 1)), ValueError, ["'dilation'"]),
])
def test_bad_input(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
def test_simulator_matches_oracle_and_cpu(dtype, backend):
    case = (1, 2, 2, 3, 4, (2, 2), (1, 2), 1, (1, 1), 2)
    x, w, b = _inputs(case, dtype)
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
    backend("cuda")
    out = C.conv2d(x, w, b, (1, 2), 1, 1, 2)
    want, grads = oracle_conv2d(x, w, b, (1, 2), [(1, 1), (1, 1)], (1, 1), 2)
    assert_same_bits(out, want)
    g = normal_tensor(5, out.shape, dtype)
    sim_grads = torch.autograd.grad(out, (x, w, b), g)
    for u, v in zip(sim_grads, grads(g)):
        assert_same_bits(u, v)
    backend("cpu")
    cpu_out = C.conv2d(x, w, b, (1, 2), 1, 1, 2)
    assert_same_bits(cpu_out, out)


# Odd combinations of stride, padding (asymmetric "same" included), dilation and
# groups (depthwise included), for the index arithmetic the two backends share.
ODD_CASES = [  # N, Cin, Cout, H, W, (KH, KW), stride, padding, dilation, groups
    (2, 6, 4, 7, 5, (3, 2), (2, 3), (2, 1), (2, 1), 2),
    (1, 3, 6, 6, 7, (2, 3), (1, 1), "same", (1, 2), 3),
    (3, 4, 4, 5, 5, (1, 3), (1, 2), (0, 2), (1, 3), 4),
    (1, 2, 5, 9, 4, (4, 1), (3, 1), (3, 0), (2, 1), 1),
]


@pytest.mark.parametrize("case", ODD_CASES)
def test_input_index_is_im2col(case):
    """column_offset(col) + tap_offset(k, g) is the flat index of the input that
    cols_g[k, col] holds, against torch's own im2col (F.unfold) of an input
    whose values are their flat indices."""
    from softrep.algorithms.convolution import column_offset, output_size, tap_offset

    n, ci, co, h, w, (kh, kw), (sh, sw), p, (dh, dw), groups = case
    (pt, pb), (pl, pr) = _pads(p, (kh, kw), (dh, dw), 2)
    hp, wp = h + pt + pb, w + pl + pr
    index = torch.arange(n * ci * hp * wp, dtype=torch.float64).reshape(n, ci, hp, wp)
    cols = F.unfold(index, (kh, kw), dilation=(dh, dw), stride=(sh, sw))  # (N, Cin*KH*KW, OH*OW)
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    assert oh * ow == cols.shape[2]
    c_g = ci // groups
    kk = c_g * kh * kw
    got = np.array([[[column_offset(col, oh, ow, sh, sw, ci, hp, wp) + tap_offset(k, g, c_g, kh, kw, dh, dw, hp, wp)
                      for col in range(n * oh * ow)] for k in range(kk)] for g in range(groups)])
    want = cols.view(n, groups, kk, oh * ow).permute(1, 2, 0, 3).reshape(groups, kk, n * oh * ow)
    np.testing.assert_array_equal(got, want.numpy().astype(np.int64))


WIDE_CASES = [  # N, Cin, Hp, Wp (padded), (KH, KW), stride, dilation, groups: rows as wide as a panel and wider
    (2, 2, 5, 34, (3, 3), (1, 1), (1, 1), 1),
    (1, 4, 4, 41, (2, 3), (1, 1), (1, 2), 2),
    (2, 2, 6, 37, (3, 3), (2, 2), (1, 1), 1),
    (1, 3, 3, 70, (1, 2), (1, 3), (1, 2), 3),
    (2, 8, 6, 13, (3, 3), (1, 1), (1, 1), 1),  # K = 72: several NR-wide blocks of rows, whole 8 x 8 tiles and a rest
    (1, 8, 3, 15, (1, 1), (1, 2), (1, 1), 1),  # stride 2: the last row's tile would read one element past the input
    # output rows of 4, 7 and 15 columns at stride 1: runs copied in groups of
    # four, whole, overlapping, and cut short by a panel's end
    (5, 8, 6, 6, (3, 3), (1, 1), (1, 1), 1),
    (3, 3, 9, 9, (3, 3), (1, 1), (1, 1), 1),
    (2, 2, 4, 16, (2, 2), (1, 1), (1, 1), 2),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", WIDE_CASES)
def test_cpu_panels_hold_im2col(case, dtype):
    """The CPU packer writes the im2col value F.unfold gives into every lane
    of every panel, and +0 into the lanes past the last column, for output
    rows shorter than, as long as and longer than a panel, strided and
    dilated."""
    from softrep.algorithms.convolution import output_size
    from softrep.cpu import conv as cpu_conv
    from softrep.cpu.linalg import packed_b

    n, ci, hp, wp, (kh, kw), (sh, sw), (dh, dw), groups = case
    x = normal_tensor(9, (n, ci, hp, wp), dtype)
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    kk = ci // groups * kh * kw
    cols = F.unfold(x, (kh, kw), dilation=(dh, dw), stride=(sh, sw))
    want = cols.view(n, groups, kk, oh * ow).permute(1, 2, 0, 3).reshape(groups, kk, n * oh * ow).numpy()
    bp = packed_b(groups, kk, n * oh * ow, want.dtype)
    bp[...] = np.nan
    cpu_conv.pack_im2col(bp, x.numpy().reshape(-1), ci, hp, wp, groups, kh, kw, sh, sw, dh, dw, n, oh, ow)
    npan, nr = bp.shape[1], bp.shape[3]
    got = bp.transpose(0, 2, 1, 3).reshape(groups, kk, npan * nr)
    np.testing.assert_array_equal(got[:, :, :n * oh * ow].view(np.uint8), want.view(np.uint8))
    tail = got[:, :, n * oh * ow:]
    assert not tail.any() and not np.signbit(tail).any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", WIDE_CASES)
def test_cpu_weight_grad_operand_holds_im2col(case, dtype):
    """The weight gradient's CPU packer writes, for every sample, group and
    block of NR rows of im2col, each output pixel's NR values F.unfold gives,
    and leaves the lanes past the last row as they were (the kernel zeroes
    them once for all samples)."""
    from softrep.algorithms.convolution import output_size
    from softrep.cpu import conv as cpu_conv
    from softrep.cpu.linalg import NR

    n, ci, hp, wp, (kh, kw), (sh, sw), (dh, dw), groups = case
    x = normal_tensor(10, (n, ci, hp, wp), dtype)
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    kk = ci // groups * kh * kw
    cols = F.unfold(x, (kh, kw), dilation=(dh, dw), stride=(sh, sw))
    want = np.ascontiguousarray(cols.view(n, groups, kk, oh * ow).transpose(2, 3).numpy())
    nr = NR[want.dtype]
    taps = cpu_conv._taps(groups, ci // groups, kh, kw, dh, dw, hp, wp)
    for s in range(n):
        for g in range(groups):
            for k0 in range(0, kk, nr):
                buf = np.full(oh * ow * nr, np.nan, want.dtype)
                cpu_conv._pack_pixel_rows(buf, x.numpy().reshape(-1), taps, g, kk, k0, nr, s, ci, hp, wp, sh, sw,
                                          oh, ow)
                got = buf.reshape(oh * ow, nr)
                valid = min(nr, kk - k0)
                np.testing.assert_array_equal(got[:, :valid].view(np.uint8),
                                              np.ascontiguousarray(want[s, g, :, k0:k0 + valid]).view(np.uint8))
                assert np.isnan(got[:, valid:]).all()


def test_cpu_weight_grad_tiles_at_stride_2_stay_inside_the_input():
    """At stride 2 a tile's vector loads cover 16 elements for 8 pixels, one
    past the last: the packer takes no tile whose loads would end past the
    input (the Python semantics of the loads raise where they would)."""
    from softrep.cpu import conv as cpu_conv

    src = np.arange(8 * 3 * 15, dtype=np.float32)  # 8 planes of 3 x 15
    offs = np.arange(8, dtype=np.uint64) * np.uint64(45)
    for s0, tiled in ((0, 8), (30, 0)):  # the planes' first rows; their last rows, whose tile would read src[360]
        dst = np.full(8 * 8, np.nan, np.float32)
        assert cpu_conv._taps_transposed_f32(dst, 0, 8, src, s0, offs, 8, 8, 2) == tiled
        if tiled:
            want = src[s0 + offs.astype(np.int64)[None, :] + 2 * np.arange(8)[:, None]]
            np.testing.assert_array_equal(dst.reshape(8, 8), want)


def test_cpu_weight_grad_operand_moves_float32_tiles_in_vectors():
    """The float32 packer of the weight gradient's operand transposes 8 x 8
    tiles of (row of im2col, pixel) in vectors (`_taps_transposed_f32`; the
    scalar form moves the same values at about the cost of the product
    itself); the float64 one has no such path."""
    from softrep.cpu import conv as cpu_conv

    taps = cpu_conv._taps(1, 4, 3, 3, 1, 1, 10, 10)
    for dtype, tiled in ((np.float32, True), (np.float64, False)):
        pack = numba.njit(error_model="numpy")(cpu_conv._pack_pixel_rows.py_func)  # compiled here, not cached
        pack(np.empty(64 * 32, dtype), np.zeros(2 * 4 * 10 * 10, dtype), taps, 0, 36, 0, 32, 1, 4, 10, 10, 1, 1, 8, 8)
        (ir,) = pack.inspect_llvm().values()
        assert ("_taps_transposed_f32" in ir) == tiled, dtype


@pytest.mark.simulator
@pytest.mark.parametrize("case", ODD_CASES)
def test_simulator_and_cpu_agree_on_odd_geometry(case, backend):
    """The CUDA kernel (tiles of cols loaded in the simulator) and the CPU panel
    packing find the same inputs: forward and backward bit for bit, forward
    against the oracle too."""
    n, ci, co, h, w, k, s, p, d, g = case
    dtype = torch.float32
    x, wt, b = _inputs(case, dtype, seed=50)
    x.requires_grad_(), wt.requires_grad_(), b.requires_grad_()
    gout = None
    results = {}
    for name in ("cuda", "cpu"):
        backend(name)
        out = C.conv2d(x, wt, b, s, p, d, g)
        gout = normal_tensor(59, out.shape, dtype) if gout is None else gout
        results[name] = (out, C.conv2d(x, wt, None, s, p, d, g), *torch.autograd.grad(out, (x, wt, b), gout))
    for what, u, v in zip(("forward", "forward without bias", "grad_input", "grad_weight", "grad_bias"),
                          results["cuda"], results["cpu"]):
        assert_same_bits(u, v), what
    assert_same_bits(results["cuda"][0], oracle_conv2d(x, wt, b, s, _pads(p, k, d, 2), d, g)[0])


def test_golden_file_covers_every_op():
    import json

    with open(os.path.join(os.path.dirname(__file__), "golden", GOLDEN)) as f:
        keys = json.load(f)
    for key in ("conv2d", "conv2d_grad_input", "conv2d_grad_weight", "conv2d_grad_bias", "conv1d"):
        for dt in ("float32", "float64"):
            assert f"{key}.{dt}" in keys


def test_ptx_audit_conv_kernel():
    from softrep.tools import kernel_audit

    names = [n for n in kernel_audit.load_kernels(("cuda",))["cuda"] if n.startswith("conv.")]
    assert sorted(names) == ["conv.forward.float32", "conv.forward.float64"]
    count, findings = kernel_audit.audit(("cuda",), names=names)
    assert count == 2 * len(kernel_audit.CCS)
    assert not findings, "\n".join(map(str, findings))
