"""The light launch path of small tensors and the `out=` argument.

Small launches run on the calling thread (serial elementwise kernels called on
addresses, the direct product, parallel kernels with one thread); each must
give the bits of the parallel path, which the other test files check against
MPFR and the golden vectors.  `out=` follows torch's semantics.
"""

import warnings

import numpy as np
import pytest
import torch

import softrep
from softrep.cpu import launch as cpu_launch
from softrep.cpu import linalg as cpu_linalg
from softrep.cpu import reduce as cpu_reduce
from softrep.ops import backend
from softrep.ops import elementwise as E
from softrep.ops import summation
from softrep.ops import math as M
from softrep.primitives.fpenv import ieee_state


def _bits(t):
    t = t.detach().contiguous()
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int64)


def _special(n, dtype, seed):
    """Random values with zeros of both signs, infinities, NaNs and subnormals mixed in."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64) * torch.exp2(torch.randint(-30, 30, (n,), generator=g))
    tiny = torch.finfo(dtype).tiny
    specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), tiny / 4, -tiny / 8, 1.0],
                            dtype=torch.float64)
    x[: min(n, specials.numel())] = specials[: min(n, specials.numel())]
    return x.to(dtype)


def _parallel(run, tensors):
    """The launcher's parallel kernel on `tensors`, called directly."""
    out = torch.empty_like(tensors[0])
    with ieee_state():
        run(out.numpy().reshape(-1), *(t.numpy().reshape(-1) for t in tensors))
    return out


# 1, a vector's width, odd sizes, and both sides of the serial limit
SIZES = [1, 7, 16, 1000, cpu_launch.SERIAL_MAX, cpu_launch.SERIAL_MAX + 3]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,rounding", [("add", "nearest"), ("sub", "up"), ("mul", "down"), ("div", "zero"),
                                           ("fma", "nearest"), ("sqrt", "up")])
def test_elementwise_light_path_gives_the_parallel_bits(name, rounding, dtype, n):
    spec = E.SPECS[name]
    inputs = [_special(n, dtype, seed) for seed in range(len(spec.arg_names))]
    got = getattr(softrep, name)(*inputs, rounding=rounding)
    run = spec.launchers[E.SUFFIX[rounding]][0]
    assert torch.equal(_bits(got), _bits(_parallel(run, inputs)))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "cos", "erf"])
def test_math_light_path_gives_the_parallel_bits(name, n):
    x = _special(n, torch.float32, 5)
    if name == "log":
        x = x.abs()
    got = getattr(softrep, name)(x)
    run = E.launchers(M.FUNCTIONS[name].kernel, 1)[0]
    assert torch.equal(_bits(got), _bits(_parallel(run, [x])))


@pytest.mark.parametrize("n", [7, 1000, cpu_launch.SERIAL_MAX + 3])
@pytest.mark.parametrize("name", ["add", "mul", "div", "sqrt"])
def test_recorded_ops_run_the_serial_kernel_with_the_parallel_bits(name, n, monkeypatch):
    # an input requiring grad: the autograd Function records the op, and its
    # forward (grad mode off) runs the serial kernel up to SERIAL_MAX elements
    spec = E.SPECS[name]
    inputs = [_special(n, torch.float32, seed) for seed in range(len(spec.arg_names))]
    serial = []
    launch = cpu_launch.launch_serial
    monkeypatch.setattr(cpu_launch, "launch_serial", lambda *a: serial.append(a) or launch(*a))
    recorded = [inputs[0].clone().requires_grad_(), *inputs[1:]]
    got = getattr(softrep, name)(*recorded)
    assert got.grad_fn is not None
    assert bool(serial) == (n <= cpu_launch.SERIAL_MAX)
    assert torch.equal(_bits(got), _bits(_parallel(spec.launchers["rn"][0], inputs)))


def test_light_path_only_where_autograd_has_nothing_to_record():
    x = torch.randn(10, requires_grad=True)
    y = torch.randn(10)
    assert backend.light_dtype([x, y]) is None
    out = softrep.mul(x, y)
    assert out.grad_fn is not None
    out.sum().backward()
    assert torch.equal(x.grad, y)
    with torch.no_grad():
        assert backend.light_dtype([x, y]) == np.dtype(np.float32)
        assert softrep.mul(x, y).grad_fn is None
    # other shapes, layouts, dtypes, devices and Python numbers take the general path
    assert backend.light_dtype([y, torch.randn(1)]) is None
    assert backend.light_dtype([torch.randn(4, 3).t(), torch.randn(3, 4)]) is None
    assert backend.light_dtype([y, y.double()]) is None
    assert backend.light_dtype([y.to("meta"), y.to("meta")]) is None
    assert backend.light_dtype([1.0, y]) is None


