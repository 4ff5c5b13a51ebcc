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

`tree_product` (the weight gradients of the batch order): one thread per
output element of a tree node, its stack of tree nodes in local memory.
"""

import functools

from numba import cuda, types

from ..algorithms.products import CHAIN_START, dot_chain, finish, finish_add, tree_carry, tree_finish, tree_slot
from ..algorithms.reduction import STACK
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


# --------------------------------------------------------------------------- per-sample chains into the batch tree


@functools.lru_cache(maxsize=None)
def _tree_kernel(dtype_name):
    nbtype = getattr(types, dtype_name)
    zero = CHAIN_START[dtype_name]

    def kernel(out, at, bm, first, counts, dims):
        # One thread per output element (node, g, i, j) with its own stack of
        # tree nodes in local memory: for each sample of the node, its chain
        # (dot_chain over k from +0) goes to the stack slot of its number and
        # is merged into the tree (softrep.algorithms.products).  Flat arrays:
        # at[((s*G + g)*K + k)*M + i], bm[((s*G + g)*K + k)*N + j],
        # out[((node*G + g)*M + i)*N + j]; dims = (S, G, K, M, N).
        groups, k_count, m, n = dims[1], dims[2], dims[3], dims[4]
        t = cuda.grid(1)
        if t >= first.size * groups * m * n:
            return
        j = t % n
        i = (t // n) % m
        g = (t // (n * m)) % groups
        node = t // (n * m * groups)
        stack = cuda.local.array(STACK, nbtype)
        count = 0
        for s in range(first[node], first[node] + counts[node]):
            base = (s * groups + g) * k_count
            stack[tree_slot(count)] = dot_chain(at, base * m + i, m, bm, base * n + j, n, k_count, zero)
            count = tree_carry(stack, 1, count, 1)
        tree_finish(stack, 1, count, 1)
        out[t] = stack[0]

    return cuda.jit(cache=not SIMULATOR)(kernel), kernel


_TREE_THREADS = 64 if SIMULATOR else 128


def tree_product(stream, out, at, bm, first, counts, dims):
    """out (nodes, G, M, N) = for each node the batch tree over its samples of the
    per-sample chains at[s, g]^T @ bm[s, g] (at (S, G, K, M), bm (S, G, K, N));
    flat C-contiguous arrays, dims = (S, G, K, M, N) as an int64 array."""
    total = out.size
    if total == 0:
        return
    kernel, _ = _tree_kernel(str(out.dtype))
    blocks = (total + _TREE_THREADS - 1) // _TREE_THREADS
    kernel[blocks, _TREE_THREADS, stream](out, at, bm, first, counts, dims)


def _register_audit():
    from . import audit

    for dtype_name in ("float32", "float64"):
        for with_addend in (False, True):
            arr = types.Array(getattr(types, dtype_name), 3, "C")
            name = f"linalg.bmm{'_add' if with_addend else ''}.{dtype_name}"
            audit.register(name, lambda d=dtype_name, w=with_addend, arr=arr: (
                _kernel(d, w)[1], (arr,) * 4))
        flat, index = types.Array(getattr(types, dtype_name), 1, "C"), types.Array(types.int64, 1, "C")
        audit.register(f"linalg.tree_product.{dtype_name}", lambda d=dtype_name, flat=flat, index=index: (
            _tree_kernel(d)[1], (flat, flat, flat, index, index, index)))


_register_audit()
