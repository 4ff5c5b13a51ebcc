"""Every `simulator`-marked test, in a child pytest process under the CUDA simulator.

The child starts when collection selects this test (tests/conftest.py), and
runs beside the other tests; this test waits for it and fails if it did."""

import pytest

from conftest import REAL_GPU, SIMULATOR, SIMULATOR_SUMMARY, start_simulator_child


@pytest.mark.skipif(SIMULATOR or REAL_GPU, reason="this is the launcher of the simulator process")
def test_simulator_suite():
    child = start_simulator_child()  # already running unless collection was bypassed
    returncode = child["process"].wait()
    child["output"].seek(0)
    output = child["output"].read()
    print(output[-25000:])
    lines = [line for line in output.splitlines() if " in " in line and ("passed" in line or "failed" in line)]
    SIMULATOR_SUMMARY.append(lines[-1].strip("= ") if lines else f"exit code {returncode}")
    assert returncode == 0, "simulator tests failed (output above)"
