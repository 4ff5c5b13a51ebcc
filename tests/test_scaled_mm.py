"""Scaled float8 products (softrep.scaled_mm, and mm / linear / nn.Linear with
float8 operands): the decoding of every float8 code against ml_dtypes, the
documented order against an exact-rational replay (float32 chain, float32
product of the scales, one rounding of acc * scale + bias to out_dtype),
routes, errors, CPU = simulator, golden vectors."""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

import softrep
import softrep.nn as snn
from softrep.ops import lowp
from softrep.ops.products import scaled_linear

from golden import check as golden_check, normal_tensor
from test_formats import reference_round

FLOAT32 = (24, 127, -126)
OUT_PARAMS = {  # (precision, emax, emin, largest significand, has infinity)
    torch.float32: (24, 127, -126, (1 << 24) - 1, True),
    torch.bfloat16: (8, 127, -126, 255, True),
    torch.float16: (11, 15, -14, 2047, True),
    torch.float8_e4m3fn: (4, 8, -6, 14, False),
    torch.float8_e5m2: (3, 15, -14, 7, True),
}
ML = {torch.float8_e4m3fn: ml_dtypes.float8_e4m3fn, torch.float8_e5m2: ml_dtypes.float8_e5m2}


def float8_tensor(seed, shape, dtype, scale=1.0):
    """Float8 operands from their codes (no arithmetic of any library): normal
    draws converted by ml_dtypes, then viewed as torch's float8 dtype."""
    vals = normal_tensor(seed, shape).numpy().astype(np.float64) * scale
    codes = vals.astype(ML[dtype]).view(np.uint8)
    return torch.from_numpy(codes.copy()).view(dtype)


