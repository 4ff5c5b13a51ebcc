"""The CUDA rules of the kernel audit (softrep/tools/kernel_audit.py,
docs/audit.md), no GPU needed: each catches a planted violation, and kernels
made of the rounding primitives pass.  The audit of every registered kernel is
in tests/test_kernel_audit.py."""

import pytest
from numba import cuda, types

from softrep.primitives import rounding as R
from softrep.primitives.jit import require_cuda
from softrep.tools import kernel_audit as KA

F16 = types.Array(types.float16, 1, "C")
F32 = types.Array(types.float32, 1, "C")
CC = (9, 0)

require_cuda()  # the primitives and jitables, registered for CUDA


def _bare_mul_add(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * x[i] + x[i]


def _primitive_mul_add(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = R.add_rn(R.mul_rn(x[i], x[i]), x[i])


def _explicit_fma(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = R.fma_rn(x[i], x[i], x[i])


def _libdevice_exp(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = cuda.libdevice.expf(x[i])


def _builtin_max(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = max(x[i], out[i])


def _half_add(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = cuda.fp16.hadd(x[i], out[i])


def _findings(fn, signature=(F32, F32), cc=CC):
    ir, ptx = KA.cuda_compile(fn, signature, cc)
    return KA.check_cuda_llvm(ir), KA.check_ptx(ptx), ptx


def _whys(findings):
    return " | ".join(why for why, _ in findings)


def test_audit_rejects_bare_float_arithmetic():
    llvm, _, ptx = _findings(_bare_mul_add)
    assert "fma.rn.f32" in ptx  # NVVM fused the bare a*b+c, as documented
    assert "bare float arithmetic" in _whys(llvm)


def test_audit_accepts_primitives_and_keeps_them_separate():
    llvm, found, ptx = _findings(_primitive_mul_add)
    assert not llvm and not found
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx and "fma" not in ptx


def test_audit_accepts_an_explicit_fma():
    llvm, found, ptx = _findings(_explicit_fma)
    assert not llvm and not found and "fma.rn.f32" in ptx


def test_audit_rejects_libdevice_transcendentals_and_approx():
    llvm, found, _ = _findings(_libdevice_exp)
    assert "libdevice function __nv_expf" in _whys(llvm)
    assert "approximate instruction" in _whys(found)
    assert KA.check_ptx("  ex2.approx.ftz.f32 %f1, %f2;")
    assert KA.check_ptx("  add.f32 %f1, %f2, %f3;")
    assert not KA.check_ptx("  add.rz.f32 %f1, %f2, %f3;")


def test_audit_rejects_min_max():
    llvm, found, _ = _findings(_builtin_max)
    assert "libdevice function __nv_fmaxf" in _whys(llvm)
    assert "float min/max" in _whys(found)
    assert "LLVM math intrinsic llvm.minnum" in _whys(KA.check_cuda_llvm(
        "  %r = call float @llvm.minnum.f32(float %a, float %b)"))
    assert not KA.check_ptx("  min.s32 %r1, %r2, %r3;")  # integer min is exact


def test_audit_rejects_half_precision():
    llvm, _, _ = _findings(_half_add, (F16, F16))
    # numba-cuda stores float16 as i16 and adds through cuda_fp16's C++, linked in after the audit
    assert "external function _ZL6__hadd" in _whys(llvm)
    assert "half-precision value (half)" in _whys(KA.check_cuda_llvm("  %r = fadd half %a, %b"))
    assert "half-precision value (bfloat)" in _whys(KA.check_cuda_llvm("  %r = fpext bfloat %a to float"))
    assert "half-precision instruction (.f16)" in _whys(KA.check_ptx("  add.rn.f16 %h1, %h2, %h3;"))
    assert "half-precision instruction (.bf16x2)" in _whys(KA.check_ptx("  fma.rn.bf16x2 %r1, %r2, %r3, %r4;"))


def test_audit_rejects_float_mad_only():
    assert "float mad" in _whys(KA.check_ptx("  mad.rn.f32 %f1, %f2, %f3, %f4;"))
    assert "float mad" in _whys(KA.check_ptx("  @%p1 mad.f64 %fd1, %fd2, %fd3, %fd4;"))
    assert not KA.check_ptx("  mad.lo.s32 %r1, %r2, %r3, %r4;")  # exact integer index arithmetic
    assert not KA.check_ptx("  mad.wide.u32 %rd1, %r2, 4, %rd3;")


@pytest.mark.parametrize("line", [
    "  %r = tail call fast float @__nv_fmaf_rn(float %a, float %b, float %c)",
    "  %r = call contract float @__nv_fadd_rn(float %a, float %b)",
    "  %r = fcmp nnan olt float %a, %b",
])
def test_audit_rejects_fast_math_flags(line):
    assert "fast-math flag" in _whys(KA.check_cuda_llvm(line))


def test_audit_accepts_the_rounded_libdevice_calls():
    assert not KA.check_cuda_llvm("  %r = call float @__nv_fmaf_rn(float %a, float %b, float %c)")
    assert not KA.check_cuda_llvm('  %r = call float @"__nv_fadd_rz"(float %a, float %b)')


def test_audit_ptx_is_the_cuda_half_of_audit_kernels(monkeypatch):
    from softrep import __main__ as cli

    seen = {}

    def fake_audit(targets, names, ccs, progress=None):
        seen.update(targets=targets, ccs=ccs, names=names)
        return 0, []

    monkeypatch.setattr(KA, "audit", fake_audit)
    assert cli.main(["audit-ptx", "--cc", "8.0", "--filter", "elementwise.add_rn"]) == 0
    assert seen["targets"] == ("cuda",) and seen["ccs"] == ((8, 0),)
    assert seen["names"] == {"elementwise.add_rn"}
    with pytest.raises(SystemExit):
        cli.main(["audit-kernels", "--cc", "eight"])
