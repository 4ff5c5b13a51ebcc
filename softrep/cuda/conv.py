"""CUDA kernel of the 2-D convolution forward: implicit GEMM, one thread per output.

Each thread owns one output element (g, co, col), col = (n, oh, ow), and runs
its chain directly on the zero-padded input: acc = +0, then
acc = fma_rn(xpad[n, c, oh*sh + kh*dh, ow*sw + kw*dw], w[co, c, kh, kw], acc)
over (c, kh, kw) in row-major order, then add_rn(acc, bias[co]) (docs/order.md,
"Convolution").  No im2col buffer is built; consecutive threads take
consecutive output columns, so the loads of xpad along ow are coalesced and
the weight loads are broadcasts.  A grid-stride loop makes the result
independent of the launch shape.
"""

import functools

from numba import cuda, types

from ..primitives.jit import SIMULATOR
from ..primitives.rounding import ZERO32, ZERO64, add_rn, canonical, fma_rn

THREADS = 8 if SIMULATOR else 256


@functools.lru_cache(maxsize=None)
def _kernel(dtype_name):
    zero = ZERO32 if dtype_name == "float32" else ZERO64

    def kernel(out, w_g, xpad, bias_rows, has_bias, sh, sw, dh, dw, kh, kw, oh, ow):
        groups, co_g, n_cols = out.shape
        c_g = xpad.shape[1] // groups
        start, step = cuda.grid(1), cuda.gridsize(1)
        for t in range(start, groups * co_g * n_cols, step):
            g = t // (co_g * n_cols)
            co = (t // n_cols) % co_g
            col = t % n_cols
            n = col // (oh * ow)
            i = (col // ow) % oh
            j = col % ow
            acc = zero
            k = 0
            for c in range(c_g):
                ch = g * c_g + c
                for a in range(kh):
                    for e in range(kw):
                        acc = fma_rn(xpad[n, ch, i * sh + a * dh, j * sw + e * dw], w_g[g, co, k], acc)
                        k += 1
            if has_bias:
                acc = add_rn(acc, bias_rows[g, co])
            out[g, co, col] = canonical(acc)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def conv2d(stream, out, w_g, xpad, bias_rows, has_bias, sh, sw, dh, dw, kh, kw):
    """Same contract as softrep.cpu.conv.conv2d."""
    total = out.shape[0] * out.shape[1] * out.shape[2]
    if total == 0:
        return
    hp, wp = xpad.shape[2], xpad.shape[3]
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    kernel, _ = _kernel(str(out.dtype))
    blocks = 1 if SIMULATOR else max(1, min((total + THREADS - 1) // THREADS, 65535))
    kernel[blocks, THREADS, stream](out, w_g, xpad, bias_rows, bool(has_bias), sh, sw, dh, dw, kh, kw, oh, ow)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        dt = getattr(types, dtype_name)
        argtypes = (types.Array(dt, 3, "C"), types.Array(dt, 3, "C"), types.Array(dt, 4, "C"),
                    types.Array(dt, 2, "C"), types.boolean) + (types.int64,) * 8
        audit.register(f"conv.forward.{dtype_name}", lambda d=dtype_name, a=argtypes: (_kernel(d)[1], a))


_register_audit()
