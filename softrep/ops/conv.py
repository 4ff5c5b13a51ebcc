"""conv1d and conv2d with autograd, as products in a fixed order (docs/order.md, "Convolution").

Forward, per output element (n, co, oh, ow), with g the group of co:
    acc = +0
    for c in the input channels of group g, for kh, for kw (row-major):
        acc = fma_rn(xpad[n, c, oh*sh + kh*dh, ow*sw + kw*dw], w[co, c, kh, kw], acc)
    out = add_rn(acc, bias[co])     (when there is a bias)
where xpad is the input zero-padded: a padding position contributes
fma(0, w, acc) like any other term.

This is the matrix product W_g (Cout/G, Cin/G*KH*KW) @ cols_g (Cin/G*KH*KW, N*OH*OW)
in the k order of `softrep.ops.products` (cols = im2col of xpad), computed as an
implicit GEMM: the CPU writes xpad straight into the product kernel's packed
panels (softrep/cpu/conv.py), the CUDA kernel reads xpad directly
(softrep/cuda/conv.py).  grad_weight is `products.tree_product` of the output
gradient and the im2col of xpad, which runs each sample's chain straight into
the batch tree (the batched product of the per-sample partials when the
gradient's own graph is recorded: same bits); on the CPU its launcher packs
the transposed im2col from xpad itself, elsewhere it is an explicit im2col
(torch `unfold`, which only moves values).

Backward (all products of `softrep.ops.products`, same k order):
* grad_input: the stride-1 convolution, dilation (dh, dw), of gz -- the output
  gradient with (stride - 1) zeros inserted between elements, and
  (KH-1)*dh / (KW-1)*dw zeros around -- with the weight flipped in kh, kw and
  transposed within each group, then cropped to the unpadded input.  Per input
  element: acc = +0, then fma over (co in the group, kh = KH-1 .. 0,
  kw = KW-1 .. 0) with the zero-inserted gradient (zeros are terms too).
* grad_weight[co, c, kh, kw]: per sample n, acc = +0, then fma(g[n, co, oh, ow],
  xpad[n, c, oh*sh + kh*dh, ow*sw + kw*dw], acc) for (oh, ow) in row-major
  order; the samples' partials are added along the batch tree of
  docs/order.md ("The batch order"), so no batch split changes a bit.
* grad_bias[co]: per sample, softrep.sum of g[n, co, :, :] (the documented sum
  order over (oh, ow)), then the batch tree over n.
"""

import math
import numbers

import torch
import torch.nn.functional as F

from . import backend, batching, batchtree, mixed
from ..cpu import conv as cpu_conv
from ..cuda import conv as cuda_conv
from .memory import empty, index_table
from .products import bmm, check_operands, streams_tree, tree_product
from .validate import memoized_check


def _pair(fn, name, value, dims, minimum):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (int(value),) * dims
    if (not isinstance(value, (tuple, list)) or len(value) != dims
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)):
        raise ValueError(f"softrep.{fn}: argument '{name}' must be an int or a tuple of {dims} ints, got {value!r}")
    if any(v < minimum for v in value):
        raise ValueError(f"softrep.{fn}: argument '{name}' must be >= {minimum}, got {tuple(value)}")
    return tuple(int(v) for v in value)


