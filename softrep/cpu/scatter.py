"""CPU launcher of the ordered scatter-sum of rows (softrep.ops.scatter).

out[r] is the documented sum (softrep.algorithms.reduction: blocks of BLOCK
terms, each begun with its first term and extended left to right, then the
tree over the block partials) of the rows src[i] with index[i] == r, taken
in increasing i; +0 where no row lands, and a copy where one does (the sum
of one term is the term).  The rows landing on each r are listed first, by
a stable counting pass over the index (integers only); then one work item
per destination row adds its rows, every column its own sum, so neither the
split of the rows nor the thread count changes a result.
"""

import numpy as np
from numba import njit, prange, types

from ..algorithms.reduction import BLOCK, VALUES, sum_from_partials
from .launch import kernel

_I = types.int64
_begin, _extend = VALUES.begin, VALUES.extend


@kernel("scatter.group_by_row", (types.Array(_I, 1, "C"), types.Array(_I, 1, "C"), types.Array(_I, 1, "C")))
@njit(cache=True)
def group_by_row(starts, order, index):
    """starts[r] .. starts[r+1]-1: the positions in `order` of the i (in
    increasing order) with index[i] == r; index -1 lists nothing.  starts
    has num_rows + 1 entries, order at least as many as kept rows."""
    num_rows = starts.size - 1
    starts[:] = 0
    for i in range(index.size):
        r = index[i]
        if r >= num_rows or r < -1:
            raise IndexError("scatter-sum: an index names a row outside [-1, num_rows)")
        if r >= 0:
            starts[r + 1] += 1
    for r in range(num_rows):
        starts[r + 1] += starts[r]
    fill = starts[:num_rows].copy()
    for i in range(index.size):
        r = index[i]
        if r >= 0:
            order[fill[r]] = i
            fill[r] += 1


@njit(cache=True, error_model="numpy")
def _row_sum(out, src, order, s0, count, zero):
    # out[d] = the documented sum of src[order[s0 + t], d] for t < count (>= 2):
    # block j's partial in part[d, j], the columns side by side
    columns = out.size
    blocks = (count + BLOCK - 1) // BLOCK
    part = np.empty((columns, blocks), src.dtype)
    for j in range(blocks):
        k0 = s0 + j * BLOCK
        k1 = min(s0 + count, k0 + BLOCK)
        first = src[order[k0]]
        for d in range(columns):
            part[d, j] = _begin(first[d], zero)
        for k in range(k0 + 1, k1):
            row = src[order[k]]
            for d in range(columns):
                part[d, j] = _extend(part[d, j], row[d], zero)
    for d in range(columns):
        out[d] = sum_from_partials(part[d], blocks)


@kernel("scatter.sum_rows", *[(types.Array(t, 2, "C"), types.Array(t, 2, "C"), types.Array(_I, 1, "C"),
                               types.Array(_I, 1, "C")) for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True, error_model="numpy")
def sum_rows(out, src, starts, order):
    """out[r] = the ordered sum of the src rows that `group_by_row` listed for r."""
    zero = src.dtype.type(0)
    for r in prange(out.shape[0]):
        s0 = starts[r]
        count = starts[r + 1] - s0
        row = out[r]
        if count == 0:
            for d in range(row.size):
                row[d] = zero
        elif count == 1:
            first = src[order[s0]]
            for d in range(row.size):
                row[d] = first[d]
        else:
            _row_sum(row, src, order, s0, count, zero)


def scatter_sum_rows(out, src, index):
    """out (R, D) = the ordered scatter-sum of src (n, D) by index (n,) (entries
    in [-1, R)): the two kernels above, one after the other."""
    starts = np.empty(out.shape[0] + 1, np.int64)
    order = np.empty(index.size, np.int64)
    group_by_row(starts, order, index)
    sum_rows(out, src, starts, order)
