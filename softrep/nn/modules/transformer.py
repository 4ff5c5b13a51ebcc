# softrep: no kernels
"""softrep.nn.MultiheadAttention and TransformerEncoderLayer.

Both subclass torch's modules (same arguments, parameter names, state_dict).

MultiheadAttention computes, with softrep ops, per head h (D = embed_dim / num_heads):

    q, k, v  = linear(query, W_q, b_q), linear(key, W_k, b_k), linear(value, W_v, b_v)
               (W_q, W_k, W_v the row blocks of in_proj_weight; one fma chain per element,
               so splitting the packed projection changes no forward bit.  When query, key
               and value are the same tensor, one linear with in_proj_weight is computed and
               split, so the input's gradient is one product, with no accumulation by torch)
    scores   = matmul(mul(q_h, sqrt(1/D)), k_h^T)        sqrt(1/D): binary64 (torch's), rounded to the dtype
    scores   = add(scores, mask)                           when a mask is given (below)
    weights  = softmax(scores, -1)
    weights  = dropout(weights, p=dropout)                 training mode only
    out      = linear(concat_h(matmul(weights, v_h)), out_proj.weight, out_proj.bias)

which is torch's own order for this module (it scales q before the product).
Masks follow torch's conventions: a bool attn_mask / key_padding_mask is True
where attention is NOT allowed and becomes 0 / -inf (an exact selection); a
float mask is added.  attn_mask (L, S) or (N * num_heads, L, S) and
key_padding_mask (N, S) are combined with one softrep add when both are given.
`is_causal` is a hint as in torch: it requires attn_mask, which is what is used.
The returned weights (need_weights=True) are the post-dropout weights, averaged
over heads with softrep.mean when average_attn_weights=True, as torch does.
The output bits do not depend on need_weights.

Initialisation (one softrep draw each, in this order): out_proj.weight
kaiming_uniform_(a=sqrt(5)) (torch's Linear default, which torch's module
keeps), then in_proj_weight xavier_uniform_ (or q/k/v_proj_weight when kdim or
vdim differ); biases 0.  add_bias_kv and add_zero_attn are not implemented.
"""

import math

import torch

from ...ops import elementwise as E
from ...ops import reduction as R
from ...ops.products import matmul
from .. import functional as F
from .. import init
from ._common import generator_of, set_generator, torch_rng_untouched
from .activation import GELU, ReLU
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm


