# softrep: no kernels
"""The batch order: sums over the samples of a batch, fixed by the global sample positions.

A reduction over the batch dimension (a weight's gradient, a loss mean,
batch-norm statistics) first reduces each sample on its own -- its tokens or
pixels, in the documented order of that op -- to one *per-sample partial*,
then adds the partials of the N samples of the global batch along one fixed
binary tree over their global positions 0 .. N-1 (docs/order.md, "The batch
order"):

    node (0, i)  = partial of sample i
    node (L, j)  covers the positions [j 2^L, (j + 1) 2^L) intersected with [0, N);
                 it is add_rn(node (L-1, 2j), node (L-1, 2j+1)), or node (L-1, 2j)
                 unchanged when the right child covers no position
    the sum      = the root, node (ceil(log2 N), 0)

The tree depends on N alone.  A contiguous slice [a, b) of the batch (a
micro-batch, a data-parallel rank's share) contains whole subtrees: every node
whose positions lie inside [a, b) can be computed from the slice alone, with
the bits it has in the full batch.  `slice_nodes` returns the maximal ones (at
most about 2 log2 N of them); `merge_nodes` completes the tree from the nodes
of slices that together cover [0, N).  Which slices, in which order, on which
process, never enters the arithmetic: each node is one add_rn of the same two
children whatever the split.

The `BatchSlice` context tells the ops which slice they see.  Without one, a
tensor's dim 0 is the whole batch (offset 0, N = its length) and the ops return
the root as usual.  Inside one (softrep.distributed sets it up), a parameter's
per-sample partials become tree nodes handed to the slice's `sink` keyed by
the parameter, and the caller combines them after the last slice.
"""

import math

import torch

from ..cpu import reduce as cpu_reduce
from . import backend, summation
from . import elementwise as E

# --------------------------------------------------------------------------- the tree


def levels(total):
    """ceil(log2(total)): the level of the root of a batch of `total` samples."""
    return max(total - 1, 0).bit_length()


def _has_right(level, j, total):
    """Whether node (level, j) with j even has a right sibling with positions."""
    return (j + 1) << level < total


def slice_nodes(partials, start, total):
    """The maximal tree nodes inside the slice [start, start + n) of a batch of
    `total` samples, from the per-sample partials (n, ...) of that slice.

    Returns a list of (level, index, value), value a tensor of partials.shape[1:].
    When autograd records, the additions are softrep adds on whole levels at a
    time (one launch per level), so the nodes have gradients like any softrep
    op; otherwise one launch computes every node (`summation.tree_nodes`, the
    same additions in the same order).
    """
    n = partials.shape[0]
    stop = start + n
    if n == 0:
        return []
    if not 0 <= start < stop <= total:
        raise ValueError(f"softrep: the slice [{start}, {stop}) is not inside a batch of {total} samples")
    if _one_launch(partials):
        ranges = node_ranges(start, n, total)
        values = summation.tree_nodes(partials, [(first, count) for _, _, first, count in ranges])
        return [(level, j, value) for (level, j, _, _), value in zip(ranges, values)]
    nodes = []
    level, lo, hi, cur = 0, start, stop, partials
    while True:
        if level >= levels(total) and lo == 0 and hi == 1:
            nodes.append((level, 0, cur[0]))
            return nodes
        if lo % 2 == 1:  # its left sibling lies before the slice
            nodes.append((level, lo, cur[0]))
            cur, lo = cur[1:], lo + 1
        if hi > lo and (hi - 1) % 2 == 0 and _has_right(level, hi - 1, total):
            nodes.append((level, hi - 1, cur[hi - 1 - lo]))  # its right sibling lies after the slice
            cur, hi = cur[:hi - 1 - lo], hi - 1
        if hi == lo:
            return nodes
        pairs = (hi - lo) // 2
        parents = E.add(cur[0:2 * pairs:2], cur[1:2 * pairs:2]) if pairs else cur[:0]
        if (hi - lo) % 2:  # the last node has no right sibling in the batch: it moves up unchanged
            parents = torch.cat([parents, cur[hi - lo - 1:]]) if pairs else cur[hi - lo - 1:]
        level, lo, hi, cur = level + 1, lo // 2, (hi + 1) // 2, parents


