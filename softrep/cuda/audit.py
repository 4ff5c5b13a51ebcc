"""`register(name, build)`: put a CUDA kernel in the registry of
softrep/cuda/launch.py, where `build()` returns (the kernel's Python function,
its argument types).

The kernel audit that compiles and checks every registered kernel, without a
GPU, is softrep/tools/kernel_audit.py (`python -m softrep audit-kernels`).
"""

from .launch import register  # noqa: F401
