# softrep: no kernels
"""softrep.nn modules: torch's interface and state_dict, softrep's computation.

References are torch's own modules (float32, tolerance: this checks the maths,
not the bits), torch.autograd.gradcheck in float64 (finite differences), and
torch's formulas for the initial values and the running statistics.
"""

import math

import pytest
import torch

import softrep
import softrep.nn as snn
from golden import normal_tensor


def _x(seed, *shape, dtype=torch.float32, scale=1.0):
    return normal_tensor(seed, shape, dtype=dtype, scale=scale)


def _labels(seed, n, classes):
    return (normal_tensor(seed, (n,), dtype=torch.float64).abs() * 1000).long() % classes


# name -> (constructor args, kwargs, inputs(dtype)); the same arguments build the torch module
CASES = {
    "Linear": ((4, 3), {}, lambda dt: (_x(1, 2, 4, dtype=dt),)),
    "Conv1d": ((2, 3, 3), {"padding": 1, "stride": 2}, lambda dt: (_x(2, 2, 2, 5, dtype=dt),)),
    "Conv2d": ((2, 4, 3), {"padding": 1, "groups": 2}, lambda dt: (_x(3, 2, 2, 4, 4, dtype=dt),)),
    "BatchNorm1d": ((3,), {}, lambda dt: (_x(4, 5, 3, dtype=dt),)),
    "BatchNorm2d": ((3,), {}, lambda dt: (_x(5, 2, 3, 2, 2, dtype=dt),)),
    "LayerNorm": ((4,), {}, lambda dt: (_x(6, 2, 3, 4, dtype=dt),)),
    "RMSNorm": ((4,), {"eps": 1e-6}, lambda dt: (_x(7, 2, 3, 4, dtype=dt),)),
    "GroupNorm": ((2, 4), {}, lambda dt: (_x(8, 2, 4, 3, dtype=dt),)),
    # the indices avoid padding_idx, whose row has gradient 0 by definition (gradcheck would disagree)
    "Embedding": ((5, 3), {"padding_idx": 0}, lambda dt: (torch.tensor([[1, 3, 4], [2, 2, 3]]),)),
    "ReLU": ((), {}, lambda dt: (_x(9, 2, 5, dtype=dt),)),
    "LeakyReLU": ((0.2,), {}, lambda dt: (_x(10, 2, 5, dtype=dt),)),
    "GELU": ((), {"approximate": "tanh"}, lambda dt: (_x(11, 2, 5, dtype=dt),)),
    "SiLU": ((), {}, lambda dt: (_x(12, 2, 5, dtype=dt),)),
    "Tanh": ((), {}, lambda dt: (_x(13, 2, 5, dtype=dt),)),
    "Sigmoid": ((), {}, lambda dt: (_x(14, 2, 5, dtype=dt),)),
    "Softmax": ((), {"dim": 1}, lambda dt: (_x(15, 2, 5, dtype=dt),)),
    "LogSoftmax": ((), {"dim": 1}, lambda dt: (_x(16, 2, 5, dtype=dt),)),
    "MaxPool2d": ((2,), {}, lambda dt: (_x(17, 1, 2, 4, 4, dtype=dt),)),
    "AvgPool2d": ((2,), {"stride": 1}, lambda dt: (_x(18, 1, 2, 3, 3, dtype=dt),)),
    "AdaptiveAvgPool2d": (((2, 1),), {}, lambda dt: (_x(19, 1, 2, 4, 3, dtype=dt),)),
    "MultiheadAttention": ((4, 2), {"batch_first": True},
                           lambda dt: (_x(20, 2, 3, 4, dtype=dt), _x(21, 2, 2, 4, dtype=dt), _x(22, 2, 2, 4, dtype=dt))),
    "TransformerEncoderLayer": ((4, 2, 6), {"dropout": 0.0, "batch_first": True},
                                lambda dt: (_x(23, 2, 3, 4, dtype=dt),)),
    "CrossEntropyLoss": ((), {"label_smoothing": 0.1}, lambda dt: (_x(24, 4, 3, dtype=dt), _labels(25, 4, 3))),
    "MSELoss": ((), {}, lambda dt: (_x(26, 2, 3, dtype=dt), _x(27, 2, 3, dtype=dt))),
}


