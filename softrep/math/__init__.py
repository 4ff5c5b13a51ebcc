"""Correctly rounded math functions on tensors: `softrep.exp(x)`, `softrep.log(x)`, ...

One function per module, softrep/math/<name>.py, holding:

* `<name>_f32(x)` (or `(x, y)` for a two-argument function): a jitable scalar
  kernel, float32 in, float32 out, correctly rounded to nearest-even for every
  input (the scheme is described in softrep/math/_core.py, the proofs in
  docs/mathlib.md);
* optionally `<name>_fast(x)`: the float32 fast path alone, branch-free,
  returning (result, True) when it decides the correctly rounded result and
  (anything, False) otherwise; `<name>_f32` must then be exactly "fast, else
  the accurate path".  The CPU launcher then runs it as a vectorisable first
  loop (softrep/cpu/launch.py);
* optionally `<name>_f64(x)`: the float64 version.  Without it, the op raises
  a TypeError on float64 tensors;
* `grad(g, out, *inputs)`: the input gradients as a tuple of tensors, made of
  softrep ops;
* optionally `ARG_NAMES` (default `("input",)`, or `("input", "other")` for two
  arguments), the torch argument names used in error messages.

Modules are discovered here (every module of this package whose name does not
start with `_`), so adding a function means adding its file, nothing else.
Each one becomes

* an entry of `FUNCTIONS` (name -> `MathFunction`), used by the verifier;
* one scalar kernel dispatching on the dtype (`by_type`), launched by the
  generic elementwise launchers of softrep/cpu/launch.py and
  softrep/cuda/launch.py;
* a public op `<name>(input)` whose autograd is softrep's one elementwise
  autograd Function (`softrep.elementwise.Elementwise`) with the module's `grad`;
* a CUDA kernel `math.<name>.float32` registered for the PTX audit.
"""

import importlib
import inspect
import pkgutil
from dataclasses import dataclass

import numpy as np
import torch
from numba.core import types

from .. import elementwise as _ew
from .._jit import by_type
from .._validate import tensor_operands


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


def _public_op(fn):
    arg_names = fn.arg_names
    spec = _ew._Spec(fn.name, arg_names, {"rn": fn.kernel}, fn.grad)

    def op(*args):
        if len(args) != len(arg_names):
            raise TypeError(f"softrep.{fn.name}() takes {len(arg_names)} argument(s) "
                            f"({', '.join(arg_names)}), got {len(args)}")
        if fn.arity == 1 and not isinstance(args[0], torch.Tensor):
            raise TypeError(f"softrep.{fn.name}: argument '{arg_names[0]}' must be a torch.Tensor, "
                            f"got {type(args[0]).__name__}")
        tensors = tensor_operands(fn.name, **dict(zip(arg_names, args)))
        if tensors[0].dtype == torch.float64 and fn.f64 is None:
            raise TypeError(f"softrep.{fn.name}: float64 is not supported yet for this function "
                            "(only float32 has a correctly rounded kernel)")
        return _ew.Elementwise.apply(spec, "rn", *tensors)

    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in arg_names]
    op.__signature__ = inspect.Signature(params)
    op.__name__ = op.__qualname__ = fn.name
    rounding = "correctly rounded" if fn.f64 is None else "correctly rounded in float32"
    op.__doc__ = (f"{fn.name}({', '.join(arg_names)}) elementwise, {rounding} to nearest-even "
                  f"(softrep/math/{fn.name}.py; verified by `python -m softrep verify {fn.name}`).")
    return op


def _register_audit(fn):
    from ..cuda import audit
    from ..cuda import launch as cuda_launch

    arr = types.Array(types.float32, 1, "C")
    audit.register(f"math.{fn.name}.float32", lambda: (
        cuda_launch.elementwise(fn.kernel, fn.arity).kernel.py_func, (arr,) * (fn.arity + 1)))


def _no_grad(name):
    def grad(g, out, *inputs):
        raise NotImplementedError(f"softrep.{name}: backward is not implemented yet")
    return grad


def _discover():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        name = info.name
        if name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        f32 = getattr(module, f"{name}_f32", None)
        if f32 is None:
            continue
        arity = len(inspect.signature(f32).parameters)
        arg_names = tuple(getattr(module, "ARG_NAMES", ("input", "other")[:arity]))
        f64 = getattr(module, f"{name}_f64", None)
        grad = getattr(module, "grad", None) or _no_grad(name)
        kernel = _scalar_kernel(name, f32, f64, arity)
        fast = getattr(module, f"{name}_fast", None)
        if fast is not None:
            # float32 CPU launches run `fast` over everything first, then `f32`
            # where it did not decide (softrep/cpu/launch.py); `f32` must be
            # `fast` followed by the accurate path, so the bits are f32's.
            kernel.decided_fast = fast
        fn = MathFunction(name, arity, arg_names, f32, f64, kernel, grad, None)
        fn.op = _public_op(fn)
        FUNCTIONS[name] = fn
        _register_audit(fn)


_discover()

globals().update({name: fn.op for name, fn in FUNCTIONS.items()})
__all__ = sorted(FUNCTIONS)
