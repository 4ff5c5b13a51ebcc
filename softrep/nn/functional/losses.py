# softrep: no kernels
"""cross_entropy, nll_loss, mse_loss and binary_cross_entropy_with_logits with
torch's signatures and semantics (weight, ignore_index, label_smoothing,
probability targets, pos_weight, reduction).

Each loss is a fixed sequence of softrep ops rounded to nearest (the order is
in docs/order.md, "Losses"); gathers, scatters, masks and `torch.where` only
move values.  nll_loss and binary_cross_entropy_with_logits are autograd
Functions with torch's closed-form backward written as softrep ops;
cross_entropy is log_softmax followed by those; mse_loss is a composition.
Python-number constants (1 - label_smoothing, label_smoothing / C, eps, ...)
are evaluated in binary64 and rounded once to the input's dtype.
"""

import numbers
import warnings

import torch

from ...ops import backend, batching, batchtree, mixed
from ...ops import elementwise as E
from ...ops import math as M
from ...ops import reduction as R
from ...ops import softmax as S
from ...ops.validate import broadcast_shapes
from .activations import log_softmax

_FLOAT = (torch.float32, torch.float64)
_REDUCTIONS = ("none", "mean", "sum")


def _check_float(fn, name, t, like=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _FLOAT:
        raise TypeError(f"softrep.{fn}: argument '{name}' has dtype {t.dtype}; expected torch.float32 or "
                        "torch.float64")
    if like is not None:
        if t.dtype != like.dtype:
            raise TypeError(f"softrep.{fn}: argument '{name}' has dtype {t.dtype} but 'input' has {like.dtype}; "
                            "softrep does not promote dtypes")
        if t.device != like.device:
            raise ValueError(f"softrep.{fn}: argument '{name}' is on {t.device} but 'input' is on {like.device}")


def _check_reduction(fn, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"softrep.{fn}: argument 'reduction' must be one of 'none', 'mean', 'sum'; "
                         f"got {reduction!r}")


def _no_grad_arg(fn, name, t):
    if t is not None and t.requires_grad:
        raise ValueError(f"softrep.{fn}: argument '{name}' requires grad, but the loss is not differentiable "
                         "with respect to it (as in torch)")


def _reduce(fn, loss, reduction):
    """'sum' and 'mean' of an elementwise loss in the batch order (dim 0 the
    sample dim, docs/order.md "The batch order"); 'mean' divides by the number
    of elements of the global batch."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return batchtree.batch_total(fn, loss, "loss")
    return batchtree.batch_mean(fn, loss, "loss")


# ---------------------------------------------------------------- nll_loss

def _class_layout(fn, input, target):
    """Check a class-index target against input (C,), (N, C) or (N, C, d1, ...);
    return the class dim."""
    if input.dim() == 0:
        raise ValueError(f"softrep.{fn}: argument 'input' must have at least 1 dim (the classes)")
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'target' must be a torch.Tensor, got {type(target).__name__}")
    if target.dtype not in (torch.int64, torch.uint8):
        raise TypeError(f"softrep.{fn}: argument 'target' has dtype {target.dtype}; class indices must be "
                        "torch.int64 (or torch.uint8), probabilities must have the input's float dtype and shape")
    if target.device != input.device:
        raise ValueError(f"softrep.{fn}: argument 'target' is on {target.device} but 'input' is on {input.device}")
    class_dim = 0 if input.dim() == 1 else 1
    expected = tuple(s for i, s in enumerate(input.shape) if i != class_dim)
    if tuple(target.shape) != expected:
        raise ValueError(f"softrep.{fn}: argument 'target' has shape {tuple(target.shape)}; for 'input' of shape "
                         f"{tuple(input.shape)} class indices must have shape {expected}")
    return class_dim


def _check_class_weight(fn, weight, input, class_dim):
    if weight is None:
        return
    _check_float(fn, "weight", weight, input)
    classes = input.shape[class_dim]
    if tuple(weight.shape) != (classes,):
        raise ValueError(f"softrep.{fn}: argument 'weight' has shape {tuple(weight.shape)}; expected ({classes},), "
                         "one weight per class")
    _no_grad_arg(fn, "weight", weight)


def _ignore_index(fn, ignore_index):
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise TypeError(f"softrep.{fn}: argument 'ignore_index' must be an int, got {type(ignore_index).__name__}")
    return int(ignore_index)


def _target_out_of_bounds(fn, value, classes, ignore_index):
    raise IndexError(f"softrep.{fn}: argument 'target' holds {value}, out of bounds for "
                     f"{classes} classes (and not ignore_index={ignore_index})")


def _targets(target, weight, ignore_index, classes, dtype, fn):
    target = target.long()
    kept = target != ignore_index
    bad = kept & ((target < 0) | (target >= classes))
    if bool(bad.any()):
        _target_out_of_bounds(fn, int(target[bad][0]), classes, ignore_index)
    index = torch.where(kept, target, torch.zeros_like(target))
    zero = torch.zeros((), dtype=dtype, device=target.device)
    if weight is None:
        w_t = torch.where(kept, torch.ones((), dtype=dtype, device=target.device), zero)
    else:
        w_t = torch.where(kept, weight.detach()[index], zero)
    return index, kept, w_t


class _Targets(backend.Function):
    """(index, kept, w_t) of `gather_targets`; no gradient.  A Function so that
    the bounds check sees the plain target tensor under torch.func.vmap too."""

    @staticmethod
    def forward(target, weight, ignore_index, classes, dtype, fn):
        return _targets(target, weight, ignore_index, classes, dtype, fn)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(*output)

    @staticmethod
    def backward(ctx, *grads):
        return None, None, None, None, None, None

    @staticmethod
    def vmap(info, in_dims, target, weight, ignore_index, classes, dtype, fn):
        if in_dims[1] is not None:
            return batching.per_sample(_targets, info, in_dims, target, weight, ignore_index, classes, dtype, fn)
        # elementwise in the target: the batch dim stays in place
        return _targets(target, weight, ignore_index, classes, dtype, fn), (in_dims[0],) * 3


def gather_targets(fn, logp, target, weight, ignore_index, class_dim):
    """(index, kept, w_t): the class index of every target position (0 where
    ignored), the mask of kept positions, and each position's weight (weight[t],
    or 1; 0 where ignored)."""
    return backend.call(_Targets, target, weight, ignore_index, logp.shape[class_dim], logp.dtype, fn)


def _nll_weight_total(fn, kept, w_t, weighted, class_dim):
    """The divisor of 'mean': the sum of the kept positions' weights, in the batch
    order.  In a split batch it must be known before every slice is seen: it is
    the global number of positions, so class weights and ignored targets raise."""
    if class_dim == 0:
        return R.sum(w_t)
    if batchtree.in_slice():
        if weighted or not bool(kept.all()):
            raise ValueError(f"softrep.{fn}: reduction='mean' with class weights or ignored targets divides by a "
                             "total over the whole global batch, which a split batch (micro-batches, "
                             "data-parallel ranks) does not know while its first slice runs; use reduction='sum' "
                             "and divide by your own global total, or no split")
        return float(batchtree.batch_count(fn, w_t))
    if not weighted and w_t.numel() <= _EXACT_COUNT.get(w_t.dtype, 0) and batching.values_readable(kept):
        # a sum of ones and zeros: every partial of the batch tree is an
        # integer no larger than the number of positions, so exact, and the
        # total is the number of kept positions whatever the order
        return float(int(kept.sum()))
    return batchtree.batch_total(fn, w_t)


# Integers up to these are exact in the dtype (2^24 for float32, 2^53 for float64).
_EXACT_COUNT = {torch.float32: 2**24, torch.float64: 2**53}


def _nll_forward(logp, index, kept, w_t, weighted, class_dim, reduction, fn="nll_loss", key="loss"):
    picked = logp.gather(class_dim, index.unsqueeze(class_dim)).squeeze(class_dim)
    loss = E.neg(E.mul(picked, w_t) if weighted else picked)
    loss = torch.where(kept, loss, torch.zeros_like(loss))
    if reduction == "none":
        return loss
    if class_dim == 0:  # one sample: no batch
        return E.div(R.sum(loss), R.sum(w_t)) if reduction == "mean" else R.sum(loss)
    if reduction == "sum":
        return batchtree.batch_total(fn, loss, key)
    total = _nll_weight_total(fn, kept, w_t, weighted, class_dim)
    return E.div(batchtree.batch_total(fn, loss, key, lambda root: E.div(root, total)), total)


class _NLL(backend.Function):
    """Forward: loss = neg(mul(logp[t], w_t)) per position (neg(logp[t]) without
    weight; +0 where ignored); 'sum': sum(loss); 'mean': div(sum(loss), sum(w_t)).
    Backward (torch's order): coef = neg(div(g, total)) for 'mean', neg(g)
    otherwise, then mul(coef, w_t) with a weight; +0 where ignored; scattered
    (copied) into zeros at the target classes.  vmap: one call per sample."""

    @staticmethod
    def forward(logp, index, kept, w_t, weighted, class_dim, reduction, fn, key):
        return _nll_forward(logp, index, kept, w_t, weighted, class_dim, reduction, fn, key)

    @staticmethod
    def setup_context(ctx, inputs, output):
        logp, index, kept, w_t, weighted, class_dim, reduction, fn, _ = inputs
        ctx.save_for_backward(index, kept, w_t)
        ctx.meta = (weighted, class_dim, reduction, logp.shape, fn)

    @staticmethod
    def backward(ctx, g):
        index, kept, w_t = ctx.saved_tensors
        weighted, class_dim, reduction, shape, fn = ctx.meta
        if reduction == "mean":  # the forward's total
            coef = E.neg(E.div(g, _nll_weight_total(fn, kept, w_t, weighted, class_dim)))
        else:
            coef = E.neg(g)
        if weighted:
            coef = E.mul(coef, w_t)
        coef = coef.expand(index.shape)
        coef = torch.where(kept, coef, torch.zeros_like(coef))
        grad = torch.zeros(shape, dtype=coef.dtype, device=coef.device)
        if torch.is_grad_enabled():  # a graph of the backward: scatter's own autograd
            grad = grad.scatter(class_dim, index.unsqueeze(class_dim), coef.unsqueeze(class_dim))
        else:  # the same copies into the fresh zeros, without a second tensor
            grad.scatter_(class_dim, index.unsqueeze(class_dim), coef.unsqueeze(class_dim))
        return grad, None, None, None, None, None, None, None, None

    @staticmethod
    def vmap(info, in_dims, *args):
        return batching.per_sample(_nll_forward, info, in_dims, *args)


def _nll(fn, logp, target, weight, ignore_index, reduction, class_dim, key="loss"):
    index, kept, w_t = gather_targets(fn, logp, target, weight, ignore_index, class_dim)
    return backend.call(_NLL, logp, index, kept, w_t, weight is not None, class_dim, reduction, fn, key), kept, w_t


@mixed.float32_compute("nll_loss")
def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log likelihood of log-probabilities `input` (C,), (N, C) or
    (N, C, d1, ...) at class indices `target`; torch's weight, ignore_index and
    reduction ('mean' divides by the sum of the kept targets' weights; NaN when
    none is kept)."""
    fn = "nll_loss"
    _check_float(fn, "input", input)
    _check_reduction(fn, reduction)
    ignore_index = _ignore_index(fn, ignore_index)
    class_dim = _class_layout(fn, input, target)
    _check_class_weight(fn, weight, input, class_dim)
    return _nll(fn, input, target, weight, ignore_index, reduction, class_dim)[0]


# ---------------------------------------------------------------- cross_entropy

def _label_smoothing(fn, value):
    value = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None
    if value is None:
        raise TypeError(f"softrep.{fn}: argument 'label_smoothing' must be a float")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"softrep.{fn}: argument 'label_smoothing' must be between 0.0 and 1.0, got {value}")
    return value


