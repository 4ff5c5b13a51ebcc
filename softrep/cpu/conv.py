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
from .linalg import packed_b, product_packed


_PACK_FLOATS = (types.float32, types.float64)


@kernel("conv.pack_panel", *[(types.Array(t, 2, "C"), types.Array(t, 1, "C")) + (types.int64,) * 15
                             for t in _PACK_FLOATS])
@njit(cache=True)
def _pack_panel(dst, xflat, g, col0, c_in, hp, wp, c_g, kh, kw, sh, sw, dh, dw, oh, ow, n_cols):
    # dst (K, NR) = cols_g[:, col0 : col0 + NR], zeros past the last column.
    # The panel's columns fall into runs of consecutive output pixels of one
    # image row (one run per panel when OW is a multiple of NR; OW-wide runs
    # otherwise), and within a run lane j reads the input sw elements after
    # lane j - 1.  So each row k of the panel is a few strided copies
    # (contiguous ones when sw = 1, which vectorise), instead of a gather
    # through per-lane offsets.
    kk, nr = dst.shape
    valid = min(nr, n_cols - col0)
    base = np.empty(nr, np.int64)
    run_start = np.empty(nr + 1, np.int64)
    runs = 0
    for lane in range(valid):
        base[lane] = column_offset(col0 + lane, oh, ow, sh, sw, c_in, hp, wp)
        if lane == 0 or base[lane] != base[lane - 1] + sw:
            run_start[runs] = lane
            runs += 1
    run_start[runs] = valid
    for k in range(kk):
        off = tap_offset(k, g, c_g, kh, kw, dh, dw, hp, wp)
        row = dst[k]
        for r in range(runs):
            lo, hi = run_start[r], run_start[r + 1]
            src = xflat[base[lo] + off:]
            if sw == 1:
                for j in range(hi - lo):
                    row[lo + j] = src[j]
            else:
                for j in range(hi - lo):
                    row[lo + j] = src[j * sw]
        for lane in range(valid, nr):
            row[lane] = 0


@kernel("conv.pack_im2col", *[(types.Array(t, 4, "C"), types.Array(t, 1, "C")) + (types.int64,) * 13
                              for t in _PACK_FLOATS])
@njit(parallel=True, cache=True)
def _pack_im2col(bp, xflat, c_in, hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow):
    # One work item per (group, panel): it fills bp[g, panel] (K x NR values,
    # contiguous) row by row.  The work item is a separately compiled
    # function: Numba's parfor lowering of loops nested in a prange body is
    # much slower than the same loops compiled on their own.
    c_g = c_in // groups
    npan, nr = bp.shape[1], bp.shape[3]
    n_cols = n_img * oh * ow
    for t in prange(groups * npan):
        g, panel = t // npan, t % npan
        _pack_panel(bp[g, panel], xflat, g, panel * nr, c_in, hp, wp, c_g, kh, kw, sh, sw, dh, dw, oh, ow, n_cols)


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
