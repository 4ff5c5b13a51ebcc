"""The documented sum on torch tensors, and the argument handling every reduction shares.

Every sum follows the order of docs/order.md ("Reductions"): the reduced
elements are taken in row-major order of the reduced dimensions (whatever the
strides), cut into blocks of 128 added left to right, and the block partials
are combined by a fixed pairwise tree.  Only the number of reduced elements
decides the order, so the result does not depend on the thread count, the
device, the memory layout, or on which other rows are reduced in the same call.

Layering: `as_rows` brings the input to a 2-D view x[M, n] (kept dims first,
reduced dims last); the launchers in softrep/cpu/reduce.py and
softrep/cuda/reduce.py reduce each row.  Where that view would be a copy,
the CPU launcher reads two layouts in place: a reduced run of middle dims
(`as_slabs`) and reduced dims on both sides of the kept ones (`as_runs`).
The backward of `sum` is a broadcast, which does no arithmetic, so this
module needs no other op: the elementwise ops use `sum_to_shape` for the
gradients of broadcast inputs, and the other reductions
(softrep/ops/reduction.py) build on both.
"""

import builtins
import math

import numpy as np
import torch

from . import backend, batching, mixed
from .memory import index_table
from .validate import FLOAT_DTYPES, normalize_dim
from ..primitives.fpenv import ieee_state
from ..cpu import reduce as cpu_reduce
from ..cuda import reduce as cuda_reduce

__all__ = ["sum", "sum_to_shape", "SumFunction", "BroadcastFunction", "check_input", "check_dtype", "reduced_dims",
           "reduction_shapes", "as_rows", "as_slabs", "as_runs", "sum_rows", "sums_over", "sum_raw", "scalar_as_1d",
           "tree_nodes", "light_rows", "light_sum", "light_column_sum", "light_rows_sum"]


# --------------------------------------------------------------------------- arguments


def check_input(fn, input):
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if input.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"softrep.{fn}: argument 'input' has dtype {input.dtype}; expected torch.float32 or torch.float64")


def check_dtype(fn, input, dtype):
    if dtype is not None and dtype != input.dtype:
        raise NotImplementedError(
            f"softrep.{fn}: argument 'dtype' ({dtype}) must be None or the input's dtype ({input.dtype}); "
            "softrep does not convert inside a reduction, convert the input explicitly")


def reduced_dims(fn, input, dim):
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


def reduction_shapes(input, dims, keepdim):
    """(output shape, keepdim shape, n) for reducing `dims` of `input`."""
    keep = tuple(1 if d in dims else s for d, s in enumerate(input.shape))
    out = keep if keepdim else tuple(s for d, s in enumerate(input.shape) if d not in dims)
    n = math.prod(input.shape[d] for d in dims)
    return out, keep, n


def as_rows(x, dims):
    """x as a 2-D tensor [M, n]: row i holds the reduced elements of output i
    in row-major order of the reduced dims.  A view when the strides allow
    (e.g. dim 0 of a matrix: strides (1, M)), else a copy."""
    kept = [d for d in range(x.dim()) if d not in dims]
    M = math.prod(x.shape[d] for d in kept)
    n = math.prod(x.shape[d] for d in dims)
    return x.detach().permute(*kept, *dims).reshape(M, n)


# --------------------------------------------------------------------------- kernels (no autograd)


def sum_rows(rows, center=None, centered=False):
    """Documented sum of each row (of term(x, center[i]) when `centered`)."""
    M = rows.shape[0]
    out = torch.empty(M, dtype=rows.dtype, device=rows.device)
    if center is None:
        center = torch.zeros(M, dtype=rows.dtype, device=rows.device)
    cpu_run = cpu_reduce.sum_centered_squares if centered else cpu_reduce.sum_values
    cuda_run = cuda_reduce.sum_centered_squares if centered else cuda_reduce.sum_values
    backend.execute(cpu_run, cuda_run, [out], [rows, center.reshape(M)])
    return out


