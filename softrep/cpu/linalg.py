"""CPU launchers of the batched matrix product (GotoBLAS-style, fixed k order).

out[b, i, j] = finish_add(chain(i, j), addend[b, i, j])   (finish(chain) without
an addend), where chain is the sequence of `chain_step` in k order from +0;
`chain_step`, `finish`, `finish_add` and the micro-kernels that advance a
register block through the chain are in `softrep.algorithms.products`.  This
module holds the schedule only: packing, blocking and threads.

1. Pack a into MR-row panels (batch, M/MR, K, MR) and b into NR-column panels
   (batch, N/NR, K, NR), zero-padded to whole panels.  Padded rows and columns
   only feed accumulators that are thrown away.
2. One parallel task per (batch, block of MC rows, block of NC columns).  A
   task walks k in blocks of KC; inside a block each MR x NR micro-tile
   advances its accumulators from k0 to k1 (`products.micro_kernel`) and
   parks them in the padded output buffer until the next k-block (storing a
   float is exact).  Every accumulator therefore sees its steps for
   k = 0, 1, ..., K-1 in order, on one thread, whatever the thread count:
   tasks partition the outputs, never k.
3. A parallel pass ends every chain (`finish` / `finish_add`: the addend once,
   canonical NaNs) and crops the padding.

MR, NR and the cache blocks come from `BLOCKINGS`, chosen at import for the
host's vector registers (AVX-512: 8 x 32 float32 in zmm registers; AVX2 and
narrower: 6 x 16 in ymm registers) or by $SOFTREP_CPU_BLOCKING.  They decide
which chains advance together, never the steps of any chain, so every host
and every blocking gives the same bits.

`tree_product` (the weight gradients of the batch order): one task per
(tree node, group, MR-row panel); for each sample the strided micro-kernel
runs the sample's chains into the task's stack of tree nodes, which
`tree_carry` merges as the samples come (no per-sample partials stored).
"""

import contextlib
from dataclasses import dataclass
import os

import llvmlite.binding as llvm
import numba
import numpy as np
from numba import carray, njit, prange, types
from numba.core import config as _numba_config
from numba.extending import overload

from ..algorithms.products import (finish, finish_add, micro_kernel, outer_leaf, outer_node_of_eight, tree_carry,
                                   tree_finish, tree_slot, tree_slots)
from ..algorithms.widening import narrowed_bits, widened
from ..primitives.fpenv import CONTROL_MASK, enter_ieee, ieee_state, leave_ieee
from ..primitives.vector import LANES, load_f32x8, store_f32x8, transpose_f32x8
from .launch import address_as_pointer, host_vector_bits, kernel, on_threads
from .workspace import scratch, scratch_address

# Argument types of each kernel's launches, for the kernel audit (softrep/cpu/launch.py).
_FLOATS = (types.float32, types.float64)
_I = types.int64


def _arrays(*ndims):
    return [tuple(types.Array(t, n, "C") for n in ndims) for t in _FLOATS]


# --------------------------------------------------------------------------- register blocking per host


@dataclass(frozen=True)
class Blocking:
    """The shape of the micro-kernel's register block and of the cache blocks.

    mr rows of a times nr[dtype] columns of b are advanced together (mr * nr
    accumulators, each its own chain); kc is the k-block, mc_panels and
    nc_panels the panels of a and b per task; vector_bits is the vector width
    the micro-kernel is vectorized for.  None of these can move a bit: they
    choose which chains advance together, never the steps of one chain."""

    mr: int
    nr: dict
    kc: int
    mc_panels: int
    nc_panels: int
    vector_bits: int


BLOCKINGS = {
    # 16 ymm registers (AVX2, 8 float32 lanes): 6 rows x 2 vectors of
    # accumulators = 12 registers, plus 2 for a row of b and 1 for a broadcast
    # of a.  One packed panel of b (KC x NR) stays in L1 while the MR-row
    # panels of a stream past it; MC = 8 * MR rows (8 panels x KC stay in L2),
    # NC = 16 * NR columns.
    "avx2": Blocking(mr=6, nr={np.dtype(np.float32): 16, np.dtype(np.float64): 8}, kc=256,
                     mc_panels=8, nc_panels=16, vector_bits=256),
    # 32 zmm registers (AVX-512, 16 float32 lanes): 8 rows x 2 vectors of
    # accumulators = 16 registers, plus 2 for a row of b and 1 for a
    # broadcast of a.  Still 16 independent fma chains per k, enough to
    # cover the fma latency of two units, and 8 rows divide the channel
    # counts and batch sizes of training (16, 32, 64, ...): a taller block
    # (14 rows fill 28 registers) pads M = 16 to 28 rows and 32 to 42, whose
    # extra chains are computed and thrown away.
    "avx512": Blocking(mr=8, nr={np.dtype(np.float32): 32, np.dtype(np.float64): 16}, kc=256,
                       mc_panels=8, nc_panels=16, vector_bits=512),
}

BLOCKING_VARIABLE = "SOFTREP_CPU_BLOCKING"


def host_blocking_name():
    """The blocking for the CPU Numba compiles for: "avx512" when it has
    AVX-512F (32 vector registers of 512 bits), "avx2" otherwise (the AVX2
    shape also serves hosts with narrower vectors)."""
    return "avx512" if host_vector_bits() == 512 else "avx2"


def _chosen_blocking():
    name = os.environ.get(BLOCKING_VARIABLE) or host_blocking_name()
    if name not in BLOCKINGS:
        raise ValueError(f"{BLOCKING_VARIABLE}={name!r}: expected one of {sorted(BLOCKINGS)}")
    return name


BLOCKING_NAME = _chosen_blocking()
BLOCKING = BLOCKINGS[BLOCKING_NAME]
MR, NR, KC = BLOCKING.mr, BLOCKING.nr, BLOCKING.kc
MC_PANELS, NC_PANELS = BLOCKING.mc_panels, BLOCKING.nc_panels


@njit(cache=True, inline="always")
def copy_run(dst, d0, src, s0, count, width):
    """dst[d0 + r] = src[s0 + r] for r < count; `width` (a constant of the
    caller, the panel width) is the common count, a loop of fixed length."""
    d, s = dst[d0:d0 + count], src[s0:s0 + count]  # views from 0: no negative-index code
    if count == width:
        for r in range(width):
            d[r] = s[r]
    else:
        for r in range(count):
            d[r] = s[r]


@njit(cache=True, inline="always")
def gather_run(dst, d0, src, s0, stride, count, width):
    """dst[d0 + r] = src[s0 + r*stride] for r < count, as `copy_run`."""
    d, s = dst[d0:d0 + count], src[s0:]  # views from 0: no negative-index code
    if count == width:
        for r in range(width):
            d[r] = s[r * stride]
    else:
        for r in range(count):
            d[r] = s[r * stride]


# Packing rows into panels transposes: ap[.., k, r] = a[.., r, k].  For
# float32, 8 rows at a time go through `transpose_f32x8` (8 k at a time: 8
# vector loads along the rows, shuffles, 8 vector stores into the panel)
# instead of one strided scalar load per element.  Values are only moved.


def _rows_transposed(dst, d0, ld, src, s0, stride, k_count):
    """dst[d0 + k*ld + r] = src[s0 + r*stride + k] for r < 8, k < k_count,
    and True -- for float32 arrays (1-D, C-contiguous); otherwise False
    (nothing done)."""


