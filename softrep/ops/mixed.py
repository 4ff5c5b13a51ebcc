"""bfloat16 and float16 tensors, and torch.autocast, for every softrep op.

softrep's kernels compute in float32 and float64.  A bfloat16 or float16
tensor reaches them through two exact-or-once-rounded conversions:

* `widen(x)`: x in float32.  Exact: both formats are subsets of float32 (8 and
  11 significand bits, exponent ranges within float32's, subnormals included).
* `narrow(y, dtype)`: y rounded once to nearest-even in the format of `dtype`
  (softrep's `round_to`, the same bits on every backend), then converted; the
  conversion is exact because the value is already one of the format's, and
  a NaN becomes the format's canonical NaN (0x7FC0, 0x7E00) whatever the
  device's conversion would have written.

Both are autograd Functions whose backward is the other conversion: the
gradient of a low-precision input is rounded once to its dtype.

The rules (docs/lowprecision.md, docs/order.md "Low-precision tensors"):

* elementwise arithmetic and the math functions round once in the tensor's
  own format (softrep/ops/elementwise.py, softrep/ops/math.py);
* everything else -- products, convolutions, reductions, norms, softmax,
  losses, ... -- widens its low-precision tensors, runs its float32 order, and
  narrows the result once to the dtype of its first low-precision tensor
  (`float32_compute`).

Under torch.autocast (enabled for the tensors' device type) softrep applies one
casting policy on every device, torch's CUDA policy (`AUTOCAST_POLICY`):
"lower" ops round their float32 operands once to the autocast dtype and
return it; "float32" ops widen their low-precision operands and return
float32; the other ops keep their operands' dtypes, and operands of mixed
floating dtypes are widened (exactly) to the widest of them, as torch's type
promotion does.  torch's CPU policy differs for a few ops (softmax, layer_norm,
exp, ... stay in bfloat16 there); softrep follows the CUDA policy under
autocast("cpu") too, so the bits are the same on every device.
"""

import contextlib
import functools

import torch

from . import backend, lowp
from ..algorithms import widening
from ..primitives import formats

LOW_FORMATS = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
LOW_DTYPES = tuple(LOW_FORMATS)
# the format codes of the kernels that read and write 16-bit patterns (softrep.algorithms.widening)
FORMAT_CODES = {torch.bfloat16: widening.BFLOAT16, torch.float16: widening.FLOAT16}
# IEEE quiet NaN with an empty payload, the pattern softrep writes for every NaN
_CANONICAL_NAN_BITS = {torch.bfloat16: 0x7FC0, torch.float16: 0x7E00}

# torch's CUDA autocast policy (aten/src/ATen/autocast_mode.cpp) for the ops
# softrep has.  Ops absent from both sets keep their operands' dtype.
AUTOCAST_POLICY = {
    "lower": frozenset({"mm", "bmm", "matmul", "linear", "addmm", "conv1d", "conv2d",
                        "scaled_dot_product_attention"}),
    "float32": frozenset({"exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
                          "cosh", "tan", "pow", "softplus", "layer_norm", "group_norm", "rms_norm",
                          "nll_loss", "mse_loss", "binary_cross_entropy_with_logits", "cross_entropy",
                          "logsumexp", "softmax", "log_softmax", "sum"}),
}
# torch's "promote" ops among softrep's: the widest operand dtype, under autocast
AUTOCAST_PROMOTE = frozenset({"dot"})


def is_low(t):
    return isinstance(t, torch.Tensor) and t.dtype in LOW_FORMATS


def canonical_nan(dtype, device):
    return _canonical_nan(dtype).to(device)


@functools.lru_cache(maxsize=None)
def _canonical_nan(dtype):
    return torch.tensor(_CANONICAL_NAN_BITS[dtype], dtype=torch.int16).view(dtype)


def exact_cast(y, dtype):
    """y (float32 or float64, holding values of `dtype` or NaN) as a `dtype`
    tensor: exact, NaN canonical.  No autograd."""
    if dtype == torch.bfloat16 and y.dtype == torch.float32:
        # the top half of the float32 pattern: exact for a bfloat16 value, and
        # 0x7FC00000 -> 0x7FC0; torch's conversions write other NaN patterns
        # (0xFFFF from the CPU's vectorised path, 0x7FFF from CUDA's)
        return (y.view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)
    out = y.to(dtype)
    return torch.where(torch.isnan(y), canonical_nan(dtype, y.device), out)


def nearest_spec(dtype):
    """The kernels' spec of rounding a float32 to nearest-even in `dtype`'s format."""
    return lowp.conversion_spec("round_to", formats.FORMATS[LOW_FORMATS[dtype]], torch.float32, formats.NEAREST)


