"""Algorithm source of the matrix products: the per-element chain and the micro-kernels.

Every output element of a product is one sequential chain of fmas in k order
(docs/order.md, "Matrix products"):

    acc = +0
    for k = 0 .. K-1:  acc = chain_step(a[i, k], b[k, j], acc)     = fma_rn(a[i, k], b[k, j], acc)
    out = finish_add(acc, addend)   = canonical(add_rn(acc, addend))   (with an addend)
    out = finish(acc)               = canonical(acc)                   (without)

Nothing else is allowed: K is never split, so the result cannot depend on the
tiling, the thread count or the device.  What kernels may change is *which*
elements they advance together, and where an accumulator lives between two
steps of its chain (a register, or the output buffer while another k-block is
being packed: storing and reloading a float is exact).

These functions are the only place where a product or a convolution does
arithmetic; the CPU and CUDA modules (softrep/cpu/linalg.py, conv.py and
softrep/cuda/linalg.py, conv.py) only pack, tile and launch:

* `chain_step` is one step of the chain.  Everything below calls it.
* `dot_chain` advances one accumulator through a run of k, for any strided
  access.  The CUDA kernels call it on their shared-memory tiles.
* `finish` / `finish_add` end a chain: the addend (linear's bias, addmm's
  input, a convolution's bias) is added once, after the last step, and a NaN
  result becomes the canonical NaN.  Both backends call them.
* `micro_kernel(dtype, mr, nr)` advances an mr x nr register block of
  accumulators through a range of k (the CPU's GotoBLAS micro-kernel): at each
  k, mr values of a are broadcast against nr consecutive values of b (the
  outer-product form), and each accumulator takes its own `chain_step`, so it
  still sees its fmas in k order, while the nr accumulators of one row are
  independent lanes that LLVM's SLP vectorizer packs into vector fmas.  The
  block's shape is the CPU schedule's choice (softrep/cpu/linalg.py picks it
  from the host's vector width and register count); it decides which
  accumulators advance together, never the steps of any one of them.  The
  micro-kernels are generated source (mr * nr named scalars), because Numba
  has no register-resident local arrays; generation keeps the accumulators as
  SSA values that LLVM can keep in registers for the whole k loop, and
  `chain_step` is inlined, so calling it costs nothing.  The `strided`
  variant reads a (stored k-major) and b in place, for `tree_product`.
* `tree_slot`, `tree_carry`, `tree_finish` add per-sample chains along the
  batch tree as they are produced (see "per-sample chains into the batch
  tree" below): the weight gradients of the batch order without storing one
  partial per sample.  `outer_node_of_eight` and `outer_leaf` do the same
  for samples of one row, whose chains are one step each.
"""

import functools

import numpy as np

from ..primitives.rounding import ZERO32, ZERO64, add_rn, canonical, fma_rn, jitable
from .reduction import popcount, zero_like

# Every chain starts from +0 (so that an empty product is +0), in the operands' dtype.
CHAIN_START = {"float32": ZERO32, "float64": ZERO64}


@jitable
def chain_step(a, b, acc):
    """One step of a product's chain: a*b + acc rounded once (fma, to nearest).

    A product term is never rounded on its own: rounding a*b first and then
    adding would be a second rounding, and the result would depend on whether
    a compiler fused the two."""
    return fma_rn(a, b, acc)


@jitable
def start_chains(acc):
    """Every accumulator of the 1-D array `acc` set to the chain's start, +0
    (an integer 0 stored to a float array is +0 of its dtype)."""
    for j in range(acc.size):
        acc[j] = 0


@jitable
def dot_chain(a, a_off, a_step, b, b_off, b_step, k_count, acc):
    """acc advanced through k_count steps: acc = chain_step(a[a_off + k*a_step], b[b_off + k*b_step], acc).

    a and b are flat (1-D) arrays; the offsets and steps are element counts.
    """
    for k in range(k_count):
        acc = chain_step(a[a_off + k * a_step], b[b_off + k * b_step], acc)
    return acc