def test_light_path_under_vmap_and_grad_transforms():
    x, y = torch.randn(3, 5, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    got = torch.func.vmap(softrep.mul)(x, y)
    assert torch.equal(got, softrep.mul(x, y))
    g = torch.func.grad(lambda a: softrep.sum(softrep.mul(a, y[0])))(x[0])
    assert torch.equal(g, y[0])


def test_function_apply_matches_torchs_apply(monkeypatch):
    """softrep's Functions bind their arguments once per class
    (backend.Function.apply); the graph and the gradients, first and second
    order, are those of torch's own apply, which binds them at every call."""
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randn(6, 4, dtype=torch.float64)

    def grads():
        out = softrep.sum(softrep.mul(softrep.mul(x, x), y))
        (gx,) = torch.autograd.grad(out, x, create_graph=True)
        (ggx,) = torch.autograd.grad(softrep.sum(gx), x)
        return out, gx, ggx

    out, gx, ggx = grads()
    assert type(softrep.mul(x, y).grad_fn).__name__ == "ElementwiseBackward"
    calls = []
    torch_apply = torch.autograd.Function.apply.__func__

    def counted(cls, *args, **kwargs):
        calls.append(cls)
        return torch_apply(cls, *args, **kwargs)

    monkeypatch.setattr(backend.Function, "apply", classmethod(counted))
    ref = grads()
    assert calls  # the reference really went through torch's apply
    assert all(torch.equal(a, b) for a, b in zip((out, gx, ggx), ref))


class _Defaults(backend.Function):
    @staticmethod
    def forward(x, scale=2.0, shift=None):
        return x * scale if shift is None else x * scale + shift

    seen = []

    @staticmethod
    def setup_context(ctx, inputs, output):
        _Defaults.seen.append(inputs)
        ctx.inputs = inputs

    @staticmethod
    def backward(ctx, g):
        x, scale, shift = ctx.inputs
        return g * scale, None, None


@pytest.mark.parametrize("args", [(), (3.0,), (3.0, 1.0)])
def test_function_apply_fills_in_defaults_as_torch_does(args):
    """setup_context sees every forward parameter, defaults included, and a
    wrong argument count raises torch's error."""
    x = torch.randn(3, requires_grad=True)
    _Defaults.seen.clear()
    out = _Defaults.apply(x, *args)
    ref = torch.autograd.Function.apply.__func__(_Defaults, x, *args)
    full = (x, *args, *(2.0, None)[len(args):])
    assert len(_Defaults.seen) == 2 and _Defaults.seen[0] == _Defaults.seen[1] == full
    assert torch.equal(out, ref)
    (g,) = torch.autograd.grad(out.sum(), x)
    assert torch.equal(g, torch.full_like(x, full[1]))
    with pytest.raises(TypeError):
        _Defaults.apply(x, 1.0, 2.0, 3.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 7), (2, 17, 33), (1, 40, 70)])
