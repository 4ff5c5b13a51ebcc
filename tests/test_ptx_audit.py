"""PTX audit of every registered CUDA kernel (no GPU needed), and proof that the
audit catches what it must catch."""

from numba import cuda
from numba.core import types

import softrep  # noqa: F401  (imports register every kernel)
from softrep.primitives import rounding as R
from softrep.cuda import audit


F32 = types.Array(types.float32, 1, "C")


def test_every_registered_kernel_passes():
    names = sorted(audit.registered())
    assert len(names) > 50, "expected the elementwise kernels at least"
    count, findings = audit.audit(names)
    assert count == len(names) * len(audit.CCS)
    assert not findings, "\n".join(map(str, findings[:40]))


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


def _findings(fn, cc=(9, 0)):
    ir, ptx = audit.compile_kernel(fn, (F32, F32), cc)
    return audit.check_ir("t", cc, ir) + audit.check_ptx("t", cc, ptx), ptx


def test_audit_rejects_bare_float_arithmetic():
    findings, ptx = _findings(_bare_mul_add)
    assert "fma.rn.f32" in ptx  # NVVM fused the bare a*b+c, as documented
    assert any("bare float" in f.why for f in findings)


def test_audit_accepts_primitives_and_keeps_them_separate():
    findings, ptx = _findings(_primitive_mul_add)
    assert not findings
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx and "fma" not in ptx


def test_audit_accepts_an_explicit_fma():
    findings, ptx = _findings(_explicit_fma)
    assert not findings and "fma.rn.f32" in ptx


def test_audit_rejects_libdevice_transcendentals_and_approx():
    findings, _ = _findings(_libdevice_exp)
    whys = " ".join(f.why for f in findings)
    assert "libdevice function __nv_expf" in whys
    assert audit.check_ptx("t", (9, 0), "  ex2.approx.ftz.f32 %f1, %f2;")
    assert audit.check_ptx("t", (9, 0), "  add.f32 %f1, %f2, %f3;")
    assert not audit.check_ptx("t", (9, 0), "  add.rz.f32 %f1, %f2, %f3;")
