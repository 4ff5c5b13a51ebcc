"""The summation order of docs/order.md ("Reductions"), as jitable building blocks.

Every softrep sum -- `sum`, `mean`, `var`, the gradient of a broadcast input,
and any kernel of another op that sums (softmax, logsumexp, norms) -- adds in
one order, which depends only on the number n of terms:

* the terms x[0], ..., x[n-1] are cut into blocks of B = 128;
* a block's partial is its terms added left to right, starting from its first
  term (not from +0, so that a sum of -0 terms stays -0);
* the partials are combined by the pairwise tree
  [p0, p1, p2, p3, p4] -> [p0+p1, p2+p3, p4] -> [(p0+p1)+(p2+p3), p4] -> ...,
  where at each level an odd last partial moves up unchanged;
* n = 0 gives +0.

This module is the only place where the reduction kernels do arithmetic; the
CPU and CUDA kernels (softrep/cpu/reduce.py, softrep/cuda/reduce.py) only
choose which outputs and blocks advance together and call these functions.

Block partials of a sum of term(x[k], c) (`TermSum`, one per term:
`VALUES` and `CENTERED_SQUARES`):

* `begin(x, c)` is the partial after a block's first term, `extend(p, x, c)`
  the partial after one more term.  A block's partial is begin on its first
  term followed by extend on each later term in order; a kernel may interleave
  the steps of several blocks or outputs (the CPU advances 8 blocks, or 256
  outputs, side by side) as long as each partial sees exactly this sequence.
* `block(x, start, stop, c)` is that sequence for one block of a 1-D array.
* `extend_values_f32x8` is `VALUES.extend` on 8 float32 partials at once, one
  per lane of a vector (softrep.primitives.vector): the CPU's transposed
  8-blocks-per-vector form of the same sequences; `extend_values_f32x16` the
  same on 16 (hosts with 512-bit vectors).

The tree, in three equivalent forms, for three kinds of kernel:

1. `tree_inplace` / `sum_from_partials`: all block partials computed first (in
   parallel, one per thread or per loop iteration), then combined level by
   level on a scratch array.  An aligned run of 2**k partials always reduces
   to one node of the tree (the pairing at level l < k never crosses a
   multiple of 2**(k-l)), so a long row of partials may be combined in groups
   of 2**k first and the group results combined after: same bits.
2. `tree_push` / `tree_total`: the same tree as a streaming binary counter over
   block partials, with a stack of at most 63 partials (one per bit of the
   block count).
3. `stream_add` / `stream_total`: one term at a time, for a thread that loops
   over a sequence and cannot store it (e.g. the denominator of softmax).  It
   keeps the open block's partial in the last stack slot and pushes it when
   the block is full.

`row_partials` / `row_sum`: the block partials of a whole 1-D row (eight
blocks advancing side by side), then the tree of form 1: for a kernel that
sums a row it has just written (softmax's denominator, softrep.algorithms.softmax).

Usage from a kernel (CPU njit, CUDA, or Python under the simulator), with a
float stack of STACK entries of the sum's dtype (`cuda.local.array(STACK,
numba.float32)` on CUDA, `np.empty(STACK, np.float32)` on the CPU):

    count = 0
    for i in range(n):
        count = stream_add(stack, count, term(i))
    total = stream_total(stack, count)

All additions are `add_rn` (lane-wise `add_rn_f32x8` for vectors); nothing
here depends on threads or layout.

amax, amin, argmax and argmin compare `order_key`s (below) with `improves`, in
increasing index order, so that ties keep the first index.
"""

from typing import Callable, NamedTuple

import numpy as np
from numba.core import types as _types

from ..primitives.jit import bitcast, by_target, by_type, inline_into_callers
from ..primitives.rounding import NAN32, NAN64, ZERO32, ZERO64, add_rn, canonical, div_rn, jitable, mul_rn, sub_rn
from ..primitives.vector import (LANES, add_rn_f32x8, add_rn_f32x16, lane_f32x8, lane_f32x16, load_f32x8,
                                 store_f32x8, transpose_f32x8)

