# softrep: no kernels
"""The version of softrep (also in pyproject.toml); recorded in replay logs."""

__version__ = "0.1.0"