def tree_nodes(partials, ranges):
    """partials (S, *shape) -> (len(ranges), *shape), no autograd: for each
    (first, count) in `ranges` (count >= 1), the rows first .. first + count - 1
    of dim 0 added along the batch tree (docs/order.md, "The batch order"),
    every element of `shape` on its own, in one launch.  These are the bits of
    `batchtree.slice_nodes`' level-by-level additions; a node of one row is
    that row unchanged."""
    samples = partials.shape[0]
    width = math.prod(partials.shape[1:])
    out = torch.empty((len(ranges), width), dtype=partials.dtype, device=partials.device)
    if out.numel():
        rows = partials.detach().contiguous().reshape(samples, width)
        work = builtins.sum(c for _, c in ranges) * width
        dtype = backend.light_dtype((rows,)) if work <= backend.SERIAL_WORK else None
        if dtype is not None:
            # small CPU launches: each node by the serial batch-tree kernel on
            # its rows' address (one row per sample: the same additions),
            # without the launch tables and the numpy views
            step = width * rows.element_size()
            for node, (first, count) in enumerate(ranges):
                cpu_reduce.serial_batch_row_sums(dtype, out.data_ptr() + node * step, rows.data_ptr() + first * step,
                                                 count, 1, width)
        else:
            first = index_table([f for f, _ in ranges], partials.device)
            counts = index_table([c for _, c in ranges], partials.device)
            backend.execute(cpu_reduce.tree_nodes, cuda_reduce.tree_nodes, [out], [rows, first, counts], work=work)
    return out.reshape(len(ranges), *partials.shape[1:])


def as_slabs(x, dims):
    """x (C-contiguous) as (outer, n, inner) when `dims` are one run of
    consecutive dims with kept dims on both sides: output (o, i) reduces
    x3[o, :, i], the order of `as_rows`' row.  None otherwise."""
    if not dims:
        return None
    first, last = dims[0], dims[-1]
    if last - first + 1 != len(dims) or first == 0 or last == x.dim() - 1 or not x.is_contiguous():
        return None
    outer, n, inner = math.prod(x.shape[:first]), math.prod(x.shape[first:last + 1]), math.prod(x.shape[last + 1:])
    return x.detach().view(outer, n, inner)


def as_runs(x, dims):
    """x (C-contiguous) as (A, M, B) when its kept dims are one run of
    consecutive dims with reduced dims on both sides (NCHW reduced over
    (0, 2, 3): one output per channel): output m reduces x3[:, m, :], whose
    row-major order is that of `as_rows`' row m.  None otherwise."""
    kept = [d for d in range(x.dim()) if d not in dims]
    if not kept or kept[0] == 0 or kept[-1] == x.dim() - 1 or kept[-1] - kept[0] + 1 != len(kept) \
            or not x.is_contiguous():
        return None
    outer, inner = math.prod(x.shape[:kept[0]]), math.prod(x.shape[kept[-1] + 1:])
    return x.detach().view(outer, math.prod(x.shape[kept[0]:kept[-1] + 1]), inner)


def sums_over(x, dims, center=None, centered=False):
    """`sum_rows(as_rows(x, dims), center, centered)`: the documented sums of
    the rows that `as_rows` makes, one per output.  On the CPU launcher,
    reduced dims on both sides of one run of kept dims are read in place
    (`as_runs`) instead of copying the whole input into rows first."""
    runs = as_runs(x, dims) if backend.on_cpu_launcher(x) else None
    if runs is None or runs.numel() == 0:
        return sum_rows(as_rows(x, dims), center, centered)
    M = runs.shape[1]
    out = torch.empty(M, dtype=x.dtype)
    center = torch.zeros(M, dtype=x.dtype) if center is None else center.reshape(M)
    launcher = cpu_reduce.sum_centered_squares_of_runs if centered else cpu_reduce.sum_values_of_runs
    backend.execute(launcher, None, [out], [runs, center])
    return out