def _pair(name, dtype=torch.float32):
    args, kwargs, inputs = CASES[name]
    torch.manual_seed(0)
    ref = getattr(torch.nn, name)(*args, **kwargs).to(dtype)
    mod = getattr(snn, name)(*args, **kwargs).to(dtype)
    mod.load_state_dict(ref.state_dict())
    return ref, mod, inputs(dtype)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_class_interface_and_state_dict(name):
    args, kwargs, _ = CASES[name]
    ref = getattr(torch.nn, name)(*args, **kwargs)
    mod = getattr(snn, name)(*args, **kwargs)
    assert isinstance(mod, getattr(torch.nn, name))
    assert repr(mod) == repr(ref)
    ref_sd, sd = ref.state_dict(), mod.state_dict()
    assert list(sd) == list(ref_sd)
    assert [(v.shape, v.dtype) for v in sd.values()] == [(v.shape, v.dtype) for v in ref_sd.values()]
    # round trip: softrep -> torch -> softrep keeps every bit
    ref.load_state_dict(sd)
    back = getattr(snn, name)(*args, **kwargs)
    back.load_state_dict(ref.state_dict())
    assert softrep.fingerprint(back) == softrep.fingerprint(mod)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_close_to_torch(name):
    ref, mod, inputs = _pair(name)
    leaf = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    leaf_ref = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out, out_ref = _first(mod(*leaf)), _first(ref(*leaf_ref))
    torch.testing.assert_close(out, out_ref, rtol=1e-5, atol=1e-5)
    upstream = _x(99, *out.shape)
    (out * upstream).sum().backward()
    (out_ref * upstream).sum().backward()
    for (pname, p), p_ref in zip(mod.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, p_ref.grad, rtol=1e-4, atol=1e-5, msg=f"grad of {pname}")
    for t, t_ref in zip(leaf, leaf_ref):
        if t.is_floating_point():
            torch.testing.assert_close(t.grad, t_ref.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_float64(name):
    _, mod, inputs = _pair(name, torch.float64)
    names = [n for n, _ in mod.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in mod.named_parameters()]
    n_in = len(inputs)
    # differentiate floating inputs (for losses, the prediction only)
    leaf = [t.clone().requires_grad_(t.is_floating_point() and (i == 0 or not name.endswith("Loss")))
            for i, t in enumerate(inputs)]

    def fn(*tensors):
        out = torch.func.functional_call(mod, dict(zip(names, tensors[n_in:])), tuple(tensors[:n_in]))
        return _first(out)

    assert torch.autograd.gradcheck(fn, (*leaf, *params), fast_mode=True)


def test_gelu_exact_erf_close_to_torch():
    x = _x(30, 3, 7)
    torch.testing.assert_close(snn.GELU()(x), torch.nn.GELU()(x))


def test_initialisation_follows_torch_formulas_on_softrep_draws():
    before = torch.get_rng_state()
    g = softrep.Generator(123)
    lin = snn.Linear(50, 40, generator=g)
    att = snn.MultiheadAttention(8, 2, generator=softrep.Generator(5))
    snn.TransformerEncoderLayer(8, 2, 16, generator=softrep.Generator(6))
    assert torch.equal(torch.get_rng_state(), before), "softrep modules must not draw from torch's RNG"
    # torch's Linear default: kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)), bias the same
    bound = 1 / math.sqrt(50)
    for t in (lin.weight, lin.bias):
        assert t.abs().max() <= bound and t.abs().max() > 0.9 * bound
    # draw order: weight then bias, one generator offset each
    g2 = softrep.Generator(123)
    w = softrep.nn.init.kaiming_uniform_(torch.empty(40, 50), a=math.sqrt(5), generator=g2)
    b = softrep.nn.init.uniform_(torch.empty(40), -bound, bound, generator=g2)
    assert torch.equal(lin.weight, w) and torch.equal(lin.bias, b) and g.offset == g2.offset == 2
    # same seed, same bits; a different seed, different values
    assert softrep.fingerprint(snn.Linear(50, 40, generator=softrep.Generator(123))) == softrep.fingerprint(lin)
    assert not torch.equal(snn.Linear(50, 40, generator=softrep.Generator(124)).weight, lin.weight)
    # MultiheadAttention: xavier_uniform_ in_proj (bound sqrt(6 / (8 + 24))), zero biases
    xb = math.sqrt(6 / 32)
    assert att.in_proj_weight.abs().max() <= xb and att.in_proj_weight.abs().max() > 0.8 * xb
    assert not att.in_proj_bias.any() and not att.out_proj.bias.any()
    # Embedding: N(0, 1) with the padding row zero
    emb = snn.Embedding(200, 10, padding_idx=3, generator=softrep.Generator(9))
    assert not emb.weight[3].any()
    assert abs(float(emb.weight.detach().std()) - 1) < 0.05


def test_default_generator_is_softreps():
    softrep.manual_seed(77)
    a = snn.Conv2d(3, 4, 3)
    softrep.manual_seed(77)
    torch.manual_seed(1234)  # torch's RNG plays no part
    b = snn.Conv2d(3, 4, 3)
    assert softrep.fingerprint(a) == softrep.fingerprint(b)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_batchnorm_running_stats_and_eval(cls, momentum):
    shape = (6, 3) if cls == "BatchNorm1d" else (4, 3, 2, 3)
    ref = getattr(torch.nn, cls)(3, momentum=momentum)
    mod = getattr(snn, cls)(3, momentum=momentum)
    for step in range(4):
        x = _x(40 + step, *shape, scale=2.0 + step)
        torch.testing.assert_close(mod(x), ref(x), rtol=1e-5, atol=1e-5)
    assert int(mod.num_batches_tracked) == int(ref.num_batches_tracked) == 4
    torch.testing.assert_close(mod.running_mean, ref.running_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mod.running_var, ref.running_var, rtol=1e-5, atol=1e-6)
    mod.eval(), ref.eval()
    x = _x(50, *shape)
    stats = (mod.running_mean.clone(), mod.running_var.clone())
    torch.testing.assert_close(mod(x), ref(x), rtol=1e-5, atol=1e-5)
    assert torch.equal(mod.running_mean, stats[0]) and torch.equal(mod.running_var, stats[1])
    assert int(mod.num_batches_tracked) == 4


def test_batchnorm_without_tracking_or_affine():
    for kwargs in ({"track_running_stats": False}, {"affine": False}):
        ref, mod = torch.nn.BatchNorm2d(3, **kwargs), snn.BatchNorm2d(3, **kwargs)
        assert list(mod.state_dict()) == list(ref.state_dict())
        x = _x(60, 2, 3, 2, 2)
        for m in (ref, mod):
            m.eval()
        torch.testing.assert_close(mod(x), ref(x), rtol=1e-5, atol=1e-5)


def test_dropout_train_eval_and_generator():
    x = _x(70, 50, 40)
    drop = snn.Dropout(0.25, generator=softrep.Generator(3))
    y = drop(x)
    kept = y != 0
    assert 0.7 < float(kept.float().mean()) < 0.8
    # kept elements times torch's scale fl(1 / fl(1 - p)) (IEEE float32 division and product in torch)
    scale = torch.tensor(1.0) / torch.tensor(0.75)
    assert torch.equal(y[kept], (x * scale)[kept])
    assert not torch.equal(drop(x), y), "each call draws a new mask"
    assert torch.equal(snn.Dropout(0.25, generator=softrep.Generator(3))(x), y)
    drop.eval()
    assert torch.equal(drop(x), x)


def test_multihead_attention_masks_and_weights():
    torch.manual_seed(1)
    ref = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=5)
    mod = snn.MultiheadAttention(8, 2, kdim=6, vdim=5)
    mod.load_state_dict(ref.state_dict())
    q, k, v = _x(80, 4, 3, 8), _x(81, 5, 3, 6), _x(82, 5, 3, 5)
    causal = torch.triu(torch.ones(4, 5, dtype=torch.bool), diagonal=1)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True], [False] * 4 + [True]])
    float_mask = _x(83, 3 * 2, 4, 5)
    for kwargs in ({}, {"attn_mask": causal}, {"key_padding_mask": padding},
                   {"attn_mask": float_mask, "key_padding_mask": padding},
                   {"attn_mask": causal, "average_attn_weights": False}):
        out, w = mod(q, k, v, **kwargs)
        out_ref, w_ref = ref(q, k, v, **kwargs)
        torch.testing.assert_close(out, out_ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(w, w_ref, rtol=1e-5, atol=1e-5)
        out2, none = mod(q, k, v, need_weights=False, **kwargs)
        assert none is None and torch.equal(out2, out)
    # unbatched input
    out, _ = mod(q[:, 0], k[:, 0], v[:, 0])
    torch.testing.assert_close(out, ref(q[:, 0], k[:, 0], v[:, 0])[0], rtol=1e-5, atol=1e-5)


def test_transformer_encoder_layer_variants():
    x = _x(90, 2, 5, 8)
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    for kwargs in ({"activation": "gelu", "norm_first": True}, {"activation": torch.nn.functional.relu}):
        torch.manual_seed(2)
        ref = torch.nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True, **kwargs)
        mod = snn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True, **kwargs)
        mod.load_state_dict(ref.state_dict())
        torch.testing.assert_close(mod(x, src_mask=mask, is_causal=True), ref(x, src_mask=mask, is_causal=True),
                                   rtol=1e-5, atol=1e-5)
    # train mode with dropout: a softrep draw, same generator state -> same bits
    a = snn.TransformerEncoderLayer(8, 2, 12, dropout=0.2, generator=softrep.Generator(4))
    b = snn.TransformerEncoderLayer(8, 2, 12, dropout=0.2, generator=softrep.Generator(4))
    assert torch.equal(a(x), b(x))
    a.eval()
    assert torch.equal(a(x), a(x))


