"""The tables of CUDA kernels live in read-only global memory
(softrep/primitives/cuda_tables.py): the float64 erf kernel, whose tables
exceed constant memory's 64 KiB, assembles (ptxas, through nvJitLink; no GPU
needed), with one copy of each table; with numba-cuda's own lowering of
constant arrays, ptxas refuses it, and the kernel audit's ptxas stage says so."""

import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
pytest.importorskip("cuda.bindings.nvjitlink")

import softrep.tools.kernel_audit as KA  # noqa: E402
from softrep.primitives.jit import SIMULATOR  # noqa: E402

pytestmark = pytest.mark.skipif(SIMULATOR, reason="compiles PTX: not under the CUDA simulator")

CC = (8, 0)


def _erf64_ptx():
    kernels = KA.load_kernels(("cuda",))["cuda"]
    function, signatures = kernels["elementwise.erf_kernel"].build()
    (signature,) = [s for s in signatures if str(s[0].dtype) == "float64"]
    return KA.cuda_compile(function, signature, CC)[1]


def test_tables_are_global_read_only_and_shared():
    from softrep.algorithms.math.erf64 import ERF_RATIO, ERFCX_TD

    ptx = _erf64_ptx()
    assert not re.search(r"^\s*\.const\b", ptx, re.M)
    tables = re.findall(r"^\.weak \.global \.align \d+ \.b8 (_softrep_table_\w+)\[(\d+)\]", ptx, re.M)
    names = [name for name, _ in tables]
    assert len(names) == len(set(names))  # one copy of each
    sizes = sorted(int(n) for _, n in tables)
    assert ERF_RATIO.nbytes in sizes and ERFCX_TD.nbytes in sizes
    assert "ld.global.nc" in ptx and "ld.const" not in ptx
    assert KA.assemble_ptx(ptx, CC) == []


_WITH_CONSTANT_MEMORY = """
import re, sys
sys.path.insert(0, {tests!r})
import test_cuda_tables as T
from numba.cuda.target import CUDATargetContext
T.KA.load_kernels(("cuda",))  # registers, and installs softrep's lowering; compiles nothing
ours = CUDATargetContext.make_constant_array
CUDATargetContext.make_constant_array = ours.numba_cuda_original
ptx = T._erf64_ptx()
assert re.search(r"^\\s*\\.const\\b", ptx, re.M)
for why, line in T.KA.assemble_ptx(ptx, T.CC):
    print(why, "|", line)
"""


def test_constant_memory_tables_are_refused_by_ptxas(tmp_path):
    """numba-cuda's own lowering (constant memory, one copy per function), in
    a process of its own: compiled device functions are reused within one."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, SOFTREP_CACHE_DIR=str(tmp_path))
    script = _WITH_CONSTANT_MEMORY.format(tests=os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    findings = [line.split(" | ") for line in done.stdout.splitlines() if " | " in line]
    assert findings and all(why == "ptxas refuses the kernel" for why, _ in findings)
    assert any("constant data" in line for _, line in findings)


def test_assemble_ptx_accepts_a_kernel_and_reports_a_broken_one():
    good = _erf64_ptx()
    assert KA.assemble_ptx(good, (9, 0)) == []
    broken = good.replace("ret;", "ret_not_an_instruction;", 1)
    assert np.any([why == "ptxas refuses the kernel" for why, _ in KA.assemble_ptx(broken, CC)])
