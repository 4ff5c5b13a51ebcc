"""CUDA kernel of the batched matrix product: shared-memory tiles, fixed k order.

One thread owns one output element (b, i, j) and keeps its accumulator in a
register for the whole product: acc = +0, then `dot_chain` over each tile of
k (acc = chain_step(a[i, k], b[k, j], acc) for k = 0, 1, ..., K-1), then
`finish` / `finish_add` (docs/order.md, "Matrix products"); those functions
are in `softrep.algorithms.products`, shared with the CPU micro-kernels.  This
module holds the schedule only.  The block shares the loads: a TILE x TILE
tile of a and of b is staged in shared memory per step of TILE values of k,
with consecutive threads reading consecutive addresses (row-major a along k,
row-major b along j), so global loads are coalesced.  The tile size changes
which loads are shared, never the order of any accumulator: a partial last
tile stops at K instead of multiplying padding.
"""

import functools

from numba import cuda, types

from ..algorithms.products import CHAIN_START, dot_chain, finish, finish_add
from ..primitives.jit import SIMULATOR

# The simulator runs every thread as a Python thread: small tiles keep it
# quick, and exercise partial tiles at tiny sizes.
TILE = 4 if SIMULATOR else 16


@functools.lru_cache(maxsize=None)
def _kernel(dtype_name, with_addend):
    nbtype = getattr(types, dtype_name)
    zero = CHAIN_START[dtype_name]
    tile = TILE
    tile_elems = TILE * TILE  # a constant: shared arrays need a compile-time size

    def kernel(out, a, b, addend):
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        j = cuda.blockIdx.x * tile + tx
        i = cuda.blockIdx.y * tile + ty
        bz = cuda.blockIdx.z
        m, k_count = a.shape[1], a.shape[2]
        n = b.shape[2]
        # Flat tiles (a device function takes them as 1-D arrays):
        # a_tile[r*TILE + kk] = a[i0 + r, k0 + kk], b_tile[kk*TILE + c] = b[k0 + kk, j0 + c].
        a_tile = cuda.shared.array(tile_elems, nbtype)
        b_tile = cuda.shared.array(tile_elems, nbtype)
        acc = zero
        for k0 in range(0, k_count, tile):
            ka, kb = k0 + tx, k0 + ty
            a_tile[ty * tile + tx] = a[bz, i, ka] if (i < m and ka < k_count) else zero
            b_tile[ty * tile + tx] = b[bz, kb, j] if (kb < k_count and j < n) else zero
            cuda.syncthreads()
            # row ty of a_tile against column tx of b_tile, k0 .. min(k0 + TILE, K) - 1
            acc = dot_chain(a_tile, ty * tile, 1, b_tile, tx, tile, min(tile, k_count - k0), acc)
            cuda.syncthreads()
        if i < m and j < n:
            if with_addend:
                out[bz, i, j] = finish_add(acc, addend[bz, i, j])
            else:
                out[bz, i, j] = finish(acc)

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


def _launch(stream, out, a, b, addend=None):
    nb, m, n = out.shape
    if nb * m * n == 0:
        return
    kernel, _ = _kernel(str(a.dtype), addend is not None)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE, nb)
    # Without an addend the kernel never reads its addend argument; pass an
    # input there, not `out`: the simulator copies every argument back after
    # the launch, and a second copy of `out` would overwrite the result.
    kernel[grid, (TILE, TILE), stream](out, a, b, a if addend is None else addend)


def bmm(stream, out, a, b, addend=None):
    """out (B, M, N) = a (B, M, K) @ b (B, K, N) [+ addend (B, M, N)], C-contiguous arrays."""
    _launch(stream, out, a, b, addend)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        for with_addend in (False, True):
            arr = types.Array(getattr(types, dtype_name), 3, "C")
            name = f"linalg.bmm{'_add' if with_addend else ''}.{dtype_name}"
            audit.register(name, lambda d=dtype_name, w=with_addend, arr=arr: (
                _kernel(d, w)[1], (arr,) * 4))


_register_audit()
