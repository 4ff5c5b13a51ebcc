"""Matrix products on torch tensors: mm, bmm, matmul, dot, linear, addmm, with autograd.

Every output element is one fma chain in k order from +0, and an addend (the
bias of `linear`, the `input` of `addmm`) is added once afterwards with add_rn
(docs/order.md, "Matrix products").  All of them run one kernel, the batched
product `bmm_forward` (softrep/cpu/linalg.py, softrep/cuda/linalg.py).

Backward passes are softrep products:
  grad_a = g @ b^T and grad_b = a^T @ g, each in the same k order;
  a gradient summed over broadcast (or bias) dimensions uses softrep's
  documented sum (`softrep.ops.reduction.sum_to_shape`).
"""

import numbers

import torch

from . import backend, batching, batchtree
from . import elementwise as E
from ..cpu import linalg as cpu_linalg
from ..cuda import linalg as cuda_linalg
from .memory import empty
from .validate import FLOAT_DTYPES
from . import lowp
from .elementwise import emulated as emulated_elementwise
from .summation import sum as _sum_dims
from .summation import sum_to_shape


# --------------------------------------------------------------------------- checks


def check_operands(fn, **operands):
    """Operands must be float32/float64 tensors of one dtype on one device."""
    first_name, first = None, None
    for name, t in operands.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"softrep.{fn}: argument '{name}' must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in FLOAT_DTYPES:
            raise TypeError(
                f"softrep.{fn}: argument '{name}' has dtype {t.dtype}; expected torch.float32 or torch.float64")
        if first is None:
            first_name, first = name, t
            continue
        if t.dtype != first.dtype:
            raise TypeError(
                f"softrep.{fn}: argument '{name}' has dtype {t.dtype} but '{first_name}' has {first.dtype}; "
                "softrep does not promote dtypes, convert one of them explicitly")
        if t.device != first.device:
            raise ValueError(f"softrep.{fn}: argument '{name}' is on {t.device} but '{first_name}' is on {first.device}")


def _check_rank(fn, name, t, ranks):
    if t.dim() not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"softrep.{fn}: argument '{name}' must be {want}, got a {t.dim()}-D tensor of shape {tuple(t.shape)}")


def _check_inner(fn, name_a, ka, name_b, kb):
    if ka != kb:
        raise ValueError(
            f"softrep.{fn}: inner dimensions do not match: '{name_a}' has {ka} columns but '{name_b}' has {kb} rows")


