"""CUDA backend: numba-cuda kernels over the shared algorithm source.

Under NUMBA_ENABLE_CUDASIM=1 the same kernels run in Numba's simulator, which
executes their Python source; the primitives then use their exact Python
semantics from `softrep.primitives.rounding`.
"""

from ..primitives.jit import SIMULATOR

if not SIMULATOR:
    from ..primitives import cuda_lowering as rounding  # noqa: F401  (registers the CUDA primitives)
