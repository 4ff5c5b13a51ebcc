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

import numpy as np
import torch

from . import backend, batching, batchtree, outputs
from . import elementwise as E
from ..cpu import linalg as cpu_linalg
from ..cpu import reduce as cpu_reduce
from ..cuda import linalg as cuda_linalg
from ..algorithms.products import tree_slots
from .memory import empty, index_table
from .validate import ALL_FLOAT_DTYPES, broadcast_shapes
from . import lowp
from . import mixed
from .elementwise import emulated as emulated_elementwise
from .summation import sum as _sum_dims
from .summation import sum_to_shape


# --------------------------------------------------------------------------- checks


def check_operands(fn, **operands):
    """Operands must be float32/float64/bfloat16/float16 tensors of one dtype on one device."""
    first_name, first = None, None
    for name, t in operands.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"softrep.{fn}: argument '{name}' must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in ALL_FLOAT_DTYPES:
            raise TypeError(
                f"softrep.{fn}: argument '{name}' has dtype {t.dtype}; expected torch.float32, torch.float64, "
                "torch.bfloat16 or torch.float16")
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


# A product of M*N*K fmas counts as M*N*K / FMAS_PER_ELEMENT element operations
# for `backend.execute`'s choice of one thread (the micro-kernel runs 16 float32
# lanes of fma per cycle or more; an elementwise op about one element).
FMAS_PER_ELEMENT = 16


def _operand(t, on_cpu):
    """t (B, R, C) as the product launcher takes it: contiguous, except that the
    CPU packers also read a transposed contiguous tensor (a weight's t(), the
    backward's transposes) where it lies, instead of a transposed copy."""
    t = t.detach()
    if on_cpu and not t.is_contiguous() and t.transpose(1, 2).is_contiguous():
        return t
    return t.contiguous()


def bmm_forward(a, b, addend=None, out=None):
    """(B, M, K) @ (B, K, N) [+ addend broadcastable to (B, M, N)] -> (B, M, N); no autograd.
    `out`: a C-contiguous (B, M, N) tensor to write the result to (it must
    share no memory with the operands).

    bfloat16/float16 operands: the float32 chains on the exactly widened
    operands (the addend added in float32), each output rounded once to the
    dtype (docs/order.md).  The CPU kernels widen while packing; the CUDA
    kernels get float32 copies."""
    nb, m, k = a.shape
    n = b.shape[2]
    light = _light_product(a, b, addend, out)
    if light is not None:
        return light
    if out is None:
        out = empty((nb, m, n), dtype=a.dtype, device=a.device)
    if out.numel() == 0:
        return out
    if mixed.is_low(a):
        return _bmm_low(out, a, b, addend)
    on_cpu = backend.on_cpu_launcher(a, b)
    inputs = [_operand(a, on_cpu), _operand(b, on_cpu)]
    if addend is not None:
        inputs.append(addend.detach().expand(nb, m, n).contiguous())
    work = nb * m * n * max(k, 1) // FMAS_PER_ELEMENT + sum(t.numel() for t in inputs)
    backend.execute(cpu_linalg.bmm, cuda_linalg.bmm, [out], inputs, work=work)
    return out


def streams_tree(*tensors):
    """Whether a weight gradient of these tensors may run `tree_product` (per-sample
    chains straight into the batch tree) instead of the batched product of
    per-sample partials and `batchtree.slice_nodes`: float32/float64 plain
    tensors, no graph to record (the nodes are not differentiable; with
    create_graph the materialised form keeps the gradient of the gradient) and
    no torch.func transform.  Both forms give the same bits."""
    if not backend.unrecorded():
        return False
    dtype = tensors[0].dtype
    return dtype in (torch.float32, torch.float64) and all(
        type(t) is torch.Tensor and t.dtype == dtype for t in tensors)


