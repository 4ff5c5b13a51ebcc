"""CPU launchers of softmax's and log_softmax's fused rows (softrep.algorithms.softmax).

Arrays are (rows, n), C-contiguous, n >= 1: the softmax dim is the last;
`partials` (rows, ceil(n / BLOCK)) is scratch for each row's block partials.
One work item per ROWS_PER_ITEM rows, each row computed alone by the
algorithm's row function (its sums in the documented order of its own
length), so neither the split nor the thread count changes a bit.  Rows of
at most SHORT_ROW_MAX elements go a block of rows at a time through the
algorithm's block functions, which give every element its row function's
operations (softrep.algorithms.softmax, "blocks of short rows").
"""

import numba
import numpy as np
from numba import carray, njit, prange, types

from ..algorithms.products import tree_carry, tree_finish, tree_slot, tree_slots
from ..algorithms.reduction import BLOCK
from ..algorithms.softmax import (log_softmax_block, log_softmax_grad_block, log_softmax_grad_row, log_softmax_row,
                                  nll_coef, nll_grad_block, nll_grad_row, nll_mean, nll_of_row, softmax_block,
                                  softmax_grad_block, softmax_grad_row, softmax_row)
from ..primitives.fpenv import CONTROL_MASK, enter_ieee, leave_ieee
from .launch import address_as_pointer, kernel, prefer_host_vectors

_FLOATS = (types.float32, types.float64)
_I = types.int64
ROWS_PER_ITEM = 16


def _c(t, ndim):
    return types.Array(t, ndim, "C")


# Rows of at most SHORT_ROW_MAX elements (one block of the sum) run as blocks
# of rows: a work item of about BLOCK_ELEMENTS elements through the loops of
# one block (softrep.algorithms.softmax, "blocks of short rows"), its `each`
# scratch allocated once per item.  Longer rows gained nothing.
SHORT_ROW_MAX = BLOCK
BLOCK_ELEMENTS = 4096


