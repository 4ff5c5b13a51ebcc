"""Correctly rounded math functions on tensors: `softrep.exp(x)`, `softrep.log(x)`, ...

The scalar kernels are in softrep/algorithms/math (one function per module,
proofs in docs/mathlib.md).  This module turns each into a tensor op:

* one scalar kernel dispatching on the dtype (`by_type`), launched by the
  generic elementwise launchers of softrep/cpu/launch.py and
  softrep/cuda/launch.py, which register it for the kernel audit with the
  dtypes it has (float32, and float64 where `f64` exists);
* the op's input gradients, made of softrep ops rounded to nearest (the
  formulas below; docs/order.md);
* a public op `<name>(input)` whose autograd is softrep's one elementwise
  autograd Function (`softrep.ops.elementwise.Elementwise`).

`FUNCTIONS` maps each name to a `MathFunction` (kernels, gradient, op); the
verifier and the dispatch mode use it.
"""

import functools
import inspect
from dataclasses import dataclass

import numpy as np
import torch
from numba.core import types

from ..algorithms.math import KERNELS
from ..algorithms.math.lowp_exceptions import TABLES as LOW_PRECISION_EXCEPTIONS
from ..primitives.jit import by_type
from . import mixed
from .elementwise import ElementwiseSpec, add, div, light, mul, operands, square, sub

LN2 = 0.6931471805599453  # ln 2 rounded to double; the op rounds it to the dtype
LN10 = 2.302585092994046  # ln 10 rounded to double; the op rounds it to the dtype
TWO_OVER_SQRT_PI = 1.1283791670955126  # 2/sqrt(pi), rounded to the tensor dtype by the op


@dataclass
class MathFunction:
    name: str
    arity: int
    arg_names: tuple
    f32: object
    f64: object  # None where no float64 version exists
    kernel: object  # dtype-dispatching scalar kernel
    grad: object
    op: object  # the public tensor op
    spec: object = None  # its ElementwiseSpec


FUNCTIONS = {}


def _scalar_kernel(name, f32, f64, arity):
    """One scalar kernel for both dtypes; Python (the simulator) dispatches on the type,
    compiled code through `by_type`."""
    if arity == 1:
        def kernel(x):
            return f32(x) if isinstance(x, np.float32) else f64(x)
    else:
        def kernel(x, y):
            return f32(x, y) if isinstance(x, np.float32) else f64(x, y)
    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    table = {types.float32: f32}
    if f64 is not None:
        table[types.float64] = f64
    return by_type(kernel, table)


def double_rounded(spec, tensors):
    """The correctly rounded float32 result of `spec` on bfloat16/float16
    `tensors`, rounded once more to their format (no autograd, no exception
    table): the result of the ops except at the inputs of
    softrep/algorithms/math/lowp_exceptions.py."""
    dtype = tensors[0].dtype
    wide = [t.detach().to(torch.float32) for t in tensors]
    return mixed.round_cast(spec.run("rn", wide), dtype)


def _exception_table(name, dtype, device):
    """(keys, values) of the function's exception table in `dtype`, as int32 and
    int16 tensors (keys: input bits as 0..65535, sorted), or None."""
    table = _host_exception_table(name, dtype)
    return None if table is None else (table[0].to(device), table[1].to(device))


@functools.lru_cache(maxsize=None)
def _host_exception_table(name, dtype):
    table = LOW_PRECISION_EXCEPTIONS.get(mixed.LOW_FORMATS[dtype], {}).get(name)
    if not table:
        return None
    keys = torch.tensor([k for k, _ in table], dtype=torch.int32)
    values = torch.tensor([v - 65536 if v >= 32768 else v for _, v in table], dtype=torch.int16)
    return keys, values


def _low_forward(name, spec):
    """The bfloat16/float16 forward of a unary or binary math function: the
    float32 result rounded once more to the format, then, by selection, the
    listed results of the inputs where that second rounding is wrong."""
    def low_forward(suffix):
        def forward(tensors):
            out = double_rounded(spec, tensors)
            table = _exception_table(name, out.dtype, out.device) if len(tensors) == 1 else None
            if table is None:
                return out
            keys, values = table
            bits = tensors[0].detach().contiguous().view(torch.int16).to(torch.int32) & 0xFFFF
            at = torch.searchsorted(keys, bits).clamp(max=keys.numel() - 1)
            hit = keys[at] == bits
            return torch.where(hit, values[at], out.view(torch.int16)).view(out.dtype)
        return forward
    return low_forward