def _rows_transposed_f32(dst, d0, ld, src, s0, stride, k_count):
    k8 = k_count - k_count % LANES
    for k in range(0, k8, LANES):
        c0, c1, c2, c3, c4, c5, c6, c7 = transpose_f32x8(
            load_f32x8(src, s0 + k), load_f32x8(src, s0 + stride + k), load_f32x8(src, s0 + 2 * stride + k),
            load_f32x8(src, s0 + 3 * stride + k), load_f32x8(src, s0 + 4 * stride + k),
            load_f32x8(src, s0 + 5 * stride + k), load_f32x8(src, s0 + 6 * stride + k),
            load_f32x8(src, s0 + 7 * stride + k))
        at = d0 + k * ld
        store_f32x8(dst, at, c0)
        store_f32x8(dst, at + ld, c1)
        store_f32x8(dst, at + 2 * ld, c2)
        store_f32x8(dst, at + 3 * ld, c3)
        store_f32x8(dst, at + 4 * ld, c4)
        store_f32x8(dst, at + 5 * ld, c5)
        store_f32x8(dst, at + 6 * ld, c6)
        store_f32x8(dst, at + 7 * ld, c7)
    for k in range(k8, k_count):
        for r in range(LANES):
            dst[d0 + k * ld + r] = src[s0 + r * stride + k]
    return True


def _rows_not_transposed(dst, d0, ld, src, s0, stride, k_count):
    return False


@overload(_rows_transposed)
def _rows_transposed_impl(dst, d0, ld, src, s0, stride, k_count):
    if all(isinstance(t, types.Array) and t.dtype == types.float32 and t.ndim == 1 and t.layout == "C"
           for t in (dst, src)):
        return _rows_transposed_f32
    return _rows_not_transposed


@kernel("linalg.pack_a_panel", *[(types.Array(t, 1, "C"), types.Array(t, 1, "C")) + (_I,) * 6 for t in _FLOATS])
@njit(cache=True)
def _pack_a_panel(apf, af, b, ip, npan, m, k_count, mr):
    # panel ip of batch b: ap[b, ip, k, r] = a[b, ip*mr + r, k], padding rows +0
    # (apf, af: ap and a flat)
    d0 = (b * npan + ip) * k_count * mr
    s0 = (b * m + ip * mr) * k_count
    rows = min(mr, m - ip * mr)
    r = 0
    while r + LANES <= rows and _rows_transposed(apf, d0 + r, mr, af, s0 + r * k_count, k_count, k_count):
        r += LANES
    for k in range(k_count):
        for q in range(r, rows):
            apf[d0 + k * mr + q] = af[s0 + q * k_count + k]
        for q in range(rows, mr):
            apf[d0 + k * mr + q] = 0


