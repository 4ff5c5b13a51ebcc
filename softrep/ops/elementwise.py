"""Elementwise ops on torch tensors, each with a rounding direction and autograd.

Layering: scalar kernel (`softrep.primitives.rounding`, `softrep.algorithms.elementwise`) -> launcher
(`softrep.cpu.launch`, `softrep.cuda.launch`) -> `_apply` here (broadcasting,
checks, output allocation) -> `Elementwise` autograd function -> public op.

Every op gets its launchers when it is defined (`launchers`), which registers
its kernels for the kernel audit (`python -m softrep audit-kernels`): importing
softrep registers every elementwise kernel it can launch.

Backward passes are built from softrep ops rounded to nearest, whatever the
forward rounding: the derivative of a directed-rounded op is taken to be that
of the exact operation.  Broadcast inputs get their gradient summed back to
their shape with `softrep.sum`, in the order documented in docs/order.md.
"""

import torch

from ..algorithms import elementwise as arith
from . import backend, batching, lowp, outputs
from ..primitives import rounding as R
from ..primitives.rounding import SUFFIX
from .memory import empty
from .summation import sum_to_shape
from .validate import broadcast_shape, rounding_suffix, tensor_operands
from ..cpu import launch as cpu_launch
from ..cuda import launch as cuda_launch


def launchers(scalar_kernel, nin):
    """(CPU launcher, CUDA launcher) of `scalar_kernel` with `nin` inputs; both
    register their kernels (`softrep.cpu.launch.elementwise`)."""
    return cpu_launch.elementwise(scalar_kernel, nin), cuda_launch.elementwise(scalar_kernel, nin)


def _apply(fn, kernel_launchers, names, tensors, out=None):
    """Run the launchers' kernel elementwise over broadcast `tensors`; no autograd.
    With `out` (softrep.ops.outputs), the result goes there and `out` is returned."""
    shape = broadcast_shape(fn, names, tensors)
    first = tensors[0]
    target = None
    if out is not None:
        outputs.prepare(fn, out, shape, first.dtype, first.device, tensors)
        if outputs.writable(out, tensors, same_elements_ok=True):
            target = out
    if target is None:
        target = empty(shape, dtype=first.dtype, device=first.device)
    n = target.numel()
    if n:
        flat = [t.detach().expand(shape).contiguous().reshape(-1) for t in tensors]
        cpu_run, cuda_run = kernel_launchers
        dtype = backend.cpu_dtype([target, *flat]) if n <= cpu_run.serial_max else None
        if dtype is not None and dtype in cpu_run.serial:
            cpu_launch.launch_serial(cpu_run, dtype, target.data_ptr(), [t.data_ptr() for t in flat], n)
        else:
            backend.execute(cpu_run, cuda_run, [target.view(-1)], flat)
    if out is not None and target is not out:
        out.copy_(target)
    return target if out is None else out


def apply_into(fn, kernel_launchers, names, tensors, out):
    """The op on checked `tensors` written into `out` (torch's out= semantics,
    softrep.ops.outputs); no autograd."""
    return _apply(fn, kernel_launchers, names, tensors, out)


def light(cpu_run, tensors):
    """The result of the CPU launcher `cpu_run` on `tensors` by the light path
    (`softrep.ops.backend.light_dtype`: same-shape contiguous CPU tensors, no
    autograd to record, at most `cpu_run.serial_max` elements), or None where
    the call needs the general path.  Same kernel, same bits: one call of the
    serial kernel on the tensors' addresses, no autograd Function, no
    broadcasting, no numpy views."""
    dtype = backend.light_dtype(tensors)
    if dtype is None or dtype not in cpu_run.serial:
        return None
    first = tensors[0]
    n = first.numel()
    if n > cpu_run.serial_max:
        return None
    result = torch.empty_like(first, memory_format=torch.contiguous_format)
    if n:
        cpu_launch.launch_serial(cpu_run, dtype, result.data_ptr(), [t.data_ptr() for t in tensors], n)
    return result


def _reduce_to_input(grad, shape):
    """grad summed over its broadcast dimensions back to `shape` (None: keep),
    in the documented sum order (`softrep.ops.summation.sum_to_shape`)."""
    if grad is None or shape is None or grad.shape == torch.Size(shape):
        return grad
    return sum_to_shape(grad, shape)


