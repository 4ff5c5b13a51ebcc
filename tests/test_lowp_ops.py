"""Emulated low-precision arithmetic: every result is the exact result rounded
once (MPFR and exact-rational references), mm/linear follow softrep's mm order
with one rounding per step; autograd; CPU = simulator; golden vectors."""

import math
from fractions import Fraction

import gmpy2
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import softrep
from softrep.ops import lowp
from softrep.ops.elementwise import emulated
from softrep.tools.verify_formats import compare_bits

from golden import bit_pattern_tensor, check as golden_check, normal_tensor
from test_formats import MPFR_ROUND, PARAMS, float32_values, ieee_formats, mpfr_round, reference_round

DETERMINISTIC = ("nearest", "nearest_away", "down", "up", "zero", "odd")
OPS = ("add", "sub", "mul", "div", "sqrt", "fma")
NARGS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "sqrt": 1, "fma": 3}


def exact_value(op, args):
    """Exact result as a Fraction (sqrt: a 300-bit truncation plus a sticky
    offset, enough to round correctly to any format of at most 53 bits), or
    None when the result is not a finite number (handled in the unit tests)."""
    if any(not math.isfinite(a) for a in args):
        return None
    f = [Fraction(a) for a in args]
    if op == "add":
        return f[0] + f[1]
    if op == "sub":
        return f[0] - f[1]
    if op == "mul":
        return f[0] * f[1]
    if op == "div":
        return None if f[1] == 0 else f[0] / f[1]
    if op == "fma":
        return f[0] * f[1] + f[2]
    if f[0] < 0:
        return None
    with gmpy2.context(precision=300, round=gmpy2.RoundToZero):
        r = gmpy2.sqrt(gmpy2.mpfr(args[0]))
        inexact = r * r != gmpy2.mpfr(args[0])
    num, den = r.as_integer_ratio()
    t = Fraction(int(num), int(den))
    return t + Fraction(1, 2**700) if inexact else t


def _exact_zero_sign(op, args, mode):
    """IEEE 754's sign of an exact zero result: products and quotients the sign
    product, sqrt(+-0) = +-0; a sum of two zeros of one sign keeps it, any other
    exact zero sum is +0, or -0 when rounding down."""
    neg = [math.copysign(1.0, a) < 0 for a in args]
    if op in ("mul", "div"):
        return -0.0 if neg[0] != neg[1] else 0.0
    if op == "sqrt":
        return args[0]
    if op == "sub":
        terms = [(args[0], neg[0]), (args[1], not neg[1])]
    elif op == "add":
        terms = [(args[0], neg[0]), (args[1], neg[1])]
    else:  # fma: the product's sign, then the sum rule
        terms = [(0.0 if args[0] == 0 or args[1] == 0 else 1.0, neg[0] != neg[1]), (args[2], neg[2])]
    if terms[0][0] == 0 and terms[1][0] == 0 and terms[0][1] == terms[1][1]:
        return -0.0 if terms[0][1] else 0.0
    return -0.0 if mode == "down" else 0.0


def _check_against_reference(op, columns, got, refine, mode):
    """Bit for bit: NaN results must be the canonical NaN of the dtype, zeros carry
    their sign (a nonzero value rounded to zero keeps its sign; exact zeros follow
    IEEE 754)."""
    dt, ut, nan = ((np.float32, np.uint32, 0x7FC00000) if got.dtype == torch.float32
                   else (np.float64, np.uint64, 0x7FF8000000000000))
    for i, g in enumerate(got.numpy().view(ut).tolist()):
        args = [c[i] for c in columns]
        v = exact_value(op, args)
        if v is None:
            continue
        r = refine(v)
        if isinstance(r, float) and math.isnan(r):
            want = nan
        else:
            f = float(r)
            if f == 0:
                f = (-0.0 if v < 0 else 0.0) if v != 0 else _exact_zero_sign(op, args, mode)
            want = int(np.array(f, dt).view(ut))
        assert g == want, (op, mode, args, hex(g), hex(want), r)


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(OPS), fmt=ieee_formats(), mode=st.sampled_from(DETERMINISTIC),
       data=st.data())
