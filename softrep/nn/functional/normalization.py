# softrep: no kernels
"""batch_norm, layer_norm, rms_norm and group_norm with torch's signatures.

All four are one normalisation over a set of dims of the input (the
"normalised elements" of each output), written as softrep ops rounded to
nearest, followed by the affine map:

    m    = mean(x, dims)                         (rms_norm: no centring, d = x)
    d    = sub(x, m)
    ss   = sum(mul(d, d), dims)                  (the documented sum order)
    v    = div(ss, n)                            (bitwise softrep.var(x, dims, correction=0))
    s    = sqrt(add(v, eps))
    xhat = div(d, s)
    y    = add(mul(xhat, weight), bias)          (each step only when given)

Dividing by s (rather than multiplying by a rounded 1/s) keeps every output
element at two roundings after the statistics.  The normalisation is one
autograd Function whose backward is the closed form of the gradient written
as softrep ops (docs/order.md, "Normalization"); the affine map is composed
of softrep elementwise ops, so the weight and bias gradients are their
documented broadcast sums.  batch_norm's running statistics are updated in
place as torch defines them (momentum, unbiased running variance).
"""

import math
import numbers

import torch

from ...ops import backend, batching, batchtree, channels, mixed, summation
from ...ops import elementwise as E
from ...ops import reduction as R

_FLOAT = (torch.float32, torch.float64)


def _check_input(fn, input, min_dim=1):
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if input.dtype not in _FLOAT:
        raise TypeError(f"softrep.{fn}: argument 'input' has dtype {input.dtype}; expected torch.float32 or "
                        "torch.float64")
    if input.dim() < min_dim:
        raise ValueError(f"softrep.{fn}: argument 'input' must have at least {min_dim} dims, "
                         f"got shape {tuple(input.shape)}")


