"""The CPU and CUDA backends of the products, convolutions, reductions,
low-precision ops and random draws hold schedules only, checked on the source.

Their arithmetic is written once, in softrep/algorithms/ (reduction.py,
lowp.py, random.py, optim.py), and called from both backends; the backend files choose
loops, work items, grids and threads.  So these files must not call a
rounding primitive (or import from the modules that define them), must not
carry float constants or bit packing of their own (the Philox key and offset
are joined by `algorithms.random.key_offset`), and no file outside softrep/primitives/ may build a
float instruction with llvmlite's IRBuilder (that is how a raw `fadd`
bypassed the primitives before).
"""

import ast
import os

import pytest

import softrep
from softrep.primitives import rounding as R

ROOT = os.path.dirname(os.path.abspath(softrep.__file__))

SCHEDULE_FILES = [f"{side}/{name}.py" for side in ("cpu", "cuda")
                  for name in ("linalg", "conv", "reduce", "lowp", "philox", "random_ops", "optim", "normalization")]
SCHEDULE_FILES += ["cpu/scatter.py"]  # the CUDA kernels run the torch-op form (softrep.nn.functional.sparse)

# Modules whose functions compute float values: a schedule calls algorithms instead.
ARITHMETIC_MODULES = {"rounding", "formats", "cpu_lowering", "cuda_lowering", "pyfloat"}
PRIMITIVE_NAMES = set(R.PRIMITIVES) | {"add_rn_f32x8", "add_rn_f32x16", "canonical", "canonical32", "canonical64", "negate",
                                       "fabs", "emulated_op", "round_value", "round_with_residual",
                                       "llvm_fma", "llvm_sqrt"}

# IRBuilder methods that emit a floating-point instruction.
IR_FLOAT_METHODS = {"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fcmp_ordered", "fcmp_unordered",
                    "fpext", "fptrunc", "sitofp", "uitofp", "fptosi", "fptoui"}
LLVM_FLOAT_INTRINSICS = ("llvm.fma", "llvm.fmuladd", "llvm.sqrt", "llvm.exp", "llvm.log", "llvm.pow",
                         "llvm.sin", "llvm.cos", "llvm.minnum", "llvm.maxnum", "llvm.vector.reduce.f")


def schedule_findings(source, name="<source>"):
    """What in `source` is not schedule code: primitive calls, imports from the
    arithmetic modules, float constants."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[-1] in ARITHMETIC_MODULES:
                found.append(f"{name}:{node.lineno}: imports from {node.module}")
            for a in node.names:
                if a.name in PRIMITIVE_NAMES:
                    found.append(f"{name}:{node.lineno}: imports the primitive {a.name}")
        elif isinstance(node, ast.Name) and node.id in PRIMITIVE_NAMES:
            found.append(f"{name}:{node.lineno}: uses the primitive {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in PRIMITIVE_NAMES:
            found.append(f"{name}:{node.lineno}: uses the primitive .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, float):
            found.append(f"{name}:{node.lineno}: float constant {node.value!r}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("float32", "float64", "float16")):
            found.append(f"{name}:{node.lineno}: float conversion {ast.unparse(node)}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.RShift)):
            # bit packing, e.g. a 64-bit key from two halves: algorithms.random.key_offset
            found.append(f"{name}:{node.lineno}: bit shift {ast.unparse(node)}")
    return found + ir_float_findings(source, name)


def ir_float_findings(source, name="<source>"):
    """Float instructions built with llvmlite: builder.fadd(...) and friends,
    and LLVM's float intrinsics named in strings."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in IR_FLOAT_METHODS):
            found.append(f"{name}:{node.lineno}: LLVM float instruction .{node.func.attr}(...)")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.startswith(LLVM_FLOAT_INTRINSICS)):
            found.append(f"{name}:{node.lineno}: LLVM float intrinsic {node.value!r}")
    return found


def _read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


@pytest.mark.parametrize("rel", SCHEDULE_FILES)
def test_backend_file_holds_a_schedule_only(rel):
    findings = schedule_findings(_read(rel), rel)
    assert not findings, "\n".join(findings)


def test_no_llvm_float_instruction_outside_the_primitives():
    findings = []
    for dirpath, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel_dir = os.path.relpath(dirpath, ROOT)
        if rel_dir.split(os.sep)[0] == "primitives":
            continue
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.normpath(os.path.join(rel_dir, f))
                findings += ir_float_findings(_read(rel), rel)
    assert not findings, "\n".join(findings)


def test_the_primitives_do_build_float_instructions():
    # the scan looks for the right spelling: the primitives themselves are caught
    assert ir_float_findings(_read("primitives/vector.py"))
    assert ir_float_findings(_read("primitives/cpu_lowering.py"))


@pytest.mark.parametrize("snippet,what", [
    ("from ..primitives.rounding import add_rn\n", "imports from"),
    ("from ..primitives.formats import FINITE\n", "imports from"),
    ("def k(a, b):\n    return add_rn(a, b)\n", "primitive add_rn"),
    ("def k(a, b):\n    return R.fma_rn(a, b, a)\n", "primitive .fma_rn"),
    ("def k(x):\n    return canonical(x)\n", "primitive canonical"),
    ("def k(p, c):\n    return add_rn_f32x8(p, c)\n", "primitive add_rn_f32x8"),
    ("def k(x):\n    return x * 0.5\n", "float constant"),
    ("def k(x):\n    return np.float32(x)\n", "float conversion"),
    ("def codegen(builder, a, b):\n    return builder.fadd(a, b)\n", "fadd"),
    ("def codegen(builder, a, b):\n    return builder.fmul(a, b, flags=['fast'])\n", "fmul"),
    ("NAME = 'llvm.fma.v8f32'\n", "llvm.fma"),
    ("def k(lo, hi):\n    return np.uint64(lo) | (np.uint64(hi) << np.uint64(32))\n", "bit shift"),
])
def test_the_scan_catches(snippet, what):
    assert any(what in f for f in schedule_findings(snippet)), schedule_findings(snippet)


def test_the_scan_accepts_index_arithmetic_and_algorithm_calls():
    ok = ("from ..algorithms.reduction import VALUES\n"
          "def k(P, x, n):\n"
          "    for w in range(n):\n"
          "        i = w // 8\n"
          "        P[i] = VALUES.block(x, i * 128, min(i * 128 + 128, n), x[0])\n")
    assert schedule_findings(ok) == []
