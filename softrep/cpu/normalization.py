"""CPU launchers of batch_norm's fused per-channel steps (softrep.algorithms.normalization).

The input is viewed as rows (N*C, positions): row r holds one channel of one
sample, and its per-row operands (m, s, ...) are that channel's statistics.
One work item per row, the positions in a loop that vectorises; every
element is computed alone, so the split changes no bit.
"""

from numba import njit, prange, types

from ..algorithms.normalization import normalize_element, normalize_grad_element
from .launch import kernel

_FLOATS = (types.float32, types.float64)


def _c(t, ndim):
    return types.Array(t, ndim, "C")


# Each parallel loop calls a separately compiled row function: Numba's parfor
# lowering of a loop nested in a prange body can be many times slower.

@kernel("normalization.normalize_row", *[(_c(t, 1), _c(t, 1), t, t) for t in _FLOATS])
@njit(cache=True)
def _normalize_row(out, x, m, s):
    for k in range(x.shape[0]):
        out[k] = normalize_element(x[k], m, s)


@kernel("normalization.normalize", *[(_c(t, 2), _c(t, 2), _c(t, 1), _c(t, 1)) for t in _FLOATS])
@njit(parallel=True, cache=True)
def normalize(out, x, m, s):
    """out[r, k] = div(sub(x[r, k], m[r]), s[r])."""
    for r in prange(x.shape[0]):
        _normalize_row(out[r], x[r], m[r], s[r])


@kernel("normalization.normalize_grad_row", *[(_c(t, 1), _c(t, 1), _c(t, 1), t, t, t) for t in _FLOATS])
@njit(cache=True)
def _normalize_grad_row(out, g, xhat, mg, c, s):
    for k in range(g.shape[0]):
        out[k] = normalize_grad_element(g[k], xhat[k], mg, c, s)


@kernel("normalization.normalize_grad", *[(_c(t, 2), _c(t, 2), _c(t, 2), _c(t, 1), _c(t, 1), _c(t, 1))
                                          for t in _FLOATS])
@njit(parallel=True, cache=True)
def normalize_grad(out, g, xhat, mg, c, s):
    """out[r, k] = div(sub(sub(g[r, k], mg[r]), mul(xhat[r, k], c[r])), s[r])."""
    for r in prange(g.shape[0]):
        _normalize_grad_row(out[r], g[r], xhat[r], mg[r], c[r], s[r])
