"""CPU backend: Numba `njit` launchers over the shared algorithm source."""

from . import rounding  # noqa: F401  (registers the CPU primitives)
