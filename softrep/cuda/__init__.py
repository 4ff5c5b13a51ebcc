"""CUDA backend: numba-cuda kernels over the shared algorithm source.

Under NUMBA_ENABLE_CUDASIM=1 the same kernels run in Numba's simulator, which
executes their Python source; the primitives then use their exact Python
semantics from `softrep.primitives.rounding`.

numba-cuda is optional (`pip install "softrep[cuda]"`), and importing it costs
time even where it is installed, so nothing here touches it before the first
CUDA use:

* `launch` (the elementwise launchers and the kernel registry) and `audit`
  (the registry's `register` entry) import without numba-cuda;
* every other submodule defines `cuda.jit` kernels when it is imported.
  Importing one runs `softrep.primitives.jit.require_cuda()` first, which
  imports numba-cuda (or raises ImportError naming the extra) and registers
  the primitives and jitables for the CUDA target;
* `from softrep.cuda import reduce` (the form the ops use) binds a stand-in
  that imports the module at its first use: a launcher taken from it, such as
  `reduce.extreme`, is imported when it is called, so that handing a CUDA
  launcher to `softrep.ops.backend.execute` beside the CPU one imports nothing
  while the op runs on the CPU.
"""

import importlib
import importlib.abc
import pkgutil
import sys

from ..primitives import cuda_lowering  # noqa: F401  (the CUDA primitives, registered at the first CUDA use)
from ..primitives import cuda_tables  # noqa: F401  (tables in global memory, from the first CUDA use)
from ..primitives.jit import cuda_ready, require_cuda

# Submodules that import without numba-cuda.
WITHOUT_NUMBA_CUDA = ("launch", "audit")

_SUBMODULES = frozenset(info.name for info in pkgutil.iter_modules(__path__))


class _RequireCudaFirst(importlib.abc.MetaPathFinder):
    """Runs `require_cuda()` before any submodule that needs numba-cuda is
    imported, however it is imported; then lets the ordinary finders find it."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package == __name__ and name in _SUBMODULES and name not in WITHOUT_NUMBA_CUDA:
            require_cuda()
        return None


if not any(isinstance(finder, _RequireCudaFirst) for finder in sys.meta_path):
    sys.meta_path.insert(0, _RequireCudaFirst())


class _OnFirstCall:
    """`module.name` of a CUDA module not imported yet: the module is imported
    when this is called, or when one of its own attributes is read."""

    def __init__(self, module, name):
        self._module, self._name = module, name

    def _target(self):
        return getattr(self._module.load(), self._name)

    def __call__(self, *args, **kwargs):
        return self._target()(*args, **kwargs)

    def __getattr__(self, attr):
        return getattr(self._target(), attr)

    def __repr__(self):
        return f"<{self._module.qualified_name}.{self._name}, imported at its first use>"


class _DeferredModule:
    """Stand-in for a CUDA submodule until its first use (see the module docstring)."""

    def __init__(self, name):
        self.qualified_name = f"{__name__}.{name}"

    def load(self):
        return importlib.import_module(self.qualified_name)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if cuda_ready() or self.qualified_name in sys.modules:
            return getattr(self.load(), name)
        return _OnFirstCall(self, name)

    def __repr__(self):
        return f"<module {self.qualified_name!r}, imported at its first use>"


def __getattr__(name):
    if name in WITHOUT_NUMBA_CUDA:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _SUBMODULES:
        return _DeferredModule(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
