"""batch_norm's per-channel passes as single kernels (no autograd).

An input (N, C, *) is viewed as rows (N*C, positions): row n*C + c holds
channel c of sample n.  Each function computes exactly the composition of
softrep ops named in its docstring -- the same roundings in the same order
(softrep.algorithms.normalization, softrep.algorithms.reduction) -- in one
pass, without the intermediate tensors and without broadcasting the
per-channel operands to the input's shape.  Callers that need a graph
(double backward) use the separate ops instead; the bits are the same.
"""

import math

from . import backend
from .summation import sum_rows
from ..cpu import normalization as cpu_normalization
from ..cuda import normalization as cuda_normalization


def fusable():
    """Whether the fused passes may replace the separate ops here: no graph is
    being recorded and no torch.func transform is active (their tensors need
    the ops' autograd Functions)."""
    return backend.unrecorded()


def _rows(x):
    n, c = x.shape[0], x.shape[1]
    return x.detach().contiguous().reshape(n * c, math.prod(x.shape[2:]))


def _per_row(stat, x):
    """A per-channel value (C elements, any shape) repeated for every sample: (N*C,)."""
    n, c = x.shape[0], x.shape[1]
    return stat.detach().reshape(1, c).expand(n, c).reshape(n * c).contiguous()


def centered_square_sums(x, m):
    """(N, C): sum(mul(d, d), positions) with d = sub(x, m[c]), each sample's
    documented sum over its positions (dims 2, ...), m per channel."""
    return sum_rows(_rows(x), _per_row(m, x), centered=True).reshape(x.shape[0], x.shape[1])


def normalize(x, m, s):
    """div(sub(x, m), s), m and s per channel (C elements each)."""
    rows = _rows(x)
    out = rows.new_empty(rows.shape)
    if out.numel():
        backend.execute(cpu_normalization.normalize, cuda_normalization.normalize, [out],
                        [rows, _per_row(m, x), _per_row(s, x)])
    return out.reshape(x.shape)


def normalize_grad(g, xhat, mg, c, s):
    """div(sub(sub(g, mg), mul(xhat, c)), s), mg, c and s per channel."""
    rows = _rows(g)
    out = rows.new_empty(rows.shape)
    if out.numel():
        backend.execute(cpu_normalization.normalize_grad, cuda_normalization.normalize_grad, [out],
                        [rows, _rows(xhat), _per_row(mg, g), _per_row(c, g), _per_row(s, g)])
    return out.reshape(g.shape)
