"""batch_norm, layer_norm, rms_norm, group_norm.

* bits: an element-by-element emulation of the order in docs/order.md
  ("Normalization") with every rounding done by MPFR (references.mpfr_op) and
  the blocked pairwise sum written out again here;
* maths: float32 agreement with torch.nn.functional, float64 gradcheck;
* batch norm running statistics against torch and against the emulation;
* CPU == CUDA simulator bits, golden vectors, bad input.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import softrep
from golden import check, normal_tensor
from references import batch_tree, documented_sum, mpfr_op

GOLDEN = "normalization.json"


def bits(t):
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def same_bits(a, b):
    return np.array_equal(bits(a), bits(b))


# ------------------------------------------------------------- MPFR emulation (float32)

def op(name, *args):
    return mpfr_op(name, args, np.float32)


def doc_sum(terms):
    return documented_sum(terms, add=lambda a, b: op("add", a, b), empty=np.float32(0.0))


def tree_sum(partials):
    return batch_tree(partials, add=lambda a, b: op("add", a, b))


def emulate_normalize(row, eps, center):
    """(xhat, s) of one group of normalised elements, in the documented order."""
    n = np.float32(len(row))
    if center:
        m = op("div", doc_sum(row), n)
        d = [op("sub", v, m) for v in row]
    else:
        m, d = None, list(row)
    ss = doc_sum([op("mul", v, v) for v in d])
    s = op("sqrt", op("add", op("div", ss, n), np.float32(eps)))
    return [op("div", v, s) for v in d], s, m, ss


def emulate_normalize_backward(g, xhat, s, center):
    n = np.float32(len(g))
    c = op("div", doc_sum([op("mul", a, b) for a, b in zip(g, xhat)]), n)
    if center:
        mg = op("div", doc_sum(g), n)
        t = [op("sub", v, mg) for v in g]
    else:
        t = list(g)
    return [op("div", op("sub", tv, op("mul", xv, c)), s) for tv, xv in zip(t, xhat)]


def emulate_rows(x, g, w, b, eps, center):
    """Rows of x (R, n) normalised with per-column affine (w, b may be None):
    forward, input gradient, weight and bias gradients."""
    out, gx, xhats = [], [], []
    for row, grow in zip(x, g):
        xhat, s, _, _ = emulate_normalize(list(row), eps, center)
        xhats.append(xhat)
        y = [op("mul", v, wv) for v, wv in zip(xhat, w)] if w is not None else xhat
        y = [op("add", v, bv) for v, bv in zip(y, b)] if b is not None else y
        out.append(y)
        gxhat = [op("mul", gv, wv) for gv, wv in zip(grow, w)] if w is not None else list(grow)
        gx.append(emulate_normalize_backward(gxhat, xhat, s, center))
    cols = range(x.shape[1])
    # each row is a sample (dim 0): its partial is its own term, then the batch tree
    gw = [tree_sum([op("mul", g[r][j], xhats[r][j]) for r in range(len(x))]) for j in cols]
    gb = [tree_sum([g[r][j] for r in range(len(x))]) for j in cols]
    return (np.array(out, np.float32), np.array(gx, np.float32),
            np.array(gw, np.float32), np.array(gb, np.float32))


def run(fn, x, params, g):
    """Forward and the gradients of x and params for output gradient g."""
    x = x.clone().requires_grad_()
    params = [p.clone().requires_grad_() if p is not None else None for p in params]
    out = fn(x, *params)
    out.backward(g)
    return out.detach(), x.grad, [p.grad if p is not None else None for p in params]


# ------------------------------------------------------------- exact order

def test_layer_norm_bits_against_mpfr():
    # n = 150 > 128: the sums use two blocks and the tree
    x = normal_tensor(1, (2, 150), scale=3.0) + 1.5
    w, b = normal_tensor(2, (150,)), normal_tensor(3, (150,))
    g = normal_tensor(4, (2, 150))
    out, gx, (gw, gb) = run(lambda t, w_, b_: softrep.layer_norm(t, (150,), w_, b_), x, [w, b], g)
    e_out, e_gx, e_gw, e_gb = emulate_rows(x.numpy(), g.numpy(), w.numpy(), b.numpy(), 1e-5, True)
    assert same_bits(out, e_out)
    assert same_bits(gx, e_gx)
    assert same_bits(gw, e_gw)
    assert same_bits(gb, e_gb)


def test_rms_norm_bits_against_mpfr():
    x = normal_tensor(5, (4, 40), scale=2.0)
    w = normal_tensor(6, (40,))
    g = normal_tensor(7, (4, 40))
    eps = float(torch.finfo(torch.float32).eps)
    out, gx, (gw,) = run(lambda t, w_: softrep.rms_norm(t, 40, w_), x, [w], g)
    e_out, e_gx, e_gw, _ = emulate_rows(x.numpy(), g.numpy(), w.numpy(), None, eps, False)
    assert same_bits(out, e_out)
    assert same_bits(gx, e_gx)
    assert same_bits(gw, e_gw)


def test_group_norm_bits_against_mpfr():
    # a group is (channels of the group, spatial) in row-major order
    x = normal_tensor(8, (2, 4, 3, 2), scale=2.0)
    out = softrep.group_norm(x, 2)
    rows = x.numpy().reshape(4, 12)
    expect = np.array([emulate_normalize(list(r), 1e-5, True)[0] for r in rows], np.float32)
    assert same_bits(out, expect.reshape(x.shape))


def test_batch_statistics_are_the_batch_order():
    """The batch statistics are per-sample softrep.sum over the positions, the
    batch tree over the samples, divided by the count (unbiased: n - 1): batch
    norm's running update with momentum 1 exposes them."""
    from softrep.ops import batchtree

    x = normal_tensor(9, (6, 3, 5), scale=2.0) - 0.7
    rm, rv = torch.full((3,), 7.0), torch.full((3,), 7.0)
    softrep.batch_norm(x, rm, rv, training=True, momentum=1.0)
    # momentum 1: add(mul(stat, 1), mul(old, 0)) = stat
    m = softrep.div(batchtree.tree_sum(softrep.sum(x, 2)), 30.0)
    d = softrep.sub(x, m.reshape(1, 3, 1))
    assert same_bits(rm, m)
    assert same_bits(rv, softrep.div(batchtree.tree_sum(softrep.sum(softrep.mul(d, d), 2)), 29.0))