def _tree_product_light(dtype, out, at, b, first, counts, nodes, samples, groups, k_count, m, n, largest):
    """`tree_product`'s kernels through addresses (C-contiguous tensors of
    numpy dtype `dtype`, counts at most `largest`): samples of one row and
    one group by `outer_tree` (eight leaves at a time, any size), others by
    `serial_tree_product` (at most SERIAL_FMAS fmas, on the calling thread)."""
    if k_count == 1 and groups == 1:
        cpu_linalg.outer_tree(dtype, out.data_ptr(), at.data_ptr(), b.data_ptr(), first.data_ptr(),
                              counts.data_ptr(), nodes, samples, m, n, largest)
    else:
        cpu_linalg.serial_tree_product(dtype, out.data_ptr(), at.data_ptr(), b.data_ptr(), first.data_ptr(),
                                       counts.data_ptr(), nodes, samples, groups, k_count, m, n, tree_slots(largest))


def tree_product(at, b, ranges):
    """at (S, G, K, M), b (S, G, K, N) -> (len(ranges), G, M, N), no autograd:
    for each (first, count) in `ranges` (count >= 1) and each g, the batch tree
    (docs/order.md, "The batch order") over the samples s = first ..
    first + count - 1 of the chains at[s, g]^T @ b[s, g] (each over k = 0 ..
    K-1 from +0, the product chain): the bits of `batchtree.slice_nodes` on the
    materialised partials, computed with a stack of log2(count) + 1 partial
    nodes per output instead of the S partials."""
    samples, groups, k_count, m = at.shape
    n = b.shape[3]
    out = empty((len(ranges), groups, m, n), dtype=at.dtype, device=at.device)
    if out.numel() == 0:
        return out
    if k_count == 0:  # every chain is +0, and so is every sum of them
        return out.zero_()
    first = index_table([f for f, _ in ranges], at.device)
    counts = index_table([c for _, c in ranges], at.device)
    if (k_count == 1 and groups == 1) or samples * groups * k_count * m * n <= cpu_linalg.SERIAL_FMAS:
        dtype = backend.light_dtype((at, b, out), same_shape=False)
        if dtype is not None:
            _tree_product_light(dtype, out, at, b, first, counts, len(ranges), samples, groups, k_count, m, n,
                                max(c for _, c in ranges))
            return out
    dims = index_table([samples, groups, k_count, m, n], at.device)
    if backend.on_cpu_launcher(at, b):
        # the CPU launcher copies the operands once, into zero-padded blocks,
        # from any layout (the backward's transposed views included)
        inputs = [at.detach(), b.detach(), first, counts, dims]
    else:
        inputs = [at.detach().contiguous().reshape(-1), b.detach().contiguous().reshape(-1), first, counts, dims]
    work = sum(c for _, c in ranges) * groups * m * n * k_count // FMAS_PER_ELEMENT + inputs[0].numel() + \
        inputs[1].numel()
    backend.execute(cpu_linalg.tree_product, cuda_linalg.tree_product, [out.reshape(-1)], inputs, work=work)
    return out


def _cpu_bmm_narrow(spec, fmt):
    def run(out, a, b, *addend):
        u16 = np.uint16
        cpu_linalg.bmm_narrow(out.view(u16), a.view(u16), b.view(u16), spec, fmt, *addend)
    return run


def _bmm_low(out, a, b, addend):
    dtype = a.dtype
    addend32 = None if addend is None else addend.detach().to(torch.float32).expand(out.shape).contiguous()
    if backend.select(a, b) != "cpu":
        product = bmm_forward(a.detach().to(torch.float32), b.detach().to(torch.float32), addend32)
        return mixed.round_cast(product, dtype)
    inputs = [a.detach().contiguous().view(torch.int16), b.detach().contiguous().view(torch.int16)]
    if addend32 is not None:
        inputs.append(addend32)
    run = _cpu_bmm_narrow(mixed.nearest_spec(dtype), mixed.FORMAT_CODES[dtype])
    backend.execute(run, None, [out.view(torch.int16)], inputs)
    return out


