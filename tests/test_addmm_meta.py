"""addmm with beta/alpha against an MPFR emulation of the documented chain
(docs/order.md, "Matrix products"), CPU against the CUDA simulator; and shape
propagation on meta tensors."""

import gmpy2
import numpy as np
import pytest
import torch

import softrep
import softrep.nn.functional as F
from golden import normal_tensor
from references import context

NAN, INF = float("nan"), float("inf")


def bits(t):
    t = t.detach().contiguous()
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int64)


def emulated_addmm(input, a, b, beta, alpha):
    """The documented chain in MPFR at the dtype's format: chain = fma from +0 in k
    order; alpha, beta rounded to the dtype; out = add(mul(alpha, chain),
    mul(beta, input)), a factor 1 skipped; beta = 0 / alpha = 0 drop their term."""
    dtype = np.float32 if a.dtype == torch.float32 else np.float64
    m, k = a.shape
    n = b.shape[1]
    c = input.detach().expand(m, n).double().numpy()
    a64, b64 = a.detach().double().numpy(), b.detach().double().numpy()
    out = np.empty((m, n), np.float64)
    with gmpy2.context(context(dtype)):
        al, be = gmpy2.mpfr(float(dtype(alpha))), gmpy2.mpfr(float(dtype(beta)))
        for i in range(m):
            for j in range(n):
                acc = gmpy2.mpfr(0)
                for kk in range(k):
                    acc = gmpy2.fma(gmpy2.mpfr(float(a64[i, kk])), gmpy2.mpfr(float(b64[kk, j])), acc)
                term_c = gmpy2.mpfr(float(c[i, j]))
                term_c = term_c if beta == 1 else be * term_c
                term_p = acc if alpha == 1 else al * acc
                if alpha == 0 and beta == 0:
                    r = gmpy2.mpfr(0)
                elif alpha == 0:
                    r = term_c
                elif beta == 0:
                    r = term_p
                else:
                    r = term_p + term_c
                out[i, j] = float(r)
    return torch.from_numpy(out).to(a.dtype)


def same(got, want):
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    assert torch.equal(bits(got)[~nan], bits(want)[~nan])


