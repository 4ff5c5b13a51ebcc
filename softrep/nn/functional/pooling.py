# softrep: no kernels
"""2-D pooling: max_pool2d, avg_pool2d, adaptive_avg_pool2d (torch's signatures).

The average pools read their windows through a window table: for every
output position (oh, ow), the flat in-plane indices ih * W + iw of its window
in row-major (kh, kw) order, -1 standing for padding or for the unused tail of
a shorter adaptive window; windows that tile the plane (stride = kernel, no
padding; an adaptive pool of a divisor of the size) are read by a reshape
instead, the same values in the same order.  max_pool2d finds each window's
winner and copies its value with one kernel (softrep.ops.pooling; integer
comparisons only).  The average pools' values are moved with
`sparse.gather_rows` (exact copies); every pool's gradients come back through
`sparse.scatter_sum_rows`:
the gradients that reach one input element are added with softrep.sum in the
row-major order of (n, c, oh, ow[, kh, kw]) -- by output position -- never with
torch's scatter_add.  The orders are written out in docs/order.md ("Pooling").
"""

import numbers

import torch

from ...ops import backend, mixed
from ...ops import elementwise as E
from ...ops import reduction as R
from ...ops.pooling import max_windows
from ...ops.validate import memoized_check
from .sparse import gather_rows, scatter_sum_rows



# ----------------------------------------------------------------------------- arguments

def _pair(fn, name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    items = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(items) == 1:
        items = items * 2
    if len(items) != 2 or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in items):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be an int or a pair of ints, got {value!r}")
    if any(v < minimum for v in items):
        raise ValueError(f"softrep.{fn}: argument '{name}' must be >= {minimum}, got {value!r}")
    return int(items[0]), int(items[1])


def _planes(fn, input):
    """input as (N, C, H, W) (a 3-D (C, H, W) input gets N = 1) and whether it was 3-D."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if input.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"softrep.{fn}: argument 'input' has dtype {input.dtype}; "
                        "expected torch.float32 or torch.float64")
    if input.dim() not in (3, 4):
        raise ValueError(f"softrep.{fn}: argument 'input' must be 3-D (C, H, W) or 4-D (N, C, H, W), "
                         f"got shape {tuple(input.shape)}")
    if input.dim() == 3:
        return input.unsqueeze(0), True
    return input, False


def _out_size(fn, size, k, s, p, d, ceil_mode):
    """torch's pooling output length (pooling_output_shape)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window must start inside the input or the left padding
    if out < 1:
        raise ValueError(f"softrep.{fn}: the output would be empty (input {size}, kernel_size {k}, stride {s}, "
                         f"padding {p}, dilation {d}): 'input' is too small")
    return out


def _window_table(H, W, OH, OW, kernel, stride, padding, dilation, device):
    """(OH*OW, KH*KW) flat in-plane indices of the windows, -1 outside the input."""
    (KH, KW), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    ih = (torch.arange(OH, device=device) * sh - ph)[:, None] + torch.arange(KH, device=device) * dh  # (OH, KH)
    iw = (torch.arange(OW, device=device) * sw - pw)[:, None] + torch.arange(KW, device=device) * dw  # (OW, KW)
    inside = ((ih >= 0) & (ih < H))[:, None, :, None] & ((iw >= 0) & (iw < W))[None, :, None, :]
    flat = ih[:, None, :, None] * W + iw[None, :, None, :]  # (OH, OW, KH, KW)
    return torch.where(inside, flat, -1).reshape(OH * OW, KH * KW)


def _gather_windows(x, table, fill):
    """x (N, C, H, W) -> (N, C, OH*OW, K) window values (`fill` at -1), with gradient."""
    N, C, H, W = x.shape
    planes = N * C
    offsets = (torch.arange(planes, device=x.device) * (H * W))[:, None, None]
    index = torch.where(table >= 0, table + offsets, -1).reshape(-1)
    vals = gather_rows(x.reshape(-1, 1), index, index, fill)
    return vals.reshape(N, C, *table.shape)


# ----------------------------------------------------------------------------- max_pool2d