@pytest.mark.parametrize("addend", [False, True])
def test_direct_product_gives_the_packed_bits(shape, dtype, addend, monkeypatch):
    m, k, n = shape
    g = torch.Generator().manual_seed(m * k * n)
    a = torch.randn(2, m, k, generator=g, dtype=dtype).numpy()
    b = torch.randn(2, k, n, generator=g, dtype=dtype).numpy()
    b[0, 0, 0] = np.nan
    c = torch.randn(2, m, n, generator=g, dtype=dtype).numpy() if addend else None
    assert 2 * m * n * k <= cpu_linalg.SERIAL_FMAS
    direct = np.empty((2, m, n), a.dtype)
    with ieee_state():
        cpu_linalg.bmm(direct, a, b, c)
        monkeypatch.setattr(cpu_linalg, "SERIAL_FMAS", 0)
        packed = np.empty((2, m, n), a.dtype)
        cpu_linalg.bmm(packed, a, b, c)
    assert np.array_equal(direct.view(np.uint8), packed.view(np.uint8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("x_shape,w_shape,bias", [
    ((64, 64), (10, 64), True),  # one row per sample: the outer-product tree
    ((5, 3, 6), (4, 6), True),  # rows per sample: the tree product, the sums of rows
    ((7, 6), (4, 6), False),
    ((6,), (4, 6), True),  # one sample
    ((3, 2, 6), (6,), True),  # a 1-D weight: one output feature, a 0-d bias
], ids=["rows", "tokens", "no-bias", "1-d-input", "1-d-weight"])
@pytest.mark.parametrize("needs_x", [True, False])
def test_linear_backward_on_the_light_kernels_gives_the_separate_paths_bits(x_shape, w_shape, bias, needs_x, dtype,
                                                                            monkeypatch):
    """linear's backward at small sizes calls the serial kernels itself, once
    checked (`products._linear_grads_light`); the gradients are the bits of
    the separate paths (grad_x's product, the weight's tree product, the
    bias's sums), which tests/test_split.py checks against MPFR."""
    from softrep.ops import products

    n_x = int(np.prod(x_shape))
    x = _special(n_x, dtype, 1).reshape(x_shape).requires_grad_(needs_x)
    w = torch.nn.Parameter(_special(int(np.prod(w_shape)), dtype, 2).reshape(w_shape))  # as a module holds it
    b = _special(w_shape[0] if len(w_shape) == 2 else 1, dtype, 3).reshape(w_shape[:1] if len(w_shape) == 2 else ())
    b = b.requires_grad_() if bias else None
    out_shape = x_shape[:-1] + w_shape[:-1]
    g = _special(int(np.prod(out_shape)), dtype, 4).reshape(out_shape)
    if len(out_shape) == 3:  # a gradient in another layout, as attention's head split returns one
        g = g.transpose(0, 1).contiguous().transpose(0, 1)
    params = tuple(p for p in (x, w, b) if p is not None and p.requires_grad)

    taken = []
    light = products._linear_grads_light
    monkeypatch.setattr(products, "_linear_grads_light", lambda *a: taken.append(light(*a)) or taken[-1])
    got = torch.autograd.grad(softrep.linear(x, w, b), params, g)
    assert taken and taken[-1] is not None
    monkeypatch.setattr(products, "_linear_grads_light", lambda *a: None)
    want = torch.autograd.grad(softrep.linear(x, w, b), params, g)
    for a, c in zip(got, want):
        assert a.shape == c.shape and torch.equal(_bits(a), _bits(c))


_PRODUCT_CASES = [
    ((4, 2, 5, 3), (4, 2, 3, 6), False),  # attention's scores and outputs: matmul over two batch dims
    ((4, 2, 5, 3), (4, 2, 6, 3), True),  # q @ k^T: b the transpose of a contiguous tensor
    ((4, 2, 5, 3), (4, 2, 6, 3), "heads"),  # q @ k^T of heads split from (N, L, H, D): copied first
    ((3, 7, 1), (3, 1, 4), False),  # K = 1
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op,a_shape,b_shape,transposed",
                         [("matmul", *case) for case in _PRODUCT_CASES]
                         + [("bmm", (8, 5, 3), (8, 3, 6), False), ("bmm", (8, 5, 3), (8, 6, 3), True),
                            ("bmm", (3, 7, 1), (3, 1, 4), False)],
                         ids=["matmul-batched", "matmul-b-transposed", "matmul-heads", "matmul-k-1", "bmm-batched",
                              "bmm-b-transposed", "bmm-k-1"])
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_product_backward_on_the_light_kernel_gives_the_separate_paths_bits(a_shape, b_shape, transposed, needs, op,
                                                                            dtype, monkeypatch):
    """matmul's and bmm's backward at small sizes run both products on the
    serial kernel after one check (`products._product_grads_light`), the
    transposes read in place: the bits of the two separate products."""
    from softrep.ops import products

    a = _special(int(np.prod(a_shape)), dtype, 5).reshape(a_shape)
    b0 = _special(int(np.prod(b_shape)), dtype, 6).reshape(b_shape)
    if transposed == "heads":  # (N, L, H, D) tensors seen as (N, H, L, D), b then transposed
        a = a.transpose(-3, -2).contiguous().transpose(-3, -2)
        b0 = b0.transpose(-3, -2).contiguous().transpose(-3, -2)
    a = a.requires_grad_(needs[0])
    b = (b0.transpose(-1, -2) if transposed else b0).requires_grad_(needs[1])
    fn = softrep.matmul if op == "matmul" else softrep.bmm
    out_shape = a_shape[:-1] + b.shape[-1:]
    g = _special(int(np.prod(out_shape)), dtype, 7).reshape(out_shape)
    params = tuple(t for t, need in zip((a, b), needs) if need)

    taken = []
    light = products._product_grads_light
    monkeypatch.setattr(products, "_product_grads_light", lambda *args: taken.append(light(*args)) or taken[-1])
    got = torch.autograd.grad(fn(a, b), params, g)
    assert taken and taken[-1] is not None
    monkeypatch.setattr(products, "_product_grads_light", lambda *args: None)
    want = torch.autograd.grad(fn(a, b), params, g)
    for x, y in zip(got, want):
        assert x.shape == y.shape and torch.equal(_bits(x), _bits(y))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fn,shape,affine", [
    ("layer_norm", (4, 32, 16), True),  # groups of 8 float32 rows
    ("layer_norm", (13, 24), True),  # groups, then 5 rows one at a time
    ("layer_norm", (6, 5, 7), False),  # rows of 7: one at a time
    ("rms_norm", (3, 8, 4, 8), True),  # two normalised dims
    ("rms_norm", (9, 16), False),
], ids=["groups", "groups-and-tail", "odd-rows", "rms-2-dims", "rms-no-weight"])
def test_small_layer_norms_on_the_serial_kernels_give_the_launchers_bits(fn, shape, affine, dtype, monkeypatch):
    """layer_norm's and rms_norm's row passes of at most SERIAL_WORK elements
    run on the calling thread through addresses (`serial_layer_norm`,
    `serial_layer_norm_grad`); forward and backward give the launchers'
    bits, which tests/test_normalization.py checks against the separate ops."""
    from softrep.cpu import normalization as cpu_normalization

    normalized = shape[2:] if fn == "rms_norm" and len(shape) == 4 else shape[-1:]
    # the specials in the first row only: a NaN in the weight would make every row's sums NaN
    x = _special(int(np.prod(shape)), dtype, 8).reshape(shape).requires_grad_()
    generator = torch.Generator().manual_seed(9)
    w = torch.nn.Parameter(torch.randn(normalized, generator=generator, dtype=dtype)) if affine else None
    b = torch.nn.Parameter(torch.randn(normalized, generator=generator, dtype=dtype)) \
        if affine and fn == "layer_norm" else None
    g = _special(int(np.prod(shape)), dtype, 11).reshape(shape)
    params = tuple(t for t in (x, w, b) if t is not None)

    def run():
        y = getattr(softrep.nn.functional, fn)(x, normalized, *(w, b)[:1 if fn == "rms_norm" else 2])
        return (y, *torch.autograd.grad(y, params, g))

    calls = []
    for name in ("serial_layer_norm", "serial_layer_norm_grad"):
        kernel = getattr(cpu_normalization, name)
        monkeypatch.setattr(cpu_normalization, name, lambda *a, kernel=kernel, name=name: calls.append(name) or kernel(*a))
    got = run()
    assert calls == ["serial_layer_norm", "serial_layer_norm_grad"]
    monkeypatch.setattr(backend, "SERIAL_WORK", -1)  # the launchers, on all threads
    want = run()
    assert calls == ["serial_layer_norm", "serial_layer_norm_grad"]
    for a, c in zip(got, want):
        assert a.shape == c.shape and torch.equal(_bits(a), _bits(c))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", [((64, 70), (70,)), ((64, 70), (64, 1)), ((4, 6, 5, 7), (6, 5, 1)),
                                    ((7, 5, 3), ()), ((7, 5, 3), 0.25)],
                         ids=["bias", "row-statistic", "middle-dims", "0-d-strided", "number-strided"])