class Elementwise(torch.autograd.Function):
    """Autograd function for every elementwise op: `forward(inputs)` computes the
    result (no autograd), `spec.backward` gives the input gradients of the exact
    operation.  Written in torch.func's form (forward without ctx, setup_context,
    vmap), so torch.func.grad, vmap, jacrev work on every elementwise op."""

    @staticmethod
    def forward(spec, forward, *inputs):
        return forward(inputs)

    @staticmethod
    def setup_context(ctx, inputs, output):
        spec, _, *tensors = inputs
        ctx.spec = spec
        ctx.shapes = [t.shape for t in tensors]
        ctx.save_for_backward(*tensors, output)

    @staticmethod
    def backward(ctx, grad):
        *inputs, out = ctx.saved_tensors
        grads = ctx.spec.backward(grad, out, *inputs)
        grads = [_reduce_to_input(g, s) if ctx.needs_input_grad[i + 2] else None
                 for i, (g, s) in enumerate(zip(grads, ctx.shapes))]
        return (None, None, *grads)

    @staticmethod
    def vmap(info, in_dims, spec, forward, *inputs):
        # Each element is computed alone: the batch dim goes first (the
        # samples' own dims stay right-aligned for broadcasting) and the op
        # runs once over the whole batch.
        if getattr(forward, "draws_random", False):
            batching.no_randomness(spec.name, info)
        return forward(batching.aligned(inputs, in_dims[2:])), 0


class ElementwiseSpec:
    """An elementwise op: its argument names, its scalar kernel per rounding
    suffix (and their launchers), and `backward(g, out, *inputs)`, the input
    gradients made of softrep ops."""

    def __init__(self, name, arg_names, kernels, backward):
        self.name = name
        self.arg_names = arg_names
        self.kernels = kernels  # rounding suffix -> scalar kernel
        self.launchers = {suffix: launchers(k, len(arg_names)) for suffix, k in kernels.items()}
        # rounding name -> CPU launcher, for the light path (`light`)
        self.light_launchers = {mode: self.launchers[suffix][0] for mode, suffix in SUFFIX.items()
                                if suffix in self.launchers}
        self.backward = backward

    def apply(self, suffix, tensors):
        """The op on `tensors` (already checked), rounded as `suffix` says, with autograd."""
        run = self.launchers[suffix]
        return backend.call(Elementwise, self, lambda ts: _apply(self.name, run, self.arg_names, ts), *tensors)


def _kernels(prefix, module=R):
    return {s: getattr(module, f"{prefix}_{s}") for s in ("rn", "rd", "ru", "rz")}


def _exact(kernel):
    return {s: kernel for s in ("rn", "rd", "ru", "rz")}


# Backward formulas, from softrep ops rounded to nearest (documented in docs/primitives.md).
SPECS = {
    "add": ElementwiseSpec("add", ("input", "other"), _kernels("add"), lambda g, out, x, y: (g, g)),
    "sub": ElementwiseSpec("sub", ("input", "other"), _kernels("sub"), lambda g, out, x, y: (g, neg(g))),
    "mul": ElementwiseSpec("mul", ("input", "other"), _kernels("mul"),
                 lambda g, out, x, y: (mul(g, y), mul(g, x))),
    # d(x/y)/dy = -(x/y)/y: reuses the forward quotient rather than x/y**2
    "div": ElementwiseSpec("div", ("input", "other"), _kernels("div"),
                 lambda g, out, x, y: (div(g, y), neg(div(mul(g, out), y)))),
    "fma": ElementwiseSpec("fma", ("x", "y", "z"), _kernels("fma"),
                 lambda g, out, x, y, z: (mul(g, y), mul(g, x), g)),
    "sqrt": ElementwiseSpec("sqrt", ("input",), _kernels("sqrt"),
                  lambda g, out, x: (div(g, mul(out, 2.0)),)),
    "neg": ElementwiseSpec("neg", ("input",), _exact(arith.neg), lambda g, out, x: (neg(g),)),
    "abs": ElementwiseSpec("abs", ("input",), _exact(arith.absolute),
                 lambda g, out, x: (mul(g, _sign(x)),)),
    "square": ElementwiseSpec("square", ("input",), _kernels("square", arith),
                    lambda g, out, x: (mul(g, mul(x, 2.0)),)),
    "reciprocal": ElementwiseSpec("reciprocal", ("input",), _kernels("reciprocal", arith),
                        lambda g, out, x: (neg(mul(g, mul(out, out))),)),
}


