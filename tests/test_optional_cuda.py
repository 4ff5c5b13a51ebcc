"""numba-cuda is optional (`pip install "softrep[cuda]"`): with it hidden,
`import softrep` and CPU ops work, and CUDA uses name the extra.  Where it is
installed, `import softrep` does not import it either."""

import json
import os
import subprocess
import sys

HIDE_NUMBA_CUDA = r"""
import importlib.abc, sys

class HideNumbaCuda(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cuda", "numba_cuda") or name == "numba.cuda" or name.startswith("numba.cuda."):
            raise ImportError(f"No module named {name!r} (hidden by the test)")
        return None

sys.meta_path.insert(0, HideNumbaCuda())
"""

CPU_USE = r"""
import json, os, sys
import torch, softrep

x = torch.tensor([[0.5, 1.0], [2.0, 4.0]])
result = {
    "add": softrep.add(x, x).tolist(),
    "mm": softrep.mm(x, x).tolist(),
    "exp": softrep.exp(torch.zeros(2)).tolist(),
    "sum": softrep.sum(x).item(),
    "numba_cuda_imported": any(m == "numba.cuda" or m.startswith(("numba.cuda.", "numba_cuda")) for m in sys.modules),
    "errors": {},
}

def error_of(fn):
    try:
        fn()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None

os.environ["SOFTREP_BACKEND"] = "cuda"
result["errors"]["backend"] = error_of(lambda: softrep.add(x, x))
result["errors"]["reduction"] = error_of(lambda: softrep.sum(x))
os.environ["SOFTREP_BACKEND"] = "cpu"
from softrep.tools import kernel_audit
result["errors"]["audit"] = error_of(lambda: kernel_audit.load_kernels(("cuda",)))
result["errors"]["module"] = error_of(lambda: __import__("softrep.cuda.reduce"))
result["cpu_kernels"] = len(kernel_audit.load_kernels(("cpu",))["cpu"])
import contextlib, io
from softrep import __main__ as cli
stderr = io.StringIO()
with contextlib.redirect_stderr(stderr):
    result["cli_exit"] = cli.main(["audit-ptx"])
result["cli_stderr"] = stderr.getvalue()
print(json.dumps(result))
"""


def _run(script):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("SOFTREP_BACKEND", None)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cpu_use_without_numba_cuda_and_cuda_use_names_the_extra():
    result = _run(HIDE_NUMBA_CUDA + CPU_USE)
    assert result["add"] == [[1.0, 2.0], [4.0, 8.0]]
    assert result["mm"] == [[2.25, 4.5], [9.0, 18.0]]
    assert result["exp"] == [1.0, 1.0]
    assert result["sum"] == 7.5
    assert not result["numba_cuda_imported"]
    for what, error in result["errors"].items():
        assert error is not None and error.startswith("ImportError"), (what, error)
        assert 'pip install "softrep[cuda]"' in error, (what, error)
    assert result["cpu_kernels"] > 50
    assert result["cli_exit"] == 2 and 'pip install "softrep[cuda]"' in result["cli_stderr"]


def test_import_softrep_does_not_import_numba_cuda():
    """Installed or not, numba-cuda is imported at the first CUDA use only."""
    result = _run(r"""
import json, sys, torch, softrep
softrep.add(torch.ones(2), torch.ones(2))
print(json.dumps({"numba_cuda_imported": "numba.cuda" in sys.modules,
                  "cuda_modules": sorted(m for m in sys.modules if m.startswith("softrep.cuda."))}))
""")
    assert not result["numba_cuda_imported"]
    assert result["cuda_modules"] == ["softrep.cuda.launch"]
