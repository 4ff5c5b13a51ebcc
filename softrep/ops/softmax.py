"""softmax's and log_softmax's rows as single kernels (no autograd).

Each function takes rows (R, n), n >= 1, the softmax dim last, and computes
exactly the composition of softrep ops named in its docstring -- the same
roundings in the same order (softrep.algorithms.softmax) -- in one kernel,
without the intermediate tensors.  Callers that need a graph (double
backward) or run under a torch.func transform use the separate ops instead;
the bits are the same.
"""

import math

import torch

from . import backend
from ..algorithms.reduction import BLOCK
from ..cpu import softmax as cpu_softmax
from ..cuda import softmax as cuda_softmax


def fusable(*tensors):
    """Whether the fused kernels may replace the separate ops on these tensors:
    autograd records nothing on them and no torch.func transform is active."""
    return not backend.records(*tensors)


def rows_of(x, dim):
    """x as rows (R, n) with dim the row dim, without a copy, or None: x must
    be contiguous, of at least one element, and every dim after `dim` of size 1."""
    if not x.is_contiguous() or x.numel() == 0 or any(s != 1 for s in x.shape[dim + 1:]):
        return None
    n = x.shape[dim]
    return x.detach().reshape(math.prod(x.shape) // n, n)


def _partials(rows):
    return rows.new_empty(rows.shape[0], (rows.shape[1] + BLOCK - 1) // BLOCK)


def _run(cpu_kernel, cuda_kernel, rows, *inputs):
    out = rows.new_empty(rows.shape)
    backend.execute(cpu_kernel, cuda_kernel, [out, _partials(rows)], [rows, *inputs])
    return out


def softmax_rows(x):
    """div(e, sum(e, 1)) with e = exp(sub(x, amax(x, 1))), for rows x (R, n)."""
    return _run(cpu_softmax.forward, cuda_softmax.forward, x)


def log_softmax_rows(x):
    """sub(z, log(sum(exp(z), 1))) with z = sub(x, amax(x, 1)), for rows x (R, n)."""
    return _run(cpu_softmax.log_forward, cuda_softmax.log_forward, x)


def softmax_grad_rows(g, out):
    """mul(out, sub(g, sum(mul(g, out), 1))), for rows g and out (R, n)."""
    return _run(cpu_softmax.backward, cuda_softmax.backward, g, out)


def log_softmax_grad_rows(g, out):
    """sub(g, mul(exp(out), sum(g, 1))), for rows g and out (R, n)."""
    return _run(cpu_softmax.log_backward, cuda_softmax.log_backward, g, out)


def light_cross_entropy_dtype(x, target):
    """The numpy dtype of x when `cross_entropy_rows` may run on (x, target),
    else None: x plain, C-contiguous, float32/float64 (N, C) on the CPU
    backend with N, C >= 1 (requiring grad or not: the caller's Function
    records it), target a plain C-contiguous int64 (N,) CPU tensor, no
    torch.func transform active."""
    if x.dim() != 2 or x.numel() == 0:
        return None
    if (type(target) is not torch.Tensor or target.dtype != torch.int64 or not target.is_cpu
            or not target.is_contiguous()):
        return None
    return backend.light_dtype((x,), own_function=True)


def cross_entropy_rows(dtype, x, target, ignore_index, mean):
    """(loss, logp, first_bad, kept) of `light_cross_entropy_dtype`'s inputs,
    no autograd: logp = log_softmax(x, 1), loss = the mean (or sum) over the
    positions whose target is not `ignore_index` of neg(logp[i, target[i]]),
    the losses added along the batch tree; first_bad the first position whose
    target is out of range (-1 if none: then loss and logp are not written);
    kept the number of kept positions.  The bits of log_softmax followed by
    nll_loss's ops (softrep.algorithms.softmax)."""
    rows, classes = x.shape
    loss = x.new_empty(())
    logp = x.new_empty(rows, classes)
    info = torch.empty(2, dtype=torch.int64)
    cpu_softmax.cross_entropy(dtype, loss.data_ptr(), logp.data_ptr(), x.data_ptr(), target.data_ptr(),
                             info.data_ptr(), rows, classes, ignore_index, mean)
    first_bad, kept = info.tolist()
    return loss, logp, first_bad, kept


def cross_entropy_grad_rows(dtype, logp, target, grad, ignore_index, kept, mean):
    """The gradient with respect to x of `cross_entropy_rows`' loss, for the
    loss gradient `grad` (a one-element tensor of logp's dtype), from the
    forward's logp and kept count: log_softmax's backward of nll's gradient
    (+0 at every class, neg(div(grad, kept)) -- neg(grad) for a sum -- at
    each kept target)."""
    rows, classes = logp.shape
    dx = logp.new_empty(rows, classes)
    grad = grad.detach().contiguous()
    cpu_softmax.cross_entropy_grad(dtype, dx.data_ptr(), logp.data_ptr(), target.data_ptr(), grad.data_ptr(),
                                  rows, classes, ignore_index, kept, mean)
    return dx
