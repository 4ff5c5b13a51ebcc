"""CPU launchers for the reductions (sum order of docs/order.md, and max/min).

Input is a 2-D view x[M, n]: M outputs, n reduced elements each in the
documented logical order (the op layer permutes and reshapes).  A sum runs in
two passes, both parallel over independent work items:

1. block partials: P[i, j] = the left-to-right sum of block j of row i.
   Work items are (row, group of 8 blocks) when rows are contiguous -- the 8
   blocks of a group are 8 independent dependency chains, each still added
   left to right: one <8 x float> vector, lane j = block j, for float32 sums
   of unit stride (`_sum_blocks_f32`), else 8 interleaved scalar chains -- and
   (block, chunk of outputs) when the outputs are contiguous (x[:, k] is a
   contiguous vector, e.g. dim 0 of a row-major matrix): then the inner loop
   runs over outputs and vectorises, each output still adding its own block
   left to right.
2. the tree over each row of partials, level by level (`tree_inplace`).

Neither the split into work items nor the thread count enters any addition:
every partial and every tree node is a fixed function of n.

Max/min/argmax compare with a total order and break ties by index, so their
results do not depend on how the work is split; they use the same two passes
(chunk winners, then the winner of the chunks).
"""

import functools

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ..algorithms.reduction import BLOCK, order_key, term_centered_square, term_value, tree_inplace
from ..primitives.rounding import add_rn, canonical

INTERLEAVE = 8  # blocks summed side by side by one work item (row layout)
OUTPUT_CHUNK = 256  # outputs per work item (column layout)
EXTREME_CHUNK = 4096  # elements per work item for max/min


# ------------------------------------------------------------------ 8 blocks per vector
#
# The block partials of a float32 sum with unit stride: 8 consecutive blocks
# advance together, one <8 x float> lane per block.  Each step loads 8
# consecutive elements of each of the 8 blocks (8 vector loads), transposes
# that 8x8 tile in registers (shufflevector), and adds its 8 columns to the
# accumulator in k order -- so lane j computes exactly
#   ((x[j,0] + x[j,1]) + x[j,2]) + ... + x[j,127],
# block j's left-to-right sum of docs/order.md, with IEEE fadd (no fast-math
# flags: round to nearest, no reassociation).  Scalar chains were
# compute-bound at ~1 ns per element per core; this is memory-bound.
#
# The tile order touches the work item's cache lines 8 blocks (512 bytes)
# apart, a pattern the hardware prefetcher follows poorly: from DRAM it ran at
# ~5 GB/s per core against ~27 GB/s from L3.  So the work item (4 KB) is first
# copied to the stack in address order, with a software prefetch 16 KB ahead
# into L2, and the tiles are read from that L1-resident copy (10^7 elements, 2
# threads: 3.5 -> 2.2 ms on the development VM).  The copy changes no value.

_F32 = ir.FloatType()
_V8 = ir.VectorType(_F32, 8)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_PREFETCH_AHEAD = 4096  # elements (16 KB) ahead of the copy, into L2
VECTOR_GROUPS = 1  # groups of 8 blocks per vector work item
WORK_BLOCKS = INTERLEAVE * VECTOR_GROUPS  # blocks per work item of the row layout


def _shuffle(builder, a, b, lanes):
    return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, 8), [ir.Constant(_I32, i) for i in lanes]))


def _transpose8(builder, rows):
    """Columns of the 8x8 tile whose rows are `rows`: column k = [rows[j][k] for j]."""
    lo, hi = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
    t = []
    for p in range(0, 8, 2):
        t += [_shuffle(builder, rows[p], rows[p + 1], lo), _shuffle(builder, rows[p], rows[p + 1], hi)]
    a, b = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
    u = [_shuffle(builder, t[q], t[q + 2], m) for q in (0, 1, 4, 5) for m in (a, b)]
    l4, h4 = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
    return [_shuffle(builder, u[q], u[q + 4], l4) for q in range(4)] + \
        [_shuffle(builder, u[q], u[q + 4], h4) for q in range(4)]


