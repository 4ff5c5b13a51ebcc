"""softmax, log_softmax, logsumexp, silu, softplus, mish: bit-exact against an
independent emulation of the documented order (docs/order.md, "Math and derived
functions"): numpy float32 arithmetic (IEEE round to nearest), MPFR for the
correctly rounded exp/log/log1p/tanh, and the blocked pairwise sum written out
again here.  Gradients against torch with a tolerance."""

import numpy as np
import pytest
import torch

import softrep

from golden import check, normal_tensor
from references import documented_sum, correctly_rounded_f32


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


cr = correctly_rounded_f32


def doc_sum(terms):
    return documented_sum([np.float32(t) for t in terms], empty=np.float32(0.0))


def rows(x, dim):
    """The 1-D rows along `dim` of a numpy array, with their index tuples."""
    moved = np.moveaxis(x, dim, -1)
    for idx in np.ndindex(moved.shape[:-1]):
        yield idx, moved[idx]


def emulate_softmax(x, dim, log=False):
    out = np.empty_like(x)
    out_moved = np.moveaxis(out, dim, -1)
    for idx, row in rows(x, dim):
        m = row.max()
        z = [np.float32(v - m) for v in row]
        s = doc_sum([cr("exp", v) for v in z])
        if log:
            ls = cr("log", s)
            out_moved[idx] = [np.float32(v - ls) for v in z]
        else:
            out_moved[idx] = [np.float32(cr("exp", v) / s) for v in z]
    return out


@pytest.fixture(scope="module")
def x2d():
    return normal_tensor(77, (3, 300), scale=4.0)


@pytest.mark.parametrize("dim", [1, 0, -1])
def test_softmax_bits(x2d, dim):
    got = softrep.softmax(x2d, dim).numpy()
    assert np.array_equal(bits(got), bits(emulate_softmax(x2d.numpy(), dim)))


@pytest.mark.parametrize("dim", [1, 0])
def test_log_softmax_bits(x2d, dim):
    got = softrep.log_softmax(x2d, dim).numpy()
    assert np.array_equal(bits(got), bits(emulate_softmax(x2d.numpy(), dim, log=True)))


def test_softmax_noncontiguous_same_bits(x2d):
    t = x2d.t()  # non-contiguous (300, 3), softmax over dim 0 = the rows of x2d
    assert torch.equal(softrep.softmax(t, 0), softrep.softmax(x2d, 1).t())


def test_logsumexp_bits(x2d):
    x = x2d.numpy()
    got = softrep.logsumexp(x2d, 1).numpy()
    for i, row in enumerate(x):
        m = row.max()
        s = doc_sum([cr("exp", np.float32(v - m)) for v in row])
        assert bits(got[i]) == bits(np.float32(m + cr("log", s)))
    both = softrep.logsumexp(x2d, (0, 1), keepdim=True)
    assert both.shape == (1, 1)
    flat = x.reshape(-1)
    m = flat.max()
    s = doc_sum([cr("exp", np.float32(v - m)) for v in flat])
    assert bits(both.item()) == bits(np.float32(m + cr("log", s)))


def test_logsumexp_infinite_rows():
    x = torch.tensor([[-np.inf, -np.inf], [np.inf, 1.0], [0.0, -np.inf]])
    assert torch.equal(softrep.logsumexp(x, 1), torch.logsumexp(x, 1))


def test_silu_softplus_mish_bits():
    x = normal_tensor(78, (400,), scale=8.0)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 25.0, -120.0, 19.99, 20.0, 20.01])])
    xs = x.numpy()
    silu = [np.float32(v * cr("sigmoid", v)) for v in xs]
    assert np.array_equal(bits(softrep.silu(x).numpy()), bits(silu))
    softplus = [v if v > 20 else cr("log1p", cr("exp", v)) for v in xs]
    assert np.array_equal(bits(softrep.softplus(x).numpy()), bits(softplus))
    sp2 = [v if np.float32(v * 2) > 5 else np.float32(cr("log1p", cr("exp", np.float32(v * 2))) / 2) for v in xs]
    assert np.array_equal(bits(softrep.softplus(x, beta=2, threshold=5).numpy()), bits(sp2))
    mish = [np.float32(v * cr("tanh", s)) for v, s in zip(xs, softplus)]
    assert np.array_equal(bits(softrep.mish(x).numpy()), bits(mish))