def test_small_broadcasts_on_the_serial_kernel_give_the_parallel_bits(shapes, op, dtype, monkeypatch):
    """A broadcast second operand of a small op is read in place by the serial
    kernel through addresses (`launch_broadcast_serial`), with the bits of
    the parallel launch; so is a 0-d tensor or a Python number against a
    strided tensor (attention's scale of its heads), which the same-shape
    light path does not take."""
    shape, small = shapes
    x = _special(int(np.prod(shape)), dtype, 12).reshape(shape)
    if shape == (7, 5, 3):
        x = x.transpose(0, 2)
    y = small if isinstance(small, float) else _special(max(1, int(np.prod(small))), dtype, 13).reshape(small)
    calls = []
    launch = cpu_launch.launch_broadcast_serial
    monkeypatch.setattr(cpu_launch, "launch_broadcast_serial", lambda *a: calls.append(a) or launch(*a))
    got = getattr(softrep, op)(x.requires_grad_(), y)  # recorded: not the same-shape light path
    assert len(calls) == 1
    for spec in E.SPECS.values():
        for run in spec.broadcast_launchers.values():
            monkeypatch.setattr(run, "serial_max", -1)
    want = getattr(softrep, op)(x, y)
    assert len(calls) == 1
    assert torch.equal(_bits(got), _bits(want))


