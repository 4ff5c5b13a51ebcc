"""CPU launchers for the reductions (sum order of docs/order.md, and max/min).

Input is a 2-D view x[M, n]: M outputs, n reduced elements each in the
documented logical order (the op layer permutes and reshapes).  A sum runs in
two passes, both parallel over independent work items:

1. block partials: P[i, j] = the left-to-right sum of block j of row i.
   Work items are (row, group of 8 blocks) when rows are contiguous -- the 8
   blocks of a group are 8 independent dependency chains interleaved for
   instruction-level parallelism, each still added left to right -- and
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
from numba import njit, prange

from ..reduction_order import BLOCK, order_key, term_centered_square, term_value, tree_inplace
from ..rounding import add_rn, canonical

INTERLEAVE = 8  # blocks summed side by side by one work item (row layout)
OUTPUT_CHUNK = 256  # outputs per work item (column layout)
EXTREME_CHUNK = 4096  # elements per work item for max/min


# Each parallel loop below calls a separately compiled (non-parallel) function
# for its work item: Numba's parfor lowering of loops nested in a prange body
# measured up to 30x slower than the same loop compiled on its own.


@functools.lru_cache(maxsize=None)
def _sum_kernels(term):
    @njit(cache=True)
    def row_group(dst, row, c, j0, nb, n):
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

    @njit(parallel=True, cache=True)
    def row_partials(P, x, center):
        M, n = x.shape
        nb = P.shape[1]
        ngroups = (nb + INTERLEAVE - 1) // INTERLEAVE
        for w in prange(M * ngroups):
            i = w // ngroups
            row_group(P[i], x[i], center[i], (w % ngroups) * INTERLEAVE, nb, n)

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