BLOCK = 128  # terms per block partial
STACK = 64  # stack entries for tree_push / stream_add (63 levels + the open block)
GROUP = 64  # partials per group when a tree is combined in passes (a power of two)


def zero_like(x):
    """+0 in the type of x (a float literal in a kernel would be float64)."""
    return type(x)(0.0)


by_type(zero_like, {_types.float32: lambda x: ZERO32, _types.float64: lambda x: ZERO64})


@jitable
def tree_inplace(p, start, count):
    """Combine the partials p[start:start+count] (count >= 1) by the pairwise tree;
    returns the total and overwrites p[start:start+count].

    Level by level: p[t] = p[2t] + p[2t+1]; an odd last partial moves up
    unchanged.  Writing at t while reading at 2t, 2t+1 >= t is safe in place."""
    width = count
    while width > 1:
        half = width // 2
        for t in range(half):
            p[start + t] = add_rn(p[start + 2 * t], p[start + 2 * t + 1])
        if width % 2 == 1:
            p[start + half] = p[start + width - 1]
        width = width - half
    return p[start]


@jitable
def sum_from_partials(p, count):
    """The documented sum from its block partials p[0:count] (count >= 1): the
    tree's total, any NaN made canonical.  Overwrites p[0:count]."""
    return canonical(tree_inplace(p, 0, count))


@jitable
def divided_sum_from_partials(p, count, divisor):
    """div_rn(sum_from_partials(p, count), divisor): with divisor = n, the
    number of reduced elements, the documented mean; with divisor = 1 the sum
    itself, bit for bit (x / 1 is x for every x, and the sum's NaN is already
    canonical).  Overwrites p[0:count]."""
    return div_rn(sum_from_partials(p, count), divisor)


_U = tuple(np.uint64(i) for i in range(9))
_UBLOCK = np.uint64(BLOCK)


@jitable
def _advance_eight(x, bases, k0, k1, parts):
    """Eight independent chains: parts[c] extended by x[bases[c] + k] for
    k = k0, ..., k1 - 1 in order (unsigned offsets)."""
    inline_into_callers()
    b0, b1, b2, b3, b4, b5, b6, b7 = bases
    p0, p1, p2, p3, p4, p5, p6, p7 = parts
    for k in range(k0, k1):
        p0 = add_rn(p0, x[b0 + k])
        p1 = add_rn(p1, x[b1 + k])
        p2 = add_rn(p2, x[b2 + k])
        p3 = add_rn(p3, x[b3 + k])
        p4 = add_rn(p4, x[b4 + k])
        p5 = add_rn(p5, x[b5 + k])
        p6 = add_rn(p6, x[b6 + k])
        p7 = add_rn(p7, x[b7 + k])
    return p0, p1, p2, p3, p4, p5, p6, p7


@jitable
def eight_short_row_totals(x, first, n):
    """The documented sum of each of the eight rows x[first + c n : first +
    (c + 1) n], c = 0 .. 7, of a 1-D array x, each of 1 <= n <= BLOCK
    elements (`row_sum` of each row): one block per row, begun with its
    first element and extended left to right, whose tree is that partial
    alone (NaN canonical).  The rows advance side by side, eight independent
    chains, each still its own left-to-right sequence: one row at a time,
    every addition would wait on the one before.  `first` and n unsigned."""
    inline_into_callers()
    bases = (first, first + n, first + _U[2] * n, first + _U[3] * n, first + _U[4] * n, first + _U[5] * n,
             first + _U[6] * n, first + _U[7] * n)
    firsts = (x[bases[0]], x[bases[1]], x[bases[2]], x[bases[3]], x[bases[4]], x[bases[5]], x[bases[6]],
              x[bases[7]])
    p0, p1, p2, p3, p4, p5, p6, p7 = _advance_eight(x, bases, _U[1], n, firsts)
    return (canonical(p0), canonical(p1), canonical(p2), canonical(p3), canonical(p4), canonical(p5), canonical(p6),
            canonical(p7))


