"""Low-precision formats on float32/float64 tensors: rounding, emulated
arithmetic and emulated matrix products, bit-exact on every backend.

* `round_to(x, format, rounding)`: x rounded to a format (bfloat16, float16,
  tf32, float8_e4m3fn, float8_e5m2, or a `softrep.Format`), returned in x's dtype.
* `elementwise_forward(op, inputs, format, rounding)`: add, sub, mul, div,
  sqrt, fma whose exact result is rounded once to the format (the tensor op
  with autograd is `softrep.ops.elementwise.emulated`, reached through
  `softrep.add(..., format=...)` and its kin);
* `mm(a, b, input_format=, accumulate_format=, rounding=)`: inputs rounded to
  `input_format` (to nearest), then softrep's mm order with every
  accumulation step an exact fma rounded once to `accumulate_format`
  (`softrep.mm(..., input_format=...)` and `softrep.linear` route here).

This module imports no other tensor op: they build on it.

The rounding mechanism is `softrep.primitives.formats`; docs/lowprecision.md describes
the semantics (overflow, saturation, NaN, stochastic rounding, autograd).
"""

import torch

from . import backend, batching
from ..primitives import formats as F
from . import generator as _random
from .memory import empty
from .validate import broadcast_shape, normalize_dim, tensor_operands
from ..cpu import lowp as cpu_lowp
from ..cuda import lowp as cuda_lowp

_IEEE_MODES = (F.NEAREST, F.DOWN, F.UP, F.ZERO)


def _check_tensor(fn, name, x):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"softrep.{fn}: argument '{name}' has dtype {x.dtype}; expected torch.float32 or torch.float64")