def test_ops_round_once_custom_formats(op, fmt, mode, data):
    p, emax, emin = fmt
    columns = [data.draw(float32_values(n=12)) for _ in range(NARGS[op])]
    if op == "sqrt":
        columns = [[abs(v) for v in columns[0]]]
    tensors = [torch.tensor(c, dtype=torch.float32) for c in columns]
    got = emulated(op, tensors, softrep.Format(p, emax, emin), mode)
    if mode in MPFR_ROUND:
        _check_against_reference(op, columns, got, lambda v: mpfr_round(v, p, emax, emin, mode) if v else v, mode)
    else:
        _check_against_reference(op, columns, got, lambda v: reference_round(v, p, emax, emin, mode), mode)


@settings(max_examples=50, deadline=None)
@given(op=st.sampled_from(OPS), name=st.sampled_from(list(PARAMS)), mode=st.sampled_from(DETERMINISTIC),
       saturate=st.booleans(), data=st.data())
def test_ops_named_formats(op, name, mode, saturate, data):
    p, emax, emin, max_sig, has_inf = PARAMS[name]
    columns = [data.draw(float32_values(n=12)) for _ in range(NARGS[op])]
    if op == "sqrt":
        columns = [[abs(v) for v in columns[0]]]
    tensors = [torch.tensor(c, dtype=torch.float32) for c in columns]
    got = emulated(op, tensors, name, mode, saturate=saturate)
    _check_against_reference(op, columns, got,
                             lambda v: reference_round(v, p, emax, emin, mode, True, max_sig, has_inf, saturate), mode)


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(OPS), fmt=ieee_formats(max_precision=51, min_quantum=-1072, max_emax=1023),
       mode=st.sampled_from(list(MPFR_ROUND)), data=st.data())
def test_ops_float64_match_mpfr(op, fmt, mode, data):
    p, emax, emin = fmt
    floats = st.floats(allow_nan=False, allow_infinity=False)
    columns = [data.draw(st.lists(floats, min_size=1, max_size=8)) for _ in range(NARGS[op])]
    n = min(len(c) for c in columns)
    columns = [c[:n] for c in columns]
    if op == "sqrt":
        columns = [[abs(v) for v in columns[0]]]
    tensors = [torch.tensor(c, dtype=torch.float64) for c in columns]
    got = emulated(op, tensors, softrep.Format(p, emax, emin), mode)
    _check_against_reference(op, columns, got, lambda v: mpfr_round(v, p, emax, emin, mode) if v else v, mode)


def test_not_double_rounded():
    # 1 + 2**-8 + 2**-30: float32 would round it to 1 + 2**-8 (a bf16 tie, -> 1.0);
    # the exact sum is above the tie, so bfloat16 nearest gives 1 + 2**-7.
    x = torch.tensor([1.0 + 2.0 ** -8])
    y = torch.tensor([2.0 ** -30])
    assert emulated("add", [x, y], "bfloat16").item() == 1.0 + 2.0 ** -7
    assert softrep.add(x, y, format="bfloat16").item() == 1.0 + 2.0 ** -7
    # fma: 3 * (1 + 2**-23) - 2**-23 * 3 is exactly 3
    assert softrep.fma(torch.tensor([3.0]), torch.tensor([1 + 2.0 ** -23]), torch.tensor([-3 * 2.0 ** -23]),
                       format="float16").item() == 3.0


def test_special_values():
    inf, nan = math.inf, math.nan
    x = torch.tensor([inf, inf, 0.0, 1.0, -1.0, 0.0, 5.0, -0.0])
    y = torch.tensor([-inf, 1.0, 0.0, 0.0, 0.0, -0.0, -5.0, -0.0])
    add = emulated("add", [x, y], "bfloat16").tolist()
    assert math.isnan(add[0]) and add[1] == inf
    down = emulated("add", [x, y], "bfloat16", "down")
    assert _signs(down[5:]) == [-1, -1, -1]  # exact zero sums round down to -0
    assert _signs(emulated("add", [x, y], "bfloat16", "up")[5:]) == [1, 1, -1]
    div = emulated("div", [x, y], "float16").tolist()
    assert div[3] == inf and div[4] == -inf and math.isnan(div[2])
    assert math.isnan(emulated("div", [x, y], "float8_e4m3fn")[3].item())  # no inf in e4m3fn
    s = emulated("sqrt", [torch.tensor([-1.0, -0.0, inf, nan])], "bfloat16")
    assert math.isnan(s[0].item()) and _signs(s[1:2]) == [-1] and s[2].item() == inf
    assert s.view(torch.int32)[3].item() == 0x7FC00000


