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

import math

import torch

from ..algorithms import elementwise as arith
from . import backend, batching, lowp, mixed, outputs
from ..primitives import rounding as R
from ..primitives.rounding import SUFFIX
from ..primitives.fpenv import ieee_state
from .memory import empty
from .summation import sum_to_shape
from .validate import ALL_FLOAT_DTYPES, broadcast_shape, rounding_suffix, tensor_operands
from ..cpu import launch as cpu_launch
from ..cuda import launch as cuda_launch


def launchers(scalar_kernel, nin):
    """(CPU launcher, CUDA launcher) of `scalar_kernel` with `nin` inputs; both
    register their kernels (`softrep.cpu.launch.elementwise`)."""
    return cpu_launch.elementwise(scalar_kernel, nin), cuda_launch.elementwise(scalar_kernel, nin)


def _broadcast_layout(shape, operand):
    """(outer, period, inner) when `operand`'s shape, broadcast to `shape`, keeps
    one run of consecutive dims (its elements in row-major order, `period` of
    them) and repeats along the others: output element (o, p, j) reads its
    element p.  None for other broadcasts (the operand is then materialised)."""
    sizes = (1,) * (len(shape) - operand.dim()) + tuple(operand.shape)
    kept = [d for d, size in enumerate(sizes) if size != 1]
    if not kept:
        return 1, 1, math.prod(shape)
    first, last = kept[0], kept[-1]
    if any(sizes[d] != shape[d] for d in range(first, last + 1)):
        return None
    return math.prod(shape[:first]), math.prod(shape[first:last + 1]), math.prod(shape[last + 1:])


def _compact(t):
    """t without its broadcast: every dim of stride 0 (an expanded view) narrowed
    to one element.  The same values at every index of the broadcast shape."""
    if all(s != 0 or n == 1 for s, n in zip(t.stride(), t.shape)):
        return t
    return t[tuple(slice(0, 1) if s == 0 else slice(None) for s in t.stride())]


def _apply(fn, kernel_launchers, names, tensors, out=None, broadcast_run=None):
    """Run the launchers' kernel elementwise over broadcast `tensors`; no autograd.
    With `out` (softrep.ops.outputs), the result goes there and `out` is returned.
    `broadcast_run` (softrep.cpu.launch.broadcast_second): the CPU launcher that
    reads a broadcast second operand in place instead of materialising it."""
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
    layout = None
    if n and broadcast_run is not None and len(tensors) == 2 and tensors[0].shape == shape \
            and backend.on_cpu_launcher(target, *tensors):
        second = _compact(tensors[1])
        if second.shape != shape:
            layout = _broadcast_layout(shape, second)
    if layout is not None:
        x, y = tensors[0].detach().contiguous().reshape(-1), second.detach().contiguous().reshape(-1)
        dtype = backend.cpu_dtype([target, x, y]) if n <= broadcast_run.serial_max else None
        if dtype is not None and dtype in broadcast_run.serial:
            cpu_launch.launch_broadcast_serial(broadcast_run, dtype, target.data_ptr(), x.data_ptr(), y.data_ptr(),
                                               *layout)
        else:
            backend.execute(broadcast_run, None, [target.view(-1)], [x, y], *layout, work=n)
    elif n:
        flat = [(t if t.shape == shape else t.expand(shape)).detach().contiguous().reshape(-1) for t in tensors]
        cpu_run, cuda_run = kernel_launchers
        dtype = backend.cpu_dtype([target, *flat]) if n <= cpu_run.serial_max else None
        if dtype is not None and dtype in cpu_run.serial:
            cpu_launch.launch_serial(cpu_run, dtype, target.data_ptr(), [t.data_ptr() for t in flat], n)
        else:
            backend.execute(cpu_run, cuda_run, [target.view(-1)], flat)
    if out is not None and target is not out:
        out.copy_(target)
    return target if out is None else out


def apply_into(fn, kernel_launchers, names, tensors, out, broadcast_run=None):
    """The op on checked `tensors` written into `out` (torch's out= semantics,
    softrep.ops.outputs); no autograd."""
    return _apply(fn, kernel_launchers, names, tensors, out, broadcast_run)


_FINITE_MAX = {torch.float32: float(torch.finfo(torch.float32).max), torch.float64: float("inf")}