def _check_bool(fn, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a bool, got {type(value).__name__}")


def _rng_args(fn, code, generator):
    """Kernel arguments (key lo/hi, offset lo/hi); a draw only for stochastic rounding."""
    if code != F.STOCHASTIC:
        _random.check_generator(fn, generator)
        return (0, 0, 0, 0)
    gen = _random.resolve(fn, generator)
    offset = gen.next_offset()
    return (*_random.split64(gen.seed), *_random.split64(offset))


def conversion_spec(fn, fmt, dtype, code, subnormals=True, saturate=False, arg="format"):
    if not fmt.fits(dtype, fmt.subnormals and subnormals):
        raise ValueError(f"softrep.{fn}: argument '{arg}' {fmt!r} has values that {dtype} cannot hold "
                         f"(precision, exponent range or smallest subnormal); use a wider input dtype")
    return fmt.spec(code, subnormals, saturate)


def operation_spec(fn, fmt, dtype, code, saturate=False, arg="format"):
    """The kernel spec for emulated arithmetic on `dtype` rounding to `fmt`.

    The exact result is known as a float64 rounded to nearest plus the sign of
    its error (formats.round_with_residual), which determines the rounding to
    any format of at most 51 bits whose smallest quantum is at least 2**-1072;
    the float64 format itself is served by the IEEE float64 results directly.
    """
    if dtype == torch.float64 and fmt == F.FORMATS["float64"] and code in _IEEE_MODES and not saturate:
        return fmt.spec(code, True, False, native=True)
    spec = conversion_spec(fn, fmt, dtype, code, True, saturate, arg)
    if fmt.precision > 51 or fmt.lowest_quantum() < -1072:
        raise ValueError(f"softrep.{fn}: argument '{arg}' {fmt!r} is too close to float64 for emulated "
                         "arithmetic (at most 51 bits and a smallest quantum of at least 2**-1072), except "
                         "float64 itself with rounding 'nearest', 'down', 'up' or 'zero'")
    return spec


# ---------------------------------------------------------------------------- round_to


def _round_to_forward(x, spec, rng):
    out = empty(x.shape, dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    flat = x.detach().contiguous().reshape(-1)
    backend.execute(cpu_lowp.round_to, cuda_lowp.round_to, [out.view(-1)], [flat], spec, *rng)
    return out


class _RoundTo(backend.Function):
    """Straight-through estimator: d round_to(x) / dx is taken to be 1."""

    @staticmethod
    def forward(x, spec, rng):
        return _round_to_forward(x, spec, rng)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None

    @staticmethod
    def vmap(info, in_dims, x, spec, rng):
        # elementwise: the batch is rounded as one tensor (stochastic rounding,
        # whose words depend on the element index, refuses vmap when it draws)
        return _RoundTo.apply(x, spec, rng), in_dims[0]


def round_to(x, format, rounding="nearest", *, subnormals=True, saturate=False, generator=None, dim=None):
    """x rounded to `format`, in x's dtype (float32 or float64).

    format: "bfloat16", "float16", "tf32", "float8_e4m3fn", "float8_e5m2",
    "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "float32", a torch
    dtype of one of these, a `softrep.Format`, or an OCP Microscaling format
    ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4_e2m1",
    "mxint8" or a `softrep.MXFormat`) whose blocks of 32 run along `dim`
    (default: the last dimension; see `quantize_mx`).
    rounding: "nearest" (ties to even), "nearest_away", "down", "up", "zero",
    "odd", "stochastic" (random words from `generator`, default: softrep's
    global generator).  subnormals=False flushes the subnormal range to the
    grid {0, 2**emin}; saturate=True replaces overflows and infinities by the
    largest finite value (MX formats always saturate, as their specification
    says).  The gradient is passed through unchanged.
    """
    _check_tensor("round_to", "x", x)
    fmt = F.resolve("round_to", format, mx=True)
    if isinstance(fmt, F.MXFormat):
        _check_bool("round_to", "saturate", saturate)
        values, _, _ = _mx_apply("round_to", x, fmt, rounding, subnormals, generator, -1 if dim is None else dim)
        return values
    if dim is not None:
        raise ValueError(f"softrep.round_to: argument 'dim' is for block-scaled (MX) formats only; {fmt!r} "
                         "rounds every element on its own")
    code = F.rounding_code("round_to", rounding)
    _check_bool("round_to", "subnormals", subnormals)
    _check_bool("round_to", "saturate", saturate)
    spec = conversion_spec("round_to", fmt, x.dtype, code, subnormals, saturate)
    rng = _rng_args("round_to", code, generator)
    return _RoundTo.apply(x, spec, rng)


# ---------------------------------------------------------------------------- OCP Microscaling


def _mx_forward(x, fmt, spec, dim, rng):
    """(values, elements, scales) of the MX conversion of x with blocks along `dim`."""
    shape = tuple(x.shape)
    length = shape[dim]
    outer = 1
    for size in shape[:dim]:
        outer *= size
    inner = 1
    for size in shape[dim + 1:]:
        inner *= size
    nblocks = (length + fmt.block_size - 1) // fmt.block_size
    scale_shape = shape[:dim] + (nblocks,) + shape[dim + 1:]
    values = empty(shape, dtype=x.dtype, device=x.device)
    elements = empty(shape, dtype=x.dtype, device=x.device)
    scales = empty(scale_shape, dtype=torch.float32, device=x.device)
    if values.numel() == 0:
        return values, elements, scales
    x3 = x.detach().contiguous().reshape(outer, length, inner)
    backend.execute(cpu_lowp.mx, cuda_lowp.mx,
                    [values.view(outer, length, inner), elements.view(outer, length, inner),
                     scales.view(outer, nblocks, inner)], [x3], spec, fmt.block_size, *rng)
    return values, elements, scales


class _MXRoundTo(backend.Function):
    """MX conversion; the values get the straight-through gradient (d/dx = 1),
    elements and scales none."""

    @staticmethod
    def forward(x, fmt, spec, dim, rng):
        return _mx_forward(x, fmt, spec, dim, rng)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1], output[2])

    @staticmethod
    def backward(ctx, grad_values, grad_elements, grad_scales):
        return grad_values, None, None, None, None


def _mx_apply(fn, x, fmt, rounding, subnormals, generator, dim):
    code = F.rounding_code(fn, rounding)
    _check_bool(fn, "subnormals", subnormals)
    if not fmt.fits(x.dtype, fmt.element.subnormals and subnormals):
        raise ValueError(f"softrep.{fn}: argument 'format' {fmt!r} has values that {x.dtype} cannot hold "
                         "(element precision, or element exponent range shifted by the E8M0 scales)")
    dim = normalize_dim(fn, dim, x.dim())
    spec = fmt.element.spec(code, subnormals, True)
    rng = _rng_args(fn, code, generator)
    if x.dim() == 0:
        values, elements, scales = _MXRoundTo.apply(x.reshape(1), fmt, spec, 0, rng)
        return values.reshape(()), elements.reshape(()), scales.reshape(())
    return _MXRoundTo.apply(x, fmt, spec, dim, rng)