def test_float64_overflow_and_underflow_inside_the_operation():
    x = torch.tensor([1e300, -1e300, 1e-300, -1e-300], dtype=torch.float64)
    assert emulated("mul", [x, x.abs()], "bfloat16").tolist() == [math.inf, -math.inf, 0.0, -0.0]
    big = float.fromhex("0x1.fep127")
    assert emulated("mul", [x, x.abs()], "bfloat16", "zero").tolist()[:2] == [big, -big]
    tiny = 2.0 ** -133
    assert emulated("mul", [x, x.abs()], "bfloat16", "up").tolist()[2:] == [tiny, -0.0]
    assert emulated("mul", [x, x.abs()], "bfloat16", "odd").tolist()[2:] == [tiny, -tiny]


def test_float64_format_errors_and_native():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="'format'"):
        emulated("add", [x, x], softrep.Format(52, 1000))
    with pytest.raises(ValueError, match="'format'"):
        emulated("add", [x, x], "float64", "odd")
    y = torch.tensor([1e-17, 3.0], dtype=torch.float64)
    for mode in ("nearest", "down", "up", "zero"):
        assert torch.equal(emulated("add", [x, y], "float64", mode), softrep.add(x, y, rounding=mode))
    with pytest.raises(ValueError, match="'format'"):
        emulated("add", [torch.ones(2), torch.ones(2)], "float64")


def test_broadcast_python_numbers_and_gradients():
    x = torch.tensor([[1.5, -2.25, 3.0]], requires_grad=True)
    y = torch.tensor([[0.1], [0.7]], requires_grad=True)
    out = softrep.mul(x, y, format="bfloat16", rounding="up")
    assert out.shape == (2, 3)
    g = torch.arange(6.0).reshape(2, 3)
    out.backward(g)
    # the exact op's gradients: d(xy)/dx = y, d(xy)/dy = x (summed over broadcast dims)
    xr = x.detach().clone().requires_grad_()
    yr = y.detach().clone().requires_grad_()
    softrep.mul(xr, yr).backward(g)
    assert torch.equal(x.grad, xr.grad) and torch.equal(y.grad, yr.grad)
    assert softrep.add(x.detach(), 1, format="float16").shape == (1, 3)


def test_stochastic_ops_unbiased_and_reproducible():
    n = 1 << 18
    x = torch.full((n,), 1.0)
    y = torch.full((n,), 2.0 ** -9)  # 1 + 2**-9 = 1 + ulp/4 in bfloat16
    r = softrep.add(x, y, format="bfloat16", rounding="stochastic", generator=softrep.Generator(4))
    ups = int((r > 1).sum())
    sd = math.sqrt(n * 0.25 * 0.75)
    assert abs(ups - n / 4) <= 10 * sd
    r2 = softrep.add(x, y, format="bfloat16", rounding="stochastic", generator=softrep.Generator(4))
    assert torch.equal(r, r2)


def _signs(t):
    return [int(math.copysign(1, v)) for v in t.tolist()]


# ---------------------------------------------------------------------------- mm / linear


def reference_mm(a, b, fmt, mode, in_fmt=None):
    """softrep's mm order with exact steps: acc = +0; acc = round(a*b + acc)."""
    if in_fmt is not None:
        a = [[float(reference_round(Fraction(v), *in_fmt, "nearest")) for v in row] for row in a]
        b = [[float(reference_round(Fraction(v), *in_fmt, "nearest")) for v in row] for row in b]
    p, emax, emin = fmt
    out = []
    for i in range(len(a)):
        row = []
        for j in range(len(b[0])):
            acc = Fraction(0)
            for k in range(len(b)):
                acc = reference_round(Fraction(a[i][k]) * Fraction(b[k][j]) + acc, p, emax, emin, mode)
                assert not isinstance(acc, float)
            row.append(float(acc))
        out.append(row)
    return out


