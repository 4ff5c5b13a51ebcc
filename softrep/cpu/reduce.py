"""CPU schedules of the reductions (sum order of docs/order.md, and max/min).

Input is a 2-D view x[M, n]: M outputs, n reduced elements each in the
documented logical order (the op layer permutes and reshapes).  This module
only decides which blocks and outputs advance together and on which thread;
every value comes from softrep/algorithms/reduction.py: the block-partial
steps of a `TermSum` (`begin`, `extend`; `extend_values_f32x8` for
8 blocks in the lanes of one vector), `sum_from_partials` for the tree, and
`order_key` / `improves` / `extreme_scan` / `extreme_value` for max and min.

A sum runs in two passes, both parallel over independent work items:

1. block partials: P[i, j] = the partial of block j of row i.
   Work items are (row, group of 8 blocks) when rows are contiguous -- the 8
   blocks of a group are 8 independent dependency chains, each still begun
   with its first element and extended left to right: one float32x8 vector,
   lane j = block j, for float32 sums of unit stride (`_sum_blocks_f32x8`),
   else 8 interleaved scalar chains -- and (block, chunk of outputs) when the
   outputs are contiguous (x[:, k] is a contiguous vector, e.g. dim 0 of a
   row-major matrix): then the inner loop runs over outputs and vectorises,
   each output still extending its own block's partial left to right.
   An input whose reduced dims lie on both sides of the kept ones, x3[A, M,
   B] with output i's row x3[:, i, :], runs as rows without being copied
   into them: work items of RUN_SPAN elements of one row, each group of 8
   blocks read in place, or from scratch where it spans two runs
   (`blocked_sum_of_runs`).
2. the tree over each row of partials, level by level (`sum_from_partials`).

Short contiguous float32 rows (a multiple of 8 elements, at most
SHORT_ROW_MAX) take one pass instead: groups of 8 rows, the rows in the
lanes of one float32x8 vector, the tree right after the partials, in the
lanes too (`_short_rows_f32`; SUM_GROUPS_PER_ITEM groups per work item).

Neither the split into work items nor the thread count enters any addition:
every partial and every tree node is a fixed function of n.

`tree_nodes` adds rows (the per-sample partials of a batch reduction) along
the batch tree of docs/order.md, one work item per (tree node, chunk of
columns), the columns in the vector lanes.

Max/min/argmax compare with a total order and break ties by index, so their
results do not depend on how the work is split; they use the same two passes
(chunk winners, then the winner of the chunks, both in increasing index
order), and read the two layouts above in place too (`extreme_of_slabs`,
`extreme_of_runs`).
"""

import functools

import numpy as np
from llvmlite import ir
from numba import carray, from_dtype, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload, register_jitable
from numba.np.arrayobj import populate_array

from ..algorithms.products import tree_carry, tree_finish, tree_slot, tree_slots
from ..algorithms.reduction import (BLOCK, CENTERED_SQUARES, VALUES, divided_sum_from_partials,
                                    eight_short_row_sums, eight_short_row_totals, extend_values_f32x8,
                                    extend_values_f32x16, extreme_scan, extreme_value, improves, key_value,
                                    narrow_key, order_key, row_partials, row_sum, store_one_block_sums_f32x16,
                                    sum_from_partials, sums_from_partials_f32x8, term_centered_square, widen_key)
from ..primitives.fpenv import CONTROL_MASK, enter_ieee, leave_ieee
from ..primitives.vector import LANES, load_f32x8, load_f32x8_pair, store_f32x8, transpose_f32x8, transpose_f32x8_pairs
from .launch import SERIAL_MAX, VECTOR_BITS, address_as_pointer, kernel, prefer_host_vectors
from .workspace import scratch_address

INTERLEAVE = 8  # blocks summed side by side by one work item (row layout)
OUTPUT_CHUNK = 256  # outputs per work item (column layout)
EXTREME_CHUNK = 4096  # elements per work item for max/min
WORK_BLOCKS = INTERLEAVE  # blocks per work item of the row layout


# ------------------------------------------------------------------ 8 blocks per vector
#
# The block partials of a float32 sum with unit stride: 8 consecutive blocks
# advance together, one lane of a float32x8 vector (softrep.primitives.vector)
# per block.  Each step loads 8 consecutive elements of each of the 8 blocks
# (8 vector loads), transposes that 8x8 tile in registers (shuffles), and
# applies `extend_values_f32x8` to its 8 columns in k order -- so lane j
# computes exactly
#   ((x[j,0] + x[j,1]) + x[j,2]) + ... + x[j,127],
# block j's left-to-right sum of docs/order.md, one IEEE add_rn per element.
# Scalar chains were compute-bound at ~1 ns per element per core; this is
# memory-bound.
#
# The tile order touches the work item's cache lines 8 blocks (512 bytes)
# apart, a pattern the hardware prefetcher follows poorly: from DRAM it ran at
# ~5 GB/s per core against ~27 GB/s from L3.  So the work item (4 KB) is first
# copied to the stack in address order, with a software prefetch 16 KB ahead
# into L2, and the tiles are read from that L1-resident copy (10^7 elements, 2
# threads: 3.5 -> 2.2 ms on the development VM).  The copy changes no value.

_F32 = ir.FloatType()
_V8 = ir.VectorType(_F32, LANES)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_PREFETCH_AHEAD = 4096  # elements (16 KB) ahead of the copy, into L2
_WORK_SPAN = WORK_BLOCKS * BLOCK  # elements of one vector work item
_TILE = types.Array(types.float32, 1, "C")


def _prefetch_into_l2(builder, pointer):
    """Emit a read prefetch of the cache line at `pointer` (any pointer) into
    L2: a hint, which moves no value."""
    byte_ptr = ir.IntType(8).as_pointer()
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, _I32, _I32, _I32]), "llvm.prefetch.p0i8")
    builder.call(prefetch, [builder.bitcast(pointer, byte_ptr)]
                 + [ir.Constant(_I32, v) for v in (0, 2, 1)])  # read, L2, data


@intrinsic
def _stack_copy(typingctx, row, start):
    """row[start : start + WORK_BLOCKS * BLOCK] copied, in address order, into a
    float32 array on the caller's stack (valid until the caller returns);
    `row` of unit stride, float32.  Prefetches _PREFETCH_AHEAD elements ahead."""
    if not (isinstance(row, types.Array) and row.ndim == 1 and row.dtype == types.float32
            and isinstance(start, types.Integer)):
        return None
    sig = _TILE(row, start)

    def codegen(context, builder, signature, args):
        r = context.make_array(signature.args[0])(context, builder, args[0])
        vector_ptr = _V8.as_pointer()
        first = context.cast(builder, args[1], signature.args[1], types.intp)
        source = builder.gep(r.data, [first])
        copy = cgutils.alloca_once(builder, _F32, size=ir.Constant(_I64, _WORK_SPAN))
        with cgutils.for_range_slice(builder, ir.Constant(_I64, 0), ir.Constant(_I64, _WORK_SPAN),
                                     ir.Constant(_I64, 32)) as (i, _):
            for line in (0, 16):  # one prefetch per 64-byte line
                ahead = builder.add(i, ir.Constant(_I64, _PREFETCH_AHEAD + line))
                _prefetch_into_l2(builder, builder.gep(source, [ahead]))
            for q in range(0, 32, LANES):
                at = builder.add(i, ir.Constant(_I64, q))
                value = builder.load(builder.bitcast(builder.gep(source, [at]), vector_ptr), align=4)
                builder.store(value, builder.bitcast(builder.gep(copy, [at]), vector_ptr), align=4)
        tile = context.make_array(signature.return_type)(context, builder)
        intp = context.get_value_type(types.intp)
        populate_array(tile, data=copy, shape=[ir.Constant(intp, _WORK_SPAN)], strides=[ir.Constant(intp, 4)],
                       itemsize=ir.Constant(intp, 4), meminfo=None)
        return tile._getvalue()

    return sig, codegen


