# softrep: no kernels
"""dropout with a mask from softrep's counter-based generator (docs/training.md, "Dropout mask").

The mask is `softrep.bernoulli` at probability q = 1 - p: element i (row-major
index of the input) is kept exactly when u_i < q, u_i the `softrep.rand` value
of element i for the input's dtype from the generator's (seed, offset).  So
the mask depends only on (seed, offset, i) -- not on the device or the thread
count -- and one call uses one offset.  In a split batch i is the index in the
global batch (dim 0 the sample dim), so the masks do not depend on the split.
"""

import functools
import numbers

import torch

from ...ops import backend, batching, batchtree, mixed
from ...ops import elementwise as E
from ...ops.generator import check_generator, resolve
from ...ops.random import bernoulli_slice_mask, dropout_draw


def dropout_scale(p, dtype):
    """The factor kept elements are multiplied by, as torch: q = 1 - p computed in
    double and rounded to `dtype`, then scale = div_rn(1, q) in `dtype`."""
    q = torch.tensor(1.0 - p, dtype=torch.float64).to(dtype)
    return E.div(torch.ones((), dtype=dtype), q)


_cached_scale = functools.lru_cache(maxsize=64)(dropout_scale)


def _scale_to_read(p, dtype):
    """dropout_scale(p, dtype) for a caller that only reads it: kept per (p,
    dtype), except under a torch.func transform (whose tensors must not outlive it)."""
    return dropout_scale(p, dtype) if backend.transforms_active() else _cached_scale(p, dtype)


@functools.lru_cache(maxsize=64)
def _keep_and_scale(p, dtype):
    """(keep, scale) of `_Dropout` as Python floats holding values of `dtype`:
    keep = 1 - p rounded to dtype, as bernoulli rounds its probability, and
    `dropout_scale`; kept per (p, dtype), being numbers, not tensors."""
    with torch.no_grad():
        return float(torch.tensor(1.0 - p, dtype=dtype)), float(dropout_scale(p, dtype))


def _first_draw(input):
    """The position in the draw of input's first element: 0, or in a split
    batch (softrep.distributed) that of the slice's first sample, dim 0 being
    the sample dim (sample s of the global batch has the mask of elements
    s*m .. s*m + m - 1, m elements per sample)."""
    batch_slice = batchtree.current()
    if batch_slice is None or input.dim() == 0:
        return 0
    batch_slice.check_rows("dropout", "input", input)
    return batch_slice.offset * (input.numel() // input.shape[0] if input.shape[0] else 0)


def dropout_noise(input, p, generator=None):
    """The multiplier of one dropout call: scale where kept, +0 where dropped
    (one draw from `generator`, or from the default generator).  In a split
    batch (softrep.distributed) dim 0 is the sample dim and the slice's
    elements take the draws of their global positions (`_first_draw`)."""
    keep = bernoulli_slice_mask(input.detach(), 1.0 - p, _first_draw(input), generator=generator)
    scale = _scale_to_read(p, input.dtype).to(input.device)
    return torch.where(keep, scale, torch.zeros((), dtype=input.dtype, device=input.device))


class _DropoutNoise(backend.Function):
    """`dropout_noise` (no gradient).  A Function so that torch.func.vmap reaches
    its vmap rule, which refuses: a batched call would draw one mask for the
    whole batch where the samples, one at a time, would each take a draw."""

    @staticmethod
    def forward(input, p, generator):
        return dropout_noise(input, p, generator)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def backward(ctx, g):
        return None, None, None

    @staticmethod
    def vmap(info, in_dims, input, p, generator):
        batching.no_randomness("dropout", info)


class _Dropout(backend.Function):
    """mul(input, dropout_noise(input, p)) for a float32/float64 input, the
    draw, the mask and the product in one kernel (`dropout_draw`): the same
    draw and the same mul_rn, so the same bits.  Outputs (out, noise), the
    noise not differentiable.  Backward: mul(g, noise), mul's gradient.
    vmap refuses, as `_DropoutNoise`."""

    @staticmethod
    def forward(input, p, generator):
        keep, scale = _keep_and_scale(p, input.dtype)
        return dropout_draw(input, keep, scale, _first_draw(input), generator)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)  # no zeros for the noise's gradient
        ctx.save_for_backward(output[1])

    @staticmethod
    def backward(ctx, g, _):
        if g is None:  # the output unused
            return None, None, None
        (noise,) = ctx.saved_tensors
        return E.mul(g, noise), None, None

    @staticmethod
    def vmap(info, in_dims, input, p, generator):
        batching.no_randomness("dropout", info)


class _LowPrecisionDropout(backend.Function):
    """x * noise for a bfloat16/float16 x and a float32 noise, the exact product
    rounded once in x's format (a float32 product rounded again could round
    twice); backward: g * noise, rounded once the same way."""

    @staticmethod
    def forward(x, noise):
        return _scaled(x, noise)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1])

    @staticmethod
    def backward(ctx, g):
        (noise,) = ctx.saved_tensors
        return _LowPrecisionDropout.apply(g, noise), None


def _scaled(x, noise):
    product = E.emulated("mul", (x.detach().to(torch.float32), noise), mixed.LOW_FORMATS[x.dtype])
    return mixed.exact_cast(product, x.dtype)


def dropout(input, p=0.5, training=True, inplace=False, *, generator=None):
    """torch.nn.functional.dropout with softrep's mask: out = mul_rn(x, noise),
    noise = div_rn(1, fl(1 - p)) where kept and +0 where dropped (so a dropped
    inf or NaN gives NaN, as in torch).  Backward: mul_rn(g, noise).
    bfloat16/float16 x: the float32 noise, and x * noise rounded once in x's format.
    p = 1 gives mul_rn(x, +0) without a draw; p = 0 or training=False returns
    `input` itself (no draw), as torch does."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.dropout: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if input.dtype not in (torch.float32, torch.float64) + mixed.LOW_DTYPES:
        raise TypeError(f"softrep.dropout: argument 'input' has dtype {input.dtype}; "
                        "expected torch.float32, torch.float64, torch.bfloat16 or torch.float16")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"softrep.dropout: argument 'p' must be a number, got {type(p).__name__}")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"softrep.dropout: argument 'p' is the dropout probability and must be in [0, 1], got {p}")
    for name, flag in (("training", training), ("inplace", inplace)):
        if not isinstance(flag, bool):
            raise TypeError(f"softrep.dropout: argument '{name}' must be a bool, got {type(flag).__name__}")
    check_generator("dropout", generator)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    low = mixed.is_low(input)
    if p < 1.0 and not low:
        out = backend.call(_Dropout, input, p, resolve("dropout", generator))[0]
        return input.copy_(out) if inplace else out
    # bfloat16/float16: the float32 mask and scale (the same draw as a float32 input)
    like = input.detach().to(torch.float32) if low else input
    if p == 1.0:
        noise = torch.zeros((), dtype=like.dtype, device=input.device)
    else:
        noise = backend.call(_DropoutNoise, like, p, resolve("dropout", generator))
    out = backend.call(_LowPrecisionDropout, input, noise) if low else E.mul(input, noise)
    return input.copy_(out) if inplace else out


__all__ = ["dropout"]