@jitable
def finish(acc):
    """The output of a chain without an addend: acc, with a NaN made canonical."""
    return canonical(acc)


@jitable
def finish_add(acc, addend):
    """The output of a chain with an addend: add_rn(acc, addend), with a NaN made canonical.

    The addend comes once, after the last step (not as the chain's start
    value), so the chain is the same with and without it."""
    return canonical(add_rn(acc, addend))


def _micro_source(name, mr, nr, zero, strided=False):
    """Source of an mr x nr micro-kernel.

    micro(ap, bp, c, a_off, b_off, c_off, ldc, k_count, first):
      ap: packed a (flat), the panel at a_off holds a[i0 + r, k] at a_off + k*mr + r;
      bp: packed b (flat), the panel at b_off holds b[k, j0 + j] at b_off + k*nr + j;
      strided: two more arguments lda, ldb replace mr and nr as the distances
      between consecutive k (a stored k-major, a[k, i], and b as it is: no packing);
      c: flat accumulator store, c[i0 + r, j0 + j] at c_off + r*ldc + j.
      Advances those mr x nr accumulators through k_count steps of
      `chain_step`; `first` starts them from +0 instead of reloading them
      from c.
    Offsets are unsigned so that Numba emits no negative-index wraparound,
    which would hide from LLVM that the NR loads of a row are consecutive.
    """
    rows, cols = range(mr), range(nr)
    extra, a_step, b_step = (", lda, ldb", "lda", "ldb") if strided else ("", f"U{mr}", f"U{nr}")
    lines = [f"def {name}(ap, bp, c, a_off, b_off, c_off, ldc, k_count, first{extra}):"]
    lines.append("    a_off = np.uint64(a_off); b_off = np.uint64(b_off); c_off = np.uint64(c_off); "
                 "ldc = np.uint64(ldc)")
    if strided:
        lines.append("    lda = np.uint64(lda); ldb = np.uint64(ldb)")
    for r in rows:
        lines.append(f"    crow{r} = c_off + np.uint64({r}) * ldc")
    lines.append("    if first:")
    for r in rows:
        lines.append("        " + "; ".join(f"c{r}_{j} = {zero}" for j in cols))
    lines.append("    else:")
    for r in rows:
        lines.append("        " + "; ".join(f"c{r}_{j} = c[crow{r} + U{j}]" for j in cols))
    lines.append("    for k in range(k_count):")
    lines.append("        kk = np.uint64(k)")
    lines.append(f"        bk = b_off + kk * {b_step}")
    lines.append(f"        ak = a_off + kk * {a_step}")
    lines.append("        " + "; ".join(f"b{j} = bp[bk + U{j}]" for j in cols))
    for r in rows:
        lines.append(f"        a{r} = ap[ak + U{r}]")
        lines.append("        " + "; ".join(f"c{r}_{j} = chain_step(a{r}, b{j}, c{r}_{j})" for j in cols))
    for r in rows:
        lines.append("    " + "; ".join(f"c[crow{r} + U{j}] = c{r}_{j}" for j in cols))
    return "\n".join(lines) + "\n"


def _make_micro(name, mr, nr, zero, strided):
    namespace = {"chain_step": chain_step, "ZERO32": ZERO32, "ZERO64": ZERO64, "np": np}
    namespace.update({f"U{j}": np.uint64(j) for j in range(max(mr, nr) + 1)})
    exec(compile(_micro_source(name, mr, nr, zero, strided), f"<softrep.algorithms.products.{name}>", "exec"), namespace)
    fn = namespace[name]
    fn.__module__ = __name__
    return jitable(fn)


_ZERO_NAMES = {np.dtype(np.float32): "ZERO32", np.dtype(np.float64): "ZERO64"}


@functools.cache
def micro_kernel(dtype, mr, nr, strided=False):
    """The mr x nr micro-kernel for `dtype` (float32 or float64), made once per
    shape; `strided`: the variant reading unpacked operands (see `_micro_source`)."""
    dtype = np.dtype(dtype)
    suffix = "_strided" if strided else ""
    return _make_micro(f"micro_f{dtype.itemsize * 8}_{mr}x{nr}{suffix}", mr, nr, _ZERO_NAMES[dtype], strided)