@njit(cache=True)
def _rows_per_item(n):
    return max(ROWS_PER_ITEM, BLOCK_ELEMENTS // n) if n <= SHORT_ROW_MAX else ROWS_PER_ITEM


@njit(cache=True)
def _flat(a, r0, r1):
    """Rows r0 .. r1-1 of the C-contiguous 2-D array a, flat."""
    n = a.shape[1]
    return a.reshape(-1)[r0 * n:r1 * n]


# Each parallel loop calls a separately compiled function for its rows:
# Numba's parfor lowering of a loop nested in a prange body keeps it from
# vectorising.

@kernel("softmax.forward_rows", *[(_c(t, 2), _c(t, 2), _c(t, 2), _I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _forward_rows(out, partials, x, r0, r1):
    prefer_host_vectors()
    n = x.shape[1]
    if n <= SHORT_ROW_MAX:
        softmax_block(_flat(out, r0, r1), _flat(x, r0, r1), n, partials[r0], np.empty((r1 - r0) * n, x.dtype))
        return
    for r in range(r0, r1):
        softmax_row(out[r], x[r], partials[r])


@kernel("softmax.log_forward_rows", *[(_c(t, 2), _c(t, 2), _c(t, 2), _I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _log_forward_rows(out, partials, x, r0, r1):
    prefer_host_vectors()
    n = x.shape[1]
    if n <= SHORT_ROW_MAX:
        log_softmax_block(_flat(out, r0, r1), _flat(x, r0, r1), n, partials[r0], np.empty((r1 - r0) * n, x.dtype),
                          np.empty((r1 - r0) * n, x.dtype))
        return
    for r in range(r0, r1):
        log_softmax_row(out[r], x[r], partials[r])


@kernel("softmax.backward_rows", *[(_c(t, 2),) * 4 + (_I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _backward_rows(dx, partials, g, out, r0, r1):
    prefer_host_vectors()
    n = g.shape[1]
    if n <= SHORT_ROW_MAX:
        softmax_grad_block(_flat(dx, r0, r1), _flat(g, r0, r1), _flat(out, r0, r1), n, partials[r0],
                           np.empty((r1 - r0) * n, g.dtype))
        return
    for r in range(r0, r1):
        softmax_grad_row(dx[r], g[r], out[r], partials[r])


@kernel("softmax.log_backward_rows", *[(_c(t, 2),) * 4 + (_I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _log_backward_rows(dx, partials, g, out, r0, r1):
    prefer_host_vectors()
    n = g.shape[1]
    if n <= SHORT_ROW_MAX:
        log_softmax_grad_block(_flat(dx, r0, r1), _flat(g, r0, r1), _flat(out, r0, r1), n, partials[r0],
                               np.empty((r1 - r0) * n, g.dtype))
        return
    for r in range(r0, r1):
        log_softmax_grad_row(dx[r], g[r], out[r], partials[r])


@kernel("softmax.forward", *[(_c(t, 2), _c(t, 2), _c(t, 2)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def forward(out, partials, x):
    """out[r] = softmax of row x[r]."""
    rows, per = x.shape[0], _rows_per_item(x.shape[1])
    for w in prange((rows + per - 1) // per):
        _forward_rows(out, partials, x, w * per, min(rows, w * per + per))


@kernel("softmax.log_forward", *[(_c(t, 2), _c(t, 2), _c(t, 2)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def log_forward(out, partials, x):
    """out[r] = log_softmax of row x[r]."""
    rows, per = x.shape[0], _rows_per_item(x.shape[1])
    for w in prange((rows + per - 1) // per):
        _log_forward_rows(out, partials, x, w * per, min(rows, w * per + per))


@kernel("softmax.backward", *[(_c(t, 2),) * 4 for t in _FLOATS])
@njit(parallel=True, cache=True)
def backward(dx, partials, g, out):
    """dx[r] = softmax's input gradient of row r (output out[r], output gradient g[r])."""
    rows, per = g.shape[0], _rows_per_item(g.shape[1])
    for w in prange((rows + per - 1) // per):
        _backward_rows(dx, partials, g, out, w * per, min(rows, w * per + per))


@kernel("softmax.log_backward", *[(_c(t, 2),) * 4 for t in _FLOATS])
@njit(parallel=True, cache=True)
def log_backward(dx, partials, g, out):
    """dx[r] = log_softmax's input gradient of row r (output out[r], output gradient g[r])."""
    rows, per = g.shape[0], _rows_per_item(g.shape[1])
    for w in prange((rows + per - 1) // per):
        _log_backward_rows(dx, partials, g, out, w * per, min(rows, w * per + per))


# ------------------------------------------------------------------ cross-entropy through addresses
#
# cross_entropy of (N, C) logits at int64 class indices, reduction 'mean' or
# 'sum', through the tensors' addresses (the light path of
# softrep/cpu/launch.py): each row's log_softmax and loss by the row
# functions, the rows split into `items` runs (one thread's each; every row
# is computed alone, so the split changes no bit), then the losses added
# along the batch tree in position order (the bits of `tree_sum` over the
# per-position losses) and the mean.  The backward is log_softmax's backward
# of each row's nll gradient, whose sum it knows without the row
# (`nll_grad_row`).  The same roundings in the same order as the separate
# ops, so the same bits.


@njit(cache=True, error_model="numpy")
def _cross_entropy_rows(losses, lp, a, t, r0, r1, classes, ignore):
    prefer_host_vectors()
    partials = np.empty((classes + BLOCK - 1) // BLOCK, lp.dtype)
    if classes <= SHORT_ROW_MAX:
        per = _rows_per_item(classes)
        each, each2 = np.empty(per * classes, lp.dtype), np.empty(per * classes, lp.dtype)
        for b0 in range(r0, r1, per):
            b1 = min(b0 + per, r1)
            m = (b1 - b0) * classes
            log_softmax_block(lp[b0 * classes:b1 * classes], a[b0 * classes:b1 * classes], classes, partials,
                              each[:m], each2[:m])
    else:
        for i in range(r0, r1):
            log_softmax_row(lp[i * classes:(i + 1) * classes], a[i * classes:(i + 1) * classes], partials)
    for i in range(r0, r1):
        losses[i] = nll_of_row(lp[i * classes:(i + 1) * classes], max(t[i], 0), t[i] != ignore)


@njit(cache=True, error_model="numpy")
def _cross_entropy_grad_rows(d, lp, t, coef, r0, r1, classes, ignore):
    prefer_host_vectors()
    if classes <= SHORT_ROW_MAX:
        per = _rows_per_item(classes)
        zeros, each = np.zeros(per * classes, lp.dtype), np.empty(per * classes, lp.dtype)
        for b0 in range(r0, r1, per):
            b1 = min(b0 + per, r1)
            m = (b1 - b0) * classes
            nll_grad_block(d[b0 * classes:b1 * classes], zeros[:m], lp[b0 * classes:b1 * classes], classes, t[b0:b1],
                           ignore, coef, each[:m])
        return
    zeros = np.zeros(classes, lp.dtype)
    for i in range(r0, r1):
        nll_grad_row(d[i * classes:(i + 1) * classes], zeros, lp[i * classes:(i + 1) * classes], max(t[i], 0),
                     t[i] != ignore, coef)


def _cross_entropy_kernels(dtype):
    def forward(loss, logp, x, target, info, rows, classes, ignore, mean, slots, items, mask):
        # info[0]: the first position whose target is neither a class nor
        # `ignore` (-1: none); info[1]: the number of kept positions.
        old = enter_ieee(mask)
        out = carray(address_as_pointer(loss), 1, dtype)
        lp = carray(address_as_pointer(logp), rows * classes, dtype)
        a = carray(address_as_pointer(x), rows * classes, dtype)
        t = carray(address_as_pointer(target), rows, np.int64)
        status = carray(address_as_pointer(info), 2, np.int64)
        status[0] = -1
        kept = 0
        for i in range(rows):
            if t[i] != ignore:
                if t[i] < 0 or t[i] >= classes:
                    status[0] = i
                    leave_ieee(old)
                    return
                kept += 1
        status[1] = kept
        losses = np.empty(rows, dtype)
        if items == 1:
            _cross_entropy_rows(losses, lp, a, t, 0, rows, classes, ignore)
        else:
            step = (rows + items - 1) // items
            for w in prange(items):
                _cross_entropy_rows(losses, lp, a, t, w * step, min(rows, w * step + step), classes, ignore)
        stack = np.empty(slots, dtype)
        count = 0
        for i in range(rows):
            stack[tree_slot(count)] = losses[i]
            count = tree_carry(stack, 1, count, 1)
        if count > 1:  # a single position is its own node: passed on as it is
            tree_finish(stack, 1, count, 1)
        out[0] = nll_mean(stack[0], dtype(kept)) if mean else stack[0]
        leave_ieee(old)

    def backward(dx, logp, target, grad, rows, classes, ignore, kept, mean, items, mask):
        old = enter_ieee(mask)
        d = carray(address_as_pointer(dx), rows * classes, dtype)
        lp = carray(address_as_pointer(logp), rows * classes, dtype)
        t = carray(address_as_pointer(target), rows, np.int64)
        g = carray(address_as_pointer(grad), 1, dtype)
        coef = nll_coef(g[0], dtype(kept), mean)
        if items == 1:
            _cross_entropy_grad_rows(d, lp, t, coef, 0, rows, classes, ignore)
        else:
            step = (rows + items - 1) // items
            for w in prange(items):
                _cross_entropy_grad_rows(d, lp, t, coef, w * step, min(rows, w * step + step), classes, ignore)
        leave_ieee(old)

    name = np.dtype(dtype).name
    address = types.intp
    return (kernel(f"softmax.cross_entropy.{name}", (address,) * 5 + (_I,) * 7)(
                njit(parallel=True, cache=True, error_model="numpy")(forward)),
            kernel(f"softmax.cross_entropy_grad.{name}", (address,) * 4 + (_I,) * 7)(
                njit(parallel=True, cache=True, error_model="numpy")(backward)))


_CROSS_ENTROPY = {np.dtype(t): _cross_entropy_kernels(t) for t in (np.float32, np.float64)}

# Rows of at most this many elements in all run on the calling thread: a
# parallel launch costs more than they do.
CROSS_ENTROPY_SERIAL_ELEMENTS = 1 << 13


def _thread_runs(rows, classes):
    return 1 if rows * classes <= CROSS_ENTROPY_SERIAL_ELEMENTS else max(1, min(rows, numba.get_num_threads()))


def cross_entropy(dtype, loss, logp, x, target, info, rows, classes, ignore, mean):
    """loss (one element) = cross-entropy of the rows x (rows, classes >= 1;
    rows >= 1) at `target` (int64, `ignore` for an ignored position), the
    mean over the kept positions or (mean False) their sum; logp receives
    log_softmax(x).  info (two int64): the first position whose target is
    out of range (-1 if none; nothing else is then written), and the number
    of kept positions.  C-contiguous buffers of numpy dtype `dtype` given by
    their addresses."""
    _CROSS_ENTROPY[dtype][0](loss, logp, x, target, info, rows, classes, ignore, mean, tree_slots(rows),
                             _thread_runs(rows, classes), CONTROL_MASK)


def cross_entropy_grad(dtype, dx, logp, target, grad, rows, classes, ignore, kept, mean):
    """dx (rows, classes) = the gradient of `cross_entropy`'s loss with respect
    to its x, for the loss gradient `grad` (one element), given the forward's
    logp and `kept` (info[1])."""
    _CROSS_ENTROPY[dtype][1](dx, logp, target, grad, rows, classes, ignore, kept, mean, _thread_runs(rows, classes),
                             CONTROL_MASK)