@intrinsic
def _sum_blocks_f32(typingctx, dst, row, start, out_index):
    """dst[out_index + j] = left-to-right sum of row[start + 128 j : start + 128 (j + 1)],
    j = 0..8*VECTOR_GROUPS-1; float32, `row` of unit stride, all blocks full."""
    sig = types.void(dst, row, start, out_index)

    def codegen(context, builder, signature, args):
        d = context.make_array(signature.args[0])(context, builder, args[0])
        r = context.make_array(signature.args[1])(context, builder, args[1])
        vector_ptr, byte_ptr = _V8.as_pointer(), ir.IntType(8).as_pointer()
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, _I32, _I32, _I32]), "llvm.prefetch.p0i8")

        span = WORK_BLOCKS * BLOCK  # elements of one work item
        source = builder.gep(r.data, [args[2]])
        copy = cgutils.alloca_once(builder, _F32, size=ir.Constant(_I64, span))
        with cgutils.for_range_slice(builder, ir.Constant(_I64, 0), ir.Constant(_I64, span),
                                     ir.Constant(_I64, 32)) as (i, _):
            for line in (0, 16):  # one prefetch per 64-byte line
                ahead = builder.gep(source, [builder.add(i, ir.Constant(_I64, _PREFETCH_AHEAD + line))])
                builder.call(prefetch, [builder.bitcast(ahead, byte_ptr)] + [ir.Constant(_I32, v) for v in (0, 2, 1)])
            for q in range(0, 32, 8):
                at = builder.add(i, ir.Constant(_I64, q))
                value = builder.load(builder.bitcast(builder.gep(source, [at]), vector_ptr), align=4)
                builder.store(value, builder.bitcast(builder.gep(copy, [at]), vector_ptr), align=4)

        def columns(base, k):
            rows = []
            for j in range(8):
                here = builder.gep(base, [builder.add(k, ir.Constant(_I64, j * BLOCK))])
                rows.append(builder.load(builder.bitcast(here, vector_ptr), align=4))
            return _transpose8(builder, rows)

        bases = [builder.gep(copy, [ir.Constant(_I64, 8 * BLOCK * g)]) for g in range(VECTOR_GROUPS)]
        slots = []
        for base in bases:
            first = columns(base, ir.Constant(_I64, 0)) + columns(base, ir.Constant(_I64, 8))
            acc = first[0]  # the partial starts at element 0, as the scalar chain does
            for column in first[1:]:
                acc = builder.fadd(acc, column)
            slots.append(cgutils.alloca_once_value(builder, acc))
        with cgutils.for_range_slice(builder, ir.Constant(_I64, 16), ir.Constant(_I64, BLOCK),
                                     ir.Constant(_I64, 16)) as (k, _):
            # Several groups' accumulators are independent chains, interleaved.
            tiles = [columns(base, k) + columns(base, builder.add(k, ir.Constant(_I64, 8)))
                     for base in bases]
            accs = [builder.load(slot) for slot in slots]
            for step in range(16):
                accs = [builder.fadd(acc, tile[step]) for acc, tile in zip(accs, tiles)]
            for slot, acc in zip(slots, accs):
                builder.store(acc, slot)
        for g, slot in enumerate(slots):
            out = builder.gep(d.data, [builder.add(args[3], ir.Constant(_I64, 8 * g))])
            builder.store(builder.load(slot), builder.bitcast(out, vector_ptr), align=4)
        return context.get_dummy_value()

    return sig, codegen


def _vector_group(dst, row, start, out_index):
    """Sum INTERLEAVE * VECTOR_GROUPS full blocks with _sum_blocks_f32 when the dtype
    allows; False if not done."""