# sign(x), a constant of abs's backward (detached: no gradient flows through
# it); not a public op, so not in SPECS.
_SIGN = ElementwiseSpec("sign", ("input",), _exact(arith.sign), lambda g, out, x: (torch.zeros_like(g),))


def _sign(x):
    return _SIGN.apply("rn", [x.detach()])


def _op(name, operands, rounding, out=None):
    spec = SPECS[name]
    if out is None:
        run = spec.light_launchers.get(rounding)
        if run is not None:
            result = light(run, operands)
            if result is not None:
                return result
    suffix = rounding_suffix(name, rounding)
    tensors = tensor_operands(name, **dict(zip(spec.arg_names, operands)))
    if out is not None:
        return apply_into(name, spec.launchers[suffix], spec.arg_names, tensors, out)
    return spec.apply(suffix, tensors)


def emulated(op, inputs, format, rounding="nearest", generator=None, *, saturate=False):
    """op(*inputs) with its exact result rounded once to `format`
    (softrep.ops.lowp; docs/lowprecision.md).

    op: "add", "sub", "mul", "div", "sqrt" or "fma"; inputs: tensors (one dtype,
    float32 or float64, broadcastable) or Python numbers.  The result has the
    inputs' dtype and holds a value of `format`.  Gradients are those of the
    exact operation (docs/order.md, elementwise backward table).
    """
    tensors, forward = lowp.elementwise_forward(op, inputs, format, rounding, generator, saturate=saturate)
    forward.draws_random = rounding == "stochastic"
    return Elementwise.apply(SPECS[op], forward, *tensors)


def _emulated_into(op, inputs, format, rounding, generator, out):
    """`emulated(op, ...)`, written into `out` when given (softrep.ops.outputs)."""
    if out is None:
        return emulated(op, inputs, format, rounding, generator)
    named = [(n, t) for n, t in zip(SPECS[op].arg_names, inputs) if isinstance(t, torch.Tensor)]
    if named:
        names, tensors = zip(*named)
        shape = broadcast_shape(op, names, tensors)
        outputs.prepare(op, out, shape, tensors[0].dtype, tensors[0].device, tensors)
    out.copy_(emulated(op, inputs, format, rounding, generator))
    return out


def add(input, other, *, rounding="nearest", format=None, generator=None, out=None):
    """input + other, rounded once in the given direction; broadcasts like torch.add."""
    if format is not None:
        return _emulated_into("add", (input, other), format, rounding, generator, out)
    return _op("add", (input, other), rounding, out)


def sub(input, other, *, rounding="nearest", format=None, generator=None, out=None):
    """input - other, rounded once."""
    if format is not None:
        return _emulated_into("sub", (input, other), format, rounding, generator, out)
    return _op("sub", (input, other), rounding, out)


def mul(input, other, *, rounding="nearest", format=None, generator=None, out=None):
    """input * other, rounded once."""
    if format is not None:
        return _emulated_into("mul", (input, other), format, rounding, generator, out)
    return _op("mul", (input, other), rounding, out)


def div(input, other, *, rounding="nearest", format=None, generator=None, out=None):
    """input / other, rounded once (IEEE division, not torch's rounding_mode)."""
    if format is not None:
        return _emulated_into("div", (input, other), format, rounding, generator, out)
    return _op("div", (input, other), rounding, out)


def fma(x, y, z, *, rounding="nearest", format=None, generator=None, out=None):
    """x * y + z with a single rounding."""
    if format is not None:
        return _emulated_into("fma", (x, y, z), format, rounding, generator, out)
    return _op("fma", (x, y, z), rounding, out)


def sqrt(input, *, rounding="nearest", format=None, generator=None, out=None):
    """Square root, rounded once; NaN for negative inputs, sqrt(-0) = -0."""
    if format is not None:
        return _emulated_into("sqrt", (input,), format, rounding, generator, out)
    return _op("sqrt", (input,), rounding, out)


def neg(input, *, rounding="nearest", out=None):
    """-input (exact; `rounding` is accepted for uniformity and has no effect)."""
    return _op("neg", (input,), rounding, out)


def abs(input, *, rounding="nearest", out=None):
    """|input| (exact)."""
    return _op("abs", (input,), rounding, out)


def square(input, *, rounding="nearest", out=None):
    """input * input, rounded once."""
    return _op("square", (input,), rounding, out)


def reciprocal(input, *, rounding="nearest", out=None):
    """1 / input, rounded once."""
    return _op("reciprocal", (input,), rounding, out)

