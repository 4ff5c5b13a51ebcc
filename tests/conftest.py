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


def pytest_collection_modifyitems(config, items):
    skip_parent = pytest.mark.skip(reason="runs in the simulator child process (tests/test_simulator.py)")
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
