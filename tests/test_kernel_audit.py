"""The kernel audit (softrep/tools/kernel_audit.py, docs/audit.md): every
registered kernel passes it, each CPU rule catches a planted violation, and
every kernel the elementwise and math ops launch is registered before any op
runs, so the audit sees it.  The CUDA rules are tested in tests/test_ptx_audit.py."""

import math
from types import SimpleNamespace

import numba
import numpy as np
import pytest
import torch
from llvmlite import ir as llvm_ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic

import softrep
from softrep.cpu import launch as cpu_launch
from softrep.cuda import launch as cuda_launch
from softrep.ops import backend
from softrep.ops import elementwise as E
from softrep.ops.math import FUNCTIONS
from softrep.primitives import rounding as R
from softrep.tools import kernel_audit as KA

F32 = types.Array(types.float32, 1, "C")
F64 = types.Array(types.float64, 1, "C")
ONE_CC = ((8, 0),)


# --------------------------------------------------------------------------- the registry


def test_kernels_missed_by_the_old_registration_are_registered():
    kernels = KA.load_kernels(("cpu",))["cpu"]
    # abs's backward launches sign through the elementwise launcher
    assert kernels["elementwise.sign"].signatures() == ((F32, F32), (F64, F64))
    assert cuda_launch.KERNELS["elementwise.sign"].signatures() == ((F32, F32), (F64, F64))
    # float64 math kernels, and float32-only functions registered for float32 only
    assert kernels["elementwise.exp_kernel.decided_first64"].signatures() == ((F64, F64),)
    assert kernels["elementwise.exp_kernel.decided_first"].signatures() == ((F32, F32),)
    assert cuda_launch.KERNELS["elementwise.exp_kernel"].signatures() == ((F32, F32), (F64, F64))
    assert cuda_launch.KERNELS["elementwise.pow_kernel"].signatures() == ((F32,) * 3, (F64,) * 3)


def test_launchers_carry_their_registered_kernels():
    cpu_run, cuda_run = E.launchers(R.add_ru, 2)
    # the parallel kernel, and the serial kernels of small launches (one per dtype)
    assert cpu_run.kernels == (cpu_launch.KERNELS["elementwise.add_ru"],
                               cpu_launch.KERNELS["elementwise.add_ru.serial.float32"],
                               cpu_launch.KERNELS["elementwise.add_ru.serial.float64"])
    assert cuda_run.kernels == (cuda_launch.KERNELS["elementwise.add_ru"],)
    assert cpu_run.kernels[0].build()[0] is cpu_run  # the dispatcher the launcher is


@pytest.mark.parametrize("registry", [cpu_launch, cuda_launch], ids=["cpu", "cuda"])
def test_registration_forms_and_unique_names(registry):
    def fake(out, x):
        pass

    fake_kernel = SimpleNamespace(py_func=fake)  # what njit and cuda.jit return, as far as registering goes
    name = f"test.fake.{registry.__name__}"
    try:
        assert registry.kernel(name, (F32, F32), (F64, F64))(fake_kernel) is fake_kernel
        assert registry.KERNELS[name].signatures() == ((F32, F32), (F64, F64))
        with pytest.raises(ValueError, match=f"'{name}' is already registered"):
            registry.register(name, lambda: (fake_kernel, (F32, F32)))
        registry.register(name + ".one", lambda: (fake_kernel, (F32, F32)))
        assert registry.KERNELS[name + ".one"].signatures() == ((F32, F32),)
    finally:
        registry.KERNELS.pop(name, None)
        registry.KERNELS.pop(name + ".one", None)


def test_the_old_register_entry_adds_to_the_cuda_registry():
    from softrep.cuda import audit

    assert audit.register is cuda_launch.register


@pytest.mark.parametrize("nin", [0, 4])
def test_elementwise_rejects_a_bad_input_count(nin):
    with pytest.raises(ValueError, match=f"nin={nin}"):
        cpu_launch.elementwise(R.add_rn, nin)
    with pytest.raises(ValueError, match=f"nin={nin}"):
        cuda_launch.elementwise(R.add_rn, nin)


# --------------------------------------------------------------------------- every launch is registered


