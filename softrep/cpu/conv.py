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
def _pack_im2col(bp, xpad, groups, kh, kw, sh, sw, dh, dw, oh, ow):
    n_img, c_in = xpad.shape[0], xpad.shape[1]
    c_g = c_in // groups
    kk = c_g * kh * kw
    npan, nr = bp.shape[1], bp.shape[3]
    n_cols = n_img * oh * ow
    for t in prange(groups * kk):
        g, k = t // kk, t % kk
        c, rest = k // (kh * kw), k % (kh * kw)
        a, e = rest // kw, rest % kw
        ch = g * c_g + c
        col = 0
        for n in range(n_img):
            for i in range(oh):
                row = i * sh + a * dh
                for j in range(ow):
                    bp[g, col // nr, k, col % nr] = xpad[n, ch, row, j * sw + e * dw]
                    col += 1
        for pad_col in range(n_cols, npan * nr):
            bp[g, pad_col // nr, k, pad_col % nr] = 0


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
        _pack_im2col(bp, xpad, groups, kh, kw, sh, sw, dh, dw, oh, ow)
    product_packed(out, w_g, bp, bias_rows=bias_rows if has_bias else None)
