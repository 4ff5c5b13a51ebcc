"""CPU launchers of softmax's and log_softmax's fused rows (softrep.algorithms.softmax).

Arrays are (rows, n), C-contiguous, n >= 1: the softmax dim is the last;
`partials` (rows, ceil(n / BLOCK)) is scratch for each row's block partials.
One work item per ROWS_PER_ITEM rows, each row computed alone by the
algorithm's row function (its sums in the documented order of its own
length), so neither the split nor the thread count changes a bit.
"""

from numba import njit, prange, types

from ..algorithms.softmax import log_softmax_grad_row, log_softmax_row, softmax_grad_row, softmax_row
from .launch import kernel, prefer_host_vectors

_FLOATS = (types.float32, types.float64)
_I = types.int64
ROWS_PER_ITEM = 16


def _c(t, ndim):
    return types.Array(t, ndim, "C")


@njit(cache=True)
def _items(rows):
    return (rows + ROWS_PER_ITEM - 1) // ROWS_PER_ITEM


# Each parallel loop calls a separately compiled function for its rows:
# Numba's parfor lowering of a loop nested in a prange body keeps it from
# vectorising.

@kernel("softmax.forward_rows", *[(_c(t, 2), _c(t, 2), _c(t, 2), _I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _forward_rows(out, partials, x, r0, r1):
    prefer_host_vectors()
    for r in range(r0, r1):
        softmax_row(out[r], x[r], partials[r])


@kernel("softmax.log_forward_rows", *[(_c(t, 2), _c(t, 2), _c(t, 2), _I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _log_forward_rows(out, partials, x, r0, r1):
    prefer_host_vectors()
    for r in range(r0, r1):
        log_softmax_row(out[r], x[r], partials[r])


@kernel("softmax.backward_rows", *[(_c(t, 2),) * 4 + (_I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _backward_rows(dx, partials, g, out, r0, r1):
    prefer_host_vectors()
    for r in range(r0, r1):
        softmax_grad_row(dx[r], g[r], out[r], partials[r])


@kernel("softmax.log_backward_rows", *[(_c(t, 2),) * 4 + (_I, _I) for t in _FLOATS])
@njit(cache=True, error_model="numpy")
def _log_backward_rows(dx, partials, g, out, r0, r1):
    prefer_host_vectors()
    for r in range(r0, r1):
        log_softmax_grad_row(dx[r], g[r], out[r], partials[r])


@kernel("softmax.forward", *[(_c(t, 2), _c(t, 2), _c(t, 2)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def forward(out, partials, x):
    """out[r] = softmax of row x[r]."""
    rows = x.shape[0]
    for w in prange(_items(rows)):
        _forward_rows(out, partials, x, w * ROWS_PER_ITEM, min(rows, w * ROWS_PER_ITEM + ROWS_PER_ITEM))


@kernel("softmax.log_forward", *[(_c(t, 2), _c(t, 2), _c(t, 2)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def log_forward(out, partials, x):
    """out[r] = log_softmax of row x[r]."""
    rows = x.shape[0]
    for w in prange(_items(rows)):
        _log_forward_rows(out, partials, x, w * ROWS_PER_ITEM, min(rows, w * ROWS_PER_ITEM + ROWS_PER_ITEM))


@kernel("softmax.backward", *[(_c(t, 2),) * 4 for t in _FLOATS])
@njit(parallel=True, cache=True)
def backward(dx, partials, g, out):
    """dx[r] = softmax's input gradient of row r (output out[r], output gradient g[r])."""
    rows = g.shape[0]
    for w in prange(_items(rows)):
        _backward_rows(dx, partials, g, out, w * ROWS_PER_ITEM, min(rows, w * ROWS_PER_ITEM + ROWS_PER_ITEM))


@kernel("softmax.log_backward", *[(_c(t, 2),) * 4 for t in _FLOATS])
@njit(parallel=True, cache=True)
def log_backward(dx, partials, g, out):
    """dx[r] = log_softmax's input gradient of row r (output out[r], output gradient g[r])."""
    rows = g.shape[0]
    for w in prange(_items(rows)):
        _log_backward_rows(dx, partials, g, out, w * ROWS_PER_ITEM, min(rows, w * ROWS_PER_ITEM + ROWS_PER_ITEM))