@jitable
def eight_short_row_sums(x, first, n, divisor):
    """div_rn(`eight_short_row_totals`, divisor) of each of the eight rows
    (`divided_sum_from_partials` of each row)."""
    inline_into_callers()
    s0, s1, s2, s3, s4, s5, s6, s7 = eight_short_row_totals(x, first, n)
    return (div_rn(s0, divisor), div_rn(s1, divisor), div_rn(s2, divisor), div_rn(s3, divisor), div_rn(s4, divisor),
            div_rn(s5, divisor), div_rn(s6, divisor), div_rn(s7, divisor))


@jitable
def row_partials_scalar(x, p):
    """p[j] = the partial of block j of the 1-D array x (any stride), for every
    block j < ceil(n / BLOCK): each begun with its first element and extended
    left to right; returns the block count.

    The blocks advance in groups of eight side by side (eight independent
    chains, each still its own left-to-right sequence).  The last group may
    hold fewer blocks, the last of them shorter: its spare chains repeat the
    group's last block, all chains advance through that block's length, the
    whole blocks then finish with the spare chains moved to the group's
    first block, and what the spare chains computed is discarded.  The
    row's last block alone is one chain.  A row of 1000 elements (seven
    whole blocks and one of 104) is thus 127 steps of eight additions rather
    than 1000 dependent ones.  Indices are unsigned (a signed index costs
    negative-index wraparound code on every load)."""
    n = np.uint64(x.shape[0])
    nb = (n + _UBLOCK - _U[1]) // _UBLOCK
    for j in range(_U[0], nb, _U[8]):
        last = min(j + _U[8], nb) - _U[1]  # the group's last block
        b0 = j * _UBLOCK
        if j == last:  # spare chains would only cost throughput
            q = x[b0]
            for k in range(b0 + _U[1], n):
                q = add_rn(q, x[k])
            p[j] = q
            continue
        short = n - last * _UBLOCK  # the last block's length: BLOCK, or less at the row's end
        bases = (b0, min(j + _U[1], last) * _UBLOCK, min(j + _U[2], last) * _UBLOCK, min(j + _U[3], last) * _UBLOCK,
                 min(j + _U[4], last) * _UBLOCK, min(j + _U[5], last) * _UBLOCK, min(j + _U[6], last) * _UBLOCK,
                 last * _UBLOCK)
        firsts = (x[bases[0]], x[bases[1]], x[bases[2]], x[bases[3]], x[bases[4]], x[bases[5]], x[bases[6]],
                  x[bases[7]])
        parts = _advance_eight(x, bases, _U[1], min(short, _UBLOCK), firsts)
        p[last] = parts[7]  # chain 7 is the last block
        if short < _UBLOCK:  # the whole blocks' remaining terms; chains on the last block move to block j
            whole = (b0, bases[1] if j + _U[1] < last else b0, bases[2] if j + _U[2] < last else b0,
                     bases[3] if j + _U[3] < last else b0, bases[4] if j + _U[4] < last else b0,
                     bases[5] if j + _U[5] < last else b0, bases[6] if j + _U[6] < last else b0, b0)
            parts = _advance_eight(x, whole, short, _UBLOCK, parts)
        for c in range(_U[0], last - j):
            p[j + c] = parts[c]
    return np.int64(nb)


@jitable
def _advance_tiles(x, bases, k0, k1, v):
    """`_advance_eight` with the eight chains as the lanes of one float32x8
    vector v: lane c extended by x[bases[c] + k] for k = k0, ..., k1 - 1 in
    order, one transposed 8 x 8 tile (8 consecutive elements of each chain)
    at a time; k1 - k0 a multiple of LANES, x float32, C-contiguous."""
    inline_into_callers()
    b0, b1, b2, b3, b4, b5, b6, b7 = bases
    for k in range(k0, k1, _U[LANES]):
        c0, c1, c2, c3, c4, c5, c6, c7 = transpose_f32x8(
            load_f32x8(x, b0 + k), load_f32x8(x, b1 + k), load_f32x8(x, b2 + k), load_f32x8(x, b3 + k),
            load_f32x8(x, b4 + k), load_f32x8(x, b5 + k), load_f32x8(x, b6 + k), load_f32x8(x, b7 + k))
        v = add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(v, c0), c1), c2), c3)
        v = add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(v, c4), c5), c6), c7)
    return v


