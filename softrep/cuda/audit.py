"""PTX audit: compile every registered CUDA kernel and reject unsafe arithmetic.

Runs without a GPU.  For each kernel and each compute capability it compiles
the kernel's Python source with numba-cuda's NVVM (from PyPI) and checks:

LLVM IR (before NVVM optimises it), which shows what the source asked for:
  * no bare `fadd`/`fsub`/`fmul`/`fdiv`/`frem` on floats.  An FMA in PTX comes
    either from an `fma_*` primitive or from NVVM contracting a bare multiply
    and add; with no bare float arithmetic left, every FMA was asked for.
  * no fast-math flags (`fast`, `contract`, `afn`, `reassoc`, `arcp`, `nnan`,
    `ninf`, `nsz`);
  * no LLVM math intrinsics (`llvm.fma`, `llvm.sqrt`, `llvm.exp`, ...) and no
    libdevice function other than the explicitly rounded arithmetic and bit casts.

PTX, which shows what the GPU will run:
  * every f32/f64 add, sub, mul, div, fma, sqrt and rcp has a rounding modifier
    (.rn, .rz, .rm, .rp);
  * no `.approx`, no `.ftz`, no approximate-only instructions (ex2, lg2, sin,
    cos, tanh, rsqrt).

Kernels are registered with `register(name, build)`; `build()` returns
`(python_function, argument_types)`.

Compiling a kernel that calls device functions asks numba-cuda for the current
device's compute capability, which fails on a machine without a GPU.
`compute_capability(cc)` supplies it for the duration of the audit.
"""

import contextlib
import re
from dataclasses import dataclass

CCS = ((7, 5), (8, 0), (9, 0))  # CUDA 13's NVVM no longer targets 7.0 (Volta)

_REGISTRY = {}

_ALLOWED_LIBDEVICE = re.compile(
    r"__nv_(f|d)(add|sub|mul|div|sqrt|rcp)_r[ndzu]|__nv_fmaf?_r[ndzu]|"
    r"__nv_(float_as_int|int_as_float|double_as_longlong|longlong_as_double)"
)
_IR_BARE_FLOAT = re.compile(r"=\s*(fadd|fsub|fmul|fdiv|frem)\b[^=]*\b(float|double|half)\b")
_IR_FAST_FLAGS = re.compile(r"=\s*\w+\s+((?:fast|contract|afn|reassoc|arcp|nnan|ninf|nsz)\b)")
_IR_LLVM_MATH = re.compile(
    r"@\"?llvm\.(fma|fmuladd|sqrt|exp|exp2|exp10|log|log2|log10|sin|cos|pow|powi|tan|tanh)\.")
_IR_NV_CALL = re.compile(r"@\"?(__nv_\w+)")
_PTX_FLOAT_OP = re.compile(r"^\s*(add|sub|mul|div|fma|sqrt|rcp)((?:\.\w+)*)\.(f32|f64)\b")
_PTX_APPROX_ONLY = re.compile(r"^\s*(ex2|lg2|sin|cos|tanh|rsqrt)\.")
_ROUNDING = {".rn", ".rz", ".rm", ".rp"}


@dataclass
class Finding:
    kernel: str
    cc: tuple
    stage: str
    line: str
    why: str

    def __str__(self):
        return f"{self.kernel} (sm_{self.cc[0]}{self.cc[1]}, {self.stage}): {self.why}: {self.line.strip()}"


def register(name, build):
    """Register a kernel for the audit; `build()` -> (py_func, argtypes)."""
    _REGISTRY[name] = build


def _import_all():
    """Import every softrep module, so that every kernel has registered itself
    (some launchers are imported lazily by the ops that use them)."""
    import importlib
    import os
    import pkgutil

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for info in pkgutil.walk_packages([root], "softrep."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def registered():
    _import_all()
    return dict(_REGISTRY)


@contextlib.contextmanager
def compute_capability(cc):
    """Let device functions compile for `cc` on a machine without a GPU."""
    import numba.cuda.dispatcher as dispatcher

    class _Device:
        compute_capability = tuple(cc)

    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Device()
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


def compile_kernel(py_func, argtypes, cc):
    """(llvm_ir, ptx) of a kernel's Python source for compute capability cc."""
    from numba.core import types
    from numba.cuda.compiler import compile_cuda

    with compute_capability(cc):
        cres = compile_cuda(py_func, types.void, tuple(argtypes), cc=cc, nvvm_options={"opt": 3})
        ir = cres.library.get_llvm_str()
        ptx = cres.library.get_asm_str(cc=(cc[0], cc[1], "a" if cc >= (9, 0) else ""))
    return ir, ptx


def check_ir(name, cc, ir):
    findings = []
    for line in ir.splitlines():
        if line.lstrip().startswith(("declare", ";", "!")):
            continue
        if _IR_BARE_FLOAT.search(line):
            findings.append(Finding(name, cc, "llvm", line, "bare float arithmetic (contractible)"))
        m = _IR_FAST_FLAGS.search(line)
        if m:
            findings.append(Finding(name, cc, "llvm", line, f"fast-math flag '{m.group(1)}'"))
        if _IR_LLVM_MATH.search(line):
            findings.append(Finding(name, cc, "llvm", line, "LLVM math intrinsic"))
        for callee in _IR_NV_CALL.findall(line):
            if not _ALLOWED_LIBDEVICE.fullmatch(callee):
                findings.append(Finding(name, cc, "llvm", line, f"libdevice function {callee}"))
    return findings


def check_ptx(name, cc, ptx):
    findings = []
    for line in ptx.splitlines():
        code = line.split("//")[0]
        if ".approx" in code:
            findings.append(Finding(name, cc, "ptx", line, "approximate instruction"))
        if ".ftz" in code:
            findings.append(Finding(name, cc, "ptx", line, "flush-to-zero"))
        if _PTX_APPROX_ONLY.match(code):
            findings.append(Finding(name, cc, "ptx", line, "approximate-only instruction"))
        m = _PTX_FLOAT_OP.match(code)
        if m and not (set(re.findall(r"\.\w+", m.group(2))) & _ROUNDING):
            findings.append(Finding(name, cc, "ptx", line, "float arithmetic without a rounding modifier"))
    return findings


def audit(names=None, ccs=CCS, progress=None):
    """Audit registered kernels; returns (number of compilations, findings)."""
    names = sorted(registered()) if names is None else list(names)
    findings, count = [], 0
    for name in names:
        py_func, argtypes = _REGISTRY[name]()
        for cc in ccs:
            ir, ptx = compile_kernel(py_func, argtypes, cc)
            findings += check_ir(name, cc, ir) + check_ptx(name, cc, ptx)
            count += 1
            if progress is not None:
                progress(name, cc)
    return count, findings