def _float_mask(name, mask, dtype):
    """A bool mask (True = masked out) as 0 / -inf in `dtype`; a float mask as is."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"softrep.nn.MultiheadAttention: argument '{name}' must be a tensor or None, "
                        f"got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if mask.dtype != dtype:
        raise TypeError(f"softrep.nn.MultiheadAttention: argument '{name}' must be bool or {dtype} "
                        f"(the query's dtype), got {mask.dtype}")
    return mask


class MultiheadAttention(torch.nn.MultiheadAttention):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None, *, generator=None):
        for name, value in (("add_bias_kv", add_bias_kv), ("add_zero_attn", add_zero_attn)):
            if value:
                raise NotImplementedError(f"softrep.nn.MultiheadAttention: argument '{name}' must be False "
                                          "(not implemented)")
        set_generator(self, "MultiheadAttention", generator)
        with torch_rng_untouched(device):  # torch builds out_proj with its own init; redrawn below
            super().__init__(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim,
                             batch_first, device, dtype)

    @classmethod
    def _softrep_unsupported(cls, module):
        if module.bias_k is not None:
            return "add_bias_kv=True (not implemented in softrep)"
        if module.add_zero_attn:
            return "add_zero_attn=True (not implemented in softrep)"
        return None

    def _reset_parameters(self):
        gen = generator_of(self)
        init.kaiming_uniform_(self.out_proj.weight, a=math.sqrt(5), generator=gen)
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight, generator=gen)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w, generator=gen)
        with torch.no_grad():
            if self.in_proj_bias is not None:
                self.in_proj_bias.zero_()
            if self.out_proj.bias is not None:
                self.out_proj.bias.zero_()

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        # one packed projection for self-attention given as one tensor (not for
        # batch-first inputs, which always took three projections)
        packed = query is key and key is value and not (query.dim() == 3 and self.batch_first)
        return self._attend(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                            is_causal, self.batch_first, packed)

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                is_causal, batch_first, packed):
        # Internal layout (N, L, E): dim 0 is the sample dim of the projections'
        # weight gradients and of the split-batch order (docs/order.md, "The batch order").
        if is_causal and attn_mask is None:
            raise ValueError("softrep.nn.MultiheadAttention: is_causal=True is a hint and needs 'attn_mask' "
                             "(torch's rule); pass the causal mask")
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor) or t.dim() not in (2, 3):
                raise ValueError(f"softrep.nn.MultiheadAttention: argument '{name}' must be a 2-D (unbatched) "
                                 f"or 3-D tensor, got {getattr(t, 'shape', type(t).__name__)}")
        batched = query.dim() == 3
        if key.dim() != query.dim() or value.dim() != query.dim():
            raise ValueError("softrep.nn.MultiheadAttention: 'query', 'key' and 'value' must all be batched "
                             "(3-D) or all unbatched (2-D)")
        packed = packed and self._qkv_same_embed_dim
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
            if attn_mask is not None and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0).flatten(0, 1)
        elif not batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        bsz, tgt_len, embed_dim = query.shape
        src_len = key.shape[1]
        if embed_dim != self.embed_dim:
            raise ValueError(f"softrep.nn.MultiheadAttention: argument 'query' has embedding size {embed_dim}, "
                             f"expected embed_dim={self.embed_dim}")
        heads, head_dim = self.num_heads, self.head_dim

        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        if packed:
            # self-attention: one packed projection, so the input is used once and its
            # gradient is one product, not three torch-accumulated ones
            q, k, v = F.linear(query, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        else:
            q = F.linear(query, w_q, b_q)
            k = F.linear(key, w_k, b_k)
            v = F.linear(value, w_v, b_v)

        def split_heads(t, length):  # (N, length, E) -> (N, H, length, D), a view
            return t.reshape(bsz, length, heads, head_dim).permute(0, 2, 1, 3)

        q, k, v = split_heads(q, tgt_len), split_heads(k, src_len), split_heads(v, src_len)

        mask = _float_mask("attn_mask", attn_mask, q.dtype)
        if mask is not None:
            if mask.dim() == 2:
                if tuple(mask.shape) != (tgt_len, src_len):
                    raise ValueError(f"softrep.nn.MultiheadAttention: 2-D 'attn_mask' must have shape "
                                     f"{(tgt_len, src_len)}, got {tuple(mask.shape)}")
            elif mask.dim() == 3 and tuple(mask.shape) == (bsz * heads, tgt_len, src_len):
                mask = mask.reshape(bsz, heads, tgt_len, src_len)
            else:
                raise ValueError(f"softrep.nn.MultiheadAttention: 'attn_mask' must have shape {(tgt_len, src_len)} "
                                 f"or {(bsz * heads, tgt_len, src_len)}, got {tuple(mask.shape)}")
        padding = _float_mask("key_padding_mask", key_padding_mask, q.dtype)
        if padding is not None:
            if tuple(padding.shape) != (bsz, src_len):
                raise ValueError(f"softrep.nn.MultiheadAttention: 'key_padding_mask' must have shape "
                                 f"{(bsz, src_len)}, got {tuple(padding.shape)}")
            padding = padding.reshape(bsz, 1, 1, src_len)
            mask = padding if mask is None else E.add(mask, padding)

        scores = matmul(E.mul(q, math.sqrt(1.0 / head_dim)), k.transpose(-2, -1))
        if mask is not None:
            scores = E.add(scores, mask)
        weights = F.softmax(scores, -1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout, training=True, generator=generator_of(self))
        out = matmul(weights, v)  # (N, H, L, D)
        out = out.permute(0, 2, 1, 3).reshape(bsz, tgt_len, embed_dim)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias)
        if not batched:
            out = out.squeeze(0)
        elif not batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = R.mean(weights, dim=1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights


def softrep_activation(activation):
    """The softrep version of a TransformerEncoderLayer activation, or None.
    Accepted: 'relu' / 'gelu', torch's F.relu / F.gelu, a softrep.nn.functional
    function, a softrep module, torch's nn.ReLU / nn.GELU (converted)."""
    import torch.nn.functional as TF

    if activation in ("relu", TF.relu):
        return F.relu
    if activation in ("gelu", TF.gelu):
        return F.gelu
    if isinstance(activation, torch.nn.Module):
        if type(activation) in (ReLU, GELU):
            return activation
        if type(activation) is torch.nn.ReLU:
            return ReLU()
        if type(activation) is torch.nn.GELU:
            return GELU(activation.approximate)
        return None
    if callable(activation) and any(activation is getattr(F, name) for name in F.__all__):
        return activation
    return None