# --------------------------------------------------------------------------- per-sample chains into the batch tree
#
# A weight's gradient in the batch order (docs/order.md, "The batch order") is,
# for each output element, the batch tree over the samples of the per-sample
# product chains.  Instead of storing every sample's chain result (N x the
# weight) and adding them level by level, a kernel keeps for each output a
# stack of at most log2(N) + 1 tree nodes -- the streaming binary counter of
# `reduction.tree_push`: sample number c's chain result is written to slot
# popcount(c) of the stack, and `tree_carry` then merges it with the newest
# slots while their sizes are equal, completing exactly the nodes of the tree
# (each an add_rn of its left and right child, in that order).  `tree_finish`
# folds what is left from the newest slot to the oldest, which are the moves
# up of the nodes without a right sibling followed by their additions.
#
# A stack here is flat: slot d holds `lanes` independent outputs at
# stack[d*ld : d*ld + lanes] (the CPU keeps a register block's row panel per
# slot, a CUDA thread one output with ld = lanes = 1).  The offsets are
# unsigned, as in the micro-kernels: with signed ones Numba checks every index
# for negative wraparound, which keeps LLVM from turning the lanes' add_rn into
# vector adds (each lane is still its own IEEE add, in the same order).
#
# NaNs: the materialised form makes each chain's result canonical, and each
# add_rn's result; here only the finished node is.  Both give the same bits:
# add_rn returns a NaN exactly when an operand is NaN or it adds infinities
# of opposite signs, whatever the payloads, so the NaN-ness of every node is
# the same and only the final payload differs, which `canonical` fixes.


def tree_slots(counts):
    """The stack slots a tree over at most max(counts) samples needs (plain
    Python, for a launcher; `counts` an array, or one int): one per level
    below the root's, and the root's."""
    most = counts if isinstance(counts, int) else int(counts.max())
    return 1 + max(most - 1, 0).bit_length()


@jitable
def tree_slot(count):
    """The stack slot that the chain result of sample number `count` (0-based) is written to."""
    return popcount(count)


@jitable
def tree_carry(stack, ld, count, lanes):
    """Merge the chain result just written to slot tree_slot(count) into the tree;
    returns count + 1.  While the newest slot and the one below it cover equally
    many samples (a carry of the binary count), the one below becomes
    add_rn(older, newer): the parent node of the two."""
    depth = popcount(count)
    c = count
    while c & 1:
        depth -= 1
        lo = np.uint64(depth) * np.uint64(ld)
        hi = lo + np.uint64(ld)
        for lane in range(np.uint64(lanes)):
            stack[lo + lane] = add_rn(stack[lo + lane], stack[hi + lane])
        c >>= 1
    return count + 1


@jitable
def tree_finish(stack, ld, count, lanes):
    """The node of all `count` samples pushed (count >= 1) in slot 0: the slots
    folded from the newest to the oldest, acc = add_rn(older, acc), then any NaN
    made canonical."""
    depth = popcount(count)
    for d in range(depth - 2, -1, -1):
        lo = np.uint64(d) * np.uint64(ld)
        hi = lo + np.uint64(ld)
        for lane in range(np.uint64(lanes)):
            stack[lo + lane] = add_rn(stack[lo + lane], stack[hi + lane])
    for lane in range(lanes):
        stack[lane] = canonical(stack[lane])


