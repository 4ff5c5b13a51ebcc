"""CUDA implementation of the rounding primitives (`softrep.primitives.rounding`).

Each primitive is the libdevice function with the same rounding suffix
(`__nv_fadd_rn`, `__nv_dmul_rd`, `__nv_fmaf_rz`, ...).  These lower to PTX
instructions that carry an explicit rounding modifier (`add.rn.f32`,
`mul.rm.f64`, `fma.rz.f32`, ...), which ptxas never contracts or reassociates,
and none of them flushes subnormals (no `.ftz`).  A bare `a * b + c` in a
kernel, by contrast, is fused into an fma by NVVM even with fastmath off; the
kernel audit (`python -m softrep audit-kernels`) rejects kernels that contain one.

Importing this module imports no numba-cuda, an optional dependency: the
overloads are registered at the first CUDA use
(`softrep.primitives.jit.require_cuda`).

libdevice has no double-precision subtract, so sub_* is dadd_*(a, negate(b)): negation
is exact, and IEEE defines x - y as x + (-y) in every rounding direction.
"""

from numba.core import types

from . import rounding as R
from .rounding import negate
from .jit import when_cuda_ready, with_arity

_FLOATS = (types.float32, types.float64)
_SUFFIXES = ("rn", "rd", "ru", "rz")


def _libdevice_functions():
    """primitive -> (float32 libdevice function, float64 libdevice function)."""
    from numba.cuda import libdevice

    table = {}
    for s in _SUFFIXES:
        table[f"add_{s}"] = (getattr(libdevice, f"fadd_{s}"), getattr(libdevice, f"dadd_{s}"))
        table[f"sub_{s}"] = (getattr(libdevice, f"fsub_{s}"), None)  # float64: see _register
        table[f"mul_{s}"] = (getattr(libdevice, f"fmul_{s}"), getattr(libdevice, f"dmul_{s}"))
        table[f"div_{s}"] = (getattr(libdevice, f"fdiv_{s}"), getattr(libdevice, f"ddiv_{s}"))
        table[f"sqrt_{s}"] = (getattr(libdevice, f"fsqrt_{s}"), getattr(libdevice, f"dsqrt_{s}"))
        table[f"fma_{s}"] = (getattr(libdevice, f"fmaf_{s}"), getattr(libdevice, f"fma_{s}"))
    return table


def _register(name, libdevice_functions):
    from numba.cuda import libdevice
    from numba.cuda.extending import overload

    f32, f64 = libdevice_functions[name]
    dadd = getattr(libdevice, "dadd_" + name[-2:])
    nargs = 1 if name.startswith("sqrt") else 3 if name.startswith("fma") else 2

    def choose(args):
        if args[0] not in _FLOATS or any(a != args[0] for a in args):
            return None
        if name.startswith("sub") and args[0] == types.float64:
            return lambda a, b: dadd(a, negate(b))
        f = f32 if args[0] == types.float32 else f64
        if nargs == 1:
            return lambda a: f(a)
        if nargs == 2:
            return lambda a, b: f(a, b)
        return lambda a, b, c: f(a, b, c)

    overload(R.PRIMITIVES[name], target="cuda")(with_arity(nargs, choose))


def _register_all():
    functions = _libdevice_functions()
    for name in R.PRIMITIVES:
        _register(name, functions)


when_cuda_ready(_register_all)