def _padding(fn, padding, dims, kernel, dilation, stride):
    """((before, after) per spatial dim) for torch's padding argument."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * dims
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"softrep.{fn}: padding='same' needs stride 1, got stride={stride}")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))  # torch puts the extra zero after
            return tuple(pads)
        raise ValueError(f"softrep.{fn}: argument 'padding' must be 'same', 'valid', an int or a tuple; got {padding!r}")
    return tuple((p, p) for p in _pair(fn, "padding", padding, dims, 0))


def _out_size(size, k, stride, dilation):
    return (size - dilation * (k - 1) - 1) // stride + 1


def _conv2d_core(xpad, w, bias, stride, dilation, groups):
    """Forward of an unpadded 2-D convolution (no autograd): the implicit GEMM
    W_g @ im2col(xpad) per group (softrep/cpu/conv.py, softrep/cuda/conv.py),
    which the kernels store straight into a C-contiguous (N, Cout, OH, OW) output."""
    n, c_in, hp, wp = xpad.shape
    c_out, c_g, kh, kw = w.shape
    oh, ow = _out_size(hp, kh, stride[0], dilation[0]), _out_size(wp, kw, stride[1], dilation[1])
    co_g = c_out // groups
    out = xpad.new_empty((n, c_out, oh * ow))
    if out.numel():
        w_g = w.detach().reshape(groups, co_g, c_g * kh * kw).contiguous()
        bias_rows = (bias.detach().reshape(groups, co_g) if bias is not None
                     else xpad.new_zeros((groups, co_g))).contiguous()  # without a bias: only its shape is read
        backend.execute(cpu_conv.conv2d, cuda_conv.conv2d, [out], [w_g, xpad.detach().contiguous(), bias_rows],
                        bias is not None, stride[0], stride[1], dilation[0], dilation[1], kh, kw)
    return out.view(n, c_out, oh, ow)


def _im2col(xpad, kernel, stride, dilation, groups):
    """cols (N * G, Cin/G*KH*KW, OH*OW): for each sample and group, the values of
    xpad each output reads, (c, kh, kw) x (oh, ow); values only moved."""
    n, c_in, hp, wp = xpad.shape
    kh, kw = kernel
    oh, ow = _out_size(hp, kh, stride[0], dilation[0]), _out_size(wp, kw, stride[1], dilation[1])
    kk = c_in // groups * kh * kw
    if xpad.numel() == 0 or oh * ow == 0:
        return xpad.new_zeros((n * groups, kk, oh * ow))
    cols = F.unfold(xpad, (kh, kw), dilation=dilation, stride=stride)  # (N, C*KH*KW, L), moves values only
    return cols.reshape(n * groups, kk, oh * ow)


def _padded(x, pads):
    """x (no graph) zero-padded by pads ((top, bottom), (left, right)), for a
    kernel that reads it at once: on the CPU launcher in a scratch buffer that
    the next padding reuses (softrep.cpu.conv.pad_into_scratch), elsewhere a
    fresh F.pad.  Values are only moved either way."""
    if not (any(pads[0]) or any(pads[1])):  # F.pad copies even when it adds nothing
        return x
    if backend.on_cpu_launcher(x) and x.dtype in (torch.float32, torch.float64) and type(x) is torch.Tensor:
        return torch.from_numpy(cpu_conv.pad_into_scratch(x.numpy(), pads))
    return F.pad(x, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))


def _conv2d_forward(x, w, bias, stride, pads, dilation, groups):
    xpad = _padded(x.detach(), pads)
    return _conv2d_core(xpad, w.detach(), None if bias is None else bias.detach(), stride, dilation, groups)


def _spread(g, stride, before, size):
    """g (N, C, OH, OW) with (stride - 1) zeros (+0) between neighbours along H
    and W, `before` (rows, columns) zeros in front, and zeros after up to `size`
    (rows, columns).  Values are only moved, by two strided copies
    (slice_scatter: out of place, so autograd and torch.func transforms of
    the backward see ordinary ops)."""
    n, c, oh, ow = g.shape
    (sh, sw), (bh, bw) = stride, before
    rows = torch.slice_scatter(g.new_zeros((n, c, oh, size[1])), g, 3, bw, bw + (ow - 1) * sw + 1, sw)
    return torch.slice_scatter(g.new_zeros((n, c, size[0], size[1])), rows, 2, bh, bh + (oh - 1) * sh + 1, sh)


def _phase_taps(k_size, d, s, before, size, out_size):
    """One spatial dim of the input gradient split by input position modulo s.

    Input position ih = e + s*u (u = 0 .. ceil(size/s) - 1; e = 0 .. s-1) sits
    at i = before + ih of the padded input and receives the terms
    g[o] * w[k] with o*s + k*d = i: the taps k with k*d = i (mod s), the same
    for every u.  With those taps in the chain's order (k descending) and
    g[o] read at o = (i - k*d) / s, the terms of every u are a stride-1
    correlation of g with dilation d / gcd(d, s).  Per e: None when no tap
    reaches it, else (flipped tap indices KH-1-k in chain order, dilation,
    rows lo..hi of g to read, zeros before, zeros after)."""
    length = -(-size // s)
    plans = []
    for e in range(s):
        i0 = before + e
        r = i0 % s
        taps = [k for k in range(k_size - 1, -1, -1) if (k * d - r) % s == 0]
        if not taps:
            plans.append(None)
            continue
        step = d // math.gcd(d, s)
        # padded g: gpad[v] = g[v - front], read at v = u + j*step for tap j
        front = (taps[0] * d - r) // s - i0 // s
        span = length + (len(taps) - 1) * step
        lo, hi = max(0, -front), min(out_size, span - front)
        if hi <= lo:  # every term reads a zero of gz
            plans.append(None)
            continue
        plans.append(([k_size - 1 - k for k in taps], step, lo, hi, lo + front, span - (lo + front) - (hi - lo)))
    return plans, length


def _input_grad_by_phases(g, w_t, x_shape, pads, stride, dilation, groups):
    """grad_input of a strided convolution without the zeros of gz: the input
    positions split by (ih mod sh, iw mod sw), each phase the stride-1
    convolution of g with the taps that reach it (`_phase_taps`), the phases
    then interleaved (values only moved).  None where that could move a bit.

    Each chain keeps its nonzero terms in their order and drops only terms
    fma(0, w, acc).  For a finite w such a term returns acc unchanged, except
    acc = -0 with w >= +0, which it turns into +0.  So the chains without them
    end with the same value, except possibly for a -0 that the chain with them
    ends as +0 (a chain from +0 reaches -0 only by an underflow); when w is
    not finite or a -0 appears, the zero-inserted form is used instead."""
    if not (batching.values_readable(g, w_t) and bool(torch.isfinite(w_t).all())):
        return None
    n, c_in, height, width = x_shape
    kh, kw = w_t.shape[2:]
    rows, length_h = _phase_taps(kh, dilation[0], stride[0], pads[0][0], height, g.shape[2])
    cols, length_w = _phase_taps(kw, dilation[1], stride[1], pads[1][0], width, g.shape[3])
    phase_rows = []
    for plan_h in rows:
        phases = []
        for plan_w in cols:
            if plan_h is None or plan_w is None:
                phases.append(g.new_zeros((n, c_in, length_h, length_w)))
                continue
            (taps_h, step_h, lo_h, hi_h, fh, bh), (taps_w, step_w, lo_w, hi_w, fw, bw) = plan_h, plan_w
            v = w_t.index_select(2, torch.tensor(taps_h, device=w_t.device)).index_select(
                3, torch.tensor(taps_w, device=w_t.device))
            phases.append(backend.call(Conv2dFunction, g[:, :, lo_h:hi_h, lo_w:hi_w], v, None, (1, 1),
                                       ((fh, bh), (fw, bw)), (step_h, step_w), groups))
        phase_rows.append(torch.stack(phases, dim=-1).reshape(n, c_in, length_h, length_w * stride[1]))
    gx = torch.stack(phase_rows, dim=3).reshape(n, c_in, length_h * stride[0], length_w * stride[1])
    gx = gx[:, :, :height, :width]
    negative_zero = torch.tensor(-0.0, dtype=gx.dtype).view(torch.int32 if gx.dtype == torch.float32 else torch.int64)
    bits = gx.detach().view(negative_zero.dtype)
    if bool((bits == negative_zero.to(bits.device)).any()):
        return None
    return gx


def _weight_grad_nodes(g_t, xpad, ranges, stride, dilation, kernel, groups):
    """`tree_product(g_t, cols_t, ranges)` on the CPU, cols_t (the transposed
    im2col of xpad) packed by the launcher from xpad itself: the same chains
    and tree, without the unfolded copies (softrep/cpu/conv.py)."""
    n, _, _, co_g = g_t.shape
    kk = xpad.shape[1] // groups * kernel[0] * kernel[1]
    out = empty((len(ranges), groups, co_g, kk), dtype=g_t.dtype, device=g_t.device)
    if out.numel() == 0:
        return out
    if g_t.shape[2] == 0:  # no output pixels: every chain is +0, and so is every sum of them
        return out.zero_()
    first = index_table([f for f, _ in ranges])
    counts = index_table([c for _, c in ranges])
    backend.execute(cpu_conv.weight_grad_tree, None, [out], [g_t.detach(), xpad.detach(), first, counts],
                    stride[0], stride[1], dilation[0], dilation[1], kernel[0], kernel[1], groups)
    return out


class Conv2dFunction(backend.Function):
    """Forward: the implicit GEMM of the module docstring.  Backward: grad_input
    is itself a Conv2dFunction (of the zero-inserted gradient) and grad_weight a
    batched product of softrep.ops.products, so gradients of any order, and
    torch.func transforms of the backward, are softrep ops.

    vmap: with the weight and bias unbatched the samples fold into the batch
    dim N (each output element is computed alone); otherwise one call per sample."""

    @staticmethod
    def forward(x, w, bias, stride, pads, dilation, groups):
        return _conv2d_forward(x, w, bias, stride, pads, dilation, groups)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w, bias, stride, pads, dilation, groups = inputs
        ctx.save_for_backward(w, x)
        ctx.weight, ctx.bias = w, bias
        xpad_shape = (*x.shape[:2], x.shape[2] + sum(pads[0]), x.shape[3] + sum(pads[1]))
        ctx.conf = (x.shape, xpad_shape, stride, pads, dilation, groups, bias is not None)

    @staticmethod
    def backward(ctx, g):
        # The second saved tensor is the input x, or the padded input itself
        # (softrep.tools.dispatch calls this backward with one).
        w, x_or_xpad = ctx.saved_tensors
        x_shape, xpad_shape, stride, pads, dilation, groups, has_bias = ctx.conf
        n, c_out, oh, ow = g.shape
        c_g, kh, kw = w.shape[1:]
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            hp, wp = xpad_shape[2:]
            zh, zw = (kh - 1) * dilation[0], (kw - 1) * dilation[1]
            w_t = (w.flip(2, 3).reshape(groups, c_out // groups, c_g, kh, kw)
                   .transpose(1, 2).reshape(groups * c_g, c_out // groups, kh, kw))
            # the zero-inserted gradient gz framed by zh (zw) zeros before and
            # zeros up to the padded input's size after: the stride-1
            # convolution of the module docstring, over an unpadded input
            if tuple(stride) == (1, 1):
                # nothing to insert: the frame is the convolution's own zero
                # padding (zh + oh + zh = zh + hp rows, the same +0s)
                frame = ((zh - pads[0][0], zh - pads[0][1]), (zw - pads[1][0], zw - pads[1][1]))
                if min(frame[0] + frame[1]) >= 0:
                    # only the rows and columns the crop keeps: output i of
                    # this frame reads the g (or frame zero) that output
                    # pads_before + i of the full frame reads, tap for tap,
                    # so each kept chain has the same terms in the same order
                    gx = backend.call(Conv2dFunction, g, w_t, None, (1, 1), frame, dilation, groups)
                else:
                    gxpad = backend.call(Conv2dFunction, g, w_t, None, (1, 1), ((zh, zh), (zw, zw)), dilation, groups)
            else:
                gx = _input_grad_by_phases(g, w_t, x_shape, pads, stride, dilation, groups)
                if gx is None:
                    gz_framed = _spread(g, stride, (zh, zw), (zh + hp, zw + wp))
                    gxpad = backend.call(Conv2dFunction, gz_framed, w_t, None, (1, 1), ((0, 0), (0, 0)), dilation,
                                         groups)
            if gx is None:
                gx = gxpad[:, :, pads[0][0]:pads[0][0] + x_shape[2], pads[1][0]:pads[1][0] + x_shape[3]]
        if ctx.needs_input_grad[1]:
            # per sample (docs/order.md, "The batch order"): one chain over its
            # (oh, ow) per weight element, then the batch tree over n
            g_s = g.reshape(n * groups, c_out // groups, oh * ow)
            # the weight as the forward got it (softrep.tools.dispatch calls this
            # backward with a context of saved tensors only)
            weight = getattr(ctx, "weight", w)
            g_t = g_s.reshape(n, groups, c_out // groups, oh * ow).transpose(2, 3)  # k = (oh, ow)
            packed = streams_tree(g_s, x_or_xpad) and backend.on_cpu_launcher(g_s, x_or_xpad)
            if tuple(x_or_xpad.shape) == tuple(xpad_shape):
                xpad = x_or_xpad
            elif packed:  # read by the kernel below and nowhere else: a scratch copy will do
                xpad = _padded(x_or_xpad.detach(), pads)
            else:
                xpad = F.pad(x_or_xpad, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
            if packed:
                # the tree product below, its second operand packed straight from xpad
                gw = batchtree.param_grad_of_nodes(
                    "conv2d", "weight", weight, n,
                    lambda ranges: _weight_grad_nodes(g_t, xpad, ranges, stride, dilation, (kh, kw), groups)
                    .reshape(len(ranges), *w.shape))
            else:
                cols = _im2col(xpad, (kh, kw), stride, dilation, groups)
                if streams_tree(g_s, cols):
                    # the per-sample chains go straight into the batch tree
                    cols_t = cols.reshape(n, groups, -1, oh * ow).transpose(2, 3)
                    gw = batchtree.param_grad_of_nodes(
                        "conv2d", "weight", weight, n,
                        lambda ranges: tree_product(g_t, cols_t, ranges).reshape(len(ranges), *w.shape))
                else:
                    partials = bmm(g_s, cols.transpose(1, 2)).reshape(n, *w.shape)
                    gw = batchtree.param_grad("conv2d", "weight", weight, partials)
        if has_bias and ctx.needs_input_grad[2]:
            # each sample's softrep.sum over (oh, ow), then the batch tree over n
            # (a context of saved tensors only, from softrep.tools.dispatch,
            # has no bias: a stand-in of its shape)
            bias = getattr(ctx, "bias", None)
            gb = batchtree.param_grad_of_sums_over_last("conv2d", "bias", g.new_empty(c_out) if bias is None else bias,
                                                        g.reshape(n, c_out, oh * ow))
        return gx, gw, gb, None, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, w, bias, stride, pads, dilation, groups):
        dx, dw, db = in_dims[:3]
        if dw is None and db is None:
            x = batching.front(x, dx)
            size, n = x.shape[0], x.shape[1]
            out = _conv2d_forward(x.reshape(size * n, *x.shape[2:]), w, bias, stride, pads, dilation, groups)
            return out.reshape(size, n, *out.shape[1:]), 0
        return batching.per_sample(_conv2d_forward, info, in_dims, x, w, bias, stride, pads, dilation, groups)


def _conv_geometry(fn, dims, input_shape, weight_shape, bias_shape, stride, padding, dilation, groups, padding_mode):
    """The checks of conv1d/conv2d's shapes and arguments: (unbatched, stride,
    pads, dilation, groups) normalised, or an error naming the argument."""
    if padding_mode != "zeros":
        raise NotImplementedError(f"softrep.{fn}: argument 'padding_mode' must be 'zeros', got {padding_mode!r}")
    if len(input_shape) not in (dims + 1, dims + 2):
        raise ValueError(f"softrep.{fn}: argument 'input' must be {dims + 1}-D (unbatched) or {dims + 2}-D, "
                         f"got shape {tuple(input_shape)}")
    if len(weight_shape) != dims + 2:
        raise ValueError(f"softrep.{fn}: argument 'weight' must be {dims + 2}-D, got shape {tuple(weight_shape)}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"softrep.{fn}: argument 'groups' must be a positive int, got {groups!r}")
    unbatched = len(input_shape) == dims + 1
    x_shape = (1, *input_shape) if unbatched else tuple(input_shape)
    c_in, c_out = x_shape[1], weight_shape[0]
    if c_out % groups:
        raise ValueError(f"softrep.{fn}: argument 'groups' ({groups}) must divide the output channels ({c_out})")
    if c_in % groups:
        raise ValueError(f"softrep.{fn}: argument 'groups' ({groups}) must divide the input channels ({c_in})")
    if weight_shape[1] * groups != c_in:
        raise ValueError(f"softrep.{fn}: argument 'weight' expects {weight_shape[1] * groups} input channels "
                         f"({weight_shape[1]} per group x {groups} groups), but 'input' has {c_in}")
    if bias_shape is not None and tuple(bias_shape) != (c_out,):
        raise ValueError(f"softrep.{fn}: argument 'bias' must have shape ({c_out},), got {tuple(bias_shape)}")
    stride = _pair(fn, "stride", stride, dims, 1)
    dilation = _pair(fn, "dilation", dilation, dims, 1)
    kernel = tuple(weight_shape[2:])
    pads = _padding(fn, padding, dims, kernel, dilation, stride)
    for d in range(dims):
        size = x_shape[2 + d] + sum(pads[d])
        if size < dilation[d] * (kernel[d] - 1) + 1:
            raise ValueError(f"softrep.{fn}: the padded input ({size} along spatial dim {d}) is smaller than the "
                             f"dilated kernel ({dilation[d] * (kernel[d] - 1) + 1}); argument 'input' is too small")
    return unbatched, stride, pads, dilation, int(groups)


_checked_geometry = memoized_check(_conv_geometry)


def _conv(fn, dims, input, weight, bias, stride, padding, dilation, groups, padding_mode):
    operands = {"input": input, "weight": weight}
    if bias is not None:
        operands["bias"] = bias
    check_operands(fn, **operands)
    unbatched, stride, pads, dilation, groups = _checked_geometry(
        fn, dims, input.shape, weight.shape, None if bias is None else bias.shape, stride, padding, dilation, groups,
        padding_mode)
    x = input.unsqueeze(0) if unbatched else input
    if dims == 1:  # a 1-D convolution is a 2-D one over a height of 1, same order
        out = backend.call(Conv2dFunction, x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride,
                           ((0, 0),) + pads, (1,) + dilation, groups).squeeze(2)
    else:
        out = backend.call(Conv2dFunction, x, weight, bias, stride, pads, dilation, groups)
    return out.squeeze(0) if unbatched else out


@mixed.float32_compute("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, padding_mode="zeros"):
    """1-D convolution (cross-correlation) like torch.nn.functional.conv1d, in the documented order."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups, padding_mode)


@mixed.float32_compute("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, padding_mode="zeros"):
    """2-D convolution (cross-correlation) like torch.nn.functional.conv2d, in the documented order."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups, padding_mode)