@pytest.mark.parametrize("op", [lambda x: softrep.sum(x, dim=1), lambda x: softrep.amax(x, dim=0),
                                lambda x: softrep.mm(x[:, :20], x[:, :20].t()), lambda x: softrep.mul(x, 3.0)],
                         ids=["sum", "amax", "mm", "mul-number"])
def test_one_thread_launches_give_the_parallel_bits(op, monkeypatch):
    x = torch.randn(40, 300)
    small = op(x)  # at most SERIAL_WORK: one thread
    monkeypatch.setattr(backend, "SERIAL_WORK", -1)
    monkeypatch.setattr(cpu_launch, "SERIAL_MAX", -1)
    monkeypatch.setattr(cpu_reduce, "SERIAL_MAX", -1)  # the reductions' light path reads its own name
    monkeypatch.setattr(cpu_linalg, "SERIAL_FMAS", -1)
    for spec in E.SPECS.values():
        for cpu_run, _ in spec.launchers.values():
            monkeypatch.setattr(cpu_run, "serial_max", -1)
    assert torch.equal(_bits(small), _bits(op(x)))


# --------------------------------------------------------------------------- out=


CALLS = {
    "add": (lambda a, b, **kw: softrep.add(a, b, **kw), lambda a, b: a + b),
    "mul-up": (lambda a, b, **kw: softrep.mul(a, b, rounding="up", **kw), None),
    "sqrt": (lambda a, b, **kw: softrep.sqrt(a.abs(), **kw), lambda a, b: torch.sqrt(a.abs())),
    "exp": (lambda a, b, **kw: softrep.exp(a, **kw), None),
    "hypot": (lambda a, b, **kw: softrep.hypot(a, b, **kw), None),
    "mm": (lambda a, b, **kw: softrep.mm(a, b[:8].t(), **kw), None),
    "add-bfloat16": (lambda a, b, **kw: softrep.add(a, b, format="bfloat16", **kw), None),
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("size", [6, 50_000])
def test_out_gets_the_result_and_is_returned(name, size):
    call, _ = CALLS[name]
    a, b = torch.randn(size, 6), torch.randn(size, 6)
    expected = call(a, b)
    out = torch.empty(expected.shape)
    assert call(a, b, out=out) is out
    assert torch.equal(_bits(out), _bits(expected))


@pytest.mark.parametrize("name", list(CALLS))
def test_out_is_resized_as_torch_does(name):
    call, _ = CALLS[name]
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    expected = call(a, b)
    empty = torch.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(a, b, out=empty)  # no elements: resized silently
    assert empty.shape == expected.shape and torch.equal(_bits(empty), _bits(expected))
    wrong = torch.empty(3)
    with pytest.warns(UserWarning, match="resized"):
        call(a, b, out=wrong)
    assert wrong.shape == expected.shape and torch.equal(_bits(wrong), _bits(expected))


@pytest.mark.parametrize("name", list(CALLS))
def test_out_errors_name_the_argument(name):
    call, _ = CALLS[name]
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    shape = call(a, b).shape
    with pytest.raises(TypeError, match="'out'.*float64"):
        call(a, b, out=torch.empty(shape, dtype=torch.float64))
    with pytest.raises(TypeError, match="'out' must be a torch.Tensor"):
        call(a, b, out=np.empty((4, 6), np.float32))
    with pytest.raises(ValueError, match="'out' is on meta"):
        call(a, b, out=torch.empty(shape, device="meta"))
    with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
        call(a.requires_grad_(), b, out=torch.empty(shape))
    with torch.no_grad():  # as in torch: no error where nothing is differentiated
        call(a, b, out=torch.empty(shape))


def test_out_aliasing_an_input_and_strided_out():
    x, y = torch.randn(5, 7), torch.randn(5, 7)
    expected = softrep.add(x, y)
    x2 = x.clone()
    assert softrep.add(x2, y, out=x2) is x2  # the same elements: written in place
    assert torch.equal(x2, expected)
    t = torch.empty(7, 5).t()  # not contiguous
    assert softrep.add(x, y, out=t) is t and torch.equal(t, expected)
    # out overlapping the input shifted by one element: computed aside, then copied
    buf = torch.randn(36)
    src = buf[:35].clone()
    softrep.exp(buf[:35], out=buf[1:])
    assert torch.equal(buf[1:], softrep.exp(src))
    # mm into one of its own operands
    a = torch.randn(6, 6)
    expected = softrep.mm(a, a)
    softrep.mm(a, a, out=a)
    assert torch.equal(a, expected)


@pytest.mark.parametrize("call", [lambda a, b, **kw: softrep.add(a, b, **kw),
                                  lambda a, b, **kw: softrep.div(a, 3.0, rounding="up", **kw),
                                  lambda a, b, **kw: softrep.exp(a, **kw),
                                  lambda a, b, **kw: softrep.hypot(a, b, **kw)])
def test_small_out_takes_the_light_path(call, monkeypatch):
    """An `out` of the operands' shape, dtype and layout, apart from them or
    the very same elements as one, is written by the serial kernel, without
    the general path's checks; any other `out` goes to the general path."""
    from softrep.ops import outputs
    a, b = torch.randn(3, 5), torch.randn(3, 5)
    expected = call(a, b)
    general = []
    prepare = outputs.prepare
    monkeypatch.setattr(outputs, "prepare", lambda *args: (general.append(1), prepare(*args))[1])
    out = torch.empty(3, 5)
    assert call(a, b, out=out) is out and torch.equal(_bits(out), _bits(expected))
    a2 = a.clone()
    written = []
    launch = cpu_launch.launch_serial
    monkeypatch.setattr(cpu_launch, "launch_serial", lambda run, dtype, to, *rest: (written.append(to),
                                                                                       launch(run, dtype, to, *rest)))
    assert call(a2, b, out=a2) is a2 and torch.equal(_bits(a2), _bits(expected))
    # the kernel wrote a temporary, not its own input (which would cost it its vector loop)
    assert written and a2.data_ptr() not in written
    assert not general
    buf = torch.cat([a.reshape(-1), torch.zeros(1)])  # out = the input shifted by one element
    shifted = buf[1:].view(3, 5)
    assert call(buf[:15].view(3, 5), b, out=shifted) is shifted and torch.equal(_bits(shifted), _bits(expected))
    assert general == [1]
    with pytest.raises(TypeError, match="'out' has dtype torch.float64"):
        call(a, b, out=torch.empty(3, 5, dtype=torch.float64))


@pytest.mark.parametrize("call", [lambda a, b, **kw: softrep.add(a, b, **kw),
                                  lambda a, b, **kw: softrep.fma(a, b, a, rounding="down", **kw),
                                  lambda a, b, **kw: softrep.exp(a, **kw),
                                  lambda a, b, **kw: softrep.hypot(a, b, **kw)])
def test_large_same_shape_calls_take_the_light_path(call, monkeypatch):
    """Beyond the serial kernel's size, same-shape contiguous operands go to
    the parallel launcher straight from the light path (no general path),
    with the general path's bits; an `out` that is an input is written in
    place.  A Python number among tensors of more than a quarter of the
    number buffers' elements takes the general path."""
    n = cpu_launch.SERIAL_MAX * 2 + 5
    a, b = _special(n, torch.float32, 11), _special(n, torch.float32, 12)
    executed = []
    execute = backend.execute
    monkeypatch.setattr(backend, "execute", lambda *args, **kw: (executed.append(1), execute(*args, **kw))[1])
    written = []
    launch = E._launch_parallel
    monkeypatch.setattr(E, "_launch_parallel", lambda run, to, operands: (written.append(to.data_ptr()),
                                                                           launch(run, to, operands)))
    general = call(torch.stack([a, b], 1)[:, 0], b)  # a strided operand: the general path
    assert executed == [1] and not written
    assert torch.equal(_bits(call(a, b)), _bits(general))
    a2 = a.clone()
    assert call(a2, b, out=a2) is a2 and torch.equal(_bits(a2), _bits(general))
    assert len(written) == 2 and written[1] == a2.data_ptr() and executed == [1]
    assert torch.equal(_bits(softrep.mul(a, 3.0)), _bits(a * 3.0)) and executed == [1] and len(written) == 3
    big = torch.cat([a] * 10)
    assert big.numel() > E._NUMBER_ELEMENTS // 4
    assert torch.equal(_bits(softrep.mul(big, 3.0)), _bits(big * 3.0)) and executed == [1, 1] and len(written) == 3


def test_mean_divides_in_the_sum_kernel(monkeypatch):
    """A small mean over trailing dims is one serial kernel, its divisor the
    number of reduced elements; its bits are those of div_rn(sum, n)
    (computed here by torch's IEEE division) on the light and general paths."""
    from softrep.cpu import reduce as cpu_reduce
    calls = []
    serial_sum = cpu_reduce.serial_sum
    monkeypatch.setattr(cpu_reduce, "serial_sum", lambda *a: (calls.append(a[5:]), serial_sum(*a))[1])
    x = _special(6 * 300, torch.float32, 8).reshape(6, 300)
    light = softrep.mean(x, 1)
    assert calls == [(300,)]
    assert torch.equal(_bits(light), _bits(torch.div(softrep.sum(x, 1), 300.0)))
    big = _special(40 * 1000, torch.float32, 9).reshape(40, 1000)  # beyond the light path's size
    assert torch.equal(_bits(softrep.mean(big, 1)), _bits(torch.div(softrep.sum(big, 1), 1000.0)))


# --------------------------------------------------------------------------- reductions, small mm, Python numbers


def _general(fn, *tensors):
    """fn on the general path: inputs that require grad take the autograd Function."""
    leaves = [t.clone().requires_grad_() if isinstance(t, torch.Tensor) else t for t in tensors]
    return fn(*leaves).detach()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,dim,keepdim", [((10,), None, False), ((), None, False), ((3, 300), 1, True),
                                               ((4, 5, 6), (1, 2), False), ((2, 129), -1, False),
                                               ((7, 3), 0, False), ((5, 4), (0, 1), True)])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_small_reductions_take_the_light_path_with_the_general_bits(op, shape, dim, keepdim, dtype):
    x = _special(max(1, int(np.prod(shape))), dtype, 3).reshape(shape)
    fn = getattr(softrep, op)
    kwargs = {"keepdim": keepdim} if dim is None else {"dim": dim, "keepdim": keepdim}
    got = fn(x, **kwargs)
    want = _general(lambda t: fn(t, **kwargs), x)
    assert got.shape == want.shape and torch.equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,dims,keepdim", [((70000,), (0,), False), ((1000, 64), (1,), True),
                                                ((40, 9, 256), (1, 2), False), ((33, 1000), (1,), False)])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_larger_reductions_over_trailing_dims_skip_the_general_path(op, shape, dims, keepdim, dtype, monkeypatch):
    """Beyond the serial kernels' size, a sum, mean, amax or amin over trailing
    dims of a plain contiguous CPU tensor calls the general path's parallel
    kernel on views (no `backend.execute`, no autograd Function), with its
    bits: the rows of `as_rows` summed by `sum_rows`, divided by n for the
    mean; for amax and amin, the serial kernel's result on the same rows."""
    from softrep.cpu import reduce as cpu_reduce
    x = _special(int(np.prod(shape)), dtype, 4).reshape(shape)
    n = int(np.prod([shape[d] for d in dims]))
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape)) if keepdim else \
        tuple(s for d, s in enumerate(shape) if d not in dims)
    if op in ("amax", "amin"):
        want = torch.empty(out_shape, dtype=dtype)
        with ieee_state():
            cpu_reduce.serial_extreme(backend.light_dtype((x,)), want.data_ptr(), x.data_ptr(), x.numel() // n, n,
                                      op == "amax")
    else:
        want = summation.sum_rows(summation.as_rows(x, dims)).reshape(out_shape)
    if op == "mean":
        want = torch.div(want, float(n))  # IEEE division, as div_rn
    executed = []
    execute = backend.execute
    monkeypatch.setattr(backend, "execute", lambda *args, **kw: (executed.append(1), execute(*args, **kw))[1])
    got = getattr(softrep, op)(x, dims, keepdim=keepdim)
    assert got.shape == want.shape and torch.equal(_bits(got), _bits(want)) and not executed


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,dim,keepdim", [((7, 3), 0, False), ((2, 5), 0, True), ((16, 32, 32), 0, False),
                                               ((4, 8, 6), (0, 1), True), ((129, 5), 0, False),
                                               ((300, 7), 0, False), ((2, 1000, 3), (0, 1), False)])
