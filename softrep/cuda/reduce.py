"""CUDA schedules of the reductions (sum order of docs/order.md, and max/min).

Input is a 2-D array x[M, n] (any strides): M outputs, n reduced elements each.
This module only maps work items to threads; every value comes from
softrep/algorithms/reduction.py, the same functions the CPU kernels call.

A sum is computed in passes, each a grid-stride loop over independent work
items, with no atomics and no dependence on the launch shape:

1. `partials`: one thread per (output, block of BLOCK = 128 elements) writes
   the block's partial (`TermSum.block`: begun with its first term, extended
   left to right) into P[i, j].
2. `group_pass`: one thread per (output, aligned group of GROUP = 64
   partials) runs the pairwise tree on its group (`tree_inplace`).  An
   aligned group of 2**6 partials reduces to one node of the documented tree
   (the pairing never crosses a group boundary below level 6), so replacing
   each group by its result and repeating gives the tree's total.  The pass
   repeats until one value per output is left (3 passes for 10**7 elements).
3. `finish` runs the last group (`sum_from_partials`: the canonical result).

Max/min/argmax: one thread per output scans its row (`extreme_scan`); the
comparison is a total order with ties to the first index, so the result does
not depend on the scan.
"""

import functools

from numba import cuda, types

from ..primitives.jit import SIMULATOR
from ..algorithms.products import tree_carry, tree_finish, tree_slot
from ..algorithms.reduction import (BLOCK, CENTERED_SQUARES, GROUP, STACK, VALUES, extreme_scan, extreme_value,
                                    sum_from_partials, tree_inplace, zero_like)

THREADS = 256
_SIM_BLOCKS, _SIM_THREADS = 1, 4