def check_param(fn, name, t, input, shape):
    """An optional per-feature tensor (weight, bias, running stats) of exactly `shape`."""
    if t is None:
        return
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a torch.Tensor or None, got {type(t).__name__}")
    if t.dtype != input.dtype:
        raise TypeError(f"softrep.{fn}: argument '{name}' has dtype {t.dtype} but 'input' has {input.dtype}; "
                        "softrep does not promote dtypes")
    if t.device != input.device:
        raise ValueError(f"softrep.{fn}: argument '{name}' is on {t.device} but 'input' is on {input.device}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"softrep.{fn}: argument '{name}' has shape {tuple(t.shape)}; expected {tuple(shape)}")


def _number(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a real number, got {type(value).__name__}")
    return float(value)


def check_eps(fn, eps):
    eps = _number(fn, "eps", eps)
    if not eps >= 0:
        raise ValueError(f"softrep.{fn}: argument 'eps' must be >= 0, got {eps}")
    return eps


def _trailing(x, dims):
    return dims == tuple(range(x.dim() - len(dims), x.dim()))


def _fused_moments(x, dims, eps, center):
    """`moments` by the fused row passes (softrep.ops.channels), for dims that
    are x's trailing ones: each output's normalised elements are one row of
    x, in the row-major order softrep.sum reads them.  The same roundings:
    m = div(sum(row), n) is R.mean's, ss is the documented sum of
    mul(sub(x, m), sub(x, m)) (with m = +0 when not centring: sub(x, +0) is
    x exactly), xhat = div(sub(x, m), s) (sub(x, +0) again x)."""
    n = math.prod(x.shape[d] for d in dims)
    keep = x.shape[:x.dim() - len(dims)] + (1,) * len(dims)
    rows = x.detach().contiguous().reshape(-1, n)
    m = E.div(summation.sum_rows(rows), float(n)) if center else None
    ss = summation.sum_rows(rows, m, centered=True)
    s = E.sqrt(E.add(E.div(ss, float(n)), eps))
    zero = rows.new_zeros(rows.shape[0])
    xhat = channels.row_normalize(rows, zero if m is None else m, s)
    return (xhat.reshape(x.shape), None if m is None else m.reshape(keep), ss.reshape(keep), s.reshape(keep))


def moments(x, dims, eps, center):
    """(xhat, m, ss, s) of the module docstring; m is None when not centring."""
    if channels.fusable() and x.numel() and _trailing(x, dims):
        return _fused_moments(x, dims, eps, center)
    n = math.prod(x.shape[d] for d in dims)
    m = R.mean(x, dims, keepdim=True) if center else None
    d = E.sub(x, m) if center else x
    ss = R.sum(E.mul(d, d), dims, keepdim=True)
    s = E.sqrt(E.add(E.div(ss, float(n)), eps))
    return E.div(d, s), m, ss, s


def _normalize_forward(x, dims, eps, center):
    xhat, m, ss, s = moments(x, dims, eps, center)
    return xhat, torch.zeros_like(ss) if m is None else m, ss, s


class _Normalize(backend.Function):
    """xhat over `dims` (outputs: xhat, and the non-differentiable m and ss that
    batch_norm's running statistics need, and s that the backward needs).

    Backward, n the number of normalised elements, g the gradient of xhat:
        c  = mean(mul(g, xhat), dims)
        t  = sub(g, mean(g, dims))          (rms_norm: t = g)
        dx = div(sub(t, mul(xhat, c)), s)
    When a graph of the backward is requested, xhat and s are recomputed from x
    by the forward's ops (same bits), so that second derivatives are right.
    vmap: the batch dim goes first and `dims` shift by one (each sample is
    normalised over its own elements, in the order of their count).
    """

    @staticmethod
    def forward(x, dims, eps, center):
        return _normalize_forward(x, dims, eps, center)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ctx.dims, ctx.eps, ctx.center = inputs
        xhat, m, ss, s = output
        ctx.save_for_backward(x, xhat, s)
        ctx.mark_non_differentiable(m, ss, s)

    @staticmethod
    def backward(ctx, g, _gm, _gss, _gs):
        x, xhat, s = ctx.saved_tensors
        if torch.is_grad_enabled():
            xhat, _, _, s = moments(x, ctx.dims, ctx.eps, ctx.center)
        dims = ctx.dims
        if channels.fusable() and _trailing(g, dims):
            # the same roundings by row passes: the means are div(sum(row), n),
            # and t = sub(g, +0) is g exactly when not centring
            n = math.prod(g.shape[d] for d in dims)
            rows = g.detach().contiguous().reshape(-1, n)
            xrows = xhat.detach().contiguous().reshape(-1, n)
            c = E.div(summation.sum_rows(E.mul(rows, xrows)), float(n))
            mg = E.div(summation.sum_rows(rows), float(n)) if ctx.center else rows.new_zeros(rows.shape[0])
            return channels.row_normalize_grad(rows, xrows, mg, c, s).reshape(g.shape), None, None, None
        c = R.mean(E.mul(g, xhat), dims, keepdim=True)
        t = E.sub(g, R.mean(g, dims, keepdim=True)) if ctx.center else g
        return E.div(E.sub(t, E.mul(xhat, c)), s), None, None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, eps, center):
        x = batching.front(x, in_dims[0])
        return _normalize_forward(x, tuple(d + 1 for d in dims), eps, center), (0, 0, 0, 0)


def _normalize(x, dims, eps, center):
    if x.numel() == 0:
        # nothing to normalise; an empty result that still carries a graph
        return E.mul(x, 1.0), None, None
    return backend.call(_Normalize, x, dims, eps, center)[:3]


def affine(y, weight, bias, view):
    """mul(y, weight) and add(., bias), weight and bias of shape `view` (the
    trailing dims of y, or y's dims with 1 where broadcast).  Dim 0 of y is the
    sample dim when the parameters are broadcast along it: their gradients are
    per-sample sums then the batch tree (`batchtree.expand_param`)."""
    full = (1,) * (y.dim() - len(view)) + tuple(view)
    batched = y.dim() > 0 and full[0] == 1

    def param(name, t):
        return batchtree.expand_param("normalization", name, t, full, y) if batched else t.reshape(view)

    if weight is not None:
        y = E.mul(y, param("weight", weight))
    if bias is not None:
        y = E.add(y, param("bias", bias))
    return y


def _affine_composite(x, weight, bias, shape, eps, center):
    """layer_norm / rms_norm as the separate ops: the reference of `_AffineNorm`."""
    dims = tuple(range(x.dim() - len(shape), x.dim()))
    return affine(_normalize(x, dims, eps, center)[0], weight, bias, shape)


def _or_filled(param, n, value, like):
    """param, or n elements of `value` (1 for a missing weight, -0 for a missing
    bias: both leave every bit of the affine map's input unchanged)."""
    return param if param is not None else torch.full((n,), value, dtype=like.dtype, device=like.device)


class _AffineNorm(backend.Function):
    """layer_norm (rms_norm when not `center`) over the trailing dims of
    `shape`, with the affine map, in one row pass each way
    (softrep.ops.channels.layer_norm_rows and its gradient): the bits of
    `_affine_composite`, the separate ops.

    Outputs y and the rows' statistics m and s (not differentiable), which the
    backward needs with x to recompute xhat.  The weight's and the bias's
    gradients are their broadcast sums in the batch order, as the separate
    ops give them (`batchtree.broadcast_param_grad` of mul(gy, xhat) and gy).
    When a graph of the backward is requested (double backward), the backward
    is the autograd of `_affine_composite` instead: the same first-order bits,
    and a graph."""

    @staticmethod
    def forward(x, weight, bias, shape, eps, center):
        n = math.prod(shape)
        rows = x.detach().contiguous().reshape(-1, n)
        y, m, s = channels.layer_norm_rows(rows, _or_filled(weight, n, 1.0, x), _or_filled(bias, n, -0.0, x), eps,
                                           center)
        return y.reshape(x.shape), m, s

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias, ctx.shape, ctx.eps, ctx.center = inputs
        _, m, s = output
        # the parameters themselves (not their saved copies) key the batch
        # tree's nodes in a split batch, as in batchtree.ExpandParam
        ctx.weight, ctx.bias = weight, bias
        ctx.save_for_backward(x, weight, bias, m, s)
        ctx.mark_non_differentiable(m, s)
        ctx.set_materialize_grads(False)  # no zeros for the statistics' gradients

    @staticmethod
    def backward(ctx, gy, _gm, _gs):
        if gy is None:  # y unused
            return (None,) * 6
        x, weight, bias, m, s = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if torch.is_grad_enabled():
            inputs = [t for t, need in zip((x, weight, bias), (need_x, need_w, need_b)) if need]
            with torch.enable_grad():
                y = _affine_composite(x, weight, bias, ctx.shape, ctx.eps, ctx.center)
            grads = iter(torch.autograd.grad(y, inputs, gy, create_graph=True, allow_unused=True))
            return tuple(next(grads) if need else None for need in (need_x, need_w, need_b)) + (None,) * 3
        n = math.prod(ctx.shape)
        rows = x.detach().contiguous().reshape(-1, n)
        grows = gy.detach().contiguous().reshape(-1, n)
        filled = _or_filled(weight, n, 1.0, x)
        view = (1,) * (x.dim() - len(ctx.shape)) + tuple(ctx.shape)
        if (need_w or need_b) and rows.shape[0] == x.shape[0] and batchtree.broadcasts_over_batch(view, x) \
                and batchtree.current() is None:
            # each row is one sample of a whole batch: the affine gradients'
            # batch tree runs over the rows themselves
            dx, gw, gb = channels.layer_norm_rows_grad_of_batch(grows, rows, filled, m, s, ctx.center)
            return (dx.reshape(x.shape) if need_x else None, gw.reshape(weight.shape) if need_w else None,
                    gb.reshape(bias.shape) if need_b else None, None, None, None)
        dx, gw = channels.layer_norm_rows_grad(grows, rows, filled, m, s, ctx.center)

        over_batch = batchtree.broadcasts_over_batch(view, x)

        def param_grad(name, param, g):
            if over_batch:
                # the parameter is broadcast over each sample's rows, so its
                # gradient is `broadcast_param_grad`'s sums of each sample's
                # rows, then the batch tree, asked for directly
                per_sample = g.reshape(x.shape[0], rows.shape[0] // x.shape[0], *param.shape)
                return batchtree.param_grad_of_row_sums("normalization", name, param, per_sample)
            return g.reshape(param.shape)

        return (dx.reshape(x.shape) if need_x else None,
                param_grad("weight", ctx.weight, gw) if need_w else None,
                param_grad("bias", ctx.bias, grows) if need_b else None, None, None, None)


def _affine_norm(input, weight, bias, shape, eps, center):
    """`_AffineNorm` where its fused passes apply (a float input with elements,
    no torch.func transform), else the separate ops."""
    if input.numel() == 0 or backend.transforms_active():
        return _affine_composite(input, weight, bias, shape, eps, center)
    if batchtree.broadcasts_over_batch((1,) * (input.dim() - len(shape)) + tuple(shape), input) \
            and (weight is not None or bias is not None):
        batchtree.check_batch_rows("normalization", input)
    return backend.call(_AffineNorm, input, weight, bias, shape, eps, center)[0]


def normalized_shape_dims(fn, input, normalized_shape):
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        normalized_shape = (int(normalized_shape),)
    try:
        shape = tuple(int(s) for s in normalized_shape)
    except TypeError:
        raise TypeError(f"softrep.{fn}: argument 'normalized_shape' must be an int or a sequence of ints, "
                        f"got {normalized_shape!r}") from None
    k = len(shape)
    if k == 0:
        raise ValueError(f"softrep.{fn}: argument 'normalized_shape' must name at least one dim")
    if k > input.dim() or tuple(input.shape[input.dim() - k:]) != shape:
        raise ValueError(f"softrep.{fn}: argument 'normalized_shape' {shape} does not match the trailing dims "
                         f"of 'input' {tuple(input.shape)}")
    return shape, tuple(range(input.dim() - k, input.dim()))


@mixed.float32_compute("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dims (biased variance), then
    mul(., weight) and add(., bias) elementwise."""
    _check_input("layer_norm", input)
    shape, _ = normalized_shape_dims("layer_norm", input, normalized_shape)
    check_param("layer_norm", "weight", weight, input, shape)
    check_param("layer_norm", "bias", bias, input, shape)
    return _affine_norm(input, weight, bias, shape, check_eps("layer_norm", eps), True)


@mixed.float32_compute("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """div(x, sqrt(add(mean(mul(x, x)), eps))) over the trailing dims, then
    mul(., weight); eps None is torch.finfo(dtype).eps, as in torch."""
    _check_input("rms_norm", input)
    shape, _ = normalized_shape_dims("rms_norm", input, normalized_shape)
    check_param("rms_norm", "weight", weight, input, shape)
    eps = torch.finfo(input.dtype).eps if eps is None else check_eps("rms_norm", eps)
    return _affine_norm(input, weight, None, shape, eps, False)


def _channel_view(input):
    return (1, input.shape[1]) + (1,) * (input.dim() - 2)


@mixed.float32_compute("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Input (N, C, *): normalise each of the `num_groups` groups of C/num_groups
    consecutive channels over (channels of the group, *), elements in row-major
    order; then the per-channel affine map."""
    _check_input("group_norm", input, min_dim=2)
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral):
        raise TypeError(f"softrep.group_norm: argument 'num_groups' must be an int, got {type(num_groups).__name__}")
    channels = input.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise ValueError(f"softrep.group_norm: argument 'num_groups' ({num_groups}) must be positive and divide "
                         f"the number of channels ({channels})")
    check_param("group_norm", "weight", weight, input, (channels,))
    check_param("group_norm", "bias", bias, input, (channels,))
    eps = check_eps("group_norm", eps)
    per_group = channels // num_groups * math.prod(input.shape[2:])
    grouped = input.reshape(input.shape[0], int(num_groups), per_group)
    xhat = _normalize(grouped, (2,), eps, True)[0].reshape(input.shape)
    return affine(xhat, weight, bias, _channel_view(input))


def _update_running(stat, new, momentum):
    """stat <- add(mul(new, momentum), mul(stat, 1 - momentum)), in place; both
    factors are evaluated in binary64 and rounded once to the dtype."""
    with torch.no_grad():
        stat.copy_(E.add(E.mul(new, momentum), E.mul(stat, 1.0 - momentum)))


def _channel_sums(x):
    """(n, C): each sample's documented sum over its positions (dims 2, ...) per channel."""
    return summation.sum(x, tuple(range(2, x.dim()))) if x.dim() > 2 else x


def _batch_statistics(x, eps):
    """(m, ss, s, d) of batch_norm in training: per channel, each sample's sum
    over its positions, the batch tree over the samples of the global batch
    (`batchtree.batch_statistic`), divided by the global count; ss the same
    sum of mul(d, d), d = sub(x, m), and s = sqrt(add(div(ss, count), eps)).
    d is returned where the separate ops run (a graph is recorded), for the
    normalisation to reuse; None where the fused passes run."""
    fn = "batch_norm"
    view = _channel_view(x)
    count = float(batchtree.batch_count(fn, x) // x.shape[1])
    m = E.div(batchtree.batch_statistic(fn, _channel_sums(x)), count).reshape(view)
    if channels.fusable():
        # the same roundings as the separate ops, fused per channel
        # (softrep.ops.channels): no tensor of deviations, squares or
        # broadcast statistics
        d = None
        ss = channels.centered_square_sums(x, m)
    else:
        d = E.sub(x, m)
        ss = _channel_sums(E.mul(d, d))
    ss = batchtree.batch_statistic(fn, ss).reshape(view)
    return m, ss, E.sqrt(E.add(E.div(ss, count), eps)), d


def _batch_moments(x, eps):
    """(xhat, m, ss, s): `_batch_statistics` and xhat = div(sub(x, m), s)."""
    m, ss, s, d = _batch_statistics(x, eps)
    xhat = channels.normalize(x, m, s) if d is None else E.div(d, s)
    return xhat, m, ss, s


class _BatchNormalize(backend.Function):
    """batch_norm's normalisation in training (outputs xhat, m, ss, s; the last
    three not differentiable).  Every mean over (n, positions) is the batch
    order's: per-sample sums, the batch tree, div by the global count.

    Backward, g the gradient of xhat:
        c  = mean(mul(g, xhat))   t = sub(g, mean(g))   dx = div(sub(t, mul(xhat, c)), s)
    with both means in the batch order (on data-parallel ranks, over every
    rank's samples).  vmap: each vmapped sample is a batch of its own."""

    @staticmethod
    def forward(x, eps):
        return _batch_moments(x, eps)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ctx.eps = inputs
        xhat, m, ss, s = output
        ctx.save_for_backward(x, xhat, s)
        ctx.mark_non_differentiable(m, ss, s)

    @staticmethod
    def backward(ctx, g, _gm, _gss, _gs):
        x, xhat, s = ctx.saved_tensors
        if torch.is_grad_enabled():
            xhat, _, _, s = _batch_moments(x, ctx.eps)
        fn, view = "batch_norm", _channel_view(x)
        count = float(batchtree.batch_count(fn, x) // x.shape[1])
        c = E.div(batchtree.batch_statistic(fn, _channel_sums(E.mul(g, xhat))), count).reshape(view)
        mg = E.div(batchtree.batch_statistic(fn, _channel_sums(g)), count).reshape(view)
        if channels.fusable():  # no graph of the backward: one fused pass, same roundings
            return channels.normalize_grad(g, xhat, mg, c, s), None
        return E.div(E.sub(E.sub(g, mg), E.mul(xhat, c)), s), None

    @staticmethod
    def vmap(info, in_dims, x, eps):
        return batching.per_sample(_batch_moments, info, in_dims, x, eps)


def _batch_norm_composite(x, weight, bias, eps):
    """batch_norm in training as the separate ops: the reference of `_BatchNormAffine`."""
    return affine(_BatchNormalize.apply(x, eps)[0], weight, bias, _channel_view(x))


class _BatchNormAffine(backend.Function):
    """batch_norm in training with its affine map, y = add(mul(xhat, w), b):
    the bits of `_batch_norm_composite`, the separate ops, with the
    normalisation and the affine map in one pass
    (softrep.ops.channels.normalize_affine) and, in the backward, the sums
    of the affine map's and the normalisation's gradients in one row pass
    (channels.batch_norm_grad_sums).

    Outputs y and the statistics m, ss, with xhat and s for the backward
    (none of the four differentiable).  The weight's and the bias's
    gradients are per-sample sums then the batch tree (`batchtree.param_grad`,
    under the keys of the separate ops' `batchtree.expand_param`); the
    input's is `_BatchNormalize`'s, its two means in the batch order.  When a
    graph of the backward is requested (double backward), the backward is the
    autograd of `_batch_norm_composite` instead: the same first-order bits,
    and a graph."""

    @staticmethod
    def forward(x, weight, bias, eps):
        c = x.shape[1]
        # Nothing records here (torch's apply runs the forward without grad,
        # and backend.call runs it directly only when autograd has nothing
        # to record), so the fused passes apply.
        with torch.no_grad():
            m, ss, s, _ = _batch_statistics(x, eps)
            y, xhat = channels.normalize_affine(x, m, s, _or_filled(weight, c, 1.0, x), _or_filled(bias, c, -0.0, x))
        return y, m, ss, xhat, s

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias, ctx.eps = inputs
        _, m, ss, xhat, s = output
        ctx.weight, ctx.bias = weight, bias  # the keys of the batch tree's nodes in a split batch
        ctx.save_for_backward(x, weight, bias, xhat, s)
        ctx.mark_non_differentiable(m, ss, xhat, s)
        ctx.set_materialize_grads(False)  # no zeros for the statistics' gradients

    @staticmethod
    def backward(ctx, gy, _gm, _gss, _gxhat, _gs):
        if gy is None:  # y unused
            return (None,) * 4
        x, weight, bias, xhat, s = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if torch.is_grad_enabled():
            inputs = [t for t, need in zip((x, weight, bias), (need_x, need_w, need_b)) if need]
            with torch.enable_grad():
                y = _batch_norm_composite(x, weight, bias, ctx.eps)
            grads = iter(torch.autograd.grad(y, inputs, gy, create_graph=True, allow_unused=True))
            return tuple(next(grads) if need else None for need in (need_x, need_w, need_b)) + (None,)
        fn, c_count = "batch_norm", x.shape[1]
        w = _or_filled(weight, c_count, 1.0, x)
        sums = channels.batch_norm_grad_sums(gy, xhat, w)
        # sums[n, c, j], j = 0 .. 3: the sums of gy, mul(gy, xhat), gxhat and mul(gxhat, xhat)
        if batchtree.current() is None:
            # The whole batch: a statistic and a parameter's gradient are both
            # the root of the batch tree, which adds element by element over
            # the samples, so the four trees take one launch.
            roots = batchtree.tree_sum(sums.reshape(sums.shape[0], -1)).reshape(c_count, 4).t().contiguous()

            def statistic(j):
                return roots[j]

            def gradient(name, param, j):
                return roots[j]
        else:
            def statistic(j):
                return batchtree.batch_statistic(fn, sums[..., j].contiguous())

            def gradient(name, param, j):
                return batchtree.param_grad("normalization", name, param, sums[..., j].contiguous())
        gx = gw = gb = None
        if need_x:
            view = _channel_view(x)
            count = float(batchtree.batch_count(fn, x) // c_count)
            c = E.div(statistic(3), count).reshape(view)
            mg = E.div(statistic(2), count).reshape(view)
            gx = channels.normalize_grad(gy, xhat, mg, c, s, w)
        if need_w:
            gw = gradient("weight", ctx.weight, 1)
        if need_b:
            gb = gradient("bias", ctx.bias, 0)
        return gx, gw, gb, None


@mixed.float32_compute("batch_norm")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Per channel (dim 1) over (N, *).  Training: normalise with the batch's
    mean and biased variance, and update running_mean / running_var (if given)
    in place with the batch mean and the unbiased variance.  Eval: normalise with
    the running statistics: div(sub(x, running_mean), sqrt(add(running_var, eps)))."""
    fn = "batch_norm"
    _check_input(fn, input, min_dim=2)
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        check_param(fn, name, t, input, (channels,))
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"softrep.{fn}: arguments 'running_mean' and 'running_var' must both be tensors or both None")
    if momentum is None:
        raise TypeError(f"softrep.{fn}: argument 'momentum' must be a number; for a cumulative average pass "
                        "1 / num_batches_tracked (what torch's modules do with momentum=None)")
    momentum = _number(fn, "momentum", momentum)
    eps = check_eps(fn, eps)
    view = _channel_view(input)
    if not training:
        if running_mean is None:
            raise ValueError(f"softrep.{fn}: argument 'running_mean' must be defined in evaluation mode "
                             "(training=False)")
        s = E.sqrt(E.add(running_var.reshape(view), eps))
        return affine(E.div(E.sub(input, running_mean.reshape(view)), s), weight, bias, view)
    n = batchtree.batch_count(fn, input) // channels if channels else 0
    if n == 1:
        raise ValueError(f"softrep.{fn}: expected more than 1 value per channel when training, got 'input' of "
                         f"shape {tuple(input.shape)}")
    if input.numel() == 0:
        return affine(E.mul(input, 1.0), weight, bias, view)
    if (weight is not None or bias is not None) and not backend.transforms_active():
        batchtree.check_batch_rows("normalization", input)  # as the separate ops' expand_param
        y, m, ss = backend.call(_BatchNormAffine, input, weight, bias, eps)[:3]
    else:
        xhat, m, ss = _BatchNormalize.apply(input, eps)[:3]
        y = affine(xhat, weight, bias, view)
    if running_mean is not None:
        count = batchtree.batch_count(fn, input) // channels
        _update_running(running_mean, m.reshape(channels), momentum)
        # unbiased variance: div(ss, n - 1)
        _update_running(running_var, E.div(ss.reshape(channels), float(count - 1)), momentum)
    return y


__all__ = ["batch_norm", "layer_norm", "rms_norm", "group_norm"]