# ------------------------------------------------------------- batch norm

def emulate_batch_norm_step(x, rm, rv, momentum, eps):
    """One training step per channel: xhat, new running mean and variance."""
    c = x.shape[1]
    chans = [np.moveaxis(x, 1, 0)[k].reshape(-1) for k in range(c)]
    new_rm, new_rv, xhat = [], [], np.empty_like(np.moveaxis(x, 1, 0))
    keep, mom = np.float32(1.0 - momentum), np.float32(momentum)
    for k, vals in enumerate(chans):
        samples = vals.reshape(x.shape[0], -1)  # the batch order: per sample, then the tree
        count = np.float32(vals.size)
        m = op("div", tree_sum([doc_sum(list(r)) for r in samples]), count)
        d = [[op("sub", v, m) for v in r] for r in samples]
        ss = tree_sum([doc_sum([op("mul", v, v) for v in r]) for r in d])
        s = op("sqrt", op("add", op("div", ss, count), np.float32(eps)))
        xh = [op("div", v, s) for r in d for v in r]
        xhat[k] = np.array(xh, np.float32).reshape(xhat[k].shape)
        unbiased = op("div", ss, np.float32(len(vals) - 1))
        new_rm.append(op("add", op("mul", m, mom), op("mul", rm[k], keep)))
        new_rv.append(op("add", op("mul", unbiased, mom), op("mul", rv[k], keep)))
    return np.moveaxis(xhat, 0, 1), np.array(new_rm, np.float32), np.array(new_rv, np.float32)


