"""Run every `simulator`-marked test in a child pytest process under the CUDA simulator."""

import os
import subprocess
import sys

import pytest

from conftest import REAL_GPU, SIMULATOR, SIMULATOR_SUMMARY


@pytest.mark.skipif(SIMULATOR or REAL_GPU, reason="this is the launcher of the simulator process")
def test_simulator_suite():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SOFTREP_BACKEND="cuda")
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "simulator", "-p", "no:cacheprovider", here],
        env=env, capture_output=True, text=True, cwd=os.path.dirname(here),
    )
    print(proc.stdout[-20000:])
    print(proc.stderr[-5000:])
    lines = [line for line in proc.stdout.splitlines() if " in " in line and ("passed" in line or "failed" in line)]
    SIMULATOR_SUMMARY.append(lines[-1].strip("= ") if lines else f"exit code {proc.returncode}")
    assert proc.returncode == 0, "simulator tests failed (output above)"