def round_cast(y, dtype):
    """y (float32/float64) rounded once to nearest-even in `dtype`'s format. No autograd."""
    if y.dtype == dtype:
        return y
    if dtype not in LOW_FORMATS:
        raise TypeError(f"softrep: cannot round {y.dtype} to {dtype}")  # only bfloat16/float16 are needed
    with torch.no_grad():
        return exact_cast(lowp.round_to(y.detach(), LOW_FORMATS[dtype]), dtype)


class _Widen(backend.Function):
    """x (bfloat16/float16) as float32, exactly; the gradient is rounded once to x's dtype."""

    @staticmethod
    def forward(x):
        return x.to(torch.float32)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dtype = inputs[0].dtype

    @staticmethod
    def backward(ctx, grad):
        return round_cast(grad.to(torch.float32) if grad.dtype in LOW_FORMATS else grad, ctx.dtype)

    @staticmethod
    def vmap(info, in_dims, x):
        return _Widen.apply(x), in_dims[0]


class _Narrow(backend.Function):
    """y (float32/float64) rounded once to `dtype`; the gradient is widened exactly."""

    @staticmethod
    def forward(y, dtype):
        return round_cast(y, dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dtype = inputs[0].dtype

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype), None

    @staticmethod
    def vmap(info, in_dims, y, dtype):
        return _Narrow.apply(y, dtype), in_dims[0]


def widen(x, dtype=torch.float32):
    """x as `dtype` (float32 or float64), exact, with autograd; other tensors unchanged."""
    if not is_low(x):
        return x
    y = _Widen.apply(x)
    return y if dtype == torch.float32 else y.to(dtype)  # float32 -> float64 is exact


def narrow(y, dtype):
    """y (float32/float64) rounded once to `dtype` (bfloat16/float16), with
    autograd; unchanged if `dtype` is y's."""
    if not isinstance(y, torch.Tensor) or y.dtype == dtype or not y.is_floating_point():
        return y
    if y.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"softrep: expected a float32 or float64 result to round to {dtype}, got {y.dtype}")
    return _Narrow.apply(y, dtype)


def python_number(value, dtype):
    """A Python real as a 0-d `dtype` tensor (CPU), rounded once from its double
    value (torch's own conversion goes through float32 first: two roundings)."""
    return _python_number(float(value), dtype).clone()


@functools.lru_cache(maxsize=4096)
def _python_number(value, dtype):
    # cached: hyperparameters and constants recur at every step, and each
    # rounding is a kernel launch
    x = torch.tensor(value, dtype=torch.float64)
    return exact_cast(lowp.round_to(x, LOW_FORMATS[dtype]), dtype)


# ---------------------------------------------------------------------------- autocast


def autocast_dtype(tensors):
    """torch's autocast dtype for these tensors' device type, or None when autocast is off."""
    device_type = "cpu"
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.is_cuda:
            device_type = "cuda"
            break
    if not torch.is_autocast_enabled(device_type):
        return None
    return torch.get_autocast_dtype(device_type)


def policy(name):
    for kind, names in AUTOCAST_POLICY.items():
        if name in names:
            return kind
    return "promote" if name in AUTOCAST_PROMOTE else "keep"


def _eligible(t):
    # torch's autocast casts floating tensors other than float64
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


def widest(dtypes):
    """torch's promotion among floating dtypes: float64 > float32 > {bfloat16, float16},
    and bfloat16 with float16 gives float32."""
    dtypes = set(dtypes)
    if torch.float64 in dtypes:
        return torch.float64
    if torch.float32 in dtypes or len(dtypes) > 1:
        return torch.float32
    return dtypes.pop()


