"""Reductions on torch tensors: sum, mean, var, std, amax, amin, argmax, argmin.

Every sum follows the order of docs/order.md ("Reductions"): the reduced
elements are taken in row-major order of the reduced dimensions (whatever the
strides), cut into blocks of 128 added left to right, and the block partials
are combined by a fixed pairwise tree.  Only the number of reduced elements
decides the order, so the result does not depend on the thread count, the
device, the memory layout, or on which other rows are reduced in the same call.

Layering: `_rows` brings the input to a 2-D view x[M, n] (kept dims first,
reduced dims last); the launchers in softrep/cpu/reduce.py and
softrep/cuda/reduce.py reduce each row; the autograd functions here give
backward passes made of softrep ops (orders in docs/order.md).
"""

import math

import torch

from . import backend
from . import elementwise as E
from ._validate import FLOAT_DTYPES, normalize_dim
from .cpu import reduce as cpu_reduce
from .cuda import reduce as cuda_reduce

# --------------------------------------------------------------------------- arguments


def _check_input(fn, input):
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if input.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"softrep.{fn}: argument 'input' has dtype {input.dtype}; expected torch.float32 or torch.float64")


def _check_dtype(fn, input, dtype):
    if dtype is not None and dtype != input.dtype:
        raise NotImplementedError(
            f"softrep.{fn}: argument 'dtype' ({dtype}) must be None or the input's dtype ({input.dtype}); "
            "softrep does not convert inside a reduction, convert the input explicitly")


def _reduced_dims(fn, input, dim):
    """Sorted tuple of reduced dims; None and () mean all dims (as in torch)."""
    ndim = input.dim()
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return tuple(range(ndim))
        dims = [normalize_dim(fn, d, ndim) for d in dim]
        if len(set(dims)) != len(dims):
            raise ValueError(f"softrep.{fn}: argument 'dim' repeats a dimension: {tuple(dim)}")
        return tuple(sorted(dims)) if ndim > 0 else ()
    d = normalize_dim(fn, dim, ndim)
    return (d,) if ndim > 0 else ()


def _shapes(input, dims, keepdim):
    """(output shape, keepdim shape, n) for reducing `dims` of `input`."""
    keep = tuple(1 if d in dims else s for d, s in enumerate(input.shape))
    out = keep if keepdim else tuple(s for d, s in enumerate(input.shape) if d not in dims)
    n = math.prod(input.shape[d] for d in dims)
    return out, keep, n


def _rows(x, dims):
    """x as a 2-D tensor [M, n]: row i holds the reduced elements of output i
    in row-major order of the reduced dims.  A view when the strides allow
    (e.g. dim 0 of a matrix: strides (1, M)), else a copy."""
    kept = [d for d in range(x.dim()) if d not in dims]
    M = math.prod(x.shape[d] for d in kept)
    n = math.prod(x.shape[d] for d in dims)
    return x.detach().permute(*kept, *dims).reshape(M, n)


# --------------------------------------------------------------------------- kernels (no autograd)


def _sum_rows(rows, center=None, centered=False):
    """Documented sum of each row (of term(x, center[i]) when `centered`)."""
    M = rows.shape[0]
    out = torch.empty(M, dtype=rows.dtype, device=rows.device)
    if center is None:
        center = torch.zeros(M, dtype=rows.dtype, device=rows.device)
    cpu_run = cpu_reduce.sum_centered_squares if centered else cpu_reduce.sum_values
    cuda_run = cuda_reduce.sum_centered_squares if centered else cuda_reduce.sum_values
    backend.execute(cpu_run, cuda_run, [out], [rows, center.reshape(M)])
    return out


def _sum_raw(x, dims, keepdim):
    out_shape, _, _ = _shapes(x, dims, keepdim)
    return _sum_rows(_rows(x, dims)).reshape(out_shape)


def _extreme_raw(fn, x, dims, keepdim, largest):
    out_shape, _, n = _shapes(x, dims, keepdim)
    if n == 0:
        raise ValueError(
            f"softrep.{fn}: argument 'input' has no elements along the reduced dims {dims} "
            f"(shape {tuple(x.shape)}); the reduction has no identity")
    rows = _rows(x, dims)
    M = rows.shape[0]
    values = torch.empty(M, dtype=x.dtype, device=x.device)
    indices = torch.empty(M, dtype=torch.int64, device=x.device)
    backend.execute(cpu_reduce.extreme, cuda_reduce.extreme, [values, indices], [rows], largest)
    return values.reshape(out_shape), indices.reshape(out_shape)


# --------------------------------------------------------------------------- autograd