def _light_product(a, b, addend=None, out=None):
    """a (M, K) @ b (K, N) [+ addend], or batched (B, M, K) @ (B, K, N), by
    the light path's serial kernel, or None where it does not apply: plain CPU
    tensors with nothing to record (`backend.light_dtype`), each operand
    C-contiguous or the transpose of a C-contiguous tensor, an addend of one
    row (linear's bias) or of the output's shape, at most SERIAL_FMAS fmas.
    `out`: a C-contiguous tensor of the output's shape to write to."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    nb = a.shape[0] if a.dim() == 3 else 1
    if nb * m * n * k > cpu_linalg.SERIAL_FMAS or b.dim() != a.dim() or (nb > 1 and b.shape[0] != nb):
        return None
    dtype = backend.light_dtype((a, b), same_shape=False, transposed=True)
    if dtype is None:
        return None
    kind, address = cpu_linalg.NO_ADDEND, 0
    if addend is not None:
        if (addend.dim() == 0 or not addend.is_contiguous()
                or backend.light_dtype((addend, a), same_shape=False, transposed=True) is None):
            return None
        if addend.numel() == n and addend.shape[-1] == n:
            kind = cpu_linalg.ROW_ADDEND
        elif addend.numel() == nb * m * n and addend.shape[-2:] == (m, n):
            kind = cpu_linalg.FULL_ADDEND
        else:
            return None
        address = addend.data_ptr()
    if out is None:
        result = backend.new_empty(a, (m, n) if a.dim() == 2 else (nb, m, n))
    elif out.dtype == a.dtype and out.is_cpu and out.is_contiguous():
        result = out
    else:
        return None
    if result.numel():  # the same chains on the calling thread
        cpu_linalg.serial_product(dtype, result.data_ptr(), a.data_ptr(), b.data_ptr(), address, nb, m, k, n,
                                  _layout(a), _layout(b), kind)
    return result


def _layout(t):
    return cpu_linalg.ROWS if t.is_contiguous() else cpu_linalg.COLUMNS


def _mm(a, b, addend=None):
    light = _light_product(a, b, addend)  # inside _MM's forward grad mode is off
    if light is not None:
        return light
    return bmm_forward(a.unsqueeze(0), b.unsqueeze(0), None if addend is None else addend.unsqueeze(0))[0]


# --------------------------------------------------------------------------- autograd


class _MM(backend.Function):
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
        ga = backend.call(_MM, g, b.t(), None) if ctx.needs_input_grad[0] else None
        gb = backend.call(_MM, a.t(), g, None) if ctx.needs_input_grad[1] else None
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


_TRANSPOSED_LAYOUT = {cpu_linalg.ROWS: cpu_linalg.COLUMNS, cpu_linalg.COLUMNS: cpu_linalg.ROWS}


def _product_grads_light(a, b, g, needs):
    """(g @ b^T, a^T @ g) of a product a (..., M, K) @ b (..., K, N) with the
    same batch dims (None where not needed), by `serial_product` on
    addresses, or None where the light path does not take both products
    (`_light_product`'s conditions; an operand neither C-contiguous nor the
    transpose of a C-contiguous tensor is copied first).  The kernel
    `bmm_forward` runs for these sizes, with the transposes read in place:
    the same chains, the same bits, without the two products' separate calls
    and checks."""
    batch = a.shape[:-2]
    if b.shape[:-2] != batch or g.shape[:-2] != batch or not backend.unrecorded():
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    nb = 1
    for size in batch:
        nb *= size
    if not 0 < nb * m * n * k <= cpu_linalg.SERIAL_FMAS:
        return None
    # an operand neither C-contiguous nor the transpose of a C-contiguous
    # tensor (attention's heads, split from the projections) is copied, as
    # `_broadcast_bmm`'s reshape copies it: values only moved
    a, b, g = (t if t.is_contiguous() or t.transpose(-1, -2).is_contiguous() else t.contiguous() for t in (a, b, g))
    dtype = backend.light_dtype((a, b, g), same_shape=False, transposed=True)
    if dtype is None:
        return None
    ga = gb = None
    if needs[0]:  # g (M, N) @ b^T (N, K) per batch
        ga = backend.new_empty(g, (*batch, m, k))
        cpu_linalg.serial_product(dtype, ga.data_ptr(), g.data_ptr(), b.data_ptr(), 0, nb, m, n, k, _layout(g),
                                  _TRANSPOSED_LAYOUT[_layout(b)])
    if needs[1]:  # a^T (K, M) @ g (M, N) per batch
        gb = backend.new_empty(g, (*batch, k, n))
        cpu_linalg.serial_product(dtype, gb.data_ptr(), a.data_ptr(), g.data_ptr(), 0, nb, k, m, n,
                                  _TRANSPOSED_LAYOUT[_layout(a)], _layout(g))
    return ga, gb


class _BMM(backend.Function):
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
        light = _product_grads_light(a, b, g, ctx.needs_input_grad)
        if light is not None:
            return light
        ga = backend.call(_BMM, g, b.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        gb = backend.call(_BMM, a.transpose(1, 2), g) if ctx.needs_input_grad[1] else None
        return ga, gb

    @staticmethod
    def vmap(info, in_dims, a, b):
        size = info.batch_size
        a, b = batching.batched(a, in_dims[0], size), batching.batched(b, in_dims[1], size)
        nb, m, k, n = a.shape[1], a.shape[2], a.shape[3], b.shape[3]
        return bmm_forward(a.reshape(size * nb, m, k), b.reshape(size * nb, k, n)).reshape(size, nb, m, n), 0


def _broadcast_bmm(a, b):
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = a.detach().expand(*batch, m, k).reshape(-1, m, k)
    b3 = b.detach().expand(*batch, k, n).reshape(-1, k, n)
    return bmm_forward(a3, b3).reshape(*batch, m, n)


class _BroadcastBMM(backend.Function):
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
        light = _product_grads_light(a, b, g, ctx.needs_input_grad)
        if light is not None:
            return light
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sum_to_shape(backend.call(_BroadcastBMM, g, b.transpose(-1, -2)), a.shape)
        if ctx.needs_input_grad[1]:
            gb = sum_to_shape(backend.call(_BroadcastBMM, a.transpose(-1, -2), g), b.shape)
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


def _linear_grads_light(g3, x3, w, bias, needs):
    """`_Linear.backward`'s gradients (grad_x as (S*R, in), grad_weight as
    (out, in), grad_bias as the bias's shape, None where not needed) by the
    serial kernels the separate paths take at these sizes, through addresses,
    or None where they do not all apply: a whole batch (no BatchSlice), the
    weight's chains streamed into the tree (`streams_tree`: nothing to
    record), plain CPU tensors of one float dtype (copied to C-contiguous
    where they are not), at most SERIAL_FMAS fmas per product, and a bias
    gradient (if needed) of one value per output feature.  The same kernels
    as `_mm`'s light product, `tree_product` and
    `batchtree.param_grad_of_row_sums`, so the same bits, with one check
    instead of one per path."""
    samples, rows, out_features = g3.shape
    in_features = x3.shape[2]
    fmas = samples * rows * out_features * in_features
    if (not streams_tree(g3, x3) or batchtree.current() is not None or not 0 < fmas <= cpu_linalg.SERIAL_FMAS
            or (needs[2] and bias.numel() != out_features)):
        return None
    # operands in another layout (a gradient coming back through attention's
    # head split) are copied: values only moved
    g3, x3, w = g3.contiguous(), x3.contiguous(), w.contiguous()
    dtype = backend.light_dtype((g3, x3, w), same_shape=False)
    if dtype is None:
        return None
    gx = gw = gb = None
    if needs[0]:  # g_rows @ W
        gx = backend.new_empty(g3, (samples * rows, in_features))
        cpu_linalg.serial_product(dtype, gx.data_ptr(), g3.data_ptr(), w.data_ptr(), 0, 1, samples * rows,
                                  out_features, in_features)
    if needs[1]:  # the batch tree of the samples' g_s^T @ x_s
        gw = backend.new_empty(w, (out_features, in_features))
        _tree_product_light(dtype, gw, g3, x3, index_table([0]), index_table([samples]), 1, samples, 1, rows,
                            out_features, in_features, samples)
    if needs[2]:  # the batch tree of the samples' sums of their rows of g
        gb = backend.new_empty(g3, tuple(bias.shape))
        cpu_reduce.serial_batch_row_sums(dtype, gb.data_ptr(), g3.data_ptr(), samples, rows, out_features)
    return gx, gw, gb


class _Linear(backend.Function):
    """linear(x, weight, bias): forward as `_MM` on the rows of x (same bits).

    Backward (docs/order.md, "The batch order"): grad_x = g_rows @ W as in `mm`;
    dim 0 of x is the sample dim, and the weight's and the bias's gradients are
    per-sample partials -- for sample s, g_s^T @ x_s (one fma chain over its
    rows from +0) and the documented sum of its rows of g -- added along the
    batch tree (`batchtree.param_grad`).  The weight's chains go straight into
    the tree (`tree_product`, no partials stored) unless the gradient's own
    graph is recorded (create_graph).  A 1-D x is one sample of one row.
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
        light = _linear_grads_light(g3, x3, w, ctx.bias, ctx.needs_input_grad)
        if light is not None:
            gx, gw, gb = light
            return (None if gx is None else gx.view(x.shape)), (None if gw is None else gw.view(weight.shape)), gb
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = backend.call(_MM, g3.reshape(samples * rows, out_features), w, None).reshape(x.shape)
        if ctx.needs_input_grad[1]:
            if streams_tree(g3, x3):
                gw = batchtree.param_grad_of_nodes(
                    "linear", "weight", ctx.weight, samples,
                    lambda ranges: tree_product(g3.unsqueeze(1), x3.unsqueeze(1), ranges)
                    .reshape(len(ranges), *weight.shape))
            else:
                partials = _BMM.apply(g3.transpose(1, 2), x3)  # (samples, out, in): a chain over each sample's rows
                gw = batchtree.param_grad("linear", "weight", ctx.weight, partials.reshape(samples, *weight.shape))
        if ctx.needs_input_grad[2]:
            bias = ctx.bias
            if bias.numel() == out_features:  # each sample's rows of g
                gb = batchtree.param_grad_of_row_sums("linear", "bias", bias,
                                                      g3.reshape(samples, rows, *bias.shape))
            else:  # a single broadcast bias: every row and output of the sample
                gb = batchtree.param_grad("linear", "bias", bias, _sum_dims(g3, (1, 2)).reshape(samples, *bias.shape))
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