@pytest.mark.parametrize("momentum", [0.1, 1.0 / 3.0])
def test_batch_norm_running_stats_bits_and_torch(momentum):
    rm, rv = normal_tensor(10, (3,)), normal_tensor(11, (3,)).abs() + 0.5
    t_rm, t_rv = rm.clone(), rv.clone()
    e_rm, e_rv = rm.numpy().copy(), rv.numpy().copy()
    for step in range(2):
        x = normal_tensor(20 + step, (4, 3, 5), scale=2.0) + step
        out = softrep.batch_norm(x, rm, rv, training=True, momentum=momentum)
        ref = F.batch_norm(x, t_rm, t_rv, training=True, momentum=momentum)
        e_out, e_rm, e_rv = emulate_batch_norm_step(x.numpy(), e_rm, e_rv, momentum, 1e-5)
        assert same_bits(out, e_out)
        assert same_bits(rm, e_rm) and same_bits(rv, e_rv)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(rm, t_rm, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(rv, t_rv, rtol=1e-6, atol=1e-6)


def test_batch_norm_eval_uses_running_stats():
    x = normal_tensor(30, (4, 3, 2))
    rm, rv = normal_tensor(31, (3,)), normal_tensor(32, (3,)).abs() + 0.1
    w, b = normal_tensor(33, (3,)), normal_tensor(34, (3,))
    rm0, rv0 = rm.clone(), rv.clone()
    out = softrep.batch_norm(x, rm, rv, w, b, training=False)
    assert torch.equal(rm, rm0) and torch.equal(rv, rv0)  # eval leaves them alone
    xs = x.numpy()
    expect = np.empty_like(xs)
    for idx in np.ndindex(xs.shape):
        k = idx[1]
        s = op("sqrt", op("add", rv0[k].item(), np.float32(1e-5)))
        v = op("div", op("sub", xs[idx], rm0[k].item()), s)
        expect[idx] = op("add", op("mul", v, w[k].item()), b[k].item())
    assert same_bits(out, expect)
    torch.testing.assert_close(out, F.batch_norm(x, rm0, rv0, w, b, training=False), rtol=1e-5, atol=1e-5)


def test_batch_norm_without_running_stats_and_inputs_untouched():
    x = normal_tensor(35, (5, 2))
    x0 = x.clone()
    out = softrep.batch_norm(x, None, None, training=True)
    assert torch.equal(x, x0)
    torch.testing.assert_close(out, F.batch_norm(x, None, None, training=True), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------- maths against torch

def _cases():
    x4 = normal_tensor(40, (3, 4, 2, 3), scale=2.0) + 0.5
    c4 = [normal_tensor(41, (4,)), normal_tensor(42, (4,))]
    l2 = [normal_tensor(43, (2, 3)), normal_tensor(44, (2, 3))]
    rm, rv = normal_tensor(45, (4,)), normal_tensor(46, (4,)).abs() + 0.5
    return {
        "layer_norm": (lambda x, w, b: softrep.layer_norm(x, (2, 3), w, b),
                       lambda x, w, b: F.layer_norm(x, (2, 3), w, b), x4, l2),
        "rms_norm": (lambda x, w: softrep.rms_norm(x, (2, 3), w),
                     lambda x, w: F.rms_norm(x, (2, 3), w), x4, l2[:1]),
        "group_norm": (lambda x, w, b: softrep.group_norm(x, 2, w, b),
                       lambda x, w, b: F.group_norm(x, 2, w, b), x4, c4),
        "batch_norm_train": (lambda x, w, b: softrep.batch_norm(x, None, None, w, b, True),
                             lambda x, w, b: F.batch_norm(x, None, None, w, b, True), x4, c4),
        "batch_norm_eval": (lambda x, w, b: softrep.batch_norm(x, rm.to(x.dtype), rv.to(x.dtype), w, b),
                            lambda x, w, b: F.batch_norm(x, rm.to(x.dtype), rv.to(x.dtype), w, b), x4, c4),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_float32_matches_torch(name):
    ours, theirs, x, params = CASES[name]
    g = normal_tensor(47, tuple(x.shape))
    out, gx, gp = run(ours, x, params, g)
    ref, rgx, rgp = run(theirs, x, params, g)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gx, rgx, rtol=1e-4, atol=1e-4)
    for a, b in zip(gp, rgp):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_float64(name):
    ours, _, x, params = CASES[name]
    x = x[:2, :, :, :2].double().requires_grad_()
    if name in ("layer_norm", "rms_norm"):
        x = x.permute(0, 1, 3, 2)[:, :, :2, :].contiguous()
        params = [p[:2, :2] for p in params]
        ours = {"layer_norm": lambda t, w, b: softrep.layer_norm(t, (2, 2), w, b),
                "rms_norm": lambda t, w: softrep.rms_norm(t, (2, 2), w)}[name]
        x = x.detach().requires_grad_()
    params = [p.double().requires_grad_() for p in params]
    assert torch.autograd.gradcheck(ours, (x, *params), fast_mode=True)


def test_gradgradcheck_layer_norm():
    x = normal_tensor(48, (2, 3), torch.float64).requires_grad_()
    w = normal_tensor(49, (3,), torch.float64).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda t, w_: softrep.layer_norm(t, 3, w_), (x, w), fast_mode=True)


# ------------------------------------------------------------- layout, edge cases

def test_noncontiguous_same_bits():
    x = normal_tensor(50, (5, 4, 3))
    xt = x.transpose(0, 2).contiguous().transpose(0, 2)  # same values, other strides
    assert not xt.is_contiguous()
    assert torch.equal(softrep.layer_norm(xt, (4, 3)), softrep.layer_norm(x, (4, 3)))
    assert torch.equal(softrep.group_norm(xt, 2), softrep.group_norm(x, 2))
    assert torch.equal(softrep.batch_norm(xt, None, None, training=True),
                       softrep.batch_norm(x, None, None, training=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(4, 3, 2, 5), (6, 3), (3, 2, 130), (4, 4, 8, 8), (3, 4, 16, 16)])
def test_batch_norm_fused_passes_equal_separate_ops(dtype, shape):
    """batch_norm in training fuses its per-channel passes (softrep.ops.channels)
    when no graph of the backward is recorded, the affine map and its
    gradients included; with create_graph the separate ops run.  Both must
    give the same bits, also on signed zeros, subnormals, infinities and NaN
    (one channel holds them, the others stay finite).  (4, 4, 8, 8) and
    (3, 4, 16, 16): float32 rows that the CPU takes 8 at a time, the second
    with 4 rows left over."""
    from softrep.nn.functional import normalization as N

    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(shape, generator=gen, dtype=dtype) * 3).requires_grad_()
    g = torch.randn(shape, generator=gen, dtype=dtype)
    tiny = torch.finfo(dtype).tiny
    n = x.numel()
    with torch.no_grad():
        x.view(-1)[:4] = torch.tensor([-0.0, tiny / 4, -tiny / 8, 1e30], dtype=dtype)
        x.view(-1)[n // 2] = float("inf")
        x.view(-1)[n - 1] = float("nan")
    g.view(-1)[:3] = torch.tensor([-0.0, 0.0, -tiny / 2], dtype=dtype)
    g.view(-1)[n // 3] = float("nan")
    with torch.no_grad():
        fused = N._batch_moments(x, 1e-5)
    with torch.enable_grad():
        separate = N._batch_moments(x, 1e-5)
    for f, s in zip(fused, separate):
        assert same_bits(f, s)
    out = softrep.batch_norm(x, None, None, training=True)
    (gx_fused,) = torch.autograd.grad(out, x, g, retain_graph=True)
    (gx_separate,) = torch.autograd.grad(out, x, g, create_graph=True)
    assert same_bits(gx_fused, gx_separate)
    w = torch.randn(shape[1], generator=gen, dtype=dtype).requires_grad_()
    b = torch.randn(shape[1], generator=gen, dtype=dtype).requires_grad_()
    with torch.no_grad():
        w[0] = -0.0
        b[-1] = float("inf")
    for weight, bias in [(w, b), (w, None), (None, b)]:
        inputs = [t for t in (x, weight, bias) if t is not None]
        out = softrep.batch_norm(x, None, None, weight, bias, training=True)
        with torch.enable_grad():
            assert same_bits(out, N._batch_norm_composite(x, weight, bias, 1e-5))
        fused = torch.autograd.grad(out, inputs, g, retain_graph=True)
        separate = torch.autograd.grad(out, inputs, g, create_graph=True)
        for f, s in zip(fused, separate):
            assert same_bits(f, s)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "group_norm"])
