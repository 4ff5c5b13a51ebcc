"""torch.func transforms (grad, vmap, jacrev) on softrep ops.

A vmapped softrep op must give, bit for bit, the op applied to each sample
alone; per-sample gradients by vmap(grad(...)) must equal the gradients of one
sample at a time; jacrev must equal the jacobian that torch.autograd builds
row by row from softrep's own backward.  The references are the same ops run
without any transform, so a batching rule that mixes samples, reorders a
reduction or drops a broadcast dimension fails here."""

import pytest
import torch
from torch.func import functional_call, grad, jacrev, vmap

import softrep
import softrep.nn.functional as F
from golden import normal_tensor


def bits(t):
    t = t.detach().contiguous()
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int64) if t.is_floating_point() else t


def assert_same_bits(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype
    assert torch.equal(bits(a), bits(b))


def per_sample(fn, in_dims, *args):
    """fn applied to each sample alone, stacked along dim 0 (the reference of vmap)."""
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [fn(*[a.select(d, i) if d is not None else a for a, d in zip(args, in_dims)]) for i in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(torch.stack(o) for o in zip(*outs))
    return torch.stack(outs)


def check_vmap(fn, in_dims, *args):
    got = vmap(fn, in_dims=in_dims)(*args)
    want = per_sample(fn, in_dims, *args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_same_bits(g, w)
    else:
        assert_same_bits(got, want)


def t(seed, *shape, dtype=torch.float32):
    return normal_tensor(seed, shape).to(dtype)


# ------------------------------------------------------------------ per-sample gradients


def _mlp():
    softrep.manual_seed(3)
    return torch.nn.Sequential(softrep.nn.Linear(6, 16), softrep.nn.ReLU(), softrep.nn.LayerNorm(16),
                               softrep.nn.Linear(16, 4))


def _per_sample_grads(model, loss_fn, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(p, xi, yi):
        return loss_fn(functional_call(model, (p, buffers), (xi.unsqueeze(0),)), yi.unsqueeze(0))

    batched = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(x.shape[0]):
        one = grad(loss)(params, x[i], y[i])
        # the plain autograd of the same computation, without torch.func
        model.zero_grad()
        loss_fn(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert_same_bits(batched[name][i], one[name])
            assert_same_bits(batched[name][i], p.grad)


def test_per_sample_gradients_mlp_cross_entropy():
    x = t(1, 5, 6)
    y = torch.tensor([0, 3, 1, 1, 2])
    _per_sample_grads(_mlp(), F.cross_entropy, x, y)


def test_per_sample_gradients_cnn():
    softrep.manual_seed(4)
    model = torch.nn.Sequential(softrep.nn.Conv2d(2, 3, 3, padding=1, stride=2), softrep.nn.GELU(),
                                torch.nn.Flatten(), softrep.nn.Linear(3 * 3 * 3, 3))
    x = t(2, 4, 2, 5, 5)
    y = torch.tensor([2, 0, 1, 2])
    _per_sample_grads(model, lambda out, yi: F.cross_entropy(out, yi, label_smoothing=0.1), x, y)


def test_per_sample_gradients_other_losses():
    softrep.manual_seed(5)
    model = torch.nn.Sequential(softrep.nn.Linear(4, 3), softrep.nn.SiLU())
    x, target = t(3, 4, 4), t(4, 4, 3)
    _per_sample_grads(model, F.mse_loss, x, target)
    _per_sample_grads(model, lambda o, y: F.binary_cross_entropy_with_logits(o, y.sigmoid()), x, target)


# ------------------------------------------------------------------ vmap = per sample, op by op


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vmap_elementwise_and_math(dtype):
    x, y = t(10, 3, 4, dtype=dtype), t(11, 4, dtype=dtype)
    check_vmap(softrep.add, (0, None), x, y)
    check_vmap(softrep.mul, (1, None), x.t(), y)  # batch dim not in front
    check_vmap(softrep.div, (None, 0), y, x)
    check_vmap(lambda a, b: softrep.fma(a, b, 0.5), (0, 0), x, x)
    check_vmap(lambda a: softrep.sub(a, t(12, 2, 1, 1, dtype=dtype)), (0,), x)  # sample broadcast to more dims
    check_vmap(lambda a: softrep.sqrt(softrep.abs(a), rounding="up"), (0,), x)
    check_vmap(softrep.exp, (0,), x)
    if dtype == torch.float32:  # pow has a float32 kernel only
        check_vmap(lambda a, b: softrep.pow(softrep.abs(a), b), (0, None), x, y)
    check_vmap(lambda a: softrep.add(a, 1.0, format="bfloat16"), (0,), x)


def test_vmap_random_ops_raise():
    x = t(13, 3, 4)
    with pytest.raises(RuntimeError, match="vmap"):
        vmap(lambda a: softrep.add(a, 1.0, format="bfloat16", rounding="stochastic"))(x)
    with pytest.raises(RuntimeError, match="softrep.dropout.*vmap"):
        vmap(lambda a: F.dropout(a, 0.5))(x)
    with pytest.raises(RuntimeError, match="softrep.dropout.*vmap"):
        vmap(lambda a: F.scaled_dot_product_attention(a, a, a, dropout_p=0.1))(x.reshape(3, 2, 2))
    # eval mode draws nothing and is a plain function of the input
    check_vmap(lambda a: F.dropout(a, 0.5, training=False), (0,), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vmap_reductions(dtype):
    x = t(20, 3, 4, 5, 300, dtype=dtype)  # 300 > one 128-term block: the tree of partials is exercised
    for fn in (lambda a: softrep.sum(a), lambda a: softrep.sum(a, (0, 2), keepdim=True),
               lambda a: softrep.mean(a, 1), lambda a: softrep.var(a, -1), lambda a: softrep.std(a, 0),
               lambda a: softrep.amax(a, 1), lambda a: softrep.amin(a), lambda a: softrep.argmax(a, 1),
               lambda a: softrep.argmin(a), lambda a: softrep.logsumexp(a, (0, 2))):
        check_vmap(fn, (0,), x)
        check_vmap(fn, (2,), x.movedim(0, 2))


def test_vmap_products():
    a, b, c = t(30, 3, 4, 5), t(31, 3, 5, 6), t(32, 3, 4, 6)
    check_vmap(softrep.mm, (0, None), a, b[0])
    check_vmap(softrep.mm, (None, 0), a[0], b)
    check_vmap(softrep.mm, (0, 0), a, b)
    check_vmap(softrep.matmul, (0, None), a, t(33, 2, 5, 6))
    check_vmap(softrep.matmul, (None, 2), t(34, 2, 4, 5), b.movedim(0, 2))
    check_vmap(softrep.bmm, (0, None), t(35, 3, 2, 4, 5), t(36, 2, 5, 6))
    check_vmap(softrep.dot, (0, 0), a[:, 0], b[:, :, 0])
    check_vmap(softrep.linear, (0, None, None), a, t(37, 7, 5), t(38, 7))
    check_vmap(softrep.linear, (0, 0, 0), a, t(39, 3, 7, 5), t(40, 3, 7))
    for beta, alpha in ((1, 1), (0.5, 1), (1, -2.0), (0.25, 3.0), (0, 2.0), (1.5, 0)):
        check_vmap(lambda i, m1, m2: softrep.addmm(i, m1, m2, beta=beta, alpha=alpha), (0, 0, None), c, a, b[0])
        check_vmap(lambda i, m1, m2: softrep.addmm(i, m1, m2, beta=beta, alpha=alpha), (0, None, 0), c[:, 0], a[0], b)


def test_vmap_conv():
    x, w, bias = t(50, 3, 2, 3, 7, 7), t(51, 4, 3, 3, 3), t(52, 4)
    check_vmap(lambda a: softrep.conv2d(a, w, bias, stride=2, padding=1), (0,), x)
    check_vmap(lambda a, ww: softrep.conv2d(a, ww, groups=1), (0, 0), x, t(53, 3, 4, 3, 2, 2))
    check_vmap(lambda a: softrep.conv1d(a, w[:, :, 0], dilation=2), (1,), x[:, :, :, 0].movedim(0, 1))


def test_vmap_nn_functional():
    x = t(60, 3, 4, 6)
    check_vmap(lambda a: F.softmax(a, -1), (0,), x)
    check_vmap(lambda a: F.log_softmax(a, 0), (1,), x)
    check_vmap(lambda a: F.layer_norm(a, (6,), t(61, 6), t(62, 6)), (0,), x)
    check_vmap(lambda a: F.rms_norm(a, (4, 6)), (0,), x)
    check_vmap(lambda a: F.group_norm(a.unsqueeze(0), 2), (0,), x)
    check_vmap(lambda a: F.batch_norm(a, None, None, training=True), (0,), x)
    check_vmap(lambda a: F.relu(a), (2,), x)
    check_vmap(lambda a: F.leaky_relu(a, 0.2), (0,), x)
    check_vmap(lambda a: F.gelu(a, approximate="tanh"), (0,), x)
    check_vmap(lambda a: F.max_pool2d(a.unsqueeze(0), 2), (0,), x)
    check_vmap(lambda i: F.embedding(i, t(63, 10, 3)), (0,), torch.tensor([[1, 2, 2], [0, 9, 1]]))
    y = torch.tensor([[0, 5, 2, 1], [3, 3, 0, -100], [5, 4, 4, 1]])
    check_vmap(lambda a, b: F.cross_entropy(a, b), (0, 0), x, y)
    check_vmap(lambda a, b: F.nll_loss(a, b, reduction="none", weight=t(64, 6).abs()), (0, 0), x, y)
    q = t(65, 3, 2, 4, 5)
    check_vmap(lambda a: F.scaled_dot_product_attention(a, a, a, is_causal=True), (0,), q)


def test_vmap_bad_target_still_raises():
    with pytest.raises(IndexError, match="target"):
        vmap(lambda a, b: F.cross_entropy(a, b))(t(66, 2, 3, 4), torch.tensor([[0, 1, 2], [0, 9, 1]]))


# ------------------------------------------------------------------ jacrev


@pytest.mark.parametrize("name", ["exp_mul", "matmul", "softmax", "var", "conv", "layer_norm", "abs_div"])
def test_jacrev_matches_autograd_jacobian(name):
    w = t(70, 4, 3).to(torch.float64)
    fns = {
        "exp_mul": lambda x: softrep.mul(softrep.exp(x), x),
        "matmul": lambda x: softrep.matmul(x, w),
        "softmax": lambda x: F.softmax(x, -1),
        "var": lambda x: softrep.var(x, 0),
        "conv": lambda x: softrep.conv1d(x.unsqueeze(0), w.reshape(2, 2, 3), stride=2, padding=1).reshape(-1),
        "layer_norm": lambda x: F.layer_norm(x, (4,)),
        "abs_div": lambda x: softrep.div(softrep.abs(x), softrep.add(softrep.square(x), 1.0)),
    }
    x = t(71, 2, 4, dtype=torch.float64)
    fn = fns[name]
    got = jacrev(fn)(x)
    # torch.autograd: one backward of softrep's Function per output element
    want = torch.autograd.functional.jacobian(fn, x)
    assert_same_bits(got, want)


def test_grad_of_grad():
    x = t(72, 5, dtype=torch.float64)
    f = lambda a: softrep.sum(softrep.mul(softrep.square(a), softrep.exp(a)))
    got = grad(lambda a: softrep.sum(grad(f)(a)))(x)
    xa = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(f(xa), xa, create_graph=True)
    (want,) = torch.autograd.grad(softrep.sum(g), xa)
    assert_same_bits(got, want)


# ------------------------------------------------------------------ the CUDA kernels (simulator)


@pytest.mark.simulator
def test_vmap_per_sample_gradients_simulator(backend):
    x = t(1, 3, 6)
    y = torch.tensor([0, 3, 1])
    model = _mlp()
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    backend("cpu")
    cpu = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    backend("cuda")
    sim = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for name in cpu:
        assert_same_bits(sim[name], cpu[name])
    one = grad(loss)(params, x[1], y[1])
    for name in cpu:
        assert_same_bits(sim[name][1], one[name])


def test_every_random_draw_refuses_vmap():
    """One draw for a whole vmapped batch would not be the per-sample draws."""
    x = torch.full((3, 4), 0.5)
    for fn in (lambda t: softrep.bernoulli(t), lambda t: t * softrep.rand(4), lambda t: t * softrep.randn(4),
               lambda t: softrep.round_to(t, "bfloat16", "stochastic")):
        with pytest.raises(RuntimeError, match="cannot run under torch.func.vmap"):
            torch.func.vmap(fn)(x)


def test_low_precision_ops_under_vmap_and_grad():
    """round_to and the emulated mm: vmapped bits equal the per-sample bits,
    per-sample gradients equal those of .backward() one sample at a time."""
    x = normal_tensor(40, (5, 7))
    w = normal_tensor(41, (7, 3))
    r = vmap(lambda t: softrep.round_to(t, "bfloat16"))(x)
    assert torch.equal(r, torch.stack([softrep.round_to(t, "bfloat16") for t in x]))
    kw = {"input_format": "bfloat16", "accumulate_format": "float16", "rounding": "zero"}
    m = vmap(lambda t: softrep.mm(t[None], w, **kw))(x)
    assert torch.equal(m, torch.stack([softrep.mm(t[None], w, **kw) for t in x]))

    def loss(t):
        return softrep.sum(softrep.mm(t[None], w, accumulate_format="bfloat16"))

    per_sample = vmap(grad(loss))(x)
    for t, g in zip(x, per_sample):
        t = t.clone().requires_grad_()
        loss(t).backward()
        assert torch.equal(t.grad, g)
