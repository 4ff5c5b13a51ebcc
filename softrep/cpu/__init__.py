"""CPU backend: Numba `njit` launchers over the shared algorithm source."""

import os

# torch (its own bundled libgomp) and Numba's OpenMP threading layer (the
# system libgomp) each keep a pool of worker threads that spin after every
# parallel region.  Alternating softrep kernels with torch ops, as a training
# step does, then has two pools of spinning threads fighting for the same
# cores: measured 10-80x slower per op on the 2-core development machine.
# Passive waiting for the pool Numba starts (after torch's, which is already
# loaded) removes that; an explicit OMP_WAIT_POLICY from the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from ..primitives import cpu_lowering as rounding  # noqa: E402,F401  (registers the CPU primitives)