@pytest.mark.parametrize("shape", [(4, 6, 5), (3, 6), (2, 6, 130)])
def test_row_norms_fused_passes_equal_separate_ops(dtype, name, shape):
    """layer_norm, rms_norm and group_norm fuse their passes over each row of
    normalised elements (softrep.ops.channels) when no graph of the backward
    is recorded; with create_graph the separate ops run.  Both give the same
    bits, also on signed zeros, subnormals, infinities and NaN (one row holds
    them, the others stay finite), forward and backward."""
    from softrep.nn.functional import normalization as N

    gen = torch.Generator().manual_seed(6)
    x = (torch.randn(shape, generator=gen, dtype=dtype) * 3).requires_grad_()
    g = torch.randn(shape, generator=gen, dtype=dtype)
    tiny = torch.finfo(dtype).tiny
    with torch.no_grad():
        x.view(-1)[:4] = torch.tensor([-0.0, tiny / 4, -tiny / 8, 1e30], dtype=dtype)
        x.view(-1)[-1] = float("nan")
        x.view(-1)[-3] = float("inf")
    g.view(-1)[:3] = torch.tensor([-0.0, 0.0, -tiny / 2], dtype=dtype)
    dims, center = {"layer_norm": ((x.dim() - 1,), True), "rms_norm": ((x.dim() - 1,), False),
                    "group_norm": ((2,), True)}[name]
    xin = x.reshape(shape[0], 2, -1) if name == "group_norm" else x
    with torch.no_grad():
        fused = N.moments(xin, dims, 1e-5, center)
    with torch.enable_grad():
        separate = N.moments(xin, dims, 1e-5, center)
    for f, s in zip(fused, separate):
        assert (f is None and s is None) or same_bits(f, s)
    call = {"layer_norm": lambda t: softrep.layer_norm(t, shape[-1:]), "rms_norm": lambda t: softrep.rms_norm(t, shape[-1]),
            "group_norm": lambda t: softrep.group_norm(t, 2)}[name]
    out = call(x)
    (gx_fused,) = torch.autograd.grad(out, x, g, retain_graph=True)
    (gx_separate,) = torch.autograd.grad(out, x, g, create_graph=True)
    assert same_bits(gx_fused, gx_separate)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(19, 64), (4, 6, 5), (3, 2, 130), (8, 1), (5,)])
