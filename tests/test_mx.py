"""OCP Microscaling (MX v1.0) formats: round_to / quantize_mx against an exact
rational reference of the specification's conversion (all six formats, every
rounding mode, stochastic included), MPFR for the element roundings, ml_dtypes
for the nearest element values and the E8M0 scales, the integer grid of MXINT8,
pychop (with its differences pinned), CPU = simulator, golden vectors."""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

import softrep
from softrep.ops import lowp
from softrep.ops.generator import uniform_words
from softrep.tools import verify_formats
from softrep.tools.verify_formats import compare_bits

from golden import bit_pattern_tensor, check as golden_check, normal_tensor
from test_formats import mpfr_round, reference_round

MODES = ("nearest", "nearest_away", "down", "up", "zero", "odd")
# element format: (precision, emax, emin, largest significand), from the OCP MX v1.0 tables
ELEMENTS = {
    "mxfp8_e4m3": (4, 8, -6, 0b1110),
    "mxfp8_e5m2": (3, 15, -14, 0b111),
    "mxfp6_e2m3": (4, 2, 0, 0b1111),
    "mxfp6_e3m2": (3, 4, -2, 0b111),
    "mxfp4_e2m1": (2, 2, 0, 0b11),
}
MX_NAMES = tuple(ELEMENTS) + ("mxint8",)
ML_DTYPES = {"mxfp8_e4m3": ml_dtypes.float8_e4m3fn, "mxfp8_e5m2": ml_dtypes.float8_e5m2,
             "mxfp6_e2m3": ml_dtypes.float6_e2m3fn, "mxfp6_e3m2": ml_dtypes.float6_e3m2fn,
             "mxfp4_e2m1": ml_dtypes.float4_e2m1fn}
EMAX_ELEM = {"mxfp8_e4m3": 8, "mxfp8_e5m2": 15, "mxfp6_e2m3": 2, "mxfp6_e3m2": 4, "mxfp4_e2m1": 2, "mxint8": 0}
NAN32 = 0x7FC00000


# ---------------------------------------------------------------------------- reference


def shared_exponent(block):
    """The specification's s = floor(log2(amax)) - emax_elem, from exact values:
    None for the NaN scale (an infinity or NaN in the block, or s > 127), -127 at least."""
    if any(not math.isfinite(v) for v in block):
        return None
    amax = max(abs(Fraction(v)) for v in block)
    if amax == 0:
        return -127
    e = amax.numerator.bit_length() - amax.denominator.bit_length()  # floor(log2(amax)), maybe one too high
    if Fraction(2) ** e > amax:
        e -= 1
    return e


def round_int8(t, mode, word=None):
    """MXINT8 element: t (a Fraction, the value over the scale) to k/64, |k| <= 127,
    written on the integer grid (independent of softrep's Format(7, 0, 0) view)."""
    u = t * 64
    neg = u < 0
    a = -u if neg else u
    low = math.floor(a)
    rest = a - low
    if mode == "nearest":
        k = low + (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and low % 2 == 1))
    elif mode == "nearest_away":
        k = low + (rest >= Fraction(1, 2))
    elif mode == "zero":
        k = low
    elif mode == "down":
        k = low + (rest != 0 and neg)
    elif mode == "up":
        k = low + (rest != 0 and not neg)
    elif mode == "odd":
        k = low + (rest != 0 and low % 2 == 0)
    else:  # stochastic: away from zero when the word is below floor(2**32 * rest)
        k = low + (word < math.floor(rest * 2**32))
    k = min(k, 127)
    return Fraction(-k if neg else k, 64)


def round_stochastic(v, p, emax, emin, max_sig, word):
    """Stochastic rounding by the documented rule: away from zero iff word < floor(2**32 * d / quantum)."""
    if v == 0:
        return Fraction(0)
    neg = v < 0
    a = -v if neg else v
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, emin) - p + 1
    scaled = a / Fraction(2) ** q
    low = math.floor(scaled)
    k = low + (word < math.floor((scaled - low) * 2**32))
    r = min(k * Fraction(2) ** q, Fraction(max_sig) * Fraction(2) ** (emax - p + 1))
    return -r if neg else r