@mixed.float32_compute("mm", native_low=True)
def mm(input, mat2, *, input_format=None, accumulate_format=None, rounding="nearest", generator=None,
       scale_a=None, scale_b=None, out_dtype=None, out=None):
    """input (M, K) @ mat2 (K, N), each element one fma chain in k order (like torch.mm).

    With `input_format`, `accumulate_format` or a `rounding` other than
    "nearest", the same order runs emulated in low precision (softrep.ops.lowp.mm):
    each step an exact fma rounded once to the accumulate format.

    float8_e4m3fn / float8_e5m2 operands (or `scale_a`, `scale_b`, `out_dtype`)
    make it the scaled float8 product `scaled_mm`.

    `out`: torch's out= semantics (softrep.ops.outputs): the result is written
    into `out`, which is returned; not differentiable.
    """
    result = None
    if _float8_call(input, mat2, scale_a, scale_b, out_dtype):
        result = scaled_mm(input, mat2, 1.0 if scale_a is None else scale_a, 1.0 if scale_b is None else scale_b,
                           out_dtype=out_dtype)
    elif _emulated(input_format, accumulate_format, rounding, generator):
        result = lowp.mm(input, mat2, input_format=input_format, accumulate_format=accumulate_format,
                         rounding=rounding, generator=generator)
    if result is not None:
        if out is None:
            return result
        outputs.prepare("mm", out, result.shape, result.dtype, result.device, (input, mat2))
        return out.copy_(result)
    check_operands("mm", input=input, mat2=mat2)
    _check_rank("mm", "input", input, (2,))
    _check_rank("mm", "mat2", mat2, (2,))
    _check_inner("mm", "input", input.shape[1], "mat2", mat2.shape[0])
    if out is not None:
        return _mm_into(input, mat2, out)
    light = _light_product(input, mat2)
    if light is not None:
        return light
    return backend.call(_MM, input, mat2, None)


