"""The rounding primitives against MPFR, on every implementation.

* compiled CPU kernels (`softrep/primitives/cpu_lowering.py`), through the elementwise launcher;
* the Python semantics that the CUDA simulator runs (`softrep/primitives/pyfloat.py`);
* the CUDA kernels in the simulator itself (marked `simulator`).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import softrep  # noqa: F401
from softrep.primitives import rounding as R
from softrep.cpu import launch as cpu_launch
from references import identical_bits, mpfr_op, same_bits
from strategies import floats

OPS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "sqrt": 1, "fma": 3}
SUFFIXES = {"nearest": "rn", "down": "rd", "up": "ru", "zero": "rz"}
CASES = [(op, rnd, dt) for op in OPS for rnd in SUFFIXES for dt in (np.float32, np.float64)]
IDS = [f"{op}_{SUFFIXES[r]}_{dt.__name__}" for op, r, dt in CASES]
BATCH = 24


def _operands(dtype, nargs):
    return st.lists(st.tuples(*[floats(dtype)] * nargs), min_size=1, max_size=BATCH)


def _run_cpu(op, rounding, dtype, rows):
    nargs = OPS[op]
    cols = [np.array([r[k] for r in rows], dtype=dtype) for k in range(nargs)]
    out = np.empty(len(rows), dtype=dtype)
    cpu_launch.elementwise(R.primitive(op, rounding), nargs)(out, *cols)
    return out


def _check(op, rounding, dtype, rows, results):
    for args, got in zip(rows, results):
        want = mpfr_op(op, args, dtype, rounding)
        assert identical_bits(dtype(got), want), (
            f"{op}_{SUFFIXES[rounding]}{tuple(float(a) for a in args)} = {got!r}, MPFR says {want!r}")


@pytest.mark.parametrize("op,rounding,dtype", CASES, ids=IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cpu_kernel_matches_mpfr(op, rounding, dtype, data):
    rows = data.draw(_operands(dtype, OPS[op]))
    _check(op, rounding, dtype, rows, _run_cpu(op, rounding, dtype, rows))


@pytest.mark.parametrize("op,rounding,dtype", CASES, ids=IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_python_semantics_match_mpfr(op, rounding, dtype, data):
    rows = data.draw(_operands(dtype, OPS[op]))
    f = R.primitive(op, rounding)
    _check(op, rounding, dtype, rows, [f(*args) for args in rows])


# Hand-picked cases each of which a plausible implementation bug gets wrong.
_F32 = np.float32
_TINY32 = _F32(np.ldexp(1.0, -149))
_MAX32 = np.finfo(np.float32).max
_HAND = [
    ("add", (_F32(1), _F32(np.ldexp(1.0, -24)))),               # exact tie, to even
    ("add", (_F32(1 + 2**-23), _F32(np.ldexp(1.0, -24)))),      # exact tie, to even (up)
    ("add", (_F32(3), _F32(-3))),                                # exact zero: -0 when rounding down
    ("add", (_F32(-0.0), _F32(0.0))),
    ("add", (_F32(-0.0), _F32(-0.0))),
    ("add", (_MAX32, _MAX32)),                                   # overflow
    ("add", (_MAX32, _F32(np.ldexp(1.0, 103)))),                 # exactly half an ulp above MAX
    ("sub", (_F32(np.inf), _F32(np.inf))),
    ("mul", (_TINY32, _F32(0.5))),                               # underflow tie to zero
    ("mul", (_TINY32, _F32(1.5))),                               # underflow tie to even
    ("mul", (_F32(np.ldexp(1.0, -75)), _F32(np.ldexp(1.5, -75)))),
    ("mul", (_F32(-1e-30), _F32(1e-30))),                        # negative underflow
    ("mul", (_F32(np.inf), _F32(0.0))),
    ("mul", (_MAX32, _F32(1 + 2**-23))),
    ("div", (_F32(1), _F32(3))),
    ("div", (_F32(1), _F32(0.0))),
    ("div", (_F32(-1), _F32(0.0))),
    ("div", (_F32(0.0), _F32(0.0))),
    ("div", (_TINY32, _F32(2))),
    ("div", (_MAX32, _F32(0.5))),
    ("sqrt", (_F32(-0.0),)),
    ("sqrt", (_F32(2),)),
    ("sqrt", (_TINY32,)),
    ("sqrt", (_F32(-1),)),
    ("fma", (_F32(1 + 2**-23), _F32(1 - 2**-24), _F32(-1))),     # cancellation, residual below ulp
    ("fma", (_F32(2), _F32(3), _F32(-6))),                       # exact zero
    ("fma", (_F32(0.0), _F32(-1), _F32(0.0))),                   # (-0) + (+0)
    ("fma", (_F32(1e-30), _F32(1e-30), _F32(-0.0))),
    ("fma", (_TINY32, _F32(0.5), _F32(0.0))),
    ("fma", (_MAX32, _F32(2), _F32(-_MAX32))),                   # intermediate beyond MAX, result finite
    ("sub", (_F32(3e29), _MAX32)),                               # |sum| near MAX: no overflow in the error term
    ("fma", (_F32(np.inf), _F32(0.0), _F32(1))),
    ("fma", (_F32(1), _F32(1), _F32(np.ldexp(1.0, -24)))),
]


def _as64(args):
    return tuple(np.float64(a) for a in args)


_HAND64 = [
    # |sum| near the largest double: TwoSum's intermediate s - a would overflow
    ("sub", (np.float64(2.9937604643020797e+292), np.float64(np.finfo(np.float64).max))),
    ("add", (np.float64(-2.9937604643020797e+292), np.float64(np.finfo(np.float64).max))),
    ("mul", (np.float64(np.ldexp(1.0, -600)), np.float64(np.ldexp(1.5, -480)))),   # subnormal result
    ("mul", (np.float64(np.ldexp(1.0, -1074)), np.float64(0.75))),
    ("mul", (np.float64(np.ldexp(1.0, -540)), np.float64(np.ldexp(1.0, -540)))),   # full underflow
    ("div", (np.float64(np.ldexp(1.0, -1000)), np.float64(np.ldexp(3.0, 70)))),
    ("div", (np.float64(1e308), np.float64(1e-10))),
    ("sqrt", (np.float64(np.ldexp(1.0, -1073)),)),
    ("fma", (np.float64(np.ldexp(1.0, 600)), np.float64(np.ldexp(1.0, 600)), np.float64(-1e308))),
    ("fma", (np.float64(np.ldexp(1.0, 512)), np.float64(np.ldexp(1.0, 512)), np.float64(-np.finfo(np.float64).max))),
    ("fma", (np.float64(np.ldexp(1.0, -600)), np.float64(np.ldexp(1.0, -600)), np.float64(1.0))),   # tiny product
    ("fma", (np.float64(np.ldexp(1.0, -600)), np.float64(np.ldexp(1.0, -600)), np.float64(np.ldexp(1.0, -1074)))),
    ("fma", (np.float64(1e200), np.float64(1e200), np.float64(-np.inf))),
    ("fma", (np.float64(3.0), np.float64(1.0 / 3.0), np.float64(-1.0))),
    ("fma", (np.float64(1 + 2**-52), np.float64(1 - 2**-53), np.float64(-1.0))),
    ("fma", (np.float64(np.ldexp(1.0, 1000)), np.float64(np.ldexp(1.0, -1000)), np.float64(np.ldexp(1.0, -1070)))),
]

HAND_CASES = _HAND + [(op, _as64(args)) for op, args in _HAND] + _HAND64


@pytest.mark.parametrize("rounding", list(SUFFIXES))
@pytest.mark.parametrize("op,args", HAND_CASES, ids=[f"{op}{i}" for i, (op, _) in enumerate(HAND_CASES)])
def test_hand_picked_cases(op, args, rounding):
    dtype = type(args[0])
    want = mpfr_op(op, args, dtype, rounding)
    got_cpu = _run_cpu(op, rounding, dtype, [args])[0]
    got_py = R.primitive(op, rounding)(*args)
    assert identical_bits(got_cpu, want), f"CPU {op}{args} {rounding}: {got_cpu!r} != {want!r}"
    assert identical_bits(got_py, want), f"Python {op}{args} {rounding}: {got_py!r} != {want!r}"


def test_cpu_does_not_contract_mul_add():
    """mul_rn then add_rn is two roundings on the CPU, never a fused multiply-add."""
    import numba

    @numba.njit
    def mul_then_add(a, b, c):
        return R.add_rn(R.mul_rn(a, b), c)

    a, b, c = np.float32(1 + 2**-23), np.float32(1 - 2**-24), np.float32(-1)
    two_roundings = mpfr_op("add", (mpfr_op("mul", (a, b), np.float32), c), np.float32)
    fused = mpfr_op("fma", (a, b, c), np.float32)
    assert not same_bits(two_roundings, fused)  # the inputs tell the two apart
    assert same_bits(np.float32(mul_then_add(a, b, c)), two_roundings)
    a64, b64, c64 = np.float64(1 + 2**-52), np.float64(1 - 2**-53), np.float64(-1)
    assert same_bits(np.float64(mul_then_add(a64, b64, c64)), mpfr_op("add", (mpfr_op("mul", (a64, b64), np.float64), c64), np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rounding", list(SUFFIXES))
def test_cpu_division_by_zero_is_ieee_under_every_error_model(dtype, rounding):
    """div by +-0 gives +-inf (or NaN for 0/0) in a kernel compiled with Numba's
    default error model too, whose own `/` raises ZeroDivisionError."""
    import numba

    div = R.primitive("div", rounding)

    @numba.njit  # error_model="python", as every kernel without error_model="numpy"
    def quotient(a, b):
        return div(a, b)

    one, zero = dtype(1.0), dtype(0.0)
    assert quotient(one, zero) == np.inf
    assert quotient(one, -zero) == -np.inf
    assert quotient(-one, zero) == -np.inf
    assert np.isnan(quotient(zero, zero))


def test_wrapping_integer_sums_match_across_targets():
    """wrapping_add and wrapping_sub: uint64 sums modulo 2^64, the same in
    Python (the simulator's semantics, without numpy's overflow warning) as
    compiled, including the sums that wrap."""
    import warnings

    from numba import njit

    rng = np.random.default_rng(4)
    a = np.concatenate([rng.integers(0, 2**64, 200, dtype=np.uint64), np.array([0, 1, 2**63, 2**64 - 1], np.uint64)])
    b = a[::-1].copy()
    compiled = njit(lambda a, b: [(R.wrapping_add(a[i], b[i]), R.wrapping_sub(a[i], b[i])) for i in range(a.size)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        python = [(R.wrapping_add(x, y), R.wrapping_sub(x, y)) for x, y in zip(a, b)]
    expected = [((int(x) + int(y)) % 2**64, (int(x) - int(y)) % 2**64) for x, y in zip(a, b)]
    assert [(int(s), int(d)) for s, d in python] == expected
    assert [(int(s), int(d)) for s, d in compiled(a, b)] == expected
    assert all(type(s) is np.uint64 and type(d) is np.uint64 for s, d in python)


def test_mixed_types_are_rejected():
    with pytest.raises(TypeError, match="one type"):
        R.add_rn(np.float32(1), np.float64(1))


@pytest.mark.simulator
@pytest.mark.parametrize("op,rounding,dtype", CASES, ids=IDS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_simulator_kernel_matches_mpfr(op, rounding, dtype, data):
    from softrep.cuda import launch as cuda_launch

    rows = data.draw(_operands(dtype, OPS[op]))
    nargs = OPS[op]
    cols = [np.array([r[k] for r in rows], dtype=dtype) for k in range(nargs)]
    out = np.empty(len(rows), dtype=dtype)
    cuda_launch.elementwise(R.primitive(op, rounding), nargs)(0, out, *cols)
    _check(op, rounding, dtype, rows, out)