@kernel("linalg.pack_a", *[sig + (_I,) for sig in _arrays(4, 3)])
@njit(parallel=True, cache=True)
def _pack_a(ap, a, mr):
    nb, m, k_count = a.shape
    npan = ap.shape[1]
    apf, af = ap.reshape(-1), a.reshape(-1)
    for t in prange(nb * npan):
        _pack_a_panel(apf, af, t // npan, t % npan, npan, m, k_count, mr)


PACK_ROWS = 256  # rows of b per packing task


@kernel("linalg.pack_b_panel", *[(types.Array(t, 1, "C"), types.Array(t, 1, "C")) + (_I,) * 7 for t in _FLOATS])
@njit(cache=True)
def _pack_b_panel(bpf, bmf, b, jp, k0, k_count, n, npan, nr):
    # rows k0 .. k0+PACK_ROWS-1 of panel jp of batch b: bp[b, jp, k, j] =
    # bm[b, k, jp*nr + j], padding +0 (bpf, bmf: bp and bm flat), written in
    # address order, each k a contiguous run of b's row k
    cols = min(nr, n - jp * nr)
    d0 = (b * npan + jp) * k_count * nr
    s0 = b * k_count * n + jp * nr
    for k in range(k0, min(k0 + PACK_ROWS, k_count)):
        copy_run(bpf, d0 + k * nr, bmf, s0 + k * n, cols, nr)
        for j in range(cols, nr):
            bpf[d0 + k * nr + j] = 0


@kernel("linalg.pack_b", *[sig + (_I,) for sig in _arrays(4, 3)])
@njit(parallel=True, cache=True)
def _pack_b(bp, bm, nr):
    # one task per PACK_ROWS rows of one panel, written in address order (one
    # task per row of b wrote to every panel at once, a store stream each)
    nb, k_count, n = bm.shape
    npan = bp.shape[1]
    chunks = (k_count + PACK_ROWS - 1) // PACK_ROWS
    bpf, bmf = bp.reshape(-1), bm.reshape(-1)
    for t in prange(nb * npan * chunks):
        b, jp, c = t // (npan * chunks), (t // chunks) % npan, t % chunks
        _pack_b_panel(bpf, bmf, b, jp, c * PACK_ROWS, k_count, n, npan, nr)


# Transposed operands (a = at^T, b = bt^T with at, bt C-contiguous: the
# weight of `linear`, the operands of the backward products) are packed from
# their own layout, so no transposed copy is made first.  Packing a from at
# is packing b from at (ap[b, ip, k, r] = at[b, k, ip*MR + r] is `_pack_b`'s
# bp[b, jp, k, j] = bm[b, k, jp*NR + j]), and b from bt is `_pack_a`: the
# panels hold the same values, so the chains and bits are those of the
# contiguous operand.


def _is_transposed(x):
    return not x.flags.c_contiguous and x.transpose(0, 2, 1).flags.c_contiguous


def pack_a(ap, a, mr):
    """Pack a (B, M, K): read where it lies when it is the transpose of a
    C-contiguous array, else from a C-contiguous array (a copy if needed)."""
    if _is_transposed(a):
        _pack_b(ap, a.transpose(0, 2, 1), mr)
    else:
        _pack_a(ap, np.ascontiguousarray(a), mr)


def pack_b(bp, b, nr):
    """Pack b (B, K, N), as `pack_a` does a."""
    if _is_transposed(b):
        _pack_a(bp, b.transpose(0, 2, 1), nr)
    else:
        _pack_b(bp, np.ascontiguousarray(b), nr)


# bfloat16/float16 operands arrive as 16-bit patterns and are widened to
# float32 while packing (exact); the float32 chains then run unchanged, and the
# finishing pass rounds each output once to the format.
_U16_3 = types.Array(types.uint16, 3, "C")
_F32_3, _F32_4 = types.Array(types.float32, 3, "C"), types.Array(types.float32, 4, "C")
_SPEC = types.UniTuple(types.int64, 9)


@kernel("linalg.pack_a_widen", (_F32_4, _U16_3, _I, _I))
@njit(parallel=True, cache=True)
def _pack_a_widen(ap, a, mr, fmt):
    nb, m, k_count = a.shape
    npan = ap.shape[1]
    for t in prange(nb * npan):
        b, ip = t // npan, t % npan
        rows = min(mr, m - ip * mr)
        for k in range(k_count):
            for r in range(rows):
                ap[b, ip, k, r] = widened(a[b, ip * mr + r, k], fmt)
            for r in range(rows, mr):
                ap[b, ip, k, r] = 0


@kernel("linalg.pack_b_widen", (_F32_4, _U16_3, _I, _I))
@njit(parallel=True, cache=True)
def _pack_b_widen(bp, bm, nr, fmt):
    nb, k_count, n = bm.shape
    npan = bp.shape[1]
    for t in prange(nb * k_count):
        b, k = t // k_count, t % k_count
        for jp in range(npan):
            cols = min(nr, n - jp * nr)
            for j in range(cols):
                bp[b, jp, k, j] = widened(bm[b, k, jp * nr + j], fmt)
            for j in range(cols, nr):
                bp[b, jp, k, j] = 0


@kernel("linalg.finish_narrow", (_U16_3, _F32_3, _SPEC, _I))
@njit(parallel=True, cache=True)
def _finish_narrow(out, cpad, spec, fmt):
    nb, m, n = out.shape
    for t in prange(nb * m):
        b, i = t // m, t % m
        for j in range(n):
            out[b, i, j] = narrowed_bits(finish(cpad[b, i, j]), spec, fmt)


@kernel("linalg.finish_add_narrow", (_U16_3, _F32_3, _F32_3, _SPEC, _I))
@njit(parallel=True, cache=True)
def _finish_add_narrow(out, cpad, addend, spec, fmt):
    nb, m, n = out.shape
    for t in prange(nb * m):
        b, i = t // m, t % m
        for j in range(n):
            out[b, i, j] = narrowed_bits(finish_add(cpad[b, i, j], addend[b, i, j]), spec, fmt)


@njit(cache=True, inline="always")
def equal_blocks(panels, most):
    """(blocks, size): `panels` in the fewest blocks of at most `most` panels,
    all of `size` panels but a last one that is at most one panel shorter.
    Numba hands each thread an equal run of a parallel loop's tasks, and a
    short last block (3 panels after 8) would leave a thread idle for part of
    the launch.  Which panels share a block changes no chain."""
    blocks = (panels + most - 1) // most
    return blocks, (panels + blocks - 1) // max(1, blocks)


_slp_width_set = False


@contextlib.contextmanager
def slp_vectorize():
    """Compile with LLVM's SLP vectorizer, which Numba leaves off by default.

    It is what turns the micro-kernel's rows of NR scalar fmas into vfmadd on
    vector registers.  Vectorizing changes no rounding: each lane is the same
    IEEE fma (no fast-math flags, nothing reassociated).  Numba reads the flag
    whenever it builds a pass pipeline, so it only matters while a kernel
    compiles; loading a cached kernel is unaffected.

    The vectorizer's register width is set to the blocking's: LLVM's cost
    model prefers 256-bit vectors on most AVX-512 CPUs, which would split each
    row of the AVX-512 block into ymm halves and leave half of the 32 zmm
    registers' width unused.  The option is LLVM's, process-wide, and only
    read by the SLP vectorizer, which Numba runs only when asked to.
    """
    global _slp_width_set
    if not _slp_width_set:
        llvm.set_option("", f"-slp-max-reg-size={BLOCKING.vector_bits}")
        _slp_width_set = True
    saved = _numba_config.SLP_VECTORIZE
    _numba_config.SLP_VECTORIZE = 1
    try:
        yield
    finally:
        _numba_config.SLP_VECTORIZE = saved


def compiled_with_slp(dispatcher):
    """`dispatcher` (a Numba dispatcher of a kernel that runs the
    micro-kernel) made to compile inside `slp_vectorize`, whoever compiles
    it: its first call, the kernel audit, a caller's compile.  Its compiled
    code goes to the on-disk cache, and every later process loads it as it
    is: compiled once without the vectorizer (by the audit, before the
    kernel's first call), its micro-kernel would stay scalar for good.  The
    audit then also reads the code that runs."""
    compile_plain = dispatcher.compile

    def compile(signature):
        with slp_vectorize():
            return compile_plain(signature)

    dispatcher.compile = compile
    return dispatcher


def _make_blocks(micro, mr, nr, dtype):
    flat = types.Array(dtype, 1, "C")

    @kernel(f"linalg.blocks.{dtype}", (flat, flat, flat) + (_I,) * 7)
    @compiled_with_slp
    @njit(parallel=True, cache=True)
    def blocks(c_flat, ap_flat, bp_flat, nb, m_panels, n_panels, k_count, kc, mc_panels, nc_panels):
        # flat arrays: cpad (nb, m_panels*mr, npad), ap (nb, m_panels, K, mr), bp (nb, n_panels, K, nr)
        npad = n_panels * nr
        m_blocks, mc_panels = equal_blocks(m_panels, mc_panels)
        n_blocks, nc_panels = equal_blocks(n_panels, nc_panels)
        k_blocks = max(1, (k_count + kc - 1) // kc)  # K = 0 still zero-fills the tiles
        for t in prange(nb * m_blocks * n_blocks):
            b = t // (m_blocks * n_blocks)
            mb = (t // n_blocks) % m_blocks
            nbk = t % n_blocks
            ip0, ip1 = mb * mc_panels, min(m_panels, (mb + 1) * mc_panels)
            jp0, jp1 = nbk * nc_panels, min(n_panels, (nbk + 1) * nc_panels)
            for kb in range(k_blocks):
                k0, k1 = kb * kc, min(k_count, (kb + 1) * kc)
                for jp in range(jp0, jp1):
                    for ip in range(ip0, ip1):
                        a_off = ((b * m_panels + ip) * k_count + k0) * mr
                        b_off = ((b * n_panels + jp) * k_count + k0) * nr
                        c_off = (b * m_panels * mr + ip * mr) * npad + jp * nr
                        micro(ap_flat, bp_flat, c_flat, a_off, b_off, c_off, npad, k1 - k0, kb == 0)

    return blocks


_MICRO = {np.dtype(t): micro_kernel(t, MR, NR[np.dtype(t)]) for t in (np.float32, np.float64)}
_blocks_f32 = _make_blocks(_MICRO[np.dtype(np.float32)], MR, NR[np.dtype(np.float32)], types.float32)
_blocks_f64 = _make_blocks(_MICRO[np.dtype(np.float64)], MR, NR[np.dtype(np.float64)], types.float64)


@kernel("linalg.finish", *_arrays(3, 3))
@njit(parallel=True, cache=True)
def _finish_outputs(out, cpad):
    nb, m, n = out.shape
    for t in prange(nb * m):
        b, i = t // m, t % m
        for j in range(n):
            out[b, i, j] = finish(cpad[b, i, j])


@kernel("linalg.finish_add", *_arrays(3, 3, 3))
@njit(parallel=True, cache=True)
def _finish_outputs_add(out, cpad, addend):
    nb, m, n = out.shape
    for t in prange(nb * m):
        b, i = t // m, t % m
        for j in range(n):
            out[b, i, j] = finish_add(cpad[b, i, j], addend[b, i, j])


@kernel("linalg.finish_bias_rows", *_arrays(3, 3, 2))
@njit(parallel=True, cache=True)
def _finish_outputs_bias_rows(out, cpad, bias):
    nb, m, n = out.shape
    for t in prange(nb * m):
        b, i = t // m, t % m
        for j in range(n):
            out[b, i, j] = finish_add(cpad[b, i, j], bias[b, i])


def ceil_to(x, step):
    return (x + step - 1) // step * step


def packed_b(nb, k_count, n, dtype):
    """An uninitialised packed-b buffer for `product_packed`: (nb, ceil(n/NR), K, NR)."""
    nr = NR[np.dtype(dtype)]
    return scratch("packed_b", (nb, ceil_to(n, nr) // nr, k_count, nr), dtype)


def packed_a(a, dtype, widen_fmt=None):
    """a (B, M, K) packed into MR-row panels (B, ceil(M/MR), K, MR), zero-padded;
    widen_fmt: a holds bfloat16/float16 patterns (uint16) of that format code,
    widened to float32 while packed."""
    nb, m, k_count = a.shape
    ap = scratch("packed_a", (nb, ceil_to(m, MR) // MR, k_count, MR), dtype)
    if k_count:
        if widen_fmt is None:
            pack_a(ap, a, MR)
        else:
            _pack_a_widen(ap, a, MR, widen_fmt)
    return ap


def host_micro_kernel(dtype):
    """The micro-kernel of the host blocking for `dtype` (float32 or float64)."""
    return _MICRO[np.dtype(dtype)]


def finish_padded(out, cpad, addend=None, bias_rows=None, narrow=None):
    """out (B, M, N) = every chain of cpad (B, >= M, >= N) ended (`finish`, or
    `finish_add` of addend (B, M, N) or of bias_rows (B, M) per row), the
    padding cropped; narrow = (spec, fmt): each output rounded once to the
    format, as a uint16 pattern."""
    if narrow is not None:
        if addend is not None:
            _finish_add_narrow(out, cpad, addend, *narrow)
        else:
            _finish_narrow(out, cpad, *narrow)
    elif addend is not None:
        _finish_outputs_add(out, cpad, addend)
    elif bias_rows is not None:
        _finish_outputs_bias_rows(out, cpad, bias_rows)
    else:
        _finish_outputs(out, cpad)


def product_packed(out, a, bp, addend=None, bias_rows=None, narrow=None):
    """out (B, M, N) = a (B, M, K) @ b [+ addend (B, M, N) | + bias_rows (B, M) per row],
    with b already packed into `bp` (see `packed_b`; padding columns must be finite).
    narrow = (spec, fmt): a and out are bfloat16/float16 patterns (uint16), a is
    widened while packed, each output rounded once to the format."""
    nb, m, k_count = a.shape
    if out.size == 0:
        return
    dtype = bp.dtype
    nr = NR[dtype]
    ap = packed_a(a, dtype, None if narrow is None else narrow[1])
    mpad, npad = ap.shape[1] * MR, bp.shape[1] * nr
    cpad = scratch("accumulators", (nb, mpad, npad), dtype)
    blocks = _blocks_f32 if dtype == np.float32 else _blocks_f64
    blocks(cpad.reshape(-1), ap.reshape(-1), bp.reshape(-1), nb, mpad // MR, npad // nr, k_count, KC, MC_PANELS,
           NC_PANELS)
    finish_padded(out, cpad, addend, bias_rows, narrow)


def _serial_operand(x):
    """x (B, R, C) as `serial_product` reads it: (COLUMNS, x) when x is the
    transpose of a C-contiguous array, else (ROWS, x C-contiguous)."""
    if _is_transposed(x):
        return COLUMNS, x
    return ROWS, np.ascontiguousarray(x)


def bmm(out, a, b, addend=None):
    """out (B, M, N) = a (B, M, K) @ b (B, K, N) [+ addend (B, M, N)]: out and
    addend C-contiguous; a and b any layout, read where they lie when
    C-contiguous or transposes of C-contiguous arrays (`pack_a`, `pack_b`).
    Products of at most SERIAL_FMAS fmas run `serial_product` on the calling
    thread: the packed path's four parallel launches cost more than the work."""
    nb, k_count, n = b.shape
    if out.size == 0:
        return
    if out.size * k_count <= SERIAL_FMAS:
        (a_layout, a), (b_layout, b) = _serial_operand(a), _serial_operand(b)
        serial_product(out.dtype, out.ctypes.data, a.ctypes.data, b.ctypes.data,
                       0 if addend is None else addend.ctypes.data, nb, a.shape[1], k_count, n, a_layout, b_layout,
                       NO_ADDEND if addend is None else FULL_ADDEND)
        return
    bp = packed_b(nb, k_count, n, b.dtype)
    if k_count:
        pack_b(bp, b, bp.shape[3])
    product_packed(out, a, bp, addend)


# --------------------------------------------------------------------------- the light path
#
# A small product on the calling thread, through the tensors' addresses (the
# elementwise ops' light path, softrep/cpu/launch.py): both operands packed
# into the micro-kernel's panels by one serial kernel, every chain advanced
# from +0 through all of k, then ended.  Parallel launches cost more than
# the products themselves at these sizes; the chains are the same, so are
# the bits.

SERIAL_FMAS = 4_194_304  # 2^22, the largest B*M*N*K the light path takes (docs/benchmarks.md)

# Operand layouts of `serial_product`: a (m, k) stored as it is (ROWS) or as
# the C-contiguous (k, m) whose transpose it is (COLUMNS: a weight's t(), the
# backward's transposes), per batch; b likewise.
ROWS, COLUMNS = 0, 1
# Its addends: none, one row of n broadcast to every output row (linear's
# bias), or a full (nb, m, n) addend.
NO_ADDEND, ROW_ADDEND, FULL_ADDEND = 0, 1, 2


@njit(cache=True, inline="always")
def pack_rows_transposed(dst, x, xs, m, k, width, panels):
    """The m rows of k elements stored row after row in x from xs on, into
    width-row panels: dst[(ip*k + kk)*width + r] = x[xs + (ip*width + r)*k +
    kk]; float32 moves 8 rows at a time through `transpose_f32x8`, the rest
    are gathered.  (The padding rows are the caller's.)"""
    for ip in range(panels):
        rows = min(width, m - ip * width)
        r, d0 = 0, ip * k * width
        while r + LANES <= rows and _rows_transposed(dst, d0 + r, width, x, xs + (ip * width + r) * k, k, k):
            r += LANES
        if r < rows:
            for kk in range(k):
                gather_run(dst, (ip * k + kk) * width + r, x, xs + (ip * width + r) * k + kk, k, rows - r, width - r)


@njit(cache=True, inline="always")
def pack_panels_a(ap, x, xs, m, k, mr, m_panels, layout, stride):
    """a (m, k), from x at offset xs in `layout` (ROWS: a[i, kk] at i*k + kk;
    COLUMNS: at kk*stride + i, stride >= m: the rows of a taller matrix),
    into mr-row panels: ap[(ip*k + kk)*mr + r] = a[ip*mr + r, kk], the
    padding rows +0 (they feed only chains that are thrown away)."""
    ap[(m_panels - 1) * k * mr:m_panels * k * mr] = 0  # only the last panel holds padding
    if layout == COLUMNS:  # a panel's rows of one kk are consecutive in x
        for ip in range(m_panels):
            rows = min(mr, m - ip * mr)
            for kk in range(k):
                copy_run(ap, (ip * k + kk) * mr, x, xs + kk * stride + ip * mr, rows, mr)
    else:  # a panel's rows of one kk are k apart in x
        pack_rows_transposed(ap, x, xs, m, k, mr, m_panels)


@njit(cache=True, inline="always")
def pack_panels_b(bp, y, ys, k, n, nr, n_panels, layout):
    """b (k, n), from y at offset ys in `layout` (ROWS: b[kk, j] at kk*n + j;
    COLUMNS: at j*k + kk), into nr-column panels: bp[(jp*k + kk)*nr + j] =
    b[kk, jp*nr + j], the padding columns +0."""
    bp[(n_panels - 1) * k * nr:n_panels * k * nr] = 0
    if layout == COLUMNS:  # a panel's columns of one kk are k apart in y: b^T's rows
        pack_rows_transposed(bp, y, ys, n, k, nr, n_panels)
    else:  # a panel's columns of one kk are consecutive in y
        for jp in range(n_panels):
            cols = min(nr, n - jp * nr)
            for kk in range(k):
                copy_run(bp, (jp * k + kk) * nr, y, ys + kk * n + jp * nr, cols, nr)


def _serial_product(dtype):
    micro = _MICRO[np.dtype(dtype)]
    mr, nr = MR, NR[np.dtype(dtype)]

    itemsize = np.dtype(dtype).itemsize

    @njit(cache=True, error_model="numpy")
    def product_rows(out, a, b, addend, work, nb, m, k, n, a_layout, b_layout, addend_kind, ip0, ip1):
        # The output rows of row panels ip0 .. ip1-1 (rows ip0*mr .. ) of every
        # product: their panels of a, all of b, in `work` (`_serial_work_bytes`).
        r0 = ip0 * mr
        rows = min(m, ip1 * mr) - r0
        m_panels, n_panels = ip1 - ip0, (n + nr - 1) // nr
        npad = n_panels * nr
        o = carray(address_as_pointer(out), nb * m * n, dtype)
        x = carray(address_as_pointer(a), nb * m * k, dtype)
        y = carray(address_as_pointer(b), nb * k * n, dtype)
        c_size = nb * m * n if addend_kind == FULL_ADDEND else (n if addend_kind == ROW_ADDEND else 0)
        z = carray(address_as_pointer(addend), c_size, dtype)
        a_size, b_size = m_panels * k * mr, n_panels * k * nr
        ap = carray(address_as_pointer(work), a_size, dtype)
        bp = carray(address_as_pointer(work + a_size * itemsize), b_size, dtype)
        cpad = carray(address_as_pointer(work + (a_size + b_size) * itemsize), m_panels * mr * npad, dtype)
        for s in range(nb):
            xs, ys, os = s * m * k, s * k * n, s * m * n
            pack_panels_a(ap, x, xs + (r0 if a_layout == COLUMNS else r0 * k), rows, k, mr, m_panels, a_layout, m)
            pack_panels_b(bp, y, ys, k, n, nr, n_panels, b_layout)
            # every chain from +0 through all of k in one call: the chains of "Matrix products"
            for jp in range(n_panels):
                for ip in range(m_panels):
                    micro(ap, bp, cpad, ip * k * mr, jp * k * nr, ip * mr * npad + jp * nr, npad, k, True)
            # rows through views from 0 (no negative-index code; the loops vectorise)
            for i in range(rows):
                at = os + (r0 + i) * n
                orow, crow = o[at:at + n], cpad[i * npad:i * npad + n]
                if addend_kind == ROW_ADDEND:
                    for j in range(n):
                        orow[j] = finish_add(crow[j], z[j])
                elif addend_kind == FULL_ADDEND:
                    zrow = z[at:at + n]
                    for j in range(n):
                        orow[j] = finish_add(crow[j], zrow[j])
                else:
                    for j in range(n):
                        orow[j] = finish(crow[j])

    def product_serial(out, a, b, addend, work, nb, m, k, n, a_layout, b_layout, addend_kind, mask):
        old = enter_ieee(mask)
        product_rows(out, a, b, addend, work, nb, m, k, n, a_layout, b_layout, addend_kind, 0, (m + mr - 1) // mr)
        leave_ieee(old)

    def product_split(out, a, b, addend, work, task_bytes, tasks, nb, m, k, n, a_layout, b_layout, addend_kind):
        # `tasks` runs of consecutive row panels, each with its own work area
        panels = (m + mr - 1) // mr
        for t in prange(tasks):
            product_rows(out, a, b, addend, work + t * task_bytes, nb, m, k, n, a_layout, b_layout, addend_kind,
                         t * panels // tasks, (t + 1) * panels // tasks)

    address = types.intp
    name = np.dtype(dtype).name
    serial = kernel(f"linalg.serial_product.{name}", (address,) * 5 + (_I,) * 8)(
        compiled_with_slp(njit(cache=True, error_model="numpy")(product_serial)))
    split = kernel(f"linalg.split_product.{name}", (address,) * 5 + (_I,) * 9)(
        compiled_with_slp(njit(parallel=True, cache=True)(product_split)))
    return serial, split


_SERIAL_PRODUCT = {np.dtype(t): _serial_product(t) for t in (np.float32, np.float64)}


# Products of at least SPLIT_FMAS fmas (and at most SERIAL_FMAS) split their
# row panels among the threads: one launch, each thread packing its own rows
# of a and all of b (docs/benchmarks.md).  Every chain stays on one thread,
# advanced by the same micro-kernel from +0 through all of k.
SPLIT_FMAS = 524_288  # 2^19


def _tasks(nb, m, k, n):
    """How many threads share a serial-size product's row panels."""
    if nb * m * k * n < SPLIT_FMAS:
        return 1
    return max(1, min(numba.get_num_threads(), -(-m // MR)))


def serial_product(dtype, out, a, b, addend, nb, m, k, n, a_layout=ROWS, b_layout=ROWS, addend_kind=NO_ADDEND):
    """out (nb, m, n) = a (nb, m, k) @ b (nb, k, n) [+ addend], buffers of
    numpy dtype `dtype` given by their addresses: out C-contiguous, a and b
    in `a_layout`/`b_layout` (ROWS, COLUMNS), the addend (address 0 for
    none) by `addend_kind`.  nb * m * n * k <= SERIAL_FMAS.

    The same micro-kernel as the packed path advances every chain from +0
    through all of k in one call.  The operands are packed on the calling
    thread, so the small products of training pay no parallel launch; from
    SPLIT_FMAS on, the row panels are shared among the threads in one
    launch (`_tasks`)."""
    serial, split = _SERIAL_PRODUCT[dtype]
    tasks = _tasks(nb, m, k, n)
    if tasks > 1:
        task_bytes, work = _split_work(dtype, m, k, n, 1, tasks)
        with ieee_state():
            split(out, a, b, addend, work, task_bytes, tasks, nb, m, k, n, a_layout, b_layout, addend_kind)
        return
    work = scratch_address("serial_product", _serial_work_bytes(dtype, m, k, n, 1))
    serial(out, a, b, addend, work, nb, m, k, n, a_layout, b_layout, addend_kind, CONTROL_MASK)


def _split_work(dtype, m, k, n, outputs, tasks):
    """(bytes per task, address) of this thread's scratch for `tasks` work
    areas of a split serial kernel, each sized for the most row panels that
    one task gets."""
    panels = -(-m // MR)
    task_bytes = _serial_work_bytes(dtype, -(-panels // tasks) * MR, k, n, outputs)
    return task_bytes, scratch_address("serial_product", task_bytes * tasks)


def _serial_work_bytes(dtype, m, k, n, outputs):
    """The bytes of a serial kernel's packed (m, k) and (k, n) operands and
    `outputs` padded (m, n) blocks of accumulators, rounded up to 64 (each
    task's area starts aligned)."""
    nr = NR[dtype]
    m_panels, n_panels = -(-m // MR), -(-n // nr)
    size = (m_panels * MR + n_panels * nr) * k + outputs * m_panels * MR * n_panels * nr
    return -(-size * dtype.itemsize // 64) * 64


# --------------------------------------------------------------------------- per-sample chains into the batch tree


TREE_PANELS = 4  # the most row panels per task of the weight-gradient tree products


def tree_run(panels):
    """Row panels per task of a tree product: TREE_PANELS, so that each task's
    column block of b is read (or packed) once for all of them."""
    return max(1, min(TREE_PANELS, panels))


TREE_SPLIT_MACS = 4_194_304  # 2^22: the least work (multiply-adds) of a launch whose nodes are split


def tree_nodes(compute, out, first, counts, tasks, macs):
    """out[node] = the batch tree over the samples (first[node], counts[node])
    by compute(out, first, counts), a tree-product launch of `tasks` tasks and
    `macs` multiply-adds.

    When those tasks would leave some of Numba's threads idle for part of the
    launch, each node of two or more samples is computed as its two children in
    the batch tree (`tree_carry`'s: the first 2^j samples, 2^j the largest
    power of two below the count, then the rest), twice as many tasks, and
    joined by `finish_add` -- the root's add_rn and the canonical NaN, the
    node's own bits.  Below TREE_SPLIT_MACS the join would cost more than the
    idle threads; a launch of fewer tasks than threads then runs on as many
    threads as it has tasks (one task: on the calling thread, whose cache
    holds the operands)."""
    threads = numba.get_num_threads()
    if (threads == 1 or tasks >= 4 * threads or macs < TREE_SPLIT_MACS or first.size == 0
            or counts.min() < 2):
        on_threads(tasks, compute, out, first, counts)
        return
    left = np.left_shift(1, np.array([int(c - 1).bit_length() - 1 for c in counts], dtype=np.int64))
    halves = np.empty((2 * first.size,) + out.shape[1:], out.dtype)
    tree_nodes(compute, halves, np.concatenate((first, first + left)), np.concatenate((left, counts - left)),
               2 * tasks, macs)
    nodes, width = first.size, out.shape[-1]
    _finish_outputs_add(out.reshape(nodes, -1, width), halves[:nodes].reshape(nodes, -1, width),
                        halves[nodes:].reshape(nodes, -1, width))


def tree_first_operand(at, dtype):
    """at (S, G, K, M), any layout, copied k-major and zero-padded to whole
    MR-row panels: (S, G, K, ceil(M / MR) * MR), as the tree products read it."""
    samples, groups, k_count, m = at.shape
    mpad = ceil_to(m, MR)
    at_pad = scratch("packed_a", (samples, groups, k_count, mpad), dtype)
    a = at.transpose(0, 1, 3, 2)
    if a.flags.c_contiguous and at_pad.size:
        # at is the transpose of a C-contiguous (S, G, M, K), as an output
        # gradient (N, C, pixels) is: at_pad is then a's packing into one
        # panel mpad rows wide, in parallel over the samples
        _pack_a(at_pad.reshape(samples * groups, 1, k_count, mpad), a.reshape(samples * groups, m, k_count), mpad)
    else:
        at_pad[..., :m] = at
        at_pad[..., m:] = 0
    return at_pad


@njit(cache=True, inline="always")
def tree_task(t, groups, columns, runs, run, panels):
    """Task t of a tree product's launch over (node, group, column block, run
    of `run` row panels), in that order: (node, g, jp, ip0, ip1)."""
    node = t // (groups * columns * runs)
    g = (t // (columns * runs)) % groups
    jp = (t // runs) % columns
    ip0 = (t % runs) * run
    return node, g, jp, ip0, min(ip0 + run, panels)


@njit(cache=True, inline="always")
def store_tree_block(out, stack, node, g, ip0, ip1, jp, mr, nr):
    """A tree product task's finished node, (ip1 - ip0) * mr x nr values at
    the bottom of `stack`, into out[node, g] (nodes, G, M, N), clipped to M x N."""
    m, n = out.shape[2], out.shape[3]
    for ip in range(ip0, ip1):
        for r in range(min(mr, m - ip * mr)):
            for j in range(min(nr, n - jp * nr)):
                out[node, g, ip * mr + r, jp * nr + j] = stack[((ip - ip0) * mr + r) * nr + j]


def _make_tree_blocks(micro, mr, nr, dtype):
    """The tree-product kernels of one micro-kernel: the parallel one (a task
    per thread) and the serial one (every task in turn on the calling thread,
    for launches too small to pay a parallel launch).  Both run `run_task`."""
    index = types.Array(types.int64, 1, "C")
    signature = (types.Array(dtype, 4, "C"), types.Array(dtype, 4, "C"), types.Array(dtype, 4, "C"), index, index,
                 _I, _I)

    @njit(cache=True, inline="always")
    def run_task(t, out, at, bm, first, counts, slots, run):
        # at (S, G, K, mpad) k-major, bm (S, G, K, npad), both zero-padded to
        # whole register blocks; out (nodes, G, M, N).  Task t is one (node,
        # group, nr-column block, run of `run` mr-row panels): each sample's
        # column block of bm is read once from memory and then from cache
        # for every panel of the run.  The stack holds `slots` slots of the
        # run's (panels * mr) x nr outputs.
        s_count, groups, k_count, mpad = at.shape
        npad = bm.shape[3]
        panels = mpad // mr
        runs = (panels + run - 1) // run
        columns = npad // nr
        at_flat, b_flat = at.reshape(-1), bm.reshape(-1)
        node, g, jp, ip0, ip1 = tree_task(t, groups, columns, runs, run, panels)
        ld = (ip1 - ip0) * mr * nr
        stack = np.empty(slots * ld, at.dtype)
        count = 0
        for s in range(first[node], first[node] + counts[node]):
            # the chains of sample s, from +0 over its K rows, straight into its slot
            a_base = (s * groups + g) * k_count * mpad
            b_off = (s * groups + g) * k_count * npad + jp * nr
            c_base = tree_slot(count) * ld
            for ip in range(ip0, ip1):
                micro(at_flat, b_flat, stack, a_base + ip * mr, b_off, c_base + (ip - ip0) * mr * nr, nr,
                      k_count, True, mpad, npad)
            count = tree_carry(stack, ld, count, ld)
        tree_finish(stack, ld, count, ld)
        store_tree_block(out, stack, node, g, ip0, ip1, jp, mr, nr)

    @njit(cache=True, inline="always")
    def task_count(out, at, bm, first, run):
        panels = at.shape[3] // mr
        return first.size * at.shape[1] * (bm.shape[3] // nr) * ((panels + run - 1) // run)

    @kernel(f"linalg.tree_blocks.{dtype}", signature)
    @compiled_with_slp
    @njit(parallel=True, cache=True)
    def tree_blocks(out, at, bm, first, counts, slots, run):
        for t in prange(task_count(out, at, bm, first, run)):
            run_task(t, out, at, bm, first, counts, slots, run)

    @kernel(f"linalg.tree_blocks_serial.{dtype}", signature)
    @compiled_with_slp
    @njit(cache=True)
    def tree_blocks_serial(out, at, bm, first, counts, slots, run):
        for t in range(task_count(out, at, bm, first, run)):
            run_task(t, out, at, bm, first, counts, slots, run)

    return tree_blocks, tree_blocks_serial


_tree_blocks = {
    np.dtype(dtype): _make_tree_blocks(micro_kernel(dtype, MR, NR[np.dtype(dtype)], strided=True), MR,
                                       NR[np.dtype(dtype)], nbtype)
    for dtype, nbtype in ((np.float32, types.float32), (np.float64, types.float64))
}


def _serial_tree_product(dtype):
    micro = _MICRO[np.dtype(dtype)]
    mr, nr = MR, NR[np.dtype(dtype)]
    itemsize = np.dtype(dtype).itemsize

    @njit(cache=True, error_model="numpy")
    def tree_rows(out, at, bm, work, first, counts, nodes, samples, groups, k, m, n, slots, ip0, ip1):
        # at (S, G, K, M) and bm (S, G, K, N) C-contiguous, out (nodes, G, M,
        # N): the output rows of row panels ip0 .. ip1-1 (rows ip0*mr .. ).
        # For each node and group, every sample's chains at[s, g]^T @ bm[s,
        # g] (a stored k-major: COLUMNS) into one padded block of the stack,
        # merged into the tree as the samples come (`tree_carry`), element
        # by element.
        r0 = ip0 * mr
        rows = min(m, ip1 * mr) - r0
        m_panels, n_panels = ip1 - ip0, (n + nr - 1) // nr
        npad = n_panels * nr
        ld = m_panels * mr * npad
        o = carray(address_as_pointer(out), nodes * groups * m * n, dtype)
        x = carray(address_as_pointer(at), samples * groups * k * m, dtype)
        y = carray(address_as_pointer(bm), samples * groups * k * n, dtype)
        node_first = carray(address_as_pointer(first), nodes, np.int64)
        node_count = carray(address_as_pointer(counts), nodes, np.int64)
        a_size, b_size = m_panels * k * mr, n_panels * k * nr
        ap = carray(address_as_pointer(work), a_size, dtype)
        bp = carray(address_as_pointer(work + a_size * itemsize), b_size, dtype)
        stack = carray(address_as_pointer(work + (a_size + b_size) * itemsize), slots * ld, dtype)
        for node in range(nodes):
            for g in range(groups):
                count = 0
                for s in range(node_first[node], node_first[node] + node_count[node]):
                    pack_panels_a(ap, x, (s * groups + g) * k * m + r0, rows, k, mr, m_panels, COLUMNS, m)
                    pack_panels_b(bp, y, (s * groups + g) * k * n, k, n, nr, n_panels, ROWS)
                    c_base = tree_slot(count) * ld
                    for jp in range(n_panels):
                        for ip in range(m_panels):
                            micro(ap, bp, stack, ip * k * mr, jp * k * nr, c_base + ip * mr * npad + jp * nr, npad,
                                  k, True)
                    count = tree_carry(stack, ld, count, ld)
                tree_finish(stack, ld, count, ld)
                base = (node * groups + g) * m * n
                for i in range(rows):
                    for j in range(n):
                        o[base + (r0 + i) * n + j] = stack[i * npad + j]

    def tree_product_serial(out, at, bm, work, first, counts, nodes, samples, groups, k, m, n, slots, mask):
        old = enter_ieee(mask)
        tree_rows(out, at, bm, work, first, counts, nodes, samples, groups, k, m, n, slots, 0, (m + mr - 1) // mr)
        leave_ieee(old)

    def tree_product_split(out, at, bm, work, task_bytes, tasks, first, counts, nodes, samples, groups, k, m, n,
                           slots):
        # `tasks` runs of consecutive row panels, each with its own work area
        panels = (m + mr - 1) // mr
        for t in prange(tasks):
            tree_rows(out, at, bm, work + t * task_bytes, first, counts, nodes, samples, groups, k, m, n, slots,
                      t * panels // tasks, (t + 1) * panels // tasks)

    address = types.intp
    name = np.dtype(dtype).name
    serial = kernel(f"linalg.serial_tree_product.{name}", (address,) * 6 + (_I,) * 8)(
        compiled_with_slp(njit(cache=True, error_model="numpy")(tree_product_serial)))
    split = kernel(f"linalg.split_tree_product.{name}", (address,) * 4 + (_I,) * 2 + (address,) * 2 + (_I,) * 7)(
        compiled_with_slp(njit(parallel=True, cache=True)(tree_product_split)))
    return serial, split


_SERIAL_TREE_PRODUCT = {np.dtype(t): _serial_tree_product(t) for t in (np.float32, np.float64)}


def serial_tree_product(dtype, out, at, bm, first, counts, nodes, samples, groups, k, m, n, slots):
    """`tree_product` through addresses: at (S, G, K, M) and bm (S, G, K, N)
    C-contiguous buffers of numpy dtype `dtype`, out (nodes, G, M, N), first
    and counts int64 tables of the nodes' samples (counts >= 1), `slots` the
    stack slots of the largest node (`tree_slots`); samples * groups * k * m
    * n <= SERIAL_FMAS.  On the calling thread, or from SPLIT_FMAS on with
    the row panels shared among the threads in one launch (`_tasks`).  The
    same chains, tree and canonical NaNs as the parallel kernel."""
    serial, split = _SERIAL_TREE_PRODUCT[dtype]
    tasks = _tasks(samples * groups, m, k, n)
    if tasks > 1:
        task_bytes, work = _split_work(dtype, m, k, n, slots, tasks)
        with ieee_state():
            split(out, at, bm, work, task_bytes, tasks, first, counts, nodes, samples, groups, k, m, n, slots)
        return
    work = scratch_address("serial_product", _serial_work_bytes(dtype, m, k, n, slots))
    serial(out, at, bm, work, first, counts, nodes, samples, groups, k, m, n, slots, CONTROL_MASK)


# Samples of one row (K = 1, one group: a linear layer's [batch, features]
# input): the schedule of `tree_product` for them.  Output row i of a node is
# n lanes with one stack of tree nodes; for each aligned run of eight
# samples the leaves and their node are formed in registers
# (`outer_node_of_eight`) and only the node is pushed, so the stack is
# touched once per eight samples instead of once per sample; a run of fewer
# than eight at the node's end goes through a stack of its own
# (`outer_leaf`).  The same leaves and the same tree, so the same bits, as
# the per-sample micro-kernel chains.  Every output element's tree is formed
# alone, so the threads can share the output rows: each task takes a run of
# OUTER_ROWS-row blocks.

TAIL_SLOTS = tree_slots(7)
OUTER_ROWS = 4  # output rows per stack of `outer_tree`
# Below this many lanes the output's own rows are too short a vector loop:
# the other operand runs along the lanes and the stores are strided
# (docs/benchmarks.md).
OUTER_MIN_LANES = 128


def _outer_tree(dtype):
    @njit(cache=True, error_model="numpy")
    def outer_tree_rows(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, b0, b1):
        # a (S, M) and b (S, N) C-contiguous, out (nodes, M, N), or (nodes, N,
        # M) when `transposed`: out[node, i, j] (out[node, j, i]) the batch
        # tree over the node's samples of chain_step(a[s, i], b[s, j], +0),
        # for the rows i of blocks b0 .. b1-1.  OUTER_ROWS output rows share
        # one stack, whose slots hold their n lanes side by side, so each
        # carry runs over all of them.
        o = carray(address_as_pointer(out), nodes * m * n, dtype)
        x = carray(address_as_pointer(a), samples * m, dtype)
        y = carray(address_as_pointer(b), samples * n, dtype)
        node_first = carray(address_as_pointer(first), nodes, np.int64)
        node_count = carray(address_as_pointer(counts), nodes, np.int64)
        stack = np.empty(slots * OUTER_ROWS * n, dtype)
        tail = np.empty(TAIL_SLOTS * OUTER_ROWS * n, dtype)
        for node in range(nodes):
            f, c = node_first[node], node_count[node]
            eights = c // 8
            for i0 in range(b0 * OUTER_ROWS, min(m, b1 * OUTER_ROWS), OUTER_ROWS):
                rows = min(OUTER_ROWS, m - i0)
                ld = rows * n
                count = 0
                for q in range(eights):
                    s0 = f + 8 * q
                    base = tree_slot(count) * ld
                    for r in range(rows):
                        outer_node_of_eight(stack, base + r * n, x, s0 * m + i0 + r, m, y, s0 * n, n, n)
                    count = tree_carry(stack, ld, count, ld)
                if 8 * eights < c:
                    t = 0
                    for s in range(f + 8 * eights, f + c):
                        base = tree_slot(t) * ld
                        for r in range(rows):
                            outer_leaf(tail, base + r * n, x[s * m + i0 + r], y, s * n, n)
                        t = tree_carry(tail, ld, t, ld)
                    tree_finish(tail, ld, t, ld)
                    base = tree_slot(count) * ld
                    for j in range(ld):
                        stack[base + j] = tail[j]
                    count = tree_carry(stack, ld, count, ld)
                tree_finish(stack, ld, count, ld)
                if transposed:
                    for r in range(rows):
                        for j in range(n):
                            o[(node * n + j) * m + i0 + r] = stack[r * n + j]
                else:
                    at = (node * m + i0) * n
                    for j in range(ld):
                        o[at + j] = stack[j]

    def outer_tree_serial(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, mask):
        old = enter_ieee(mask)
        outer_tree_rows(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, 0,
                        (m + OUTER_ROWS - 1) // OUTER_ROWS)
        leave_ieee(old)

    def outer_tree_split(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, tasks):
        blocks = (m + OUTER_ROWS - 1) // OUTER_ROWS
        for t in prange(tasks):
            outer_tree_rows(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, t * blocks // tasks,
                            (t + 1) * blocks // tasks)

    address = types.intp
    name = np.dtype(dtype).name
    serial = kernel(f"linalg.serial_outer_tree.{name}", (address,) * 5 + (_I,) * 5 + (types.boolean, _I))(
        njit(cache=True, error_model="numpy")(outer_tree_serial))
    split = kernel(f"linalg.split_outer_tree.{name}", (address,) * 5 + (_I,) * 5 + (types.boolean, _I))(
        njit(parallel=True, cache=True)(outer_tree_split))
    return serial, split


_OUTER_TREE = {np.dtype(t): _outer_tree(t) for t in (np.float32, np.float64)}


def outer_tree(dtype, out, a, b, first, counts, nodes, samples, m, n, largest):
    """`tree_product` of samples of one row (K = 1, one group), through
    addresses: a (S, M) and b (S, N) C-contiguous buffers of numpy dtype
    `dtype`, out (nodes, M, N), first and counts int64 tables of the nodes'
    samples (counts >= 1, at most `largest`).  The same leaves, tree and
    canonical NaNs as `serial_tree_product`.  The output's rows (b's) run
    along the vector lanes, unless they are shorter than OUTER_MIN_LANES and
    a's are longer: then a's do, and the output is stored transposed (a
    leaf's fma(a, b, +0) is fma(b, a, +0), bit for bit: one exact product,
    rounded once).  On the calling thread below SPLIT_FMAS leaves, else with
    the output rows shared among the threads in one launch."""
    slots = tree_slots(largest // 8 + 1)
    transposed = m > n and n < OUTER_MIN_LANES
    if transposed:
        a, b, m, n = b, a, n, m
    serial, split = _OUTER_TREE[dtype]
    blocks = (m + OUTER_ROWS - 1) // OUTER_ROWS
    tasks = 1 if samples * m * n < SPLIT_FMAS else min(numba.get_num_threads(), blocks)
    if tasks > 1:
        with ieee_state():
            split(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, tasks)
    else:
        serial(out, a, b, first, counts, nodes, samples, m, n, slots, transposed, CONTROL_MASK)


def tree_product(out, at, bm, first, counts, dims):
    """out (nodes, G, M, N) = for each node the batch tree over its samples s
    (first[node], counts[node] >= 1 of them) of the chain of sample s:
    at[s, g]^T @ bm[s, g] over k = 0 .. K-1 from +0 (softrep.algorithms.products,
    "per-sample chains into the batch tree").  at (S, G, K, M) and bm (S, G,
    K, N) in any layout, or flat C-contiguous; dims = (S, G, K, M, N).

    The operands are copied once, zero-padded to whole register blocks (the
    padding only feeds accumulators that are cropped away); the per-sample
    partials are never stored."""
    if out.size == 0:
        return
    samples, groups, k_count, m, n = (int(d) for d in dims)
    dtype = out.dtype
    npad = ceil_to(n, NR[np.dtype(dtype)])
    b_pad = scratch("packed_b", (samples, groups, k_count, npad), dtype)
    b_pad[..., :n] = bm.reshape(samples, groups, k_count, n)
    b_pad[..., n:] = 0
    at_pad = tree_first_operand(at.reshape(samples, groups, k_count, m), dtype)
    panels = at_pad.shape[3] // MR
    run = tree_run(panels)

    macs = int(counts.sum()) * groups * k_count * m * n
    parallel, serial = _tree_blocks[dtype]
    blocks = serial if macs <= SERIAL_FMAS else parallel

    def compute(nodes_out, nodes_first, nodes_counts):
        slots = tree_slots(nodes_counts)
        blocks(nodes_out, at_pad, b_pad, nodes_first, nodes_counts, slots, run)

    if blocks is serial:
        compute(out.reshape(-1, groups, m, n), first, counts)
        return
    tree_nodes(compute, out.reshape(-1, groups, m, n), first, counts,
               first.size * groups * (npad // NR[np.dtype(dtype)]) * -(-panels // run), macs)


def bmm_narrow(out, a, b, spec, fmt, addend=None):
    """bmm of bfloat16/float16 operands given as uint16 patterns (out too), with
    a float32 addend: the float32 chains of `bmm` on the exactly widened
    operands, each output rounded once to the format (`spec`, format code `fmt`
    of softrep.algorithms.widening)."""
    nb, k_count, n = b.shape
    if out.size == 0:
        return
    bp = packed_b(nb, k_count, n, np.float32)
    if k_count:
        _pack_b_widen(bp, b, bp.shape[3], fmt)
    product_packed(out, a, bp, addend, narrow=(spec, fmt))