def reference_block(block, name, mode, words=None, use_mpfr=False):
    """(scale exponent or None, [values as Fractions or nan]) of one block by the specification."""
    s = shared_exponent(block)
    if s is not None:
        s = max(s - EMAX_ELEM[name], -127)
        if s > 127:
            s = None
    if s is None:
        return None, [math.nan] * len(block)
    X = Fraction(2) ** s
    out = []
    for i, v in enumerate(block):
        t = Fraction(v) / X
        if name == "mxint8":
            r = round_int8(t, mode, None if words is None else words[i])
        else:
            p, emax, emin, max_sig = ELEMENTS[name]
            max_finite = Fraction(max_sig) * Fraction(2) ** (emax - p + 1)
            if mode == "stochastic":
                r = round_stochastic(t, p, emax, emin, max_sig, words[i])
            elif use_mpfr:
                r = mpfr_round(t, p, emax, emin, mode) if t != 0 else Fraction(0)
                if isinstance(r, float) or abs(r) > max_finite:  # the specification clamps
                    r = max_finite if t > 0 else -max_finite
            else:
                r = reference_round(t, p, emax, emin, mode, max_sig=max_sig, has_inf=False, saturate=True)
        out.append(r * X)
    return s, out


def expected_bits(x, ref):
    """float32 bits of a reference value: canonical NaN, zeros with the input's sign."""
    if isinstance(ref, float) and math.isnan(ref):
        return NAN32
    v = float(ref)
    assert Fraction(v) == ref
    v = math.copysign(0.0, x) if v == 0 else v
    return int(np.array(v, np.float32).view(np.uint32))


def mx_blocks():
    """Blocks (rows of 32, one of them partial) exercising every part of the conversion."""
    rng = np.random.Generator(np.random.PCG64(20261210))
    rows = [(rng.standard_normal(32) * 2.0 ** rng.integers(-40, 40)).astype(np.float32) for _ in range(40)]
    rows.append(np.zeros(32, np.float32))                                   # all zero: s = -127
    rows.append(np.float32([-0.0, 0.0] * 16))                               # signed zeros
    rows.append(np.float32([2.0 ** -140 * k for k in range(-16, 16)]))      # float32 subnormals: s clamps to -127
    rows.append(np.float32([3e38, -1.0, 2.0 ** -20] + [7.0] * 29))          # the largest binade of float32
    rows.append(np.float32([1.0, np.inf] + [0.5] * 30))                     # infinity: NaN scale
    rows.append(np.float32([np.nan] + [0.25] * 31))                         # NaN: NaN scale
    rows.append(np.float32([1.9921875, -1.99609375, 1.0] + [0.0] * 29) * 8)  # MXINT8 clamp and ties
    rows.append(np.float32([480.0, 464.0, 449.0, 1.0] + [0.001] * 28))       # E4M3 saturation
    ties = []  # ties and neighbours of the element grids at scale 1 (amax 2**8 .. 2**15 keep small s)
    for k in range(1, 33):
        ties.append(np.float32(k + 0.5) * np.float32(0.125))
    rows.append(np.float32(ties))
    rows.append((bit_pattern_tensor(5, (32,)).numpy()))                      # raw bit patterns (specials likely)
    rows.append(np.abs(bit_pattern_tensor(6, (32,)).numpy()) % np.float32(1e3))
    return np.stack(rows)