def grid(work):
    if SIMULATOR:
        return _SIM_BLOCKS, _SIM_THREADS
    return max(1, min((work + THREADS - 1) // THREADS, 65535)), THREADS


@functools.lru_cache(maxsize=None)
def _sum_kernels(sums):
    block = sums.block

    @cuda.jit(cache=not SIMULATOR)
    def partials(P, x, center):
        M, n = x.shape
        nb = P.shape[1]
        start, step = cuda.grid(1), cuda.gridsize(1)
        for w in range(start, M * nb, step):
            i = w // nb
            j = w % nb
            s = j * BLOCK
            P[i, j] = block(x[i], s, min(s + BLOCK, n), center[i])

    return partials


@cuda.jit(cache=not SIMULATOR)
def _group_pass(Q, P, width):
    # Q[i, g] = tree of P[i, g*GROUP : min((g+1)*GROUP, width)]; P is scratch.
    M = P.shape[0]
    ngroups = Q.shape[1]
    start, step = cuda.grid(1), cuda.gridsize(1)
    for w in range(start, M * ngroups, step):
        i = w // ngroups
        g = w % ngroups
        s = g * GROUP
        Q[i, g] = tree_inplace(P[i], s, min(GROUP, width - s))


@cuda.jit(cache=not SIMULATOR)
def _finish(out, P, width):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = sum_from_partials(P[i], width)


@cuda.jit(cache=not SIMULATOR)
def _fill_zero(out):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = zero_like(out[i])


def blocked_sum(sums):
    """Launcher run(stream, out[M], x[M, n], center[M]): the documented sum of
    sums.term(x[i, k], center[i]) over k, for each i (`sums`: a TermSum of
    softrep.algorithms.reduction)."""
    partials = _sum_kernels(sums)

    def run(stream, out, x, center):
        M, n = x.shape
        if M == 0:
            return
        if n == 0:
            _fill_zero[grid(M) + (stream,)](out)
            return
        width = (n + BLOCK - 1) // BLOCK
        P = cuda.device_array((M, width), dtype=x.dtype, stream=stream)
        partials[grid(M * width) + (stream,)](P, x, center)
        while width > GROUP:
            ngroups = (width + GROUP - 1) // GROUP
            Q = cuda.device_array((M, ngroups), dtype=x.dtype, stream=stream)
            _group_pass[grid(M * ngroups) + (stream,)](Q, P, width)
            P, width = Q, ngroups
        _finish[grid(M) + (stream,)](out, P, width)

    run.partials = partials
    return run


sum_values = blocked_sum(VALUES)
sum_centered_squares = blocked_sum(CENTERED_SQUARES)


@cuda.jit(cache=not SIMULATOR)
def _extreme(values, indices, x, largest):
    M, n = x.shape
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, M, step):
        best, at = extreme_scan(x[i], 0, n, largest)
        indices[i] = at
        values[i] = extreme_value(x[i, at])


def extreme(stream, values, indices, x, largest):
    """values[i], indices[i] = the max (largest) or min of row x[i] and its first index."""
    M = x.shape[0]
    if M == 0:
        return
    _extreme[grid(M) + (stream,)](values, indices, x, largest)


@functools.lru_cache(maxsize=None)
def _tree_nodes_kernel(dtype_name):
    nbtype = getattr(types, dtype_name)

    def kernel(out, x, first, counts, width):
        # One work item per (node, column) with its own stack of tree nodes in
        # local memory: the rows of the node merged into the batch tree as they
        # come (softrep.algorithms.products), as on the CPU.  Flat arrays:
        # x[s*width + c], out[node*width + c].
        stack = cuda.local.array(STACK, nbtype)
        start, step = cuda.grid(1), cuda.gridsize(1)
        for t in range(start, out.size, step):
            c = t % width
            node = t // width
            count = 0
            for s in range(first[node], first[node] + counts[node]):
                stack[tree_slot(count)] = x[s * width + c]
                count = tree_carry(stack, 1, count, 1)
            if counts[node] > 1:  # a single row is its own node: passed on as it is
                tree_finish(stack, 1, count, 1)
            out[t] = stack[0]

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def tree_nodes(stream, out, x, first, counts):
    """out (nodes, F) = for each node the batch tree over the rows
    x[first[node] : first[node] + counts[node]] of x (S, F), column by column."""
    if out.size == 0:
        return
    kernel, _ = _tree_nodes_kernel(str(out.dtype))
    kernel[grid(out.size) + (stream,)](out.reshape(-1), x.reshape(-1), first, counts, out.shape[1])


def extreme_values(stream, values, x, largest):
    """values[i] = the max (largest) or min of row x[i] (the indices of `extreme` dropped)."""
    M = x.shape[0]
    if M == 0:
        return
    extreme(stream, values, cuda.device_array(M, dtype="int64", stream=stream), x, largest)


def _register_audit():
    from numba.core import types

    from . import audit

    for dtype in (types.float32, types.float64):
        flat, index = types.Array(dtype, 1, "C"), types.Array(types.int64, 1, "C")
        audit.register(f"reduction.tree_nodes.{dtype}", lambda d=str(dtype), flat=flat, index=index: (
            _tree_nodes_kernel(d)[1], (flat, flat, index, index, types.int64)))
        mat, vec = types.Array(dtype, 2, "A"), types.Array(dtype, 1, "A")
        for label, sums in (("sum", VALUES), ("centered_squares", CENTERED_SQUARES)):
            audit.register(f"reduction.{label}.partials.{dtype}",
                           lambda sums=sums, mat=mat, vec=vec: (_sum_kernels(sums).py_func, (mat, mat, vec)))
        audit.register(f"reduction.group_pass.{dtype}",
                       lambda mat=mat: (_group_pass.py_func, (mat, mat, types.int64)))
        audit.register(f"reduction.fill_zero.{dtype}", lambda vec=vec: (_fill_zero.py_func, (vec,)))
        audit.register(f"reduction.finish.{dtype}",
                       lambda mat=mat, vec=vec: (_finish.py_func, (vec, mat, types.int64)))
        audit.register(f"reduction.extreme.{dtype}",
                       lambda mat=mat, vec=vec: (_extreme.py_func,
                                                 (vec, types.Array(types.int64, 1, "A"), mat, types.boolean)))


_register_audit()