def _one_launch(partials):
    """Whether `slice_nodes` may compute its nodes with `summation.tree_nodes`:
    nothing to record for autograd, and a plain float32/float64 tensor (other
    dtypes keep the adds, which round 16-bit partials as the ops do)."""
    return (type(partials) is torch.Tensor and partials.dtype in (torch.float32, torch.float64)
            and not backend.records(partials))


def combine_nodes(nodes, total, what="the batch"):
    """Nodes (level, index, value) of disjoint slices -> {(level, index): value}
    with every pair of siblings replaced by their parent (and a node without a
    right sibling in the batch by itself one level up), as far as they go."""
    table = {}
    for level, j, value in nodes:
        if (level, j) in table:
            raise ValueError(f"softrep: {what}: the samples [{j << level}, {min((j + 1) << level, total)}) "
                             "were given twice")
        table[(level, j)] = value
    top = levels(total)
    for level in range(top):
        for j in sorted(k[1] for k in list(table) if k[0] == level):
            if j % 2 or (level, j) not in table:
                continue  # a right child is combined with its left sibling
            if not _has_right(level, j, total):
                table[(level + 1, j // 2)] = table.pop((level, j))
            elif (level, j + 1) in table:
                table[(level + 1, j // 2)] = E.add(table.pop((level, j)), table.pop((level, j + 1)))
    return table


def merge_nodes(nodes, total, what="the batch"):
    """The root of the tree from nodes (level, index, value) that together cover
    every position of [0, total) exactly once; raises ValueError otherwise."""
    table = combine_nodes(nodes, total, what)
    root = table.pop((levels(total), 0), None)
    if root is None or table:
        raise ValueError(f"softrep: {what}: the slices do not cover the {total} samples of the global batch; "
                         "they must together cover every sample exactly once")
    return root


def range_nodes_keys(start, stop, total):
    """The (level, index) of the nodes `slice_nodes` returns for [start, stop), in its order."""
    keys, level, lo, hi = [], 0, start, stop
    while hi > lo:
        if level >= levels(total) and lo == 0 and hi == 1:
            keys.append((level, 0))
            return keys
        if lo % 2 == 1:
            keys.append((level, lo))
            lo += 1
        if hi > lo and (hi - 1) % 2 == 0 and _has_right(level, hi - 1, total):
            keys.append((level, hi - 1))
            hi -= 1
        level, lo, hi = level + 1, lo // 2, (hi + 1) // 2
    return keys


def tree_sum(partials):
    """The root of the batch tree over dim 0 of `partials` (a whole batch)."""
    n = partials.shape[0]
    if n == 0:
        return torch.zeros(partials.shape[1:], dtype=partials.dtype, device=partials.device)
    if _one_launch(partials):  # the whole batch's one maximal node: its root
        return summation.tree_nodes(partials, ((0, n),))[0]
    return slice_nodes(partials, 0, n)[0][2]


def per_sample_sums(x):
    """(n, *rest) -> (n,): each sample's elements summed in the documented sum
    order (row-major over its dims); a 1-D x is its own partials."""
    if x.dim() <= 1:
        return x
    per = 1
    for size in x.shape[1:]:
        per *= size
    return summation.sum(x.reshape(x.shape[0], per), 1)


# --------------------------------------------------------------------------- the slice context


class BatchSlice:
    """The samples [offset, offset + size) of a global batch of `global_size`.

    sink(key, nodes, finish): receives the tree nodes of a parameter's gradient
    (key: the `GradientKey` of the parameter, finish None) or of a loss (key: a
    string; finish(root) is the reported value), instead of the op returning
    their root.  gather(partials): the per-sample partials of every
    sample of the global batch in position order, from this slice's partials --
    the collective that batch-norm statistics need; None when the other slices
    are not computed at the same time (sequential micro-batches), where such a
    statistic cannot be formed and the op raises.
    """

    def __init__(self, global_size, offset, size, sink=None, gather=None):
        if not 0 <= offset and offset + size <= global_size:
            raise ValueError(f"softrep: the slice [{offset}, {offset + size}) is not inside a global batch of "
                             f"{global_size} samples")
        self.global_size, self.offset, self.size = int(global_size), int(offset), int(size)
        self.sink, self.gather = sink, gather
        self.uses = {}

    def check_rows(self, fn, name, t):
        """The sample dim (dim 0) of `t` must hold this slice's samples."""
        if t.dim() == 0 or t.shape[0] != self.size:
            shape = tuple(t.shape)
            raise ValueError(f"softrep.{fn}: argument '{name}' of shape {shape} does not hold the {self.size} "
                             f"samples of the current slice [{self.offset}, {self.offset + self.size}) along dim 0; "
                             "in a split batch every batch reduction takes dim 0 as the sample dim")


class _State:
    # Process-wide, not per thread: torch runs a backward pass on its own
    # threads for CUDA tensors, and the slice must be seen there too.
    slice = None


_STATE = _State()


def current():
    """The active BatchSlice, or None (the whole batch in one pass)."""
    return _STATE.slice


class active:
    """Context manager making `batch_slice` the current slice (None: no slice)."""

    def __init__(self, batch_slice):
        self.batch_slice = batch_slice

    def __enter__(self):
        self.previous = current()
        _STATE.slice = self.batch_slice
        return self.batch_slice

    def __exit__(self, *exc):
        _STATE.slice = self.previous
        return False


def set_current(batch_slice):
    """Make `batch_slice` current until the next call (None: no slice); returns the previous one."""
    previous = current()
    _STATE.slice = batch_slice
    return previous


# --------------------------------------------------------------------------- gradients of parameters


class GradientKey:
    """Where a gradient of per-sample partials goes: the leaf tensor and the view of
    it that the op used (shape, stride, storage offset), and which use of that view
    in the backward pass (0, 1, ... in the order of the backward)."""

    def __init__(self, leaf, view, use):
        self.leaf, self.view, self.use = leaf, view, use

    def ident(self):
        return (id(self.leaf), self.view, self.use)


def _leaf_of(t):
    if t.is_leaf:
        return t
    base = t._base
    if base is not None and base.is_leaf:
        return base
    return None


def node_ranges(start, n, total):
    """The maximal tree nodes inside the slice [start, start + n) of a batch of
    `total` samples, in `slice_nodes`' order, as (level, index, first, count):
    the node holds the samples [first, first + count) of the slice."""
    ranges = []
    for level, j in range_nodes_keys(start, start + n, total):
        lo = j << level
        ranges.append((level, j, lo - start, min((j + 1) << level, total) - lo))
    return ranges


def param_grad(fn, name, param, partials):
    """The gradient of `param` from its per-sample partials (n, *param.shape).

    Whole batch (no slice): the root of the batch tree.  In a slice: the slice's
    nodes go to the slice's sink under the parameter's key and None is returned
    (torch then leaves the leaf's .grad to the caller of the slice)."""
    batch_slice = current()
    if batch_slice is None:
        return tree_sum(partials)
    with torch.no_grad():
        nodes = _slice_param_nodes(fn, name, param, partials.shape[0],
                                   lambda: slice_nodes(partials.detach(), batch_slice.offset, batch_slice.global_size))
    batch_slice.sink(*nodes)
    return None


def param_grad_of_row_sums(fn, name, param, rows):
    """`param_grad` of the per-sample partials that are the documented sums
    over dim 1 of `rows` (S, R, *param.shape) -- a single row (R = 1) taken
    as it is -- such as linear's bias gradient from its output gradient.  A
    whole batch of plain CPU tensors with nothing to record takes one serial
    kernel for both stages (`cpu_reduce.serial_batch_row_sums`, the same
    bits); otherwise the sum, then `param_grad`."""
    samples, count = rows.shape[0], rows.shape[1]
    dtype = None
    if current() is None and samples and count and rows.numel() <= cpu_reduce.SERIAL_ROWS_MAX and param.numel():
        dtype = backend.light_dtype((rows,))
    if dtype is not None:
        out = torch.empty(param.shape, dtype=rows.dtype)
        cpu_reduce.serial_batch_row_sums(dtype, out.data_ptr(), rows.data_ptr(), samples, count, out.numel())
        return out
    per = rows[:, 0] if count == 1 else summation.sum(rows, 1)
    return param_grad(fn, name, param, per.reshape(samples, *param.shape))


def param_grad_of_sums_over_last(fn, name, param, x):
    """`param_grad` of the per-sample partials that are the documented sums
    over the last dim of `x` (S, *param.shape, L), such as conv2d's bias
    gradient from its output gradient (N, C, OH*OW).  A whole batch of plain
    CPU tensors with nothing to record, in short rows, takes one serial
    kernel for both stages (`cpu_reduce.serial_batch_sums_of_rows`, the same
    bits); otherwise the sum, then `param_grad`."""
    samples, length = x.shape[0], x.shape[-1]
    dtype = None
    if (current() is None and samples and 0 < length <= cpu_reduce.SERIAL_ROW_LENGTH_MAX
            and x.numel() <= cpu_reduce.SERIAL_SHORT_ROWS_MAX and param.numel()):
        dtype = backend.light_dtype((x,))
    if dtype is not None:
        out = torch.empty(param.shape, dtype=x.dtype)
        cpu_reduce.serial_batch_sums_of_rows(dtype, out.data_ptr(), x.data_ptr(), samples, out.numel(), length)
        return out
    return param_grad(fn, name, param, summation.sum(x, -1))


def param_grad_of_nodes(fn, name, param, samples, node_values):
    """`param_grad` for a kernel that computes tree nodes without storing the
    per-sample partials: node_values(ranges) returns one tensor of param's shape
    per (first, count) in `ranges` -- the tree node over the samples
    [first, first + count) of dim 0, with the bits `slice_nodes` gives it."""
    batch_slice = current()
    if batch_slice is None:
        if samples == 0:
            return torch.zeros(param.shape, dtype=param.dtype, device=param.device)
        return node_values([(0, samples)])[0]

    def nodes():
        ranges = node_ranges(batch_slice.offset, samples, batch_slice.global_size)
        values = node_values([(first, count) for _, _, first, count in ranges]) if ranges else []
        return [(level, j, value) for (level, j, _, _), value in zip(ranges, values)]

    batch_slice.sink(*_slice_param_nodes(fn, name, param, samples, nodes))
    return None


def _slice_param_nodes(fn, name, param, samples, nodes):
    """(key, nodes(), None) for the current slice's sink: checks that the
    gradient has the slice's samples and goes to a leaf (or a view of one)."""
    batch_slice = current()
    if samples != batch_slice.size:
        raise ValueError(f"softrep.{fn}: the gradient of '{name}' has {samples} per-sample partials but "
                         f"the current slice holds {batch_slice.size} samples; in a split batch dim 0 of the "
                         "input must be the sample dim")
    leaf = _leaf_of(param)
    if leaf is None:
        raise ValueError(f"softrep.{fn}: argument '{name}' is computed from other tensors; with a split batch "
                         "(micro-batches, data-parallel ranks) a batch-reduced gradient can only go to a leaf "
                         "tensor (a parameter) or a view of one")
    view = (tuple(param.shape), tuple(param.stride()), param.storage_offset() - leaf.storage_offset())
    ident = (id(leaf), view)
    use = batch_slice.uses.get(ident, 0)
    batch_slice.uses[ident] = use + 1
    return GradientKey(leaf, view, use), nodes(), None


class ExpandParam(backend.Function):
    """A parameter broadcast over the leading `batch` dims of an input (values only
    moved).  Backward: each sample's gradient summed over its own broadcast
    positions (the documented sum order), then the batch tree over dim 0 of the
    input (`param_grad`)."""

    @staticmethod
    def forward(param, view, shape, fn, name):
        return param.reshape(view).expand(shape)

    @staticmethod
    def setup_context(ctx, inputs, output):
        param, view, shape, ctx.fn, ctx.name = inputs
        ctx.param = param
        ctx.view = view

    @staticmethod
    def backward(ctx, g):
        return broadcast_param_grad(ctx.fn, ctx.name, ctx.param, ctx.view, g), None, None, None, None

    @staticmethod
    def vmap(info, in_dims, param, view, shape, fn, name):
        # values only moved: each vmapped sample's parameter expanded on its own
        size = info.batch_size
        p = param.movedim(in_dims[0], 0) if in_dims[0] is not None else param.expand(size, *param.shape)
        return p.reshape(size, *view).expand(size, *shape), 0


def broadcast_param_grad(fn, name, param, view, g):
    """The gradient of `param` (reshaped to `view`, view[0] == 1) from the
    gradient g of its broadcast to g's shape: each sample's gradient summed
    over its own broadcast positions (the documented sum order), then the
    batch tree over dim 0 (`param_grad`; None inside a slice)."""
    n = g.shape[0]
    dims = tuple(d for d in range(1, g.dim()) if view[d] == 1 and g.shape[d] != 1)
    if dims and all(view[d] == 1 for d in range(1, dims[-1])) \
            and all(view[d] == g.shape[d] for d in range(dims[-1] + 1, g.dim())):
        # the broadcast positions are a leading run of rows before the
        # parameter's own trailing dims (a norm's affine over tokens)
        rows = math.prod(g.shape[1:dims[-1] + 1])
        return param_grad_of_row_sums(fn, name, param, g.reshape(n, rows, *param.shape))
    per = summation.sum(g, dims, keepdim=True) if dims else g
    return param_grad(fn, name, param, per.reshape(n, *param.shape))


def broadcasts_over_batch(view, like):
    """Whether a parameter of shape `view` broadcast to `like` spans its dim 0
    (the sample dim), so that its gradient takes the batch order."""
    return like.dim() > 0 and len(view) == like.dim() and view[0] == 1


def check_batch_rows(fn, like):
    """In a split batch, that dim 0 of `like` holds the current slice's samples."""
    batch_slice = current()
    if batch_slice is not None:
        batch_slice.check_rows(fn, "input", like)


def expand_param(fn, name, param, view, like):
    """`param` reshaped to `view` (view[0] == 1) and broadcast to `like`'s shape,
    with the batch order for its gradient (dim 0 of `like` the sample dim)."""
    if not broadcasts_over_batch(view, like):
        return param.reshape(view)
    check_batch_rows(fn, like)
    return ExpandParam.apply(param, tuple(view), tuple(like.shape), fn, name)


# --------------------------------------------------------------------------- sums of the batch (losses)


def batch_total(fn, x, key=None, finish=None):
    """The sum of all elements of x (dim 0 the sample dim): per-sample sums
    (`per_sample_sums`), then the batch tree.

    In a slice, the slice's own nodes added in position order are returned (its
    share: every sample gets the gradient of the global sum, but the value is
    not the global sum's bits); with a `key` the nodes also go to the slice's
    sink, with `finish` (root -> the value the caller reports, e.g. a mean)."""
    if x.dim() == 0:
        return x
    partials = per_sample_sums(x)
    batch_slice = current()
    if batch_slice is None:
        return tree_sum(partials)
    batch_slice.check_rows(fn, "input", x)
    nodes = slice_nodes(partials, batch_slice.offset, batch_slice.global_size)
    if key is not None and batch_slice.sink is not None:
        batch_slice.sink(key, [(level, j, value.detach()) for level, j, value in nodes], finish)
    share = nodes[0][2]
    for _, _, value in sorted(nodes[1:], key=lambda node: node[1] << node[0]):
        share = E.add(share, value)
    return share


def batch_mean(fn, x, key=None):
    """div(batch_total(x), count), count the global number of x's elements."""
    count = float(batch_count(fn, x))
    return E.div(batch_total(fn, x, key, lambda root: E.div(root, count)), count)


def in_slice():
    """Whether a split batch is being computed (a BatchSlice is current)."""
    return current() is not None


def batch_count(fn, x):
    """The number of samples' elements of the global batch that x's elements stand for:
    x.numel() without a slice, global_size * (elements per sample) in one."""
    batch_slice = current()
    if batch_slice is None or x.dim() == 0:
        return x.numel()
    batch_slice.check_rows(fn, "input", x)
    per = x[0].numel()
    return batch_slice.global_size * per


def batch_statistic(fn, partials):
    """The root of the batch tree over the per-sample partials (n, ...) of the
    whole global batch, on every participant: the slice's partials are gathered
    with the other slices' (`BatchSlice.gather`).  Raises when the other slices
    are not computed at the same time."""
    batch_slice = current()
    if batch_slice is None:
        return tree_sum(partials)
    if batch_slice.size == batch_slice.global_size:
        return tree_sum(partials)
    if batch_slice.gather is None:
        raise ValueError(f"softrep.{fn}: batch statistics need every sample of the global batch at once, but "
                         f"this micro-batch holds {batch_slice.size} of the {batch_slice.global_size} samples and "
                         "the others are processed later; use one micro-batch per rank (data-parallel ranks share "
                         "batch statistics), or a normalisation without batch statistics (LayerNorm, GroupNorm, "
                         "BatchNorm in eval mode)")
    return tree_sum(batch_slice.gather(partials))


__all__ = ["BatchSlice", "GradientKey", "active", "batch_count", "batch_statistic", "batch_mean", "batch_total", "current", "in_slice",
           "expand_param", "combine_nodes", "levels", "merge_nodes", "node_ranges", "param_grad",
           "param_grad_of_nodes", "per_sample_sums", "range_nodes_keys", "set_current", "slice_nodes", "tree_sum"]