def autocast_operands(name, tensors):
    """`tensors` cast as softrep's autocast policy says for op `name` (a list of
    the same length; non-tensors unchanged), and the dtype the op's result
    must have (None: the op decides)."""
    dtype = autocast_dtype(tensors)
    if dtype is None:
        return list(tensors), None
    kind = policy(name)
    if kind == "lower":
        return [cast_to(t, dtype) if _eligible(t) else t for t in tensors], dtype
    if kind == "float32":
        return [widen(t) if _eligible(t) else t for t in tensors], torch.float32
    floats = [t.dtype for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if len(set(floats)) > 1:
        target = widest(floats)
        return [cast_to(t, target) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                for t in tensors], None
    return list(tensors), None


def cast_to(t, dtype):
    """t as `dtype` with autograd: exact when widening, one rounding to nearest-even
    when narrowing to bfloat16/float16."""
    if t.dtype == dtype:
        return t
    if dtype in LOW_FORMATS:
        # bfloat16 <-> float16 through the exact float32 value; float64 rounded
        # directly (through float32 it would round twice)
        return narrow(widen(t) if is_low(t) else t, dtype)
    return widen(t, dtype) if is_low(t) else t.to(dtype)


# ---------------------------------------------------------------------------- float32 computation


def float32_compute(name, native_low=False):
    """Decorator of an op that computes in float32 and float64 only: its
    bfloat16/float16 tensor arguments (positional, keyword, or inside a
    list/tuple) are widened, the op runs its float32 order, and its floating
    results are rounded once to the dtype of the first low-precision argument.
    Under torch.autocast the casting policy of `name` applies first.
    native_low: the op takes bfloat16/float16 tensors itself (the products,
    whose CPU kernels widen while packing): only the autocast policy applies."""

    def decorate(op):
        @functools.wraps(op)
        def wrapper(*args, **kwargs):
            if _nothing_to_cast(args, kwargs):
                return op(*args, **kwargs)
            tensors, where = _collect(args, kwargs)
            if not tensors:
                return op(*args, **kwargs)
            cast, result_dtype = autocast_operands(name, tensors) if name is not None else (tensors, None)
            low = next((t.dtype for t in cast if is_low(t)), None)
            if (low is None or native_low) and result_dtype is None and all(a is b for a, b in zip(cast, tensors)):
                return op(*args, **kwargs)
            widened = cast if native_low else [widen(t) for t in cast]
            versions = [w._version for w in widened]
            args, kwargs = _replace(args, kwargs, where, widened)
            inplace = kwargs.get("inplace", False) is True
            requested = kwargs.get("dtype")
            if requested is not None:
                # a low-precision input summed (softmaxed, ...) in float32 and returned in `requested`
                kwargs["dtype"] = torch.float32 if requested in LOW_FORMATS else requested
                result_dtype = requested
            # The op runs its float32 order as written: autocast's policy is
            # applied once, here, not again to the ops it is made of.
            with torch.autocast("cpu", enabled=False), _cuda_autocast_off():
                out = op(*args, **kwargs)
            for original, w, v in zip(tensors, widened, versions):
                if w is not original and w._version != v:  # written in place (running stats, inplace=True)
                    with torch.no_grad():
                        original.copy_(round_cast(w, original.dtype) if is_low(original) else w)
            target = result_dtype if result_dtype is not None else low
            if target is None or target in (torch.float32, torch.float64):
                return out
            out = _map_floats(out, lambda y: narrow(y, target))
            return tensors[0] if inplace else out

        wrapper.softrep_mixed = name
        return wrapper

    return decorate


def _nothing_to_cast(args, kwargs):
    """A quick sufficient test that `float32_compute`'s wrapper has nothing to
    do: every argument a plain value, a list or tuple without tensors (a
    stride, a kernel size), or a CPU tensor that is not bfloat16 or float16,
    and CPU autocast off.  Then the op runs as called, as the full test would
    decide, without collecting the tensors."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            if a.dtype in LOW_FORMATS or not a.is_cpu:
                return False
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    return False
    return not torch.is_autocast_enabled("cpu")


def _cuda_autocast_off():
    if torch.cuda.is_available():
        return torch.autocast("cuda", enabled=False)
    return contextlib.nullcontext()


def _collect(args, kwargs):
    tensors, where = [], []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            tensors.append(a)
            where.append(("arg", i, None))
        elif isinstance(a, (list, tuple)):
            for j, b in enumerate(a):
                if isinstance(b, torch.Tensor):
                    tensors.append(b)
                    where.append(("arg", i, j))
    for k, a in kwargs.items():
        if isinstance(a, torch.Tensor) and k != "out":  # out= is a destination, not an operand
            tensors.append(a)
            where.append(("kw", k, None))
    return tensors, where


def _replace(args, kwargs, where, values):
    args = list(args)
    kwargs = dict(kwargs)
    for (kind, key, j), v in zip(where, values):
        if kind == "arg":
            if j is None:
                args[key] = v
            else:
                seq = list(args[key])
                seq[j] = v
                args[key] = type(args[key])(seq) if isinstance(args[key], tuple) else seq
        else:
            kwargs[key] = v
    return args, kwargs


def _map_floats(out, fn):
    if isinstance(out, torch.Tensor):
        return fn(out) if out.is_floating_point() else out
    if isinstance(out, tuple):
        return type(out)(*(_map_floats(o, fn) for o in out)) if hasattr(out, "_fields") \
            else tuple(_map_floats(o, fn) for o in out)
    if isinstance(out, list):
        return [_map_floats(o, fn) for o in out]
    return out


__all__ = ["LOW_FORMATS", "LOW_DTYPES", "AUTOCAST_POLICY", "is_low", "widen", "narrow", "cast_to", "exact_cast",
           "round_cast", "python_number", "autocast_dtype", "autocast_operands", "policy", "widest",
           "float32_compute"]
