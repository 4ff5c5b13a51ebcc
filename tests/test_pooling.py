"""max_pool2d, avg_pool2d, adaptive_avg_pool2d: forward and backward bit-exact
against a plain-Python emulation of the orders in docs/order.md ("Pooling"):
windows walked with Python loops, sums in the documented block/tree order with
numpy float32 (IEEE round to nearest), divisions by MPFR.  Values, shapes and
indices against torch; gradcheck in float64; CPU == simulator bits."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from softrep.nn.functional.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d

from golden import check, normal_tensor
from references import documented_sum, mpfr_op


def doc_sum(terms):
    return documented_sum([np.float32(t) for t in terms], empty=np.float32(0.0))


def bits(t):
    return np.asarray(t.detach().numpy(), dtype=np.float32).view(np.uint32)


def out_len(size, k, s, p, d, ceil):
    n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (n - 1) * s >= size + p:
        n -= 1
    return n


def key(v):
    """Total order of the docs: NaN above all, +0 above -0."""
    v = float(v)
    if math.isnan(v):
        return (2, 0.0)
    return (1, v, math.copysign(1.0, v))


def windows(H, W, k, s, p, d, ceil):
    """For each output (oh, ow) in row-major order: its window positions (ih, iw)
    in row-major (kh, kw) order, None for padding."""
    OH, OW = out_len(H, k[0], s[0], p[0], d[0], ceil), out_len(W, k[1], s[1], p[1], d[1], ceil)
    res = {}
    for oh in range(OH):
        for ow in range(OW):
            pos = []
            for kh in range(k[0]):
                for kw in range(k[1]):
                    ih, iw = oh * s[0] - p[0] + kh * d[0], ow * s[1] - p[1] + kw * d[1]
                    pos.append((ih, iw) if 0 <= ih < H and 0 <= iw < W else None)
            res[oh, ow] = pos
    return OH, OW, res


def emulate_max(x, g, k, s, p, d, ceil):
    """(output, flat indices, grad_input) of max_pool2d on a (C, H, W) float32 array."""
    C, H, W = x.shape
    OH, OW, win = windows(H, W, k, s, p, d, ceil)
    out = np.zeros((C, OH, OW), np.float32)
    idx = np.zeros((C, OH, OW), np.int64)
    contrib = {}
    for c in range(C):
        for oh in range(OH):
            for ow in range(OW):
                best = None
                for pos in win[oh, ow]:
                    if pos is not None and (best is None or key(x[c][pos]) > key(x[c][best])):
                        best = pos
                out[c, oh, ow] = np.float32("nan") if math.isnan(x[c][best]) else x[c][best]
                idx[c, oh, ow] = best[0] * W + best[1]
                contrib.setdefault((c, *best), []).append(g[c, oh, ow])
    grad = np.zeros_like(x)
    for (c, ih, iw), terms in contrib.items():
        grad[c, ih, iw] = doc_sum(terms)
    return out, idx, grad


def emulate_mean(x, g, wins, divisor):
    """Window sums (padding as -0), one MPFR division, and the backward sums of
    div(g, divisor) by output position."""
    C, H, W = x.shape
    keys = sorted(wins)
    out = np.zeros((C, len(keys)), np.float32)
    grad = np.zeros_like(x)
    contrib = {}
    for c in range(C):
        for o, ohw in enumerate(keys):
            terms = [np.float32(-0.0) if pos is None else x[c][pos] for pos in wins[ohw]]
            out[c, o] = mpfr_op("div", [doc_sum(terms), divisor[ohw]], np.float32)
            go = mpfr_op("div", [g[c, o], divisor[ohw]], np.float32)
            for pos in wins[ohw]:
                if pos is not None:
                    contrib.setdefault((c, *pos), []).append(go)
    for (c, ih, iw), terms in contrib.items():
        grad[c, ih, iw] = doc_sum(terms)
    return out, grad


def run(fn, x, g, **kw):
    xt = torch.from_numpy(x).requires_grad_()
    out = fn(xt, **kw)
    res = out[0] if isinstance(out, tuple) else out
    (grad,) = torch.autograd.grad(res, xt, torch.from_numpy(g).reshape(res.shape))
    return out, grad


def wide_values(seed, shape, ties=False):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: many ties inside the windows
        return rng.integers(-2, 3, size=shape).astype(np.float32)
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-20, 20, size=shape))).astype(np.float32)


@pytest.mark.parametrize("k,s,p,d,ceil", [
    ((3, 3), (1, 1), (1, 1), (1, 1), False),   # overlapping windows: sums in the backward
    ((3, 2), (2, 1), (1, 0), (2, 1), True),
    ((2, 2), (2, 2), (0, 0), (1, 1), True),  # windows apart: the backward is a copy
    ((2, 2), (3, 2), (1, 0), (2, 1), False),  # apart, with dilation and padding
])
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool2d_exact(k, s, p, d, ceil, ties):
    x = wide_values(1, (2, 7, 6), ties)
    x[0, 2, 3] = np.float32("nan")
    x[1, 0, :2] = [-0.0, 0.0]
    OH, OW = out_len(7, k[0], s[0], p[0], d[0], ceil), out_len(6, k[1], s[1], p[1], d[1], ceil)
    g = wide_values(2, (2, OH, OW))
    (out, idx), grad = run(max_pool2d, x, g, kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil,
                           return_indices=True)
    e_out, e_idx, e_grad = emulate_max(x, g, k, s, p, d, ceil)
    assert np.array_equal(bits(out), e_out.view(np.uint32))
    assert np.array_equal(idx.numpy(), e_idx)
    assert np.array_equal(bits(grad), e_grad.view(np.uint32))


def test_max_pool2d_semantics():
    x = torch.tensor([[[-0.0, 0.0, 1.0, 1.0],
                       [float("nan"), 2.0, -1.0, -1.0]]])
    nan_payload = torch.tensor([0x7FC01234], dtype=torch.int32).view(torch.float32)
    x[0, 1, 0] = nan_payload
    out, idx = max_pool2d(x, (1, 2), return_indices=True)
    assert idx.tolist() == [[[1, 2], [4, 6]]]  # +0 beats -0; first of equal 1.0; NaN wins; first -1
    assert out.view(torch.int32)[0, 1, 0].item() == 0x7FC00000  # canonical NaN
    # padding never wins, even against -inf
    y = torch.full((1, 2, 2), float("-inf"))
    o, i = max_pool2d(y, 3, stride=1, padding=1, return_indices=True)
    assert torch.equal(i, torch.zeros_like(i)) and torch.equal(o, y)


def test_max_pool2d_matches_torch():
    x = normal_tensor(3, (2, 3, 11, 10))
    for kw in [dict(kernel_size=3), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=(1, 2)),
               dict(kernel_size=2, stride=3, ceil_mode=True)]:
        a, ia = max_pool2d(x, return_indices=True, **kw)
        b, ib = F.max_pool2d(x, return_indices=True, **kw)
        assert torch.equal(a, b) and torch.equal(ia, ib)
    # many small planes: the CPU launcher's work items hold runs of planes
    # (cpu/pooling.py WINDOWS_PER_ITEM), the last one shorter
    many = normal_tensor(4, (3, 50, 4, 4))
    a, ia = max_pool2d(many, 2, return_indices=True)
    b, ib = F.max_pool2d(many, 2, return_indices=True)
    assert torch.equal(a, b) and torch.equal(ia, ib)


def avg_windows(H, W, k, s, p, ceil, count_include_pad, override):
    OH, OW, win = windows(H, W, k, s, p, (1, 1), ceil)
    div = {}
    for oh, ow in win:
        hs, ws = oh * s[0] - p[0], ow * s[1] - p[1]
        he, we = min(hs + k[0], H + p[0]), min(ws + k[1], W + p[1])
        if not count_include_pad:
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, H), min(we, W)
        div[oh, ow] = override if override else (he - hs) * (we - ws)
    return OH, OW, win, div


@pytest.mark.parametrize("k,s,p,ceil,cip,override", [
    ((3, 3), (1, 1), (1, 1), False, True, None),
    ((3, 3), (2, 2), (1, 1), True, False, None),
    ((2, 3), (2, 1), (1, 0), True, True, None),
    ((2, 2), (1, 2), (0, 0), False, True, 3),
    ((12, 12), (5, 5), (6, 6), False, True, None),  # 144 positions: -0 padding across a block boundary
    ((2, 2), (2, 2), (0, 0), False, True, None),  # windows that tile the plane, the last column in none
    ((3, 2), (3, 2), (0, 0), True, False, 5),  # tiles; ceil_mode adds no window here
])
def test_avg_pool2d_exact(k, s, p, ceil, cip, override):
    x = wide_values(4, (2, 6, 7))
    OH, OW, win, div = avg_windows(6, 7, k, s, p, ceil, cip, override)
    g = wide_values(5, (2, OH * OW))
    out, grad = run(avg_pool2d, x, g, kernel_size=k, stride=s, padding=p, ceil_mode=ceil,
                    count_include_pad=cip, divisor_override=override)
    e_out, e_grad = emulate_mean(x, g, win, div)
    assert np.array_equal(bits(out).reshape(2, -1), e_out.view(np.uint32))
    assert np.array_equal(bits(grad), e_grad.view(np.uint32))
    ref = F.avg_pool2d(torch.from_numpy(x), k, s, p, ceil, cip, override)
    assert out.shape == ref.shape


@pytest.mark.parametrize("size", [(3, 4), 1, (None, 2), (7, 1), (None, 5)])  # 1, (7, 1), (None, 5): tiles
def test_adaptive_avg_pool2d_exact(size):
    H, W = 7, 5
    x = wide_values(6, (2, H, W))
    OH, OW = (size, size) if isinstance(size, int) else (size[0] or H, size[1] or W)
    wins, div = {}, {}
    for oh in range(OH):
        for ow in range(OW):
            hs, he = oh * H // OH, -(-(oh + 1) * H // OH)
            ws, we = ow * W // OW, -(-(ow + 1) * W // OW)
            wins[oh, ow] = [(i, j) for i in range(hs, he) for j in range(ws, we)]
            div[oh, ow] = (he - hs) * (we - ws)
    g = wide_values(7, (2, OH * OW))
    out, grad = run(adaptive_avg_pool2d, x, g, output_size=size)
    e_out, e_grad = emulate_mean(x, g, wins, div)
    assert np.array_equal(bits(out).reshape(2, -1), e_out.view(np.uint32))
    assert np.array_equal(bits(grad), e_grad.view(np.uint32))


def test_avg_pools_agree_with_torch():
    x = normal_tensor(8, (2, 3, 9, 8))
    for kw in [dict(kernel_size=3), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
               dict(kernel_size=2, divisor_override=3)]:
        torch.testing.assert_close(avg_pool2d(x, **kw), F.avg_pool2d(x, **kw), rtol=1e-6, atol=1e-6)
    for size in [(4, 3), 1, (9, 8), (5, 7)]:
        torch.testing.assert_close(adaptive_avg_pool2d(x, size), F.adaptive_avg_pool2d(x, size),
                                   rtol=1e-6, atol=1e-6)


def test_gradcheck_float64():
    x = torch.randn(1, 2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: max_pool2d(t, 3, 1, 1), (x,), fast_mode=True)
    assert torch.autograd.gradcheck(lambda t: avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False), (x,),
                                    fast_mode=True)
    assert torch.autograd.gradcheck(lambda t: adaptive_avg_pool2d(t, (3, 2)), (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(lambda t: max_pool2d(t, 2, 1), (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(lambda t: max_pool2d(t, 2), (x,), fast_mode=True)  # windows apart


def test_zero_elements_and_3d():
    x = torch.zeros(0, 3, 4, 4)
    assert max_pool2d(x, 2).shape == (0, 3, 2, 2)
    assert avg_pool2d(x, 2).shape == (0, 3, 2, 2)
    y = normal_tensor(9, (3, 5, 5))
    assert torch.equal(max_pool2d(y, 2), F.max_pool2d(y, 2))
    nc = y.transpose(1, 2)  # non-contiguous
    assert torch.equal(max_pool2d(nc, 2), F.max_pool2d(nc, 2))


def test_bad_input():
    x = torch.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="'input'"):
        max_pool2d(torch.zeros(4, 4), 2)
    with pytest.raises(TypeError, match="'input'"):
        avg_pool2d(x.to(torch.int64), 2)
    with pytest.raises(ValueError, match="'kernel_size'"):
        max_pool2d(x, 0)
    with pytest.raises(ValueError, match="'stride'"):
        avg_pool2d(x, 2, stride=0)
    with pytest.raises(ValueError, match="'padding'"):
        max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="'dilation'"):
        max_pool2d(x, 2, dilation=0)
    with pytest.raises(TypeError, match="'kernel_size'"):
        max_pool2d(x, 2.5)
    with pytest.raises(ValueError, match="'input' is too small"):
        max_pool2d(x, 5)
    with pytest.raises(ValueError, match="'divisor_override'"):
        avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(ValueError, match="'output_size'"):
        adaptive_avg_pool2d(x, 0)


def test_golden():
    x = normal_tensor(10, (2, 3, 9, 8), scale=4.0)
    g = normal_tensor(11, (2, 3, 9, 8))
    xr = x.clone().requires_grad_()
    out = max_pool2d(xr, 3, stride=1, padding=1)
    check("pooling.json", "max_pool2d.k3s1p1", out)
    check("pooling.json", "max_pool2d.k3s1p1.grad", torch.autograd.grad(out, xr, g)[0])
    out = avg_pool2d(xr, 3, stride=1, padding=1, count_include_pad=False)
    check("pooling.json", "avg_pool2d.k3s1p1", out)
    check("pooling.json", "avg_pool2d.k3s1p1.grad", torch.autograd.grad(out, xr, g)[0])
    out = adaptive_avg_pool2d(xr, (4, 3))
    check("pooling.json", "adaptive_avg_pool2d.4x3", out)
    check("pooling.json", "adaptive_avg_pool2d.4x3.grad", torch.autograd.grad(out, xr, g[..., :4, :3])[0])


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = normal_tensor(12, (1, 2, 4, 4), scale=4.0)
    g = normal_tensor(13, (1, 2, 4, 4))

    def both():
        xr = x.clone().requires_grad_()
        res = []
        for out in (max_pool2d(xr, 3, 1, 1), avg_pool2d(xr, 3, 1, 1), adaptive_avg_pool2d(xr, (3, 2))):
            res += [out, torch.autograd.grad(out, xr, g[..., :out.shape[2], :out.shape[3]])[0]]
        return res

    # the window winners alone: ties, NaN, -0 against +0, dilation and ceil_mode
    t = torch.from_numpy(wide_values(14, (2, 3, 7, 6), ties=True))
    t[0, 0, 1, 1], t[0, 1, 2, 2], t[1, 2, 0, 0] = float("nan"), -0.0, 0.0

    def winners():
        return max_pool2d(t, (3, 2), (2, 1), (1, 0), (2, 1), ceil_mode=True, return_indices=True)

    backend("cuda")
    sim, sim_w = both(), winners()
    backend("cpu")
    cpu, cpu_w = both(), winners()
    for s, c in zip(sim, cpu):
        assert np.array_equal(bits(s), bits(c))
    assert np.array_equal(bits(sim_w[0]), bits(cpu_w[0])) and torch.equal(sim_w[1], cpu_w[1])
