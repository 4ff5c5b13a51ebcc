"""Reductions on torch tensors besides the sum: mean, var, std, amax, amin, argmax, argmin.

Each one is built on the documented sum (softrep/ops/summation.py, order in
docs/order.md) or, for amax and its kin, on an order-free comparison; their
backward passes are made of softrep ops.
"""

import math

import torch

from . import backend, batching
from . import elementwise as E
from . import mixed
from .summation import (BroadcastFunction, as_rows, as_runs, as_slabs, check_dtype, check_input, light_rows,
                        light_rows_sum, light_sum, reduced_dims, reduction_shapes, scalar_as_1d, sum, sum_raw,
                        sum_to_shape, sums_over)
from ..cpu import reduce as cpu_reduce
from ..primitives.fpenv import ieee_state
from ..cuda import reduce as cuda_reduce

__all__ = ["sum", "mean", "var", "std", "amax", "amin", "argmax", "argmin", "sum_to_shape"]


def _extreme_shape(fn, x, dims, keepdim):
    """The output shape of an amax-like reduction; it has no identity, so no
    reduced elements is an error."""
    out_shape, _, n = reduction_shapes(x, dims, keepdim)
    if n == 0:
        raise ValueError(
            f"softrep.{fn}: argument 'input' has no elements along the reduced dims {dims} "
            f"(shape {tuple(x.shape)}); the reduction has no identity")
    return out_shape


def _extreme_in_place(x, dims, out_shape, largest, with_indices=True):
    """(values, indices) of an amax-like reduction over inputs that `as_rows`
    would copy, read in place by the CPU launcher: a reduced run of middle
    dims (`as_slabs`) or reduced dims on both sides of the kept ones
    (`as_runs`); None for other inputs (n >= 1 reduced elements).  Without
    `with_indices`, (values, None) (amax, amin)."""
    if not backend.on_cpu_launcher(x) or x.numel() == 0:
        return None
    M = math.prod(out_shape)
    values = torch.empty(M, dtype=x.dtype)
    slabs = as_slabs(x, dims)
    if slabs is not None and not with_indices:
        backend.execute(cpu_reduce.extreme_values_of_slabs, None, [values], [slabs], largest)
        return values.reshape(out_shape), None
    for view, launcher in ((slabs, cpu_reduce.extreme_of_slabs), (as_runs(x, dims), cpu_reduce.extreme_of_runs)):
        if view is not None:
            indices = torch.empty(M, dtype=torch.int64)
            backend.execute(launcher, None, [values, indices], [view], largest)
            return values.reshape(out_shape), indices.reshape(out_shape)
    return None


def _extreme_raw(fn, x, dims, keepdim, largest):
    out_shape = _extreme_shape(fn, x, dims, keepdim)
    in_place = _extreme_in_place(x, dims, out_shape, largest)
    if in_place is not None:
        return in_place
    rows = as_rows(x, dims)
    M = rows.shape[0]
    values = torch.empty(M, dtype=x.dtype, device=x.device)
    indices = torch.empty(M, dtype=torch.int64, device=x.device)
    backend.execute(cpu_reduce.extreme, cuda_reduce.extreme, [values, indices], [rows], largest)
    return values.reshape(out_shape), indices.reshape(out_shape)


def _light_extreme(x, dims, keepdim, largest):
    """amax/amin over `dims` by the light path (`light_rows`): the serial
    kernel up to its size, beyond it the general path's parallel kernel on
    numpy views (the same rows: the same result); None where the light path
    does not apply."""
    light = light_rows(x, dims, keepdim, limit=None)
    if light is None:
        return None
    numpy_dtype, m, n, out_shape = light
    out = backend.new_empty(x, out_shape)
    if m * n <= cpu_reduce.SERIAL_MAX:
        cpu_reduce.serial_extreme(numpy_dtype, out.data_ptr(), x.data_ptr(), m, n, largest)
    else:
        with ieee_state():
            cpu_reduce.extreme_values(out.detach().numpy().reshape(m), x.detach().numpy().reshape(m, n), largest)
    return out