def _mm_into(a, b, out):
    outputs.prepare("mm", out, (a.shape[0], b.shape[1]), a.dtype, a.device, (a, b))
    if outputs.writable(out, (a, b), same_elements_ok=False):
        bmm_forward(a.unsqueeze(0), b.unsqueeze(0), out=out.unsqueeze(0))
    else:
        out.copy_(_mm(a, b))
    return out


@mixed.float32_compute("bmm", native_low=True)
def bmm(input, mat2):
    """input (B, M, K) @ mat2 (B, K, N) per batch (like torch.bmm; no broadcasting)."""
    check_operands("bmm", input=input, mat2=mat2)
    _check_rank("bmm", "input", input, (3,))
    _check_rank("bmm", "mat2", mat2, (3,))
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(f"softrep.bmm: batch sizes differ: 'input' has {input.shape[0]}, 'mat2' has {mat2.shape[0]}")
    _check_inner("bmm", "input", input.shape[2], "mat2", mat2.shape[1])
    return backend.call(_BMM, input, mat2)


@mixed.float32_compute("dot", native_low=True)
def dot(input, tensor):
    """Dot product of two 1-D tensors: +0, then fma in index order (like torch.dot)."""
    check_operands("dot", input=input, tensor=tensor)
    _check_rank("dot", "input", input, (1,))
    _check_rank("dot", "tensor", tensor, (1,))
    if input.shape[0] != tensor.shape[0]:
        raise ValueError(
            f"softrep.dot: 'input' has {input.shape[0]} elements but 'tensor' has {tensor.shape[0]}")
    return _MM.apply(input.unsqueeze(0), tensor.unsqueeze(1), None).reshape(())