@pytest.mark.parametrize("mode", DETERMINISTIC)
@pytest.mark.parametrize("acc_fmt,in_fmt", [("bfloat16", None), ("float16", "float8_e5m2"),
                                            ("float32", "bfloat16"), (None, None)])
def test_mm_matches_reference(mode, acc_fmt, in_fmt):
    a = normal_tensor(1, (4, 7))
    b = normal_tensor(2, (7, 3))
    if acc_fmt is None and mode not in ("nearest",):
        pytest.skip("float32 accumulation is covered by nearest")
    got = lowp.mm(a, b, input_format=in_fmt, accumulate_format=acc_fmt, rounding=mode)
    fmt = {"bfloat16": (8, 127, -126), "float16": (11, 15, -14), "float32": (24, 127, -126),
           None: (24, 127, -126)}[acc_fmt]
    in_params = None if in_fmt is None else PARAMS[in_fmt][:3]
    assert got.tolist() == reference_mm(a.tolist(), b.tolist(), fmt, mode, in_params)


def test_mm_float32_default_is_fma_chain():
    a = normal_tensor(3, (5, 9))
    b = normal_tensor(4, (9, 2))
    got = lowp.mm(a, b)
    ref = torch.zeros(5, 2)
    for k in range(9):  # softrep's fma_rn in float32, independent of the lowp kernel
        ref = softrep.fma(a[:, k:k + 1].expand(5, 2).contiguous(), b[k:k + 1, :].expand(5, 2).contiguous(), ref)
    assert torch.equal(got, ref)


def test_mm_float64_native_and_shapes():
    a = normal_tensor(5, (3, 4), torch.float64)
    b = normal_tensor(6, (4, 2), torch.float64)
    got = lowp.mm(a, b)
    ref = reference_mm(a.tolist(), b.tolist(), (53, 1023, -1022), "nearest")
    assert got.tolist() == ref
    assert lowp.mm(torch.ones(0, 3), torch.ones(3, 2)).shape == (0, 2)
    assert lowp.mm(torch.ones(2, 0), torch.ones(0, 2), accumulate_format="bfloat16").tolist() == [[0.0, 0.0]] * 2
    with pytest.raises(ValueError, match="'mat2'"):
        lowp.mm(torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="'accumulate_format'"):
        lowp.mm(torch.ones(2, 3), torch.ones(3, 2), accumulate_format="float7")


def test_linear_and_gradients():
    x = normal_tensor(7, (2, 3, 5)).requires_grad_()
    w = normal_tensor(8, (4, 5)).requires_grad_()
    bias = normal_tensor(9, (4,))
    y = softrep.linear(x, w, bias, input_format="bfloat16", accumulate_format="float16")
    assert y.shape == (2, 3, 4)
    acc = lowp.mm(x.detach().reshape(6, 5), w.detach().t(), input_format="bfloat16", accumulate_format="float16")
    ref = [[float(reference_round(Fraction(acc[i, j].item()) + Fraction(bias[j].item()), 11, 15, -14, "nearest"))
            for j in range(4)] for i in range(6)]
    assert y.reshape(6, 4).tolist() == ref
    y.sum().backward()
    # the exact product's gradient, taken at the rounded inputs, passed straight through the input rounding
    g = torch.ones(6, 4)
    wr = softrep.round_to(w.detach(), "bfloat16")
    xr = softrep.round_to(x.detach().reshape(6, 5), "bfloat16")
    assert torch.allclose(x.grad.reshape(6, 5), g @ wr, rtol=1e-6)
    assert torch.allclose(w.grad, g.t() @ xr, rtol=1e-6)


def test_mm_stochastic_reproducible():
    a = normal_tensor(10, (6, 8))
    b = normal_tensor(11, (8, 5))
    r1 = lowp.mm(a, b, accumulate_format="bfloat16", rounding="stochastic", generator=softrep.Generator(1))
    r2 = lowp.mm(a, b, accumulate_format="bfloat16", rounding="stochastic", generator=softrep.Generator(1))
    assert torch.equal(r1, r2)
    lo = reference_mm(a.tolist(), b.tolist(), (8, 127, -126), "down")
    hi = reference_mm(a.tolist(), b.tolist(), (8, 127, -126), "up")
    assert r1.tolist() != lo and r1.tolist() != hi


