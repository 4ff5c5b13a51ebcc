"""CUDA kernel of the 2-D convolution forward: implicit GEMM on shared-memory tiles.

The product W_g (Cout/G, K) @ cols_g (K, N*OH*OW) per group g (docs/order.md,
"Convolution"; K = Cin/G*KH*KW in (c, kh, kw) order, columns (n, oh, ow)),
scheduled like the matrix product of softrep/cuda/linalg.py: one thread owns
one output element (g, co, col) and keeps its accumulator in a register; the
block stages a TILE x TILE tile of w_g and of cols in shared memory per step
of TILE values of k, and each thread advances its chain over the tile with
`dot_chain`, then ends it with `finish` / `finish_add` (the bias once).  No
im2col buffer is built: a thread loads cols_g[k, col] from the zero-padded
input at `column_offset(col) + tap_offset(k, g)` (softrep.algorithms.convolution),
the arithmetic the CPU's panel packing uses.  Consecutive threads take
consecutive output columns, so the loads of xpad along ow are mostly
coalesced, and the tap index is decomposed once per loaded value, not once
per fma.  This module holds the schedule only; the tile size changes which
loads are shared, never the order of any accumulator.
"""

import functools

from numba import cuda, types

from ..algorithms.convolution import column_offset, output_size, tap_offset
from ..algorithms.products import CHAIN_START, dot_chain, finish, finish_add
from ..primitives.jit import SIMULATOR

# The simulator runs every thread as a Python thread: small tiles keep it
# quick, and exercise partial tiles at tiny sizes.
TILE = 4 if SIMULATOR else 16


@functools.lru_cache(maxsize=None)
def _kernel(dtype_name):
    nbtype = getattr(types, dtype_name)
    zero = CHAIN_START[dtype_name]
    tile = TILE
    tile_elems = TILE * TILE  # a constant: shared arrays need a compile-time size

    def kernel(out, w_g, xflat, bias_rows, has_bias, c_in, hp, wp, sh, sw, dh, dw, kh, kw, oh, ow):
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col = cuda.blockIdx.x * tile + tx
        co = cuda.blockIdx.y * tile + ty
        g = cuda.blockIdx.z
        groups, co_g = bias_rows.shape[0], bias_rows.shape[1]
        pixels = out.shape[2]
        n_cols = out.shape[0] * pixels
        kk = w_g.shape[2]
        c_g = c_in // groups
        # w_tile[r*TILE + t] = w_g[g, co0 + r, k0 + t], x_tile[t*TILE + c] = cols_g[k0 + t, col0 + c]
        w_tile = cuda.shared.array(tile_elems, nbtype)
        x_tile = cuda.shared.array(tile_elems, nbtype)
        base = column_offset(col, oh, ow, sh, sw, c_in, hp, wp) if col < n_cols else 0
        acc = zero
        for k0 in range(0, kk, tile):
            k_of_w, k_of_x = k0 + tx, k0 + ty  # the k each thread loads into each tile
            w_tile[ty * tile + tx] = w_g[g, co, k_of_w] if (co < co_g and k_of_w < kk) else zero
            if k_of_x < kk and col < n_cols:
                x_tile[ty * tile + tx] = xflat[base + tap_offset(k_of_x, g, c_g, kh, kw, dh, dw, hp, wp)]
            else:
                x_tile[ty * tile + tx] = zero
            cuda.syncthreads()
            acc = dot_chain(w_tile, ty * tile, 1, x_tile, tx, tile, min(tile, kk - k0), acc)
            cuda.syncthreads()
        if co < co_g and col < n_cols:
            # column (n, pixel) of output channel g*co_g + co: the images' layout
            if has_bias:
                out[col // pixels, g * co_g + co, col % pixels] = finish_add(acc, bias_rows[g, co])
            else:
                out[col // pixels, g * co_g + co, col % pixels] = finish(acc)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def conv2d(stream, out, w_g, xpad, bias_rows, has_bias, sh, sw, dh, dw, kh, kw):
    """Same contract as softrep.cpu.conv.conv2d."""
    groups, co_g = bias_rows.shape
    n_cols = out.shape[0] * out.shape[2]
    if groups * co_g * n_cols == 0:
        return
    c_in, hp, wp = xpad.shape[1], xpad.shape[2], xpad.shape[3]
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    kernel, _ = _kernel(str(out.dtype))
    grid = ((n_cols + TILE - 1) // TILE, (co_g + TILE - 1) // TILE, groups)
    # xpad is C-contiguous (the ops layer makes it so): a flat view moves nothing
    xflat = xpad.reshape(xpad.size)
    kernel[grid, (TILE, TILE), stream](out, w_g, xflat, bias_rows, bool(has_bias), c_in, hp, wp,
                                       sh, sw, dh, dw, kh, kw, oh, ow)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        dt = getattr(types, dtype_name)
        argtypes = (types.Array(dt, 3, "C"), types.Array(dt, 3, "C"), types.Array(dt, 1, "C"),
                    types.Array(dt, 2, "C"), types.boolean) + (types.int64,) * 11
        audit.register(f"conv.forward.{dtype_name}", lambda d=dtype_name, a=argtypes: (_kernel(d)[1], a))


_register_audit()