def _extreme_values_raw(fn, x, dims, keepdim, largest):
    """The values of `_extreme_raw` alone (amax, amin): the kernel finds no indices."""
    light = _light_extreme(x, dims, keepdim, largest)  # inside _Extreme's forward grad mode is off
    if light is not None:
        return light
    out_shape = _extreme_shape(fn, x, dims, keepdim)
    in_place = _extreme_in_place(x, dims, out_shape, largest, with_indices=False)
    if in_place is not None:
        return in_place[0]
    rows = as_rows(x, dims)
    values = torch.empty(rows.shape[0], dtype=x.dtype, device=x.device)
    backend.execute(cpu_reduce.extreme_values, cuda_reduce.extreme_values, [values], [rows], largest)
    return values.reshape(out_shape)


def _mean_raw(x, dims, keepdim, n):
    """div_rn(sum, n), n the number of reduced elements; no autograd.  The
    division gets an output of its own: written over the sum's (out=), its
    parallel kernel would read and write one array and lose its vector loop."""
    return E.div(sum_raw(x, dims, keepdim), float(n))


def _var_raw(x, dims, correction, keepdim):
    out_shape, _, n = reduction_shapes(x, dims, keepdim)
    squares = sums_over(x, dims, _mean_raw(x, dims, True, n), centered=True)
    return E.div(squares, float(max(n - correction, 0))).reshape(out_shape)


class _Var(backend.Function):
    """Two-pass variance; backward: mul(div(mul(g, 2), dof), sub(x, mean)), the
    mean recomputed from x (the forward's bits, through a differentiable mean,
    so that double backward works)."""

    @staticmethod
    def forward(x, dims, correction, keepdim):
        return _var_raw(x, dims, correction, keepdim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dims, correction, keepdim = inputs
        _, keep, n = reduction_shapes(x, dims, keepdim)
        ctx.save_for_backward(x)
        ctx.keep, ctx.dof, ctx.dims = keep, float(max(n - correction, 0)), dims

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        mean_keep = mean(x, ctx.dims, keepdim=True)
        scale = E.div(E.mul(g.reshape(ctx.keep), 2.0), ctx.dof)
        return E.mul(scale, E.sub(x, mean_keep)), None, None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, correction, keepdim):
        return _var_raw(batching.front(x, in_dims[0]), batching.shift_dims(dims), correction, keepdim), 0


class _Extreme(backend.Function):
    """amax / amin; backward: the gradient shared evenly among the elements equal
    to the result, mul(div(g, count), mask), as torch does."""

    @staticmethod
    def forward(x, dims, keepdim, largest, fn):
        return _extreme_values_raw(fn, x, dims, keepdim, largest)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dims, keepdim, _, _ = inputs
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.keep = reduction_shapes(x, dims, keepdim)[1]
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx, g):
        x, values = ctx.saved_tensors
        mask = (x == values.reshape(ctx.keep)).to(x.dtype)  # IEEE equality: -0 == +0, NaN matches nothing
        count = sum(mask, ctx.dims, keepdim=True)  # a sum of 0s and 1s: exact
        return E.mul(E.div(g.reshape(ctx.keep), count), mask), None, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, keepdim, largest, fn):
        x = batching.front(x, in_dims[0])
        return _extreme_values_raw(fn, x, batching.shift_dims(dims), keepdim, largest), 0


class _ArgExtreme(backend.Function):
    """argmax / argmin (integer indices: no gradient)."""

    @staticmethod
    def forward(x, dims, keepdim, largest, fn):
        return _extreme_raw(fn, x, dims, keepdim, largest)[1]

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def backward(ctx, g):
        return None, None, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, keepdim, largest, fn):
        x = batching.front(x, in_dims[0])
        return _extreme_raw(fn, x, batching.shift_dims(dims), keepdim, largest)[1], 0