def sum_raw(x, dims, keepdim):
    light = light_sum(x, dims, keepdim)  # inside SumFunction's forward grad mode is off
    if light is None:
        light = light_rows_sum(x, dims, keepdim)
    if light is not None:
        return light
    out_shape, _, _ = reduction_shapes(x, dims, keepdim)
    slabs = as_slabs(x, dims) if backend.on_cpu_launcher(x) else None
    if slabs is not None and slabs.numel() > 0:
        # a middle run of dims: read in place, where as_rows would copy its transpose
        out = torch.empty(slabs.shape[0] * slabs.shape[2], dtype=x.dtype)
        backend.execute(cpu_reduce.sum_values_of_slabs, None, [out], [slabs])
        return out.reshape(out_shape)
    return sums_over(x, dims).reshape(out_shape)



# --------------------------------------------------------------------------- autograd


class SumFunction(backend.Function):
    """sum over `dims`; backward: the gradient broadcast back (no arithmetic).
    vmap: the batch dim is a kept dim, so each sample's rows are reduced in the
    order of their own length (the bits of the sample alone)."""

    @staticmethod
    def forward(x, dims, keepdim):
        return sum_raw(x, dims, keepdim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dims, keepdim = inputs
        ctx.dims, ctx.keepdim, ctx.shape = dims, keepdim, x.shape

    @staticmethod
    def backward(ctx, g):
        return backend.call(BroadcastFunction, g, ctx.dims, ctx.keepdim, ctx.shape), None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, keepdim):
        return sum_raw(batching.front(x, in_dims[0]), batching.shift_dims(dims), keepdim), 0


class BroadcastFunction(backend.Function):
    """g (the result of reducing `dims`) expanded to `shape`; backward: sum."""

    @staticmethod
    def forward(g, dims, keepdim, shape):
        keep = tuple(1 if d in dims else s for d, s in enumerate(shape))
        return g.reshape(keep).expand(shape)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, dims, keepdim, _ = inputs
        ctx.dims, ctx.keepdim = dims, keepdim

    @staticmethod
    def backward(ctx, gg):
        return backend.call(SumFunction, gg, ctx.dims, ctx.keepdim), None, None, None

    @staticmethod
    def vmap(info, in_dims, g, dims, keepdim, shape):
        g = batching.front(g, in_dims[0])
        keep = tuple(1 if d in dims else s for d, s in enumerate(shape))
        return g.reshape(g.shape[0], *keep).expand(g.shape[0], *shape), 0


# --------------------------------------------------------------------------- public ops


def scalar_as_1d(x):
    # A 0-d tensor reduces as a 1-element row (dim 0 / -1 are accepted, as in torch).
    return x.reshape(1) if x.dim() == 0 else x