def _check_against_reference(x2d, name, mode, got, words=None, use_mpfr=False):
    """Bit for bit, blocks along the last dim of x2d; returns the reference scales."""
    gbits = got.numpy().view(np.uint32)
    scales = []
    for r, row in enumerate(x2d.tolist()):
        for b0 in range(0, len(row), 32):
            block = row[b0:b0 + 32]
            w = None if words is None else words[r * len(row) + b0: r * len(row) + b0 + len(block)]
            s, vals = reference_block(block, name, mode, w, use_mpfr)
            scales.append(s)
            for j, ref in enumerate(vals):
                want = expected_bits(block[j], ref)
                assert int(gbits[r, b0 + j]) == want, (name, mode, r, b0 + j, block[j], hex(int(gbits[r, b0 + j])),
                                                       hex(want))
    return scales


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", MX_NAMES)
def test_round_to_matches_the_specification(name, mode):
    """Every format in every deterministic mode against the exact-rational reference
    of OCP MX v1.0 section 6.3 (and MPFR for the float elements in its four modes)."""
    x = mx_blocks()
    got = softrep.round_to(torch.from_numpy(x), name, mode)
    _check_against_reference(x, name, mode, got)
    if name != "mxint8" and mode in ("nearest", "down", "up", "zero"):
        _check_against_reference(x, name, mode, got, use_mpfr=True)


@pytest.mark.parametrize("name", MX_NAMES)
def test_stochastic_rounding_uses_the_documented_words(name):
    """Stochastic rounding of element i draws Philox word 0 of (seed, offset, i)."""
    x = mx_blocks()[:20]
    got = softrep.round_to(torch.from_numpy(x), name, "stochastic", generator=softrep.Generator(77))
    words = uniform_words(x.size, generator=softrep.Generator(77))[:, 0].tolist()
    _check_against_reference(x, name, "stochastic", got, words)
    again = softrep.round_to(torch.from_numpy(x), name, "stochastic", generator=softrep.Generator(77))
    assert torch.equal(got.view(torch.int32), again.view(torch.int32))
    other = softrep.round_to(torch.from_numpy(x), name, "stochastic", generator=softrep.Generator(78))
    assert not torch.equal(got.view(torch.int32), other.view(torch.int32))


@pytest.mark.parametrize("name", tuple(ML_DTYPES))
def test_elements_and_scales_match_ml_dtypes(name):
    """Nearest: elements = ml_dtypes' conversion of V / X clamped to the largest
    element, scales = ml_dtypes' float8_e8m0fnu of 2**s (NaN: code 0xFF)."""
    x = np.concatenate([mx_blocks(), normal_tensor(3, (200, 32)).numpy() * np.float32(300)])
    elements, scales = softrep.quantize_mx(torch.from_numpy(x), name)
    amax = np.max(np.abs(x.astype(np.float64)), axis=1)
    finite = np.all(np.isfinite(x), axis=1)
    with np.errstate(divide="ignore"):
        s = np.where(amax > 0, np.frexp(amax)[1] - 1, -127) - EMAX_ELEM[name]
    s = np.maximum(s, -127)
    dt = ML_DTYPES[name]
    want_scales = np.where(finite, np.exp2(s.astype(np.float64)), np.nan).astype(ml_dtypes.float8_e8m0fnu)
    got_scales = scales.reshape(-1).to(torch.float8_e8m0fnu).view(torch.uint8).numpy()
    assert np.array_equal(got_scales, want_scales.view(np.uint8))
    maxv = float(ml_dtypes.finfo(dt).max)
    with np.errstate(invalid="ignore"):
        scaled = np.clip(x.astype(np.float64) / np.exp2(s.astype(np.float64))[:, None], -maxv, maxv)
    want = scaled.astype(dt).astype(np.float32)
    want = np.where(finite[:, None], want, np.float32(np.nan))
    want = np.where(np.isnan(want), np.uint32(NAN32).view(np.float32), want)
    assert compare_bits(elements.numpy(), want)[0] == 0
    # the elements and scales convert exactly to torch's dtypes where torch has them
    if name in ("mxfp8_e4m3", "mxfp8_e5m2"):
        t = getattr(torch, {"mxfp8_e4m3": "float8_e4m3fn", "mxfp8_e5m2": "float8_e5m2"}[name])
        ok = torch.from_numpy(finite)
        assert torch.equal(elements[ok].to(t).float(), elements[ok])
    assert torch.equal(scales.to(torch.float8_e8m0fnu).float().view(torch.int32)[torch.from_numpy(finite)],
                       scales.view(torch.int32)[torch.from_numpy(finite)])