@mixed.float32_compute("matmul", native_low=True)
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
        out = backend.call(_MM, a.reshape(rows, a.shape[-1]), b, None).reshape(*a.shape[:-1], b.shape[-1])
    else:
        try:
            broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"softrep.matmul: batch dimensions do not broadcast: 'input' {tuple(input.shape)}, "
                f"'other' {tuple(other.shape)}") from None
        out = backend.call(_BroadcastBMM, a, b)
    if input.dim() == 1:
        out = out.squeeze(-2)
    if other.dim() == 1:
        out = out.squeeze(-1)
    return out


@mixed.float32_compute("linear", native_low=True)
def linear(input, weight, bias=None, *, input_format=None, accumulate_format=None, rounding="nearest",
           generator=None, scale_a=None, scale_b=None, out_dtype=None):
    """input @ weight^T + bias (like torch.nn.functional.linear); bias added once with add_rn.

    The low-precision keywords route to the emulation of softrep.ops.lowp, as in `mm`;
    the bias is then added by one emulated add (`_emulated_linear`).  float8
    operands (or the scale keywords) route to `scaled_linear`.

    The leading dimensions of `input` are folded into rows for the forward.
    Dim 0 is the sample dim: grad_weight and grad_bias are each sample's
    partial (g_s^T @ x_s, one fma chain over the sample's rows; the documented
    sum of its rows of g) added along the batch tree of docs/order.md, so the
    gradient does not depend on how the batch is split.
    """
    if _float8_call(input, weight, scale_a, scale_b, out_dtype):
        return scaled_linear(input, weight, bias, 1.0 if scale_a is None else scale_a,
                             1.0 if scale_b is None else scale_b, out_dtype=out_dtype)
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
    return backend.call(_Linear, input, weight, bias)