def quantize_mx(x, format, rounding="nearest", *, dim=-1, subnormals=True, generator=None):
    """OCP Microscaling conversion of x (float32 or float64): returns
    (elements, scales).

    Blocks of `format.block_size` (32) consecutive elements along `dim` share
    one E8M0 scale (a last partial block is a shorter block).  `elements` has
    x's shape and dtype and holds values of the element format (so
    `.to(torch.float8_e4m3fn)` etc. of it is exact); `scales` is float32 with
    x's shape except ceil(size / 32) along `dim`, each a power of two 2**s,
    s in [-127, 127], or NaN (so `.to(torch.float8_e8m0fnu)` is exact).
    elements * scales (scales repeated 32 times along dim) is
    `round_to(x, format, rounding, dim=dim)`, exactly.  The shared exponent,
    the clamping and the special values follow OCP MX v1.0 section 6.3
    (docs/lowprecision.md, "Block-scaled formats"); the element rounding is
    `rounding`, stochastic rounding drawing word i (the element's row-major
    index) of one draw from `generator`.  Gradients: none (use round_to for a
    straight-through gradient).
    """
    _check_tensor("quantize_mx", "x", x)
    fmt = F.resolve("quantize_mx", format, mx=True)
    if not isinstance(fmt, F.MXFormat):
        raise ValueError(f"softrep.quantize_mx: argument 'format' must be an MX format (one of "
                         f"{', '.join(map(repr, F.MX_FORMATS))} or a softrep.MXFormat), got {format!r}")
    _, elements, scales = _mx_apply("quantize_mx", x, fmt, rounding, subnormals, generator, dim)
    return elements.detach(), scales.detach()


# ---------------------------------------------------------------------------- float8 codes

# (mantissa bits, exponent bias, IEEE specials) of the 8-bit float dtypes
FLOAT8_LAYOUTS = {torch.float8_e4m3fn: (3, 7, 0), torch.float8_e5m2: (2, 15, 1)}


def float8_values(x):
    """The float32 values of a float8_e4m3fn or float8_e5m2 tensor, decoded from
    its bits by softrep's kernel (algorithms.lowp.decode_float8): exact, NaN
    canonical.  No gradient."""
    layout = FLOAT8_LAYOUTS[x.dtype]
    out = empty(x.shape, dtype=torch.float32, device=x.device)
    if out.numel() == 0:
        return out
    codes = x.detach().contiguous().view(torch.uint8).reshape(-1)
    backend.execute(cpu_lowp.decode_float8_codes, cuda_lowp.decode_float8_codes, [out.view(-1)], [codes],
                    *layout)
    return out


# ---------------------------------------------------------------------------- elementwise

ARG_NAMES = {"add": ("input", "other"), "sub": ("input", "other"), "mul": ("input", "other"),
              "div": ("input", "other"), "sqrt": ("input",), "fma": ("x", "y", "z")}


def _elementwise_forward(op, tensors, spec, rng):
    shape = broadcast_shape(op, ARG_NAMES[op], tensors)
    first = tensors[0]
    out = empty(shape, dtype=first.dtype, device=first.device)
    if out.numel() == 0:
        return out
    flat = [t.detach().expand(shape).contiguous().reshape(-1) for t in tensors]
    flat += [flat[0]] * (3 - len(flat))  # unused operands of binary ops and sqrt
    backend.execute(cpu_lowp.elementwise, cuda_lowp.elementwise, [out.view(-1)], flat,
                    F.OPS[op], spec, *rng)
    return out


def elementwise_forward(op, inputs, format, rounding="nearest", generator=None, *, saturate=False):
    """Check the arguments of op(*inputs) with its exact result rounded once to
    `format`, and return (tensors, forward): the operands as tensors, and a
    function of those tensors that computes the result (no autograd; the
    autograd of the exact op is added by `softrep.ops.elementwise.emulated`).

    op: "add", "sub", "mul", "div", "sqrt" or "fma"; inputs: tensors (one dtype,
    float32 or float64, broadcastable) or Python numbers.
    """
    if op not in F.OPS:
        raise ValueError(f"softrep.ops.elementwise.emulated: argument 'op' must be one of "
                         f"{', '.join(map(repr, F.OPS))}; got {op!r}")
    names = ARG_NAMES[op]
    if len(inputs) != len(names):
        raise TypeError(f"softrep.{op}: takes {len(names)} operands ({', '.join(names)}), got {len(inputs)}")
    tensors = tensor_operands(op, **dict(zip(names, inputs)))
    fmt = F.resolve(op, format)
    code = F.rounding_code(op, rounding)
    _check_bool(op, "saturate", saturate)
    spec = operation_spec(op, fmt, tensors[0].dtype, code, saturate)
    rng = _rng_args(op, code, generator)
    return tensors, lambda ts: _elementwise_forward(op, ts, spec, rng)