def test_bad_constructor_arguments():
    with pytest.raises(NotImplementedError, match="'padding_mode'"):
        snn.Conv2d(2, 2, 3, padding_mode="circular")
    with pytest.raises(NotImplementedError, match="'padding_mode'"):
        snn.Conv1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(NotImplementedError, match="'add_bias_kv'"):
        snn.MultiheadAttention(4, 2, add_bias_kv=True)
    with pytest.raises(ValueError, match="'activation'"):
        snn.TransformerEncoderLayer(4, 2, activation=torch.tanh)
    with pytest.raises(TypeError, match="'generator'"):
        snn.Linear(2, 2, generator=torch.Generator())
    with pytest.raises(ValueError, match="is_causal"):
        snn.MultiheadAttention(4, 2)(_x(1, 3, 4), _x(1, 3, 4), _x(1, 3, 4), is_causal=True)
    with pytest.raises(TypeError, match="float32, float64, bfloat16 or float16"):
        snn.Linear(2, 2, dtype=torch.float8_e4m3fn)


def test_functional_names():
    import softrep.nn.functional as F

    for name in ["linear", "conv1d", "conv2d", "batch_norm", "layer_norm", "rms_norm", "group_norm", "embedding",
                 "dropout", "relu", "leaky_relu", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax",
                 "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "scaled_dot_product_attention",
                 "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits"]:
        assert callable(getattr(F, name)), name
        assert getattr(F, name).__module__.startswith("softrep"), name