@mixed.float32_compute("addmm", native_low=True)
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
        if broadcast_shapes(input.shape, shape) != torch.Size(shape):
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


# --------------------------------------------------------------------------- float8 products

FLOAT8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
# output dtypes of the scaled products, and the softrep format each is rounded to
SCALED_OUT_FORMATS = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16",
                      torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2"}


def _float8_call(a, b, scale_a, scale_b, out_dtype):
    """True when mm/linear are asked for the scaled float8 product."""
    return (isinstance(a, torch.Tensor) and a.dtype in FLOAT8_DTYPES) \
        or (isinstance(b, torch.Tensor) and b.dtype in FLOAT8_DTYPES) \
        or scale_a is not None or scale_b is not None or out_dtype is not None


def _check_float8(fn, **operands):
    first_name, first = None, None
    for name, t in operands.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"softrep.{fn}: argument '{name}' must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in FLOAT8_DTYPES:
            raise TypeError(f"softrep.{fn}: argument '{name}' has dtype {t.dtype}; the scaled product takes "
                            "torch.float8_e4m3fn or torch.float8_e5m2 operands (convert with softrep.round_to(x, "
                            "'float8_e4m3fn', saturate=True).to(torch.float8_e4m3fn) after scaling)")
        if first is None:
            first_name, first = name, t
        elif t.device != first.device:
            raise ValueError(f"softrep.{fn}: argument '{name}' is on {t.device} but '{first_name}' is on {first.device}")


def _scale_tensor(fn, name, scale, device):
    """A per-tensor scale as a 0-d float32 tensor: a Python real (rounded to
    float32, to nearest) or a float32 tensor with one element."""
    if isinstance(scale, torch.Tensor):
        if scale.dtype != torch.float32 or scale.numel() != 1:
            raise TypeError(f"softrep.{fn}: argument '{name}' must be a float32 tensor with one element (a "
                            f"per-tensor scale), got dtype {scale.dtype} and shape {tuple(scale.shape)}")
        if scale.device != device:
            raise ValueError(f"softrep.{fn}: argument '{name}' is on {scale.device} but the operands are on {device}")
        return scale.reshape(())
    return torch.tensor(_check_scale(fn, name, scale), dtype=torch.float32, device=device)