@jitable
def row_partials_tiles(x, p):
    """`row_partials_scalar` of a float32 C-contiguous row whose length is a
    multiple of LANES (every block length then is too), each group's eight
    chains the lanes of one vector: the same bases, the same spare chains,
    the same additions in the same order, eight columns per step.  The
    chains begin with their first elements (column 0 of the first tile)."""
    n = np.uint64(x.shape[0])
    nb = (n + _UBLOCK - _U[1]) // _UBLOCK
    for j in range(_U[0], nb, _U[8]):
        last = min(j + _U[8], nb) - _U[1]
        b0 = j * _UBLOCK
        if j == last:
            q = x[b0]
            for k in range(b0 + _U[1], n):
                q = add_rn(q, x[k])
            p[j] = q
            continue
        short = n - last * _UBLOCK
        bases = (b0, min(j + _U[1], last) * _UBLOCK, min(j + _U[2], last) * _UBLOCK, min(j + _U[3], last) * _UBLOCK,
                 min(j + _U[4], last) * _UBLOCK, min(j + _U[5], last) * _UBLOCK, min(j + _U[6], last) * _UBLOCK,
                 last * _UBLOCK)
        c0, c1, c2, c3, c4, c5, c6, c7 = transpose_f32x8(
            load_f32x8(x, bases[0]), load_f32x8(x, bases[1]), load_f32x8(x, bases[2]), load_f32x8(x, bases[3]),
            load_f32x8(x, bases[4]), load_f32x8(x, bases[5]), load_f32x8(x, bases[6]), load_f32x8(x, bases[7]))
        v = add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(c0, c1), c2), c3), c4)
        v = add_rn_f32x8(add_rn_f32x8(add_rn_f32x8(v, c5), c6), c7)
        v = _advance_tiles(x, bases, _U[LANES], min(short, _UBLOCK), v)
        p[last] = lane_f32x8(v, 7)
        if short < _UBLOCK:
            whole = (b0, bases[1] if j + _U[1] < last else b0, bases[2] if j + _U[2] < last else b0,
                     bases[3] if j + _U[3] < last else b0, bases[4] if j + _U[4] < last else b0,
                     bases[5] if j + _U[5] < last else b0, bases[6] if j + _U[6] < last else b0, b0)
            v = _advance_tiles(x, whole, short, _UBLOCK, v)
        for c in range(_U[0], last - j):
            p[j + c] = lane_f32x8(v, c)
    return np.int64(nb)


@jitable
def row_partials_dispatch(x, p):
    """`row_partials_tiles` where the row's length allows, else the scalar chains."""
    if x.shape[0] % LANES == 0:
        return row_partials_tiles(x, p)
    return row_partials_scalar(x, p)


def row_partials(x, p):
    """p[j] = the partial of block j of the 1-D array x (any stride), for every
    block j < ceil(n / BLOCK), as `row_partials_scalar` computes them; returns
    the block count.  CPU kernels of float32 C-contiguous rows take
    `row_partials_tiles` (the same additions, eight chains per vector) when
    the length is a multiple of LANES."""
    return row_partials_scalar(x, p)


def _row_partials_cpu(arg_types):
    x = arg_types[0]
    if isinstance(x, _types.Array) and x.dtype == _types.float32 and x.layout == "C":
        return row_partials_dispatch
    return row_partials_scalar


by_target(row_partials, cpu=_row_partials_cpu, cuda=lambda arg_types: row_partials_scalar)


@jitable
def row_sum(x, p):
    """The documented sum of the 1-D array x (n >= 1), any NaN canonical; p is
    scratch for the ceil(n / BLOCK) block partials."""
    return sum_from_partials(p, row_partials(x, p))