# ---------------------------------------------------------------------------- mm


def _accumulate_spec(fn, accumulate_format, dtype, code):
    if accumulate_format is None:
        fmt = F.FORMATS["float32" if dtype == torch.float32 else "float64"]
    else:
        fmt = F.resolve(fn, accumulate_format, "accumulate_format")
    return operation_spec(fn, fmt, dtype, code, arg="accumulate_format")


def _mm_forward(a, b, spec, rng):
    out = empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    if out.numel() == 0:
        return out
    backend.execute(cpu_lowp.mm, cuda_lowp.mm, [out], [a.detach().contiguous(), b.detach().contiguous()],
                    spec, *rng)
    return out


def _exact_mm(a, b):
    """softrep's mm order in the operands' own dtype, rounded to nearest."""
    code = F.NEAREST
    # through the Function, so that the backward is differentiable and torch.func can batch it
    return _EmulatedMM.apply(a, b, _accumulate_spec("mm", None, a.dtype, code), (0, 0, 0, 0))


class _EmulatedMM(backend.Function):
    """Backward of the exact product: grad_a = mm(g, b^T), grad_b = mm(a^T, g),
    both in softrep's mm order in the operands' dtype, rounded to nearest."""

    @staticmethod
    def forward(a, b, spec, rng):
        return _mm_forward(a, b, spec, rng)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])

    @staticmethod
    def vmap(info, in_dims, a, b, spec, rng):
        return batching.per_sample(lambda x, y, s, r: _EmulatedMM.apply(x, y, s, r), info, in_dims, a, b, spec, rng)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = _exact_mm(grad, b.t()) if ctx.needs_input_grad[0] else None
        gb = _exact_mm(a.t(), grad) if ctx.needs_input_grad[1] else None
        return ga, gb, None, None


def mm(input, mat2, *, input_format=None, accumulate_format=None, rounding="nearest", generator=None):
    """input @ mat2 (2-D) with emulated low-precision inputs and accumulation.

    Order (softrep's mm order): out[i, j]: acc = +0; for k = 0 .. K-1:
    acc = round(a[i, k] * b[k, j] + acc), each step an exact fma rounded once
    to `accumulate_format` (default: the operands' dtype) in `rounding`.
    With `input_format`, a and b are first rounded to it, to nearest; an MX
    format (e.g. "mxfp8_e4m3") takes its blocks of 32 along k (rows of a,
    columns of b).  Stochastic
    rounding takes one draw; step k of output element o uses word o*K + k.
    """
    fn = "mm"
    _check_tensor(fn, "input", input)
    _check_tensor(fn, "mat2", mat2)
    if input.dim() != 2 or mat2.dim() != 2:
        raise ValueError(f"softrep.mm: arguments 'input' and 'mat2' must be 2-D, got {input.dim()}-D and "
                         f"{mat2.dim()}-D")
    if input.shape[1] != mat2.shape[0]:
        raise ValueError(f"softrep.mm: argument 'mat2' has {mat2.shape[0]} rows but 'input' has "
                         f"{input.shape[1]} columns")
    if input.dtype != mat2.dtype:
        raise TypeError(f"softrep.mm: argument 'mat2' has dtype {mat2.dtype} but 'input' has {input.dtype}")
    if input.device != mat2.device:
        raise ValueError(f"softrep.mm: argument 'mat2' is on {mat2.device} but 'input' is on {input.device}")
    code = F.rounding_code(fn, rounding)
    spec = _accumulate_spec(fn, accumulate_format, input.dtype, code)
    if input_format is not None:
        fmt = F.resolve(fn, input_format, "input_format", mx=True)
        if isinstance(fmt, F.MXFormat):
            # blocks along k: rows of input, columns of mat2 (as MX matrix units take them)
            input = _mx_apply(fn, input, fmt, "nearest", True, None, 1)[0]
            mat2 = _mx_apply(fn, mat2, fmt, "nearest", True, None, 0)[0]
        else:
            in_spec = conversion_spec(fn, fmt, input.dtype, F.NEAREST, arg="input_format")
            input = _RoundTo.apply(input, in_spec, (0, 0, 0, 0))
            mat2 = _RoundTo.apply(mat2, in_spec, (0, 0, 0, 0))
    rng = _rng_args(fn, code, generator)
    return _EmulatedMM.apply(input, mat2, spec, rng)