# ---------------------------------------------------------------------------- golden and simulator


def _golden_outputs():
    out = {}
    xs = [bit_pattern_tensor(40 + i, (128,)) for i in range(3)]
    ns = [normal_tensor(50 + i, (128,)) for i in range(3)]
    for op in OPS:
        for mode in DETERMINISTIC + ("stochastic",):
            for fmt in ("bfloat16", "float8_e4m3fn"):
                args = xs[:NARGS[op]]
                out[f"{op}.{fmt}.{mode}.bits"] = emulated(op, args, fmt, mode, softrep.Generator(2))
                args = ns[:NARGS[op]] if op != "sqrt" else [ns[0].abs()]
                out[f"{op}.{fmt}.{mode}.normal"] = emulated(op, args, fmt, mode, softrep.Generator(2))
    a = normal_tensor(60, (8, 16))
    b = normal_tensor(61, (16, 6))
    for mode in DETERMINISTIC + ("stochastic",):
        out[f"mm.bf16-in.fp16-acc.{mode}"] = lowp.mm(a, b, input_format="bfloat16", accumulate_format="float16",
                                                     rounding=mode, generator=softrep.Generator(3))
    return out


def test_golden():
    for key, t in _golden_outputs().items():
        golden_check("lowp.json", key, t)


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    xs = [bit_pattern_tensor(70 + i, (12,)) for i in range(3)]
    a = normal_tensor(72, (3, 4))
    b = normal_tensor(73, (4, 2))
    cases = [(op, mode) for op in OPS for mode in DETERMINISTIC + ("stochastic",)]
    sim = {c: emulated(c[0], xs[:NARGS[c[0]]], "bfloat16", c[1], softrep.Generator(8)) for c in cases}
    sim_mm = {m: lowp.mm(a, b, input_format="bfloat16", accumulate_format="float16", rounding=m,
                         generator=softrep.Generator(9)) for m in DETERMINISTIC + ("stochastic",)}
    x64 = [bit_pattern_tensor(74 + i, (6,), torch.float64) for i in range(2)]
    sim64 = emulated("mul", x64, softrep.Format(30, 500, -500), "odd")
    backend("cpu")
    for (op, mode), got in sim.items():
        ref = emulated(op, xs[:NARGS[op]], "bfloat16", mode, softrep.Generator(8))
        assert compare_bits(got.numpy(), ref.numpy())[0] == 0 and torch.equal(got.view(torch.int32),
                                                                               ref.view(torch.int32)), (op, mode)
    for m, got in sim_mm.items():
        ref = lowp.mm(a, b, input_format="bfloat16", accumulate_format="float16", rounding=m,
                      generator=softrep.Generator(9))
        assert torch.equal(got.view(torch.int32), ref.view(torch.int32)), m
    assert torch.equal(sim64.view(torch.int64),
                       emulated("mul", x64, softrep.Format(30, 500, -500), "odd").view(torch.int64))


def test_softrep_mm_and_linear_route_low_precision_keywords():
    """softrep.mm / softrep.linear with the low-precision keywords are softrep.ops.lowp's emulation."""
    a = torch.randn(5, 7)
    b = torch.randn(7, 3)
    for kw in ({"input_format": "bfloat16"}, {"accumulate_format": "float16"},
               {"rounding": "down"}, {"input_format": "bfloat16", "accumulate_format": "bfloat16", "rounding": "zero"}):
        assert torch.equal(softrep.mm(a, b, **kw), lowp.mm(a, b, **kw)), kw
        bias = torch.randn(3)
        acc = kw.get("accumulate_format", "float32")
        expected = emulated("add", [lowp.mm(a, b, **kw), bias], acc, kw.get("rounding", "nearest"))
        assert torch.equal(softrep.linear(a, b.t(), bias, **kw), expected), kw
    # without the keywords: the plain float32 product, whose bits differ from a bf16 emulation
    assert not torch.equal(softrep.mm(a, b), softrep.mm(a, b, input_format="bfloat16"))