def _bias_values(fn, bias, n, device):
    """The bias as float32 values (every bias dtype widens exactly)."""
    if not isinstance(bias, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'bias' must be a torch.Tensor, got {type(bias).__name__}")
    if bias.dim() > 1 or (bias.dim() == 1 and bias.shape[0] not in (1, n)):
        raise ValueError(f"softrep.{fn}: argument 'bias' must have shape ({n},) or (), got {tuple(bias.shape)}")
    if bias.device != device:
        raise ValueError(f"softrep.{fn}: argument 'bias' is on {bias.device} but the operands are on {device}")
    if bias.dtype in FLOAT8_DTYPES:
        return lowp.float8_values(bias)
    if bias.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise TypeError(f"softrep.{fn}: argument 'bias' has dtype {bias.dtype}; expected float32, bfloat16, "
                        "float16 or a float8 dtype")
    return bias.detach().to(torch.float32)  # exact: every bfloat16/float16 value is a float32


def _scaled_product(fn, a2, b2, scale_a, scale_b, bias, out_dtype):
    """(a2 (M, K) @ b2 (K, N) in float8) * scale_a * scale_b [+ bias], rounded once to out_dtype."""
    device = a2.device
    if out_dtype is None:
        out_dtype = a2.dtype
    if out_dtype not in SCALED_OUT_FORMATS:
        raise TypeError(f"softrep.{fn}: argument 'out_dtype' must be one of "
                        f"{', '.join(map(str, SCALED_OUT_FORMATS))}, got {out_dtype}")
    sa = _scale_tensor(fn, "scale_a", scale_a, device)
    sb = _scale_tensor(fn, "scale_b", scale_b, device)
    # 1. the products are exact in float32 (at most 4 x 4 significant bits, exponents
    #    within [-34, 32]), so the float32 chain fma_rn(a, b, acc) in k order of
    #    every other softrep product is the chain of the float8 product
    acc = _MM.apply(lowp.float8_values(a2), lowp.float8_values(b2), None)
    # 2. the per-tensor scales combine in float32: scale = mul_rn(scale_a, scale_b)
    #    (exact when either is a power of two)
    scale = E.mul(sa, sb)
    # 3. scale and bias are applied to the accumulator with one rounding to the
    #    output format: out = round(acc * scale [+ bias]), the exact value rounded once
    fmt = SCALED_OUT_FORMATS[out_dtype]
    if bias is None:
        out = emulated_elementwise("mul", [acc, scale], fmt)
    else:
        out = emulated_elementwise("fma", [acc, scale, _bias_values(fn, bias, b2.shape[1], device)], fmt)
    return out.to(out_dtype)  # exact: out holds a value of out_dtype's format


def scaled_mm(input, mat2, scale_a=1.0, scale_b=1.0, *, bias=None, out_dtype=None):
    """The scaled float8 matrix product of fp8 training recipes, like torch._scaled_mm.

    input (M, K) and mat2 (K, N): torch.float8_e4m3fn or torch.float8_e5m2 (they
    may differ); scale_a, scale_b: per-tensor scales (Python reals or float32
    tensors of one element) that dequantize input and mat2; bias (N,) or ():
    float32, bfloat16, float16 or float8; out_dtype: float32, bfloat16,
    float16, float8_e4m3fn or float8_e5m2 (default: input's dtype, as torch).

    Order (docs/order.md, "Scaled float8 products"): every element is
    acc = +0, then acc = fma_rn(a[i, k], b[k, j], acc) for k = 0 .. K-1 in
    float32 (each product exact, each step one float32 rounding), then
    scale = mul_rn(scale_a, scale_b) in float32 and
    out = round_out(acc * scale [+ bias]), one rounding of the exact value to
    out_dtype, to nearest (float8_e4m3fn overflows to NaN, float8_e5m2 to inf).
    NaN results are canonical.
    """
    fn = "scaled_mm"
    _check_float8(fn, input=input, mat2=mat2)
    _check_rank(fn, "input", input, (2,))
    _check_rank(fn, "mat2", mat2, (2,))
    _check_inner(fn, "input", input.shape[1], "mat2", mat2.shape[0])
    return _scaled_product(fn, input, mat2, scale_a, scale_b, bias, out_dtype)


def scaled_linear(input, weight, bias=None, scale_a=1.0, scale_b=1.0, *, out_dtype=None):
    """input @ weight^T [+ bias] as the scaled float8 product `scaled_mm`
    (input (..., K) and weight (N, K) float8; scale_a dequantizes input,
    scale_b weight); the leading dimensions of input are folded into rows."""
    fn = "linear"
    _check_float8(fn, input=input, weight=weight)
    if input.dim() == 0:
        raise ValueError("softrep.linear: argument 'input' must be at least 1-D, got a 0-D tensor")
    _check_rank(fn, "weight", weight, (2,))
    _check_inner(fn, "input", input.shape[-1], "weight", weight.shape[1])
    rows = 1
    for size in input.shape[:-1]:
        rows *= size
    out = _scaled_product(fn, input.reshape(rows, input.shape[-1]), weight.t(), scale_a, scale_b, bias, out_dtype)
    return out.reshape(*input.shape[:-1], weight.shape[0])
