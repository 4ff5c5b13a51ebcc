"""embedding and dropout.

embedding: forward equals torch; the weight gradient with repeated indices is
bit-exact against a plain-Python emulation of the documented order (per row,
the gradient rows in input order, summed in the docs/order.md block/tree order
with numpy float32), including a row repeated more than one block (128) times.

dropout: the mask is the documented bernoulli of the generator state (checked
against softrep.rand from the same state, itself checked against Random123 in
tests/test_philox.py), the scale and products against MPFR, the special cases
of p and training as torch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import softrep
from softrep.nn.functional.regularization import dropout
from softrep.nn.functional.sparse import embedding

from golden import check, normal_tensor
from references import batch_tree, mpfr_op
from test_pooling import bits, doc_sum, wide_values


# ----------------------------------------------------------------------------- embedding

def test_embedding_forward_matches_torch():
    w = normal_tensor(20, (7, 5))
    idx = torch.tensor([[0, 6, 3], [3, 3, 1]])
    assert torch.equal(embedding(idx, w), F.embedding(idx, w))
    assert torch.equal(embedding(idx.to(torch.int32), w, padding_idx=-1), F.embedding(idx, w, padding_idx=6))
    assert embedding(torch.zeros(0, 4, dtype=torch.int64), w).shape == (0, 4, 5)
    assert torch.equal(embedding(torch.tensor(2), w), w[2])
    wn = w.t().contiguous().t()  # non-contiguous weight
    assert torch.equal(embedding(idx, wn), F.embedding(idx, wn))


def test_embedding_canonical_nan():
    w = torch.zeros(2, 2)
    w.view(torch.int32)[1, 0] = 0x7FC0BEEF
    out = embedding(torch.tensor([1]), w)
    assert out.view(torch.int32)[0, 0].item() == 0x7FC00000


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_backward_exact(padding_idx):
    V, D = 6, 3
    rng = np.random.default_rng(21)
    idx = rng.integers(0, V, size=(4, 90))
    idx[:, :75] = 4  # row 4: 300 gradient rows, more than a block of 128
    g = wide_values(22, (4, 90, D))
    w = torch.zeros(V, D, requires_grad=True)
    out = embedding(torch.from_numpy(idx), w, padding_idx=padding_idx)
    (grad,) = torch.autograd.grad(out, w, torch.from_numpy(g))
    expect = np.zeros((V, D), np.float32)
    flat_idx, flat_g = idx.reshape(-1), g.reshape(-1, D)
    for r in range(V):
        if r == padding_idx:
            continue
        for d in range(D):
            # the batch order: each sample's documented sum (+0 if it never holds r), then the tree
            per = [doc_sum([g[s, i, d] for i in range(idx.shape[1]) if idx[s, i] == r]) for s in range(4)]
            expect[r, d] = batch_tree([np.float32(0.0) if p is None else p for p in per],
                                      add=lambda a, b: mpfr_op("add", (a, b), np.float32))
    assert np.array_equal(bits(grad), expect.view(np.uint32))
    ref = torch.zeros(V, D, dtype=torch.float64).index_add_(
        0, torch.from_numpy(flat_idx), torch.from_numpy(flat_g).double())
    if padding_idx is not None:
        ref[padding_idx] = 0
    torch.testing.assert_close(grad.double(), ref, rtol=1e-5, atol=1e-30)


def test_embedding_gradcheck():
    w = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).requires_grad_()
    idx = torch.tensor([[0, 2, 2], [4, 2, 1]])
    # (padding_idx is left out: its zero gradient is by definition not the derivative)
    assert torch.autograd.gradcheck(lambda t: embedding(idx, t), (w,))
    assert torch.autograd.gradgradcheck(lambda t: embedding(idx, t), (w,))


def test_embedding_bad_input():
    w = torch.zeros(4, 2)
    with pytest.raises(IndexError, match="'input'"):
        embedding(torch.tensor([4]), w)
    with pytest.raises(IndexError, match="'input'"):
        embedding(torch.tensor([-1]), w)
    with pytest.raises(TypeError, match="'input'"):
        embedding(torch.tensor([1.0]), w)
    with pytest.raises(ValueError, match="'weight'"):
        embedding(torch.tensor([1]), torch.zeros(4))
    with pytest.raises(TypeError, match="'weight'"):
        embedding(torch.tensor([1]), w.to(torch.int64))
    with pytest.raises(ValueError, match="'padding_idx'"):
        embedding(torch.tensor([1]), w, padding_idx=4)
    for kw in (dict(max_norm=1.0), dict(scale_grad_by_freq=True), dict(sparse=True)):
        with pytest.raises(NotImplementedError, match=f"'{next(iter(kw))}'"):
            embedding(torch.tensor([1]), w, **kw)


# ----------------------------------------------------------------------------- dropout

def test_dropout_mask_scale_and_products():
    p = 0.3
    x = wide_values(23, (6, 50))
    gen = softrep.Generator(1234)
    gen.set_state((1234, 7))
    out = dropout(torch.from_numpy(x), p, generator=gen)
    assert gen.offset == 8  # one draw
    ref_gen = softrep.Generator(1234)
    ref_gen.set_state((1234, 7))
    u = softrep.rand(6, 50, generator=ref_gen).numpy()
    q = np.float32(1.0 - p)
    keep = u < q
    scale = mpfr_op("div", [1.0, q], np.float32)
    expect = np.array([mpfr_op("mul", [v, scale if k else 0.0], np.float32)
                       for v, k in zip(x.reshape(-1), keep.reshape(-1))], np.float32).reshape(x.shape)
    assert np.array_equal(bits(out), expect.view(np.uint32))
    assert 0.55 < keep.mean() < 0.85


def test_dropout_backward_and_gradcheck():
    x = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).requires_grad_()

    def f(t):
        return dropout(t, 0.4, generator=softrep.Generator(99))

    assert torch.autograd.gradcheck(f, (x,), fast_mode=True)
    out = f(x)
    (g,) = torch.autograd.grad(out, x, torch.ones_like(out))
    scale = 1.0 / np.float64(0.6)
    assert set(g.unique().tolist()) <= {0.0, scale}
    assert torch.equal(g != 0, out != 0)


def test_dropout_special_cases():
    x = normal_tensor(24, (3, 4))
    gen = softrep.Generator(5)
    assert dropout(x, 0.5, training=False, generator=gen) is x
    assert dropout(x, 0.0, generator=gen) is x
    assert gen.offset == 0  # no draw
    z = dropout(x, 1.0, generator=gen)
    assert torch.equal(z, x * 0.0) and gen.offset == 0
    inf = torch.full((64,), float("inf"))
    d = dropout(inf, 0.5, generator=gen)
    assert torch.isnan(d).any() and torch.isinf(d).any()
    assert (d[torch.isnan(d)].view(torch.int32) == 0x7FC00000).all()
    y = x.clone()
    r = dropout(y, 0.5, inplace=True, generator=softrep.Generator(5))
    assert r is y and torch.equal(y, dropout(x, 0.5, generator=softrep.Generator(5)))
    # the default generator is used when none is given, and advances
    softrep.manual_seed(3)
    a = dropout(x, 0.5)
    softrep.manual_seed(3)
    assert torch.equal(a, dropout(x, 0.5))
    # element i depends on (seed, offset, i) only: a prefix of a larger draw
    big = dropout(torch.ones(100), 0.5, generator=softrep.Generator(8))
    small = dropout(torch.ones(10), 0.5, generator=softrep.Generator(8))
    assert torch.equal(big[:10], small)


def test_dropout_bad_input():
    x = torch.zeros(3)
    with pytest.raises(ValueError, match="'p'"):
        dropout(x, 1.5)
    with pytest.raises(TypeError, match="'p'"):
        dropout(x, "0.5")
    with pytest.raises(TypeError, match="'input'"):
        dropout(torch.zeros(3, dtype=torch.int64), 0.5)
    with pytest.raises(TypeError, match="'generator'"):
        dropout(x, 0.5, generator=torch.Generator())
    with pytest.raises(TypeError, match="'training'"):
        dropout(x, 0.5, training=None)


def test_golden():
    x = normal_tensor(25, (5, 40))
    check("dropout.json", "dropout.p0.3.seed77", dropout(x, 0.3, generator=softrep.Generator(77)))
    w = normal_tensor(26, (9, 4))
    idx = torch.from_numpy(np.random.default_rng(27).integers(0, 9, size=(3, 50)))
    wr = w.clone().requires_grad_()
    out = embedding(idx, wr)
    check("dropout.json", "embedding.grad", torch.autograd.grad(out, wr, normal_tensor(28, (3, 50, 4)))[0])


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = normal_tensor(29, (3, 5))
    w = normal_tensor(30, (4, 3))
    idx = torch.tensor([[1, 3, 1], [1, 0, 3]])
    g = normal_tensor(31, (2, 3, 3))

    def both():
        wr = w.clone().requires_grad_()
        out = embedding(idx, wr, padding_idx=0)
        return [dropout(x, 0.4, generator=softrep.Generator(11)), out, torch.autograd.grad(out, wr, g)[0]]

    backend("cuda")
    sim = both()
    backend("cpu")
    cpu = both()
    for s, c in zip(sim, cpu):
        assert np.array_equal(bits(s), bits(c))