class _MaxPool2d(backend.Function):
    """(values, indices) of the windows of planes x (P, H, W) (softrep.ops.pooling.max_windows).
    Backward: the gradient of each output goes to its winner, the gradients
    that reach one element added by `scatter_sum_rows` in output order; when
    `apart` (windows that do not overlap have different winners) every
    element receives at most one, copied by a scatter into zeros.
    vmap: the samples' planes run as one batch of planes (every window is
    found alone)."""

    @staticmethod
    def forward(x, out_size, kernel, stride, padding, dilation, apart):
        return max_windows(x, out_size, kernel, stride, padding, dilation)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ctx.apart = inputs[0], inputs[6]
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)  # no zeros for the indices' gradient
        ctx.save_for_backward(output[1])
        ctx.plane_shape = x.shape

    @staticmethod
    def backward(ctx, g, _):
        if g is None:  # the values unused
            return None, None, None, None, None, None, None
        (idx,) = ctx.saved_tensors
        P, H, W = ctx.plane_shape
        if ctx.apart:
            # every element receives at most one gradient: copies into zeros,
            # to distinct places (torch's scatter, whose backward is a gather)
            zeros = torch.zeros((P, H * W), dtype=g.dtype, device=g.device)
            grad = zeros.scatter(1, idx.reshape(P, -1), g.reshape(P, -1))
        else:
            flat = (idx.reshape(P, -1) + (torch.arange(P, device=idx.device) * (H * W))[:, None]).reshape(-1)
            grad = scatter_sum_rows(g.reshape(-1, 1), flat, P * H * W)
        return grad.reshape(P, H, W), None, None, None, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, out_size, kernel, stride, padding, dilation, apart):
        xb = x.movedim(in_dims[0], 0)
        B, P = xb.shape[0], xb.shape[1]
        values, idx = max_windows(xb.reshape(B * P, *xb.shape[2:]), out_size, kernel, stride, padding, dilation)
        return (values.reshape(B, P, *out_size), idx.reshape(B, P, *out_size)), (0, 0)


