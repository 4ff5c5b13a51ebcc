"""Serial CPU kernels of embedding (softrep.nn.functional.sparse): the row
copy of the forward and the weight gradient of the backward, each in one
call on the calling thread, on buffers given by their addresses.

`serial_rows` copies table rows: out[p] = table[index[p]], every NaN stored
as the canonical NaN (`row_value`, bit operations only), after checking
that every index lies in [0, rows).

`serial_table_grad` is the gradient of the table (docs/order.md,
"Embedding" and "The batch order").  Per sample, row r's partial is the
documented sum of the gradient rows of the sample's positions holding r, in
increasing position: +0 when there is none, the row itself when there is
one, else blocks of BLOCK rows, each begun with its first row and extended
left to right (`VALUES.begin`, `VALUES.extend`), merged along the sum's
pairwise tree (`tree_carry`, `tree_finish`: the streaming form of
`sum_from_partials`, the same additions and the canonical NaN).  Every row
of the table gets every sample's partial, +0 included, and the samples'
partials are merged along the batch tree (`tree_slot`, `tree_carry`,
`tree_finish`, the table's elements side by side), so each add_rn has the
children that `batchtree.tree_sum` gives it, whatever rows a sample uses
(+0 + -0 is +0: a skipped +0 partial would move bits).  One sample is its
own root, passed on as it is, as `tree_sum` does.  These are the sums of
`scatter_sum_rows` into one row block per sample followed by `tree_sum`.
"""

import numpy as np
from numba import carray, njit, types

from ..algorithms.embedding import row_value
from ..algorithms.products import tree_carry, tree_finish, tree_slot, tree_slots
from ..algorithms.reduction import BLOCK, VALUES
from ..primitives.fpenv import CONTROL_MASK, enter_ieee, leave_ieee
from .launch import address_as_pointer, kernel
from .workspace import scratch_address

_I = types.int64
_ADDRESS = types.intp
_INDEX_BYTES = np.dtype(np.int64).itemsize

SERIAL_ROWS_MAX = 1_048_576  # the most elements `serial_rows` copies
SERIAL_GRAD_MAX = 1_048_576  # the most elements of partials (samples * rows * width) and g `serial_table_grad` is given


@njit(cache=True)
def _first_outside(idx, lo, hi):
    # the first position p with idx[p] outside [lo, hi), or -1
    for p in range(idx.size):
        if idx[p] < lo or idx[p] >= hi:
            return p
    return -1


