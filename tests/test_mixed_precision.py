"""bfloat16/float16 tensors in softrep's ops, torch.autocast, master weights and
loss scaling.

References are independent of the code under test: MPFR (gmpy2) contexts at
the formats' precision and range for the elementwise ops and math functions,
ml_dtypes' conversions for the one rounding of a float32 result, a Python
float32 fma chain (gmpy2 at 24 bits) for products, torch's own autocast for
the output dtypes."""

import gmpy2
import ml_dtypes
import numpy as np
import pytest
import torch

import softrep
import softrep.nn as snn
from softrep.ops import math as M
from softrep.ops import mixed
from softrep.optim import SGD, Adam, AdamW, GradScaler
from softrep.tools import verify_lowp

from golden import check as golden_check, normal_tensor

LOW = {"bfloat16": torch.bfloat16, "float16": torch.float16}
NP_LOW = {torch.bfloat16: ml_dtypes.bfloat16, torch.float16: np.float16}
# (precision, emin, emax) in MPFR's convention (significand in [1/2, 1)): the
# formats' own values exactly, subnormals by subnormalize
MPFR_FORMAT = {torch.bfloat16: (8, -132, 128), torch.float16: (11, -23, 16)}
MPFR_ROUND = {"nearest": gmpy2.RoundToNearest, "down": gmpy2.RoundDown, "up": gmpy2.RoundUp,
              "zero": gmpy2.RoundToZero}
CANONICAL = {torch.bfloat16: 0x7FC0, torch.float16: 0x7E00}


def bits(t):
    return t.detach().contiguous().view(torch.int16).numpy().astype(np.int32) & 0xFFFF