@overload(_vector_group)
def _vector_group_impl(dst, row, start, out_index):
    if row.dtype == types.float32 and dst.dtype == types.float32:
        def impl(dst, row, start, out_index):
            _sum_blocks_f32(dst, row, start, out_index)
            return True
    else:
        def impl(dst, row, start, out_index):
            return False
    return impl


# Each parallel loop below calls a separately compiled (non-parallel) function
# for its work item: Numba's parfor lowering of loops nested in a prange body
# measured up to 30x slower than the same loop compiled on its own.


@functools.lru_cache(maxsize=None)
def _sum_kernels(term):
    plain_values = term is term_value  # a compile-time constant in the kernels below

    @njit(cache=True)
    def row_eight(dst, row, c, j0, nb, n):
        # Blocks j0 .. j0+INTERLEAVE-1 of one row: 8 independent chains side by side.
        if (j0 + INTERLEAVE) * BLOCK <= n:
            b = j0 * BLOCK
            p0 = term(row[b], c)
            p1 = term(row[b + BLOCK], c)
            p2 = term(row[b + 2 * BLOCK], c)
            p3 = term(row[b + 3 * BLOCK], c)
            p4 = term(row[b + 4 * BLOCK], c)
            p5 = term(row[b + 5 * BLOCK], c)
            p6 = term(row[b + 6 * BLOCK], c)
            p7 = term(row[b + 7 * BLOCK], c)
            for k in range(b + 1, b + BLOCK):
                p0 = add_rn(p0, term(row[k], c))
                p1 = add_rn(p1, term(row[k + BLOCK], c))
                p2 = add_rn(p2, term(row[k + 2 * BLOCK], c))
                p3 = add_rn(p3, term(row[k + 3 * BLOCK], c))
                p4 = add_rn(p4, term(row[k + 4 * BLOCK], c))
                p5 = add_rn(p5, term(row[k + 5 * BLOCK], c))
                p6 = add_rn(p6, term(row[k + 6 * BLOCK], c))
                p7 = add_rn(p7, term(row[k + 7 * BLOCK], c))
            dst[j0] = p0
            dst[j0 + 1] = p1
            dst[j0 + 2] = p2
            dst[j0 + 3] = p3
            dst[j0 + 4] = p4
            dst[j0 + 5] = p5
            dst[j0 + 6] = p6
            dst[j0 + 7] = p7
        else:
            for j in range(j0, min(j0 + INTERLEAVE, nb)):
                s = j * BLOCK
                p = term(row[s], c)
                for k in range(s + 1, min(s + BLOCK, n)):
                    p = add_rn(p, term(row[k], c))
                dst[j] = p

    @njit(cache=True)
    def row_group(dst, row, c, j0, nb, n, unit_stride):
        # Blocks j0 .. j0+WORK_BLOCKS-1 of one row: vectorised when possible, else
        # 8 scalar chains at a time (the same sums either way).
        if plain_values and unit_stride and (j0 + WORK_BLOCKS) * BLOCK <= n:
            if _vector_group(dst, row, j0 * BLOCK, j0):
                return
        for g0 in range(j0, min(j0 + WORK_BLOCKS, nb), INTERLEAVE):
            row_eight(dst, row, c, g0, nb, n)

    @njit(parallel=True, cache=True)
    def row_partials(P, x, center):
        M, n = x.shape
        nb = P.shape[1]
        nwork = (nb + WORK_BLOCKS - 1) // WORK_BLOCKS
        unit_stride = x.strides[1] == x.itemsize and P.strides[1] == P.itemsize
        for w in prange(M * nwork):
            i = w // nwork
            row_group(P[i], x[i], center[i], (w % nwork) * WORK_BLOCKS, nb, n, unit_stride)

    @njit(cache=True)
    def column_block(dst, xt, center, s, stop, i0, i1):
        # One block (elements s .. stop-1) of outputs i0 .. i1-1; the inner loop
        # over outputs vectorises, each output adding its own terms in order.
        first = xt[s]
        for i in range(i0, i1):
            dst[i] = term(first[i], center[i])
        for k in range(s + 1, stop):
            src = xt[k]
            for i in range(i0, i1):
                dst[i] = add_rn(dst[i], term(src[i], center[i]))

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

    return row_partials, column_partials


