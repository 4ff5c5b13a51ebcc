"""CUDA implementation of the rounding primitives (`softrep.primitives.rounding`).

Each primitive is the libdevice function with the same rounding suffix
(`__nv_fadd_rn`, `__nv_dmul_rd`, `__nv_fmaf_rz`, ...).  These lower to PTX
instructions that carry an explicit rounding modifier (`add.rn.f32`,
`mul.rm.f64`, `fma.rz.f32`, ...), which ptxas never contracts or reassociates,
and none of them flushes subnormals (no `.ftz`).  A bare `a * b + c` in a
kernel, by contrast, is fused into an fma by NVVM even with fastmath off; the
PTX audit (`softrep.cuda.audit`) rejects kernels that contain one.

libdevice has no double-precision subtract, so sub_* is dadd_*(a, negate(b)): negation
is exact, and IEEE defines x - y as x + (-y) in every rounding direction.
"""

from numba.core import types
from numba.cuda import libdevice
from numba.cuda.extending import overload

from . import rounding as R
from .rounding import negate
from .jit import with_arity

_FLOATS = (types.float32, types.float64)

# primitive -> (float32 libdevice function, float64 libdevice function)
_LIBDEVICE = {}
for _s in ("rn", "rd", "ru", "rz"):
    _LIBDEVICE[f"add_{_s}"] = (getattr(libdevice, f"fadd_{_s}"), getattr(libdevice, f"dadd_{_s}"))
    _LIBDEVICE[f"sub_{_s}"] = (getattr(libdevice, f"fsub_{_s}"), None)  # float64: see _register
    _LIBDEVICE[f"mul_{_s}"] = (getattr(libdevice, f"fmul_{_s}"), getattr(libdevice, f"dmul_{_s}"))
    _LIBDEVICE[f"div_{_s}"] = (getattr(libdevice, f"fdiv_{_s}"), getattr(libdevice, f"ddiv_{_s}"))
    _LIBDEVICE[f"sqrt_{_s}"] = (getattr(libdevice, f"fsqrt_{_s}"), getattr(libdevice, f"dsqrt_{_s}"))
    _LIBDEVICE[f"fma_{_s}"] = (getattr(libdevice, f"fmaf_{_s}"), getattr(libdevice, f"fma_{_s}"))


def _register(name):
    f32, f64 = _LIBDEVICE[name]
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


for _name in R.PRIMITIVES:
    _register(_name)
