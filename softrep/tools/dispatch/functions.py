# softrep: no kernels
"""The torch functions `softrep.reproducible()` computes with softrep's own
functions, above autograd.

The dispatch mode (mode.py) sees aten ops below autograd.  By then torch's
autograd has already chosen the backward: `F.linear` on (N, T, K) rows records
an `AddmmBackward`, whose weight gradient reaches the mode as one `aten.mm`
over all N*T rows; the sample dim is gone, so the mode cannot follow the batch
order of docs/order.md (per-sample partials, then the tree over the sample
positions) that `softrep.linear`'s own backward follows.  The torch functions
listed in `ROUTES` are therefore caught one level higher, by a
TorchFunctionMode, and replaced by the softrep function of the same name: the
autograd graph records softrep's Function, and the backward has the softrep
API's bits (split-invariant where the softrep function is).

A call is routed only when softrep's function computes exactly what torch's
computes with these arguments (`accepts` returns None): plain tensors (no
tensor subclass with a `__torch_function__` of its own), every floating
operand float32 or float64 of one dtype on one device, options softrep has,
torch.autocast off for that device, and no torch.func transform active.  Any other call runs torch's function
unchanged, and its aten ops go through the dispatch mode as before (computed
by softrep, exact, or refused with strict=True).  A call that softrep's
function rejects with TypeError, ValueError or NotImplementedError before
computing is also handed to torch, so the error a user sees for a bad argument
is torch's own.

Calls are caught only at the top level: inside a torch function that is not
routed (`F.multi_head_attention_forward`, say), the calls it makes run as
torch's code, under the dispatch mode alone.
"""

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .ops import SOFTREP_DTYPES


def _plain_types(types):
    """No operand type defines its own __torch_function__ (nn.Parameter does not):
    a subclass (DTensor, a user's wrapper) keeps torch's dispatch to itself."""
    return all(getattr(t, "__torch_function__", None) in _PLAIN_TORCH_FUNCTIONS for t in types)


_PLAIN_TORCH_FUNCTIONS = (torch.Tensor.__torch_function__, torch._C._disabled_torch_function_impl)


