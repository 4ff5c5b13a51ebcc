"""CPU launcher of the 2-D convolution forward: implicit GEMM through packed panels.

The product is W_g (Cout/G, K) @ cols_g (K, N*OH*OW) per group, K = Cin/G*KH*KW
in (c, kh, kw) order, columns in (n, oh, ow) order (docs/order.md,
"Convolution").  `cols` is never materialised: each task of the product
(`conv_blocks`: a group and a block of NC panels of columns) copies the
zero-padded input straight into the NR-column panels it is about to read
(`_pack_panel`), finding each element with `column_offset` + `tap_offset` of
`softrep.algorithms.convolution` (the arithmetic the CUDA kernel uses too),
so the panels are read from cache instead of memory.  Each output element
is then the chain of `softrep.algorithms.products` over k from +0, on one
thread, as in the matrix products (the same micro-kernel), and the bias is
added by its `finish_add` as the outputs are stored in the images' own
(N, Cout, OH*OW) layout.  This module only moves values and schedules the
work.
"""

import functools

import numpy as np
from numba import njit, prange, types
from numba.extending import overload, register_jitable

from ..algorithms.convolution import column_offset, output_size, tap_offset
from ..algorithms.products import finish, finish_add, micro_kernel, tree_carry, tree_finish, tree_slot, tree_slots
from ..primitives.vector import LANES, even_lanes_f32x8, load_f32x8, store_f32x8, transpose_f32x8
from .launch import SERIAL_MAX, kernel, on_one_thread
from .workspace import scratch
from .linalg import (KC, MR, NC_PANELS, NR, ceil_to, compiled_with_slp, equal_blocks, host_micro_kernel, packed_a,
                     store_tree_block, tree_first_operand, tree_nodes, tree_run, tree_task)


# Runs of at least 4 and fewer than this many columns are copied in groups of
# four (`_copy_short_run`); longer ones by a loop LLVM vectorises.
SHORT_RUN = 16


@register_jitable(inline="always")
def _copy_short_run(dst, d, xflat, src, length):
    # dst[d + j] = xflat[src + j] for j < length, 4 <= length < SHORT_RUN:
    # groups of four values, the last one ending at the run's end (so it
    # overlaps the one before when length is not a multiple of four, writing
    # the same values twice).  Four explicit moves, which LLVM joins into one
    # vector move, where a loop of so few iterations of unknown count runs
    # scalar (docs/benchmarks.md).
    one, four = np.uint64(1), np.uint64(4)
    j = np.uint64(0)
    while j < length:
        at = min(j, length - four)
        v0, v1 = xflat[src + at], xflat[src + at + one]
        v2, v3 = xflat[src + at + np.uint64(2)], xflat[src + at + np.uint64(3)]
        dst[d + at] = v0
        dst[d + at + one] = v1
        dst[d + at + np.uint64(2)] = v2
        dst[d + at + np.uint64(3)] = v3
        j += four


@njit(cache=True, error_model="numpy")
def _pack_panel(dst, base, xflat, taps, g, kk, panel, nr, n_cols, c_in, hp, wp, sh, sw, oh, ow):
    # Panel `panel` of group g's im2col (K x NR values, contiguous from
    # dst[base]) row by row.  Its columns fall into runs that lie in one
    # output row: consecutive pixels, sw apart in the padded input, so each
    # run is one strided copy (contiguous for sw = 1) per row of K, from the
    # offset `column_offset` gives its first column plus the row's tap offset
    # (taps[g * kk + k]: `tap_offset`, computed once per launch; its integer
    # divisions would otherwise cost more than a row's copy).  Unsigned
    # indices: a signed one costs a negative-index test per access, which
    # keeps the copies from vectorising.
    starts = np.empty(nr + 1, np.uint64)
    bases = np.empty(nr, np.uint64)
    usw = np.uint64(sw)
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
        row = np.uint64(base + k * nr)
        for r in range(runs):
            d = row + starts[r]
            src = bases[r] + off
            length = starts[r + 1] - starts[r]
            if usw == np.uint64(1) and np.uint64(4) <= length < np.uint64(SHORT_RUN):
                _copy_short_run(dst, d, xflat, src, length)
            elif usw == np.uint64(1):
                for j in range(length):
                    dst[d + j] = xflat[src + j]
            else:
                for j in range(length):
                    dst[d + j] = xflat[src + j * usw]
        for j in range(np.uint64(valid), np.uint64(nr)):
            dst[row + j] = 0