@njit(cache=True)
def _tree_row(row, nb):
    return canonical(tree_inplace(row, 0, nb))


@njit(parallel=True, cache=True)
def _combine(out, P):
    # P[i, :] are the block partials of output i (any strides); P is scratch.
    M, nb = P.shape
    for i in prange(M):
        out[i] = _tree_row(P[i], nb)


def _outputs_contiguous(x):
    M, n = x.shape
    return M > 1 and n > 1 and x.strides[0] == x.itemsize


def blocked_sum(term):
    """Launcher run(out[M], x[M, n], center[M]): out[i] = documented sum of term(x[i, k], center[i])."""
    row_partials, column_partials = _sum_kernels(term)

    def run(out, x, center):
        M, n = x.shape
        if M == 0:
            return
        if n == 0:
            out[:] = 0
            return
        nb = (n + BLOCK - 1) // BLOCK
        if _outputs_contiguous(x):
            P = np.empty((nb, M), dtype=x.dtype)
            column_partials(P, x.T, center)
            _combine(out, P.T)
        else:
            P = np.empty((M, nb), dtype=x.dtype)
            row_partials(P, x, center)
            _combine(out, P)

    return run


sum_values = blocked_sum(term_value)
sum_centered_squares = blocked_sum(term_centered_square)


# ------------------------------------------------------------------ max / min / argmax


@njit(parallel=True, cache=True)
def _extreme_chunks(K, I, x, largest):
    # K[i, c], I[i, c]: best key and its first index in chunk c of row i.
    M, n = x.shape
    nch = K.shape[1]
    for w in prange(M * nch):
        i = w // nch
        c = w % nch
        s = c * EXTREME_CHUNK
        row = x[i]
        best = order_key(row[s], largest)
        at = s
        for k in range(s + 1, min(s + EXTREME_CHUNK, n)):
            key = order_key(row[k], largest)
            if key > best:
                best = key
                at = k
        K[i, c] = best
        I[i, c] = at


@njit(parallel=True, cache=True)
def _extreme_columns(K, I, xt, largest):
    # Outputs contiguous: K[c, i], I[c, i] for chunk c of the reduced elements.
    n, M = xt.shape
    nch = K.shape[0]
    nout = (M + OUTPUT_CHUNK - 1) // OUTPUT_CHUNK
    for w in prange(nch * nout):
        c = w // nout
        i0 = (w % nout) * OUTPUT_CHUNK
        i1 = min(i0 + OUTPUT_CHUNK, M)
        s = c * EXTREME_CHUNK
        kd = K[c]
        idx = I[c]
        first = xt[s]
        for i in range(i0, i1):
            kd[i] = order_key(first[i], largest)
            idx[i] = s
        for k in range(s + 1, min(s + EXTREME_CHUNK, n)):
            src = xt[k]
            for i in range(i0, i1):
                key = order_key(src[i], largest)
                if key > kd[i]:
                    kd[i] = key
                    idx[i] = k


@njit(parallel=True, cache=True)
def _extreme_combine(values, indices, x, K, I):
    M, nch = K.shape
    for i in prange(M):
        best = K[i, 0]
        at = I[i, 0]
        for c in range(1, nch):
            if K[i, c] > best:  # chunks in increasing index order: ties keep the first
                best = K[i, c]
                at = I[i, c]
        indices[i] = at
        values[i] = canonical(x[i, at])


def extreme(values, indices, x, largest):
    """values[i], indices[i] = the max (largest) or min of row x[i] and its first index."""
    M, n = x.shape
    if M == 0:
        return
    nch = (n + EXTREME_CHUNK - 1) // EXTREME_CHUNK
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