def _max_pool_geometry_checks(H, W, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d's arguments checked and normalised for planes of H x W:
    (kernel, stride, padding, dilation, (OH, OW), apart), apart when windows
    that do not overlap have different winners (the backward is then a copy)."""
    fn = "max_pool2d"
    kernel = _pair(fn, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _pair(fn, "stride", stride, 1)
    padding = _pair(fn, "padding", padding, 0)
    dilation = _pair(fn, "dilation", dilation, 1)
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise ValueError(f"softrep.{fn}: argument 'padding' {padding} must be at most half of "
                             f"'kernel_size' {kernel}")
    OH = _out_size(fn, H, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    OW = _out_size(fn, W, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    apart = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel))
    return kernel, stride, padding, dilation, (OH, OW), apart


_max_pool_geometry = memoized_check(_max_pool_geometry_checks)


@mixed.float32_compute("max_pool2d")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Largest element of each window, like torch.nn.functional.max_pool2d.

    The maximum is taken in the total order of softrep.amax (NaN above +inf, +0
    above -0); among equal elements the first in window order (row-major
    (kh, kw)) wins.  Padding never wins.  The value is an exact copy (a NaN is
    the canonical NaN); `return_indices` gives its flat in-plane index
    ih * W + iw, as torch.  Backward: the gradients of the outputs whose maximum
    is input element e are added with softrep.sum in row-major (n, c, oh, ow)
    order (one gradient is copied; none gives +0)."""
    fn = "max_pool2d"
    x, squeezed = _planes(fn, input)
    N, C, H, W = x.shape
    kernel, stride, padding, dilation, (OH, OW), apart = _max_pool_geometry(
        H, W, kernel_size, stride, padding, dilation, ceil_mode)
    out, idx = _MaxPool2d.apply(x.reshape(N * C, H, W), (OH, OW), tuple(kernel), tuple(stride), tuple(padding),
                                tuple(dilation), apart)
    out, idx = out.reshape(N, C, OH, OW), idx.reshape(N, C, OH, OW)
    if squeezed:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


# ----------------------------------------------------------------------------- average pools

def _tiles(x, out_size, kernel):
    """x (N, C, H, W) -> (N, C, OH*OW, KH*KW): the values of windows that tile
    the top-left OH*KH x OW*KW corner of each plane, in row-major (kh, kw)
    order -- what `_gather_windows` gathers for such windows, moved by a
    reshape and a permute.  Every element lies in at most one window, so its
    gradient is the one term the scatter-sum would copy, or +0."""
    (n, c), (oh, ow), (kh, kw) = x.shape[:2], out_size, kernel
    tiles = x[:, :, :oh * kh, :ow * kw].reshape(n, c, oh, kh, ow, kw).permute(0, 1, 2, 4, 3, 5)
    return tiles.reshape(n, c, oh * ow, kh * kw)


def _window_mean(vals, divisor):
    """softrep.sum of each window's values (N, C, OH*OW, K) (padding as -0, an
    exact identity of add_rn), then one div_rn by `divisor` (a tensor broadcast
    over (OH*OW,))."""
    return E.div(R.sum(vals, dim=-1), divisor)


@mixed.float32_compute("avg_pool2d")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Window mean, like torch.nn.functional.avg_pool2d: softrep.sum of the KH*KW
    window positions in row-major order (positions in the padding or past the
    input contribute -0, which changes no sum), then div_rn by torch's divisor:
    divisor_override, else the window size clipped to input + padding
    (count_include_pad=True) or to the input (False).  Backward: div_rn(g, divisor)
    sent to every window position and added per input element with softrep.sum in
    row-major (n, c, oh, ow, kh, kw) order."""
    fn = "avg_pool2d"
    x, squeezed = _planes(fn, input)
    kernel = _pair(fn, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _pair(fn, "stride", stride, 1)
    padding = _pair(fn, "padding", padding, 0)
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise ValueError(f"softrep.{fn}: argument 'padding' {padding} must be at most half of "
                             f"'kernel_size' {kernel}")
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, numbers.Integral):
            raise TypeError(f"softrep.{fn}: argument 'divisor_override' must be an int or None, "
                            f"got {type(divisor_override).__name__}")
        if divisor_override == 0:
            raise ValueError(f"softrep.{fn}: argument 'divisor_override' must be nonzero")
    N, C, H, W = x.shape
    OH = _out_size(fn, H, kernel[0], stride[0], padding[0], 1, ceil_mode)
    OW = _out_size(fn, W, kernel[1], stride[1], padding[1], 1, ceil_mode)
    if stride == kernel and padding == (0, 0) and OH * kernel[0] <= H and OW * kernel[1] <= W:
        vals = _tiles(x, (OH, OW), kernel)
    else:
        vals = _gather_windows(x, _window_table(H, W, OH, OW, kernel, stride, padding, (1, 1), x.device), -0.0)
    if divisor_override is not None:
        divisor = torch.tensor(float(divisor_override), dtype=x.dtype, device=x.device)
    else:
        # torch: the window clipped to the padded input; count_include_pad=False clips it to the input
        def extent(n_out, size, k, s, p, clip_pad):
            start = torch.arange(n_out, device=x.device) * s - p
            end = torch.minimum(start + k, torch.tensor(size + p, device=x.device))
            if clip_pad:
                return end - start
            return end.clamp(max=size) - start.clamp(min=0)
        hh = extent(OH, H, kernel[0], stride[0], padding[0], count_include_pad)
        ww = extent(OW, W, kernel[1], stride[1], padding[1], count_include_pad)
        divisor = (hh[:, None] * ww[None, :]).reshape(-1).to(x.dtype)  # exact below 2^24 elements
    out = _window_mean(vals, divisor).reshape(N, C, OH, OW)
    return out.squeeze(0) if squeezed else out


@mixed.float32_compute("adaptive_avg_pool2d")
def adaptive_avg_pool2d(input, output_size):
    """Like torch.nn.functional.adaptive_avg_pool2d: output (oh, ow) averages rows
    [floor(oh*H/OH), ceil((oh+1)*H/OH)) and the columns likewise: softrep.sum of
    the window in row-major order, then one div_rn by its element count.
    (torch divides by the height, then by the width: two roundings.)  Backward:
    as avg_pool2d."""
    fn = "adaptive_avg_pool2d"
    x, squeezed = _planes(fn, input)
    N, C, H, W = x.shape
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    if len(sizes) != 2:
        raise TypeError(f"softrep.{fn}: argument 'output_size' must be an int or a pair, got {output_size!r}")
    sizes = tuple(full if s is None else s for s, full in zip(sizes, (H, W)))
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 for s in sizes):
        raise ValueError(f"softrep.{fn}: argument 'output_size' must be positive ints (or None), "
                         f"got {output_size!r}")
    if (H == 0 or W == 0) and N * C > 0:
        raise ValueError(f"softrep.{fn}: argument 'input' has an empty spatial dimension {tuple(x.shape)}")
    OH, OW = int(sizes[0]), int(sizes[1])

    def bounds(n_out, size):
        o = torch.arange(n_out, device=x.device)
        start = (o * size) // n_out
        end = ((o + 1) * size + n_out - 1) // n_out
        return start, end

    if H % OH == 0 and W % OW == 0:  # equal windows that tile the plane
        divisor = torch.tensor(float((H // OH) * (W // OW)), dtype=x.dtype, device=x.device)
        out = _window_mean(_tiles(x, (OH, OW), (H // OH, W // OW)), divisor).reshape(N, C, OH, OW)
        return out.squeeze(0) if squeezed else out
    hs, he = bounds(OH, H)
    ws, we = bounds(OW, W)
    KH, KW = int((he - hs).max()), int((we - ws).max())
    ih = hs[:, None] + torch.arange(KH, device=x.device)  # (OH, KH)
    iw = ws[:, None] + torch.arange(KW, device=x.device)  # (OW, KW)
    inside = (ih < he[:, None])[:, None, :, None] & (iw < we[:, None])[None, :, None, :]
    table = torch.where(inside, ih[:, None, :, None] * W + iw[None, :, None, :], -1).reshape(OH * OW, KH * KW)
    divisor = ((he - hs)[:, None] * (we - ws)[None, :]).reshape(-1).to(x.dtype)
    out = _window_mean(_gather_windows(x, table, -0.0), divisor).reshape(N, C, OH, OW)
    return out.squeeze(0) if squeezed else out


__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]
