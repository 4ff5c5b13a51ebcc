"""CPU backend: Numba `njit` launchers over the shared algorithm source."""

import ctypes
import os

import torch  # noqa: F401  (first: its OpenMP runtime starts with the caller's settings, see below)


def _openmp_in_global_scope():
    """Whether a loaded library exports OpenMP's GOMP_parallel to every later
    one.  torch loads its OpenMP runtime (a libgomp, or an Intel or LLVM
    runtime with the same entry points) into the global symbol scope; Numba's
    `omp` threading layer, loaded later, then binds its parallel regions to
    that runtime, not to the libgomp it names: one pool of worker threads
    serves both."""
    try:
        ctypes.CDLL(None).GOMP_parallel
    except (AttributeError, OSError, TypeError):  # not exported; or no global scope to open (Windows)
        return False
    return True


# Where torch and Numba end up with two OpenMP runtimes, each keeps worker
# threads spinning after a parallel region, and alternating softrep kernels
# with torch ops, as a training step does, has the two pools fight for the
# same cores: measured 10-80x slower per op on a 2-core machine.  Passive
# waiting for the pool Numba starts removes that.  Where the runtime is
# shared, there is no second pool to fight, and passive waiting only makes
# every parallel region, torch's too, wait for a sleeping worker to be
# scheduled (about 40 us per launch on a 2-core VM; a LeNet training step
# 2-3x slower on both sides), so the caller's policy stands.  An explicit
# OMP_WAIT_POLICY from the user wins either way.
SHARED_OPENMP = _openmp_in_global_scope()
if not SHARED_OPENMP:
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from ..primitives import cpu_lowering as rounding  # noqa: E402,F401  (registers the CPU primitives)