def _floats(*floats, integers=()):
    """None when `floats` (tensors or None) are all float32 or float64 of one dtype
    on one device and `integers` (tensors or None) are integer index tensors on
    that device; else the reason softrep would not compute what torch does."""
    ts = [t for t in floats if t is not None]
    if not ts or not all(isinstance(t, torch.Tensor) for t in ts):
        return "an operand that is not a tensor"
    dtypes = {t.dtype for t in ts}
    if len(dtypes) != 1 or ts[0].dtype not in SOFTREP_DTYPES:
        return f"operand dtypes {sorted(map(str, dtypes))} (softrep computes float32 or float64, not promoted)"
    idx = [t for t in integers if t is not None]
    if not all(isinstance(t, torch.Tensor) and not t.is_floating_point() and not t.is_complex() for t in idx):
        return "an index operand that is not an integer tensor"
    if len({t.device for t in ts + idx}) != 1:
        return "operands on several devices"
    if torch.is_autocast_enabled(ts[0].device.type):
        # autocast casts below this level, in the dispatcher: torch's function
        # computes in the autocast dtype, which the aten path refuses or runs
        return "torch.autocast is on"
    return None


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _ints(value, n):
    """An int or a sequence of n ints (stride, padding, dilation)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, (tuple, list)) and len(value) == n and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)


# --------------------------------------------------------------------------- the routes


def _softrep_functional():
    from ...nn import functional as SNF

    return SNF


def _linear_accepts(input, weight, bias=None):
    return _floats(input, weight, bias)


def _linear_run(input, weight, bias=None):
    return _softrep_functional().linear(input, weight, bias)


def _conv_accepts(dims):
    def accepts(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        # padding='same'/'valid' is left to torch: softrep's conv takes numbers
        if not (_ints(stride, dims) and _ints(padding, dims) and _ints(dilation, dims)):
            return "stride, padding or dilation not given as ints"
        if not isinstance(groups, int) or isinstance(groups, bool):
            return "groups not an int"
        return _floats(input, weight, bias)

    return accepts


def _conv_run(name):
    def run(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        return getattr(_softrep_functional(), name)(input, weight, bias, stride, padding, dilation, groups)

    return run


def _embedding_accepts(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                       sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        return "max_norm, scale_grad_by_freq or sparse (not in softrep.embedding)"
    return _floats(weight, integers=(input,))


def _embedding_run(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                   sparse=False):
    return _softrep_functional().embedding(input, weight, padding_idx)


def _layer_norm_accepts(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if not _number(eps):
        return "eps not a number"
    return _floats(input, weight, bias)


def _layer_norm_run(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _softrep_functional().layer_norm(input, normalized_shape, weight, bias, eps)


def _rms_norm_accepts(input, normalized_shape, weight=None, eps=None):
    if eps is not None and not _number(eps):
        return "eps not a number"
    return _floats(input, weight)


def _rms_norm_run(input, normalized_shape, weight=None, eps=None):
    return _softrep_functional().rms_norm(input, normalized_shape, weight, eps)


def _group_norm_accepts(input, num_groups, weight=None, bias=None, eps=1e-5):
    if not _number(eps):
        return "eps not a number"
    return _floats(input, weight, bias)


def _group_norm_run(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _softrep_functional().group_norm(input, num_groups, weight, bias, eps)


def _batch_norm_accepts(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                        eps=1e-5):
    if not (_number(eps) and (momentum is None or _number(momentum)) and isinstance(training, bool)):
        return "eps, momentum or training of another type"
    return _floats(input, running_mean, running_var, weight, bias)


def _batch_norm_run(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                    eps=1e-5):
    return _softrep_functional().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                                            eps)


def _sdpa_accepts(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                  enable_gqa=False):
    if dropout_p:
        # torch draws the mask from its own generator inside the fused kernel
        return "attention dropout"
    if scale is not None and not _number(scale):
        return "scale not a number"
    if attn_mask is not None and not isinstance(attn_mask, torch.Tensor):
        return "attn_mask not a tensor"
    # a boolean mask selects; a floating one is added, so it must share the dtype
    mask = attn_mask if attn_mask is not None and attn_mask.dtype != torch.bool else None
    return _floats(query, key, value, mask)


def _sdpa_run(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return _softrep_functional().scaled_dot_product_attention(query, key, value, attn_mask=attn_mask,
                                                              is_causal=is_causal, scale=scale,
                                                              enable_gqa=enable_gqa)


_REDUCTIONS = ("mean", "sum", "none")


def _legacy_reduction(size_average, reduce, reduction):
    """torch's reduction from its deprecated size_average/reduce arguments, or
    None when they are given (left to torch, which also warns about them)."""
    if size_average is not None or reduce is not None:
        return None
    return reduction if reduction in _REDUCTIONS else None


def _class_target_accepts(input, target, weight):
    if not isinstance(target, torch.Tensor) or target.is_floating_point():
        return "probability targets"  # class indices only: their order is the one the tests check
    return _floats(input, weight, integers=(target,))


def _cross_entropy_accepts(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                           reduction="mean", label_smoothing=0.0):
    if _legacy_reduction(size_average, reduce, reduction) is None:
        return "size_average/reduce or an unknown reduction"
    if label_smoothing != 0.0:
        return "label_smoothing"
    return _class_target_accepts(input, target, weight)


def _cross_entropy_run(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                       reduction="mean", label_smoothing=0.0):
    return _softrep_functional().cross_entropy(input, target, weight, ignore_index, reduction)


def _nll_loss_accepts(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                      reduction="mean"):
    if _legacy_reduction(size_average, reduce, reduction) is None:
        return "size_average/reduce or an unknown reduction"
    return _class_target_accepts(input, target, weight)


def _nll_loss_run(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean"):
    return _softrep_functional().nll_loss(input, target, weight, ignore_index, reduction)


def _mse_loss_accepts(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _legacy_reduction(size_average, reduce, reduction) is None:
        return "size_average/reduce or an unknown reduction"
    if weight is not None:
        return "weight (not in softrep.mse_loss)"
    if isinstance(target, torch.Tensor) and target.shape != input.shape:
        return "broadcast target"  # torch warns and broadcasts; left to it
    return _floats(input, target)


def _mse_loss_run(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _softrep_functional().mse_loss(input, target, reduction)


class Route:
    """One torch function computed by its softrep function."""

    def __init__(self, name, accepts, run):
        self.name, self.accepts, self.run = name, accepts, run


def _build_routes():
    table = [
        (F.linear, _linear_accepts, _linear_run),
        (F.conv1d, _conv_accepts(1), _conv_run("conv1d")),
        (F.conv2d, _conv_accepts(2), _conv_run("conv2d")),
        (F.embedding, _embedding_accepts, _embedding_run),
        (F.layer_norm, _layer_norm_accepts, _layer_norm_run),
        (F.rms_norm, _rms_norm_accepts, _rms_norm_run),
        (F.group_norm, _group_norm_accepts, _group_norm_run),
        (F.batch_norm, _batch_norm_accepts, _batch_norm_run),
        (F.scaled_dot_product_attention, _sdpa_accepts, _sdpa_run),
        (F.cross_entropy, _cross_entropy_accepts, _cross_entropy_run),
        (F.nll_loss, _nll_loss_accepts, _nll_loss_run),
        (F.mse_loss, _mse_loss_accepts, _mse_loss_run),
    ]
    return {fn: Route(f"torch.nn.functional.{name}", accepts, run)
            for fn, accepts, run in table for name in [fn.__name__]}


ROUTES = _build_routes()

# The keys are the objects torch passes to __torch_function__: F.conv1d is
# torch.conv1d, F.linear is torch._C._nn.linear.  These are the names `counts`
# uses for routed calls.
ROUTED_NAMES = tuple(sorted(route.name for route in ROUTES.values()))


def _transform_active():
    """A torch.func transform (grad, vmap, jacrev, ...) is running: its wrapped
    tensors go through torch's function, as before, under the dispatch mode."""
    return torch._C._functorch.peek_interpreter_stack() is not None


class FunctionRoutes(TorchFunctionMode):
    """The TorchFunctionMode `reproducible` enters beside its dispatch mode.

    `counts` (the dispatch mode's Counter) gets one count per routed call, under
    the name `torch.nn.functional.<name>`; the aten ops that softrep's function
    then runs pass the dispatch mode as softrep's own (exact, or inside softrep's
    op) and are not counted.  `paused` is raised by the dispatch mode while it
    runs a rule: the softrep code of a rule is never routed again."""

    def __init__(self, counts):
        super().__init__()
        self.counts = counts
        self.paused = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        route = ROUTES.get(func)
        if route is None or self.paused or not _plain_types(types) or _transform_active():
            return func(*args, **kwargs)
        try:
            answer = route.accepts(*args, **kwargs)
        except TypeError as e:  # an argument form the route does not know: torch's function decides
            answer = f"arguments not understood ({e})"
        if answer is not None:
            return func(*args, **kwargs)
        try:
            out = route.run(*args, **kwargs)
        except (TypeError, ValueError, NotImplementedError):
            # softrep's argument checks run before it computes: an argument torch
            # takes and softrep does not goes to torch's function (and its error)
            return func(*args, **kwargs)
        self.counts[route.name] += 1
        return out