def test_values_are_elements_times_scales_and_blocks_follow_dim():
    x = normal_tensor(8, (3, 70, 5)) * 40
    for name in MX_NAMES:
        for dim in (0, 1, 2, -1):
            values = softrep.round_to(x, name, dim=dim)
            elements, scales = softrep.quantize_mx(x, name, dim=dim)
            assert scales.shape[dim % 3] == (x.shape[dim] + 31) // 32
            expanded = scales.repeat_interleave(32, dim=dim).narrow(dim, 0, x.shape[dim])
            assert torch.equal(values, elements * expanded)  # exact: a power-of-two scaling
            # the same as the conversion with the blocks moved to the last dim
            moved = softrep.round_to(x.movedim(dim, -1).contiguous(), name)
            assert torch.equal(values, moved.movedim(-1, dim))


def test_float64_inputs_and_the_nan_scale():
    x = torch.tensor([2.0 ** 200, 1.0, 3.0], dtype=torch.float64)  # s = 200 - 8 > 127: NaN scale
    v, (e, s) = softrep.round_to(x, "mxfp8_e4m3"), softrep.quantize_mx(x, "mxfp8_e4m3")
    assert torch.isnan(v).all() and torch.isnan(e).all() and torch.isnan(s).all()
    assert v.view(torch.int64)[0].item() == 0x7FF8000000000000
    y = torch.tensor([2.0 ** 130, 3.0, -2.0 ** 120, 2.0 ** -300], dtype=torch.float64)
    # s = 130 - 8 = 122: the element grid shifted by 122 has the subnormal quantum 2**(-9 + 122)
    got = softrep.round_to(y, "mxfp8_e4m3", "up")
    assert got.tolist() == [2.0 ** 130, 2.0 ** 113, -2.0 ** 120, 2.0 ** 113]


def test_saturation_zeros_and_int8_symmetry():
    x = torch.tensor([500.0, -300.0, 0.5], dtype=torch.float32)
    assert softrep.round_to(x, "mxfp8_e4m3").tolist() == [448.0, -288.0, 0.5]  # s = 0, 500 clamps to 448
    # directed modes clamp too (the specification saturates): up does not give NaN or inf
    assert softrep.round_to(x, "mxfp8_e4m3", "up").tolist()[0] == 448.0
    z = torch.tensor([-1e-30, 1.0, 0.0, -0.0])
    r = softrep.round_to(z, "mxfp4_e2m1")
    assert r.view(torch.int32).tolist()[0] == np.float32(-0.0).view(np.int32)  # a value rounded to zero keeps its sign
    assert r.view(torch.int32).tolist()[3] == np.float32(-0.0).view(np.int32)
    e, s = softrep.quantize_mx(torch.tensor([-1.995, 1.0]), "mxint8")
    assert e.tolist() == [-127 / 64, 1.0] and s.tolist() == [1.0]  # -2 (code -128) is never produced
    zero_e, zero_s = softrep.quantize_mx(torch.zeros(40), "mxfp8_e5m2")
    assert zero_s.tolist() == [2.0 ** -127] * 2


def test_arguments_are_checked():
    x = torch.randn(4, 32)
    with pytest.raises(ValueError, match="'format'.*block-scaled"):
        softrep.add(x, x, format="mxfp8_e4m3")
    with pytest.raises(ValueError, match="'accumulate_format'"):
        lowp.mm(x, x.t(), accumulate_format="mxint8")
    with pytest.raises(ValueError, match="'dim'"):
        softrep.round_to(x, "bfloat16", dim=0)
    with pytest.raises(IndexError, match="'dim'"):
        softrep.round_to(x, "mxfp4_e2m1", dim=2)
    with pytest.raises(ValueError, match="'format'.*MX format"):
        softrep.quantize_mx(x, "bfloat16")
    with pytest.raises(ValueError, match="'format'"):
        softrep.round_to(x, softrep.MXFormat(softrep.Format(11, 15), block_size=16))  # 2**-24 * 2**-127 < float32's
    custom = softrep.MXFormat(softrep.Format(3, 15, -14), block_size=8)
    assert torch.equal(softrep.round_to(x, custom), torch.cat([softrep.round_to(x[:, i:i + 8], "mxfp8_e5m2")
                                                              for i in range(0, 32, 8)], 1))


