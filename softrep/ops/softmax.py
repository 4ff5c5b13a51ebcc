"""softmax's and log_softmax's rows as single kernels (no autograd).

Each function takes rows (R, n), n >= 1, the softmax dim last, and computes
exactly the composition of softrep ops named in its docstring -- the same
roundings in the same order (softrep.algorithms.softmax) -- in one kernel,
without the intermediate tensors.  Callers that need a graph (double
backward) or run under a torch.func transform use the separate ops instead;
the bits are the same.
"""

import math

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