@mixed.float32_compute("cross_entropy")
def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (dim 1, or 0 for a 1-D input), then the
    negative log likelihood of class-index targets (torch's weight,
    ignore_index, label_smoothing) or the cross entropy with probability
    targets (same shape and dtype as input)."""
    fn = "cross_entropy"
    _check_float(fn, "input", input)
    _check_reduction(fn, reduction)
    ignore_index = _ignore_index(fn, ignore_index)
    smoothing = _label_smoothing(fn, label_smoothing)
    if isinstance(target, torch.Tensor) and target.dtype.is_floating_point:
        return _cross_entropy_probs(fn, input, target, weight, ignore_index, reduction, smoothing)
    class_dim = _class_layout(fn, input, target)
    _check_class_weight(fn, weight, input, class_dim)
    if weight is None and smoothing == 0.0 and reduction != "none" and batchtree.current() is None \
            and _INT64_MIN <= ignore_index <= _INT64_MAX and input.shape[0] <= _EXACT_COUNT.get(input.dtype, 0):
        # (the count of kept positions, the mean's divisor, is then exact in the dtype)
        dtype = S.light_cross_entropy_dtype(input, target)
        if dtype is not None:
            return backend.call(_CrossEntropyRows, input, target, ignore_index, reduction, dtype)[0]
    return _cross_entropy_ops(fn, input, target, weight, ignore_index, reduction, smoothing, class_dim)


_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


class _CrossEntropyRows(backend.Function):
    """cross_entropy of (N, C) logits at class indices, 'mean' or 'sum', without
    class weights, label smoothing or a split batch, as one kernel each way
    (softrep.ops.softmax.cross_entropy_rows): log_softmax and nll_loss's ops,
    the same roundings in the same order, so the bits of the separate ops.
    Outputs (loss, logp, kept count); logp is not differentiable.  With a graph
    of the backward (create_graph) the backward differentiates the separate
    ops instead."""

    @staticmethod
    def forward(x, target, ignore_index, reduction, dtype):
        loss, logp, first_bad, kept = S.cross_entropy_rows(dtype, x, target, ignore_index, reduction == "mean")
        if first_bad >= 0:
            _target_out_of_bounds("cross_entropy", int(target[first_bad]), x.shape[1], ignore_index)
        return loss, logp, kept

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, target, ctx.ignore_index, ctx.reduction, ctx.dtype = inputs
        _, logp, ctx.kept = output
        ctx.mark_non_differentiable(logp)
        ctx.set_materialize_grads(False)  # no zeros for logp's and kept's gradients
        ctx.save_for_backward(x, target, logp)

    @staticmethod
    def backward(ctx, g, *unused):
        if g is None:  # the loss unused
            return None, None, None, None, None
        x, target, logp = ctx.saved_tensors
        if torch.is_grad_enabled():  # a graph of the backward: the separate ops record it
            with torch.enable_grad():
                loss = _cross_entropy_ops("cross_entropy", x, target, None, ctx.ignore_index, ctx.reduction, 0.0, 1)
            return torch.autograd.grad(loss, x, g, create_graph=True)[0], None, None, None, None
        dx = S.cross_entropy_grad_rows(ctx.dtype, logp, target, g, ctx.ignore_index, ctx.kept,
                                       ctx.reduction == "mean")
        return dx, None, None, None, None


def _cross_entropy_ops(fn, input, target, weight, ignore_index, reduction, smoothing, class_dim):
    """cross_entropy with class-index targets as its separate ops."""
    logp = log_softmax(input, class_dim)
    # with label smoothing the loss is two batch totals, so neither is reported as the loss
    nll, kept, w_t = _nll(fn, logp, target, weight, ignore_index, reduction, class_dim,
                          "loss" if smoothing == 0.0 else None)
    if smoothing == 0.0:
        return nll
    # torch's label smoothing: (1 - ls) * nll + (ls / C) * smooth, where smooth is
    # the (weighted) sum of -logp over the classes, reduced like nll.
    classes = input.shape[class_dim]
    terms = logp if weight is None else E.mul(logp, weight.reshape(_class_view(input, class_dim)))
    smooth = E.neg(R.sum(terms, class_dim))
    smooth = torch.where(kept, smooth, torch.zeros_like(smooth))
    if reduction == "mean":
        if class_dim == 0:
            smooth = E.div(R.sum(smooth), R.sum(w_t))
        else:
            smooth = E.div(batchtree.batch_total(fn, smooth),
                           _nll_weight_total(fn, kept, w_t, weight is not None, class_dim))
    elif reduction == "sum":
        smooth = R.sum(smooth) if class_dim == 0 else batchtree.batch_total(fn, smooth)
    return E.add(E.mul(nll, 1.0 - smoothing), E.mul(smooth, smoothing / classes))


def _class_view(input, class_dim):
    view = [1] * input.dim()
    view[class_dim] = input.shape[class_dim]
    return view


def _cross_entropy_probs(fn, input, target, weight, ignore_index, reduction, smoothing):
    """-(sum over classes of logp * p * weight) with p = target, smoothed:
    add(mul(p, 1 - ls), ls / C).  'mean' divides the sum over every element by
    numel / C (NaN for an empty input, as torch)."""
    _check_float(fn, "target", target, input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"softrep.{fn}: argument 'target' has shape {tuple(target.shape)}; probability targets "
                         f"must have the shape of 'input' {tuple(input.shape)}")
    if ignore_index != -100:
        raise ValueError(f"softrep.{fn}: argument 'ignore_index' is not supported for probability targets")
    if input.dim() == 0:
        raise ValueError(f"softrep.{fn}: argument 'input' must have at least 1 dim (the classes)")
    class_dim = 0 if input.dim() == 1 else 1
    _check_class_weight(fn, weight, input, class_dim)
    classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    if smoothing > 0.0:
        target = E.add(E.mul(target, 1.0 - smoothing), smoothing / classes)
    terms = E.mul(logp, target)
    if weight is not None:
        terms = E.mul(terms, weight.reshape(_class_view(input, class_dim)))
    if reduction == "none":
        return E.neg(R.sum(terms, class_dim))
    if class_dim == 0:
        total = E.neg(R.sum(terms))
        return total if reduction == "sum" else E.div(total, float(input.numel() // classes) if classes else 0.0)
    total = E.neg(batchtree.batch_total(fn, terms))
    if reduction == "sum":
        return total
    return E.div(total, float(batchtree.batch_count(fn, terms) // classes) if classes else 0.0)


# ---------------------------------------------------------------- mse_loss

@mixed.float32_compute("mse_loss")
def mse_loss(input, target, reduction="mean"):
    """square(sub(input, target)) reduced; broadcasting (with torch's warning)."""
    fn = "mse_loss"
    _check_float(fn, "input", input)
    _check_float(fn, "target", target, input)
    _check_reduction(fn, reduction)
    if target.shape != input.shape:
        warnings.warn(f"softrep.mse_loss: 'target' size {tuple(target.shape)} differs from 'input' size "
                      f"{tuple(input.shape)}; they are broadcast, which is likely not what you want", stacklevel=2)
    return _reduce(fn, E.square(E.sub(input, target)), reduction)


# ---------------------------------------------------------------- binary_cross_entropy_with_logits

def _log1p_small(e):
    """log1p(e) for e in [0, 1]: the correctly rounded softrep.log1p where it has
    a kernel for the dtype (float32); otherwise (float64) Goldberg's
    mul(e, div(log(u), sub(u, 1))) with u = add(e, 1) (sub exact), and e itself
    where u == 1 (a few ulps)."""
    if e.dtype == torch.float32:
        return M.log1p(e)
    u = E.add(e, 1.0)
    one = u == 1
    ratio = E.div(M.log(u), E.sub(torch.where(one, torch.full_like(u, 2.0), u), 1.0))
    return torch.where(one, e, E.mul(e, ratio))


def _log_sigmoid(x):
    """torch's sub(min(x, 0), log1p(exp(-|x|)))."""
    lower = torch.where(x < 0, x, torch.zeros_like(x))
    return E.sub(lower, _log1p_small(M.exp(E.neg(E.abs(x)))))


def _bce_forward(x, y, weight, pos_weight, reduction):
    ls = _log_sigmoid(x)
    if pos_weight is not None:
        ls = E.mul(ls, E.add(E.mul(E.sub(pos_weight, 1.0), y), 1.0))
    loss = E.sub(E.mul(E.sub(1.0, y), x), ls)
    if weight is not None:
        loss = E.mul(loss, weight)
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


class _BCEWithLogits(backend.Function):
    """Forward (torch's order):
        ls   = log_sigmoid(x)
        ls   = mul(ls, add(mul(sub(pos_weight, 1), y), 1))      (with pos_weight)
        loss = sub(mul(sub(1, y), x), ls)
        loss = mul(loss, weight)                                 (with weight)
    then reduced (sum / mean in the documented order).
    Backward (torch's closed form):
        dx = sub(sigmoid(x), y), or with pos_weight t = mul(pos_weight, y):
             sub(mul(sub(add(t, 1), y), sigmoid(x)), t)
        dy = neg(x), or with pos_weight sub(log_sigmoid(neg(x)), mul(log_sigmoid(x), pos_weight))
        each then mul(., g), mul(., weight), and div(., numel) for 'mean'.
    vmap: one call per sample."""

    @staticmethod
    def forward(x, y, weight, pos_weight, reduction):
        return _bce_forward(x, y, weight, pos_weight, reduction)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, weight, pos_weight, ctx.reduction = inputs
        ctx.save_for_backward(x, y, weight, pos_weight)

    @staticmethod
    def vmap(info, in_dims, *args):
        return batching.per_sample(_bce_forward, info, in_dims, *args)

    @staticmethod
    def backward(ctx, g):
        x, y, weight, pos_weight = ctx.saved_tensors

        def finish(grad):
            grad = E.mul(grad, g)
            if weight is not None:
                grad = E.mul(grad, weight)
            if ctx.reduction == "mean":
                grad = E.div(grad, float(batchtree.batch_count("binary_cross_entropy_with_logits", x)))
            return grad.expand(x.shape) if grad.shape != x.shape else grad

        dx = dy = None
        if ctx.needs_input_grad[0]:
            if pos_weight is None:
                dx = E.sub(M.sigmoid(x), y)
            else:
                t = E.mul(pos_weight, y)
                dx = E.sub(E.mul(E.sub(E.add(t, 1.0), y), M.sigmoid(x)), t)
            dx = finish(dx)
        if ctx.needs_input_grad[1]:
            if pos_weight is None:
                dy = E.neg(x)
            else:
                dy = E.sub(_log_sigmoid(E.neg(x)), E.mul(_log_sigmoid(x), pos_weight))
            dy = finish(dy)
        return dx, dy, None, None, None


@mixed.float32_compute("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """torch's numerically stable sigmoid + binary cross entropy; `weight`
    broadcasts to the input, `pos_weight` (weight of the positive term) too,
    usually one value per class along the last dim."""
    fn = "binary_cross_entropy_with_logits"
    _check_float(fn, "input", input)
    _check_float(fn, "target", target, input)
    _check_reduction(fn, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"softrep.{fn}: argument 'target' has shape {tuple(target.shape)}; it must be the shape "
                         f"of 'input' {tuple(input.shape)}")
    for name, t in (("weight", weight), ("pos_weight", pos_weight)):
        if t is None:
            continue
        _check_float(fn, name, t, input)
        try:
            shape = broadcast_shapes(t.shape, input.shape)
        except RuntimeError:
            shape = None
        if shape != input.shape:
            raise ValueError(f"softrep.{fn}: argument '{name}' of shape {tuple(t.shape)} does not broadcast to "
                             f"'input' {tuple(input.shape)}")
        _no_grad_arg(fn, name, t)
    return backend.call(_BCEWithLogits, input, target, weight, pos_weight, reduction)


__all__ = ["cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits"]
