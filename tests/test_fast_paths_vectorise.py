"""Every branch-free first step of the math functions compiles to a vector loop.

The CPU launcher runs `<name>_fast` (float32) or `<name>_fast64` (float64)
over a chunk in a loop that LLVM vectorises (softrep/cpu/launch.py).  A
helper that LLVM declines to inline stays a call in that loop, and the loop
stays scalar: the results are the same bits, only several times slower.
This compiles each first step in the launcher's loop form and checks the
optimised IR for vector arithmetic and for calls into softrep.
"""

import re

import numpy as np
import pytest
from numba import njit

import softrep.algorithms.math as AM
from softrep.cpu.launch import _decided_chunk, prefer_host_vectors

TWO_ARGUMENTS = ("pow", "hypot")
# rsqrt's first step keeps its branches: a branch-free form vectorised ran 40%
# slower on a Zen 4 core, whose vector square roots and divisions are no
# faster per element than scalar ones (docs/benchmarks.md).  The launcher's
# own loop vectorises it by if-conversion (test_launcher_first_loop_is_vectorised).
SCALAR = ("rsqrt_fast64",)
FAST = sorted(n for n in dir(AM) if n.endswith(("_fast", "_fast64")) and n not in SCALAR)


def _loop(fast, nin):
    """The decided-first launcher's first loop (softrep/cpu/launch.py)."""
    if nin == 1:
        def loop(out, x, lo, hi):
            prefer_host_vectors()
            undecided = np.uint32(0)
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i])
                out[i] = r
                undecided |= np.uint32(0) if ok else np.uint32(1)
            return undecided
    else:
        def loop(out, x, lo, hi):
            prefer_host_vectors()
            undecided = np.uint32(0)
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i], x[i])
                out[i] = r
                undecided |= np.uint32(0) if ok else np.uint32(1)
            return undecided
    return njit(error_model="numpy")(loop)


@pytest.mark.parametrize("name", FAST)
def test_first_step_loop_is_vectorised(name):
    dtype = np.float64 if name.endswith("64") else np.float32
    nin = 2 if name.split("_")[0] in TWO_ARGUMENTS else 1
    loop = _loop(getattr(AM, name), nin)
    x = np.linspace(0.5, 2.0, 64).astype(dtype)
    loop(np.empty_like(x), x, 0, x.size)
    ir = "\n".join(loop.inspect_llvm().values())
    calls = set(re.findall(r"call [^@\n]*@(_ZN7softrep[^(\s]*)", ir))
    assert not calls, f"{name}: calls left in the loop: {sorted(calls)}"
    lanes = "double" if dtype == np.float64 else "float"
    assert re.search(rf"<\d+ x {lanes}>", ir), f"{name}: no vector arithmetic"


def _function_ir(ir, fragment):
    """The body of the function whose defining line contains `fragment`."""
    for part in ir.split("\ndefine ")[1:]:
        if fragment in part.split("\n", 1)[0]:
            return part.split("\n}\n", 1)[0]
    raise AssertionError(f"no function {fragment} in the IR")


FIRST_STEPS = sorted([(k.name, "float32") for k in AM.KERNELS.values() if k.fast is not None]
                     + [(k.name, "float64") for k in AM.KERNELS.values() if k.f64_fast is not None])


@pytest.mark.parametrize("name,dtype", FIRST_STEPS)
def test_launcher_first_loop_is_vectorised(name, dtype):
    """The launcher's chunk function itself (softrep/cpu/launch.py, compiled
    again without the cache so that its IR can be read) has vector arithmetic
    for every first step: the form of its loop decides whether LLVM
    vectorises a step with branches (float64 rsqrt's once ran 24 times slower
    in a form it did not vectorise, with the same step)."""
    k = AM.KERNELS[name]
    f, fast = (k.f32, k.fast) if dtype == "float32" else (k.f64, k.f64_fast)
    chunk = njit(error_model="numpy")(_decided_chunk(f, fast, k.arity).py_func)
    x = np.linspace(0.5, 2.0, 64).astype(dtype)
    chunk(np.empty_like(x), *([x] * k.arity), 0, x.size)
    body = _function_ir("\n".join(chunk.inspect_llvm().values()), "_decided_chunk")
    lanes = "double" if dtype == "float64" else "float"
    assert re.search(rf"<\d+ x {lanes}>", body), f"{name} ({dtype}): the launcher's first loop is not vectorised"
