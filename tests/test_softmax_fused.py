"""softmax, log_softmax and cross_entropy by the fused row kernels
(softrep.ops.softmax) against the separate ops they replace, bit for bit.

The reference is the composition of docs/order.md written out with softrep's
elementwise ops and reductions (amax, sub, exp, sum, div, log, mul); the
fused kernels must give the same bits for every input: random rows of the
lengths around the sum's block boundaries, and rows with NaN, +-inf, all
-inf, -0, subnormals and huge values.  Forward and backward, float32 and
float64, CPU and the CUDA simulator.
"""

import numpy as np
import pytest
import torch

import softrep
import softrep.nn.functional as F
from softrep.ops import elementwise as E
from softrep.ops import math as M
from softrep.ops import reduction as R

LENGTHS = (1, 2, 7, 127, 128, 129, 1000, 1025, 2049)


def bits(t):
    a = t.detach().contiguous().numpy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(bits(a), bits(b))


# ------------------------------------------------------------- the separate ops

def ref_softmax(x, dim):
    e = M.exp(E.sub(x, R.amax(x, dim, keepdim=True)))
    return E.div(e, R.sum(e, dim, keepdim=True))


def ref_log_softmax(x, dim):
    z = E.sub(x, R.amax(x, dim, keepdim=True))
    return E.sub(z, M.log(R.sum(M.exp(z), dim, keepdim=True)))


def ref_softmax_grad(g, out, dim):
    return E.mul(out, E.sub(g, R.sum(E.mul(g, out), dim, keepdim=True)))


def ref_log_softmax_grad(g, out, dim):
    return E.sub(g, E.mul(M.exp(out), R.sum(g, dim, keepdim=True)))


# ------------------------------------------------------------- inputs

# float32 arguments where exp's fast path cannot decide (its rare accurate
# path runs): e^z of the deep ones is below half an ulp of 1, so a row
# [0, deep...] has sum 1, log(sum) = +0 and log_softmax output z, whose exp
# the backward takes.  float64: exp's fast path leaves -745.2 <= z < -708.3.
UNDECIDED32 = [0xC01A001D, 0xC03359CB, 0xC0382E72, 0xC069222D, 0xC0781533, 0xC0CB5A44, 0xC0DD1236,
               0xC13D6631, 0xC145C789, 0xC159FA1E, 0xC16912CD, 0xC176581C]
DEEP32 = [0xC1963BDB, 0xC1C2873D, 0xC1F64B8C, 0xC236E4B4, 0xC27D58D9, 0xC2ABB454, 0xC2AC0052, 0xC2AE7135]
DEEP64 = [-709.0, -720.5, -730.25, -745.0, -708.5, -744.9]


def undecided_rows(n, np_dtype):
    """Two rows [0, undecided...] (repeated to length n) and [0, deep...]."""
    if np_dtype == np.float32:
        mid = np.array(UNDECIDED32 + DEEP32, np.uint32).view(np.float32)
        deep = np.array(DEEP32, np.uint32).view(np.float32)
    else:
        mid = deep = np.array(DEEP64)
    return [np.concatenate([[0.0], np.resize(v, n - 1)]).astype(np_dtype) for v in (mid, deep)]