def _public_op(fn):
    arg_names = fn.arg_names
    spec = ElementwiseSpec(fn.name, arg_names, {"rn": fn.kernel}, fn.grad)
    spec.low_forward = _low_forward(fn.name, spec)
    fn.spec = spec

    light_run = spec.light_launchers["nearest"]

    def op(*args, out=None):
        if len(args) == len(arg_names):
            result = light(light_run, args, out)
            if result is not None:
                return result
        if len(args) != len(arg_names):
            raise TypeError(f"softrep.{fn.name}() takes {len(arg_names)} argument(s) "
                            f"({', '.join(arg_names)}), got {len(args)}")
        if fn.arity == 1 and not isinstance(args[0], torch.Tensor):
            raise TypeError(f"softrep.{fn.name}: argument '{arg_names[0]}' must be a torch.Tensor, "
                            f"got {type(args[0]).__name__}")
        dtypes = (torch.float32,) if fn.f64 is None else (torch.float32, torch.float64)
        dtypes += mixed.LOW_DTYPES
        for name, arg in zip(arg_names, args):
            if isinstance(arg, torch.Tensor) and arg.dtype not in dtypes:
                raise TypeError(f"softrep.{fn.name}: argument '{name}' has dtype {arg.dtype}; softrep.{fn.name} "
                                f"takes {' or '.join(map(str, dtypes))}")
        tensors = operands(fn.name, arg_names, args)
        if out is not None:
            return spec.apply_into("rn", tensors, out)
        return spec.apply("rn", tensors)

    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in arg_names]
    params.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    op.__signature__ = inspect.Signature(params)
    op.__name__ = op.__qualname__ = fn.name
    dtypes = "float32" if fn.f64 is None else "float32 and float64"
    low = ("; bfloat16/float16: the float32 result rounded to the format, corrected where that is not "
           "correctly rounded (docs/mathlib.md)")
    op.__doc__ = (f"{fn.name}({', '.join(arg_names)}) elementwise on {dtypes}, correctly rounded to nearest-even"
                  f"{low} (softrep/algorithms/math/{fn.name}.py; verified by `python -m softrep verify {fn.name}`).  "
                  "With `out`, the result is written there (torch's out= semantics).")
    return op


def _define(name, grad, arg_names=("input",)):
    k = KERNELS[name]
    kernel = _scalar_kernel(name, k.f32, k.f64, k.arity)
    if k.fast is not None:
        # float32 CPU launches run `fast` over everything first, then `f32`
        # where it did not decide (softrep/cpu/launch.py); `f32` is `fast`
        # followed by the accurate path, so the bits are f32's.
        kernel.decided_fast = k.fast
    if k.fast2 is not None:
        # ... and, where `fast` left some undecided, `fast2` over the chunk
        # before `f32`: `f32` is `fast`, else `fast2`, else the accurate path.
        kernel.decided_fast2 = k.fast2
    if k.f64_fast is not None:
        # The same for float64 launches (one or two inputs): `f64` is
        # `f64_fast` followed by the accurate path(s).
        kernel.decided_fast64 = k.f64_fast
    fn = MathFunction(name, k.arity, arg_names, k.f32, k.f64, kernel, grad, None)
    fn.op = _public_op(fn)
    FUNCTIONS[name] = fn
    return fn.op


# Input gradients: softrep ops rounded to nearest (docs/order.md).  `out` is the
# forward result; a product by -1 is exact.

def _pow_grad(g, out, x, y):
    """torch's formulas: d/dx = mul(g, mul(y, pow(x, sub(y, 1)))), 0 where y == 0;
    d/dy = mul(g, mul(out, log(x))), 0 where x == 0 and y >= 0.  The masks are
    selections (torch.where), not arithmetic."""
    gx = mul(g, mul(y, pow(x, sub(y, 1.0))))
    gx = torch.where(y == 0, torch.zeros_like(gx), gx)
    gy = mul(g, mul(out, log(x)))
    gy = torch.where((x == 0) & (y >= 0), torch.zeros_like(gy), gy)
    return (gx, gy)


atan = _define("atan", lambda g, out, x: (div(g, add(1.0, square(x))),))
cbrt = _define("cbrt", lambda g, out, x: (div(g, mul(square(out), 3.0)),))  # 1 / (3 x^(2/3))
cos = _define("cos", lambda g, out, x: (mul(mul(g, sin(x)), -1.0),))
cosh = _define("cosh", lambda g, out, x: (mul(g, sinh(x)),))
erf = _define("erf", lambda g, out, x: (mul(g, mul(exp(mul(square(x), -1.0)), TWO_OVER_SQRT_PI)),))
erfc = _define("erfc", lambda g, out, x: (mul(mul(g, mul(exp(mul(square(x), -1.0)), TWO_OVER_SQRT_PI)), -1.0),))
exp = _define("exp", lambda g, out, x: (mul(g, out),))
exp10 = _define("exp10", lambda g, out, x: (mul(g, mul(out, LN10)),))
exp2 = _define("exp2", lambda g, out, x: (mul(g, mul(out, LN2)),))
expm1 = _define("expm1", lambda g, out, x: (mul(g, add(out, 1.0)),))
hypot = _define("hypot", lambda g, out, x, y: (mul(g, div(x, out)), mul(g, div(y, out))),  # NaN at x = y = 0, as torch
                ("input", "other"))
log = _define("log", lambda g, out, x: (div(g, x),))
log10 = _define("log10", lambda g, out, x: (div(g, mul(x, LN10)),))
log1p = _define("log1p", lambda g, out, x: (div(g, add(x, 1.0)),))
log2 = _define("log2", lambda g, out, x: (div(g, mul(x, LN2)),))
pow = _define("pow", _pow_grad, ("input", "exponent"))
rsqrt = _define("rsqrt", lambda g, out, x: (mul(g, mul(mul(out, square(out)), -0.5)),))  # -x^(-3/2) / 2
sigmoid = _define("sigmoid", lambda g, out, x: (mul(g, mul(out, sub(1.0, out))),))
sin = _define("sin", lambda g, out, x: (mul(g, cos(x)),))
sinh = _define("sinh", lambda g, out, x: (mul(g, cosh(x)),))
tan = _define("tan", lambda g, out, x: (mul(g, add(1.0, square(out))),))
tanh = _define("tanh", lambda g, out, x: (mul(g, sub(1.0, square(out))),))

__all__ = ["atan", "cbrt", "cos", "cosh", "erf", "erfc", "exp", "exp10", "exp2", "expm1", "hypot", "log",
           "log10", "log1p", "log2", "pow", "rsqrt", "sigmoid", "sin", "sinh", "tan", "tanh"]