@mixed.float32_compute("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (None or () = all dims; an int or a tuple of ints), in the
    order of docs/order.md.  `dtype` must be None or input.dtype (bfloat16 and
    float16 inputs: also torch.float32, the dtype they are summed in)."""
    return _sum(input, dim, keepdim, dtype=dtype)


def light_rows(input, dims, keepdim, limit):
    """(numpy dtype, M, n, output shape) when reducing `dims` of `input` may
    take the light path (`backend.light_dtype`: a plain contiguous CPU tensor,
    nothing to record), the reduced dims are its trailing ones, so that they
    are M contiguous rows of n >= 1 elements, and it has at most `limit`
    elements (None: any number); else None.  The serial kernels of
    softrep/cpu/reduce.py then run on its address: the same per-row steps,
    so the same bits, without the autograd Function and the numpy views."""
    total = input.numel()
    if (limit is not None and total > limit) or total == 0:
        return None
    dtype = backend.light_dtype((input,))
    if dtype is None:
        return None
    shape = tuple(input.shape)
    kept = len(shape) - len(dims)
    if dims and dims[0] != kept:  # dims are sorted and distinct: trailing iff the first is
        return None
    lead = shape[:kept]
    m = math.prod(lead) if kept else 1
    return dtype, m, total // m, lead + (1,) * len(dims) if keepdim else lead


def light_sum(input, dims, keepdim, divisor=None):
    """The sum over `dims` by the light path's serial kernel (`light_rows`, or
    `light_column_sum` for leading dims), or None where that path does not
    apply.  With a `divisor` (the mean's n), the sum divided by it (div_rn,
    in the same kernel) over trailing dims, and None for leading ones."""
    light = light_rows(input, dims, keepdim, limit=cpu_reduce.SERIAL_MAX)
    if light is None:
        return light_column_sum(input, dims, keepdim) if divisor is None else None
    numpy_dtype, m, n, out_shape = light
    out = backend.new_empty(input, out_shape)
    cpu_reduce.serial_sum(numpy_dtype, out.data_ptr(), input.data_ptr(), m, n, divisor)
    return out


_ZEROS = {}  # numpy dtype -> zeros, the centre of the plain sums' kernel


def light_rows_sum(input, dims, keepdim):
    """The sum over trailing `dims` of a plain contiguous CPU tensor of any size
    with nothing to record (`light_rows`), by the parallel kernel of the
    general path (`cpu_reduce.sum_values` on the same rows, so the same bits)
    called on numpy views, without the autograd Function, the row view's
    permutation and `backend.execute`; None where that does not apply."""
    light = light_rows(input, dims, keepdim, limit=None)
    if light is None:
        return None
    numpy_dtype, m, n, out_shape = light
    out = backend.new_empty(input, out_shape)
    zeros = _ZEROS.get(numpy_dtype)
    if zeros is None or zeros.size < m:
        zeros = _ZEROS[numpy_dtype] = np.zeros(max(m, 1024), dtype=numpy_dtype)
    with ieee_state():
        cpu_reduce.sum_values(out.detach().numpy().reshape(m), input.detach().numpy().reshape(m, n), zeros[:m])
    return out


def light_column_sum(input, dims, keepdim):
    """The sum over leading dims 0 .. k-1 (some dims kept) of a small plain
    contiguous CPU tensor, as `light_rows` admits it, on the calling thread:
    the input is R >= 2 rows of the kept elements, and each output's
    documented sum runs down its column -- blocks of BLOCK rows, each begun
    with its first row and extended row by row, then the pairwise tree over
    the blocks with the canonical NaN -- the columns side by side
    (`cpu_reduce.serial_batch_row_sums` of one sample: the bits of the sum
    of `as_rows`' rows).  None where this does not apply (a single row is
    left to the general path, which makes its NaN canonical)."""
    k = len(dims)
    if not 0 < k < input.dim() or dims[-1] != k - 1:  # dims are sorted and distinct
        return None
    total = input.numel()
    if total == 0 or total > cpu_reduce.SERIAL_MAX:
        return None
    dtype = backend.light_dtype((input,))
    if dtype is None:
        return None
    shape = tuple(input.shape)
    rows = math.prod(shape[:k])
    if rows < 2:
        return None
    out = backend.new_empty(input, (1,) * k + shape[k:] if keepdim else shape[k:])
    cpu_reduce.serial_batch_row_sums(dtype, out.data_ptr(), input.data_ptr(), 1, rows, total // rows)
    return out


def _sum(input, dim=None, keepdim=False, *, dtype=None):
    check_input("sum", input)
    check_dtype("sum", input, dtype)
    dims = reduced_dims("sum", input, dim)
    light = light_sum(input, dims, keepdim)
    if light is None:
        light = light_rows_sum(input, dims, keepdim)
    if light is not None:
        return light
    if input.dim() == 0:
        return backend.call(SumFunction, input.reshape(1), (0,), False)
    return backend.call(SumFunction, input, dims, keepdim)


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
    return _sum_any_dtype(x, dims, keepdim=True).reshape(shape)


# The gradient sums of broadcast inputs: bfloat16/float16 gradients summed in
# float32 and rounded once, as `sum`, but never cast by torch.autocast (a
# gradient keeps its input's dtype).
_sum_any_dtype = mixed.float32_compute(None)(_sum)
