"""Public elementwise ops on torch tensors: values, IEEE details, broadcasting,
errors, autograd, golden vectors, and CPU == CUDA-simulator bits."""

import numpy as np
import pytest
import torch

import golden
import softrep
from references import mpfr_op, same_bits

ROUNDINGS = ("nearest", "down", "up", "zero")
DTYPES = (torch.float32, torch.float64)
ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1,
         "neg": 1, "abs": 1, "square": 1, "reciprocal": 1}
CANONICAL = {torch.float32: 0x7FC00000, torch.float64: 0x7FF8000000000000}
INT_VIEW = {torch.float32: torch.int32, torch.float64: torch.int64}


def _reference(op, args, dtype, rounding):
    """softrep op on scalars, from MPFR (or from the definition for exact ops)."""
    if op == "neg":
        return dtype(-args[0])
    if op == "abs":
        return dtype(abs(args[0]))
    if op == "square":
        return mpfr_op("mul", (args[0], args[0]), dtype, rounding)
    if op == "reciprocal":
        return mpfr_op("div", (dtype(1), args[0]), dtype, rounding)
    return mpfr_op(op, args, dtype, rounding)


_SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, -1.0, 1.0]


def _inputs(op, dtype, seed, n=257):
    """Bit-pattern operands (all float classes) mixed with ordinary values, after
    every pair of special values."""
    out = []
    k_specials = len(_SPECIALS) ** ARITY[op]
    for k in range(ARITY[op]):
        bits = golden.bit_pattern_tensor(seed + k, (n,), dtype)
        normal = golden.normal_tensor(seed + 10 + k, (n,), dtype)
        mixed = torch.where(torch.arange(n) % 2 == 0, bits, normal)
        idx = torch.arange(k_specials)
        specials = torch.tensor(_SPECIALS, dtype=dtype)[(idx // len(_SPECIALS) ** k) % len(_SPECIALS)]
        out.append(torch.cat([specials, mixed]))
    return out


def _call(op, args, rounding):
    return getattr(softrep, op)(*args, rounding=rounding)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("op", list(ARITY))
def test_op_matches_mpfr(op, rounding, dtype):
    args = _inputs(op, dtype, seed=hash((op, rounding)) % 1000)
    out = _call(op, args, rounding)
    npdt = np.float32 if dtype == torch.float32 else np.float64
    cols = [a.numpy() for a in args]
    for i in range(out.numel()):
        want = _reference(op, [c[i] for c in cols], npdt, rounding)
        got = out[i].numpy()[()]
        assert same_bits(npdt(got), want), f"{op} {rounding} {[c[i] for c in cols]}: {got!r} != {want!r}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", list(ARITY))
def test_nan_outputs_are_canonical(op, dtype):
    args = _inputs(op, dtype, seed=7)
    out = _call(op, args, "nearest")
    nan = torch.isnan(out)
    assert nan.any(), "the inputs must produce some NaN"
    bits = out.view(INT_VIEW[dtype])[nan]
    assert (bits == CANONICAL[dtype]).all()


def test_nan_payload_is_not_propagated():
    payload = torch.tensor([0x7FC12345, 0xFFC00001], dtype=torch.int64).to(torch.int32).view(torch.float32)
    out = softrep.add(payload, torch.ones(2))
    assert out.view(torch.int32).tolist() == [0x7FC00000, 0x7FC00000]


def test_subnormals_are_kept_and_zero_signs_follow_ieee():
    tiny = torch.tensor([2.0 ** -149, 2.0 ** -126], dtype=torch.float32)
    assert softrep.mul(tiny, torch.tensor([1.0, 0.5])).tolist() == [2.0 ** -149, 2.0 ** -127]
    x, y = torch.tensor([3.0, -0.0, -0.0]), torch.tensor([-3.0, 0.0, -0.0])
    assert torch.signbit(softrep.add(x, y)).tolist() == [False, False, True]
    assert torch.signbit(softrep.add(x, y, rounding="down")).tolist() == [True, True, True]
    assert torch.signbit(softrep.sqrt(torch.tensor([-0.0]))).tolist() == [True]


def test_broadcasting_scalars_and_layouts():
    x = torch.randn(3, 1, 4, dtype=torch.float64)
    y = torch.randn(5, 1, dtype=torch.float64)
    out = softrep.mul(x, y)
    assert out.shape == (3, 5, 4)
    assert torch.equal(out, x * y)  # one correctly rounded product per element, as torch's
    assert torch.equal(softrep.add(x, 2), x + 2)
    assert torch.equal(softrep.sub(1.5, x), 1.5 - x)
    t = torch.randn(6, 7).t().abs()  # non-contiguous
    assert torch.equal(softrep.sqrt(t), softrep.sqrt(t.contiguous()))
    assert torch.equal(softrep.sqrt(t), torch.from_numpy(np.sqrt(t.numpy())))  # numpy's sqrt is IEEE
    empty = torch.empty(0, 3)
    assert softrep.add(empty, empty).shape == (0, 3)
    assert softrep.fma(torch.ones(2, 1), torch.ones(1, 3), torch.zeros(())).shape == (2, 3)


def test_inputs_are_not_modified():
    x, y = torch.randn(10), torch.randn(10)
    x0, y0 = x.clone(), y.clone()
    for op in ("add", "sub", "mul", "div"):
        _call(op, (x, y), "up")
    softrep.fma(x, y, x)
    assert torch.equal(x, x0) and torch.equal(y, y0)


def test_dtype_is_preserved():
    for dtype in DTYPES:
        assert softrep.div(torch.ones(2, dtype=dtype), 3).dtype == dtype


@pytest.mark.parametrize("call,error,words", [
    (lambda: softrep.add(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64)), TypeError, "'input'"),
    (lambda: softrep.add(torch.ones(2), torch.ones(2, dtype=torch.float64)), TypeError, "'other'"),
    (lambda: softrep.mul(torch.ones(2), torch.ones(2, device="meta")), ValueError, "'other'"),
    (lambda: softrep.add(torch.ones(2), torch.ones(3)), ValueError, "broadcast"),
    (lambda: softrep.add(torch.ones(2), torch.ones(2), rounding="nearest_even"), ValueError, "'rounding'"),
    (lambda: softrep.fma(torch.ones(2), torch.ones(2), "z"), TypeError, "'z'"),
    (lambda: softrep.sqrt(torch.ones(2, dtype=torch.float8_e4m3fn)), TypeError, "float8_e4m3fn"),
    (lambda: softrep.add(1.0, 2.0), TypeError, "torch.Tensor"),
])
def test_bad_input_names_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("op", list(ARITY))
def test_gradcheck_float64(op):
    torch.manual_seed(0)
    n = ARITY[op]
    args = [torch.rand(5, dtype=torch.float64).add_(0.5).requires_grad_() for _ in range(n)]
    assert torch.autograd.gradcheck(lambda *a: getattr(softrep, op)(*a), args)