CASES = {
    "softmax": (lambda t: softrep.softmax(t, 1), lambda t: torch.softmax(t, 1)),
    "log_softmax": (lambda t: softrep.log_softmax(t, 0), lambda t: torch.log_softmax(t, 0)),
    "logsumexp": (lambda t: softrep.logsumexp(t, 1), lambda t: torch.logsumexp(t, 1)),
    "logsumexp_keep": (lambda t: softrep.logsumexp(t, (0, 1), True), lambda t: torch.logsumexp(t, (0, 1), True)),
    "silu": (softrep.silu, torch.nn.functional.silu),
    "softplus": (softrep.softplus, torch.nn.functional.softplus),
    "softplus_beta": (lambda t: softrep.softplus(t, 0.5, 2.0), lambda t: torch.nn.functional.softplus(t, 0.5, 2.0)),
    "mish": (softrep.mish, torch.nn.functional.mish),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_gradients_match_torch(case):
    ours, theirs = CASES[case]
    x = normal_tensor(79, (4, 37), scale=5.0)
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    ya, yb = ours(a), theirs(b)
    torch.testing.assert_close(ya, yb, rtol=2e-6, atol=2e-6)
    g = normal_tensor(80, tuple(ya.shape))
    ya.backward(g)
    yb.backward(g)
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-5)
    assert torch.equal(x, normal_tensor(79, (4, 37), scale=5.0))  # input untouched


def test_softmax_backward_formula():
    """Documented backward: mul(out, sub(g, sum(mul(g, out), dim)))."""
    x = normal_tensor(81, (2, 200)).requires_grad_()
    y = softrep.softmax(x, 1)
    g = normal_tensor(82, (2, 200))
    y.backward(g)
    yd = y.detach()
    expected = softrep.mul(yd, softrep.sub(g, softrep.sum(softrep.mul(g, yd), 1, keepdim=True)))
    assert torch.equal(x.grad, expected)


@pytest.mark.parametrize("case", ["softmax", "log_softmax", "logsumexp", "logsumexp_keep", "silu"])
def test_gradcheck_float64(case):
    ours, _ = CASES[case]
    x = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert torch.autograd.gradcheck(ours, (x.requires_grad_(),))


def test_argument_checks():
    x = torch.randn(3, 4)
    with pytest.raises(IndexError, match="'dim'"):
        softrep.softmax(x, 2)
    with pytest.raises(TypeError, match="'dim'"):
        softrep.softmax(x, None)
    with pytest.raises(TypeError, match="'input'"):
        softrep.silu([1.0])
    with pytest.raises(TypeError, match="'beta'"):
        softrep.softplus(x, beta="2")
    with pytest.raises(ValueError, match="'inplace'"):
        softrep.mish(x, inplace=True)
    with pytest.raises(TypeError, match="'dtype'"):
        softrep.softmax(x, 0, dtype=torch.float64)


def test_edge_shapes():
    assert softrep.softmax(torch.tensor(2.0), 0).item() == 1.0
    assert softrep.softmax(torch.empty(0, 5), 1).shape == (0, 5)
    assert softrep.logsumexp(torch.tensor(3.0), 0).item() == 3.0


def test_golden():
    x = normal_tensor(83, (8, 333), scale=6.0)
    check("mathlib.json", "softmax.dim1", softrep.softmax(x, 1))
    check("mathlib.json", "log_softmax.dim0", softrep.log_softmax(x, 0))
    check("mathlib.json", "logsumexp.dim1", softrep.logsumexp(x, 1))
    check("mathlib.json", "silu", softrep.silu(x))
    check("mathlib.json", "softplus", softrep.softplus(x))
    check("mathlib.json", "mish", softrep.mish(x))


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = normal_tensor(84, (2, 7), scale=3.0)
    fns = [lambda t: softrep.softmax(t, 1), lambda t: softrep.log_softmax(t, 0),
           lambda t: softrep.logsumexp(t, 1), softrep.silu, softrep.softplus, softrep.mish]
    backend("cuda")
    sim = [f(x) for f in fns]
    backend("cpu")
    cpu = [f(x) for f in fns]
    for s, c in zip(sim, cpu):
        assert np.array_equal(bits(s.numpy()), bits(c.numpy()))
