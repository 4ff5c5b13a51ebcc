"""CPU launcher of the 2-D convolution forward: implicit GEMM through packed panels.

The product is W_g (Cout/G, K) @ cols_g (K, N*OH*OW) per group, K = Cin/G*KH*KW
in (c, kh, kw) order, columns in (n, oh, ow) order (docs/order.md,
"Convolution").  Instead of materialising `cols`, `_pack_im2col` copies the
zero-padded input straight into the NR-column panels the product kernel reads
(`softrep.cpu.linalg.product_packed`), finding each element with
`column_offset` + `tap_offset` of `softrep.algorithms.convolution` (the
arithmetic the CUDA kernel uses too).  Each output element is then the chain
of `softrep.algorithms.products` over k from +0, on one thread, as in the
matrix products, and the bias is added by its `finish_add`.  This module only
moves values and schedules the work.
"""

import numpy as np
from numba import njit, prange, types

from ..algorithms.convolution import column_offset, output_size, tap_offset
from .launch import kernel
from .linalg import packed_b, product_packed, tree_product_padded, tree_width


@kernel("conv.pack_im2col", *[(types.Array(t, 4, "C"), types.Array(t, 1, "C")) + (types.int64,) * 13
                              for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True, error_model="numpy")
def _pack_im2col(bp, xflat, c_in, hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow):
    # One work item per (group, panel): it fills bp[g, panel] (K x NR values,
    # contiguous) row by row.  The panel's columns fall into runs that lie
    # in one output row: consecutive pixels, sw apart in the padded input,
    # so each run is one strided copy (contiguous for sw = 1) per row of K,
    # from the offset `column_offset` gives its first column plus the row's
    # `tap_offset`, computed once per call for every (group, row) (its
    # integer divisions would otherwise cost more than a row's copy).
    # Unsigned indices: a signed one costs a negative-index test per access,
    # which keeps the copies from vectorising.
    c_g = c_in // groups
    kk = c_g * kh * kw
    npan, nr = bp.shape[1], bp.shape[3]
    n_cols = n_img * oh * ow
    flat = bp.reshape(-1)
    usw = np.uint64(sw)
    taps = np.empty(groups * kk, np.uint64)
    for gk in range(groups * kk):
        taps[gk] = tap_offset(gk % kk, gk // kk, c_g, kh, kw, dh, dw, hp, wp)
    for t in prange(groups * npan):
        g, panel = t // npan, t % npan
        starts = np.empty(nr + 1, np.uint64)
        bases = np.empty(nr, np.uint64)
        col0 = panel * nr
        valid = min(nr, n_cols - col0)
        runs = 0
        lane = 0
        while lane < valid:
            col = col0 + lane
            starts[runs] = lane
            bases[runs] = column_offset(col, oh, ow, sh, sw, c_in, hp, wp)
            runs += 1
            lane += min(valid - lane, ow - col % ow)
        starts[runs] = valid
        for k in range(kk):
            off = taps[g * kk + k]
            row = np.uint64((t * kk + k) * nr)
            for r in range(runs):
                dst = row + starts[r]
                src = bases[r] + off
                length = starts[r + 1] - starts[r]
                if usw == np.uint64(1):
                    for j in range(length):
                        flat[dst + j] = xflat[src + j]
                else:
                    for j in range(length):
                        flat[dst + j] = xflat[src + j * usw]
            for j in range(np.uint64(valid), np.uint64(nr)):
                flat[row + j] = 0


def conv2d(out, w_g, xpad, bias_rows, has_bias, sh, sw, dh, dw, kh, kw):
    """out (G, Cout/G, N*OH*OW) = w_g (G, Cout/G, Cin/G*KH*KW) @ im2col(xpad) [+ bias_rows (G, Cout/G)]."""
    groups, _, kk = w_g.shape
    n_img, _, hp, wp = xpad.shape
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    if out.size == 0:
        return
    bp = packed_b(groups, kk, n_img * oh * ow, xpad.dtype)
    if kk:
        xflat = np.ascontiguousarray(xpad).reshape(-1)
        _pack_im2col(bp, xflat, xpad.shape[1], hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow)
    product_packed(out, w_g, bp, bias_rows=bias_rows if has_bias else None)


@kernel("conv.pack_cols_by_pixel", *[(types.Array(t, 4, "C"), types.Array(t, 1, "C")) + (types.int64,) * 13
                                      for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True, error_model="numpy")
def _pack_cols_by_pixel(b_pad, xflat, c_in, hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow):
    # b_pad (N, G, OH*OW, npad): b_pad[s, g, p, k] is row k of group g's cols
    # at column (s, p) -- the value F.unfold puts at [s, g*K + k, p] -- and +0
    # for k >= K: the im2col of one sample, transposed and zero-padded, as
    # the weight gradient's tree product reads it.  One work item per
    # (sample, group); the taps' offsets are computed once per item.
    c_g = c_in // groups
    kk = c_g * kh * kw
    npad = b_pad.shape[3]
    pixels = oh * ow
    flat = b_pad.reshape(-1)
    for t in prange(n_img * groups):
        s, g = t // groups, t % groups
        taps = np.empty(kk, np.uint64)
        for k in range(kk):
            taps[k] = tap_offset(k, g, c_g, kh, kw, dh, dw, hp, wp)
        for p in range(pixels):
            base = np.uint64(column_offset(s * pixels + p, oh, ow, sh, sw, c_in, hp, wp))
            row = np.uint64((t * pixels + p) * npad)
            for k in range(np.uint64(kk)):
                flat[row + k] = xflat[base + taps[k]]
            for k in range(np.uint64(kk), np.uint64(npad)):
                flat[row + k] = 0


def weight_grad_tree(out, g_t, xpad, first, counts, sh, sw, dh, dw, kh, kw, groups):
    """out (nodes, G, Cout/G, K): for each node the batch tree over its samples
    (first[node], counts[node]) of g_t[s, g]^T @ cols_t[s, g], g_t (N, G, OH*OW,
    Cout/G) the output gradient (any layout), cols_t the transposed im2col of
    xpad (N, Cin, Hp, Wp) -- `softrep.cpu.linalg.tree_product` of
    (g_t, cols_t), with cols_t packed straight from xpad."""
    n_img, c_in, hp, wp = xpad.shape
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    kk = c_in // groups * kh * kw
    b_pad = np.empty((n_img, groups, oh * ow, tree_width(kk, xpad.dtype)), xpad.dtype)
    _pack_cols_by_pixel(b_pad, np.ascontiguousarray(xpad).reshape(-1), c_in, hp, wp, groups, kh, kw, sh, sw, dh, dw,
                        n_img, oh, ow)
    tree_product_padded(out, g_t, b_pad, first, counts)