def test_sums_over_leading_dims_take_the_column_kernel_with_the_general_bits(shape, dim, keepdim, dtype, monkeypatch):
    # specials spread over the columns (NaN with a payload of its own, both
    # zeros, infinities of both signs, subnormals); more than BLOCK rows
    # exercise the tree over the blocks
    n = int(np.prod(shape))
    x = _special(n, dtype, 5)[torch.randperm(n, generator=torch.Generator().manual_seed(6))].reshape(shape)
    flat = x.view(-1)
    flat[n // 2] = torch.tensor(0x7FC01234 if dtype == torch.float32 else 0x7FF8000000001234,
                                dtype=torch.int32 if dtype == torch.float32 else torch.int64).view(dtype)
    calls = []
    column_sum = summation.light_column_sum
    monkeypatch.setattr(summation, "light_column_sum", lambda *a: calls.append(1) or column_sum(*a))
    got = softrep.sum(x, dim, keepdim=keepdim)
    assert calls
    monkeypatch.setattr(summation, "light_column_sum", lambda *a: None)
    want = softrep.sum(x, dim, keepdim=keepdim)
    assert got.shape == want.shape and torch.equal(_bits(got), _bits(want))
    if dim == 0 and not keepdim:  # the gradient of an operand broadcast over dim 0 takes the kernel too
        monkeypatch.setattr(summation, "light_column_sum", column_sum)
        assert torch.equal(_bits(summation.sum_to_shape(x, shape[1:])), _bits(want))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("m,k,n", [(2, 5, 2), (1, 1, 1), (3, 0, 4), (16, 16, 16), (5, 7, 3), (17, 16, 16)])
