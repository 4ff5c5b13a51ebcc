"""CPU launchers of the normalisations' fused steps (softrep.algorithms.normalization).

`normalize`, `normalize_grad`: the input is viewed as rows (N*C, positions):
row r holds one channel of one sample, and its per-row operands (m, s, ...)
are that channel's statistics.  One work item per row, the positions in a
loop that vectorises; every element is computed alone, so the split changes
no bit.

`normalize_affine`: batch_norm's normalisation and its affine map in one
pass, writing xhat (kept for the backward) and y; w and b per row.
`batch_norm_grad`: its backward and the normalisation's per-row sums
(`batch_norm_grad_row`); contiguous float32 rows of a multiple of 8
elements run 8 at a time, the sums in the lanes of one vector
(softrep.cpu.reduce.eight_rows_f32), as layer_norm's below.

`layer_norm`, `layer_norm_grad`: layer_norm and rms_norm with the affine map,
one row per normalised group.  Contiguous float32 rows of a multiple of 8
elements run 8 at a time, two such groups together: each row's sums are
the lanes of one vector (softrep.cpu.reduce.eight_rows_f32, the documented
order in each lane), the sum of a row's centred squares from a scratch row
of its terms, and the elementwise steps row by row while the rows are in
cache.  Other rows run one at a time (`layer_norm_row`, the streaming
sums).  Both give each row the bits of the documented sequence; which rows
share a work item changes nothing.  `layer_norm_grad_nodes`: the same
backward for rows that are a batch's samples, with the affine gradients'
batch-tree nodes formed in the pass (see there).
"""

import numpy as np
from numba import carray, njit, prange, types
from numba.extending import register_jitable

from ..algorithms.normalization import (affine_element, batch_norm_grad_row, batch_norm_grad_terms, grad_terms,
                                        layer_norm_grad_row, layer_norm_row, mean_of_sum, normalize_element,
                                        normalize_grad_element, normalized, scale_of_squares,
                                        scaled_normalize_grad_element)
from ..algorithms.products import tree_carry, tree_finish, tree_node_of_eight, tree_slot, tree_slots
from ..algorithms.reduction import BLOCK, STACK, term_centered_square, zero_like
from ..primitives.fpenv import CONTROL_MASK, enter_ieee, leave_ieee
from ..primitives.vector import LANES
from .launch import address_as_pointer, kernel
from .reduce import GROUPS_PER_ITEM, eight_rows_f32_into, eight_rows_scratch

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


@kernel("normalization.normalize_grad_row", *[(_c(t, 1), _c(t, 1), _c(t, 1), t, t, t, t) for t in _FLOATS])
@njit(cache=True)
def _normalize_grad_row(out, gy, xhat, w, mg, c, s):
    for k in range(gy.shape[0]):
        out[k] = scaled_normalize_grad_element(gy[k], w, xhat[k], mg, c, s)


@kernel("normalization.normalize_grad", *[(_c(t, 2), _c(t, 2), _c(t, 2), _c(t, 1), _c(t, 1), _c(t, 1), _c(t, 1))
                                          for t in _FLOATS])
@njit(parallel=True, cache=True)
def normalize_grad(out, gy, xhat, w, mg, c, s):
    """out[r, k] = div(sub(sub(g, mg[r]), mul(xhat[r, k], c[r])), s[r]) with
    g = mul(gy[r, k], w[r]) (`scaled_normalize_grad_element`; w = 1: g = gy)."""
    for r in prange(gy.shape[0]):
        _normalize_grad_row(out[r], gy[r], xhat[r], w[r], mg[r], c[r], s[r])


@kernel("normalization.normalize_affine_row", *[(_c(t, 1), _c(t, 1), _c(t, 1), t, t, t, t) for t in _FLOATS])
@njit(cache=True)
def _normalize_affine_row(y, xhat, x, m, s, w, b):
    for k in range(x.shape[0]):
        v = normalize_element(x[k], m, s)
        xhat[k] = v
        y[k] = affine_element(v, w, b)