@pytest.mark.parametrize("name, params", [("layer_norm", "weight and bias"), ("layer_norm", "weight"),
                                          ("layer_norm", "bias"), ("layer_norm", "none"),
                                          ("rms_norm", "weight"), ("rms_norm", "none")])
def test_affine_norms_fused_equal_separate_ops(dtype, name, shape, params):
    """layer_norm and rms_norm run normalisation and affine map in one row pass
    each way (8 float32 rows at a time where the row length is a multiple of
    8, the rest one by one); the forward, the input's gradient and the
    weight's and bias's batch-order gradients have the bits of the separate
    ops, also on signed zeros, subnormals, infinities and NaN."""
    from softrep.nn.functional import normalization as N

    gen = torch.Generator().manual_seed(len(shape) * 10 + shape[-1])
    x = torch.randn(shape, generator=gen, dtype=dtype) * 3
    g = torch.randn(shape, generator=gen, dtype=dtype)
    tiny = torch.finfo(dtype).tiny
    x.view(-1)[:4] = torch.tensor([-0.0, tiny / 4, -tiny / 8, 1e30], dtype=dtype)[:x.numel()]
    if x.numel() > 8:
        x.view(-1)[-1] = float("nan")
        x.view(-1)[-3] = float("inf")
    g.view(-1)[:3] = torch.tensor([-0.0, 0.0, -tiny / 2], dtype=dtype)[:g.numel()]
    w = torch.randn(shape[-1:], generator=gen, dtype=dtype) if "weight" in params else None
    b = torch.randn(shape[-1:], generator=gen, dtype=dtype) if "bias" in params else None
    if w is not None:
        w[0] = -0.0

    def leaves():
        return [t.clone().requires_grad_() if t is not None else None for t in (x, w, b)]

    fused_in, separate_in = leaves(), leaves()
    if name == "layer_norm":
        fused = softrep.layer_norm(fused_in[0], shape[-1:], fused_in[1], fused_in[2])
    else:
        fused = softrep.rms_norm(fused_in[0], shape[-1:], fused_in[1], eps=1e-5)
    separate = N._affine_composite(*separate_in, shape[-1:], 1e-5, name == "layer_norm")
    assert same_bits(fused, separate)
    grads_fused = torch.autograd.grad(fused, [t for t in fused_in if t is not None], g)
    grads_separate = torch.autograd.grad(separate, [t for t in separate_in if t is not None], g)
    for f, s in zip(grads_fused, grads_separate):
        assert same_bits(f, s)