@pytest.mark.parametrize("dtype", list(ML))
def test_every_code_decodes_like_ml_dtypes(dtype):
    codes = torch.arange(256, dtype=torch.uint8)
    got = lowp.float8_values(codes.view(dtype)).numpy()
    want = np.arange(256, dtype=np.uint8).view(ML[dtype]).astype(np.float32)
    want = np.where(np.isnan(want), np.uint32(0x7FC00000).view(np.float32), want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def reference_scaled_mm(a, b, sa, sb, bias, out_dtype):
    """The documented order with exact steps, as Python floats / Fractions."""
    s = reference_round(Fraction(sa) * Fraction(sb), *FLOAT32, "nearest")
    p, emax, emin, max_sig, has_inf = OUT_PARAMS[out_dtype]
    out = []
    for i in range(len(a)):
        row = []
        for j in range(len(b[0])):
            acc = Fraction(0)
            for k in range(len(b)):
                acc = reference_round(Fraction(a[i][k]) * Fraction(b[k][j]) + acc, *FLOAT32, "nearest")
            v = acc * s + (Fraction(bias[j]) if bias is not None else 0)
            row.append(reference_round(v, p, emax, emin, "nearest", max_sig=max_sig, has_inf=has_inf))
        out.append(row)
    return out


@pytest.mark.parametrize("out_dtype", list(OUT_PARAMS))
@pytest.mark.parametrize("with_bias", (False, True))
def test_scaled_mm_matches_the_documented_order(out_dtype, with_bias):
    a = float8_tensor(1, (4, 37), torch.float8_e4m3fn, 40.0)
    b = float8_tensor(2, (37, 3), torch.float8_e5m2, 1000.0)
    sa, sb = 0.3, 2.0 ** -7 * 3  # a product that float32 must round
    bias = normal_tensor(3, (3,)) * 50 if with_bias else None
    got = softrep.scaled_mm(a, b, torch.tensor(sa, dtype=torch.float32), sb, bias=bias, out_dtype=out_dtype)
    assert got.dtype == out_dtype
    ref = reference_scaled_mm(a.float().tolist(), b.float().tolist(), float(np.float32(sa)), float(np.float32(sb)),
                              None if bias is None else bias.tolist(), out_dtype)
    for row_got, row_ref in zip(got.float().tolist(), ref):
        for g, r in zip(row_got, row_ref):
            assert (math.isnan(g) and isinstance(r, float) and math.isnan(r)) or Fraction(g) == r, (g, r)


def test_one_rounding_to_the_output_format():
    """acc * scale is rounded once to bfloat16: rounding it to float32 first would
    give a tie and then the even neighbour (a double-rounding witness)."""
    # the chain: 1 + 2**-8 + 2**-12 * 2**-11 = 1 + 2**-8 + 2**-23, exact in float32
    a = torch.tensor([[1.0, 2.0 ** -8, 2.0 ** -12]]).to(torch.float8_e5m2)
    b = torch.tensor([[1.0], [1.0], [2.0 ** -11]]).to(torch.float8_e5m2)
    scale = 1 - 2.0 ** -24  # exact value 1 + 2**-8 + 2**-24 - 2**-32 - 2**-47: above the bfloat16 midpoint
    got = softrep.scaled_mm(a, b, scale, 1.0, out_dtype=torch.bfloat16).float().item()
    assert got == 1 + 2.0 ** -7
    acc = softrep.mm(lowp.float8_values(a), lowp.float8_values(b))
    assert acc.item() == 1 + 2.0 ** -8 + 2.0 ** -23
    twice = softrep.round_to(softrep.mul(acc, torch.tensor([scale], dtype=torch.float32)), "bfloat16")
    assert twice.item() == 1.0


def test_output_overflow_and_nan():
    a = torch.tensor([[448.0, 448.0]]).to(torch.float8_e4m3fn)
    b = torch.tensor([[448.0], [448.0]]).to(torch.float8_e4m3fn)
    out = softrep.scaled_mm(a, b)  # out_dtype defaults to input's: float8_e4m3fn overflows to NaN
    assert out.dtype == torch.float8_e4m3fn and torch.isnan(out.float()).all()
    assert softrep.scaled_mm(a, b, out_dtype=torch.float8_e5m2).float().item() == math.inf
    assert softrep.scaled_mm(a, b, 2.0 ** -12, 2.0 ** -8, out_dtype=torch.float8_e4m3fn).float().item() == 0.375  # 401408 * 2**-20 = 0.3828
    nan_a = torch.tensor([[float("nan"), 1.0]]).to(torch.float8_e4m3fn)
    r = softrep.scaled_mm(nan_a, b, out_dtype=torch.float32)
    assert r.view(torch.int32).item() == 0x7FC00000


def test_routes_mm_linear_and_nn_linear():
    a = float8_tensor(4, (6, 20), torch.float8_e4m3fn, 10)
    w = float8_tensor(5, (3, 20), torch.float8_e4m3fn, 0.5)
    bias = normal_tensor(6, (3,))
    ref = softrep.scaled_mm(a, w.t(), 0.5, 4.0, bias=bias, out_dtype=torch.float32)
    assert torch.equal(softrep.linear(a, w, bias, scale_a=0.5, scale_b=4.0, out_dtype=torch.float32), ref)
    assert torch.equal(snn.functional.linear(a, w, bias, scale_a=0.5, scale_b=4.0, out_dtype=torch.float32), ref)
    assert torch.equal(softrep.mm(a, w.t(), scale_a=0.5, scale_b=4.0, out_dtype=torch.float32),
                       softrep.scaled_mm(a, w.t(), 0.5, 4.0, out_dtype=torch.float32))
    x3 = a.reshape(2, 3, 20)
    assert torch.equal(scaled_linear(x3, w, bias, 0.5, 4.0, out_dtype=torch.float32), ref.reshape(2, 3, 3))
    # nn.Linear with float8 parameters: scales 1, output in the input's dtype
    layer = snn.Linear(20, 3).to(torch.float8_e4m3fn)
    out = layer(a)
    assert out.dtype == torch.float8_e4m3fn
    assert torch.equal(out.view(torch.uint8), softrep.scaled_mm(a, layer.weight.t(), bias=layer.bias).view(torch.uint8))


def test_arguments_are_checked():
    a8 = torch.zeros(2, 3).to(torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="'mat2' has dtype torch.float32"):
        softrep.mm(a8, torch.zeros(3, 2))
    with pytest.raises(TypeError, match="'scale_a' must be a float32 tensor with one element"):
        softrep.scaled_mm(a8, a8.t(), torch.ones(2))
    with pytest.raises(TypeError, match="'out_dtype'"):
        softrep.scaled_mm(a8, a8.t(), out_dtype=torch.float64)
    with pytest.raises(ValueError, match="inner dimensions"):
        softrep.scaled_mm(a8, a8)
    with pytest.raises(ValueError, match="'bias' must have shape"):
        softrep.scaled_mm(a8, a8.t(), bias=torch.zeros(5))


# ---------------------------------------------------------------------------- golden and simulator


def _outputs():
    a = float8_tensor(7, (9, 50), torch.float8_e4m3fn, 30)
    b = float8_tensor(8, (50, 7), torch.float8_e5m2, 300)
    bias = normal_tensor(9, (7,))
    out = {}
    for dt in OUT_PARAMS:
        out[f"scaled_mm.{dt}"] = softrep.scaled_mm(a, b, 0.125, 0.7, bias=bias, out_dtype=dt).view(torch.uint8)
    out["decode.e4m3fn"] = lowp.float8_values(torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn))
    out["decode.e5m2"] = lowp.float8_values(torch.arange(256, dtype=torch.uint8).view(torch.float8_e5m2))
    return out


def test_golden():
    for key, t in _outputs().items():
        golden_check("scaled_mm.json", key, t)


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    a = float8_tensor(10, (3, 9), torch.float8_e4m3fn, 30)
    b = float8_tensor(11, (9, 2), torch.float8_e5m2, 300)
    bias = normal_tensor(12, (2,))
    sim = {dt: softrep.scaled_mm(a, b, 0.125, 0.7, bias=bias, out_dtype=dt) for dt in OUT_PARAMS}
    codes = torch.arange(256, dtype=torch.uint8)
    sim_dec = [lowp.float8_values(codes.view(dt)) for dt in ML]
    backend("cpu")
    for dt, got in sim.items():
        ref = softrep.scaled_mm(a, b, 0.125, 0.7, bias=bias, out_dtype=dt)
        assert torch.equal(got.view(torch.uint8), ref.view(torch.uint8)), dt
    for got, dt in zip(sim_dec, ML):
        assert torch.equal(got.view(torch.int32), lowp.float8_values(codes.view(dt)).view(torch.int32))