def rows(n, dtype, seed=0):
    """18 rows of n elements: ordinary, wide and special values."""
    rng = np.random.Generator(np.random.PCG64(seed + n))
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    x = (rng.standard_normal((16, n)) * 4).astype(np_dtype)
    info = np.finfo(np_dtype)
    x[1] *= 1e3  # most exps underflow
    x[2, n // 2] = np.nan
    x[3, n - 1] = np.inf
    x[4] = -np.inf
    x[5, 0] = -np.inf
    x[6] = 0.0
    x[6, ::2] = -0.0
    x[7] = info.smallest_subnormal * rng.integers(-5, 5, n)
    x[8] = -0.0
    x[9, n // 3] = info.max
    x[10] = info.max * rng.choice([-1.0, 1.0], n)
    x[11] = rng.standard_normal(n) * 1e-3  # exps all near 1
    x[12, :] = 3.0  # a tie everywhere
    x[13, 0] = np.nan
    x[13, n - 1] = np.inf
    x[14] = rng.standard_normal(n) * 200  # near exp's overflow and underflow thresholds
    x = np.concatenate([x, undecided_rows(n, np_dtype)])
    return torch.from_numpy(x)


def grads(n, dtype, seed=1):
    g = rows(n, dtype, seed + 100).clone()
    g[::3] = torch.randn(g[::3].shape, dtype=dtype)
    return g


DTYPES = (torch.float32, torch.float64)


def test_undecided_rows_reach_the_accurate_path():
    from softrep.algorithms.math.exp import exp_fast, exp_fast64

    for v in np.array(UNDECIDED32 + DEEP32, np.uint32).view(np.float32):
        assert not exp_fast(v)[1]
    for v in DEEP64:
        assert not exp_fast64(np.float64(v))[1]
    out = ref_log_softmax(torch.from_numpy(undecided_rows(9, np.float32)[1]), 0)
    assert same_bits(out[1:], torch.from_numpy(np.array(DEEP32, np.uint32).view(np.float32)))


# ------------------------------------------------------------- forward and backward

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_forward_bits(n, dtype):
    x = rows(n, dtype)
    with torch.no_grad():
        assert same_bits(F.softmax(x, 1), ref_softmax(x, 1))
        assert same_bits(F.log_softmax(x, 1), ref_log_softmax(x, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_backward_bits(n, dtype):
    x, g = rows(n, dtype), grads(n, dtype)
    for fn, ref_fwd, ref_grad in ((F.softmax, ref_softmax, ref_softmax_grad),
                                  (F.log_softmax, ref_log_softmax, ref_log_softmax_grad)):
        xr = x.clone().requires_grad_()
        out = fn(xr, 1)
        out.backward(g)
        want = ref_fwd(x, 1)
        assert same_bits(out, want)
        assert same_bits(xr.grad, ref_grad(g, want, 1))


def test_backward_of_other_outputs():
    # the backward kernel takes any output and gradient, e.g. random ones with specials
    for n in (1, 129, 1000):
        for dtype in DTYPES:
            out, g = rows(n, dtype, 7), grads(n, dtype, 8)
            with torch.no_grad():
                assert same_bits(softrep.ops.softmax.softmax_grad_rows(g, out), ref_softmax_grad(g, out, 1))
                assert same_bits(softrep.ops.softmax.log_softmax_grad_rows(g, out), ref_log_softmax_grad(g, out, 1))


def test_layouts():
    x = rows(129, torch.float32)[:16].reshape(2, 8, 129)
    with torch.no_grad():
        # last dim, and a dim followed by size-1 dims only: the fused kernels
        assert same_bits(F.softmax(x, -1), ref_softmax(x, 2))
        y = x.reshape(2, 8, 129, 1, 1)
        assert same_bits(F.log_softmax(y, 2), ref_log_softmax(y, 2))
        # other dims and layouts: the separate ops
        assert same_bits(F.softmax(x, 1), ref_softmax(x, 1))
        t = x.transpose(0, 2)
        assert same_bits(F.log_softmax(t, 0), ref_log_softmax(t, 0))
        assert same_bits(F.softmax(t, 2), ref_softmax(t, 2))
    # an expanded gradient (the backward of sum()) is made contiguous first
    xr = x.clone().requires_grad_()
    F.softmax(xr, 2).sum().backward()
    out = ref_softmax(x, 2)
    assert same_bits(xr.grad, ref_softmax_grad(torch.ones_like(out), out, 2))


def test_double_backward_keeps_the_graph():
    x = rows(7, torch.float64)[[0, 11, 12]].clone().requires_grad_()
    for fn in (F.softmax, F.log_softmax):
        torch.autograd.gradcheck(lambda t: fn(t, 1), (x,))
        torch.autograd.gradgradcheck(lambda t: fn(t, 1), (x,))
        g = torch.randn(3, 7, dtype=torch.float64)
        out = fn(x, 1)
        (first,) = torch.autograd.grad(out, x, g, create_graph=True)
        (plain,) = torch.autograd.grad(fn(x, 1), x, g)
        assert same_bits(first, plain)


def test_vmap_and_grad_transforms():
    x = rows(129, torch.float32)
    batched = torch.func.vmap(lambda t: F.softmax(t, 0))(x)
    with torch.no_grad():
        assert same_bits(batched, ref_softmax(x, 1))
    g = torch.func.grad(lambda t: F.log_softmax(t, 0)[3])(x[0])
    xr = x[0].clone().requires_grad_()
    F.log_softmax(xr, 0)[3].backward()
    assert same_bits(g, xr.grad)


# ------------------------------------------------------------- cross_entropy

def ref_cross_entropy_grad(x, target, weight, ignore_index, reduction):
    """The gradient of cross_entropy by its separate parts: nll's gradient
    scattered into zeros, then log_softmax's backward by the separate ops."""
    logp = ref_log_softmax(x, 1)
    lp = logp.clone().requires_grad_()
    softrep.nll_loss(lp, target, weight=weight, ignore_index=ignore_index, reduction=reduction).backward(
        torch.ones(()) if reduction != "none" else torch.ones(target.shape))
    return ref_log_softmax_grad(lp.grad, logp, 1)


@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
@pytest.mark.parametrize("weighted", (False, True))
def test_cross_entropy_bits(reduction, weighted):
    n = 129
    x = rows(n, torch.float32)
    target = torch.from_numpy(np.random.Generator(np.random.PCG64(5)).integers(0, n, 18))
    ignore = int(target[3])  # rows with this target are ignored
    weight = torch.rand(n) if weighted else None
    xr = x.clone().requires_grad_()
    loss = F.cross_entropy(xr, target, weight=weight, ignore_index=ignore, reduction=reduction)
    loss.backward(torch.ones(()) if reduction != "none" else torch.ones(18))
    want = softrep.nll_loss(ref_log_softmax(x, 1), target, weight=weight, ignore_index=ignore, reduction=reduction)
    assert same_bits(loss, want)
    assert same_bits(xr.grad, ref_cross_entropy_grad(x, target, weight, ignore, reduction))


def separate_cross_entropy(monkeypatch, *args, **kwargs):
    """cross_entropy by its separate ops (log_softmax, then nll_loss's), with
    the one-kernel path switched off."""
    with monkeypatch.context() as m:
        m.setattr(softrep.ops.softmax, "light_cross_entropy_dtype", lambda x, target: None)
        return F.cross_entropy(*args, **kwargs)


def counting_kernel(monkeypatch):
    """Counts the calls of the one-kernel cross-entropy (forward, backward)."""
    calls = [0, 0]
    forward, backward = softrep.cpu.softmax.cross_entropy, softrep.cpu.softmax.cross_entropy_grad

    def counted(i, kernel):
        def run(*args):
            calls[i] += 1
            return kernel(*args)
        return run

    monkeypatch.setattr(softrep.cpu.softmax, "cross_entropy", counted(0, forward))
    monkeypatch.setattr(softrep.cpu.softmax, "cross_entropy_grad", counted(1, backward))
    return calls


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (1, 2, 127, 129, 1000))
def test_cross_entropy_one_kernel_matches_separate_ops(monkeypatch, n, dtype):
    # every special row of `rows`, ignored targets among them, several
    # levels of the batch tree (35 positions), loss gradients other than 1
    x = torch.cat([rows(n, dtype), rows(n, dtype, 3)[:17]])
    target = torch.from_numpy(np.random.Generator(np.random.PCG64(n)).integers(0, n, x.shape[0]))
    target[[5, 20]] = -100
    calls = counting_kernel(monkeypatch)
    for reduction in ("mean", "sum"):
        for g in (1.0, 0.0, -0.0, 3.0e-39 if dtype == torch.float32 else 5e-310, float("nan")):
            xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
            la = F.cross_entropy(xa, target, reduction=reduction)
            lb = separate_cross_entropy(monkeypatch, xb, target, reduction=reduction)
            grad = torch.tensor(g, dtype=dtype)
            la.backward(grad)
            lb.backward(grad)
            assert same_bits(la, lb)
            assert same_bits(xa.grad, xb.grad)
    assert calls == [10, 10]
    # every target ignored: 'mean' divides +0 by 0 (NaN), 'sum' is +0
    ignored = torch.full_like(target, 7)
    for reduction in ("mean", "sum"):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        la = F.cross_entropy(xa, ignored, ignore_index=7, reduction=reduction)
        lb = separate_cross_entropy(monkeypatch, xb, ignored, ignore_index=7, reduction=reduction)
        la.backward()
        lb.backward()
        assert same_bits(la, lb) and same_bits(xa.grad, xb.grad)


def test_cross_entropy_one_kernel_errors_and_graphs(monkeypatch):
    calls = counting_kernel(monkeypatch)
    x = rows(7, torch.float64)[:6].clone()
    target = torch.tensor([0, 1, 6, 7, -100, 2])
    with pytest.raises(IndexError, match=r"argument 'target' holds 7, out of bounds for 7 classes "
                                         r"\(and not ignore_index=-100\)"):
        F.cross_entropy(x, target)
    assert calls[0] == 1
    with pytest.raises(IndexError, match="holds 7, out of bounds"):
        separate_cross_entropy(monkeypatch, x, target)
    target[3] = 3
    x = torch.randn(6, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: F.cross_entropy(t, target), (x,))
    assert torch.autograd.gradgradcheck(lambda t: F.cross_entropy(t, target, reduction="sum"), (x,))
    # a graph of the backward: the separate ops' gradient, the same bits as without one
    (first,) = torch.autograd.grad(F.cross_entropy(x, target), x, create_graph=True)
    (plain,) = torch.autograd.grad(F.cross_entropy(x, target), x)
    assert first.requires_grad and same_bits(first, plain)
    # without autograd, and a float32 input that does not require grad
    with torch.no_grad():
        assert same_bits(F.cross_entropy(x, target), separate_cross_entropy(monkeypatch, x, target))
    assert calls[0] >= 4


# ------------------------------------------------------------- the CUDA simulator

@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    cases = [(rows(n, dtype)[[0, 2, 3, 4, 6, 16, 17]], grads(n, dtype)[:7]) for n in (1, 7, 129) for dtype in DTYPES]
    cases.append((rows(260, torch.float32)[[2, 4, 7, 14]], grads(260, torch.float32)[:4]))

    def results():
        res = []
        for x, g in cases:
            for fn in (F.softmax, F.log_softmax):
                xr = x.clone().requires_grad_()
                out = fn(xr, 1)
                out.backward(g)
                res += [out, xr.grad]
            # cross-entropy: one kernel on the CPU, the separate ops on CUDA
            xr = x.clone().requires_grad_()
            target = torch.arange(x.shape[0]) % x.shape[1]
            loss = F.cross_entropy(xr, target)
            loss.backward()
            res += [loss, xr.grad]
        return res

    backend("cuda")
    sim = results()
    backend("cpu")
    cpu = results()
    for s, c in zip(sim, cpu):
        assert same_bits(s.cpu(), c)
    for (x, g), k in zip(cases, range(0, len(cpu), 6)):
        with torch.no_grad():
            assert same_bits(cpu[k], ref_softmax(x, 1))
            assert same_bits(cpu[k + 2], ref_log_softmax(x, 1))
