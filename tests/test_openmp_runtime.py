"""Which OpenMP runtime softrep's parallel kernels run on, and its wait policy.

softrep leaves OMP_WAIT_POLICY alone when Numba's `omp` threading layer
shares torch's OpenMP runtime, and asks for passive waiting when the two
would run separate pools (softrep/cpu/__init__.py).  The dynamic linker's
own account of its symbol bindings (glibc's LD_DEBUG=bindings) says which
runtime each library's parallel regions call, independently of the check
softrep makes.
"""

import os
import re
import subprocess
import sys

import pytest

SCRIPT = r"""
import os
import numba
import torch
import softrep
from softrep.cpu import SHARED_OPENMP

softrep.sum(torch.ones(1 << 20))  # a parallel kernel: loads Numba's threading layer
torch.ones(1 << 22).sum()
print("RESULT", SHARED_OPENMP, os.environ.get("OMP_WAIT_POLICY"), numba.threading_layer())
"""


def _bindings(stderr, symbol):
    """{library basename: the library its `symbol` reference was bound to}."""
    found = {}
    pattern = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `" + symbol + "'")
    for line in stderr.splitlines():
        m = pattern.search(line)
        if m:
            found[os.path.basename(m.group(1))] = m.group(2)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_DEBUG is glibc's dynamic linker's")
@pytest.mark.parametrize("first", ["softrep", "torch"])
def test_wait_policy_follows_the_runtime(first):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "NUMBA_ENABLE_CUDASIM")}
    env.update(LD_DEBUG="bindings", NUMBA_NUM_THREADS="2")
    script = ("import softrep\n" if first == "softrep" else "import torch\n") + SCRIPT
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    shared, policy, layer = out.stdout.split("RESULT")[-1].split()
    if layer != "omp":
        pytest.skip(f"Numba's threading layer is {layer}, not omp: no OpenMP runtime to share")
    bound = _bindings(out.stderr, "GOMP_parallel")
    numba_runtime = next((v for k, v in bound.items() if k.startswith("omppool")), None)
    torch_runtime = next((v for k, v in bound.items() if k.startswith("libtorch_cpu")), None)
    assert numba_runtime is not None and torch_runtime is not None, sorted(bound)
    assert shared == str(numba_runtime == torch_runtime)
    # one shared pool: the caller's policy (here none); two pools: passive
    assert policy == ("None" if numba_runtime == torch_runtime else "passive")