def test_gradcheck_with_broadcasting():
    x = torch.rand(3, 1, dtype=torch.float64, requires_grad=True)
    y = torch.rand(1, 4, dtype=torch.float64, requires_grad=True)
    z = torch.rand(4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: softrep.fma(a, b, c), (x, y, z))
    assert torch.autograd.gradcheck(lambda a, b: softrep.div(a, b.add(1)), (x, y))


def test_backward_is_made_of_softrep_ops():
    """Gradients equal the documented formulas evaluated with softrep ops."""
    x = torch.rand(6, dtype=torch.float32).add_(0.1).requires_grad_()
    y = torch.rand(6, dtype=torch.float32).add_(0.1).requires_grad_()
    g = torch.rand(6)
    q = softrep.div(x, y)
    q.backward(g)
    assert torch.equal(x.grad, softrep.div(g, y.detach()))
    assert torch.equal(y.grad, softrep.neg(softrep.div(softrep.mul(g, q.detach()), y.detach())))


def _golden_cases():
    for op in ARITY:
        for rounding in ROUNDINGS:
            for dtype in DTYPES:
                yield op, rounding, dtype


def _golden_check(op, rounding, dtype):
    args = _inputs(op, dtype, seed=1234, n=128)
    golden.check("elementwise.json", f"{op}.{rounding}.{str(dtype)[6:]}", _call(op, args, rounding))


def test_golden_vectors_cpu(backend):
    backend("cpu")
    for case in _golden_cases():
        _golden_check(*case)


@pytest.mark.simulator
def test_golden_vectors_simulator(backend):
    backend("cuda")
    for case in _golden_cases():
        _golden_check(*case)


@pytest.mark.simulator
@pytest.mark.parametrize("op", list(ARITY))
def test_cpu_and_simulator_bits_agree(op, backend):
    for dtype in DTYPES:
        for rounding in ROUNDINGS:
            args = _inputs(op, dtype, seed=99, n=64)
            backend("cpu")
            a = _call(op, args, rounding)
            backend("cuda")
            b = _call(op, args, rounding)
            assert torch.equal(a.view(INT_VIEW[dtype]), b.view(INT_VIEW[dtype])), (op, rounding, dtype)


@pytest.mark.simulator
def test_simulator_writes_out_over_its_own_input(backend):
    # out= the very input: the kernel reads element i before writing it, on
    # every device; the simulator's launch must not put the input back over
    # the result
    x, y = torch.randn(40_000), torch.randn(40_000)  # beyond the CPU light path
    backend("cpu")
    want = softrep.div(x, y)
    backend("cuda")
    for inplace in (x.clone(), x.clone()[:7]):
        expected = want[: inplace.numel()]
        assert softrep.div(inplace, y[: inplace.numel()], out=inplace) is inplace
        assert torch.equal(inplace.view(torch.int32), expected.view(torch.int32))


