"""The normalisations' passes as single kernels (no autograd).

The kernels work on rows, with one statistic per row: `row_*`.  layer_norm,
rms_norm and group_norm normalise each row of their trailing dims (row i,
its own m and s); batch_norm views an input (N, C, *) as rows (N*C,
positions): row n*C + c holds channel c of sample n, and its statistics are
channel c's.  Each function computes exactly the composition of
softrep ops named in its docstring -- the same roundings in the same order
(softrep.algorithms.normalization, softrep.algorithms.reduction) -- in one
pass, without the intermediate tensors and without broadcasting the
per-channel operands to the input's shape.  Callers that need a graph
(double backward) use the separate ops instead; the bits are the same.
"""

import math

import torch

from . import backend, batchtree
from .summation import sum_rows
from ..cpu import normalization as cpu_normalization
from ..cuda import normalization as cuda_normalization


def fusable():
    """Whether the fused passes may replace the separate ops here: no graph is
    being recorded and no torch.func transform is active (their tensors need
    the ops' autograd Functions)."""
    return backend.unrecorded()


def _rows(x):
    n, c = x.shape[0], x.shape[1]
    return x.detach().contiguous().reshape(n * c, math.prod(x.shape[2:]))


def _per_row(stat, x):
    """A per-channel value (C elements, any shape) repeated for every sample: (N*C,)."""
    n, c = x.shape[0], x.shape[1]
    return stat.detach().reshape(1, c).expand(n, c).reshape(n * c).contiguous()


def centered_square_sums(x, m):
    """(N, C): sum(mul(d, d), positions) with d = sub(x, m[c]), each sample's
    documented sum over its positions (dims 2, ...), m per channel."""
    return sum_rows(_rows(x), _per_row(m, x), centered=True).reshape(x.shape[0], x.shape[1])


def row_normalize(rows, m, s):
    """div(sub(rows[i], m[i]), s[i]) for rows (R, n) and m, s of R elements."""
    out = rows.new_empty(rows.shape)
    if out.numel():
        backend.execute(cpu_normalization.normalize, cuda_normalization.normalize, [out],
                        [rows, m.detach().reshape(-1).contiguous(), s.detach().reshape(-1).contiguous()])
    return out


def row_normalize_grad(g, xhat, mg, c, s, w=None):
    """div(sub(sub(g[i], mg[i]), mul(xhat[i], c[i])), s[i]) for rows (R, n);
    with w (R elements), g[i] replaced by mul(g[i], w[i]) (w = None: g
    itself, which mul(g, 1) is exactly)."""
    out = g.new_empty(g.shape)
    if out.numel():
        w = g.new_ones(g.shape[0]) if w is None else w
        backend.execute(cpu_normalization.normalize_grad, cuda_normalization.normalize_grad, [out],
                        [g, xhat] + [t.detach().reshape(-1).contiguous() for t in (w, mg, c, s)])
    return out


def normalize(x, m, s):
    """div(sub(x, m), s), m and s per channel (C elements each)."""
    return row_normalize(_rows(x), _per_row(m, x), _per_row(s, x)).reshape(x.shape)


def normalize_grad(g, xhat, mg, c, s, w=None):
    """div(sub(sub(g, mg), mul(xhat, c)), s), mg, c and s per channel; with w
    (per channel), g replaced by mul(g, w): the gradient through batch_norm's
    affine map and normalisation from the output's, without storing the
    gradient of xhat."""
    rows = [_per_row(t, g) for t in (mg, c, s)] + [None if w is None else _per_row(w, g)]
    return row_normalize_grad(_rows(g), _rows(xhat), *rows).reshape(g.shape)


def normalize_affine(x, m, s, w, b):
    """(y, xhat): xhat = div(sub(x, m), s) and y = add(mul(xhat, w), b), m, s, w
    and b per channel (C elements each), in one pass over x."""
    rows = _rows(x)
    y, xhat = rows.new_empty(rows.shape), rows.new_empty(rows.shape)
    if rows.numel():
        backend.execute(cpu_normalization.normalize_affine, cuda_normalization.normalize_affine, [y, xhat],
                        [rows] + [_per_row(t, x) for t in (m, s, w, b)])
    return y.reshape(x.shape), xhat.reshape(x.shape)


def batch_norm_grad_sums(gy, xhat, w):
    """The sums (N, C, 4) for the backward of add(mul(xhat, w), b), w per
    channel: each sample's documented sums over its positions (dims 2, ...)
    of gy, mul(gy, xhat), gxhat and mul(gxhat, xhat) per channel, gxhat =
    mul(gy, w) (not stored: `normalize_grad` with w recomputes it)."""
    g_rows, x_rows = _rows(gy), _rows(xhat)
    sums = g_rows.new_empty((g_rows.shape[0], 4))
    if sums.numel():
        backend.execute(cpu_normalization.batch_norm_grad, cuda_normalization.batch_norm_grad, [sums],
                        [g_rows, x_rows, _per_row(w, gy)])
    return sums.reshape(gy.shape[0], gy.shape[1], 4)