def test_layer_clones_share_the_generator():
    from softrep.nn.modules._common import generator_of

    gen = softrep.Generator(11)
    layer = snn.TransformerEncoderLayer(4, 2, 8, dropout=0.5, batch_first=True, generator=gen)
    stack = snn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    assert generator_of(stack.layers[0].dropout) is gen and generator_of(stack.layers[1].dropout1) is gen
    before = gen.offset
    stack(_x(12, 2, 3, 4))
    assert gen.offset - before == 2 * 4  # one draw per dropout call (attention, dropout, dropout1, dropout2)


def _forward_backward_bits(name):
    _, mod, inputs = _pair(name)
    leaf = [t.clone().requires_grad_(t.is_floating_point() and (i == 0 or not name.endswith("Loss")))
            for i, t in enumerate(inputs)]
    out = _first(mod(*leaf))
    softrep.sum(softrep.mul(out, _x(99, *out.shape))).backward()
    return softrep.fingerprint([out.detach(), [t.grad for t in leaf if t.requires_grad],
                                [p.grad for p in mod.parameters()]])


# the modules whose ops the training test (tests/test_training.py) does not run in the simulator
SIMULATED = ["Conv1d", "GroupNorm", "RMSNorm", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax",
             "LogSoftmax", "AvgPool2d", "AdaptiveAvgPool2d", "MultiheadAttention", "MSELoss"]


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    simulated = [_forward_backward_bits(name) for name in SIMULATED]
    backend("cpu")
    assert simulated == [_forward_backward_bits(name) for name in SIMULATED]


@pytest.mark.parametrize("layer", ["dropout", "max_pool2d", "layer_norm", "batch_norm", "cross_entropy"])
def test_backward_makes_no_zero_gradients_for_the_non_differentiable_outputs(layer):
    """The fused Functions also return what only their backward reads (the
    dropout noise, the pooling indices, the norms' statistics, the
    log-probabilities); autograd would hand their backward a zero gradient
    for each, a tensor allocated and filled at every step.  They ask it not
    to (set_materialize_grads(False)): the backward creates no zeros of those
    outputs' shapes."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class ZeroTensors(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.shapes = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.overloadpacket in (torch.ops.aten.zeros, torch.ops.aten.zeros_like, torch.ops.aten.new_zeros):
                self.shapes.append(tuple(out.shape))
            return out

    x = torch.randn(4, 3, 8, 8, requires_grad=True)
    if layer == "cross_entropy":
        logits = torch.randn(4, 10, requires_grad=True)
        y, x, unused = snn.CrossEntropyLoss()(logits, torch.tensor([1, 2, 3, 4])), logits, [(4, 10), (4,), ()]
    else:
        module = {"dropout": lambda: snn.Dropout(0.5, generator=softrep.Generator(0)),
                  "max_pool2d": lambda: snn.MaxPool2d(2), "layer_norm": lambda: snn.LayerNorm(8),
                  "batch_norm": lambda: snn.BatchNorm2d(3)}[layer]()
        y = module(x)
        unused = {"dropout": [(4, 3, 8, 8)], "max_pool2d": [(12, 4, 4), (4, 3, 4, 4)], "layer_norm": [(96,)],
                  "batch_norm": [(1, 3, 1, 1), (4, 3, 8, 8)]}[layer]
    with ZeroTensors() as mode:
        (grad,) = torch.autograd.grad(y, x, torch.ones_like(y))
    assert grad.shape == x.shape
    assert not set(mode.shapes) & set(unused), mode.shapes