@jitable
def popcount(c):
    """The number of set bits of c >= 0: the entries on a streaming tree's stack after c pushes."""
    bits = 0
    while c > 0:
        bits += c & 1
        c >>= 1
    return bits


@jitable
def tree_push(stack, nblocks, partial):
    """Push the partial of block number `nblocks` (0-based); returns nblocks + 1.

    The stack holds one partial per set bit of the block count, oldest first,
    covering 2**k blocks each with k decreasing.  A new partial merges with the
    newest entry while both cover equally many blocks: a carry in binary
    counting, i.e. one completed node of the tree."""
    depth = popcount(nblocks)
    stack[depth] = partial
    c = nblocks
    while c & 1:
        depth -= 1
        stack[depth] = add_rn(stack[depth], stack[depth + 1])
        c >>= 1
    return nblocks + 1


@jitable
def tree_total(stack, nblocks):
    """The tree's total after `nblocks` pushes: fold the stack from the newest entry
    to the oldest, acc = older + acc (the odd carries of the level-by-level form).
    +0 when nothing was pushed."""
    depth = popcount(nblocks)
    if depth == 0:
        return zero_like(stack[0])
    acc = stack[depth - 1]
    for s in range(depth - 2, -1, -1):
        acc = add_rn(stack[s], acc)
    return acc