@intrinsic
def _prefetch(typingctx, a, i):
    """A hint to bring the cache line holding a[i] (a 1-D array) into L2 for
    reading; moves no value."""
    if not (isinstance(a, types.Array) and a.ndim == 1 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        _prefetch_into_l2(builder, builder.gep(data, [context.cast(builder, args[1], signature.args[1], types.intp)]))
        return context.get_dummy_value()

    return types.void(a, i), codegen


@register_jitable
def _tile_columns(tile, k):
    """Columns k .. k+7 of the 8 blocks of `tile`: column k + q = element k + q of each block."""
    return transpose_f32x8(load_f32x8(tile, k), load_f32x8(tile, k + BLOCK), load_f32x8(tile, k + 2 * BLOCK),
                           load_f32x8(tile, k + 3 * BLOCK), load_f32x8(tile, k + 4 * BLOCK),
                           load_f32x8(tile, k + 5 * BLOCK), load_f32x8(tile, k + 6 * BLOCK),
                           load_f32x8(tile, k + 7 * BLOCK))


@register_jitable
def _extend_seven(p, c1, c2, c3, c4, c5, c6, c7):
    """The lanes of p extended by 7 columns, in order (`extend_values_f32x8` each)."""
    return extend_values_f32x8(extend_values_f32x8(extend_values_f32x8(extend_values_f32x8(
        extend_values_f32x8(extend_values_f32x8(extend_values_f32x8(p, c1), c2), c3), c4), c5), c6), c7)


def _vector_group(dst, row, start, out_index):
    """dst[out_index + j] = partial of row[start + 128 j : start + 128 (j + 1)],
    j = 0..7, as the lanes of one float32x8 vector, and True -- when dst and
    row are float32 and dst is C-contiguous (`row` must have unit stride and
    hold all 8 blocks); otherwise False (nothing done)."""


def _sum_blocks_f32x8(dst, row, start, out_index):
    # The implementation of _vector_group for float32, itself the function
    # row_group calls: one more call level passing the arrays would cost four
    # reference-count updates per work item.
    tile = _stack_copy(row, start)
    c0, c1, c2, c3, c4, c5, c6, c7 = _tile_columns(tile, 0)
    c8, c9, c10, c11, c12, c13, c14, c15 = _tile_columns(tile, LANES)
    p = c0  # each block's partial begins with its first element (VALUES.begin)
    p = _extend_seven(p, c1, c2, c3, c4, c5, c6, c7)
    p = _extend_seven(extend_values_f32x8(p, c8), c9, c10, c11, c12, c13, c14, c15)
    for k in range(2 * LANES, BLOCK, 2 * LANES):
        c0, c1, c2, c3, c4, c5, c6, c7 = _tile_columns(tile, k)
        c8, c9, c10, c11, c12, c13, c14, c15 = _tile_columns(tile, k + LANES)
        p = _extend_seven(extend_values_f32x8(p, c0), c1, c2, c3, c4, c5, c6, c7)
        p = _extend_seven(extend_values_f32x8(p, c8), c9, c10, c11, c12, c13, c14, c15)
    store_f32x8(dst, out_index, p)
    return True


def _no_vector_group(dst, row, start, out_index):
    return False


@overload(_vector_group)
def _vector_group_impl(dst, row, start, out_index):
    if row.dtype == types.float32 and dst.dtype == types.float32 and dst.layout == "C":
        return _sum_blocks_f32x8
    return _no_vector_group


# ------------------------------------------------------------------ 8 short rows per vector
#
# Short rows (a few blocks each, many rows: sum over the last dimension of
# [batch, features]) gain nothing from 8 blocks per vector: a row of 64
# elements has one block.  Instead 8 consecutive rows advance together, one
# lane of a float32x8 vector per row: each step loads 8 consecutive elements
# of each of the 8 rows, transposes the 8x8 tile (`transpose_f32x8`) and
# extends the lanes with its 8 columns in k order, so lane r computes exactly
# row r's left-to-right block partials of docs/order.md, block after block;
# the tree over the partials follows in the same work item, while they are
# still in L1, as vectors too (`sums_from_partials_f32x8`: the 8 rows have
# the same length, so the same pairing).  Rows must be contiguous
# float32 with a length that is a multiple of 8 (every block is then whole
# columns of tiles); other shapes take the general path.

SHORT_ROW_MAX = 2048  # longest row for which 8 rows side by side beat 8 blocks side by side


@register_jitable
def _row_tile_columns(flat, at, n):
    """Columns at .. at+7 of 8 consecutive rows of length n starting at flat[at]:
    column q = [flat[at + q], flat[at + n + q], ..., flat[at + 7n + q]]."""
    return transpose_f32x8(load_f32x8(flat, at), load_f32x8(flat, at + n), load_f32x8(flat, at + 2 * n),
                           load_f32x8(flat, at + 3 * n), load_f32x8(flat, at + 4 * n),
                           load_f32x8(flat, at + 5 * n), load_f32x8(flat, at + 6 * n),
                           load_f32x8(flat, at + 7 * n))


_OUT32 = types.Array(types.float32, 1, "A")
_C32 = types.Array(types.float32, 1, "C")
_C32_2D = types.Array(types.float32, 2, "C")


@register_jitable
def _one_block(src, s, stop, n):
    """The partials of one block of 8 rows (elements s .. stop-1 of the first
    row in src, the others n apart) as one vector: each begun with its first
    element (VALUES.begin) and extended left to right."""
    c0, c1, c2, c3, c4, c5, c6, c7 = _row_tile_columns(src, s, n)
    p = _extend_seven(c0, c1, c2, c3, c4, c5, c6, c7)
    for k in range(s + LANES, stop, LANES):
        c0, c1, c2, c3, c4, c5, c6, c7 = _row_tile_columns(src, k, n)
        p = _extend_seven(extend_values_f32x8(p, c0), c1, c2, c3, c4, c5, c6, c7)
    return p


@register_jitable
def _finish_group(out, lanes, nb, i0):
    """out[i0 .. i0+7] = the 8 rows' sums from their nb block partials in lanes."""
    sums_from_partials_f32x8(lanes, nb)
    for r in range(LANES):
        out[i0 + r] = lanes[r]


@register_jitable
def _eight_rows_block_pairs(out, lanes, src, base, n, i0):
    # Rows i0 .. i0+7, held in src from src[base] on (rows of n elements):
    # vector j of lanes gets block j's partials of the 8 rows (`_one_block`),
    # then their sums.  The row's whole blocks go two at a time: blocks j and
    # j+1 of the 8 rows are two vectors whose add chains are independent
    # (each still its own block's partials, left to right); a last single or
    # partial block alone.
    nb = (n + BLOCK - 1) // BLOCK
    whole = n // BLOCK
    for j in range(0, whole - 1, 2):
        s = base + j * BLOCK
        t = s + BLOCK
        c0, c1, c2, c3, c4, c5, c6, c7 = _row_tile_columns(src, s, n)
        d0, d1, d2, d3, d4, d5, d6, d7 = _row_tile_columns(src, t, n)
        p = _extend_seven(c0, c1, c2, c3, c4, c5, c6, c7)
        q = _extend_seven(d0, d1, d2, d3, d4, d5, d6, d7)
        for k in range(LANES, BLOCK, LANES):
            c0, c1, c2, c3, c4, c5, c6, c7 = _row_tile_columns(src, s + k, n)
            d0, d1, d2, d3, d4, d5, d6, d7 = _row_tile_columns(src, t + k, n)
            p = _extend_seven(extend_values_f32x8(p, c0), c1, c2, c3, c4, c5, c6, c7)
            q = _extend_seven(extend_values_f32x8(q, d0), d1, d2, d3, d4, d5, d6, d7)
        store_f32x8(lanes, j * LANES, p)
        store_f32x8(lanes, (j + 1) * LANES, q)
    for j in range(whole - whole % 2, nb):
        store_f32x8(lanes, j * LANES, _one_block(src, base + j * BLOCK, base + min(j * BLOCK + BLOCK, n), n))
    _finish_group(out, lanes, nb, i0)


@kernel("reduce.values.two_groups", (_OUT32, _C32, _C32, _C32, types.int64, types.int64, types.int64))
@njit(cache=True)
def _two_groups(out, lanes, lanes2, src, base, n, i0):
    # Rows i0 .. i0+15, held in src from src[base] on (rows of n elements):
    # the groups of rows i0 .. i0+7 and i0+8 .. i0+15 side by side, block by
    # block, each its own vector of partials (lanes, lanes2: their scratch).
    # Each lane's additions are those of `_eight_rows_block_pairs`; the two chains
    # are independent, so one's adds do not wait for the other's (a chain
    # of 8 lanes alone is bound by the latency of its adds).
    nb = (n + BLOCK - 1) // BLOCK
    other = base + LANES * n
    for j in range(nb):
        s = j * BLOCK
        stop = min(s + BLOCK, n)
        c0, c1, c2, c3, c4, c5, c6, c7 = _row_tile_columns(src, base + s, n)
        d0, d1, d2, d3, d4, d5, d6, d7 = _row_tile_columns(src, other + s, n)
        p = _extend_seven(c0, c1, c2, c3, c4, c5, c6, c7)  # each block's partial begins with its first element
        q = _extend_seven(d0, d1, d2, d3, d4, d5, d6, d7)
        for k in range(s + LANES, stop, LANES):
            c0, c1, c2, c3, c4, c5, c6, c7 = _row_tile_columns(src, base + k, n)
            d0, d1, d2, d3, d4, d5, d6, d7 = _row_tile_columns(src, other + k, n)
            p = _extend_seven(extend_values_f32x8(p, c0), c1, c2, c3, c4, c5, c6, c7)
            q = _extend_seven(extend_values_f32x8(q, d0), d1, d2, d3, d4, d5, d6, d7)
        store_f32x8(lanes, j * LANES, p)
        store_f32x8(lanes2, j * LANES, q)
    _finish_group(out, lanes, nb, i0)
    _finish_group(out, lanes2, nb, i0 + LANES)


# Sixteen rows per vector, with 512-bit vectors: rows of one block (n <=
# BLOCK) go 32 at a time, rows i0 .. i0+15 in the lanes of one float32x16
# (lane j: row i0 + j) and the next 16 in a second one, each step loading 8
# elements of each row and transposing the two 8x8 tiles of a vector's
# halves at once (`transpose_f32x8_pairs`): per element, two thirds of the
# 8-lane tiles' shuffles (those joining the halves included) and half their
# vector additions, each lane still its row's left-to-right partial.  The
# rows are read in place, with a software prefetch of the block of 32 rows
# two blocks ahead (the 8-lane tiles copy their rows in address order
# instead, which from memory was faster for them and slower for these;
# docs/benchmarks.md).

WIDE_ROWS = VECTOR_BITS == 512
_PREFETCH_BLOCKS = 2  # blocks of 32 rows ahead


@register_jitable
def _sixteen_row_columns(flat, at, n):
    """Columns at .. at+7 of the 16 rows of n elements from flat[at] on: column
    q = [row 0's element at + q, ..., row 15's], as a float32x16."""
    half = LANES * n
    return transpose_f32x8_pairs(load_f32x8_pair(flat, at, at + half),
                                 load_f32x8_pair(flat, at + n, at + n + half),
                                 load_f32x8_pair(flat, at + 2 * n, at + 2 * n + half),
                                 load_f32x8_pair(flat, at + 3 * n, at + 3 * n + half),
                                 load_f32x8_pair(flat, at + 4 * n, at + 4 * n + half),
                                 load_f32x8_pair(flat, at + 5 * n, at + 5 * n + half),
                                 load_f32x8_pair(flat, at + 6 * n, at + 6 * n + half),
                                 load_f32x8_pair(flat, at + 7 * n, at + 7 * n + half))


@register_jitable
def _extend_seven_f32x16(p, c1, c2, c3, c4, c5, c6, c7):
    """`_extend_seven` on 16 lanes."""
    return extend_values_f32x16(extend_values_f32x16(extend_values_f32x16(extend_values_f32x16(
        extend_values_f32x16(extend_values_f32x16(extend_values_f32x16(p, c1), c2), c3), c4), c5), c6), c7)


@kernel("reduce.values.four_groups", (_OUT32, _C32, types.int64, types.int64, types.int64))
@njit(cache=True)
def _four_groups(out, flat, base, n, i0):
    # Rows i0 .. i0+31 of one block each (n <= BLOCK, n % 8 == 0), held in
    # flat from flat[base] on: out[i0 + r] = row r's sum, two chains of 16.
    other = base + 2 * LANES * n
    c0, c1, c2, c3, c4, c5, c6, c7 = _sixteen_row_columns(flat, base, n)
    d0, d1, d2, d3, d4, d5, d6, d7 = _sixteen_row_columns(flat, other, n)
    p = _extend_seven_f32x16(c0, c1, c2, c3, c4, c5, c6, c7)  # each block's partial begins with its first element
    q = _extend_seven_f32x16(d0, d1, d2, d3, d4, d5, d6, d7)
    for k in range(LANES, n, LANES):
        c0, c1, c2, c3, c4, c5, c6, c7 = _sixteen_row_columns(flat, base + k, n)
        d0, d1, d2, d3, d4, d5, d6, d7 = _sixteen_row_columns(flat, other + k, n)
        p = _extend_seven_f32x16(extend_values_f32x16(p, c0), c1, c2, c3, c4, c5, c6, c7)
        q = _extend_seven_f32x16(extend_values_f32x16(q, d0), d1, d2, d3, d4, d5, d6, d7)
    ahead = base + _PREFETCH_BLOCKS * 4 * LANES * n
    if ahead + 4 * LANES * n <= flat.size:
        for at in range(ahead, ahead + 4 * LANES * n, 16):  # one per 64-byte line
            _prefetch(flat, at)
    store_one_block_sums_f32x16(out, i0, p)
    store_one_block_sums_f32x16(out, i0 + 2 * LANES, q)


@register_jitable
def _aligned_f32(n):
    """A float32 scratch array of n elements starting on a 64-byte boundary: the
    tiles' 32-byte loads then never straddle two cache lines."""
    buf = np.empty(n + 16, dtype=np.float32)
    skip = (64 - buf.ctypes.data % 64) % 64 // 4
    return buf[skip:skip + n]


# Rows of at most this many elements are first copied, 8 or 16 at a time, to
# an aligned local buffer in address order; the tiles then read the copy.
# The copy moves values only (docs/benchmarks.md has the effect on short rows).
COPIED_ROW_MAX = 512


@register_jitable
def _pairs(n):
    """Whether rows of n elements go two groups at a time: rows of one block
    (the copy of 16 rows is then at most 8 KB), and uncopied rows whose
    stride is not a multiple of 4 KB (16 rows 4 KB apart share one set of
    the 8-way L1 cache and evict each other)."""
    return n <= BLOCK or (n > COPIED_ROW_MAX and n % 1024 != 0)


@register_jitable
def eight_rows_scratch(n):
    """(lanes2, local): the scratch of `eight_rows_f32_into` for rows of n
    elements, for a caller that sums many groups of such rows to allocate
    once (an allocation costs about as much as summing a group of short
    rows)."""
    lanes2 = np.empty((n + BLOCK - 1) // BLOCK * LANES, dtype=np.float32)
    local = _aligned_f32(2 * LANES * n if n <= COPIED_ROW_MAX else 0)
    return lanes2, local


@kernel("reduce.values.eight_rows", (_OUT32, _C32, _C32, types.int64, types.int64, types.int64))
@njit(cache=True)
def eight_rows_f32(out, lanes, flat, n, g0, g1):
    # Groups g0 .. g1-1 of 8 rows of x (flat, C-contiguous, rows of n
    # elements, n % 8 == 0), group g = rows 8g .. 8g+7; lanes (8 * blocks)
    # is scratch: vector j holds block j's partials of the 8 rows.
    lanes2, local = eight_rows_scratch(n)
    eight_rows_f32_into(out, lanes, lanes2, local, flat, n, g0, g1)


@kernel("reduce.values.eight_rows_into", (_OUT32, _C32, _C32, _C32, _C32, types.int64, types.int64, types.int64))
@njit(cache=True)
def eight_rows_f32_into(out, lanes, lanes2, local, flat, n, g0, g1):
    # `eight_rows_f32` with the rest of its scratch given (`eight_rows_scratch`).
    # With 512-bit vectors, rows of one block four groups at a time
    # (`_four_groups`); then two groups at a time where two are left and
    # `_pairs(n)`.
    if WIDE_ROWS and n <= BLOCK:
        for t in range((g1 - g0) // 4):
            g = g0 + 4 * t
            _four_groups(out, flat, g * LANES * n, n, g * LANES)
        g0 = g0 + (g1 - g0) // 4 * 4
    pairs = (g1 - g0) // 2 if _pairs(n) else 0
    rest = g0 + 2 * pairs  # the groups after the pairs, one at a time
    if n <= COPIED_ROW_MAX:
        for t in range(pairs):
            base = (g0 + 2 * t) * LANES * n
            for k in range(0, 2 * LANES * n, LANES):
                store_f32x8(local, k, load_f32x8(flat, base + k))
            _two_groups(out, lanes, lanes2, local, 0, n, (g0 + 2 * t) * LANES)
        for g in range(rest, g1):
            base = g * LANES * n
            for k in range(0, LANES * n, LANES):
                store_f32x8(local, k, load_f32x8(flat, base + k))
            _eight_rows_block_pairs(out, lanes, local, 0, n, g * LANES)
    else:
        for t in range(pairs):
            g = g0 + 2 * t
            _two_groups(out, lanes, lanes2, flat, g * LANES * n, n, g * LANES)
        # a group alone still has two chains: its blocks two at a time (the
        # two blocks' tiles are 512 bytes apart, in different cache sets
        # whatever the row stride)
        for g in range(rest, g1):
            _eight_rows_block_pairs(out, lanes, flat, g * LANES * n, n, g * LANES)


# Groups of 8 rows per work item of the normalisations' row kernels
# (softrep/cpu/normalization.py): each work item's call passes three arrays,
# whose reference counts the threads would otherwise update once per group.
GROUPS_PER_ITEM = 16
# ... and of the row sums: each `eight_rows_f32` call also allocates its
# scratch (the second vector's partials, the aligned copy), about 15% of the
# time of rows of 64 elements with 16 groups per call.
SUM_GROUPS_PER_ITEM = 64


@kernel("reduce.values.short_rows", (_OUT32, _C32_2D, _C32, types.int64))
@njit(parallel=True, cache=True)
def _short_rows_f32(out, lanes, flat, n):
    # One work item per SUM_GROUPS_PER_ITEM groups of 8 rows (lanes: one
    # scratch row per work item); rows beyond the last whole group are the
    # caller's.
    groups = out.shape[0] // LANES
    for w in prange(lanes.shape[0]):
        first = w * SUM_GROUPS_PER_ITEM
        eight_rows_f32(out, lanes[w], flat, n, first, min(first + SUM_GROUPS_PER_ITEM, groups))


@kernel("reduce.centered_squares.short_rows", (_OUT32, _C32_2D, _C32, _C32, types.int64))
@njit(parallel=True, cache=True)
def _short_rows_centered_f32(out, lanes, flat, center, n):
    # `_short_rows_f32` for the sums of mul(d, d), d = sub(x, center[row]):
    # two groups of 8 rows at a time, their terms written to scratch row by
    # row, then summed as values (`eight_rows_f32_into`; a block's partial
    # begins with its first term, as CENTERED_SQUARES.begin does).
    groups = out.shape[0] // LANES
    for w in prange(lanes.shape[0]):
        first = w * SUM_GROUPS_PER_ITEM
        _centered_groups(out, lanes[w], flat, center, n, first, min(first + SUM_GROUPS_PER_ITEM, groups))


@kernel("reduce.centered_squares.groups", (_OUT32, _C32, _C32, _C32, types.int64, types.int64, types.int64))
@njit(cache=True)
def _centered_groups(out, lanes, flat, center, n, g0, g1):
    lanes2, local = eight_rows_scratch(n)
    terms = np.empty(2 * LANES * n, dtype=np.float32)
    width = np.uint64(n)
    for g in range(g0, g1, 2):
        ge = min(g + 2, g1)
        i0 = g * LANES
        for r in range((ge - g) * LANES):
            c = center[i0 + r]
            row, at = np.uint64(i0 + r) * width, np.uint64(r) * width
            for k in range(width):
                terms[at + k] = term_centered_square(flat[row + k], c)
        eight_rows_f32_into(out[i0:i0 + (ge - g) * LANES], lanes, lanes2, local, terms, n, 0, ge - g)


def _short_rows(x):
    M, n = x.shape
    return (x.dtype == np.float32 and M >= LANES and 0 < n <= SHORT_ROW_MAX and n % LANES == 0
            and x.strides == (n * 4, 4))


# Each parallel loop below calls a separately compiled (non-parallel) function
# for its work item: Numba's parfor lowering of loops nested in a prange body
# measured up to 30x slower than the same loop compiled on its own.


def _a(t, ndim):
    return types.Array(t, ndim, "A")


def _c(t, ndim):
    return types.Array(t, ndim, "C")


_FLOATS = (types.float32, types.float64)
_I = types.int64


@functools.lru_cache(maxsize=None)
def _sum_kernels(sums):
    plain_values = sums is VALUES  # a compile-time constant in the kernels below
    begin, extend = sums.begin, sums.extend
    name = "reduce.values" if plain_values else "reduce.centered_squares"

    @kernel(f"{name}.row_eight", *[(_a(t, 1), _a(t, 1), t, _I, _I, _I) for t in _FLOATS])
    @njit(cache=True)
    def row_eight(dst, row, c, j0, nb, n):
        # Blocks j0 .. j0+INTERLEAVE-1 of one row: 8 independent chains side by side.
        if (j0 + INTERLEAVE) * BLOCK <= n:
            b = j0 * BLOCK
            p0 = begin(row[b], c)
            p1 = begin(row[b + BLOCK], c)
            p2 = begin(row[b + 2 * BLOCK], c)
            p3 = begin(row[b + 3 * BLOCK], c)
            p4 = begin(row[b + 4 * BLOCK], c)
            p5 = begin(row[b + 5 * BLOCK], c)
            p6 = begin(row[b + 6 * BLOCK], c)
            p7 = begin(row[b + 7 * BLOCK], c)
            for k in range(b + 1, b + BLOCK):
                p0 = extend(p0, row[k], c)
                p1 = extend(p1, row[k + BLOCK], c)
                p2 = extend(p2, row[k + 2 * BLOCK], c)
                p3 = extend(p3, row[k + 3 * BLOCK], c)
                p4 = extend(p4, row[k + 4 * BLOCK], c)
                p5 = extend(p5, row[k + 5 * BLOCK], c)
                p6 = extend(p6, row[k + 6 * BLOCK], c)
                p7 = extend(p7, row[k + 7 * BLOCK], c)
            dst[j0] = p0
            dst[j0 + 1] = p1
            dst[j0 + 2] = p2
            dst[j0 + 3] = p3
            dst[j0 + 4] = p4
            dst[j0 + 5] = p5
            dst[j0 + 6] = p6
            dst[j0 + 7] = p7
        else:
            # One block at a time (`block`'s steps, written out: a call passing
            # the row would cost two reference-count updates per block).
            for j in range(j0, min(j0 + INTERLEAVE, nb)):
                s = j * BLOCK
                p = begin(row[s], c)
                for k in range(s + 1, min(s + BLOCK, n)):
                    p = extend(p, row[k], c)
                dst[j] = p

    @kernel(f"{name}.row_group", *[(_a(t, 1), _a(t, 1), t, _I, _I, _I, types.boolean) for t in _FLOATS])
    @njit(cache=True)
    def row_group(dst, row, c, j0, nb, n, unit_stride):
        # Blocks j0 .. j0+WORK_BLOCKS-1 of one row: vectorised when possible, else
        # 8 scalar chains at a time (the same sums either way).
        if plain_values and unit_stride and (j0 + WORK_BLOCKS) * BLOCK <= n:
            if _vector_group(dst, row, j0 * BLOCK, j0):
                return
        for g0 in range(j0, min(j0 + WORK_BLOCKS, nb), INTERLEAVE):
            row_eight(dst, row, c, g0, nb, n)

    @kernel(f"{name}.row_partials", *[(_a(t, 2), _a(t, 2), _a(t, 1)) for t in _FLOATS])
    @njit(parallel=True, cache=True)
    def row_partials(P, x, center):
        M, n = x.shape
        nb = P.shape[1]
        nwork = (nb + WORK_BLOCKS - 1) // WORK_BLOCKS
        unit_stride = x.strides[1] == x.itemsize and P.strides[1] == P.itemsize
        for w in prange(M * nwork):
            i = w // nwork
            row_group(P[i], x[i], center[i], (w % nwork) * WORK_BLOCKS, nb, n, unit_stride)

    @kernel(f"{name}.column_block", *[(_a(t, 1), _a(t, 2), _a(t, 1), _I, _I, _I, _I) for t in _FLOATS])
    @njit(cache=True)
    def column_block(dst, xt, center, s, stop, i0, i1):
        # One block (elements s .. stop-1) of outputs i0 .. i1-1; the inner loop
        # over outputs vectorises, each output extending its own partial in order.
        prefer_host_vectors()
        first = xt[s]
        for i in range(np.uint64(i0), np.uint64(i1)):
            dst[i] = begin(first[i], center[i])
        for k in range(s + 1, stop):
            src = xt[k]
            for i in range(np.uint64(i0), np.uint64(i1)):
                dst[i] = extend(dst[i], src[i], center[i])

    @kernel(f"{name}.column_partials", *[(_a(t, 2), _a(t, 2), _a(t, 1)) for t in _FLOATS])
    @njit(parallel=True, cache=True)
    def column_partials(P, xt, center):
        # xt[k, i] = x[i, k]: outputs contiguous.  P[j, i] = partial of block j of output i.
        n, M = xt.shape
        nb = P.shape[0]
        nchunks = (M + OUTPUT_CHUNK - 1) // OUTPUT_CHUNK
        for w in prange(nb * nchunks):
            j = w // nchunks
            i0 = (w % nchunks) * OUTPUT_CHUNK
            column_block(P[j], xt, center, j * BLOCK, min(j * BLOCK + BLOCK, n), i0, min(i0 + OUTPUT_CHUNK, M))

    @kernel(f"{name}.slab_partials", *[(_a(t, 3), _a(t, 3), _a(t, 2)) for t in _FLOATS])
    @njit(parallel=True, cache=True)
    def slab_partials(P, x3, center):
        # x3[o, k, i]: element k of output (o, i), the outputs of each o
        # contiguous (a reduced run of middle dims).  P[j, o, i] = partial of
        # block j of output (o, i): `column_partials` on every x3[o].
        outer, n, inner = x3.shape
        nb = P.shape[0]
        nchunks = (inner + OUTPUT_CHUNK - 1) // OUTPUT_CHUNK
        for w in prange(outer * nb * nchunks):
            o = w // (nb * nchunks)
            j = (w // nchunks) % nb
            i0 = (w % nchunks) * OUTPUT_CHUNK
            column_block(P[j, o], x3[o], center[o], j * BLOCK, min(j * BLOCK + BLOCK, n), i0,
                         min(i0 + OUTPUT_CHUNK, inner))

    @kernel(f"{name}.run_chunk", *[(_c(t, 1), _a(t, 3), _I, t, _I, _I, _c(t, 1)) for t in _FLOATS])
    @njit(cache=True)
    def run_chunk(dst, x3, i, c, start, stop, scratch):
        # Elements start .. stop-1 of output i's sequence x3[a, i, b], (a, b) in
        # row-major order, a group of WORK_BLOCKS blocks at a time as
        # `row_partials` takes them (start is a multiple of the group's
        # length, so block j of a group is block g / BLOCK + j of the
        # sequence): in place when the group lies in one run x3[a, i, :],
        # else copied in sequence order into `scratch` first.  dst: output i's
        # partials.
        B = x3.shape[2]
        span = WORK_BLOCKS * BLOCK
        for g in range(start, stop, span):
            m = min(span, stop - g)
            a, b = g // B, g % B
            if b + m <= B:
                row = x3[a, i, b:b + m]
            else:
                k = 0
                while k < m:
                    a, b = (g + k) // B, (g + k) % B
                    run = min(B - b, m - k)
                    src = x3[a, i]
                    for t in range(np.uint64(run)):
                        scratch[np.uint64(k) + t] = src[np.uint64(b) + t]
                    k += run
                row = scratch[:m]
            row_group(dst[g // BLOCK:], row, c, 0, (m + BLOCK - 1) // BLOCK, m, True)

    @kernel(f"{name}.run_partials", *[(_c(t, 2), _a(t, 3), _a(t, 1)) for t in _FLOATS])
    @njit(parallel=True, cache=True)
    def run_partials(P, x3, center):
        # x3[a, i, b]: output i reduces x3[:, i, :] (reduced dims on both sides
        # of the kept ones, as NCHW's per-channel sums).  P[i, j] = partial of
        # block j of output i, RUN_SPAN elements of one output per work item.
        A, M, B = x3.shape
        n = A * B
        nwork = (n + RUN_SPAN - 1) // RUN_SPAN
        for w in prange(M * nwork):
            i = w // nwork
            start = (w % nwork) * RUN_SPAN
            run_chunk(P[i], x3, i, center[i], start, min(n, start + RUN_SPAN),
                      np.empty(WORK_BLOCKS * BLOCK, dtype=x3.dtype))

    return row_partials, column_partials, slab_partials, run_partials


@kernel("reduce.combine", *[(_a(t, 1), _a(t, 2)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _combine(out, P):
    # P[i, :] are the block partials of output i (any strides); P is scratch.
    M, nb = P.shape
    for i in prange(M):
        out[i] = sum_from_partials(P[i], nb)


def _outputs_contiguous(x):
    M, n = x.shape
    return M > 1 and n > 1 and x.strides[0] == x.itemsize


def blocked_sum(sums):
    """Launcher run(out[M], x[M, n], center[M]): out[i] = documented sum of
    sums.term(x[i, k], center[i]) over k (`sums`: a TermSum of
    softrep.algorithms.reduction)."""
    row_partials, column_partials, _, _ = _sum_kernels(sums)
    plain_values = sums is VALUES

    def run(out, x, center):
        M, n = x.shape
        if M == 0:
            return
        if n == 0:
            out[:] = 0
            return
        nb = (n + BLOCK - 1) // BLOCK
        if _short_rows(x):
            groups = M // LANES
            items = (groups + SUM_GROUPS_PER_ITEM - 1) // SUM_GROUPS_PER_ITEM
            lanes = np.empty((items, nb * LANES), dtype=x.dtype)
            if plain_values:
                _short_rows_f32(out, lanes, x.reshape(-1), n)
            else:
                _short_rows_centered_f32(out, lanes, x.reshape(-1), np.ascontiguousarray(center), n)
            rest = groups * LANES
            if rest < M:
                P = np.empty((M - rest, nb), dtype=x.dtype)
                row_partials(P, x[rest:], center[rest:])
                _combine(out[rest:], P)
        elif _outputs_contiguous(x):
            P = np.empty((nb, M), dtype=x.dtype)
            column_partials(P, x.T, center)
            _combine(out, P.T)
        else:
            P = np.empty((M, nb), dtype=x.dtype)
            row_partials(P, x, center)
            _combine(out, P)

    return run


sum_values = blocked_sum(VALUES)
sum_centered_squares = blocked_sum(CENTERED_SQUARES)


def sum_values_of_slabs(out, x3):
    """out[o * I + i] = documented sum of x3[o, :, i] over its middle dim, x3
    (O, n, I) with unit stride along I: the block partials of `blocked_sum`'s
    column layout for every o in one launch, then the tree of each output."""
    outer, n, inner = x3.shape
    if out.size == 0:
        return
    if n == 0:
        out[:] = 0
        return
    nb = (n + BLOCK - 1) // BLOCK
    P = np.empty((nb, outer, inner), dtype=x3.dtype)
    _sum_kernels(VALUES)[2](P, x3, np.zeros((outer, inner), dtype=x3.dtype))
    _combine(out, P.reshape(nb, outer * inner).T)


# Elements of one output per work item when the reduced dims lie on both
# sides of the kept ones (`blocked_sum_of_runs`): whole groups of blocks.
RUN_SPAN = 16 * WORK_BLOCKS * BLOCK


def blocked_sum_of_runs(sums):
    """Launcher run(out[M], x3[A, M, B], center[M]): out[i] = documented sum of
    sums.term(x3[a, i, b], center[i]) over (a, b) in row-major order -- the
    row of output i that `blocked_sum` would get from a copy of x3 with the
    kept dim first, read in place: each work item takes the block partials of
    RUN_SPAN elements of one row as the row layout does, a group of blocks
    at a time, copying only a group that spans two runs of B contiguous
    elements into scratch; then the tree of each output."""
    run_partials = _sum_kernels(sums)[3]

    def run(out, x3, center):
        A, M, B = x3.shape
        if M == 0:
            return
        n = A * B
        if n == 0:
            out[:] = 0
            return
        P = np.empty((M, (n + BLOCK - 1) // BLOCK), dtype=x3.dtype)
        run_partials(P, x3, center)
        _combine(out, P)

    return run


sum_values_of_runs = blocked_sum_of_runs(VALUES)
sum_centered_squares_of_runs = blocked_sum_of_runs(CENTERED_SQUARES)


# ------------------------------------------------------------------ the light path
#
# Small reductions of contiguous rows on the calling thread, through the
# tensors' addresses (the elementwise ops' light path, softrep/cpu/launch.py):
# `serial_sum(dtype, out, x, m, n, divisor)` gives out[i] the documented sum
# of x[i*n : (i+1)*n], its block partials (`row_partials`; rows of one
# block eight at a time, `eight_short_row_sums`) then the tree
# (`sum_from_partials`), the steps of the row layout above, divided by
# `divisor` (1 for a sum, n for a mean); and
# `serial_extreme(dtype, out, x, m, n, largest)` the amax/amin value of each
# row (`extreme_scan`, `extreme_value`).  A Python call with integers
# costs a fraction of one with arrays, and the kernel sets IEEE's control
# state itself.  At most SERIAL_MAX elements.

def _serial_reductions(dtype):
    def sum_serial(out, x, m, n, divisor, mask):
        old = enter_ieee(mask)
        o = carray(address_as_pointer(out), m, dtype)
        a = carray(address_as_pointer(x), m * n, dtype)
        nb = (n + BLOCK - 1) // BLOCK
        p = np.empty(nb, dtype)
        first_row = 0
        if nb == 1:
            # rows of one block: eight rows' chains side by side
            un = np.uint64(n)
            first_row = m - m % 8
            for i in range(0, first_row, 8):
                sums = eight_short_row_sums(a, np.uint64(i) * un, un, divisor)
                for c in range(8):
                    o[i + c] = sums[c]
        for i in range(first_row, m):
            o[i] = divided_sum_from_partials(p, row_partials(a[i * n:(i + 1) * n], p), divisor)
        leave_ieee(old)

    def extreme_serial(out, x, m, n, largest, mask):
        old = enter_ieee(mask)
        o = carray(address_as_pointer(out), m, dtype)
        a = carray(address_as_pointer(x), m * n, dtype)
        for i in range(m):
            best, at = extreme_scan(a, i * n, (i + 1) * n, largest)
            o[i] = extreme_value(a[at])
        leave_ieee(old)

    name = np.dtype(dtype).name
    address = types.intp
    sums = kernel(f"reduce.serial_sum.{name}", (address, address, _I, _I, from_dtype(np.dtype(dtype)), _I))(
        njit(cache=True, error_model="numpy")(sum_serial))
    extremes = kernel(f"reduce.serial_extreme.{name}", (address, address, _I, _I, types.boolean, _I))(
        njit(cache=True, error_model="numpy")(extreme_serial))
    return sums, extremes


_SERIAL = {np.dtype(t): _serial_reductions(t) for t in (np.float32, np.float64)}


_ONES = {dtype: dtype.type(1) for dtype in _SERIAL}


def serial_sum(dtype, out, x, m, n, divisor=None):
    """out[i] = the documented sum of row i of x (m rows of n >= 1 elements,
    C-contiguous, numpy dtype `dtype`, given by their addresses), divided by
    `divisor` (div_rn; None leaves the sum as it is, n gives the mean).
    `divisor` is converted to `dtype`: exact for the integers below 2^24, and
    n is at most SERIAL_MAX."""
    one = _ONES[dtype]
    _SERIAL[dtype][0](out, x, m, n, one if divisor is None else one.dtype.type(divisor), CONTROL_MASK)


def serial_extreme(dtype, out, x, m, n, largest):
    """out[i] = the amax (largest) or amin of row i of x, as `serial_sum`."""
    _SERIAL[dtype][1](out, x, m, n, largest, CONTROL_MASK)


# ------------------------------------------------------------------ the batch tree over rows
#
# The batch order's sum of per-sample partials (docs/order.md, "The batch
# order"): for each requested tree node, the rows first .. first + count - 1
# of x added along the batch tree, every column on its own.  One work item per
# (node, chunk of TREE_CHUNK columns) keeps a stack of tree nodes for its
# columns and merges each row into it as it comes (`tree_slot`, `tree_carry`,
# `tree_finish` of softrep.algorithms.products, the same steps as the
# weight gradients' `tree_product`), so the columns are the vector lanes and a
# node is one launch, however many levels it has.

TREE_CHUNK = 512  # columns per work item of `tree_nodes`


@kernel("reduce.tree_nodes", *[(_a(t, 2), _a(t, 1), _a(_I, 1), _a(_I, 1), _I, _I) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _tree_nodes(out, x, first, counts, width, slots):
    # x: flat (S, width) C order; out (nodes, width).
    nodes = out.shape[0]
    chunks = (width + TREE_CHUNK - 1) // TREE_CHUNK
    ld = np.uint64(TREE_CHUNK)
    for t in prange(nodes * chunks):
        node = t // chunks
        c0 = (t % chunks) * TREE_CHUNK
        lanes = min(TREE_CHUNK, width - c0)
        stack = np.empty(slots * TREE_CHUNK, x.dtype)
        count = 0
        for s in range(first[node], first[node] + counts[node]):
            row = np.uint64(s) * np.uint64(width) + np.uint64(c0)
            slot = np.uint64(tree_slot(count)) * ld
            for lane in range(np.uint64(lanes)):
                stack[slot + lane] = x[row + lane]
            count = tree_carry(stack, TREE_CHUNK, count, lanes)
        if counts[node] > 1:  # a single row is its own node: passed on as it is
            tree_finish(stack, TREE_CHUNK, count, lanes)
        for lane in range(lanes):
            out[node, c0 + lane] = stack[lane]


def tree_nodes(out, x, first, counts):
    """out (nodes, F) = for each node the batch tree over the rows
    x[first[node] : first[node] + counts[node]] (counts >= 1) of x (S, F),
    column by column (softrep.algorithms.products, "per-sample chains into the
    batch tree"); C-contiguous arrays."""
    if out.size == 0:
        return
    width = out.shape[1]
    slots = tree_slots(counts)
    _tree_nodes(out, x.reshape(-1), first, counts, width, slots)


SERIAL_ROWS_MAX = 1_048_576  # the most elements `serial_batch_row_sums` is given


@register_jitable
def _push_node(stack, src, at, width, count):
    """The batch tree's next sample: its `width` values src[at:at + width]
    pushed onto `stack` and merged as the tree allows (`tree_carry`);
    returns the new count."""
    slot = tree_slot(count) * width
    for w in range(width):
        stack[slot + w] = src[at + w]
    return tree_carry(stack, width, count, width)


@register_jitable
def _batch_root(out, stack, width, count):
    """out[:width] = the root of the batch tree on `stack` after `count`
    pushes (`tree_finish`; a single sample is its own node, passed on as it
    is)."""
    if count > 1:
        tree_finish(stack, width, count, width)
    for w in range(width):
        out[w] = stack[w]


def _serial_batch_row_sums(dtype):
    begin, extend = VALUES.begin, VALUES.extend
    itemsize = np.dtype(dtype).itemsize

    def batch_row_sums_serial(out, x, work, samples, rows, width, block_slots, slots, mask):
        # x (S, R, W) C-contiguous, out (W,).  Per sample, every column's
        # documented sum over its R rows: blocks of BLOCK rows, each left to
        # right from its first row (`begin`, `extend`), merged along the
        # sum's pairwise tree, which is the batch tree's rule over blocks
        # (`tree_carry`, `tree_finish`, canonical NaNs); a single row is
        # the partial itself.  Then the partials of the S samples merged
        # along the batch tree the same way.  Columns are the vector lanes.
        old = enter_ieee(mask)
        o = carray(address_as_pointer(out), width, dtype)
        a = carray(address_as_pointer(x), samples * rows * width, dtype)
        sample_stack = carray(address_as_pointer(work), block_slots * width, dtype)
        batch_stack = carray(address_as_pointer(work + block_slots * width * itemsize),
                             slots * width, dtype)
        count = 0
        for s in range(samples):
            nblocks = 0
            for b0 in range(0, rows, BLOCK):
                # views, so that the column loops index from 0 (LLVM then
                # knows the index is not negative: no wraparound code)
                slot = tree_slot(nblocks) * width
                acc = sample_stack[slot:slot + width]
                first = a[(s * rows + b0) * width:(s * rows + b0 + 1) * width]
                for w in range(width):
                    acc[w] = begin(first[w], first[w])
                for r in range(b0 + 1, min(b0 + BLOCK, rows)):
                    row = a[(s * rows + r) * width:(s * rows + r + 1) * width]
                    for w in range(width):
                        acc[w] = extend(acc[w], row[w], row[w])
                nblocks = tree_carry(sample_stack, width, nblocks, width)
            if rows > 1:
                tree_finish(sample_stack, width, nblocks, width)
            count = _push_node(batch_stack, sample_stack, 0, width, count)
        _batch_root(o, batch_stack, width, count)
        leave_ieee(old)

    address = types.intp
    return kernel(f"reduce.serial_batch_row_sums.{np.dtype(dtype).name}", (address,) * 3 + (_I,) * 6)(
        njit(cache=True, error_model="numpy")(batch_row_sums_serial))


_SERIAL_BATCH_ROW_SUMS = {np.dtype(t): _serial_batch_row_sums(t) for t in (np.float32, np.float64)}


def serial_batch_row_sums(dtype, out, x, samples, rows, width):
    """out (width,) = the batch tree over the S samples of x (S, R, width) of
    each sample's documented sum over its R >= 1 rows (a single row taken as
    it is), on the calling thread: C-contiguous buffers of numpy dtype `dtype`
    given by their addresses, samples >= 1, at most SERIAL_ROWS_MAX elements.
    The bits of `softrep.sum` over dim 1 followed by `tree_nodes` over all
    samples."""
    block_slots, slots = tree_slots(-(-rows // BLOCK)), tree_slots(samples)
    work = scratch_address("batch_row_sums", (block_slots + slots) * width * dtype.itemsize)
    _SERIAL_BATCH_ROW_SUMS[dtype](out, x, work, samples, rows, width, block_slots, slots, CONTROL_MASK)


def _serial_batch_sums_of_rows(dtype):
    itemsize = np.dtype(dtype).itemsize

    def batch_sums_of_rows_serial(out, x, work, samples, width, length, slots, mask):
        # x (S, W, L) C-contiguous, out (W,).  The documented sum of each of
        # the S*W rows of L elements, as `sum_serial` gives them (rows of one
        # block eight at a time, `eight_short_row_totals`; others `row_sum`);
        # then the S samples' sums merged along the batch tree, as
        # `batch_row_sums_serial` merges its per-sample partials.
        old = enter_ieee(mask)
        rows = samples * width
        nb = (length + BLOCK - 1) // BLOCK
        o = carray(address_as_pointer(out), width, dtype)
        a = carray(address_as_pointer(x), rows * length, dtype)
        sums = carray(address_as_pointer(work), rows, dtype)
        partials = carray(address_as_pointer(work + rows * itemsize), nb, dtype)
        batch_stack = carray(address_as_pointer(work + (rows + nb) * itemsize), slots * width, dtype)
        first_row = 0
        if nb == 1:
            un = np.uint64(length)
            first_row = rows - rows % 8
            for i in range(0, first_row, 8):
                totals = eight_short_row_totals(a, np.uint64(i) * un, un)
                for c in range(8):
                    sums[i + c] = totals[c]
        for i in range(first_row, rows):
            sums[i] = row_sum(a[i * length:(i + 1) * length], partials)
        count = 0
        for s in range(samples):
            count = _push_node(batch_stack, sums, s * width, width, count)
        _batch_root(o, batch_stack, width, count)
        leave_ieee(old)

    address = types.intp
    return kernel(f"reduce.serial_batch_sums_of_rows.{np.dtype(dtype).name}", (address,) * 3 + (_I,) * 5)(
        njit(cache=True, error_model="numpy")(batch_sums_of_rows_serial))


_SERIAL_BATCH_SUMS_OF_ROWS = {np.dtype(t): _serial_batch_sums_of_rows(t) for t in (np.float32, np.float64)}


# The most elements `serial_batch_sums_of_rows` is given, and the longest
# rows: rows of one block run eight side by side, faster on one thread than
# the parallel sum and tree up to about this size (docs/benchmarks.md); a
# longer row's blocks run one row at a time, slower than the parallel sum.
SERIAL_SHORT_ROWS_MAX = 131_072  # 2^17
SERIAL_ROW_LENGTH_MAX = BLOCK


def serial_batch_sums_of_rows(dtype, out, x, samples, width, length):
    """out (width,) = the batch tree over the S samples of x (S, width, L) of
    each sample's documented sums of its rows of L >= 1 elements, on the
    calling thread: C-contiguous buffers of numpy dtype `dtype` given by their
    addresses, samples >= 1.  The bits of `softrep.sum` over the last dim
    followed by `tree_nodes` over all samples (conv2d's bias gradient)."""
    slots = tree_slots(samples)
    work = scratch_address("batch_sums_of_rows",
                           (samples * width + (length + BLOCK - 1) // BLOCK + slots * width) * dtype.itemsize)
    _SERIAL_BATCH_SUMS_OF_ROWS[dtype](out, x, work, samples, width, length, slots, CONTROL_MASK)


# ------------------------------------------------------------------ max / min / argmax


@kernel("reduce.extreme_chunks", *[(_a(_I, 2), _a(_I, 2), _a(t, 2), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_chunks(K, I, x, largest):
    # K[i, c], I[i, c]: best key and its first index in chunk c of row i.
    M, n = x.shape
    nch = K.shape[1]
    for w in prange(M * nch):
        i = w // nch
        c = w % nch
        s = c * EXTREME_CHUNK
        K[i, c], I[i, c] = extreme_scan(x[i], s, min(s + EXTREME_CHUNK, n), largest)


@kernel("reduce.extreme_column_block", *[(_a(_I, 1), _a(_I, 1), _a(t, 2), _I, _I, _I, _I, types.boolean)
                                          for t in _FLOATS])
@njit(cache=True)
def _extreme_column_block(kd, idx, xt, s, stop, i0, i1, largest):
    # Elements s .. stop-1 of outputs i0 .. i1-1 (xt[k, i] = element k of
    # output i): each output's best key and its first index, the outputs in
    # the inner loop, which vectorises (a select where a later element is
    # strictly better: ties keep the first index, as in extreme_scan).
    prefer_host_vectors()
    first = xt[s]
    for i in range(np.uint64(i0), np.uint64(i1)):
        kd[i] = order_key(first[i], largest)
        idx[i] = s
    for k in range(s + 1, stop):
        src = xt[k]
        for i in range(np.uint64(i0), np.uint64(i1)):
            key = order_key(src[i], largest)
            better = improves(key, kd[i])
            kd[i] = key if better else kd[i]
            idx[i] = k if better else idx[i]


@kernel("reduce.extreme_columns", *[(_a(_I, 2), _a(_I, 2), _a(t, 2), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_columns(K, I, xt, largest):
    # Outputs contiguous: K[c, i], I[c, i] for chunk c of the reduced elements.
    n, M = xt.shape
    nch = K.shape[0]
    nout = (M + OUTPUT_CHUNK - 1) // OUTPUT_CHUNK
    for w in prange(nch * nout):
        c = w // nout
        i0 = (w % nout) * OUTPUT_CHUNK
        s = c * EXTREME_CHUNK
        _extreme_column_block(K[c], I[c], xt, s, min(s + EXTREME_CHUNK, n), i0, min(i0 + OUTPUT_CHUNK, M), largest)


@kernel("reduce.extreme_combine", *[(_a(t, 1), _a(_I, 1), _a(t, 2), _a(_I, 2), _a(_I, 2)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_combine(values, indices, x, K, I):
    M, nch = K.shape
    for i in prange(M):
        best = K[i, 0]
        at = I[i, 0]
        for c in range(1, nch):
            if improves(K[i, c], best):  # chunks in increasing index order: ties keep the first
                best = K[i, c]
                at = I[i, c]
        indices[i] = at
        values[i] = extreme_value(x[i, at])


# Rows of at most one chunk: one pass, a work item per EXTREME_ROWS rows.  The
# winner's key is found first, as a plain maximum of `order_key` over the row
# (`improves` without the index: an integer max, which vectorises), then its
# first index by a scan that stops at the first element with that key --
# the first index of the best key is exactly what the index-tracking scan
# keeps, since ties keep the first.

EXTREME_ROWS = 16  # rows per work item
EXTREME_RUN = 16  # elements tested together for the winner's key


@register_jitable
def _best_key(row, n, largest):
    # The maximum over narrow keys (int32 for float32: twice the lanes per
    # vector, of the host's width), widened to the winner's `order_key`.
    prefer_host_vectors()
    best = narrow_key(row[0], largest)
    for k in range(1, n):
        key = narrow_key(row[k], largest)
        if improves(key, best):
            best = key
    return widen_key(row[0], best)


@register_jitable
def _first_with_key(row, n, key, largest):
    # Runs of EXTREME_RUN elements are first tested as a whole (a vectorised
    # "any"), then the run holding the key is scanned in index order.
    for s in range(0, n, EXTREME_RUN):
        stop = min(s + EXTREME_RUN, n)
        found = False
        for k in range(s, stop):
            found |= order_key(row[k], largest) == key
        if found:
            for k in range(s, stop):
                if order_key(row[k], largest) == key:
                    return k
    return 0


@kernel("reduce.extreme_row_block", *[(_a(t, 1), _a(_I, 1), _a(t, 2), _I, _I, types.boolean) for t in _FLOATS])
@njit(cache=True)
def _extreme_row_block(values, indices, x, i0, i1, largest):
    n = x.shape[1]
    for i in range(i0, i1):
        row = x[i]
        at = _first_with_key(row, n, _best_key(row, n, largest), largest)
        indices[i] = at
        values[i] = extreme_value(row[at])


@kernel("reduce.extreme_rows", *[(_a(t, 1), _a(_I, 1), _a(t, 2), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_rows(values, indices, x, largest):
    M = x.shape[0]
    for w in prange((M + EXTREME_ROWS - 1) // EXTREME_ROWS):
        i0 = w * EXTREME_ROWS
        _extreme_row_block(values, indices, x, i0, min(i0 + EXTREME_ROWS, M), largest)


@kernel("reduce.extreme_value_rows", *[(_a(t, 1), _a(t, 2), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_value_rows(values, x, largest):
    # amax / amin without the index: the winner's key alone gives its bits
    # (`key_value`), so the first-index scan of `_extreme_row_block` is skipped.
    M, n = x.shape
    for w in prange((M + EXTREME_ROWS - 1) // EXTREME_ROWS):
        for i in range(w * EXTREME_ROWS, min(w * EXTREME_ROWS + EXTREME_ROWS, M)):
            row = x[i]
            values[i] = extreme_value(key_value(row[0], _best_key(row, n, largest), largest))


# Inputs that `as_rows` would copy, read in place: a reduced run of middle
# dims, x3[o, k, i] (output (o, i) reduces x3[o, :, i]: the column layout's
# scan per o, outputs in the lanes), and reduced dims on both sides of the
# kept ones, x3[a, i, b] (output i reduces x3[:, i, :] in row-major order:
# each run's best key, then the first run holding the best and the first
# index in it).  Ties keep the first index in row-major order, as in rows.


@kernel("reduce.extreme_slab_block", *[(_a(t, 1), _a(_I, 2), _a(_I, 2), _a(t, 3), _I, _I, _I, types.boolean)
                                       for t in _FLOATS])
@njit(cache=True)
def _extreme_slab_block(values, K, idx, x3, o, i0, i1, largest):
    n, inner = x3.shape[1], x3.shape[2]
    _extreme_column_block(K[o], idx[o], x3[o], 0, n, i0, i1, largest)
    for i in range(i0, i1):
        values[o * inner + i] = extreme_value(x3[o, idx[o, i], i])


@kernel("reduce.extreme_slabs", *[(_a(t, 1), _a(_I, 2), _a(_I, 2), _a(t, 3), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_slabs(values, K, idx, x3, largest):
    outer, inner = x3.shape[0], x3.shape[2]
    nout = (inner + OUTPUT_CHUNK - 1) // OUTPUT_CHUNK
    for w in prange(outer * nout):
        o = w // nout
        i0 = (w % nout) * OUTPUT_CHUNK
        _extreme_slab_block(values, K, idx, x3, o, i0, min(i0 + OUTPUT_CHUNK, inner), largest)


def extreme_of_slabs(values, indices, x3, largest):
    """values[o * I + i], indices[o * I + i] = the max (largest) or min of
    x3[o, :, i] and its first index, x3 (O, n, I), n >= 1, unit stride along I."""
    outer, n, inner = x3.shape
    if values.size == 0:
        return
    _extreme_slabs(values, np.empty((outer, inner), dtype=np.int64), indices.reshape(outer, inner), x3, largest)


@kernel("reduce.extreme_value_slab_block", *[(_a(t, 1), _a(t, 3), _I, _I, _I, types.boolean) for t in _FLOATS])
@njit(cache=True)
def _extreme_value_slab_block(values, x3, o, i0, i1, largest):
    # amax / amin alone: the best narrow key of each output (twice the lanes
    # of the int64 keys for float32, and no index), its number by `key_value`
    prefer_host_vectors()
    n, inner = x3.shape[1], x3.shape[2]
    best = np.full(i1 - i0, narrow_key(x3[o, 0, i0], largest))  # the keys' integer type
    first = x3[o, 0]
    for i in range(np.uint64(i0), np.uint64(i1)):
        best[i - np.uint64(i0)] = narrow_key(first[i], largest)
    for k in range(1, n):
        src = x3[o, k]
        for i in range(np.uint64(i0), np.uint64(i1)):
            key = narrow_key(src[i], largest)
            j = i - np.uint64(i0)
            best[j] = key if improves(key, best[j]) else best[j]
    for i in range(i0, i1):
        like = x3[o, 0, i]
        values[o * inner + i] = extreme_value(key_value(like, widen_key(like, best[i - i0]), largest))


@kernel("reduce.extreme_value_slabs", *[(_a(t, 1), _a(t, 3), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_value_slabs(values, x3, largest):
    outer, inner = x3.shape[0], x3.shape[2]
    nout = (inner + OUTPUT_CHUNK - 1) // OUTPUT_CHUNK
    for w in prange(outer * nout):
        o = w // nout
        i0 = (w % nout) * OUTPUT_CHUNK
        _extreme_value_slab_block(values, x3, o, i0, min(i0 + OUTPUT_CHUNK, inner), largest)


def extreme_values_of_slabs(values, x3, largest):
    """`extreme_of_slabs` without the indices."""
    if values.size:
        _extreme_value_slabs(values, x3, largest)


@kernel("reduce.extreme_run_block", *[(_a(_I, 2), _a(t, 3), _I, _I, types.boolean) for t in _FLOATS])
@njit(cache=True)
def _extreme_run_block(K, x3, w0, w1, largest):
    runs, B = x3.shape[0], x3.shape[2]
    for w in range(w0, w1):
        i, a = w // runs, w % runs
        K[i, a] = _best_key(x3[a, i], B, largest)


@kernel("reduce.extreme_runs", *[(_a(t, 1), _a(_I, 1), _a(_I, 2), _a(t, 3), types.boolean) for t in _FLOATS])
@njit(parallel=True, cache=True)
def _extreme_runs(values, indices, K, x3, largest):
    A, M, B = x3.shape
    items = M * A
    for w in prange((items + EXTREME_ROWS - 1) // EXTREME_ROWS):
        _extreme_run_block(K, x3, w * EXTREME_ROWS, min(w * EXTREME_ROWS + EXTREME_ROWS, items), largest)
    for i in prange(M):
        best = K[i, 0]
        at = 0
        for a in range(1, A):
            if improves(K[i, a], best):  # runs in increasing index order: ties keep the first
                best = K[i, a]
                at = a
        k = _first_with_key(x3[at, i], B, best, largest)
        indices[i] = at * B + k
        values[i] = extreme_value(x3[at, i, k])


def extreme_of_runs(values, indices, x3, largest):
    """values[i], indices[i] = the max (largest) or min of x3[:, i, :] in
    row-major order and its first index in that order, x3 (A, M, B), A, B >= 1."""
    A, M, B = x3.shape
    if M == 0:
        return
    _extreme_runs(values, indices, np.empty((M, A), dtype=np.int64), x3, largest)


def extreme_values(values, x, largest):
    """values[i] = the max (largest) or min of row x[i] (`extreme` without the indices)."""
    M, n = x.shape
    if M == 0:
        return
    if n <= EXTREME_CHUNK and not _outputs_contiguous(x):
        _extreme_value_rows(values, x, largest)
        return
    extreme(values, np.empty(M, dtype=np.int64), x, largest)


def extreme(values, indices, x, largest):
    """values[i], indices[i] = the max (largest) or min of row x[i] and its first index."""
    M, n = x.shape
    if M == 0:
        return
    nch = (n + EXTREME_CHUNK - 1) // EXTREME_CHUNK
    if nch == 1 and not _outputs_contiguous(x):
        _extreme_rows(values, indices, x, largest)
        return
    if _outputs_contiguous(x):
        K = np.empty((nch, M), dtype=np.int64)
        I = np.empty((nch, M), dtype=np.int64)
        _extreme_columns(K, I, x.T, largest)
        K, I = K.T, I.T
    else:
        K = np.empty((M, nch), dtype=np.int64)
        I = np.empty((M, nch), dtype=np.int64)
        _extreme_chunks(K, I, x, largest)
    _extreme_combine(values, indices, x, K, I)