def test_small_mm_takes_the_light_path_with_the_general_bits(m, k, n, dtype):
    a = _special(max(m * k, 1), dtype, 4)[: m * k].reshape(m, k)
    b = _special(max(k * n, 1), dtype, 5)[: k * n].reshape(k, n)
    got = softrep.mm(a, b)
    want = _general(softrep.mm, a, b)
    assert got.shape == (m, n) and torch.equal(_bits(got), _bits(want))


def test_light_reductions_and_mm_are_the_light_kernels(monkeypatch):
    """The light kernels do run (the general path would give the same bits, so
    the tests above alone could not tell)."""
    calls = []
    from softrep.cpu import reduce as cpu_reduce
    for module, name in ((cpu_reduce, "serial_sum"), (cpu_reduce, "serial_extreme"),
                         (cpu_linalg, "serial_product")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, original=original, name=name: (calls.append(name), original(*a)))
    softrep.sum(torch.ones(4))
    softrep.amax(torch.ones(2, 3), 1)
    softrep.mm(torch.ones(2, 2), torch.ones(2, 2))
    softrep.sum(torch.ones(2, 3), 0)  # not trailing dims: the general path
    assert calls == ["serial_sum", "serial_extreme", "serial_product"]
    # autograd records: the Function's forward (grad mode off) runs the same serial kernels
    recorded = [softrep.sum(torch.ones(4, requires_grad=True)), softrep.amax(torch.ones(2, 3, requires_grad=True), 1),
                softrep.mm(torch.ones(2, 2, requires_grad=True), torch.ones(2, 2))]
    assert all(r.grad_fn is not None for r in recorded)
    assert calls[3:] == ["serial_sum", "serial_extreme", "serial_product"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("number", [2.0, 3, 0.1, -0.0, 1e-310, 3.4028235677973366e38, 1e300, float("inf"),
                                    float("nan")])
@pytest.mark.parametrize("name", ["add", "mul", "div", "sub"])
def test_python_numbers_on_the_light_path_give_the_general_bits(name, number, dtype):
    x = _special(50, dtype, 6)
    fn = getattr(softrep, name)
    for args in ((x, number), (number, x)):
        got = fn(*args)
        want = _general(fn, *args)
        assert torch.equal(_bits(got), _bits(want)), args


def test_number_buffers_keep_zeros_signs_dtypes_and_lengths_apart():
    """The light path reads a Python number from a cached buffer of equal
    elements: +0 and -0 (equal as keys of a dict), float32 and float64, and a
    longer call after a shorter one must each get their own elements."""
    ones32 = torch.ones(3)
    assert _bits(softrep.mul(ones32, 0.0)).tolist() == [0] * 3
    assert _bits(softrep.mul(ones32, -0.0)).tolist() == [-0x80000000] * 3
    assert _bits(softrep.mul(ones32, 0.0)).tolist() == [0] * 3
    third = softrep.mul(torch.ones(2, dtype=torch.float64), 0.1)
    assert third.tolist() == [0.1, 0.1]  # the double 0.1, not float32's
    assert softrep.mul(ones32, 0.1).tolist() == [float(np.float32(0.1))] * 3
    long = torch.ones(1000)
    got = softrep.add(long, 0.5)
    assert got.shape == (1000,) and bool((got == 1.5).all())
    for k in range(300):  # more numbers than the cache keeps: each still right
        assert softrep.add(ones32, float(k)).tolist() == [1.0 + k] * 3
    assert softrep.add(long, 0.5).eq(1.5).all()
    big = torch.ones(5000)  # longer than the cached buffers: its own buffer
    assert _bits(softrep.mul(big, -0.0)).eq(-0x80000000).all() and softrep.add(big, 0.5).eq(1.5).all()