def _serial_kernels(dtype):
    begin, extend = VALUES.begin, VALUES.extend
    itemsize = np.dtype(dtype).itemsize

    def rows_serial(out, table, index, count, rows, width, mask):
        # out (count, width), table (rows, width), index (count,) int64
        idx = carray(address_as_pointer(index), count, np.int64)
        bad = _first_outside(idx, 0, rows)
        if bad >= 0:
            return bad
        old = enter_ieee(mask)
        o = carray(address_as_pointer(out), count * width, dtype)
        t = carray(address_as_pointer(table), rows * width, dtype)
        for p in range(count):
            # views from 0: the column loop needs no negative-index code
            src = t[idx[p] * width:(idx[p] + 1) * width]
            dst = o[p * width:(p + 1) * width]
            for w in range(width):
                dst[w] = row_value(src[w])
        leave_ieee(old)
        return -1

    def table_grad_serial(out, g, index, work, positions, samples, per, rows, width, block_slots, slots, mask):
        # g (samples * per, width), index (samples * per,) int64 in [-1, rows),
        # out (rows, width).  work: the batch stack (slots tables) and the
        # block stack (block_slots rows); positions: starts (rows + 1),
        # cursor (rows) and order (per) of one sample's counting sort.
        idx = carray(address_as_pointer(index), samples * per, np.int64)
        bad = _first_outside(idx, -1, rows)
        if bad >= 0:
            return bad
        old = enter_ieee(mask)
        table = rows * width
        o = carray(address_as_pointer(out), table, dtype)
        grad = carray(address_as_pointer(g), samples * per * width, dtype)
        batch_stack = carray(address_as_pointer(work), slots * table, dtype)
        block_stack = carray(address_as_pointer(work + slots * table * itemsize), block_slots * width, dtype)
        starts = carray(address_as_pointer(positions), rows + 1, np.int64)
        cursor = carray(address_as_pointer(positions + (rows + 1) * _INDEX_BYTES), rows, np.int64)
        order = carray(address_as_pointer(positions + (2 * rows + 1) * _INDEX_BYTES), per, np.int64)
        zero = o.dtype.type(0)
        for s in range(samples):
            # the sample's positions grouped by row, increasing within a row
            # (a stable counting sort; integers only)
            first = s * per
            starts[:] = 0
            for p in range(per):
                r = idx[first + p]
                if r >= 0:
                    starts[r + 1] += 1
            for r in range(rows):
                starts[r + 1] += starts[r]
                cursor[r] = starts[r]
            for p in range(per):
                r = idx[first + p]
                if r >= 0:
                    order[cursor[r]] = first + p
                    cursor[r] += 1
            # row r's partial into the sample's slot of the batch stack
            slot = tree_slot(s) * table
            for r in range(rows):
                dst = batch_stack[slot + r * width:slot + (r + 1) * width]
                k0, k1 = starts[r], starts[r + 1]
                if k1 == k0:
                    for w in range(width):
                        dst[w] = zero
                elif k1 - k0 == 1:
                    src = grad[order[k0] * width:(order[k0] + 1) * width]
                    for w in range(width):
                        dst[w] = src[w]
                else:
                    nblocks = 0
                    for b0 in range(k0, k1, BLOCK):
                        bslot = tree_slot(nblocks) * width
                        acc = block_stack[bslot:bslot + width]
                        src = grad[order[b0] * width:(order[b0] + 1) * width]
                        for w in range(width):
                            acc[w] = begin(src[w], zero)
                        for k in range(b0 + 1, min(b0 + BLOCK, k1)):
                            src = grad[order[k] * width:(order[k] + 1) * width]
                            for w in range(width):
                                acc[w] = extend(acc[w], src[w], zero)
                        nblocks = tree_carry(block_stack, width, nblocks, width)
                    tree_finish(block_stack, width, nblocks, width)
                    for w in range(width):
                        dst[w] = block_stack[w]
            tree_carry(batch_stack, table, s, table)
        if samples > 1:  # a single sample is its own root: passed on as it is
            tree_finish(batch_stack, table, samples, table)
        if samples == 0:  # no sample: +0, as tree_sum of no partials
            for i in range(table):
                o[i] = zero
        else:
            for i in range(table):
                o[i] = batch_stack[i]
        leave_ieee(old)
        return -1

    name = np.dtype(dtype).name
    rows_kernel = kernel(f"embedding.serial_rows.{name}", (_ADDRESS,) * 3 + (_I,) * 4)(
        njit(cache=True, error_model="numpy")(rows_serial))
    grad_kernel = kernel(f"embedding.serial_table_grad.{name}", (_ADDRESS,) * 5 + (_I,) * 7)(
        njit(cache=True, error_model="numpy")(table_grad_serial))
    return rows_kernel, grad_kernel


_SERIAL = {np.dtype(t): _serial_kernels(t) for t in (np.float32, np.float64)}


def serial_rows(dtype, out, table, index, count, rows, width):
    """out (count, width) = the rows table[index[p]] of table (rows, width),
    NaN canonical; -1, or the first position p whose index[p] lies outside
    [0, rows) (then out is not written).  C-contiguous buffers of numpy dtype
    `dtype` given by their addresses, index int64."""
    return _SERIAL[dtype][0](out, table, index, count, rows, width, CONTROL_MASK)


def serial_table_grad(dtype, out, g, index, samples, per, rows, width):
    """out (rows, width) = the gradient of the table from g (samples * per,
    width) and index (samples * per,) int64 in [-1, rows) (-1: no gradient),
    `per` positions per sample (module docstring); -1, or the first position
    whose index lies outside [-1, rows) (then out is not written).
    C-contiguous buffers given by their addresses; (samples * rows + samples
    * per) * width at most SERIAL_GRAD_MAX."""
    block_slots, slots = tree_slots(max(-(-per // BLOCK), 1)), tree_slots(max(samples, 1))
    work = scratch_address("embedding.table_grad", (slots * rows + block_slots) * width * dtype.itemsize)
    positions = scratch_address("embedding.positions", (2 * rows + 1 + per) * _INDEX_BYTES)
    return _SERIAL[dtype][1](out, g, index, work, positions, samples, per, rows, width, block_slots, slots,
                             CONTROL_MASK)