class _Mean(backend.Function):
    """mean over `dims` (n elements each) as one autograd node; backward:
    div_rn(g, n) broadcast back, the steps (and bits) of the division's
    backward followed by the sum's."""

    @staticmethod
    def forward(x, dims, keepdim, n):
        return _mean_raw(x, dims, keepdim, n)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dims, keepdim, n = inputs
        ctx.dims, ctx.keepdim, ctx.shape, ctx.n = dims, keepdim, x.shape, float(n)

    @staticmethod
    def backward(ctx, g):
        return backend.call(BroadcastFunction, E.div(g, ctx.n), ctx.dims, ctx.keepdim, ctx.shape), None, None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, keepdim, n):
        return _mean_raw(batching.front(x, in_dims[0]), batching.shift_dims(dims), keepdim, n), 0


@mixed.float32_compute("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """div_rn(sum, n), n the number of reduced elements (rounded to the dtype;
    exact below 2**24 in float32).  n = 0 gives NaN, as in torch."""
    check_input("mean", input)
    check_dtype("mean", input, dtype)
    dims = reduced_dims("mean", input, dim)
    x = scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    keepdim = keepdim and input.dim() > 0
    n = math.prod(x.shape[d] for d in dims)
    light = light_sum(x, dims, keepdim, divisor=n)  # nothing to record: the division inside the sum's kernel
    if light is not None:
        return light
    light = light_rows_sum(x, dims, keepdim)  # nothing to record, larger: the sum, then the division
    if light is not None:
        return E.div(light, float(n))
    return backend.call(_Mean, x, dims, keepdim, n)


def _correction(fn, correction):
    if correction is None:
        return 1
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"softrep.{fn}: argument 'correction' must be a number, got {type(correction).__name__}")
    return correction


@mixed.float32_compute("var")
def var(input, dim=None, *, correction=1, keepdim=False):
    """Two-pass variance: mean, then the documented sum of squared deviations
    mul_rn(d, d), d = sub_rn(x, mean), divided by max(n - correction, 0)."""
    check_input("var", input)
    correction = _correction("var", correction)
    dims = reduced_dims("var", input, dim)
    x = scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    return backend.call(_Var, x, dims, correction, keepdim and input.dim() > 0)


@mixed.float32_compute("std")
def std(input, dim=None, *, correction=1, keepdim=False):
    """sqrt_rn(var(input, dim, correction=correction, keepdim=keepdim))."""
    check_input("std", input)
    return E.sqrt(var(input, dim, correction=correction, keepdim=keepdim))


def _extreme(fn, input, dim, keepdim, largest):
    check_input(fn, input)
    dims = reduced_dims(fn, input, dim)
    light = _light_extreme(input, dims, keepdim, largest)
    if light is not None:
        return light
    x = scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    return backend.call(_Extreme, x, dims, keepdim and input.dim() > 0, largest, fn)


@mixed.float32_compute("amax")
def amax(input, dim=(), keepdim=False):
    """Maximum over `dim` (() or None = all dims).  NaN propagates; +0 > -0."""
    return _extreme("amax", input, dim, keepdim, True)


@mixed.float32_compute("amin")
def amin(input, dim=(), keepdim=False):
    """Minimum over `dim` (() or None = all dims).  NaN propagates; -0 < +0."""
    return _extreme("amin", input, dim, keepdim, False)


def _arg_extreme(fn, input, dim, keepdim, largest):
    check_input(fn, input)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise TypeError(f"softrep.{fn}: argument 'dim' must be an int or None, got {type(dim).__name__}")
    dims = reduced_dims(fn, input, dim)
    x = scalar_as_1d(input)
    dims = dims if input.dim() > 0 else (0,)
    return backend.call(_ArgExtreme, x, dims, keepdim and input.dim() > 0, largest, fn)


@mixed.float32_compute("argmax")
def argmax(input, dim=None, keepdim=False):
    """First index of the maximum (NaN counts as the maximum; +0 > -0).  dim=None
    indexes the flattened input."""
    return _arg_extreme("argmax", input, dim, keepdim, True)


@mixed.float32_compute("argmin")
def argmin(input, dim=None, keepdim=False):
    """First index of the minimum (NaN counts as the minimum; -0 < +0)."""
    return _arg_extreme("argmin", input, dim, keepdim, False)