@pytest.mark.parametrize("shape, normalized", [((128, 8), (8,)), ((1037, 24), (24,)), ((384, 2, 8), (2, 8)),
                                               ((255, 16), (16,))])
@pytest.mark.parametrize("name, params", [("layer_norm", "weight and bias"), ("layer_norm", "weight"),
                                          ("layer_norm", "bias"), ("rms_norm", "weight")])
def test_affine_gradients_tree_in_the_row_pass(monkeypatch, shape, normalized, name, params):
    """Where each row is one sample of the batch, layer_norm's and rms_norm's
    backward on the CPU forms the weight's and bias's batch-tree nodes over whole runs of 128
    samples in the row pass (the partials are not stored); the rows after
    them (a partial run, and rows beyond the last group of 8) join as one
    more node.  Same bits as the separate ops, NaN and infinities included."""
    from softrep.cpu import normalization as cpu_normalization
    from softrep.nn.functional import normalization as N

    calls = []
    kernel = cpu_normalization.layer_norm_grad_nodes
    monkeypatch.setattr(cpu_normalization, "layer_norm_grad_nodes", lambda *a: calls.append(1) or kernel(*a))
    gen = torch.Generator().manual_seed(shape[0])
    x = torch.randn(shape, generator=gen) * 3
    g = torch.randn(shape, generator=gen)
    g[5].view(-1)[1] = float("nan")  # in the first run of 128 samples
    g[130 % shape[0]].view(-1)[2] = float("inf")
    g[-1].view(-1)[0] = -0.0
    x[-2].view(-1)[3] = float("-inf")
    w = torch.randn(normalized, generator=gen) if "weight" in params else None
    b = torch.randn(normalized, generator=gen) if "bias" in params else None

    def leaves():
        return [t.clone().requires_grad_() if t is not None else None for t in (x, w, b)]

    fused_in, separate_in = leaves(), leaves()
    if name == "layer_norm":
        fused = softrep.layer_norm(fused_in[0], normalized, fused_in[1], fused_in[2])
    else:
        fused = softrep.rms_norm(fused_in[0], normalized, fused_in[1], eps=1e-5)
    separate = N._affine_composite(*separate_in, normalized, 1e-5, name == "layer_norm")
    grads_fused = torch.autograd.grad(fused, [t for t in fused_in if t is not None], g)
    grads_separate = torch.autograd.grad(separate, [t for t in separate_in if t is not None], g)
    assert calls == ([1] if shape[0] >= 128 else [])
    for f, s in zip(grads_fused, grads_separate):
        assert same_bits(f, s)