def _check_scale(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a real number, got {type(value).__name__}")
    return float(value)


# --------------------------------------------------------------------------- kernel


def bmm_forward(a, b, addend=None):
    """(B, M, K) @ (B, K, N) [+ addend broadcastable to (B, M, N)] -> (B, M, N); no autograd."""
    nb, m, k = a.shape
    n = b.shape[2]
    out = empty((nb, m, n), dtype=a.dtype, device=a.device)
    if out.numel() == 0:
        return out
    inputs = [a.detach().contiguous(), b.detach().contiguous()]
    if addend is not None:
        inputs.append(addend.detach().expand(nb, m, n).contiguous())
    backend.execute(cpu_linalg.bmm, cuda_linalg.bmm, [out], inputs)
    return out


def _mm(a, b, addend=None):
    return bmm_forward(a.unsqueeze(0), b.unsqueeze(0), None if addend is None else addend.unsqueeze(0))[0]


# --------------------------------------------------------------------------- autograd


class _MM(torch.autograd.Function):
    """a (M, K) @ b (K, N) [+ addend broadcastable to (M, N)].

    vmap: every output element is its own fma chain, so the samples run as one
    batched product (a batched `a` alone folds into rows) with the bits of each
    sample alone."""

    @staticmethod
    def forward(a, b, addend):
        return _mm(a, b, addend)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b, addend = inputs
        ctx.save_for_backward(a, b)
        ctx.addend_shape = None if addend is None else addend.shape

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = _MM.apply(g, b.t(), None) if ctx.needs_input_grad[0] else None
        gb = _MM.apply(a.t(), g, None) if ctx.needs_input_grad[1] else None
        gc = sum_to_shape(g, ctx.addend_shape) if ctx.needs_input_grad[2] else None
        return ga, gb, gc

    @staticmethod
    def vmap(info, in_dims, a, b, addend):
        da, db, dc = in_dims
        size = info.batch_size
        a, b = batching.batched(a, da, size), batching.batched(b, db, size)
        m, k, n = a.shape[1], a.shape[2], b.shape[2]
        if db is None and dc is None:
            # rows are independent chains: fold the batch into the rows
            return _mm(a.reshape(size * m, k), b[0], addend).reshape(size, m, n), 0
        if dc is not None:
            c = addend.movedim(dc, 0)
            addend = c.reshape(size, *([1] * (3 - c.dim())), *c.shape[1:])
        return bmm_forward(a, b, addend), 0


class _BMM(torch.autograd.Function):
    """a (B, M, K) @ b (B, K, N)."""

    @staticmethod
    def forward(a, b):
        return bmm_forward(a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = _BMM.apply(g, b.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        gb = _BMM.apply(a.transpose(1, 2), g) if ctx.needs_input_grad[1] else None
        return ga, gb

    @staticmethod
    def vmap(info, in_dims, a, b):
        size = info.batch_size
        a, b = batching.batched(a, in_dims[0], size), batching.batched(b, in_dims[1], size)
        nb, m, k, n = a.shape[1], a.shape[2], a.shape[3], b.shape[3]
        return bmm_forward(a.reshape(size * nb, m, k), b.reshape(size * nb, k, n)).reshape(size, nb, m, n), 0


def _broadcast_bmm(a, b):
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = a.detach().expand(*batch, m, k).reshape(-1, m, k)
    b3 = b.detach().expand(*batch, k, n).reshape(-1, k, n)
    return bmm_forward(a3, b3).reshape(*batch, m, n)


class _BroadcastBMM(torch.autograd.Function):
    """a (..., M, K) @ b (..., K, N) with torch's batch broadcasting.

    The gradient of a broadcast operand is the product at the broadcast batch
    shape, then `sum_to_shape` over the broadcast batch dimensions.
    """

    @staticmethod
    def forward(a, b):
        return _broadcast_bmm(a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sum_to_shape(_BroadcastBMM.apply(g, b.transpose(-1, -2)), a.shape)
        if ctx.needs_input_grad[1]:
            gb = sum_to_shape(_BroadcastBMM.apply(a.transpose(-1, -2), g), b.shape)
        return ga, gb

    @staticmethod
    def vmap(info, in_dims, a, b):
        # the vmapped dim becomes one more (leading) batch dim of the broadcast
        return _broadcast_bmm(*batching.aligned([a, b], in_dims)), 0


def _linear_forward(x, weight, bias):
    w = weight if weight.dim() == 2 else weight.unsqueeze(0)
    rows = 1
    for size in x.shape[:-1]:
        rows *= size
    x2 = x.reshape(rows, x.shape[-1])
    out = _mm(x2, w.t(), bias)
    lead = x.shape[:-1]
    return out.reshape(*lead, w.shape[0]) if weight.dim() == 2 else out.reshape(lead)


class _Linear(torch.autograd.Function):
    """linear(x, weight, bias): forward as `_MM` on the rows of x (same bits).

    Backward (docs/order.md, "The batch order"): grad_x = g_rows @ W as in `mm`;
    dim 0 of x is the sample dim, and the weight's and the bias's gradients are
    per-sample partials -- for sample s, g_s^T @ x_s (one fma chain over its
    rows from +0) and the documented sum of its rows of g -- added along the
    batch tree (`batchtree.param_grad`).  A 1-D x is one sample of one row.
    vmap: one call per sample."""

    @staticmethod
    def forward(x, weight, bias):
        return _linear_forward(x, weight, bias)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias = inputs
        ctx.save_for_backward(x, weight)
        ctx.weight, ctx.bias = weight, bias

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        w = weight if weight.dim() == 2 else weight.unsqueeze(0)
        out_features, in_features = w.shape
        samples = x.shape[0] if x.dim() > 1 else 1
        rows = 1
        for size in x.shape[1:-1]:
            rows *= size
        x3 = x.reshape(samples, rows, in_features)
        g3 = g.reshape(samples, rows, out_features)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = _MM.apply(g3.reshape(-1, out_features), w, None).reshape(x.shape)
        if ctx.needs_input_grad[1]:
            partials = _BMM.apply(g3.transpose(1, 2), x3)  # (samples, out, in): a chain over each sample's rows
            gw = batchtree.param_grad("linear", "weight", ctx.weight, partials.reshape(samples, *weight.shape))
        if ctx.needs_input_grad[2]:
            bias = ctx.bias
            if bias.numel() == out_features:
                per = g3[:, 0, :] if g3.shape[1] == 1 else _sum_dims(g3, 1)
            else:  # a single broadcast bias: every row and output of the sample
                per = _sum_dims(g3, (1, 2))
            gb = batchtree.param_grad("linear", "bias", bias, per.reshape(samples, *bias.shape))
        return gx, gw, gb

    @staticmethod
    def vmap(info, in_dims, x, weight, bias):
        return batching.per_sample(_linear_forward, info, in_dims, x, weight, bias)


# --------------------------------------------------------------------------- low precision


def _emulated_linear(input, weight, bias=None, *, input_format=None, accumulate_format=None, rounding="nearest",
                     generator=None):
    """input @ weight^T (+ bias), like torch.nn.functional.linear, emulated as in `mm`.

    The bias is added after the product, rounded once to `accumulate_format`
    (out = round(acc + bias)); it is not rounded to `input_format`.
    """
    fn = "linear"
    check_operands(fn, input=input, weight=weight)
    if weight.dim() != 2 or input.dim() < 1 or input.shape[-1] != weight.shape[1]:
        raise ValueError(f"softrep.linear: argument 'weight' of shape {tuple(weight.shape)} does not match "
                         f"'input' of shape {tuple(input.shape)}")
    lead = input.shape[:-1]
    x2 = input.reshape(-1, input.shape[-1])
    out = lowp.mm(x2, weight.t(), input_format=input_format, accumulate_format=accumulate_format,
                  rounding=rounding, generator=generator)
    if bias is not None:
        check_operands(fn, input=input, bias=bias)
        acc = ("float32" if input.dtype == torch.float32 else "float64") if accumulate_format is None \
            else accumulate_format
        out = emulated_elementwise("add", [out, bias], acc, rounding, generator)
    return out.reshape(*lead, weight.shape[0])


# --------------------------------------------------------------------------- public ops


def _emulated(input_format, accumulate_format, rounding, generator):
    """True when the low-precision keywords ask for softrep.ops.lowp's emulation."""
    return input_format is not None or accumulate_format is not None or rounding != "nearest" \
        or generator is not None


def mm(input, mat2, *, input_format=None, accumulate_format=None, rounding="nearest", generator=None):
    """input (M, K) @ mat2 (K, N), each element one fma chain in k order (like torch.mm).

    With `input_format`, `accumulate_format` or a `rounding` other than
    "nearest", the same order runs emulated in low precision (softrep.ops.lowp.mm):
    each step an exact fma rounded once to the accumulate format.
    """
    if _emulated(input_format, accumulate_format, rounding, generator):
        return lowp.mm(input, mat2, input_format=input_format, accumulate_format=accumulate_format,
                       rounding=rounding, generator=generator)
    check_operands("mm", input=input, mat2=mat2)
    _check_rank("mm", "input", input, (2,))
    _check_rank("mm", "mat2", mat2, (2,))
    _check_inner("mm", "input", input.shape[1], "mat2", mat2.shape[0])
    return _MM.apply(input, mat2, None)


def bmm(input, mat2):
    """input (B, M, K) @ mat2 (B, K, N) per batch (like torch.bmm; no broadcasting)."""
    check_operands("bmm", input=input, mat2=mat2)
    _check_rank("bmm", "input", input, (3,))
    _check_rank("bmm", "mat2", mat2, (3,))
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(f"softrep.bmm: batch sizes differ: 'input' has {input.shape[0]}, 'mat2' has {mat2.shape[0]}")
    _check_inner("bmm", "input", input.shape[2], "mat2", mat2.shape[1])
    return _BMM.apply(input, mat2)


def dot(input, tensor):
    """Dot product of two 1-D tensors: +0, then fma in index order (like torch.dot)."""
    check_operands("dot", input=input, tensor=tensor)
    _check_rank("dot", "input", input, (1,))
    _check_rank("dot", "tensor", tensor, (1,))
    if input.shape[0] != tensor.shape[0]:
        raise ValueError(
            f"softrep.dot: 'input' has {input.shape[0]} elements but 'tensor' has {tensor.shape[0]}")
    return _MM.apply(input.unsqueeze(0), tensor.unsqueeze(1), None).reshape(())


def matmul(input, other):
    """Matrix product with torch.matmul's rules (1-D operands, batch broadcasting)."""
    check_operands("matmul", input=input, other=other)
    if input.dim() == 0 or other.dim() == 0:
        name = "input" if input.dim() == 0 else "other"
        raise ValueError(f"softrep.matmul: argument '{name}' must be at least 1-D, got a 0-D tensor")
    if input.dim() == 1 and other.dim() == 1:
        return dot(input, other)
    a = input.unsqueeze(0) if input.dim() == 1 else input
    b = other.unsqueeze(1) if other.dim() == 1 else other
    _check_inner("matmul", "input", a.shape[-1], "other", b.shape[-2])
    if b.dim() == 2:
        # (..., M, K) @ (K, N): fold the batch into the rows, as torch does, so
        # that the weight gradient is one chain over all rows.
        rows = 1
        for size in a.shape[:-1]:
            rows *= size
        out = _MM.apply(a.reshape(rows, a.shape[-1]), b, None).reshape(*a.shape[:-1], b.shape[-1])
    else:
        try:
            torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"softrep.matmul: batch dimensions do not broadcast: 'input' {tuple(input.shape)}, "
                f"'other' {tuple(other.shape)}") from None
        out = _BroadcastBMM.apply(a, b)
    if input.dim() == 1:
        out = out.squeeze(-2)
    if other.dim() == 1:
        out = out.squeeze(-1)
    return out


def linear(input, weight, bias=None, *, input_format=None, accumulate_format=None, rounding="nearest",
           generator=None):
    """input @ weight^T + bias (like torch.nn.functional.linear); bias added once with add_rn.

    The low-precision keywords route to the emulation of softrep.ops.lowp, as in `mm`;
    the bias is then added by one emulated add (`_emulated_linear`).

    The leading dimensions of `input` are folded into rows for the forward.
    Dim 0 is the sample dim: grad_weight and grad_bias are each sample's
    partial (g_s^T @ x_s, one fma chain over the sample's rows; the documented
    sum of its rows of g) added along the batch tree of docs/order.md, so the
    gradient does not depend on how the batch is split.
    """
    if _emulated(input_format, accumulate_format, rounding, generator):
        return _emulated_linear(input, weight, bias, input_format=input_format, accumulate_format=accumulate_format,
                           rounding=rounding, generator=generator)
    operands = {"input": input, "weight": weight}
    if bias is not None:
        operands["bias"] = bias
    check_operands("linear", **operands)
    if input.dim() == 0:
        raise ValueError("softrep.linear: argument 'input' must be at least 1-D, got a 0-D tensor")
    _check_rank("linear", "weight", weight, (1, 2))
    w = weight if weight.dim() == 2 else weight.unsqueeze(0)
    _check_inner("linear", "input", input.shape[-1], "weight", w.shape[1])
    if bias is not None:
        if bias.dim() > 1 or (bias.dim() == 1 and bias.shape[0] not in (1, w.shape[0])):
            raise ValueError(
                f"softrep.linear: argument 'bias' must have shape ({w.shape[0]},) or (), got {tuple(bias.shape)}")
    batch_slice = batchtree.current()
    if batch_slice is not None and input.dim() > 1:
        batch_slice.check_rows("linear", "input", input)
    return _Linear.apply(input, weight, bias)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), like torch.addmm (docs/order.md, "Matrix products").

    With chain the product's fma chain and alpha, beta rounded to the dtype:
    out = add_rn(mul_rn(alpha, chain), mul_rn(beta, input)), a factor 1 being
    no operation (so beta = alpha = 1 is add_rn(chain, input)).  As in torch,
    beta = 0 ignores `input` and alpha = 0 ignores the product, NaN and inf
    included; the ignored operands get no gradient.
    """
    check_operands("addmm", input=input, mat1=mat1, mat2=mat2)
    beta = _check_scale("addmm", "beta", beta)
    alpha = _check_scale("addmm", "alpha", alpha)
    _check_rank("addmm", "mat1", mat1, (2,))
    _check_rank("addmm", "mat2", mat2, (2,))
    _check_inner("addmm", "mat1", mat1.shape[1], "mat2", mat2.shape[0])
    shape = (mat1.shape[0], mat2.shape[1])
    try:
        if torch.broadcast_shapes(input.shape, shape) != torch.Size(shape):
            raise RuntimeError
    except RuntimeError:
        raise ValueError(
            f"softrep.addmm: argument 'input' of shape {tuple(input.shape)} does not broadcast to {shape}") from None
    if alpha == 0:
        if beta == 0:
            return torch.zeros(shape, dtype=input.dtype, device=input.device)
        # mul_rn(beta, input), broadcast to the output shape by the elementwise op
        return E.mul(input, torch.full(shape, beta, dtype=input.dtype, device=input.device))
    if beta == 0:
        out = _MM.apply(mat1, mat2, None)
    else:
        addend = input if beta == 1 else E.mul(input, beta)
        if alpha == 1:
            return _MM.apply(mat1, mat2, addend)  # the kernel's add_rn(chain, addend)
        out = _MM.apply(mat1, mat2, None)
    out = out if alpha == 1 else E.mul(out, alpha)
    return out if beta == 0 else E.add(out, addend)