class TransformerEncoderLayer(torch.nn.TransformerEncoderLayer):
    """torch.nn.TransformerEncoderLayer with softrep submodules (MultiheadAttention,
    Linear, LayerNorm, Dropout, activation) and the residual additions as softrep
    adds.  Parameters are drawn from `generator=` in the order self_attn,
    linear1, linear2; the dropouts draw from it too."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None, dtype=None,
                 *, generator=None):
        act = softrep_activation(activation)
        if act is None:
            raise ValueError("softrep.nn.TransformerEncoderLayer: argument 'activation' must be 'relu', 'gelu', "
                             "torch's F.relu / F.gelu / nn.ReLU / nn.GELU, or a softrep.nn.functional function or "
                             f"softrep module; got {activation!r}")
        set_generator(self, "TransformerEncoderLayer", generator)
        with torch_rng_untouched(device):  # torch's submodules are replaced below
            super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                             norm_first, bias, device, dtype)
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            generator=generator, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, generator=generator, **factory)
        self.dropout = Dropout(dropout, generator=generator)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, generator=generator, **factory)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout, generator=generator)
        self.dropout2 = Dropout(dropout, generator=generator)
        self.activation = act

    @classmethod
    def _softrep_unsupported(cls, module):
        # a module activation is a child: the conversion judges it on its own
        if not isinstance(module.activation, torch.nn.Module) and softrep_activation(module.activation) is None:
            return f"activation {module.activation!r} has no softrep equivalent"
        return None

    def _softrep_after_convert(self):
        if not isinstance(self.activation, torch.nn.Module):
            self.activation = softrep_activation(self.activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        # x is (N, L, E) here (see forward); one packed projection unless the layer is batch-first
        packed = not self.self_attn.batch_first or self._unbatched
        x = self.self_attn._attend(x, x, x, key_padding_mask, False, attn_mask, True, is_causal, True, packed)[0]
        return self.dropout1(x)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        # The blocks run on (N, L, E), whatever batch_first: dim 0 is the sample dim
        # of the weight gradients, LayerNorm's and the dropout masks in a split batch
        # (docs/order.md, "The batch order").  Only values move.
        self._unbatched = src.dim() == 2
        if self._unbatched:
            x = src.unsqueeze(0)
            if src_key_padding_mask is not None:
                src_key_padding_mask = src_key_padding_mask.unsqueeze(0)
        else:
            x = src if self.self_attn.batch_first else src.transpose(0, 1)
        if self.norm_first:
            x = E.add(x, self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal=is_causal))
            x = E.add(x, self._ff_block(self.norm2(x)))
        else:
            x = self.norm1(E.add(x, self._sa_block(x, src_mask, src_key_padding_mask, is_causal=is_causal)))
            x = self.norm2(E.add(x, self._ff_block(x)))
        if self._unbatched:
            return x.squeeze(0)
        return x if self.self_attn.batch_first else x.transpose(0, 1)


class TransformerEncoder(torch.nn.TransformerEncoder):
    """torch.nn.TransformerEncoder: `num_layers` deep copies of `encoder_layer`
    (torch's constructor; give it a softrep TransformerEncoderLayer), applied in
    turn, then `norm` if given.  torch's fast path (nested tensors, fused
    kernels) is never taken.  The copies share the layer's generator, so their
    dropout masks are successive draws, not repeats."""

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)