def test_batch_split_same_bits():
    # per-sample normalisations do not depend on the rest of the batch
    x = normal_tensor(51, (5, 4, 3))
    for fn in (lambda t: softrep.layer_norm(t, (4, 3)), lambda t: softrep.rms_norm(t, 3),
               lambda t: softrep.group_norm(t, 2)):
        whole = fn(x)
        assert torch.equal(torch.cat([fn(x[:2]), fn(x[2:])]), whole)


def test_zero_elements():
    x = torch.empty(0, 4)
    assert softrep.layer_norm(x, 4).shape == (0, 4)
    assert softrep.rms_norm(x, 4).shape == (0, 4)
    rm, rv = torch.zeros(4), torch.ones(4)
    assert softrep.batch_norm(x, rm, rv, training=True).shape == (0, 4)
    assert torch.equal(rm, torch.zeros(4)) and torch.equal(rv, torch.ones(4))  # as torch: not updated
    assert softrep.group_norm(torch.empty(0, 4, 2), 2).shape == (0, 4, 2)


@pytest.mark.parametrize("rows", [3, 16])  # one row at a time, and 8 rows at a time
def test_zero_scale_gives_nan_as_torch(rows):
    """eps = 0 on constant rows: s = 0 and xhat = 0/0, NaN as in torch (the
    kernels divide by s as IEEE does, not raising)."""
    x = torch.ones(rows, 8)
    for fn in ("layer_norm", "rms_norm"):
        arg = x if fn == "layer_norm" else x - 1
        want = getattr(torch.nn.functional, fn)(arg, (8,), eps=0.0)
        got = getattr(softrep, fn)(arg, (8,), eps=0.0)
        assert torch.isnan(want).all() and torch.isnan(got).all(), fn
    got = softrep.group_norm(torch.ones(4, 4, 5), 2, eps=0.0)
    assert torch.isnan(got).all()


def test_rms_norm_default_eps_is_finfo_eps():
    x = torch.tensor([[1e-4, -2e-4, 3e-4]])
    eps = torch.finfo(torch.float32).eps
    assert torch.equal(softrep.rms_norm(x, 3), softrep.rms_norm(x, 3, eps=eps))
    assert not torch.equal(softrep.rms_norm(x, 3), softrep.rms_norm(x, 3, eps=1e-5))


# ------------------------------------------------------------- golden vectors

def test_golden():
    x = normal_tensor(60, (3, 4, 5), scale=2.0)
    w4, b4 = normal_tensor(61, (4,)), normal_tensor(62, (4,))
    w5, b5 = normal_tensor(63, (5,)), normal_tensor(64, (5,))
    g = normal_tensor(65, (3, 4, 5))
    fns = {
        "layer_norm": (lambda t, w, b: softrep.layer_norm(t, 5, w, b), [w5, b5]),
        "rms_norm": (lambda t, w: softrep.rms_norm(t, 5, w), [w5]),
        "group_norm": (lambda t, w, b: softrep.group_norm(t, 2, w, b), [w4, b4]),
        "batch_norm": (lambda t, w, b: softrep.batch_norm(t, None, None, w, b, True), [w4, b4]),
    }
    for name, (fn, params) in fns.items():
        out, gx, gp = run(fn, x, params, g)
        check(GOLDEN, f"{name}.forward", out)
        check(GOLDEN, f"{name}.grad_input", gx)
        check(GOLDEN, f"{name}.grad_weight", gp[0])
    rm, rv = torch.zeros(4), torch.ones(4)
    softrep.batch_norm(x, rm, rv, training=True)
    check(GOLDEN, "batch_norm.running_mean", rm)
    check(GOLDEN, "batch_norm.running_var", rv)


# ------------------------------------------------------------- simulator