# Python numbers of light calls, each held as a buffer of its dtype: the
# serial kernels read every operand at the same index, so a number is a run
# of equal elements, and a buffer longer than the call needs is as good as one
# of its length.  Keyed by dtype, value and the sign of a zero (0.0 == -0.0);
# the buffers are never written.  At most _NUMBER_ELEMENTS elements are kept
# in all (8 MiB of float64; the cache starts afresh when a new buffer would
# pass that), each buffer up to the light path's longest call, so that the
# numbers of a training step (a scale, a dropout factor) are filled once.
_numbers = {}
_NUMBER_ELEMENTS = 1_048_576


def _number_buffer(value, dtype, n):
    """A tensor of at least n elements of `dtype` holding the Python number
    `value` as `tensor_operands` converts it (torch's conversion of its double
    value), or None where that cannot be had cheaply: torch.full refuses
    float32 numbers beyond float32's range (the general path rounds them to
    infinity), so those, float32 infinities and NaNs are left to the general
    path, as are bools and non-numbers."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except OverflowError:  # an int beyond double's range: the general path says so
        return None
    largest = _FINITE_MAX[dtype]
    if not -largest <= value <= largest:
        return None
    key = (dtype, value, value == 0 and math.copysign(1.0, value) < 0)
    buffer = _numbers.get(key)
    if buffer is None or buffer.numel() < n:
        size = max(n, 64)
        if size > _NUMBER_ELEMENTS:
            return torch.full((n,), value, dtype=dtype)
        if sum(b.numel() for b in _numbers.values()) + size > _NUMBER_ELEMENTS:
            _numbers.clear()
        buffer = _numbers[key] = torch.full((size,), value, dtype=dtype)
    return buffer


def light(cpu_run, values, out=None):
    """The result of the CPU launcher `cpu_run` on `values` by the light path
    (`softrep.ops.backend.light_dtype`: same-shape contiguous CPU tensors, no
    autograd to record), or None where the call needs the general path.  Same
    kernel, same bits: one call of the serial kernel on the tensors'
    addresses (at most `cpu_run.serial_max` elements; more: the parallel
    launcher on numpy views), no autograd Function, no broadcasting.  A Python
    number among them is read from a buffer of equal elements
    (`_number_buffer`, which keeps four buffers of the largest size taken
    here); beyond that size the call takes the general path.

    With `out` (torch's out= semantics, softrep.ops.outputs) the result goes
    there and `out` is returned, when `out` is a plain tensor of the operands'
    shape, dtype and layout that overlaps no operand, or only as the very same
    elements (`exp(x, out=x)`).  Small ones are written through a temporary
    and `copy_`: a serial kernel whose output is one of its inputs keeps its
    values but runs its scalar loop, not its vector one (the compiler's
    overlap check fails), 6x slower for exp on 30,000 floats than the
    kernel and the copy.  Larger ones are written in place, as the general
    path writes them.  Any other `out` -- one to resize, to convert, or
    that requires grad -- is left to the general path, which checks it and
    says what is wrong."""
    tensors = values
    for v in values:
        if not isinstance(v, torch.Tensor):
            tensors = [t for t in values if isinstance(t, torch.Tensor)]
            if not tensors:
                return None
            break
    numbers = tensors is not values  # some values are Python numbers
    if out is not None:
        if not isinstance(out, torch.Tensor):
            return None
        tensors = [*tensors, out]
    dtype = backend.light_dtype(tensors)
    if dtype is None or dtype not in cpu_run.serial:
        return None
    first = tensors[0]
    n = first.numel()
    parallel = n > cpu_run.serial_max
    if numbers and n > _NUMBER_ELEMENTS // 4:
        return None  # the general path reads the number in place, without a buffer of n
    same = False
    if out is not None:
        overlap = _overlap(out, tensors[:-1])
        if overlap == _PARTIAL:
            return None
        same = overlap == _SAME and not parallel
    if numbers:
        operands = []  # the buffers stay referenced here until the kernel is done
        for v in values:
            if not isinstance(v, torch.Tensor):
                v = _number_buffer(v, first.dtype, n)
                if v is None:
                    return None
            operands.append(v)
    else:
        operands = values
    # contiguous like `first` (light_dtype checked)
    result = torch.empty_like(first) if out is None or same else out
    if parallel:
        _launch_parallel(cpu_run, result, operands)
    elif n:
        cpu_launch.launch_serial(cpu_run, dtype, result.data_ptr(), [t.data_ptr() for t in operands], n)
    return out.copy_(result) if same else result


def _launch_parallel(cpu_run, out, operands):
    """The parallel launcher `cpu_run` on the C-contiguous CPU tensors `out`
    and `operands`, through flat numpy views, in IEEE's control state: what
    the general path launches, without its broadcasting and checks."""
    arrays = [out.detach().numpy().reshape(-1)] + [t.detach().numpy().reshape(-1) for t in operands]
    with ieee_state():
        cpu_run(*arrays)


_APART, _SAME, _PARTIAL = range(3)


def _overlap(out, tensors):
    """_APART where the C-contiguous `out` shares no byte with any of the
    C-contiguous, same-shape `tensors`; _SAME where it shares only the very
    same elements (the same first address) with some; else _PARTIAL.  For
    contiguous tensors of one shape, overlapping address ranges are exactly
    shared memory."""
    start = out.data_ptr()
    stop = start + out.numel() * out.element_size()
    overlap = _APART
    for t in tensors:
        at = t.data_ptr()
        if at == start and out.numel():
            overlap = _SAME
        elif at < stop and start < at + t.numel() * t.element_size():
            return _PARTIAL
    return overlap


def _scalars_as_numbers(tensors):
    """`tensors` with each plain 0-d CPU tensor among larger ones replaced by
    its value as a Python float (exact for float32 and float64), which `light`
    reads from a buffer of equal elements: the same operand at every index,
    as broadcasting gives.  Unchanged under a torch.func transform."""
    if len(tensors) < 2 or backend.transforms_active():
        return tensors
    scalar = larger = False
    for t in tensors:
        if t.dim() == 0:
            scalar = True
        else:
            larger = True
    if not (scalar and larger):
        return tensors
    return [float(t) if t.dim() == 0 and t.is_cpu and type(t) is torch.Tensor else t for t in tensors]


def _reduce_to_input(grad, shape):
    """grad summed over its broadcast dimensions back to `shape` (None: keep),
    in the documented sum order (`softrep.ops.summation.sum_to_shape`)."""
    if grad is None or shape is None or grad.shape == torch.Size(shape):
        return grad
    return sum_to_shape(grad, shape)


class Elementwise(backend.Function):
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
        backward = ctx.spec.backward
        if isinstance(backward, tuple):  # one formula per input: only the needed ones run
            grads = [f(grad, out, *inputs) if ctx.needs_input_grad[i + 2] else None for i, f in enumerate(backward)]
        else:
            grads = backward(grad, out, *inputs)
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
    gradients made of softrep ops -- or a tuple of one such function per
    input, each giving that input's gradient, so that a gradient nobody needs
    (a constant operand's) is not computed.

    `low_forward(suffix)`, where set, is the forward on bfloat16/float16
    tensors: a function of the tensors that rounds each result once in their
    format (the backward is the same formula, made of the low-precision ops)."""

    def __init__(self, name, arg_names, kernels, backward, low_forward=None, broadcast=()):
        self.name = name
        self.arg_names = arg_names
        self.kernels = kernels  # rounding suffix -> scalar kernel
        self.launchers = {suffix: launchers(k, len(arg_names)) for suffix, k in kernels.items()}
        # rounding suffix -> CPU launcher reading a broadcast second operand in place
        self.broadcast_launchers = {suffix: cpu_launch.broadcast_second(kernels[suffix]) for suffix in broadcast}
        # rounding name -> CPU launcher, for the light path (`light`)
        self.light_launchers = {mode: self.launchers[suffix][0] for mode, suffix in SUFFIX.items()
                                if suffix in self.launchers}
        self.backward = backward
        self.low_forward = low_forward

    def apply(self, suffix, tensors):
        """The op on `tensors` (already checked), rounded as `suffix` says, with autograd."""
        if mixed.is_low(tensors[0]):
            if self.low_forward is None:
                raise TypeError(f"softrep.{self.name}: no {tensors[0].dtype} version")
            return Elementwise.apply(self, self.low_forward(suffix), *tensors)
        return backend.call(Elementwise, self, lambda ts: self.run(suffix, ts), *tensors)

    def apply_into(self, suffix, tensors, out):
        """The op on `tensors` (already checked) written into `out` (torch's
        out= semantics, softrep.ops.outputs); no autograd.  bfloat16/float16:
        the result computed as without `out`, then copied (exact)."""
        if mixed.is_low(tensors[0]):
            result = self.apply(suffix, [t.detach() for t in tensors])
            outputs.prepare(self.name, out, result.shape, result.dtype, result.device, tensors)
            return out.copy_(result)
        return apply_into(self.name, self.launchers[suffix], self.arg_names, tensors, out,
                          self.broadcast_launchers.get(suffix))

    def run(self, suffix, tensors):
        """The float32/float64 kernel on broadcast `tensors`, without autograd.
        Small same-shape CPU operands take the light path (`light`): inside
        the autograd Function's forward grad mode is off, so a recorded op
        runs the same serial kernel as an unrecorded one."""
        result = light(self.launchers[suffix][0], _scalars_as_numbers(tensors))
        if result is not None:
            return result
        return _apply(self.name, self.launchers[suffix], self.arg_names, tensors,
                      broadcast_run=self.broadcast_launchers.get(suffix))


# ---------------------------------------------------------------------------- bfloat16 / float16
#
# On bfloat16/float16 tensors every arithmetic op is the exact operation
# rounded once in the tensors' format: the operands are widened to float32
# (exact) and the emulated arithmetic of softrep.ops.lowp computes the exact
# result's float64 rounding plus the sign of its error, which decides the
# rounding to any format of at most 51 bits (docs/lowprecision.md).  A float32
# intermediate would not do: a + b rounded to float32, then to bfloat16, can
# land on a bfloat16 midpoint that the exact sum is not on (double rounding).
# square is mul(x, x) and reciprocal div(1, x), each one rounding; neg, abs and
# sign are exact in any format, so their float32 kernels serve.

_LOW_ARITHMETIC = {
    "add": ("add", lambda ts: ts), "sub": ("sub", lambda ts: ts), "mul": ("mul", lambda ts: ts),
    "div": ("div", lambda ts: ts), "fma": ("fma", lambda ts: ts), "sqrt": ("sqrt", lambda ts: ts),
    "square": ("mul", lambda ts: (ts[0], ts[0])),
    "reciprocal": ("div", lambda ts: (torch.ones((), dtype=ts[0].dtype, device=ts[0].device), ts[0])),
}
_ROUNDING_NAMES = {"rn": "nearest", "rd": "down", "ru": "up", "rz": "zero"}


def _low_arithmetic(name):
    def low_forward(suffix):
        def forward(tensors):
            dtype = tensors[0].dtype
            if name not in _LOW_ARITHMETIC:  # exact ops: the float32 kernel, then an exact cast
                wide = [t.detach().to(torch.float32) for t in tensors]
                return mixed.exact_cast(SPECS.get(name, _SIGN).run("rn", wide), dtype)
            op, operands = _LOW_ARITHMETIC[name]
            wide = [t.detach().to(torch.float32) for t in operands(tensors)]
            _, run = lowp.elementwise_forward(op, wide, mixed.LOW_FORMATS[dtype], _ROUNDING_NAMES[suffix])
            return mixed.exact_cast(run(wide), dtype)
        return forward
    return low_forward


_WIDE_DTYPES = (torch.float32, torch.float64)


def operands(fn, arg_names, values):
    """The checked tensor operands of elementwise op `fn`: torch.autocast's
    policy applied (softrep.ops.mixed), Python numbers converted to the
    tensors' dtype (once rounded from their double value for bfloat16/float16)."""
    first = values[0]
    if isinstance(first, torch.Tensor) and first.dtype in _WIDE_DTYPES:
        # the common case, checked at a fraction of the general path's cost:
        # tensors of one float32/float64 dtype and one device, or Python
        # numbers (converted as tensor_operands does), and no autocast
        kind, device = first.dtype, first.device
        numbers = False
        for v in values[1:]:
            if isinstance(v, torch.Tensor):
                if v.dtype != kind or v.device != device:
                    break
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                numbers = True
            else:
                break
        else:
            if mixed.autocast_dtype([v for v in values if isinstance(v, torch.Tensor)]) is None:
                if not numbers:
                    return list(values)
                return [v if isinstance(v, torch.Tensor) else torch.tensor(float(v), dtype=kind, device=device)
                        for v in values]
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if tensors:
        cast, _ = mixed.autocast_operands(fn, tensors)
        it = iter(cast)
        values = [next(it) if isinstance(v, torch.Tensor) else v for v in values]
        low = next((t for t in cast if mixed.is_low(t)), None)
        if low is not None:
            values = [mixed.python_number(v, low.dtype).to(low.device)
                      if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in values]
    return tensor_operands(fn, ALL_FLOAT_DTYPES, **dict(zip(arg_names, values)))


def _kernels(prefix, module=R):
    return {s: getattr(module, f"{prefix}_{s}") for s in ("rn", "rd", "ru", "rz")}


def _exact(kernel):
    return {s: kernel for s in ("rn", "rd", "ru", "rz")}


# Backward formulas, from softrep ops rounded to nearest (documented in docs/primitives.md).
SPECS = {
    "add": ElementwiseSpec("add", ("input", "other"), _kernels("add"), lambda g, out, x, y: (g, g),
                           _low_arithmetic("add"), broadcast=("rn",)),
    "sub": ElementwiseSpec("sub", ("input", "other"), _kernels("sub"),
                           (lambda g, out, x, y: g, lambda g, out, x, y: neg(g)),
                           _low_arithmetic("sub"), broadcast=("rn",)),
    "mul": ElementwiseSpec("mul", ("input", "other"), _kernels("mul"),
                 (lambda g, out, x, y: mul(g, y), lambda g, out, x, y: mul(g, x)), _low_arithmetic("mul"),
                 broadcast=("rn",)),
    # d(x/y)/dy = -(x/y)/y: reuses the forward quotient rather than x/y**2
    "div": ElementwiseSpec("div", ("input", "other"), _kernels("div"),
                 (lambda g, out, x, y: div(g, y), lambda g, out, x, y: neg(div(mul(g, out), y))),
                 _low_arithmetic("div"), broadcast=("rn",)),
    "fma": ElementwiseSpec("fma", ("x", "y", "z"), _kernels("fma"),
                 (lambda g, out, x, y, z: mul(g, y), lambda g, out, x, y, z: mul(g, x), lambda g, out, x, y, z: g),
                 _low_arithmetic("fma")),
    "sqrt": ElementwiseSpec("sqrt", ("input",), _kernels("sqrt"),
                  lambda g, out, x: (div(g, mul(out, 2.0)),), _low_arithmetic("sqrt")),
    "neg": ElementwiseSpec("neg", ("input",), _exact(arith.neg), lambda g, out, x: (neg(g),),
                           _low_arithmetic("neg")),
    "abs": ElementwiseSpec("abs", ("input",), _exact(arith.absolute),
                 lambda g, out, x: (mul(g, _sign(x)),), _low_arithmetic("abs")),
    "square": ElementwiseSpec("square", ("input",), _kernels("square", arith),
                    lambda g, out, x: (mul(g, mul(x, 2.0)),), _low_arithmetic("square")),
    "reciprocal": ElementwiseSpec("reciprocal", ("input",), _kernels("reciprocal", arith),
                        lambda g, out, x: (neg(mul(g, mul(out, out))),), _low_arithmetic("reciprocal")),
}


# sign(x), a constant of abs's backward (detached: no gradient flows through
# it); not a public op, so not in SPECS.
_SIGN = ElementwiseSpec("sign", ("input",), _exact(arith.sign), lambda g, out, x: (torch.zeros_like(g),),
                        _low_arithmetic("sign"))


def _sign(x):
    return _SIGN.apply("rn", [x.detach()])


def _op(name, values, rounding, out=None):
    spec = SPECS[name]
    run = spec.light_launchers.get(rounding)
    if run is not None:
        result = light(run, values, out)
        if result is not None:
            return result
    suffix = rounding_suffix(name, rounding)
    tensors = operands(name, spec.arg_names, values)
    if out is not None:
        return spec.apply_into(suffix, tensors, out)
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