@functools.lru_cache(maxsize=256)
def _taps(groups, c_g, kh, kw, dh, dw, hp, wp):
    """taps[g * K + k] = tap_offset(k, g, ...) for every group and row of K:
    one array per geometry, kept for the next call (the kernels only read it)."""
    kk = c_g * kh * kw
    return np.array([tap_offset(gk % kk, gk // kk, c_g, kh, kw, dh, dw, hp, wp) for gk in range(groups * kk)],
                    dtype=np.uint64)


_PACK_SIG = [(types.Array(t, 4, "C"), types.Array(t, 1, "C"), types.Array(types.uint64, 1, "C")) + (types.int64,) * 10
             for t in (types.float32, types.float64)]


@kernel("conv.pack_im2col", *_PACK_SIG)
@njit(parallel=True, cache=True, error_model="numpy")
def _pack_im2col(bp, xflat, taps, c_in, hp, wp, groups, kk, sh, sw, n_img, oh, ow):
    # Every panel of every group: bp[g, panel] (K x NR values), one work item each.
    npan, nr = bp.shape[1], bp.shape[3]
    flat = bp.reshape(-1)
    for t in prange(groups * npan):
        _pack_panel(flat, t * kk * nr, xflat, taps, t // npan, kk, t % npan, nr, n_img * oh * ow, c_in, hp, wp,
                    sh, sw, oh, ow)


def pack_im2col(bp, xflat, c_in, hp, wp, groups, kh, kw, sh, sw, dh, dw, n_img, oh, ow):
    """bp (G, ceil(N*OH*OW / NR), K, NR) = the im2col of the flat padded input in
    NR-column panels (+0 past the last column), as the product kernel reads b."""
    c_g = c_in // groups
    _pack_im2col(bp, xflat, _taps(groups, c_g, kh, kw, dh, dw, hp, wp), c_in, hp, wp, groups, c_g * kh * kw, sh, sw,
                 n_img, oh, ow)


def _make_conv_blocks(micro, mr, nr, dtype):
    flat = types.Array(dtype, 1, "C")

    @kernel(f"conv.blocks.{dtype}", (flat, flat, flat, types.Array(types.uint64, 1, "C")) + (types.int64,) * 14)
    @compiled_with_slp
    @njit(parallel=True, cache=True, error_model="numpy")
    def conv_blocks(c_flat, ap_flat, xflat, taps, groups, m_panels, n_panels, kk, kc, nc_panels, c_in, hp, wp, sh,
                    sw, n_img, oh, ow):
        # `linalg`'s blocks with b packed on the fly: one task per (group, block
        # of nc_panels panels of columns) packs its panels into its own buffer
        # (`_pack_panel`, the values `_pack_im2col` stores), while they are in
        # cache, then advances every MR x NR tile of its columns through k
        # blocks of kc, as `linalg`'s blocks does: each chain still takes its
        # steps k = 0 .. K-1 in order on one thread.
        npad = n_panels * nr
        n_cols = n_img * oh * ow
        n_blocks, nc_panels = equal_blocks(n_panels, nc_panels)
        k_blocks = max(1, (kk + kc - 1) // kc)  # K = 0 still zero-fills the tiles
        for t in prange(groups * n_blocks):
            g, nbk = t // n_blocks, t % n_blocks
            jp0, jp1 = nbk * nc_panels, min(n_panels, (nbk + 1) * nc_panels)
            buf = np.empty(max(1, (jp1 - jp0) * kk * nr), c_flat.dtype)
            for jp in range(jp0, jp1):
                _pack_panel(buf, (jp - jp0) * kk * nr, xflat, taps, g, kk, jp, nr, n_cols, c_in, hp, wp, sh, sw,
                            oh, ow)
            for kb in range(k_blocks):
                k0, k1 = kb * kc, min(kk, (kb + 1) * kc)
                for jp in range(jp0, jp1):
                    for ip in range(m_panels):
                        a_off = ((g * m_panels + ip) * kk + k0) * mr
                        b_off = ((jp - jp0) * kk + k0) * nr
                        c_off = (g * m_panels * mr + ip * mr) * npad + jp * nr
                        micro(ap_flat, buf, c_flat, a_off, b_off, c_off, npad, k1 - k0, kb == 0)

    return conv_blocks


_CONV_BLOCKS = {np.dtype(t): _make_conv_blocks(host_micro_kernel(t), MR, NR[np.dtype(t)], nt)
                for t, nt in ((np.float32, types.float32), (np.float64, types.float64))}


@kernel("conv.finish_images", *[(types.Array(t, 3, "C"), types.Array(t, 3, "C"), types.Array(t, 2, "C"), types.boolean)
                                  for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True, error_model="numpy")
def _finish_images(out, cpad, bias_rows, has_bias):
    # out[n, g*co_g + i, p] = the end of chain cpad[g, i, n*P + p]: the
    # product's columns (n, p) put back into the images' (N, Cout, OH*OW)
    # layout, so the output is an ordinary C-contiguous tensor.  One work
    # item per (sample, output channel): a contiguous run of P values.
    # Unsigned indices into row views: a signed one costs a negative-index
    # test per access, which keeps the loop from vectorising.
    n_img, c_out, pixels = out.shape
    groups, co_g = bias_rows.shape
    for t in prange(n_img * c_out):
        s, c = t // c_out, t % c_out
        g, i = c // co_g, c % co_g
        dst, src = out[s, c], cpad[g, i, s * pixels:(s + 1) * pixels]
        if has_bias:
            b = bias_rows[g, i]
            for p in range(np.uint64(pixels)):
                dst[p] = finish_add(src[p], b)
        else:
            for p in range(np.uint64(pixels)):
                dst[p] = finish(src[p])


# Planes of at most this many elements are zeroed whole, then their interior
# copied: a cache-resident plane takes the second write of its interior for
# free, and the loops are two long runs instead of three short ones per row
# (docs/benchmarks.md).  Larger planes write each element once.
FILLED_PLANE_MAX = 2048


@kernel("conv.pad_images", *[(types.Array(t, 1, "C"), types.Array(t, 1, "C")) + (types.int64,) * 7
                               for t in (types.float32, types.float64)])
@njit(parallel=True, cache=True, error_model="numpy")
def _pad_images(xpad, x, planes, h, w, top, hp, wp, left):
    # Plane by plane (one per sample and channel, one work item each): the
    # h x w image of the flat C-contiguous x framed by +0 into the hp x wp
    # plane of the flat xpad, `top` rows and `left` columns before it.
    # Values only moved; unsigned indices, so the row copies vectorise.
    zero = xpad.dtype.type(0)
    uw, uwp, uleft, uh = np.uint64(w), np.uint64(wp), np.uint64(left), np.uint64(h)
    size = np.uint64(hp) * uwp
    filled = hp * wp <= FILLED_PLANE_MAX
    for t in prange(planes):
        dst = np.uint64(t) * size
        src = np.uint64(t) * uh * uw
        if filled:
            for j in range(size):
                xpad[dst + j] = zero
            corner = dst + np.uint64(top) * uwp + uleft
            for r in range(uh):
                for j in range(uw):
                    xpad[corner + r * uwp + j] = x[src + r * uw + j]
            continue
        for r in range(hp):
            row = dst + np.uint64(r) * uwp
            i = r - top
            if i < 0 or i >= h:
                for j in range(uwp):
                    xpad[row + j] = zero
                continue
            line = src + np.uint64(i) * uw
            for j in range(uleft):
                xpad[row + j] = zero
            for j in range(uw):
                xpad[row + uleft + j] = x[line + j]
            for j in range(uleft + uw, uwp):
                xpad[row + j] = zero


def pad_into_scratch(x, pads):
    """x (N, C, H, W), any strides, zero-padded by pads ((top, bottom), (left,
    right)) into this thread's "padded_input" scratch buffer: values only
    moved, the frame +0.  The array is valid until the next call (its pages
    are already mapped, where a fresh padded copy faults on every one).  Up
    to SERIAL_MAX elements the copy runs on the calling thread."""
    (top, bottom), (left, right) = pads
    n, c, h, w = x.shape
    hp, wp = h + top + bottom, w + left + right
    xpad = scratch("padded_input", (n, c, hp, wp), x.dtype)
    args = (xpad.reshape(-1), np.ascontiguousarray(x).reshape(-1), n * c, h, w, top, hp, wp, left)
    if xpad.size <= SERIAL_MAX:
        on_one_thread(_pad_images, *args)
    else:
        _pad_images(*args)
    return xpad


def conv2d(out, w_g, xpad, bias_rows, has_bias, sh, sw, dh, dw, kh, kw):
    """out (N, Cout, OH*OW) = w_g (G, Cout/G, Cin/G*KH*KW) @ im2col(xpad) [+ bias_rows (G, Cout/G)],
    output channel g*Cout/G + i of sample n holding row i of group g's product
    at the columns (n, 0 .. OH*OW-1)."""
    groups, _, kk = w_g.shape
    n_img, c_in, hp, wp = xpad.shape
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    if out.size == 0:
        return
    dtype = xpad.dtype
    nr = NR[dtype]
    ap = packed_a(w_g, dtype)
    m_panels, n_panels = ap.shape[1], ceil_to(n_img * oh * ow, nr) // nr
    cpad = scratch("accumulators", (groups, m_panels * MR, n_panels * nr), dtype)
    taps = _taps(groups, c_in // groups, kh, kw, dh, dw, hp, wp)
    _CONV_BLOCKS[dtype](cpad.reshape(-1), ap.reshape(-1), np.ascontiguousarray(xpad).reshape(-1), taps, groups,
                        m_panels, n_panels, kk, KC, NC_PANELS, c_in, hp, wp, sh, sw, n_img, oh, ow)
    _finish_images(out, cpad, bias_rows, bool(has_bias))


# Packing a sample's transposed im2col is a transpose: row k of the im2col
# reads the pixels of an output row at a constant stride (the convolution's
# stride) in the padded input, and the panel wants each pixel's NR values of
# k side by side.  For float32 at stride 1 or 2, 8 rows of k and 8 pixels at
# a time go through `transpose_f32x8` (8 vector loads -- at stride 2 16
# elements each, of which `even_lanes_f32x8` keeps every other one --
# shuffles, 8 vector stores) instead of one scalar load per element, which
# cost as much as the product's fmas.  Values are only moved.


def _taps_transposed(dst, d0, ld, src, s0, offs, j_count, c_count, stride):
    """dst[d0 + c*ld + j] = src[s0 + offs[j] + c*stride] for j < j_count -
    j_count % 8 and c < the number returned, a multiple of 8 at most c_count
    -- for float32 arrays (1-D, C-contiguous) and stride 1 or 2; otherwise 0
    (nothing done)."""


@register_jitable(inline="always")
def _pixels_f32x8(src, at, stride):
    # src[at], src[at + stride], ..., src[at + 7 stride] for stride 1 or 2
    if stride == np.uint64(1):
        return load_f32x8(src, at)
    return even_lanes_f32x8(load_f32x8(src, at), load_f32x8(src, at + np.uint64(LANES)))


def _taps_transposed_f32(dst, d0, ld, src, s0, offs, j_count, c_count, stride):
    # unsigned throughout (the caller's indices are; a mix with signed ones
    # would be computed in float64)
    one, eight = np.uint64(1), np.uint64(LANES)
    d0, ld, s0, stride = np.uint64(d0), np.uint64(ld), np.uint64(s0), np.uint64(stride)
    j8 = np.uint64(j_count) - np.uint64(j_count) % eight
    c8 = np.uint64(c_count) - np.uint64(c_count) % eight
    if stride != one and stride != np.uint64(2):
        return np.uint64(0)
    if stride != one and j8 > 0:
        # a tile at stride 2 reads one element past its last pixel, which
        # must still lie in src
        top = offs[0]
        for j in range(one, j8):
            top = max(top, offs[j])
        while c8 > 0 and s0 + top + np.uint64(2) * c8 - one >= np.uint64(src.size):
            c8 -= eight
    for j in range(np.uint64(0), j8, eight):
        o0, o1, o2, o3 = s0 + offs[j], s0 + offs[j + 1], s0 + offs[j + 2], s0 + offs[j + 3]
        o4, o5, o6, o7 = s0 + offs[j + 4], s0 + offs[j + 5], s0 + offs[j + 6], s0 + offs[j + 7]
        for c in range(np.uint64(0), c8, eight):
            at = c * stride
            v0, v1, v2, v3, v4, v5, v6, v7 = transpose_f32x8(
                _pixels_f32x8(src, o0 + at, stride), _pixels_f32x8(src, o1 + at, stride),
                _pixels_f32x8(src, o2 + at, stride), _pixels_f32x8(src, o3 + at, stride),
                _pixels_f32x8(src, o4 + at, stride), _pixels_f32x8(src, o5 + at, stride),
                _pixels_f32x8(src, o6 + at, stride), _pixels_f32x8(src, o7 + at, stride))
            row = d0 + c * ld + j
            store_f32x8(dst, row, v0)
            store_f32x8(dst, row + ld, v1)
            store_f32x8(dst, row + np.uint64(2) * ld, v2)
            store_f32x8(dst, row + np.uint64(3) * ld, v3)
            store_f32x8(dst, row + np.uint64(4) * ld, v4)
            store_f32x8(dst, row + np.uint64(5) * ld, v5)
            store_f32x8(dst, row + np.uint64(6) * ld, v6)
            store_f32x8(dst, row + np.uint64(7) * ld, v7)
    return c8


def _taps_not_transposed(dst, d0, ld, src, s0, offs, j_count, c_count, stride):
    return np.uint64(0)


@overload(_taps_transposed)
def _taps_transposed_impl(dst, d0, ld, src, s0, offs, j_count, c_count, stride):
    if all(isinstance(t, types.Array) and t.dtype == types.float32 and t.ndim == 1 and t.layout == "C"
           for t in (dst, src)):
        return _taps_transposed_f32
    return _taps_not_transposed


@njit(cache=True, error_model="numpy")
def _pack_pixel_rows(buf, xflat, taps, g, kk, k0, nr, s, c_in, hp, wp, sh, sw, oh, ow):
    # buf[p*nr + j] = row k0 + j of group g's cols at column (s, p) -- the
    # value F.unfold puts at [s, g*K + k0 + j, p] -- for k0 + j < K: one
    # NR-wide block of sample s's transposed im2col, rows contiguous, as the
    # weight gradient's micro-kernel reads its second operand.  Lanes
    # k0 + j >= K are not written: the caller zeroes them once for all
    # samples (at K = 9, 23 of 32 lanes, which cost more than the rest).  The
    # block's tap offsets (taps[g*K + k]) are read once per block.  With
    # stride 1 or 2, whole 8 x 8 tiles of (k, pixel) are transposed in
    # vectors (`_taps_transposed`), the rest moved one value at a time.
    valid = min(nr, kk - k0)
    offs = np.empty(nr, np.uint64)
    for j in range(valid):
        offs[j] = taps[g * kk + k0 + j]
    unr = np.uint64(nr)
    uvalid = np.uint64(valid)
    usw = np.uint64(sw)
    uow = np.uint64(ow)
    tiled = uvalid - uvalid % np.uint64(LANES)
    row = np.uint64(0)
    for r in range(oh):
        # output row r of sample s starts at column_offset(s*OH*OW + r*OW)
        base = np.uint64(column_offset((s * oh + r) * ow, oh, ow, sh, sw, c_in, hp, wp))
        done = np.uint64(_taps_transposed(buf, row, unr, xflat, base, offs, uvalid, uow, usw))
        for c in range(uow):
            src = base + c * usw
            for j in range(tiled if c < done else np.uint64(0), uvalid):
                buf[row + j] = xflat[src + offs[j]]
            row += unr


def _make_weight_grad_blocks(micro, mr, nr, dtype):
    index = types.Array(types.int64, 1, "C")
    flat = types.Array(dtype, 1, "C")

    @kernel(f"conv.weight_grad_blocks.{dtype}", (types.Array(dtype, 4, "C"), types.Array(dtype, 4, "C"), flat,
                                                 types.Array(types.uint64, 1, "C"), index, index) + (types.int64,) * 11)
    @compiled_with_slp
    @njit(parallel=True, cache=True, error_model="numpy")
    def weight_grad_blocks(out, at, xflat, taps, first, counts, slots, run, c_in, hp, wp, sh, sw, oh, ow, groups,
                           kk):
        # at (S, G, OH*OW, mpad): the output gradient transposed, k-major and
        # zero-padded to whole MR-row panels; out (nodes, G, M, K).  One task
        # per (node, group, NR-column block of K, run of `run` row panels),
        # the tree product of `softrep.cpu.linalg`'s tree_blocks: for each
        # sample in order, its block of the transposed im2col is packed from
        # xpad into the task's buffer (`_pack_pixel_rows`), while it is in
        # cache, and every panel's chains of that sample run from +0 over the
        # OH*OW pixels into the sample's slot of the stack, which
        # `tree_carry` merges as the samples come.
        pixels, mpad = at.shape[2], at.shape[3]
        panels = mpad // mr
        runs = (panels + run - 1) // run
        columns = (kk + nr - 1) // nr
        at_flat = at.reshape(-1)
        for t in prange(first.size * groups * columns * runs):
            node, g, jp, ip0, ip1 = tree_task(t, groups, columns, runs, run, panels)
            ld = (ip1 - ip0) * mr * nr
            stack = np.empty(slots * ld, at.dtype)
            # lanes past K: +0 for every sample (their columns are never
            # stored; zeroed so that no stale value enters the arithmetic)
            buf = np.zeros(pixels * nr, at.dtype)
            count = 0
            for s in range(first[node], first[node] + counts[node]):
                _pack_pixel_rows(buf, xflat, taps, g, kk, jp * nr, nr, s, c_in, hp, wp, sh, sw, oh, ow)
                a_base = (s * groups + g) * pixels * mpad
                c_base = tree_slot(count) * ld
                for ip in range(ip0, ip1):
                    micro(at_flat, buf, stack, a_base + ip * mr, 0, c_base + (ip - ip0) * mr * nr, nr, pixels, True,
                          mpad, nr)
                count = tree_carry(stack, ld, count, ld)
            tree_finish(stack, ld, count, ld)
            store_tree_block(out, stack, node, g, ip0, ip1, jp, mr, nr)

    return weight_grad_blocks


_WEIGHT_GRAD_BLOCKS = {np.dtype(t): _make_weight_grad_blocks(micro_kernel(t, MR, NR[np.dtype(t)], strided=True), MR,
                                                             NR[np.dtype(t)], nt)
                       for t, nt in ((np.float32, types.float32), (np.float64, types.float64))}


def weight_grad_tree(out, g_t, xpad, first, counts, sh, sw, dh, dw, kh, kw, groups):
    """out (nodes, G, Cout/G, K): for each node the batch tree over its samples
    (first[node], counts[node]) of g_t[s, g]^T @ cols_t[s, g], g_t (N, G, OH*OW,
    Cout/G) the output gradient (any layout), cols_t the transposed im2col of
    xpad (N, Cin, Hp, Wp): the chains and the tree of
    `softrep.cpu.linalg.tree_product` of (g_t, cols_t), with cols_t never
    stored whole (each task packs one sample's block of it at a time)."""
    n_img, c_in, hp, wp = xpad.shape
    oh, ow = output_size(hp, kh, sh, dh), output_size(wp, kw, sw, dw)
    c_g = c_in // groups
    kk = c_g * kh * kw
    dtype = xpad.dtype
    at = tree_first_operand(g_t, dtype)
    panels = at.shape[3] // MR
    run = tree_run(panels)
    xflat = np.ascontiguousarray(xpad).reshape(-1)
    taps = _taps(groups, c_g, kh, kw, dh, dw, hp, wp)

    def compute(nodes_out, nodes_first, nodes_counts):
        slots = tree_slots(nodes_counts)
        _WEIGHT_GRAD_BLOCKS[dtype](nodes_out, at, xflat, taps, nodes_first, nodes_counts, slots, run, c_in, hp, wp,
                                   sh, sw, oh, ow, groups, kk)

    columns = ceil_to(kk, NR[dtype]) // NR[dtype]
    tree_nodes(compute, out, first, counts, first.size * groups * columns * -(-panels // run),
               int(counts.sum()) * groups * oh * ow * (out.shape[2] * kk))