@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = normal_tensor(70, (2, 4, 3), scale=2.0)
    w4, b4 = normal_tensor(71, (4,)), normal_tensor(72, (4,))
    w3, b3 = normal_tensor(73, (3,)), normal_tensor(74, (3,))
    g = normal_tensor(75, (2, 4, 3))
    rm, rv = normal_tensor(76, (4,)), normal_tensor(77, (4,)).abs() + 0.5
    # 17 rows of 24: on the CPU two groups of 8 rows and one row alone
    rows, g24 = normal_tensor(78, (17, 24)), normal_tensor(81, (17, 24))
    w24, b24 = normal_tensor(79, (24,)), normal_tensor(80, (24,))
    x16, g16 = normal_tensor(82, (3, 4, 2, 8), scale=2.0), normal_tensor(83, (3, 4, 2, 8))
    fns = [
        (lambda t, w, b: softrep.layer_norm(t, 3, w, b), [w3, b3]),
        (lambda t, w: softrep.rms_norm(t, 3, w), [w3]),
        (lambda t, w, b: softrep.group_norm(t, 2, w, b), [w4, b4]),
        (lambda t, w, b: softrep.batch_norm(t, None, None, w, b, True), [w4, b4]),
        (lambda t, w, b: softrep.batch_norm(t, rm, rv, w, b, False), [w4, b4]),
    ]

    def results():
        res = []
        for fn, params in fns:
            out, gx, gp = run(fn, x, params, g)
            res += [out, gx, *gp]
        for fn, params in ((lambda t, w, b: softrep.layer_norm(t, 24, w, b), [w24, b24]),
                           (lambda t, w: softrep.rms_norm(t, 24, w), [w24])):
            out, gx, gp = run(fn, rows, params, g24)
            res += [out, gx, *gp]
        # 12 rows of 16: on the CPU one group of 8 rows and four rows alone
        out, gx, gp = run(lambda t, w, b: softrep.batch_norm(t, None, None, w, b, True), x16, [w4, b4], g16)
        res += [out, gx, *gp]
        r_m, r_v = rm.clone(), rv.clone()
        softrep.batch_norm(x, r_m, r_v, training=True)
        return res + [r_m, r_v]

    backend("cuda")
    sim = results()
    backend("cpu")
    cpu = results()
    for s, c in zip(sim, cpu):
        assert same_bits(s, c)


# ------------------------------------------------------------- bad input

def test_bad_input():
    x = torch.randn(2, 4, 3)
    with pytest.raises(TypeError, match="'input'"):
        softrep.layer_norm(x.long(), 3)
    with pytest.raises(TypeError, match="'input'"):
        softrep.layer_norm([1.0, 2.0], 2)
    with pytest.raises(ValueError, match="'normalized_shape'"):
        softrep.layer_norm(x, (4,))
    with pytest.raises(ValueError, match="'normalized_shape'"):
        softrep.rms_norm(x, (2, 2, 4, 3))
    with pytest.raises(ValueError, match="'normalized_shape'"):
        softrep.layer_norm(x, ())
    with pytest.raises(ValueError, match="'weight'"):
        softrep.layer_norm(x, 3, torch.ones(4))
    with pytest.raises(TypeError, match="'bias'"):
        softrep.layer_norm(x, 3, None, torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="'eps'"):
        softrep.layer_norm(x, 3, eps=-1.0)
    with pytest.raises(ValueError, match="'num_groups'"):
        softrep.group_norm(x, 3)
    with pytest.raises(TypeError, match="'num_groups'"):
        softrep.group_norm(x, 2.0)
    with pytest.raises(ValueError, match="'input'"):
        softrep.group_norm(torch.randn(4), 2)
    with pytest.raises(ValueError, match="'running_mean'"):
        softrep.batch_norm(x, None, None, training=False)
    with pytest.raises(ValueError, match="'running_var'"):
        softrep.batch_norm(x, torch.zeros(4), torch.ones(3), training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        softrep.batch_norm(torch.randn(1, 4), None, None, training=True)
    with pytest.raises(TypeError, match="'momentum'"):
        softrep.batch_norm(x, torch.zeros(4), torch.ones(4), training=True, momentum=None)
    with pytest.raises(ValueError, match="'running_mean' and 'running_var'"):
        softrep.batch_norm(x, torch.zeros(4), None, training=True)