def test_gradient_is_straight_through():
    x = normal_tensor(9, (2, 40)).requires_grad_()
    g = normal_tensor(10, (2, 40))
    softrep.round_to(x, "mxfp6_e3m2").backward(g)
    assert torch.equal(x.grad, g)


def test_mx_input_format_in_products():
    """lowp.mm with an MX input format: a's blocks along its rows, b's along its
    columns (both along k), then softrep's product order."""
    a = normal_tensor(11, (5, 70))
    b = normal_tensor(12, (70, 4))
    for name in ("mxfp8_e4m3", "mxfp4_e2m1", "mxint8"):
        got = lowp.mm(a, b, input_format=name, accumulate_format="bfloat16")
        ar = softrep.round_to(a, name, dim=1)
        br = softrep.round_to(b, name, dim=0)
        assert torch.equal(got, lowp.mm(ar, br, accumulate_format="bfloat16"))
        assert not torch.equal(ar, softrep.round_to(a, name, dim=0))
        assert torch.equal(softrep.mm(a, b, input_format=name), lowp.mm(ar, br))
        out = softrep.linear(a, b.t(), None, input_format=name)
        assert torch.equal(out, lowp.mm(ar, br))


# ---------------------------------------------------------------------------- pychop


def _pychop():
    return pytest.importorskip("pychop", reason="pychop is a test dependency (pip install -e '.[test]')")


def test_pychop_agrees_except_where_the_specification_decides_otherwise():
    """pychop.mx_quantize equals softrep on ordinary blocks in nearest; every
    difference is one of the four recorded in docs/lowprecision.md, and each occurs."""
    pychop = _pychop()
    rng = np.random.Generator(np.random.PCG64(31))
    x = (rng.standard_normal((400, 32)) * 2.0 ** rng.integers(-30, 30, (400, 1))).astype(np.float32)
    x[0, 3] = np.inf
    x[1, 4] = np.nan
    x[2, :2] = [-2.0 ** -12, 1.0]
    x[3, :2] = [-1.995, 1.0]
    kinds = set()
    for name in MX_NAMES:
        got = softrep.round_to(torch.from_numpy(x), name).numpy().astype(np.float64)
        for r in range(x.shape[0]):
            theirs = np.asarray(pychop.mx_quantize(x[r].astype(np.float64), format=name), dtype=np.float64)
            for j in range(32):
                g, t, v = got[r, j], theirs[j], float(x[r, j])
                if (g == t and np.signbit(g) == np.signbit(t)) or (np.isnan(g) and np.isnan(t)):
                    continue
                if not np.all(np.isfinite(x[r])):
                    kind = "special block"           # specification: NaN scale; pychop: scale from the finite rest
                elif g == 0 and t == 0 and v < 0:
                    kind = "sign of zero"            # pychop returns +0 for a negative value rounded to zero
                elif name == "mxint8" and g < 0 and t * 127 == g * 128:
                    kind = "mxint8 -2"               # pychop produces the code -128 (-2 * X)
                else:
                    kind = f"unexpected {name} {v} pychop {t} softrep {g}"
                kinds.add(kind)
    assert kinds == {"special block", "sign of zero", "mxint8 -2"}, kinds


