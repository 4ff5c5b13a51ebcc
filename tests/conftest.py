"""Test configuration.

Tests marked `simulator` exercise the CUDA kernels in Numba's simulator.  They
run in a child pytest process with NUMBA_ENABLE_CUDASIM=1, because that
variable must be set before numba.cuda is imported.  In the parent process
they are skipped; in the child only they run.  The child starts as soon as
collection has selected its launcher (tests/test_simulator.py), so that it
runs on a second core while the parent runs the other tests; the launcher
waits for it and reports its result.
"""

import os
import subprocess
import sys
import tempfile

import pytest

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
# scripts/gpu-check.sh sets this on a machine with a GPU: the `simulator` tests
# then run in-process against the real device instead.
REAL_GPU = os.environ.get("SOFTREP_TEST_DEVICE") == "cuda"


# the child process's closing line, for the parent's summary (tests/test_simulator.py)
SIMULATOR_SUMMARY = []
# the running child: {"process": Popen, "output": its stdout and stderr (a temporary file)}
SIMULATOR_CHILD = {}
SIMULATOR_LAUNCHER = "test_simulator.py::test_simulator_suite"
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
        f"beside the others (tests/test_simulator.py waits for it), which reported: {child}")


def start_simulator_child():
    """Start the child pytest process of the `simulator` tests (once)."""
    if SIMULATOR_CHILD:
        return SIMULATOR_CHILD
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SOFTREP_BACKEND="cuda")
    here = os.path.dirname(os.path.abspath(__file__))
    output = tempfile.TemporaryFile(mode="w+")  # a pipe could fill up and stall the child
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-m", "simulator", "-p", "no:cacheprovider", here],
        env=env, stdout=output, stderr=subprocess.STDOUT, text=True, cwd=os.path.dirname(here))
    SIMULATOR_CHILD.update(process=process, output=output)
    return SIMULATOR_CHILD


def pytest_collection_finish(session):
    """Start the simulator child now if this run will wait for it."""
    if SIMULATOR or REAL_GPU or session.config.option.collectonly:
        return
    if any(item.nodeid.endswith(SIMULATOR_LAUNCHER) for item in session.items):
        start_simulator_child()


def pytest_sessionfinish(session):
    """A run stopped early (-x, ^C) does not leave the child running."""
    process = SIMULATOR_CHILD.get("process")
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


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