def random_low(seed, n, dtype, finite=False):
    """Uniform bit patterns of the format (every class: subnormals, inf, NaN)."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 65536, n).astype(np.int32)
    t = torch.from_numpy(b).to(torch.int16).view(dtype)
    if finite:
        t = torch.where(torch.isfinite(t), t, torch.zeros_like(t))
    return t


def ml_round(x32, dtype):
    """A float32 numpy array rounded once to nearest-even by ml_dtypes, as bits."""
    return np.asarray(x32, dtype=np.float32).astype(NP_LOW[dtype]).view(np.uint16).astype(np.int32)


def mpfr_bits(values, dtype, fn, rounding="nearest"):
    p, emin, emax = MPFR_FORMAT[dtype]
    ctx = gmpy2.context(precision=p, emin=emin, emax=emax, subnormalize=True, round=MPFR_ROUND[rounding])
    out = []
    # operands at 53 bits (exact: they are float32 or narrower values), made
    # outside the context, which would round them to the format
    operands = [[gmpy2.mpfr(float(a), 53) for a in column] for column in values]
    with gmpy2.context(ctx):
        for args in zip(*operands):
            out.append(float(fn(*args)))
    want = torch.tensor(out, dtype=torch.float64).to(torch.float32).to(dtype)  # exact: values of the format
    w = bits(want)
    w[np.isnan(np.array(out))] = CANONICAL[dtype]
    return w


# ---------------------------------------------------------------------------- elementwise


MPFR_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "div": lambda a, b: a / b, "fma": lambda a, b, c: gmpy2.fma(a, b, c), "sqrt": gmpy2.sqrt,
            "square": lambda a: a * a, "reciprocal": lambda a: 1 / a}
ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1, "square": 1, "reciprocal": 1}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", sorted(MPFR_OPS))
def test_elementwise_one_rounding_in_the_format(op, dtype):
    n = 3000
    args = [random_low(10 * i + 1, n, dtype) for i in range(ARITY[op])]
    # near-ties: operands that differ by a few units in the last place make
    # sums whose float32 rounding lands on a midpoint of the format
    args[0][:500] = torch.tensor(np.linspace(1, 2, 500), dtype=torch.float32).to(dtype)
    if ARITY[op] > 1:
        args[1][:500] = torch.tensor(np.ldexp(np.arange(500) % 7 + 1.0, -9 - np.arange(500) % 5),
                                     dtype=torch.float32).to(dtype)
    for rounding in ("nearest", "down", "up", "zero") if op not in ("square", "reciprocal") else ("nearest", "up"):
        got = getattr(softrep, op)(*args, rounding=rounding)
        assert got.dtype == dtype
        want = mpfr_bits([a.to(torch.float64).numpy() for a in args], dtype, MPFR_OPS[op], rounding)
        bad = np.nonzero(bits(got) != want)[0]
        assert len(bad) == 0, (op, rounding, [tuple(float(a[i]) for a in args) for i in bad[:3]])


def test_fma_through_float32_would_round_twice():
    """fma(1.5, 1 + 2^-7, -2^-40) in bfloat16: the exact value lies just below the
    midpoint 1.10000011b, so it rounds down to 1.1000001b; its float32 rounding
    is the midpoint itself, which ties to even, up to 1.100001b."""
    exact = 1.5 * (1 + 2.0**-7) - 2.0**-40  # exact in float64
    assert float(np.float32(exact).astype(ml_dtypes.bfloat16)) == 1.515625  # the double rounding
    a, b, c = (torch.tensor([v], dtype=torch.bfloat16) for v in (1.5, 1 + 2.0**-7, -(2.0**-40)))
    assert float(softrep.fma(a, b, c)) == 1.5078125


def test_python_numbers_round_once_from_double():
    x = torch.ones(3, dtype=torch.bfloat16)
    # 1 + 2^-8 + 2^-30 as a double: to bfloat16 directly it rounds up (above the
    # tie); through float32 it would become the tie 1 + 2^-8 and round to even
    got = softrep.mul(x, 1.0 + 2.0**-8 + 2.0**-30)
    assert torch.equal(got, torch.full((3,), 1.0 + 2.0**-7, dtype=torch.bfloat16))


def test_gradients_are_low_precision_ops():
    x = random_low(3, 64, torch.bfloat16, finite=True).requires_grad_()
    y = random_low(4, 64, torch.bfloat16, finite=True)
    softrep.mul(x, y).backward(torch.ones(64, dtype=torch.bfloat16))
    assert x.grad.dtype == torch.bfloat16 and (bits(x.grad) == bits(y)).all()


def test_mixed_dtypes_refused_outside_autocast():
    with pytest.raises(TypeError, match="'other' has dtype torch.float32"):
        softrep.add(torch.ones(2, dtype=torch.bfloat16), torch.ones(2))


# ---------------------------------------------------------------------------- math


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_math_exception_inputs_and_a_sample_against_mpfr(dtype):
    fmt = mixed.LOW_FORMATS[dtype]
    x = random_low(7, 256, dtype)
    for name in verify_lowp.UNARY:
        table = verify_lowp_table(fmt, name)
        xs = torch.cat([x, torch.tensor([k for k, _ in table], dtype=torch.int32).to(torch.int16).view(dtype)])
        got = M.FUNCTIONS[name].op(xs)
        fn = {"rsqrt": lambda a: gmpy2.rec_sqrt(a) if not gmpy2.is_zero(a) else 1 / a,
              "sigmoid": lambda a: _mp_sigmoid(a, dtype)}.get(name, getattr(gmpy2, name, None))
        want = mpfr_bits([xs.to(torch.float64).numpy()], dtype, fn)
        bad = np.nonzero(bits(got) != want)[0]
        assert len(bad) == 0, (name, [hex(int(bits(xs)[i])) for i in bad[:4]])


def verify_lowp_table(fmt, name):
    from softrep.algorithms.math.lowp_exceptions import TABLES
    return TABLES.get(fmt, {}).get(name, ())


def _mp_sigmoid(a, dtype):
    p, emin, emax = MPFR_FORMAT[dtype]
    with gmpy2.context(precision=300, emin=-(1 << 20), emax=1 << 20):
        v = 1 / (1 + gmpy2.exp(-a))
    return +v  # rounded in the caller's context


def test_the_exception_tables_are_needed():
    """Each table entry is an input where the float32 result rounded again is wrong."""
    from softrep.algorithms.math.lowp_exceptions import TABLES
    name, fmt = "cbrt", "float16"
    keys = torch.tensor([k for k, _ in TABLES[fmt][name]], dtype=torch.int32).to(torch.int16).view(torch.float16)
    raw = M.double_rounded(M.FUNCTIONS[name].spec, [keys])
    assert (bits(raw) != np.array([v for _, v in TABLES[fmt][name]])).all()
    assert (bits(M.FUNCTIONS[name].op(keys)) == np.array([v for _, v in TABLES[fmt][name]])).all()


def test_verify_lowp_exhaustive_one_function():
    wrong, raw_wrong, table = verify_lowp.check_unary("exp", "float16")
    assert wrong == [] and len(raw_wrong) == 2 and table == tuple(verify_lowp_table("float16", "exp"))


def test_math_gradient_in_the_format():
    x = torch.linspace(-2, 2, 33).to(torch.bfloat16).requires_grad_()
    softrep.exp(x).backward(torch.ones(33, dtype=torch.bfloat16))
    assert x.grad.dtype == torch.bfloat16 and torch.equal(x.grad, softrep.exp(x.detach()))


# ---------------------------------------------------------------------------- products, reductions, nn


def _fma_chain32(a, b):
    """out[i, j]: acc = +0; acc = fl32(a[i, k] * b[k, j] + acc), k in order (gmpy2, 24 bits)."""
    ctx = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True)
    m, kk = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.float32)
    with gmpy2.context(ctx):
        for i in range(m):
            for j in range(n):
                acc = gmpy2.mpfr(0)
                for k in range(kk):
                    acc = gmpy2.fma(gmpy2.mpfr(float(a[i, k])), gmpy2.mpfr(float(b[k, j])), acc)
                out[i, j] = float(acc)
    return out


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_mm_float32_chain_rounded_once(dtype):
    a = normal_tensor(1, (5, 37)).to(dtype)
    b = normal_tensor(2, (37, 4)).to(dtype)
    got = softrep.mm(a, b)
    assert got.dtype == dtype
    want = ml_round(_fma_chain32(a.float().numpy(), b.float().numpy()), dtype)
    assert (bits(got) == want).all()
    # linear: bias added in float32 (add_rn), then one rounding
    bias = normal_tensor(3, (4,)).to(dtype)
    lin = softrep.linear(a, b.t(), bias)
    want = ml_round(_fma_chain32(a.float().numpy(), b.float().numpy()) + bias.float().numpy(), dtype)
    assert (bits(lin) == want).all()


def test_products_gradients_and_conv():
    a = normal_tensor(4, (6, 9)).to(torch.bfloat16).requires_grad_()
    w = normal_tensor(5, (3, 9)).to(torch.bfloat16).requires_grad_()
    out = softrep.linear(a, w)
    g = normal_tensor(6, (6, 3)).to(torch.bfloat16)
    out.backward(g)
    assert a.grad.dtype == w.grad.dtype == torch.bfloat16
    assert (bits(a.grad) == ml_round(_fma_chain32(g.float().numpy(), w.detach().float().numpy()), torch.bfloat16)).all()
    x = normal_tensor(7, (2, 3, 8, 8)).to(torch.float16)
    k = normal_tensor(8, (4, 3, 3, 3)).to(torch.float16)
    c = softrep.conv2d(x, k, padding=1)
    assert c.dtype == torch.float16
    assert (bits(c) == ml_round(softrep.conv2d(x.float(), k.float(), padding=1).numpy(), torch.float16)).all()


def test_reductions_and_norms_accumulate_in_float32():
    x = normal_tensor(9, (7, 300)).to(torch.bfloat16)
    for fn in (lambda t: softrep.sum(t, 1), lambda t: softrep.mean(t, 1), lambda t: softrep.var(t, 1),
               lambda t: softrep.softmax(t, 1), lambda t: softrep.layer_norm(t, (300,)),
               lambda t: softrep.log_softmax(t, 1), lambda t: softrep.rms_norm(t, (300,))):
        got = fn(x)
        assert got.dtype == torch.bfloat16
        assert (bits(got) == ml_round(fn(x.float()).numpy(), torch.bfloat16)).all()
    assert softrep.sum(x, dtype=torch.float32).dtype == torch.float32
    assert softrep.amax(x).dtype == torch.bfloat16 and float(softrep.amax(x)) == float(x.max())


def test_modules_in_bfloat16():
    model = torch.nn.Sequential(snn.Linear(6, 5), snn.ReLU(), snn.LayerNorm(5), snn.Linear(5, 2)).to(torch.bfloat16)
    x = normal_tensor(11, (4, 6)).to(torch.bfloat16)
    out = model(x)
    assert out.dtype == torch.bfloat16
    softrep.cross_entropy(out, torch.tensor([0, 1, 1, 0])).backward()
    assert all(p.grad.dtype == torch.bfloat16 for p in model.parameters())


def test_batch_norm_running_stats_in_bfloat16():
    bn = snn.BatchNorm1d(3).to(torch.bfloat16)
    x = normal_tensor(12, (8, 3)).to(torch.bfloat16)
    bn(x)
    ref = snn.BatchNorm1d(3)
    ref(x.float())
    assert bn.running_mean.dtype == torch.bfloat16
    assert (bits(bn.running_mean) == ml_round(ref.running_mean.numpy(), torch.bfloat16)).all()


# ---------------------------------------------------------------------------- autocast


def _autocast_cases():
    x = normal_tensor(13, (4, 8))
    w = normal_tensor(14, (3, 8))
    xb = x.to(torch.bfloat16)
    t = torch.tensor([0, 1, 2, 0])
    img = normal_tensor(15, (1, 2, 5, 5))
    k = normal_tensor(16, (3, 2, 3, 3))
    q = normal_tensor(17, (1, 4, 8))
    return [
        ("mm", lambda F: F.mm(x, w.t())), ("matmul", lambda F: F.matmul(x, w.t())),
        ("bmm", lambda F: F.bmm(x[None], w.t()[None])), ("linear", lambda F: F.linear(x, w)),
        ("addmm", lambda F: F.addmm(w[:, 0], x[:3], w.t()[:, :3].t().t())),
        ("conv2d", lambda F: F.conv2d(img, k)),
        ("scaled_dot_product_attention", lambda F: F.scaled_dot_product_attention(q, q, q)),
        ("cross_entropy", lambda F: F.cross_entropy(xb, t)), ("nll_loss", lambda F: F.nll_loss(xb, t)),
        ("mse_loss", lambda F: F.mse_loss(xb, xb)),
        ("binary_cross_entropy_with_logits", lambda F: F.binary_cross_entropy_with_logits(xb, xb)),
    ]


def test_autocast_dtypes_match_torch_where_its_cpu_and_cuda_policies_agree():
    import torch.nn.functional as TF

    class T:  # torch's functions under softrep's names
        mm, matmul, bmm, addmm = torch.mm, torch.matmul, torch.bmm, torch.addmm
        linear, conv2d, cross_entropy, nll_loss = TF.linear, TF.conv2d, TF.cross_entropy, TF.nll_loss
        mse_loss, binary_cross_entropy_with_logits = TF.mse_loss, TF.binary_cross_entropy_with_logits
        scaled_dot_product_attention = TF.scaled_dot_product_attention

    for dtype in (torch.bfloat16, torch.float16):
        with torch.autocast("cpu", dtype=dtype):
            for name, f in _autocast_cases():
                assert f(softrep).dtype == f(T).dtype, (name, dtype)


# torch's CUDA policy, which softrep applies on every device (torch's CPU policy
# keeps these in the input's dtype)
CUDA_FLOAT32 = ["softmax", "log_softmax", "layer_norm", "group_norm", "exp", "log", "log1p", "pow", "rsqrt",
                "sum", "logsumexp", "softplus", "tan", "cosh", "sinh", "expm1", "log2", "log10", "reciprocal"]
KEEP = ["sin", "cos", "tanh", "sigmoid", "gelu", "relu", "silu", "mean", "var", "amax", "abs", "neg", "sqrt",
        "erf", "atan"]


def test_autocast_float32_list_and_fall_through():
    xb = normal_tensor(18, (4, 8)).to(torch.bfloat16)
    calls = {"softmax": lambda t: softrep.softmax(t, -1), "log_softmax": lambda t: softrep.log_softmax(t, -1),
             "layer_norm": lambda t: softrep.layer_norm(t, (8,)), "group_norm": lambda t: softrep.group_norm(t, 2),
             "pow": lambda t: softrep.pow(t, 2.0), "logsumexp": lambda t: softrep.logsumexp(t, -1),
             "softplus": lambda t: softrep.softplus(t), "gelu": lambda t: softrep.gelu(t),
             "relu": lambda t: softrep.relu(t), "silu": lambda t: softrep.silu(t)}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for name in CUDA_FLOAT32:
            f = calls.get(name, getattr(softrep, name))
            assert f(xb).dtype == torch.float32, name
        for name in KEEP:
            f = calls.get(name, getattr(softrep, name))
            assert f(xb).dtype == torch.bfloat16, name
        # mixed operands: torch's promotion
        assert softrep.add(xb, xb.float()).dtype == torch.float32
    assert set(CUDA_FLOAT32) <= mixed.AUTOCAST_POLICY["float32"]


def test_autocast_bits_are_the_explicit_casts():
    x = normal_tensor(19, (4, 8))
    w = normal_tensor(20, (3, 8))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = softrep.linear(x, w)
    explicit = softrep.linear(x.to(torch.bfloat16), w.to(torch.bfloat16))
    assert (bits(got) == bits(explicit)).all()


# ---------------------------------------------------------------------------- optimizers


@pytest.mark.parametrize("cls,kw", [(SGD, {"lr": 0.1, "momentum": 0.9}), (Adam, {"lr": 1e-2}),
                                    (AdamW, {"lr": 1e-2, "weight_decay": 0.1})])
def test_master_weights(cls, kw):
    p = torch.nn.Parameter(normal_tensor(21, (50,)).to(torch.bfloat16))
    ref = torch.nn.Parameter(p.detach().float())
    opt, ref_opt = cls([p], **kw), cls([ref], **kw)
    for step in range(4):
        g = normal_tensor(30 + step, (50,)).to(torch.bfloat16)
        p.grad, ref.grad = g, g.float()
        opt.step()
        ref_opt.step()
        master = opt.state[p]["master_param"]
        assert master.dtype == torch.float32 and torch.equal(master, ref.detach())
        assert (bits(p) == ml_round(ref.detach().numpy(), torch.bfloat16)).all()


def test_stochastic_rounding_of_the_update():
    def run(seed, steps=3):
        p = torch.nn.Parameter(normal_tensor(22, (400,)).to(torch.bfloat16))
        q = torch.nn.Parameter(normal_tensor(23, (400,)).to(torch.bfloat16))
        opt = SGD([p, q], lr=1e-3, stochastic_rounding=True, rounding_seed=seed)
        out = []
        for s in range(steps):
            p.grad = q.grad = normal_tensor(40 + s, (400,)).to(torch.bfloat16)
            opt.step()
            m = opt.state[p]["master_param"].numpy()
            lo = ml_round(m, torch.bfloat16)
            b = bits(p)
            # one of the two neighbours of the master (ml_dtypes: nearest, and the next one over)
            up = np.nextafter(np.asarray(lo.astype(np.uint16).view(ml_dtypes.bfloat16), np.float32),
                              np.where(m > lo.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32),
                                       np.float32(np.inf), np.float32(-np.inf)))
            assert ((b == lo) | (b == ml_round(up, torch.bfloat16)) | (b == _next_low(lo, m))).all()
            out.append((bits(p).copy(), bits(q).copy()))
        return out

    a, b, c = run(5), run(5), run(6)
    assert all((x[0] == y[0]).all() and (x[1] == y[1]).all() for x, y in zip(a, b))
    assert any((x[0] != y[0]).any() for x, y in zip(a, c))
    # p and q start differently but get the same gradients: their draws differ (keyed by parameter)
    assert not (np.diff(np.stack([a[0][0], a[1][0]]), axis=0) == 0).all()


def _next_low(lo_bits, m):
    """The bfloat16 neighbour of lo on the side of m (bit arithmetic on the pattern)."""
    lo = lo_bits.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    toward_larger_magnitude = np.abs(m) > np.abs(lo)
    step = np.where(toward_larger_magnitude, 1, -1)
    return (lo_bits + step) & 0xFFFF


# ---------------------------------------------------------------------------- loss scaling


def test_grad_scaler_skips_nonfinite_steps_deterministically():
    p = torch.nn.Parameter(torch.ones(4, dtype=torch.float16))
    opt = SGD([p], lr=0.5)
    scaler = GradScaler(init_scale=2.0**4, growth_interval=2)
    loss = softrep.sum(softrep.mul(p, torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float16)))
    scaled = scaler.scale(loss)
    assert float(scaled) == float(loss) * 16
    scaled.backward()
    assert scaler.step(opt) is None or True
    assert torch.equal(p.detach(), torch.tensor([0.5, 0.0, -0.5, -1.0], dtype=torch.float16))
    scaler.update()
    assert scaler.get_scale() == 16.0
    # an inf gradient: the step is skipped and the scale halves
    p.grad = torch.tensor([1.0, float("inf"), 0.0, 0.0], dtype=torch.float16)
    before = p.detach().clone()
    assert scaler.step(opt) is None
    assert torch.equal(p.detach(), before)
    scaler.update()
    assert scaler.get_scale() == 8.0
    # growth after growth_interval good steps
    for _ in range(2):
        p.grad = torch.zeros(4, dtype=torch.float16)
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 16.0
    state = scaler.state_dict()
    other = GradScaler()
    other.load_state_dict(state)
    assert other.get_scale() == 16.0


# ---------------------------------------------------------------------------- golden, simulator


def _golden_outputs():
    out = {}
    for name, dtype in LOW.items():
        x = random_low(50, 256, dtype)
        y = random_low(51, 256, dtype)
        for op in ("add", "mul", "div", "sqrt"):
            out[f"{op}.{name}"] = getattr(softrep, op)(*((x, y) if op != "sqrt" else (x,)))
        for fn in ("exp", "log", "sin", "tanh", "sigmoid", "erf"):
            out[f"{fn}.{name}"] = M.FUNCTIONS[fn].op(x)
        a = normal_tensor(52, (6, 40)).to(dtype)
        b = normal_tensor(53, (40, 5)).to(dtype)
        out[f"mm.{name}"] = softrep.mm(a, b)
        out[f"softmax.{name}"] = softrep.softmax(a, 1)
        out[f"sum.{name}"] = softrep.sum(a, 1)
        with torch.autocast("cpu", dtype=dtype):
            out[f"autocast.linear.{name}"] = softrep.linear(a.float(), b.float().t())
    return out


def test_golden():
    for key, t in _golden_outputs().items():
        golden_check("mixed_precision.json", key, t.view(torch.int16) if t.dtype in NP_LOW else t)


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    sim = _golden_outputs()
    p = torch.nn.Parameter(normal_tensor(54, (64,)).to(torch.bfloat16))
    opt = SGD([p], lr=1e-3, stochastic_rounding=True, rounding_seed=3)
    p.grad = normal_tensor(55, (64,)).to(torch.bfloat16)
    opt.step()
    sim_p = p.detach().clone()
    backend("cpu")
    ref = _golden_outputs()
    for key in sim:
        assert torch.equal(sim[key].view(torch.int16) if sim[key].dtype in NP_LOW else sim[key],
                           ref[key].view(torch.int16) if ref[key].dtype in NP_LOW else ref[key]), key
    p = torch.nn.Parameter(normal_tensor(54, (64,)).to(torch.bfloat16))
    opt = SGD([p], lr=1e-3, stochastic_rounding=True, rounding_seed=3)
    p.grad = normal_tensor(55, (64,)).to(torch.bfloat16)
    opt.step()
    assert (bits(p) == bits(sim_p)).all()


def test_dropout_rounds_once_in_the_format():
    x = random_low(60, 4000, torch.bfloat16, finite=True).requires_grad_()
    out = softrep.dropout(x, 0.3, generator=softrep.Generator(4))
    noise = softrep.dropout(torch.ones(4000), 0.3, generator=softrep.Generator(4))  # same draw: the float32 noise
    want = mpfr_bits([x.detach().to(torch.float64).numpy(), noise.to(torch.float64).numpy()], torch.bfloat16,
                     lambda a, b: a * b)
    assert out.dtype == torch.bfloat16 and (bits(out) == want).all()
    g = random_low(61, 4000, torch.bfloat16, finite=True)
    out.backward(g)
    want = mpfr_bits([g.to(torch.float64).numpy(), noise.to(torch.float64).numpy()], torch.bfloat16,
                     lambda a, b: a * b)
    assert (bits(x.grad) == want).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_product_kernels_widen_and_narrow_every_pattern_exactly(dtype):
    """x (every 16-bit pattern, an (n, 1) matrix) times [[1]]: fma(x, 1, +0) = x,
    except -0 + +0 = +0 and NaN -> the canonical NaN; through the CPU kernels that
    widen while packing and narrow while finishing."""
    x = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(dtype).reshape(-1, 1)
    got = bits(softrep.mm(x, torch.ones(1, 1, dtype=dtype)).reshape(-1))
    want = bits(x.reshape(-1))
    want[want == 0x8000] = 0
    want[torch.isnan(x.reshape(-1)).numpy()] = CANONICAL[dtype]
    assert (got == want).all()
    # and as the right operand, with a float32 reference for the widening
    y = softrep.mm(torch.ones(1, 1, dtype=dtype), x.reshape(1, -1))
    assert (bits(y.reshape(-1)) == want).all()
