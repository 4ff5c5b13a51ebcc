# softrep: no kernels
"""softrep.nn: reproducible layers (init so far)."""

from . import init  # noqa: F401