def test_pychop_float16_edge_errors_are_pinned():
    """pychop's IEEE float16 (Chop(5, 10)) at the edges, against MPFR-verified softrep:
    these are pychop's errors; if one disappears, update docs/lowprecision.md."""
    pychop = _pychop()
    import warnings

    cases = [  # (rmode, softrep rounding, x, pychop's result, the correct result)
        (1, "nearest", 70000.0, 0.0, math.inf),
        (1, "nearest", 65520.0, 65536.0, math.inf),
        (2, "up", 65519.0, 65536.0, math.inf),
        (2, "up", 1e-30, 0.0, 2.0 ** -24),
        (3, "down", -1e-30, -0.0, -2.0 ** -24),
        (3, "down", 1e6, math.inf, 65504.0),
        (4, "zero", 1e6, math.inf, 65504.0),
        (8, "nearest_away", -14.22265625, -14.21875, -14.2265625),
        (9, "odd", -0.121826171875, -0.12188720703125, -0.121826171875),
    ]
    for rmode, mode, x, theirs, correct in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = float(np.asarray(pychop.Chop(5, 10, rmode=rmode)(np.array([x])))[0])
        assert t == theirs, (rmode, x, t)
        mine = softrep.round_to(torch.tensor([x], dtype=torch.float64), "float16", mode).item()
        assert mine == correct, (mode, x, mine)
        if mode in ("nearest", "up", "down", "zero"):
            assert float(mpfr_round(Fraction(x), 11, 15, -14, mode)) == correct


# ---------------------------------------------------------------------------- golden and simulator


def _outputs():
    out = {}
    x = torch.from_numpy(mx_blocks())
    n = normal_tensor(13, (4, 3, 45)) * 10
    for name in MX_NAMES:
        for mode in MODES + ("stochastic",):
            out[f"{name}.{mode}.blocks"] = softrep.round_to(x, name, mode, generator=softrep.Generator(4))
            out[f"{name}.{mode}.dim1"] = softrep.round_to(n, name, mode, generator=softrep.Generator(4), dim=1)
        out[f"{name}.scales"] = softrep.quantize_mx(x, name)[1]
    a = normal_tensor(14, (6, 40))
    b = normal_tensor(15, (40, 5))
    out["mm.mxfp8_e4m3.bf16-acc"] = lowp.mm(a, b, input_format="mxfp8_e4m3", accumulate_format="bfloat16")
    return out


def test_golden():
    for key, t in _outputs().items():
        golden_check("mx.json", key, t)


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = torch.from_numpy(mx_blocks()[-8:])
    n = normal_tensor(16, (2, 3, 35))
    cases = [(name, mode) for name in MX_NAMES for mode in MODES + ("stochastic",)]
    sim = {c: (softrep.round_to(x, c[0], c[1], generator=softrep.Generator(5)),
               softrep.quantize_mx(n, c[0], c[1], dim=1, generator=softrep.Generator(6))) for c in cases}
    backend("cpu")
    for (name, mode), (v, (e, s)) in sim.items():
        cv = softrep.round_to(x, name, mode, generator=softrep.Generator(5))
        ce, cs = softrep.quantize_mx(n, name, mode, dim=1, generator=softrep.Generator(6))
        for got, ref in ((v, cv), (e, ce), (s, cs)):
            assert torch.equal(got.view(torch.int32), ref.view(torch.int32)), (name, mode)


# ---------------------------------------------------------------------------- verify-formats


def test_verify_formats_mx_reference_against_the_rational_reference():
    """`verify-formats --mx`'s reference agrees with the exact-rational one on its own
    block generator and the edge blocks above, in every mode."""
    x = np.concatenate([verify_formats.mx_blocks(90, seed=3), mx_blocks()])
    for name in MX_NAMES:
        for mode in MODES:
            ref = torch.from_numpy(verify_formats.reference_mx(x, name, mode))
            _check_against_reference(x, name, mode, ref)


def test_verify_formats_mx_counts_a_wrong_result(monkeypatch):
    x = verify_formats.mx_blocks(30, seed=4)
    assert verify_formats.check_mx(x, "mxfp4_e2m1", "up")[0] == 0
    real = lowp.round_to

    def off_by_one_ulp(t, *args, **kwargs):
        out = real(t, *args, **kwargs).clone()
        out.view(torch.int32)[5, 7] += 1
        return out

    monkeypatch.setattr(lowp, "round_to", off_by_one_ulp)
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")  # main() sets it; monkeypatch restores it
    count, where = verify_formats.check_mx(x, "mxfp4_e2m1", "up")
    assert count == 1 and where[0][:2] == (5, 7)
    assert verify_formats.main(["--no-conversions", "--mx", "--mx-formats", "mxint8", "--modes", "odd",
                                "--mx-blocks", "20"]) == 1
