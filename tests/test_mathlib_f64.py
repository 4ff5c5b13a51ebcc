"""The correctly rounded float64 math functions (softrep/algorithms/math/*_f64,
scheme in multiword.py), against MPFR's correctly rounded binary64 results.

Every function with a float64 kernel (`MathKernel.f64`) is checked here
automatically: CPU against MPFR on a few thousand inputs of every kind and all
committed hard cases (tests/data/mathlib_hard_cases_f64/FUNC.txt), the CUDA
simulator against the CPU bit for bit, golden vectors (one file per function,
tests/golden/mathlib_f64/FUNC.json), float64 gradcheck of the op and of the
nn functions and modules built on it.  The 10^7-input runs are
`python -m softrep verify FUNC --dtype float64` (docs/mathlib.md).
"""

import numpy as np
import pytest
import torch

import softrep
import softrep.ops.math as M
import softrep.tools.verify_f64 as V64
from softrep.algorithms.math import KERNELS

from golden import bit_pattern_tensor, check

F64_NAMES = sorted(n for n, k in KERNELS.items() if k.f64 is not None)
NO_F64 = sorted(n for n, k in KERNELS.items() if k.f64 is None)


def bits64(a):
    return np.ascontiguousarray(a, np.float64).view(np.uint64)


# --------------------------------------------------------------------------- the reference


def test_reference_is_binary64_correctly_rounded():
    """The binary64 context rounds once, subnormals included: exp(-745) is the
    subnormal 2^-1074 (0x1), 2^-1075 (a tie) rounds to even (0), and the Ziv loop
    of sigmoid agrees with a 1000-bit evaluation rounded by hand."""
    import gmpy2

    assert V64.mpfr_f64("exp", -745.0) == 5e-324
    assert V64.mpfr_f64("exp2", -1075.0) == 0.0
    assert V64.mpfr_f64("exp2", -1074.5) == 5e-324
    assert np.isinf(V64.mpfr_f64("exp", 709.8))
    with gmpy2.context(precision=1000):
        v = 1 / (1 + gmpy2.exp(-gmpy2.mpfr(0.3)))
    with gmpy2.context(gmpy2.ieee(64)):
        want = float(gmpy2.mpfr(v))
    assert V64.mpfr_f64("sigmoid", 0.3) == want


def test_inputs_cover_every_binade():
    ends = V64.binade_ends()
    exps = np.unique((bits64(ends) >> np.uint64(52)) & np.uint64(0x7FF))
    assert exps.size == 2047  # 2046 normal exponents and the subnormals
    xs = V64.sample_inputs("exp", 1000)[0]
    assert np.isnan(xs).any() and np.isinf(xs).any() and (xs == 0).any()


# --------------------------------------------------------------------------- CPU against MPFR


def _inputs(name, n=3000, seed=5):
    return V64.sample_inputs(name, n, seed)


@pytest.mark.parametrize("name", F64_NAMES)
def test_cpu_matches_mpfr(name):
    """A few thousand inputs of every kind (specials, binade ends, random bit
    patterns, the function's domain) and every committed hard case."""
    result = V64.check_inputs64(name, _inputs(name))
    assert result.misrounded == 0, V64.report64(result)


@pytest.mark.parametrize("name", F64_NAMES)
def test_hard_cases_committed_and_correct(name):
    """Every function has its hard-case file, and the cases in it take the
    accurate path at least sometimes (otherwise they would not be hard for
    the fast path) and come out correctly rounded."""
    hard = V64.load_hard_cases_f64(name)
    assert hard[0].size > 0, f"no tests/data/mathlib_hard_cases_f64/{name}.txt"
    result = V64.check_inputs64(name, hard)
    assert result.misrounded == 0, V64.report64(result)
    assert result.accurate > 0


def test_planted_one_ulp_error_is_caught(monkeypatch):
    """A kernel that is off by one ulp at one input fails the verifier there."""
    honest = V64.kernel_output64
    planted = {}

    def off_by_one_ulp(name, args, backend="cpu"):
        out = honest(name, args, backend).copy()
        i = out.size // 2
        planted["x"] = int(bits64(args[0])[i])
        out[i] += np.uint64(1)
        return out

    monkeypatch.setattr(V64, "kernel_output64", off_by_one_ulp)
    result = V64.run64("exp", sample=2000, progress=False)
    assert result.misrounded == 1
    (xb,), got, want = result.examples[0]
    assert xb == planted["x"] and got == want + 1
    assert "misrounded" in V64.report64(result) and not result.proven


def test_cli_float64(capsys):
    from softrep.tools import verify

    assert verify.main(["exp", "--dtype", "float64", "--sample", "500", "--no-save"]) == 0
    assert "0 misrounded" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--sample N only"):
        verify.main(["exp", "--dtype", "float64", "--exhaustive"])


def test_every_function_takes_float64():
    # all 22 functions have a correctly rounded float64 kernel, so no float64
    # call is refused any more
    assert NO_F64 == []
    for name, fn in M.FUNCTIONS.items():
        got = fn.op(*(torch.full((2,), 0.5, dtype=torch.float64),) * fn.arity)
        assert got.dtype == torch.float64, name