SCALES = [(1, 1), (0.5, 1), (1, 0.1), (0.3, -1.7), (0, 2.5), (0, 1), (1.25, 0), (0, 0), (-1, 1e-3)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("beta,alpha", SCALES)
def test_addmm_matches_mpfr_chain(dtype, beta, alpha):
    a, b = normal_tensor(1, (3, 5)).to(dtype), normal_tensor(2, (5, 4)).to(dtype)
    for c in (normal_tensor(3, (3, 4)).to(dtype), normal_tensor(4, (4,)).to(dtype)):
        out = softrep.addmm(c, a, b, beta=beta, alpha=alpha)
        same(out, emulated_addmm(c, a, b, beta, alpha))
        ref = torch.addmm(c.double(), a.double(), b.double(), beta=beta, alpha=alpha).to(dtype)
        torch.testing.assert_close(out, ref)


def test_addmm_ignored_operands_as_torch():
    a = torch.tensor([[NAN, 1.0], [INF, 2.0]])
    b = torch.ones(2, 2)
    c = torch.tensor([[1.0, NAN], [3.0, 4.0]])
    clean_a = torch.tensor([[1.0, 1.0], [2.0, 2.0]])
    # beta = 0: the NaN in input does not reach the result
    same(softrep.addmm(c, clean_a, b, beta=0), torch.addmm(c, clean_a, b, beta=0))
    assert not torch.isnan(softrep.addmm(c, clean_a, b, beta=0, alpha=3)).any()
    # alpha = 0: NaN and inf in the matrices do not reach the result
    same(softrep.addmm(c, a, b, alpha=0, beta=2), torch.addmm(c, a, b, alpha=0, beta=2))
    zeros = softrep.addmm(c, a, b, alpha=0, beta=0)
    assert torch.equal(bits(zeros), bits(torch.zeros(2, 2)))
    # and with both terms, a NaN anywhere does
    assert torch.isnan(softrep.addmm(c, clean_a, b, beta=0.5)[0, 1])


def test_addmm_gradients_are_those_of_the_composition():
    a = normal_tensor(5, (3, 4)).double().requires_grad_()
    b = normal_tensor(6, (4, 2)).double().requires_grad_()
    c = normal_tensor(7, (2,)).double().requires_grad_()
    assert torch.autograd.gradcheck(lambda c, a, b: softrep.addmm(c, a, b, beta=0.5, alpha=-3.0), (c, a, b))
    out = softrep.addmm(c, a, b, beta=0.5, alpha=-3.0)
    g = normal_tensor(8, (3, 2)).double()
    ga, gb, gc = torch.autograd.grad(out, (a, b, c), g)
    scaled = softrep.mul(g, -3.0)
    assert torch.equal(ga, softrep.mm(scaled, b.detach().t()))
    assert torch.equal(gb, softrep.mm(a.detach().t(), scaled))
    assert torch.equal(gc, softrep.mul(softrep.sum(g, 0), 0.5))


@pytest.mark.simulator
@pytest.mark.parametrize("beta,alpha", SCALES)
def test_addmm_simulator_matches_cpu(backend, beta, alpha):
    a, b, c = normal_tensor(9, (5, 7)), normal_tensor(10, (7, 3)), normal_tensor(11, (5, 1))
    backend("cpu")
    cpu = softrep.addmm(c, a, b, beta=beta, alpha=alpha)
    backend("cuda")
    sim = softrep.addmm(c, a, b, beta=beta, alpha=alpha)
    assert torch.equal(bits(sim), bits(cpu))
    same(sim, emulated_addmm(c, a, b, beta, alpha))


# ------------------------------------------------------------------ meta tensors


def meta(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta")


META_CASES = {
    "add": (lambda: softrep.add(meta(3, 1), meta(4)), (3, 4)),
    "fma": (lambda: softrep.fma(meta(2, 3), meta(3), 1.0, rounding="down"), (2, 3)),
    "exp": (lambda: softrep.exp(meta(5)), (5,)),
    "pow": (lambda: softrep.pow(meta(2, 5), meta(5)), (2, 5)),
    "emulated": (lambda: softrep.mul(meta(4), meta(4), format="bfloat16"), (4,)),
    "sum": (lambda: softrep.sum(meta(3, 4, 5), (0, 2)), (4,)),
    "mean": (lambda: softrep.mean(meta(3, 4), 1, keepdim=True), (3, 1)),
    "var": (lambda: softrep.var(meta(3, 4)), ()),
    "amax": (lambda: softrep.amax(meta(3, 4), 0), (4,)),
    "argmin": (lambda: softrep.argmin(meta(3, 4), 1), (3,)),
    "mm": (lambda: softrep.mm(meta(3, 4), meta(4, 5)), (3, 5)),
    "bmm": (lambda: softrep.bmm(meta(2, 3, 4), meta(2, 4, 5)), (2, 3, 5)),
    "matmul": (lambda: softrep.matmul(meta(6, 3, 4), meta(4)), (6, 3)),
    "linear": (lambda: softrep.linear(meta(2, 7, 4), meta(3, 4), meta(3)), (2, 7, 3)),
    "addmm": (lambda: softrep.addmm(meta(5), meta(3, 4), meta(4, 5), beta=0.5, alpha=2), (3, 5)),
    "conv2d": (lambda: softrep.conv2d(meta(2, 4, 9, 9), meta(6, 2, 3, 3), meta(6), stride=2, padding=1, groups=2),
               (2, 6, 5, 5)),
    "conv1d": (lambda: softrep.conv1d(meta(3, 10), meta(4, 3, 3), dilation=2), (4, 6)),
    "softmax": (lambda: F.softmax(meta(2, 3), -1), (2, 3)),
    "layer_norm": (lambda: F.layer_norm(meta(2, 3), (3,)), (2, 3)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(META_CASES))
def test_meta_tensors_propagate_shapes(name, dtype, monkeypatch):
    fn, shape = META_CASES[name]
    plain = meta
    monkeypatch.setitem(globals(), "meta", lambda *s: plain(*s, dtype=dtype))
    # no kernel may run: any launcher call fails the test
    from softrep.ops import backend
    monkeypatch.setattr(backend, "select", lambda *t: pytest.fail("a kernel launch was prepared"))
    out = fn()
    assert out.is_meta
    assert tuple(out.shape) == shape
    assert out.dtype == (torch.int64 if name == "argmin" else dtype)


def test_meta_backward_shapes():
    a = meta(3, 4).requires_grad_()
    b = meta(4, 5).requires_grad_()
    softrep.sum(softrep.exp(softrep.mm(a, b))).backward()
    assert a.grad.is_meta and a.grad.shape == a.shape
    assert b.grad.is_meta and b.grad.shape == b.shape
