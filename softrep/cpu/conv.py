"""CPU launcher of the 2-D convolution forward: implicit GEMM through packed panels.

The product is W_g (Cout/G, K) @ cols_g (K, N*OH*OW) per group, K = Cin/G*KH*KW
in (c, kh, kw) order, columns in (n, oh, ow) order (docs/order.md,
"Convolution").  Instead of materialising `cols`, `_pack_im2col` writes the
zero-padded input straight into the NR-column panels the product kernel reads
(`softrep.cpu.linalg.product_packed`), so each output element is the same fma
chain over k from +0, on one thread, as in the matrix products.
"""

import numpy as np
from numba import njit, prange

from .linalg import packed_b, product_packed


@njit(parallel=True, cache=True)
def _pack_im2col(bp, xflat, c_in, hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow):
    # One work item per (group, panel): it fills bp[g, panel] (K x NR floats,
    # contiguous) row by row, reading NR columns of the padded input, which
    # are mostly consecutive pixels of one image row.  Column col = (n, i, j)
    # of lane l starts at base[l] in xflat; row k = (c, a, e) adds the
    # offset of channel c and kernel tap (a, e).  Pure copies: no rounding.
    c_g = c_in // groups
    kk = c_g * kh * kw
    npan, nr = bp.shape[1], bp.shape[3]
    n_cols = n_img * oh * ow
    for t in prange(groups * npan):
        g, panel = t // npan, t % npan
        base = np.zeros(nr, np.int64)
        valid = 0
        for lane in range(nr):
            col = panel * nr + lane
            if col < n_cols:
                n, pix = col // (oh * ow), col % (oh * ow)
                base[lane] = n * c_in * hp * wp + (pix // ow) * sh * wp + (pix % ow) * sw
                valid += 1
        for k in range(kk):
            c, rest = k // (kh * kw), k % (kh * kw)
            off = (g * c_g + c) * hp * wp + (rest // kw) * dh * wp + (rest % kw) * dw
            for lane in range(valid):
                bp[g, panel, k, lane] = xflat[base[lane] + off]
            for lane in range(valid, nr):
                bp[g, panel, k, lane] = 0


def conv2d(out, w_g, xpad, bias_rows, has_bias, sh, sw, dh, dw, kh, kw):
    """out (G, Cout/G, N*OH*OW) = w_g (G, Cout/G, Cin/G*KH*KW) @ im2col(xpad) [+ bias_rows (G, Cout/G)]."""
    groups, _, kk = w_g.shape
    n_img, _, hp, wp = xpad.shape
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    if out.size == 0:
        return
    bp = packed_b(groups, kk, n_img * oh * ow, xpad.dtype)
    if kk:
        xflat = np.ascontiguousarray(xpad).reshape(-1)
        _pack_im2col(bp, xflat, xpad.shape[1], hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow)
    product_packed(out, w_g, bp, bias_rows=bias_rows if has_bias else None)
