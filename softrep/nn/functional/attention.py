# softrep: no kernels
"""scaled_dot_product_attention as a fixed sequence of softrep ops (docs/order.md, "Attention").

    scores = mul_rn(matmul(q, k^T), scale)              matmul in the product order
    bool mask / is_causal: scores where allowed, -inf elsewhere   (a selection)
    float mask:            scores = add_rn(scores, mask)
    w      = softmax(scores, -1)                        softrep.softmax
    rows that are -inf everywhere: w = +0 (torch's "safe softmax")
    w      = dropout(w, dropout_p)                      softrep dropout mask, when dropout_p > 0
    out    = matmul(w, v)

Autograd is that of the composed softrep ops; the selections pass gradients
through unchanged or give +0.
"""

import math
import numbers

import torch

from ...ops import backend, batching
from ...ops import mixed
from ...ops import elementwise as E
from ...ops import reduction as R
from .activations import softmax
from .regularization import dropout
from ...ops.products import matmul
from ...ops.validate import broadcast_shapes


class _RepeatHeads(backend.Function):
    """x (..., H, S, E) -> (..., H * groups, S, E), head h repeated `groups` times in a
    row (repeat_interleave, an exact copy).  Backward: the gradients of the copies
    of head h are added with softrep.sum in copy order (torch would add them
    with its own sum)."""

    @staticmethod
    def forward(x, groups):
        return x.repeat_interleave(groups, dim=-3)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.groups = inputs[1]

    @staticmethod
    def vmap(info, in_dims, x, groups):
        # dim -3 is a sample dim: a leading batch dim leaves it where it is
        return batching.front(x, in_dims[0]).repeat_interleave(groups, dim=-3), 0

    @staticmethod
    def backward(ctx, g):
        *lead, hq, s, e = g.shape
        grouped = g.reshape(*lead, hq // ctx.groups, ctx.groups, s, e)
        return R.sum(grouped, dim=-3), None


def _check_qkv(query, key, value):
    fn = "softrep.scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{fn}: argument '{name}' must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"{fn}: argument '{name}' has dtype {t.dtype}; expected torch.float32 or torch.float64")
        if t.dim() < 2:
            raise ValueError(f"{fn}: argument '{name}' must be at least 2-D (..., L or S, E), "
                             f"got shape {tuple(t.shape)}")
        if t.dtype != query.dtype:
            raise TypeError(f"{fn}: argument '{name}' has dtype {t.dtype} but 'query' has {query.dtype}; "
                            "softrep does not promote dtypes")
        if t.device != query.device:
            raise ValueError(f"{fn}: argument '{name}' is on {t.device} but 'query' is on {query.device}")
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(f"{fn}: 'query' has embedding size {query.shape[-1]} but 'key' has {key.shape[-1]}")
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(f"{fn}: 'key' has sequence length {key.shape[-2]} but 'value' has {value.shape[-2]}")


def default_scale(query, scale):
    """The scale as a Python float: `scale`, or 1 / sqrt(E) computed in double
    (math.sqrt is correctly rounded, then one double division).  It is rounded
    to the query's dtype when it multiplies the scores."""
    if scale is None:
        return 1.0 / math.sqrt(query.shape[-1])
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"softrep.scaled_dot_product_attention: argument 'scale' must be a number or None, "
                        f"got {type(scale).__name__}")
    return float(scale)


@mixed.float32_compute("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, generator=None):
    """torch.nn.functional.scaled_dot_product_attention from softrep ops (module docstring).

    query (..., L, E), key (..., S, E), value (..., S, Ev); attn_mask broadcastable
    to (..., L, S), bool (True = may attend) or of the query's dtype (added).
    is_causal masks j > i (it cannot be combined with attn_mask).  enable_gqa
    repeats each key/value head query_heads / kv_heads times (dim -3).  Rows
    with no allowed key give +0 (output and gradients), as torch does.
    dropout_p > 0 draws one softrep dropout mask from `generator` (default: the
    global softrep generator)."""
    fn = "softrep.scaled_dot_product_attention"
    _check_qkv(query, key, value)
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{fn}: argument 'dropout_p' must be a number in [0, 1], got {dropout_p!r}")
    if not isinstance(is_causal, bool):
        raise TypeError(f"{fn}: argument 'is_causal' must be a bool, got {type(is_causal).__name__}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{fn}: arguments 'attn_mask' and 'is_causal' cannot both be set "
                         "(fold the causal mask into attn_mask)")
    if enable_gqa:
        if query.dim() < 3 or key.dim() < 3 or value.dim() < 3:
            raise ValueError(f"{fn}: argument 'enable_gqa' needs a head dimension (-3) on query, key and value")
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk != hv or hk == 0 or hq % hk:
            raise ValueError(f"{fn}: argument 'enable_gqa': query heads {hq} must be a multiple of key heads {hk}, "
                             f"and key and value must have as many heads (value: {hv})")
        if hq != hk:
            key = _RepeatHeads.apply(key, hq // hk)
            value = _RepeatHeads.apply(value, hq // hk)
    elif query.dim() >= 3 and key.dim() >= 3 and query.shape[-3] != key.shape[-3] and key.shape[-3] != 1:
        raise ValueError(f"{fn}: 'query' has {query.shape[-3]} heads but 'key' has {key.shape[-3]}; "
                         "pass enable_gqa=True for grouped-query attention")
    scale = default_scale(query, scale)
    L, S = query.shape[-2], key.shape[-2]
    scores = E.mul(matmul(query, key.transpose(-2, -1)), scale)
    if is_causal:
        allowed = torch.ones((L, S), dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    elif attn_mask is not None:
        if not isinstance(attn_mask, torch.Tensor):
            raise TypeError(f"{fn}: argument 'attn_mask' must be a torch.Tensor or None, "
                            f"got {type(attn_mask).__name__}")
        try:
            broadcast_shapes(attn_mask.shape, scores.shape)
        except RuntimeError:
            raise ValueError(f"{fn}: argument 'attn_mask' of shape {tuple(attn_mask.shape)} does not broadcast "
                             f"to the scores' shape {tuple(scores.shape)}") from None
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        elif attn_mask.dtype == query.dtype:
            scores = E.add(scores, attn_mask)
        else:
            raise TypeError(f"{fn}: argument 'attn_mask' must be bool or have the query's dtype {query.dtype}, "
                            f"got {attn_mask.dtype}")
    # torch's safe softmax: a row with no finite score gives +0, not NaN.  The row is
    # replaced by zeros before the softmax, so its backward sees no NaN either.
    # (Applied unconditionally: an all-False mask copies, and no data-dependent
    # branch stands in the way of torch.func.vmap.)
    empty = (scores == float("-inf")).all(dim=-1, keepdim=True)
    weights = softmax(scores.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True, generator=generator)
    return matmul(weights, value)


__all__ = ["scaled_dot_product_attention"]