def _run_every_elementwise_and_math_op(monkeypatch):
    """Run every public elementwise op (each rounding) and math op (each dtype it
    has), forward and backward, recording what each launch ran: (launcher, arrays)."""
    launched = []
    execute = backend.execute

    def recording_execute(cpu_launcher, cuda_launcher, outputs, inputs, *args, **kwargs):
        def cpu_run(*arrays):
            launched.append((cpu_launcher, arrays))
            return cpu_launcher(*arrays)

        def cuda_run(stream, *arrays):
            launched.append((cuda_launcher, arrays))
            return cuda_launcher(stream, *arrays)

        return execute(cpu_run, cuda_run, outputs, inputs, *args, **kwargs)

    monkeypatch.setattr(backend, "execute", recording_execute)
    # Tiny tensors would take the serial kernel on the calling thread (its own
    # registered `.serial` kernels); record the general launches instead.
    monkeypatch.setattr(backend, "cpu_dtype", lambda tensors: None)
    monkeypatch.setattr(backend, "light_dtype", lambda tensors, same_shape=True: None)

    def inputs(n, dtype):
        values = [[0.5, 0.75], [1.5, 2.0], [0.25, 3.0]][:n]
        return [torch.tensor(v, dtype=dtype, requires_grad=True) for v in values]

    for dtype in (torch.float32, torch.float64):
        for name, spec in E.SPECS.items():
            for rounding in R.MODES:
                out = getattr(E, name)(*inputs(len(spec.arg_names), dtype), rounding=rounding)
                out.sum().backward()
        for fn in FUNCTIONS.values():
            if dtype == torch.float64 and fn.f64 is None:
                continue
            fn.op(*inputs(fn.arity, dtype)).sum().backward()
    return launched


def _check_launches_were_registered(launched, registered):
    assert launched
    names = set()
    for launcher, arrays in launched:
        kernels = getattr(launcher, "kernels", ())
        assert kernels, f"{launcher} ran a kernel that is not in the registry"
        for k in kernels:
            assert registered.get(k.name) is k, f"{k.name} was registered only when it was launched"
        signature = tuple(numba.typeof(a) for a in arrays)
        assert any(signature in k.signatures() for k in kernels), \
            f"{[k.name for k in kernels]} launched with {signature}, registered for other types"
        names.update(k.name for k in kernels)
    return names


def test_every_cpu_launch_of_the_elementwise_and_math_ops_is_registered(monkeypatch):
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
    registered = KA.load_kernels(("cpu",))["cpu"]
    names = _check_launches_were_registered(_run_every_elementwise_and_math_op(monkeypatch), registered)
    assert {"elementwise.sign", "elementwise.exp_kernel.decided_first64", "elementwise.exp_kernel.decided_first",
            "elementwise.fma_rz", "elementwise.hypot_kernel"} <= names


@pytest.mark.simulator
def test_every_cuda_launch_of_the_elementwise_and_math_ops_is_registered(monkeypatch):
    monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
    registered = KA.load_kernels(("cuda",))["cuda"]
    names = _check_launches_were_registered(_run_every_elementwise_and_math_op(monkeypatch), registered)
    assert {"elementwise.sign", "elementwise.exp_kernel", "elementwise.fma_rz"} <= names


def test_the_launch_check_catches_a_kernel_registered_late(monkeypatch):
    """A launcher made at launch time (not when its op is defined) is caught."""
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
    registered = KA.load_kernels(("cpu",))["cpu"]

    @R.jitable
    def late_kernel(x):
        return R.mul_rn(x, x)

    try:
        run = cpu_launch.elementwise(late_kernel, 1)
        x = np.ones(2, np.float32)
        with pytest.raises(AssertionError, match="registered only when it was launched"):
            _check_launches_were_registered([(run, (np.empty_like(x), x))], registered)
        with pytest.raises(AssertionError, match="not in the registry"):
            _check_launches_were_registered([(run.py_func, (np.empty_like(x), x))], registered)
    finally:
        cpu_launch.KERNELS.pop("elementwise.late_kernel", None)


# --------------------------------------------------------------------------- CPU rules


def _cpu_findings(fn, signature=(F32, F32)):
    return KA.check_cpu_llvm(KA.cpu_llvm(fn, signature))


def _whys(findings):
    return " | ".join(why for why, _ in findings)


@njit(error_model="numpy")
def _plain(out, x):
    for i in range(out.size):
        out[i] = x[i] * x[i] + x[i]


@njit(fastmath=True)
def _fastmath(out, x):
    for i in range(out.size):
        out[i] = x[i] * x[i] + x[i]


@njit(parallel=True, fastmath={"contract"})
def _contract_in_parallel_loop(out, x):
    for i in prange(out.size):
        out[i] = x[i] * x[i] + x[i]


@njit
def _math_exp(out, x):
    for i in range(out.size):
        out[i] = math.exp(x[i])