# Property test of the public ops on operands that reach every IEEE corner
# (the primitives' own property tests live in test_rounding.py).
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from strategies import floats  # noqa: E402


@pytest.mark.parametrize("npdt", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("op", list(ARITY))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_public_op_property(op, rounding, npdt, data):
    rows = data.draw(st.lists(st.tuples(*[floats(npdt)] * ARITY[op]), min_size=1, max_size=16))
    args = [torch.from_numpy(np.array([r[k] for r in rows], dtype=npdt)) for k in range(ARITY[op])]
    out = _call(op, args, rounding).numpy()
    for row, got in zip(rows, out):
        want = _reference(op, list(row), npdt, rounding)
        assert same_bits(npdt(got), want), f"{op} {rounding} {row}: {got!r} != {want!r}"


@pytest.mark.parametrize("mode", ["nearest_away", "odd", "stochastic"])
def test_other_rounding_modes_error_points_to_format(mode):
    x = torch.ones(2)
    with pytest.raises(ValueError, match=f"got '{mode}'; '{mode}' is available with an explicit format"):
        softrep.add(x, x, rounding=mode)
    assert softrep.add(x, x, rounding="nearest_away", format="float32").tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="got 'sideways'$"):
        softrep.add(x, x, rounding="sideways")


def test_broadcast_shapes_matches_torch():
    """softrep.ops.validate.broadcast_shapes gives torch.broadcast_shapes's shape,
    and raises RuntimeError exactly where torch does (sizes 0 and 1 included)."""
    import itertools
    import random

    from softrep.ops.validate import broadcast_shapes

    def check(shapes):
        try:
            want = torch.broadcast_shapes(*shapes)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                broadcast_shapes(*shapes)
            return False
        assert broadcast_shapes(*shapes) == want
        return True

    rng = random.Random(3)
    outcomes = [check([tuple(rng.choice((0, 1, 2, 3)) for _ in range(rng.randint(0, 4)))
                       for _ in range(rng.randint(1, 3))]) for _ in range(3000)]
    assert any(outcomes) and not all(outcomes)  # both outcomes were exercised
    for pair in itertools.product([(), (1,), (0,), (2, 1), (1, 3)], repeat=2):
        check(pair)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", [((64, 70), (70,)), ((64, 70), (64, 1)), ((4, 6, 5, 7), (1, 6, 1, 1)),
                                    ((4, 6, 5, 7), (6, 5, 1)), ((3, 5), ()), ((3, 5), (1, 1)),
                                    ((4, 6, 5), (4, 1, 5)), ((2, 300, 200), (300, 1))])
def test_broadcast_second_operand_read_in_place(op, shapes, dtype):
    """A broadcast second operand is read in place on the CPU
    (softrep.cpu.launch.broadcast_second) where its kept dims are consecutive;
    the bits are those of the materialised operand, NaN canonical.  (4, 1, 5)
    against (4, 6, 5) is not of that form and is materialised."""
    from softrep.ops import elementwise as E

    shape, small = shapes
    gen = torch.Generator().manual_seed(len(shape) * 7 + len(small))
    x = torch.randn(shape, generator=gen, dtype=dtype)
    y = torch.randn(small, generator=gen, dtype=dtype)
    x.view(-1)[0] = float("nan")
    y.view(-1)[-1] = -0.0
    got = getattr(softrep, op)(x, y)
    want = getattr(softrep, op)(x, y.expand(shape).contiguous())
    assert np.array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))
    layout = E._broadcast_layout(torch.Size(shape), y)
    assert (layout is None) == (shapes == ((4, 6, 5), (4, 1, 5)))
    # an already expanded view (stride 0) takes the same read, same bits
    expanded = y.expand(shape)
    got = getattr(softrep, op)(x, expanded)
    assert np.array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))
    if len(small) == len(shape):
        assert E._compact(expanded).shape == y.shape


@pytest.mark.parametrize("op", ["add", "div"])
def test_broadcast_second_operand_read_in_place_with_out(op):
    """out= takes the same in-place read of a broadcast operand: the bits of the
    materialised operand."""
    gen = torch.Generator().manual_seed(11)
    x, y = torch.randn(64, 70, generator=gen), torch.randn(64, 1, generator=gen)
    out = torch.empty(64, 70)
    assert getattr(softrep, op)(x, y, out=out) is out
    want = getattr(softrep, op)(x, y.expand(64, 70).contiguous())
    assert np.array_equal(out.numpy().view(np.uint8), want.numpy().view(np.uint8))
