"""The notebooks in notebooks/ execute from top to bottom, and are committed clean.

Each notebook asserts its own softrep claims in its last cells (bits equal
across thread counts, batch sizes, ...), so executing it is a test of those
claims, not only of the plotting code.  The kernel runs in notebooks/ with the
checkout first on PYTHONPATH, so it imports the softrep under test rather than
any installed copy, on the CPU backend whatever the caller's environment says.
"""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
EXPECTED = {"rounding_differences.ipynb", "correct_rounding.ipynb", "training_divergence.ipynb"}
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# Per cell: a cold kernel cache compiles each kernel once (seconds each); warm,
# every notebook runs in well under a minute.
CELL_TIMEOUT_S = 900


def _ids(paths):
    return [p.stem for p in paths]


def test_the_three_notebooks_exist():
    assert EXPECTED <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs or execution counts; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes(path, monkeypatch):
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + pythonpath if pythonpath else ""))
    # The kernel's own inline backend renders the figures into the outputs; no display needed.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("SOFTREP_BACKEND", "cpu")
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()
    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.outputs if out.output_type == "error"]
    assert not errors