@njit
def _libm_atan2(out, x):
    for i in range(out.size):
        out[i] = math.atan2(x[i], out[i])


@njit
def _remainder(out, x):
    for i in range(out.size):
        out[i] = x[i] % out[i]


@intrinsic
def _minnum(typingctx, a, b):
    def codegen(context, builder, signature, args):
        fnty = llvm_ir.FunctionType(llvm_ir.FloatType(), [llvm_ir.FloatType()] * 2)
        return builder.call(cgutils.get_or_insert_function(builder.module, fnty, "llvm.minnum.f32"), args)

    return types.float32(types.float32, types.float32), codegen


@njit
def _min_intrinsic(out, x):
    for i in range(out.size):
        out[i] = _minnum(x[i], out[i])


@njit
def _numpy_minimum(out, x):
    for i in range(out.size):
        out[i] = np.maximum(np.minimum(x[i], out[i]), x[i])


def test_cpu_rules_pass_plain_ieee_arithmetic_and_read_the_kernels_ir():
    ir = KA.cpu_llvm(_plain, (F32, F32))
    assert "fmul float" in ir and "fadd float" in ir  # the arithmetic, without flags
    assert not KA.check_cpu_llvm(ir)


def test_cpu_rule_fast_math_flags():
    assert "fast-math flag 'fast'" in _whys(_cpu_findings(_fastmath))
    # inside the outlined body of a parallel loop too
    assert "fast-math flag 'contract'" in _whys(_cpu_findings(_contract_in_parallel_loop))


def test_cpu_rule_llvm_math_intrinsics_and_libm():
    assert "LLVM float intrinsic llvm.exp.f32" in _whys(_cpu_findings(_math_exp))
    assert "libm function atan2f" in _whys(_cpu_findings(_libm_atan2))


def test_cpu_rule_min_max():
    assert "min/max intrinsic llvm.minnum.f32" in _whys(_cpu_findings(_min_intrinsic))
    # numpy's minimum/maximum lower to a compare and a select, which are exact
    assert not _cpu_findings(_numpy_minimum)


def test_cpu_rule_remainder():
    assert "float remainder (frem)" in _whys(_cpu_findings(_remainder))


def test_cpu_rules_on_written_ir():
    ir = "\n".join([
        "declare float @customf(float)",
        "declare i64 @counter(i64)",
        "declare double @PyFloat_AsDouble(ptr)",
        "define void @k(ptr %p, float %x) #0 {",
        "  %a = atomicrmw fadd ptr %p, float %x seq_cst",
        "  %b = call float @customf(float %x)",
        "  %c = call i64 @counter(i64 1)",
        "  %h = call double @PyFloat_AsDouble(ptr %obj)",
        "  %d = call float @llvm.fma.f32(float %x, float %x, float %x)",
        "  %e = call float @llvm.fmuladd.f32(float %x, float %x, float %x)",
        "  %f = call <8 x float> @llvm.vector.reduce.fmax.v8f32(<8 x float> %v)",
        '  %g = fadd float %x, %x, !fast !0',
        "  ret void",
        "}",
        'attributes #0 = { "denormal-fp-math"="preserve-sign,preserve-sign" "no-nans-fp-math"="true" }',
    ])
    whys = _whys(KA.check_cpu_llvm(ir))
    for expected in ("float atomic (atomicrmw fadd)", "external function on floats customf",
                     "LLVM float intrinsic llvm.fmuladd.f32", "min/max intrinsic llvm.vector.reduce.fmax",
                     "flush-to-zero (denormal-fp-math=preserve-sign,preserve-sign)",
                     "fast-math function attribute no-nans-fp-math"):
        assert expected in whys
    assert "counter" not in whys and "llvm.fma.f32" not in whys and "PyFloat" not in whys
    assert "'fast'" not in whys  # a metadata name is not a flag


# --------------------------------------------------------------------------- the whole audit


def test_every_registered_kernel_passes_the_audit():
    """Every CPU kernel, and every CUDA kernel for one compute capability (the
    command line compiles for three)."""
    kernels = KA.load_kernels()
    assert len(kernels["cpu"]) > 50 and len(kernels["cuda"]) > 80
    expected = (sum(len(k.signatures()) for k in kernels["cpu"].values())
                + sum(len(k.signatures()) for k in kernels["cuda"].values()) * len(ONE_CC))
    count, findings = KA.audit(ccs=ONE_CC)
    assert count == expected
    assert not findings, "\n".join(map(str, findings[:40]))