@jitable
def tree_node_of_eight(out, at, leaves, first, ld, lanes):
    """The tree node over eight consecutive leaves whose first position is a
    multiple of 8 (node (3, j) of the batch tree, none of its leaves
    missing), for `lanes` outputs: leaf r of output k is
    leaves[first + r*ld + k], and out[at + k] = ((l0 + l1) + (l2 + l3)) +
    ((l4 + l5) + (l6 + l7)), each + an add_rn of the left and the right
    child.  A kernel may push such nodes onto a `tree_carry` stack in place
    of their leaves: the pairing above level 3 is the same.  Offsets
    unsigned, as in tree_carry."""
    # the rows' offsets by additions alone, as in outer_node_of_eight: with
    # i + 2 * d the loads of a row are gathers (docs/benchmarks.md)
    o, d = np.uint64(at), np.uint64(ld)
    f0 = np.uint64(first)
    f1 = f0 + d
    f2 = f1 + d
    f3 = f2 + d
    f4 = f3 + d
    f5 = f4 + d
    f6 = f5 + d
    f7 = f6 + d
    for k in range(np.uint64(lanes)):
        a = add_rn(add_rn(leaves[f0 + k], leaves[f1 + k]), add_rn(leaves[f2 + k], leaves[f3 + k]))
        b = add_rn(add_rn(leaves[f4 + k], leaves[f5 + k]), add_rn(leaves[f6 + k], leaves[f7 + k]))
        out[o + k] = add_rn(a, b)


# One row per sample (K = 1: a linear layer's input [batch, features]): each
# sample's chain is one step from +0, chain_step(a, b, +0), so a kernel can
# form the leaves of an aligned run of eight samples and their node (3, j)
# in registers and push only that node onto the stack, as tree_node_of_eight
# allows; a run of fewer than eight at a node's end is pushed leaf by leaf onto
# a stack of its own, whose finished node is then pushed in its place (the
# level-by-level tree of those leaves, the bits of node (3, j) with its right
# children missing; `tree_finish` makes a NaN canonical there too, which the
# root does anyway).


@jitable
def outer_leaf(out, at, a, b, b_first, lanes):
    """out[at + k] = chain_step(a, b[b_first + k], +0): sample's chain of one
    step for `lanes` outputs (a scalar, b a row).  Offsets unsigned."""
    o, f = np.uint64(at), np.uint64(b_first)
    zero = zero_like(a)
    for k in range(np.uint64(lanes)):
        out[o + k] = chain_step(a, b[f + k], zero)


@jitable
def outer_node_of_eight(out, at, a, a_first, a_step, b, b_first, b_step, lanes):
    """The tree node over eight consecutive samples' one-step chains (the first
    position a multiple of 8), for `lanes` outputs: sample r's leaf of output
    k is chain_step(a[a_first + r*a_step], b[b_first + r*b_step + k], +0), and
    out[at + k] = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), as in
    tree_node_of_eight, without storing the leaves.  Offsets unsigned."""
    # the eight rows' offsets by additions alone: a product of an unsigned
    # offset and an integer literal is not one LLVM sees as affine in k, and
    # the row's loads become gathers
    o, d, e = np.uint64(at), np.uint64(b_step), np.uint64(a_step)
    f0, i0 = np.uint64(b_first), np.uint64(a_first)
    f1, i1 = f0 + d, i0 + e
    f2, i2 = f1 + d, i1 + e
    f3, i3 = f2 + d, i2 + e
    f4, i4 = f3 + d, i3 + e
    f5, i5 = f4 + d, i4 + e
    f6, i6 = f5 + d, i5 + e
    f7, i7 = f6 + d, i6 + e
    a0, a1, a2, a3, a4, a5, a6, a7 = a[i0], a[i1], a[i2], a[i3], a[i4], a[i5], a[i6], a[i7]
    zero = zero_like(a0)
    for k in range(np.uint64(lanes)):
        p = add_rn(add_rn(chain_step(a0, b[f0 + k], zero), chain_step(a1, b[f1 + k], zero)),
                   add_rn(chain_step(a2, b[f2 + k], zero), chain_step(a3, b[f3 + k], zero)))
        q = add_rn(add_rn(chain_step(a4, b[f4 + k], zero), chain_step(a5, b[f5 + k], zero)),
                   add_rn(chain_step(a6, b[f6 + k], zero), chain_step(a7, b[f7 + k], zero)))
        out[o + k] = add_rn(p, q)