def _serial_dtype(rows, *others):
    """The numpy dtype when a layer_norm pass over `rows` (R, n) may take the
    light path (`cpu_normalization.serial_layer_norm`): at most
    backend.SERIAL_WORK elements, which `backend.execute` would also run on
    one thread, and plain C-contiguous CPU tensors of one float dtype (the
    weight and bias 1-D, the statistics of R elements); else None.  The
    tensors belong to the caller's autograd Function, which records the
    gradient."""
    if rows.numel() > backend.SERIAL_WORK:
        return None
    return backend.light_dtype((rows, *others), same_shape=False, own_function=True)


def layer_norm_rows(rows, w, b, eps, center):
    """(y, m, s) of layer_norm (rms_norm when not `center`) on rows (R, n) with
    the affine map: y[i] = add(mul(div(sub(rows[i], m[i]), s[i]), w), b), m
    and s the rows' statistics (m = +0 without centring).  w and b have n
    elements (ones and -0 for a missing weight and bias, which change no bit).
    The launch's work is the rows' elements: up to backend.SERIAL_WORK of
    them one thread is faster than two (docs/benchmarks.md)."""
    R, n = rows.shape
    y = backend.new_empty(rows, (R, n))
    m, s = rows.new_empty(R), rows.new_empty(R)
    dtype = _serial_dtype(rows, w, b)
    if dtype is not None:
        cpu_normalization.serial_layer_norm(dtype, y.data_ptr(), m.data_ptr(), s.data_ptr(), rows.data_ptr(),
                                            w.data_ptr(), b.data_ptr(), R, n, eps, bool(center))
        return y, m, s
    backend.execute(cpu_normalization.layer_norm, cuda_normalization.layer_norm, [y, m, s],
                    [rows, w.detach().reshape(-1).contiguous(), b.detach().reshape(-1).contiguous()],
                    float(n), float(eps), bool(center), work=rows.numel())
    return y, m, s


def layer_norm_rows_grad(gy, rows, w, m, s, center):
    """(dx, gw) of `layer_norm_rows`' backward: dx the gradient of the rows and
    gw[i] = mul(gy[i], xhat[i]), the weight's per-row partials."""
    R, n = rows.shape
    dx, gw = backend.new_empty(gy, (R, n)), backend.new_empty(gy, (R, n))
    dtype = _serial_dtype(gy, rows, w, m, s)
    if dtype is not None:
        cpu_normalization.serial_layer_norm_grad(dtype, dx.data_ptr(), gw.data_ptr(), gy.data_ptr(), rows.data_ptr(),
                                                 w.data_ptr(), m.data_ptr(), s.data_ptr(), R, n, bool(center))
        return dx, gw
    backend.execute(cpu_normalization.layer_norm_grad, cuda_normalization.layer_norm_grad, [dx, gw],
                    [gy, rows, w.detach().reshape(-1).contiguous(), m.detach(), s.detach()], float(n), bool(center),
                    work=rows.numel())
    return dx, gw


def layer_norm_rows_grad_of_batch(gy, rows, w, m, s, center):
    """(dx, gw, gb) of `layer_norm_rows`' backward when row i is sample i of a
    whole batch: gw and gb are the weight's and the bias's gradients, the
    batch tree (batchtree.tree_sum, docs/order.md) over the rows' partials
    mul(gy[i], xhat[i]) and gy[i].  On the CPU launcher, float32 rows of a
    multiple of 8 elements begin the tree in the row pass
    (cpu_normalization.layer_norm_grad_nodes: the nodes of whole runs of
    NODE_ROWS samples), so the partials of those rows are never stored; the
    tree then adds those nodes and the node of the rows after them, the same
    additions as the tree over all the partials."""
    R, n = rows.shape
    if not (backend.on_cpu_launcher(gy, rows) and rows.dtype == torch.float32
            and cpu_normalization.layer_norm_grad_nodes_apply(R, n)):
        dx, gw = layer_norm_rows_grad(gy, rows, w, m, s, center)
        return dx, batchtree.tree_sum(gw), batchtree.tree_sum(gy)
    nodes = gy.new_empty((2, R // cpu_normalization.NODE_ROWS, n))
    first = nodes.shape[1] * cpu_normalization.NODE_ROWS
    # gw: the weight partials of the rows after the whole runs only (the
    # kernel indexes it by row, and writes no other row)
    dx, gw = gy.new_empty(gy.shape), gy.new_empty((R if first < R else 0, n))
    backend.execute(cpu_normalization.layer_norm_grad_nodes, None, [dx, gw, nodes],
                    [gy, rows, w.detach().reshape(-1).contiguous(), m.detach(), s.detach()], float(n), bool(center),
                    work=rows.numel())
    if first < R:
        # the rows after the whole runs: their own node, the last of its level
        tails = torch.stack([batchtree.tree_sum(gw[first:]), batchtree.tree_sum(gy[first:])])
        nodes = torch.cat([nodes, tails.unsqueeze(1)], 1)
    return dx, batchtree.tree_sum(nodes[0]), batchtree.tree_sum(nodes[1])
