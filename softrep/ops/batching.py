# softrep: no kernels
"""Helpers for the `vmap` staticmethods of softrep's autograd Functions (torch.func).

torch.func.vmap cannot trace a softrep forward (it hands raw buffers to Numba
kernels), so every Function states its own batching rule: the vmap
staticmethod receives the plain tensors with the position of their batch
dimension (`in_dims`, None where a tensor is not batched) and returns the
batched output and the position of its batch dimension.

A vmapped op must give the bits of the op applied to each sample alone.  The
rules rely on softrep's ops being batch-size invariant: every element of an
elementwise op and every row of a product is computed alone, and a reduction
over non-batch dims has an order that depends only on the reduced length
(docs/order.md).  So a rule may put the batch dimension first and run the
forward once over the whole batch.  Where that would need a new kernel
schedule, `per_sample` runs the forward once per sample instead (same bits by
construction, slower).
"""

import torch


def values_readable(*tensors):
    """Whether Python may branch on these tensors' values: no vmap level wraps
    any of them (torch.func's grad levels allow it, vmap's do not)."""
    for t in tensors:
        while torch._C._functorch.is_functorch_wrapped_tensor(t):
            if torch._C._functorch.is_batchedtensor(t):
                return False
            t = torch._C._functorch.get_unwrapped(t)
    return True


def front(t, dim):
    """t with its batch dimension `dim` moved to the front (t itself if unbatched)."""
    return t if dim is None or t is None else t.movedim(dim, 0)


def batched(t, dim, size):
    """t with a leading batch dimension of `size`: moved there, or expanded (a view) if unbatched."""
    if dim is None:
        return t.expand(size, *t.shape)
    return t.movedim(dim, 0)


def aligned(tensors, in_dims):
    """Operands of a broadcasting op with their batch dims in front: each batched
    tensor becomes (B, 1, ..., 1, *its shape) so that its own dims stay
    right-aligned with those of the unbatched operands (torch's broadcasting)."""
    ndim = max(t.dim() - (d is not None) for t, d in zip(tensors, in_dims))
    out = []
    for t, d in zip(tensors, in_dims):
        if d is None:
            out.append(t)
        else:
            t = t.movedim(d, 0)
            out.append(t.reshape(t.shape[0], *([1] * (ndim - (t.dim() - 1))), *t.shape[1:]))
    return out


def shift_dims(dims):
    """Reduced dims of a sample, as dims of the batch with the batch dim first."""
    return tuple(d + 1 for d in dims)


def per_sample(forward, info, in_dims, *args):
    """The forward once per sample, results stacked along a new dim 0.

    `forward(*args)` is a Function's forward; unbatched and non-tensor arguments
    are passed unchanged.  Tuple results are stacked element by element."""
    results = []
    for i in range(info.batch_size):
        sample = [a.select(d, i) if isinstance(a, torch.Tensor) and isinstance(d, int) else a
                  for a, d in zip(args, in_dims)]
        results.append(forward(*sample))
    if isinstance(results[0], tuple):
        return tuple(torch.stack(parts) for parts in zip(*results)), (0,) * len(results[0])
    return torch.stack(results), 0


def no_randomness(fn, info):
    """Raise for a random op under vmap: the batch takes one draw where the samples
    would take one each, so the vmapped bits would differ from the per-sample ones."""
    raise RuntimeError(f"softrep.{fn}: draws random numbers and cannot run under torch.func.vmap "
                       f"(randomness={info.randomness!r}): a vmapped call would consume one draw for the "
                       "whole batch, not one per sample; call it outside vmap")


__all__ = ["front", "batched", "aligned", "shift_dims", "per_sample", "no_randomness"]