class _Sum(torch.autograd.Function):
    """sum over `dims`; backward: the gradient broadcast back (no arithmetic)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.dims, ctx.keepdim, ctx.shape = dims, keepdim, x.shape
        return _sum_raw(x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _Broadcast.apply(g, ctx.dims, ctx.keepdim, ctx.shape), None, None


class _Broadcast(torch.autograd.Function):
    """g (the result of reducing `dims`) expanded to `shape`; backward: sum."""

    @staticmethod
    def forward(ctx, g, dims, keepdim, shape):
        ctx.dims, ctx.keepdim = dims, keepdim
        keep = tuple(1 if d in dims else s for d, s in enumerate(shape))
        return g.reshape(keep).expand(shape)

    @staticmethod
    def backward(ctx, gg):
        return _Sum.apply(gg, ctx.dims, ctx.keepdim), None, None, None


class _Var(torch.autograd.Function):
    """Two-pass variance; backward: mul(div(mul(g, 2), dof), sub(x, mean))."""

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim):
        out_shape, keep, n = _shapes(x, dims, keepdim)
        mean_keep = E.div(_sum_raw(x, dims, True), float(n))
        squares = _sum_rows(_rows(x, dims), mean_keep, centered=True)
        dof = max(n - correction, 0)
        var = E.div(squares, float(dof)).reshape(out_shape)
        ctx.save_for_backward(x, mean_keep)
        ctx.keep, ctx.dof, ctx.dims = keep, float(dof), dims
        return var

    @staticmethod
    def backward(ctx, g):
        x, mean_keep = ctx.saved_tensors
        if torch.is_grad_enabled():
            # double backward: the same bits, but through a differentiable mean
            mean_keep = mean(x, ctx.dims, keepdim=True)
        scale = E.div(E.mul(g.reshape(ctx.keep), 2.0), ctx.dof)
        return E.mul(scale, E.sub(x, mean_keep)), None, None, None


class _Extreme(torch.autograd.Function):
    """amax / amin; backward: the gradient shared evenly among the elements equal
    to the result, mul(div(g, count), mask), as torch does."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, largest, fn):
        values, _ = _extreme_raw(fn, x, dims, keepdim, largest)
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.keep = _shapes(x, dims, keepdim)[1]
        ctx.save_for_backward(x, values)
        return values

    @staticmethod
    def backward(ctx, g):
        x, values = ctx.saved_tensors
        mask = (x == values.reshape(ctx.keep)).to(x.dtype)  # IEEE equality: -0 == +0, NaN matches nothing
        count = sum(mask, ctx.dims, keepdim=True)  # a sum of 0s and 1s: exact
        return E.mul(E.div(g.reshape(ctx.keep), count), mask), None, None, None, None


# --------------------------------------------------------------------------- public ops


def _scalar_as_1d(x):
    # A 0-d tensor reduces as a 1-element row (dim 0 / -1 are accepted, as in torch).
    return x.reshape(1) if x.dim() == 0 else x


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (None or () = all dims; an int or a tuple of ints), in the
    order of docs/order.md.  `dtype` must be None or input.dtype."""
    _check_input("sum", input)
    _check_dtype("sum", input, dtype)
    dims = _reduced_dims("sum", input, dim)
    if input.dim() == 0:
        return _Sum.apply(input.reshape(1), (0,), False)
    return _Sum.apply(input, dims, keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """div_rn(sum, n), n the number of reduced elements (rounded to the dtype;
    exact below 2**24 in float32).  n = 0 gives NaN, as in torch."""
    _check_input("mean", input)
    _check_dtype("mean", input, dtype)
    dims = _reduced_dims("mean", input, dim)
    x = _scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    n = math.prod(x.shape[d] for d in dims)
    total = _Sum.apply(x, dims, keepdim and input.dim() > 0)
    return E.div(total, float(n))


def _correction(fn, correction):
    if correction is None:
        return 1
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"softrep.{fn}: argument 'correction' must be a number, got {type(correction).__name__}")
    return correction


def var(input, dim=None, *, correction=1, keepdim=False):
    """Two-pass variance: mean, then the documented sum of squared deviations
    mul_rn(d, d), d = sub_rn(x, mean), divided by max(n - correction, 0)."""
    _check_input("var", input)
    correction = _correction("var", correction)
    dims = _reduced_dims("var", input, dim)
    x = _scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    return _Var.apply(x, dims, correction, keepdim and input.dim() > 0)


def std(input, dim=None, *, correction=1, keepdim=False):
    """sqrt_rn(var(input, dim, correction=correction, keepdim=keepdim))."""
    _check_input("std", input)
    return E.sqrt(var(input, dim, correction=correction, keepdim=keepdim))


def _extreme(fn, input, dim, keepdim, largest):
    _check_input(fn, input)
    dims = _reduced_dims(fn, input, dim)
    x = _scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    return _Extreme.apply(x, dims, keepdim and input.dim() > 0, largest, fn)


def amax(input, dim=(), keepdim=False):
    """Maximum over `dim` (() or None = all dims).  NaN propagates; +0 > -0."""
    return _extreme("amax", input, dim, keepdim, True)


def amin(input, dim=(), keepdim=False):
    """Minimum over `dim` (() or None = all dims).  NaN propagates; -0 < +0."""
    return _extreme("amin", input, dim, keepdim, False)


def _arg_extreme(fn, input, dim, keepdim, largest):
    _check_input(fn, input)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise TypeError(f"softrep.{fn}: argument 'dim' must be an int or None, got {type(dim).__name__}")
    dims = _reduced_dims(fn, input, dim)
    x = _scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    return _extreme_raw(fn, x, dims, keepdim and input.dim() > 0, largest)[1]


def argmax(input, dim=None, keepdim=False):
    """First index of the maximum (NaN counts as the maximum; +0 > -0).  dim=None
    indexes the flattened input."""
    return _arg_extreme("argmax", input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):
    """First index of the minimum (NaN counts as the minimum; -0 < +0)."""
    return _arg_extreme("argmin", input, dim, keepdim, False)


def sum_to_shape(x, shape):
    """Sum `x` over its broadcast dims back to `shape` (the shape it was broadcast
    from), in the sum order; used for the gradients of broadcast inputs."""
    shape = tuple(shape)
    lead = x.dim() - len(shape)
    if lead < 0:
        raise ValueError(f"softrep.sum_to_shape: argument 'shape' {shape} has more dims than 'x' {tuple(x.shape)}")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
    if not dims:
        return x.reshape(shape)
    return sum(x, dims, keepdim=True).reshape(shape)