@kernel("normalization.normalize_affine", *[(_c(t, 2), _c(t, 2), _c(t, 2)) + (_c(t, 1),) * 4 for t in _FLOATS])
@njit(parallel=True, cache=True)
def normalize_affine(y, xhat, x, m, s, w, b):
    """xhat[r, k] = div(sub(x[r, k], m[r]), s[r]) and
    y[r, k] = add(mul(xhat[r, k], w[r]), b[r])."""
    for r in prange(x.shape[0]):
        _normalize_affine_row(y[r], xhat[r], x[r], m[r], s[r], w[r], b[r])


# rows per work item of batch_norm's backward sums: each item's scratch rows
# are allocated once
_GRAD_ROWS_PER_ITEM = 8


@kernel("normalization.batch_norm_grad_rows", *[(_c(t, 2), _c(t, 2), _c(t, 2), _c(t, 1), types.int64, types.int64)
                                                for t in _FLOATS])
@njit(cache=True)
def _batch_norm_grad_rows(sums, gy, xhat, w, r0, r1):
    n = gy.shape[1]
    g, q, h = np.empty(n, gy.dtype), np.empty(n, gy.dtype), np.empty(n, gy.dtype)
    partials = np.empty(max(1, (n + BLOCK - 1) // BLOCK), gy.dtype)
    for r in range(r0, r1):
        batch_norm_grad_row(g, q, h, sums[r], gy[r], xhat[r], w[r], partials)


@kernel("normalization.batch_norm_grad_terms_row", (_c(types.float32, 1),) * 5 + (types.float32,))
@njit(cache=True)
def _batch_norm_grad_terms_row(gxhat, q, h, gy, xhat, w):
    for k in range(gy.shape[0]):
        gxhat[k], q[k], h[k] = batch_norm_grad_terms(gy[k], xhat[k], w)


@kernel("normalization.batch_norm_grad_eight", (_c(types.float32, 2),) * 3 + (_c(types.float32, 1), types.int64,
                                                                              types.int64))
@njit(cache=True)
def _batch_norm_grad_eight(sums, gy, xhat, w, g0, g1):
    # groups g0 .. g1-1 of 8 float32 rows: each group's terms row by row into
    # scratch, then its four sums with the 8 rows in the lanes of one vector
    # (eight_rows_f32, the documented order in each lane): the bits of
    # `batch_norm_grad_row`
    L = gy.shape[1]
    lanes = np.empty((L + BLOCK - 1) // BLOCK * LANES, dtype=np.float32)
    lanes2, local = eight_rows_scratch(L)
    g = np.empty(LANES * L, dtype=np.float32)
    q = np.empty(LANES * L, dtype=np.float32)
    h = np.empty(LANES * L, dtype=np.float32)
    gy_flat = gy.reshape(-1)
    for grp in range(g0, g1):
        i0 = grp * LANES
        for r in range(LANES):
            i, a, e = i0 + r, r * L, (r + 1) * L
            _batch_norm_grad_terms_row(g[a:e], q[a:e], h[a:e], gy[i], xhat[i], w[i])
        eight_rows_f32_into(sums[:, 0], lanes, lanes2, local, gy_flat, L, grp, grp + 1)
        eight_rows_f32_into(sums[i0:i0 + LANES, 1], lanes, lanes2, local, q, L, 0, 1)
        eight_rows_f32_into(sums[i0:i0 + LANES, 2], lanes, lanes2, local, g, L, 0, 1)
        eight_rows_f32_into(sums[i0:i0 + LANES, 3], lanes, lanes2, local, h, L, 0, 1)


@njit(parallel=True, cache=True)
def _batch_norm_grad_items(sums, gy, xhat, w, groups):
    items = (groups + GROUPS_PER_ITEM - 1) // GROUPS_PER_ITEM
    for it in prange(items):
        _batch_norm_grad_eight(sums, gy, xhat, w, it * GROUPS_PER_ITEM,
                               min(it * GROUPS_PER_ITEM + GROUPS_PER_ITEM, groups))


@njit(parallel=True, cache=True)
def _batch_norm_grad_tail(sums, gy, xhat, w, r0):
    rows = gy.shape[0]
    items = (rows - r0 + _GRAD_ROWS_PER_ITEM - 1) // _GRAD_ROWS_PER_ITEM
    for it in prange(items):
        start = r0 + it * _GRAD_ROWS_PER_ITEM
        _batch_norm_grad_rows(sums, gy, xhat, w, start, min(rows, start + _GRAD_ROWS_PER_ITEM))


kernel("normalization.batch_norm_grad_items", (_c(types.float32, 2),) * 3 + (_c(types.float32, 1), types.int64))(
    _batch_norm_grad_items)
kernel("normalization.batch_norm_grad_tail", *[(_c(t, 2),) * 3 + (_c(t, 1), types.int64) for t in _FLOATS])(
    _batch_norm_grad_tail)


def batch_norm_grad(sums, gy, xhat, w):
    """Per row r: sums[r, 0:4] of `batch_norm_grad_row`, w[r] the row's
    channel weight (the gradient of xhat is scratch: `normalize_grad`
    recomputes it).  Contiguous float32 rows of a multiple of 8 elements run
    8 at a time (`_batch_norm_grad_eight`), the rest one by one."""
    groups = eight_row_groups(*gy.shape, gy.dtype == np.float32)
    if groups:
        _batch_norm_grad_items(sums, gy, xhat, w, groups)
    if groups * LANES < gy.shape[0]:
        _batch_norm_grad_tail(sums, gy, xhat, w, groups * LANES)


# --------------------------------------------------------------------------- layer_norm, rms_norm

_B = types.boolean
_I = types.int64


def _forward_signature(t):
    # y, m, s, x, w, b, n, eps, center
    return (_c(t, 2), _c(t, 1), _c(t, 1), _c(t, 2), _c(t, 1), _c(t, 1), t, t, _B)


def _grad_signature(t):
    # dx, gw, gy, x, w, m, s, n, center
    return (_c(t, 2), _c(t, 2), _c(t, 2), _c(t, 2), _c(t, 1), _c(t, 1), _c(t, 1), t, _B)


@kernel("normalization.layer_norm_rows", *[_forward_signature(t) + (_I, _I) for t in _FLOATS])
@njit(cache=True)
def _layer_norm_rows(y, m, s, x, w, b, n, eps, center, r0, r1):
    stack = np.empty(STACK, dtype=x.dtype)
    for r in range(r0, r1):
        m[r], s[r] = layer_norm_row(y[r], x[r], w, b, n, eps, center, stack)


@kernel("normalization.layer_norm_grad_rows", *[_grad_signature(t) + (_I, _I) for t in _FLOATS])
@njit(cache=True)
def _layer_norm_grad_rows(dx, gw, gy, x, w, m, s, n, center, r0, r1):
    stack, stack2 = np.empty(STACK, dtype=x.dtype), np.empty(STACK, dtype=x.dtype)
    for r in range(r0, r1):
        layer_norm_grad_row(dx[r], gw[r], gy[r], x[r], w, m[r], s[r], n, center, stack, stack2)


_F32 = types.float32
_R32 = _c(_F32, 1)


# Groups of 8 rows go two at a time (PAIRED_GROUPS): their sums then run as
# two independent vector chains (softrep.cpu.reduce.eight_rows_f32).  The
# elementwise steps index the rows' flat storage with unsigned offsets: a row
# slice per call costs reference counting, and signed indices wraparound
# tests, which keep the loops from vectorising.
PAIRED_GROUPS = 2


@kernel("normalization.layer_norm_eight", (_c(_F32, 2), _R32, _R32, _c(_F32, 2), _R32, _R32, _F32, _F32, _B,
                                           _I, _I))
@njit(cache=True)
def _layer_norm_eight(y, m, s, x, w, b, n, eps, center, g0, g1):
    # groups g0 .. g1-1 of 8 rows; lanes: the tree's scratch, t: the rows' terms
    L = x.shape[1]
    lanes = np.empty((L + BLOCK - 1) // BLOCK * LANES, dtype=np.float32)
    lanes2, local = eight_rows_scratch(L)
    t = np.empty(PAIRED_GROUPS * LANES * L, dtype=np.float32)
    xf, yf = x.reshape(-1), y.reshape(-1)
    zero = zero_like(n)
    width = np.uint64(L)
    for g in range(g0, g1, PAIRED_GROUPS):
        ge = min(g + PAIRED_GROUPS, g1)
        i0, rows = g * LANES, (ge - g) * LANES
        if center:
            eight_rows_f32_into(m, lanes, lanes2, local, xf, L, g, ge)
        for r in range(rows):
            mi = mean_of_sum(m[i0 + r], n) if center else zero
            m[i0 + r] = mi
            row, terms = np.uint64(i0 + r) * width, np.uint64(r) * width
            for k in range(width):
                t[terms + k] = term_centered_square(xf[row + k], mi)
        eight_rows_f32_into(s[i0:i0 + rows], lanes, lanes2, local, t, L, 0, ge - g)
        for r in range(rows):
            si = scale_of_squares(s[i0 + r], n, eps)
            s[i0 + r] = si
            mi = m[i0 + r]
            row = np.uint64(i0 + r) * width
            for k in range(width):
                yf[row + k] = affine_element(normalized(xf[row + k], mi, si), w[k], b[k])


@kernel("normalization.layer_norm_grad_groups", (_c(_F32, 2), _R32, _c(_F32, 2), _c(_F32, 2), _R32, _R32, _R32,
                                                 _F32, _B, _I, _I, _R32, _R32, _R32, _R32, _R32, _R32))
@njit(cache=True)
def _layer_norm_grad_groups(dx, gw_rows, gy, x, w, m, s, n, center, g, ge, lanes, lanes2, local, gx, h, sums):
    # groups g .. ge-1 (at most PAIRED_GROUPS): dx, and their rows' weight
    # partials mul(gy, xhat) in gw_rows (the rows' L elements each, flat);
    # lanes, lanes2 and local (the sums' scratch), gx (mul(gy, w), the
    # gradient of xhat), h (mul(gx, xhat)) and sums: scratch
    L = x.shape[1]
    width = np.uint64(L)
    xf, gyf, dxf = x.reshape(-1), gy.reshape(-1), dx.reshape(-1)
    i0, rows = g * LANES, (ge - g) * LANES
    for r in range(rows):
        mi, si = m[i0 + r], s[i0 + r]
        row, at = np.uint64(i0 + r) * width, np.uint64(r) * width
        for k in range(width):
            gx[at + k], h[at + k], gw_rows[at + k] = grad_terms(gyf[row + k], xf[row + k], w[k], mi, si)
    half = PAIRED_GROUPS * LANES
    eight_rows_f32_into(sums, lanes, lanes2, local, h, L, 0, ge - g)
    if center:
        eight_rows_f32_into(sums[half:], lanes, lanes2, local, gx, L, 0, ge - g)
    zero = zero_like(n)
    for r in range(rows):
        mi, si = m[i0 + r], s[i0 + r]
        c = mean_of_sum(sums[r], n)
        mg = mean_of_sum(sums[half + r], n) if center else zero
        row, at = np.uint64(i0 + r) * width, np.uint64(r) * width
        for k in range(width):
            dxf[row + k] = normalize_grad_element(gx[at + k], normalized(xf[row + k], mi, si), mg, c, si)


@register_jitable
def _grad_scratch(L):
    """(lanes, lanes2, local, gx, h, sums) of `_layer_norm_grad_groups` for rows of L elements."""
    rows = PAIRED_GROUPS * LANES
    lanes2, local = eight_rows_scratch(L)
    return (np.empty((L + BLOCK - 1) // BLOCK * LANES, dtype=np.float32), lanes2, local,
            np.empty(rows * L, dtype=np.float32), np.empty(rows * L, dtype=np.float32),
            np.empty(2 * rows, dtype=np.float32))


@kernel("normalization.layer_norm_grad_eight", (_c(_F32, 2), _c(_F32, 2), _c(_F32, 2), _c(_F32, 2), _R32, _R32,
                                                _R32, _F32, _B, _I, _I))
@njit(cache=True)
def _layer_norm_grad_eight(dx, gw, gy, x, w, m, s, n, center, g0, g1):
    L = x.shape[1]
    lanes, lanes2, local, gx, h, sums = _grad_scratch(L)
    gw_flat = gw.reshape(-1)
    for g in range(g0, g1, PAIRED_GROUPS):
        ge = min(g + PAIRED_GROUPS, g1)
        _layer_norm_grad_groups(dx, gw_flat[g * LANES * L:ge * LANES * L], gy, x, w, m, s, n, center, g, ge, lanes,
                                lanes2, local, gx, h, sums)


# The batch tree of the affine gradients inside the row pass, when row i is
# sample i of the batch.  Each group of 8 rows (an aligned run of 8 samples)
# gives the tree node over its rows' weight partials mul(gy, xhat) and over
# its bias partials gy (`tree_node_of_eight`), and a work item of NODE_ROWS =
# GROUPS_PER_ITEM * 8 rows pushes those nodes, in row order, onto two
# streaming binary counters (`tree_slot` / `tree_carry`), whose root is the
# tree node over the item's NODE_ROWS samples (the adds of the batch tree of
# docs/order.md, softrep.algorithms.products): an aligned run of 2^7
# samples with none missing is node (7, item) of every batch that holds it,
# whatever the batch size.  The partials never reach memory.

NODE_ROWS = GROUPS_PER_ITEM * LANES
NODE_SLOTS = tree_slots(GROUPS_PER_ITEM)
# a whole work item must be one tree node, and its groups must pair up
assert NODE_ROWS & (NODE_ROWS - 1) == 0 and GROUPS_PER_ITEM % PAIRED_GROUPS == 0


@kernel("normalization.layer_norm_grad_node", (_c(_F32, 2), _c(_F32, 3), _c(_F32, 2), _c(_F32, 2), _R32, _R32, _R32,
                                               _F32, _B, _I))
@njit(cache=True)
def _layer_norm_grad_node(dx, nodes, gy, x, w, m, s, n, center, item):
    # rows item * NODE_ROWS ... + NODE_ROWS - 1: dx, and nodes[0, item] /
    # nodes[1, item] the tree nodes of their weight and bias partials
    L = x.shape[1]
    lanes, lanes2, local, gx, h, sums = _grad_scratch(L)
    gw_rows = np.empty(PAIRED_GROUPS * LANES * L, dtype=np.float32)
    stack_w = np.empty(NODE_SLOTS * L, dtype=np.float32)
    stack_b = np.empty(NODE_SLOTS * L, dtype=np.float32)
    gy_flat = gy.reshape(-1)
    count = 0
    first = item * GROUPS_PER_ITEM
    for g in range(first, first + GROUPS_PER_ITEM, PAIRED_GROUPS):
        _layer_norm_grad_groups(dx, gw_rows, gy, x, w, m, s, n, center, g, g + PAIRED_GROUPS, lanes, lanes2, local,
                                gx, h, sums)
        for q in range(PAIRED_GROUPS):
            slot = tree_slot(count) * L
            tree_node_of_eight(stack_w, slot, gw_rows, q * LANES * L, L, L)
            tree_node_of_eight(stack_b, slot, gy_flat, (g + q) * LANES * L, L, L)
            tree_carry(stack_w, L, count, L)
            count = tree_carry(stack_b, L, count, L)
    tree_finish(stack_w, L, count, L)
    tree_finish(stack_b, L, count, L)
    for k in range(L):
        nodes[0, item, k] = stack_w[k]
        nodes[1, item, k] = stack_b[k]


@njit(parallel=True, cache=True)
def _grad_node_items(dx, gw, nodes, gy, x, w, m, s, n, center, groups):
    # whole work items of NODE_ROWS rows give their tree nodes; the groups of
    # a last partial one write their rows' weight partials to gw
    items = (groups + GROUPS_PER_ITEM - 1) // GROUPS_PER_ITEM
    for it in prange(items):
        if it < nodes.shape[1]:
            _layer_norm_grad_node(dx, nodes, gy, x, w, m, s, n, center, it)
        else:
            _layer_norm_grad_eight(dx, gw, gy, x, w, m, s, n, center, it * GROUPS_PER_ITEM, groups)


kernel("normalization.layer_norm_grad_node_items", (_c(_F32, 2), _c(_F32, 2), _c(_F32, 3)) + _grad_signature(_F32)[2:]
       + (_I,))(_grad_node_items)


# rows per work item of the one-row-at-a-time schedule
_ROWS_PER_ITEM = 16


@register_jitable
def eight_row_groups(rows, length, f32):
    """How many groups of 8 rows the float32 schedules take (the rest run one
    row at a time): rows // 8 for float32 rows of a multiple of 8 elements,
    else none."""
    return rows // LANES if f32 and length % LANES == 0 else 0


@njit(parallel=True, cache=True)
def _forward_items(y, m, s, x, w, b, n, eps, center, groups):
    items = (groups + GROUPS_PER_ITEM - 1) // GROUPS_PER_ITEM
    for it in prange(items):
        _layer_norm_eight(y, m, s, x, w, b, n, eps, center, it * GROUPS_PER_ITEM,
                          min(it * GROUPS_PER_ITEM + GROUPS_PER_ITEM, groups))


@njit(parallel=True, cache=True)
def _forward_rows(y, m, s, x, w, b, n, eps, center, r0):
    M = x.shape[0]
    items = (M - r0 + _ROWS_PER_ITEM - 1) // _ROWS_PER_ITEM
    for it in prange(items):
        _layer_norm_rows(y, m, s, x, w, b, n, eps, center, r0 + it * _ROWS_PER_ITEM,
                         min(r0 + it * _ROWS_PER_ITEM + _ROWS_PER_ITEM, M))


@njit(parallel=True, cache=True)
def _grad_items(dx, gw, gy, x, w, m, s, n, center, groups):
    items = (groups + GROUPS_PER_ITEM - 1) // GROUPS_PER_ITEM
    for it in prange(items):
        _layer_norm_grad_eight(dx, gw, gy, x, w, m, s, n, center, it * GROUPS_PER_ITEM,
                               min(it * GROUPS_PER_ITEM + GROUPS_PER_ITEM, groups))


@njit(parallel=True, cache=True)
def _grad_rows(dx, gw, gy, x, w, m, s, n, center, r0):
    M = x.shape[0]
    items = (M - r0 + _ROWS_PER_ITEM - 1) // _ROWS_PER_ITEM
    for it in prange(items):
        _layer_norm_grad_rows(dx, gw, gy, x, w, m, s, n, center, r0 + it * _ROWS_PER_ITEM,
                              min(r0 + it * _ROWS_PER_ITEM + _ROWS_PER_ITEM, M))


for _name, _fn, _sig in (("layer_norm_items", _forward_items, _forward_signature), ("layer_norm_tail", _forward_rows,
                         _forward_signature), ("layer_norm_grad_items", _grad_items, _grad_signature),
                         ("layer_norm_grad_tail", _grad_rows, _grad_signature)):
    kernel(f"normalization.{_name}", *[_sig(t) + (_I,) for t in ((_F32,) if "items" in _name else _FLOATS)])(_fn)


def layer_norm(y, m, s, x, w, b, n, eps, center):
    """y[i] = add(mul(div(sub(x[i], m[i]), s[i]), w), b) for rows x (M, L), with
    the row statistics m, s (M) written too (`layer_norm_row`); n and eps
    rounded to x's dtype, center False for rms_norm (m = +0)."""
    n, eps = x.dtype.type(n), x.dtype.type(eps)
    groups = eight_row_groups(*x.shape, x.dtype == np.float32)
    if groups:
        _forward_items(y, m, s, x, w, b, n, eps, center, groups)
    if groups * LANES < x.shape[0]:
        _forward_rows(y, m, s, x, w, b, n, eps, center, groups * LANES)


def layer_norm_grad(dx, gw, gy, x, w, m, s, n, center):
    """The gradient dx of x and the weight's per-row partials gw = mul(gy, xhat)
    (`layer_norm_grad_row`), gy (M, L) the gradient of y."""
    n = x.dtype.type(n)
    groups = eight_row_groups(*x.shape, x.dtype == np.float32)
    if groups:
        _grad_items(dx, gw, gy, x, w, m, s, n, center, groups)
    if groups * LANES < x.shape[0]:
        _grad_rows(dx, gw, gy, x, w, m, s, n, center, groups * LANES)


def layer_norm_grad_nodes_apply(rows, length):
    """Whether `layer_norm_grad_nodes` takes `rows` float32 rows of `length`
    elements: a multiple of 8 elements, at least one whole work item of rows."""
    return rows >= NODE_ROWS and length % LANES == 0


def layer_norm_grad_nodes(dx, gw, nodes, gy, x, w, m, s, n, center):
    """`layer_norm_grad` for rows that are the samples of a batch, with the
    affine gradients' batch tree begun in the same pass: nodes[0, j] and
    nodes[1, j] are the tree nodes over the rows [j NODE_ROWS, (j + 1)
    NODE_ROWS) of the weight partials mul(gy, xhat) and of the bias partials
    gy, for j < nodes.shape[1] = M // NODE_ROWS; gw gets the weight partials
    of the rows after those only (x: `layer_norm_grad_nodes_apply`)."""
    n = x.dtype.type(n)
    groups = x.shape[0] // LANES
    _grad_node_items(dx, gw, nodes, gy, x, w, m, s, n, center, groups)
    if groups * LANES < x.shape[0]:
        _grad_rows(dx, gw, gy, x, w, m, s, n, center, groups * LANES)


# --------------------------------------------------------------------------- the light path
#
# A small layer_norm (one that `backend.execute` would run on one thread
# anyway) through the tensors' addresses, on the calling thread: the same row kernels as the launchers above (groups of 8
# float32 rows where `layer_norm` takes them, then the rows one at a time),
# so the same bits, without the numpy views, the launch and the thread-count
# switch.  The kernel sets IEEE's control state itself.

def _serial_layer_norms(dtype):
    f32 = np.dtype(dtype) == np.float32

    def forward_serial(y, m, s, x, w, b, rows, length, n, eps, center, mask):
        old = enter_ieee(mask)
        Y, X = carray(address_as_pointer(y), (rows, length), dtype), carray(address_as_pointer(x), (rows, length), dtype)
        M, S = carray(address_as_pointer(m), rows, dtype), carray(address_as_pointer(s), rows, dtype)
        W, B = carray(address_as_pointer(w), length, dtype), carray(address_as_pointer(b), length, dtype)
        # float64 has no groups: the constant f32 keeps the float32 group kernels out of its typing
        groups = eight_row_groups(rows, length, True) if f32 else 0
        if groups:
            _layer_norm_eight(Y, M, S, X, W, B, n, eps, center, 0, groups)
        if groups * LANES < rows:
            _layer_norm_rows(Y, M, S, X, W, B, n, eps, center, groups * LANES, rows)
        leave_ieee(old)

    def grad_serial(dx, gw, gy, x, w, m, s, rows, length, n, center, mask):
        old = enter_ieee(mask)
        DX, GW = carray(address_as_pointer(dx), (rows, length), dtype), carray(address_as_pointer(gw), (rows, length),
                                                                                dtype)
        GY, X = carray(address_as_pointer(gy), (rows, length), dtype), carray(address_as_pointer(x), (rows, length),
                                                                               dtype)
        W = carray(address_as_pointer(w), length, dtype)
        M, S = carray(address_as_pointer(m), rows, dtype), carray(address_as_pointer(s), rows, dtype)
        # float64 has no groups: the constant f32 keeps the float32 group kernels out of its typing
        groups = eight_row_groups(rows, length, True) if f32 else 0
        if groups:
            _layer_norm_grad_eight(DX, GW, GY, X, W, M, S, n, center, 0, groups)
        if groups * LANES < rows:
            _layer_norm_grad_rows(DX, GW, GY, X, W, M, S, n, center, groups * LANES, rows)
        leave_ieee(old)

    name, address = np.dtype(dtype).name, types.intp
    t = types.float32 if f32 else types.float64
    forward = kernel(f"normalization.serial_layer_norm.{name}", (address,) * 6 + (_I, _I, t, t, _B, _I))(
        njit(cache=True, error_model="numpy")(forward_serial))
    grad = kernel(f"normalization.serial_layer_norm_grad.{name}", (address,) * 7 + (_I, _I, t, _B, _I))(
        njit(cache=True, error_model="numpy")(grad_serial))
    return forward, grad


_SERIAL = {np.dtype(t): _serial_layer_norms(t) for t in (np.float32, np.float64)}


def serial_layer_norm(dtype, y, m, s, x, w, b, rows, length, eps, center):
    """`layer_norm` on the calling thread for buffers of numpy dtype `dtype`
    given by their addresses: y and x (rows, length), m and s (rows), w and
    b (length), all C-contiguous."""
    _SERIAL[dtype][0](y, m, s, x, w, b, rows, length, dtype.type(length), dtype.type(eps), center, CONTROL_MASK)


def serial_layer_norm_grad(dtype, dx, gw, gy, x, w, m, s, rows, length, center):
    """`layer_norm_grad` on the calling thread, as `serial_layer_norm`: dx,
    gw, gy and x (rows, length), w (length), m and s (rows)."""
    _SERIAL[dtype][1](dx, gw, gy, x, w, m, s, rows, length, dtype.type(length), center, CONTROL_MASK)