@jitable
def stream_add(stack, count, term):
    """Add term number `count` (0-based) of a sequence; returns count + 1.

    The open block's partial lives in stack[STACK - 1]; a full block is pushed
    into the tree."""
    top = STACK - 1
    k = count % BLOCK
    if k == 0:
        stack[top] = term
    else:
        stack[top] = add_rn(stack[top], term)
    if k == BLOCK - 1:
        tree_push(stack, count // BLOCK, stack[top])
    return count + 1


@jitable
def stream_total(stack, count):
    """The documented sum of the `count` terms given to stream_add (+0 if none).

    An open (short) block is the newest partial: folding it in first gives the
    same additions as pushing it and then folding."""
    nblocks = count // BLOCK
    if count % BLOCK == 0:
        return tree_total(stack, nblocks)
    acc = stack[STACK - 1]
    depth = popcount(nblocks)
    for s in range(depth - 1, -1, -1):
        acc = add_rn(stack[s], acc)
    return acc


# ------------------------------------------------------------------ max / min / argmax order

# amax, amin, argmax and argmin compare by a total order on the bits, so that
# their result never depends on the order of the comparisons:
#   -inf < ... < -0 < +0 < ... < +inf, and NaN is the extreme (it propagates);
# ties go to the smallest index.  `order_key` maps a float to an int64 whose
# integer order is that order (for `largest`) or its reverse for the numbers
# (for the minimum), with NaN above everything in both.

_NAN_KEY = np.int64(0x7FFFFFFFFFFFFFFF)
_MAG32 = np.uint32(0x7FFFFFFF)
_MAG64 = np.uint64(0x7FFFFFFFFFFFFFFF)
_SIGN32 = np.uint32(0x80000000)
_SIGN64 = np.uint64(0x8000000000000000)


@jitable
def _key32(x, largest):
    # Selects only, no early return: the compiled loops over keys (a row's
    # maximum key) then vectorise.
    bits = bitcast(x)
    mag = np.int64(bits & _MAG32)
    key = -mag - 1 if (bits & _SIGN32) != 0 else mag
    key = key if largest else -key - 1
    return _NAN_KEY if x != x else key


@jitable
def _key64(x, largest):
    # Selects only, no early return: the compiled loops over keys (a row's
    # maximum key) then vectorise.
    bits = bitcast(x)
    mag = np.int64(bits & _MAG64)
    key = -mag - 1 if (bits & _SIGN64) != 0 else mag
    key = key if largest else -key - 1
    return _NAN_KEY if x != x else key


def order_key(x, largest):
    """int64 key: a larger key is a better candidate for amax (largest=True) or
    amin (largest=False); NaN has the largest key; +0 is above -0 for amax and
    below it for amin."""
    if x != x:
        return int(_NAN_KEY)
    bits = int(bitcast(x))
    width = 32 if isinstance(x, np.float32) else 64
    mag = bits & ((1 << (width - 1)) - 1)
    key = -mag - 1 if bits >> (width - 1) else mag
    return np.int64(key if largest else -key - 1)


by_type(order_key, {_types.float32: _key32, _types.float64: _key64})


# Narrow keys: float32 numbers ordered by int32 keys, the same order, so that a
# compiled maximum over a row's keys runs twice as many lanes per vector.  A
# number's narrow key is its key (the magnitude of a float32 non-NaN is at
# most 0x7F800000, so its key and the reversed one fit in int32); every NaN
# has INT32_MAX, above them all.  `widen_key` gives back the int64 key.
# float64 numbers keep their int64 keys.

_NAN_KEY32 = np.int32(0x7FFFFFFF)


@jitable
def _narrow32(x, largest):
    bits = bitcast(x)
    mag = np.int32(bits & _MAG32)
    key = np.int32(-mag - np.int32(1)) if (bits & _SIGN32) != 0 else mag
    key = key if largest else np.int32(-key - np.int32(1))
    return _NAN_KEY32 if x != x else key


def narrow_key(x, largest):
    """An integer key with the order of `order_key(x, largest)`: int32 for
    float32 x, the int64 key itself for float64."""
    if isinstance(x, np.float32):
        return _NAN_KEY32 if x != x else np.int32(order_key(x, largest))
    return order_key(x, largest)


by_type(narrow_key, {_types.float32: _narrow32, _types.float64: _key64})


@jitable
def _widen32(like, key):
    return _NAN_KEY if key == _NAN_KEY32 else np.int64(key)


@jitable
def _widen64(like, key):
    return key


def widen_key(like, key):
    """The `order_key` of the number of like's dtype whose `narrow_key` is `key`."""
    if isinstance(like, np.float32):
        return _NAN_KEY if key == _NAN_KEY32 else np.int64(key)
    return key


by_type(widen_key, {_types.float32: _widen32, _types.float64: _widen64})


# The inverse: the number with a given key.  A key is a number's bits (its
# magnitude, or -magnitude - 1 for a negative sign), so the key of a row's
# winner gives the winner's bits without its index; amax and amin need no
# more.  Every NaN has the NaN key, which gives the canonical NaN.


@jitable
def _value32(like, key, largest):
    k = key if largest else -key - 1
    # np.uint32 around the whole: Numba widens the integer operators' results
    bits = np.uint32(k if k >= 0 else (-k - 1) | np.int64(_SIGN32))
    return NAN32 if key == _NAN_KEY else bitcast(bits)


@jitable
def _value64(like, key, largest):
    k = key if largest else -key - 1
    bits = np.uint64(k) if k >= 0 else np.uint64(-k - 1) | _SIGN64
    return NAN64 if key == _NAN_KEY else bitcast(bits)


def key_value(like, key, largest):
    """The number of like's dtype whose `order_key(., largest)` is `key`; the
    canonical NaN for the NaN key."""
    if key == _NAN_KEY:
        return np.float32(np.nan) if isinstance(like, np.float32) else np.float64(np.nan)
    k = int(key) if largest else -int(key) - 1
    width = 32 if isinstance(like, np.float32) else 64
    bits = k if k >= 0 else (-k - 1) | (1 << (width - 1))
    return bitcast(np.uint32(bits) if width == 32 else np.uint64(bits))


by_type(key_value, {_types.float32: _value32, _types.float64: _value64})


@jitable
def improves(key, best):
    """Whether a candidate with order key `key`, met after the current winner
    with key `best` in increasing index order, replaces it: only when strictly
    better, so that ties keep the first index."""
    return key > best


@jitable
def extreme_scan(x, start, stop, largest):
    """(best key, its first index) over x[start:stop] (start < stop) for amax
    (largest=True) or amin."""
    best = order_key(x[start], largest)
    at = start
    for k in range(start + 1, stop):
        key = order_key(x[k], largest)
        if improves(key, best):
            best = key
            at = k
    return best, at


@jitable
def extreme_value(winner):
    """The amax/amin result from the winning element's value: any NaN canonical."""
    return canonical(winner)


# ------------------------------------------------------------------ terms and block partials

# The sum kernels add term(x, c) for each element x of a row whose output has
# the per-output value c.  `sum` adds the elements themselves; `var` adds the
# squared deviations from the row's mean, d = x - mean rounded, then d * d
# rounded (two roundings per term, as docs/order.md says).


@jitable
def term_value(x, c):
    return x


@jitable
def term_centered_square(x, c):
    d = sub_rn(x, c)
    return mul_rn(d, d)


class TermSum(NamedTuple):
    """The block-partial steps of the documented sum of term(x[k], c) over k."""

    term: Callable  # term(x, c): the value added for element x
    begin: Callable  # begin(x, c): a block's partial after its first term
    extend: Callable  # extend(p, x, c): partial p after one more term
    block: Callable  # block(x, start, stop, c): the partial of x[start:stop], start < stop


def term_sum(term):
    """The jitable `TermSum` steps for `term` (a jitable term(x, c))."""

    @jitable
    def begin(x, c):
        # the first term itself, not +0 + term: a block of -0 terms sums to -0
        return term(x, c)

    @jitable
    def extend(p, x, c):
        return add_rn(p, term(x, c))

    @jitable
    def block(x, start, stop, c):
        p = begin(x[start], c)
        for k in range(start + 1, stop):
            p = extend(p, x[k], c)
        return p

    return TermSum(term, begin, extend, block)


VALUES = term_sum(term_value)
CENTERED_SQUARES = term_sum(term_centered_square)
_values_block = VALUES.block


@jitable
def block_sum(x, start, stop):
    """Partial of one block: x[start] + x[start+1] + ... + x[stop-1], left to right.

    `x` is a 1-D array (any stride); start < stop."""
    return _values_block(x, start, stop, x[start])


@jitable
def extend_values_f32x8(p, x):
    """`VALUES.extend` on 8 float32 block partials at once: lane j of the result
    is add_rn(p[j], x[j]), lane j of p being the partial of its own block and
    x[j] that block's next element."""
    return add_rn_f32x8(p, x)


@jitable
def extend_values_f32x16(p, x):
    """`extend_values_f32x8` on 16 float32 block partials at once."""
    return add_rn_f32x16(p, x)


@jitable
def store_one_block_sums_f32x16(out, first, p):
    """out[first + j] = the documented sum of row j, j < 16, whose only block's
    partial is lane j of p: the partial itself (`sum_from_partials` of one
    partial), any NaN made canonical."""
    for j in range(2 * LANES):
        out[first + j] = canonical(lane_f32x16(p, j))


@jitable
def sums_from_partials_f32x8(lanes, count):
    """`sum_from_partials` of 8 float32 sums with the same number of partials
    at once: lanes[8t : 8t + 8] holds partial t of each sum (lane r: sum r),
    t < count.  The tree's pairing depends on count alone, so each of its
    additions is one add_rn_f32x8 of two such vectors, lane r adding exactly
    what `tree_inplace` adds for sum r; an odd last vector moves up unchanged.
    Leaves the 8 totals, any NaN made canonical, in lanes[0:8] (the rest of
    lanes is overwritten)."""
    width = count
    while width > 1:
        half = width // 2
        for t in range(half):
            store_f32x8(lanes, t * LANES, add_rn_f32x8(load_f32x8(lanes, 2 * t * LANES),
                                                       load_f32x8(lanes, (2 * t + 1) * LANES)))
        if width % 2 == 1:
            store_f32x8(lanes, half * LANES, load_f32x8(lanes, (width - 1) * LANES))
        width = width - half
    for r in range(LANES):
        lanes[r] = canonical(lanes[r])