# --------------------------------------------------------------------------- simulator, golden


def _sim_inputs(name):
    hard = V64.load_hard_cases_f64(name)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 5e-324, -1e-310, 3.0, -20.5, 700.25,
                        -740.0, 1e300])
    args = tuple(np.concatenate([special if i == 0 else special[::-1], h[:6]]) for i, h in enumerate(hard))
    return tuple(torch.from_numpy(a) for a in args)


@pytest.mark.simulator
@pytest.mark.parametrize("name", F64_NAMES)
def test_simulator_matches_cpu(name, backend):
    """The CUDA kernel (simulated: exact rational primitives) gives the CPU bits,
    hard cases (the accurate path) included."""
    x = _sim_inputs(name)
    op = M.FUNCTIONS[name].op
    backend("cuda")
    sim = op(*x)
    backend("cpu")
    cpu = op(*x)
    assert np.array_equal(bits64(sim.numpy()), bits64(cpu.numpy()))


@pytest.mark.parametrize("name", F64_NAMES)
def test_golden(name):
    fn = M.FUNCTIONS[name]
    rng = np.random.Generator(np.random.PCG64(64))
    args = []
    for i in range(fn.arity):
        domain = V64.domain_sample(name, 2048, rng) if fn.arity == 1 else V64.pair_sample(name, 2048, rng)[i]
        hard = V64.load_hard_cases_f64(name)[i][:64]
        args.append(torch.cat([bit_pattern_tensor(640 + i, (2048,), torch.float64), torch.from_numpy(domain),
                               torch.from_numpy(np.ascontiguousarray(hard))]))
    check(f"mathlib_f64/{name}.json", name, fn.op(*args))


# --------------------------------------------------------------------------- autograd in float64

GRAD_DOMAIN = {"log": (0.2, 3.0), "log2": (0.2, 3.0), "log10": (0.2, 3.0), "log1p": (-0.8, 3.0),
               "rsqrt": (0.2, 3.0), "cbrt": (0.2, 3.0)}


@pytest.mark.parametrize("name", F64_NAMES)
def test_gradcheck_op(name):
    fn = M.FUNCTIONS[name]
    lo, hi = GRAD_DOMAIN.get(name, (-3.0, 3.0))
    args = [torch.linspace(lo, hi, 13, dtype=torch.float64).requires_grad_()]
    if fn.arity == 2:
        args = [torch.linspace(0.3, 3.0, 13, dtype=torch.float64).requires_grad_(),
                torch.linspace(-2.0, 2.0, 13, dtype=torch.float64).requires_grad_()]
    assert torch.autograd.gradcheck(fn.op, tuple(args))


def _module(cls, *a, **k):
    return lambda x: cls(*a, **k)(x)


# The nn functions and modules that use a math function, and which ones they use.
NN_CASES = {
    "silu": (softrep.nn.functional.silu, ("sigmoid",)),
    "sigmoid": (softrep.nn.functional.sigmoid, ("sigmoid",)),
    "tanh": (softrep.nn.functional.tanh, ("tanh",)),
    "softplus": (softrep.nn.functional.softplus, ("exp", "log1p")),
    "mish": (softrep.nn.functional.mish, ("exp", "log1p", "tanh")),
    "gelu": (softrep.nn.functional.gelu, ("erf",)),
    "gelu_tanh": (lambda x: softrep.nn.functional.gelu(x, approximate="tanh"), ("tanh",)),
    "softmax": (lambda x: softrep.nn.functional.softmax(x, -1), ("exp",)),
    "log_softmax": (lambda x: softrep.nn.functional.log_softmax(x, -1), ("exp", "log")),
    "logsumexp": (lambda x: softrep.logsumexp(x, -1), ("exp", "log")),
    "cross_entropy": (lambda x: softrep.nn.functional.cross_entropy(x, torch.tensor([0, 2, 1])), ("exp", "log")),
    "bce_with_logits": (lambda x: softrep.nn.functional.binary_cross_entropy_with_logits(
        x, torch.full_like(x, 0.25)), ("exp", "log1p", "sigmoid")),
    "GELU": (_module(softrep.nn.GELU), ("erf",)),
    "SiLU": (_module(softrep.nn.SiLU), ("sigmoid",)),
    "Tanh": (_module(softrep.nn.Tanh), ("tanh",)),
    "Sigmoid": (_module(softrep.nn.Sigmoid), ("sigmoid",)),
    "Softmax": (_module(softrep.nn.Softmax, dim=-1), ("exp",)),
    "LogSoftmax": (_module(softrep.nn.LogSoftmax, dim=-1), ("exp", "log")),
}


@pytest.mark.parametrize("case", sorted(NN_CASES))
def test_gradcheck_nn(case):
    """float64 gradcheck of every nn function and module built on a math function;
    while one of its math functions has no float64 version, it must say so."""
    fn, needs = NN_CASES[case]
    x = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).requires_grad_()
    missing = [n for n in needs if KERNELS[n].f64 is None]
    if missing:
        with pytest.raises(TypeError, match="float64"):
            fn(x)
        return
    assert torch.autograd.gradcheck(fn, (x,))
