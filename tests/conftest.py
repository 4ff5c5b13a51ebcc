"""Test configuration.

Tests marked `simulator` exercise the CUDA kernels in Numba's simulator.  They
run in a child pytest process (tests/test_simulator.py starts it) with
NUMBA_ENABLE_CUDASIM=1, because that variable must be set before numba.cuda is
imported.  In the parent process they are skipped; in the child only they run.
"""

import os

import pytest

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
# scripts/gpu-check.sh sets this on a machine with a GPU: the `simulator` tests
# then run in-process against the real device instead.
REAL_GPU = os.environ.get("SOFTREP_TEST_DEVICE") == "cuda"


# the child process's closing line, for the parent's summary (tests/test_simulator.py)
SIMULATOR_SUMMARY = []
SKIP_PARENT_REASON = "runs in the simulator child process (tests/test_simulator.py)"


def pytest_terminal_summary(terminalreporter):
    """Say plainly what the parent's skips are: the simulator tests, run in the child."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if SKIP_PARENT_REASON in str(getattr(r, "longrepr", ""))]
    if not skipped:
        return
    child = SIMULATOR_SUMMARY[-1] if SIMULATOR_SUMMARY else "not run in this selection"
    terminalreporter.write_line(
        f"{len(skipped)} of the skipped tests are CUDA-simulator tests: they run in a child pytest process "
        f"(tests/test_simulator.py), which reported: {child}")


def pytest_collection_modifyitems(config, items):
    skip_parent = pytest.mark.skip(reason=SKIP_PARENT_REASON)
    skip_child = pytest.mark.skip(reason="the simulator child process runs simulator tests only")
    for item in items:
        is_sim = item.get_closest_marker("simulator") is not None
        if is_sim and not (SIMULATOR or REAL_GPU):
            item.add_marker(skip_parent)
        elif SIMULATOR and not is_sim:
            item.add_marker(skip_child)


@pytest.fixture
def backend(monkeypatch):
    """Switch softrep's backend inside a test: backend('cpu') or backend('cuda')."""

    def use(name):
        monkeypatch.setenv("SOFTREP_BACKEND", name)

    return use
