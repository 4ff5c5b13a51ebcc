# softrep: no kernels
"""embedding, and the row gather / ordered scatter-sum pair that pooling shares.

A gather copies values (exact).  Its gradient is a scatter-sum: every source
row lands on the row it was gathered from, and a row gathered several times
receives several gradients, which must be added.  torch adds them with
`index_add_` / `index_put_(accumulate=True)`, whose order depends on the
device and the thread count.  Here the gradients destined for one row are
added with `softrep.sum` (docs/order.md, "Reductions") in the order of their
position in the source -- the row-major order of the gathered tensor -- so the
result depends on nothing but the values (docs/order.md, "Embedding").

`gather_rows` and `scatter_sum_rows` are each other's backward, so gradients of
any order are made of softrep ops.
"""

import torch

from ...cpu import embedding as cpu_embedding
from ...ops import backend, batching, batchtree, mixed, scatter
from ...ops import reduction as R


def canonical_nan(t):
    """t with every NaN replaced by the canonical quiet NaN (a copy only when needed)."""
    nan = torch.isnan(t)
    return t.masked_fill(nan, float("nan")) if bool(nan.any()) else t


def _scatter_sum(src, index, num_rows):
    """out[r] = sum of src[i] over the i (increasing) with index[i] == r, in the
    documented sum order; +0 where no i lands; index -1 drops the row.

    Rows move with index_select and index_copy_, always to distinct places:
    each copy is exact and the result does not depend on their order.

    Rows are grouped by their number of contributions in power-of-two buckets and
    each bucket is padded with -0 up to its largest count: -0 is an exact identity
    of add_rn (x + -0 = x for every x, including +0, -0 and NaN), and padding at the
    end of a sequence changes neither the left-to-right block sums nor the tree of
    docs/order.md, so a padded row sums to exactly the softrep.sum of its own
    contributions.  The buckets bound the padding to less than twice the data."""
    D = src.shape[1]
    out = scatter.ordered_scatter_sum(src, index, num_rows)  # one kernel, the same sums (CPU)
    if out is not None:
        return out
    out = torch.zeros((num_rows, D), dtype=src.dtype, device=src.device)
    kept = torch.nonzero(index >= 0).squeeze(1)
    if kept.numel() == 0 or D == 0:
        return out
    dest = index.index_select(0, kept)
    if int(torch.bincount(dest, minlength=num_rows).max()) == 1:
        # no row receives two terms (the non-overlapping windows of a pooling,
        # distinct token ids): the sum of one term is the term, so the result is
        # a copy and needs neither the sort nor the buckets below
        return out.index_copy_(0, dest, src.index_select(0, kept))
    order = torch.sort(dest, stable=True).indices  # stable: source order within a row
    dest, source = dest[order], kept[order]
    rows, counts = torch.unique_consecutive(dest, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(dest.numel(), device=src.device) - torch.repeat_interleave(starts, counts)
    slot = torch.repeat_interleave(torch.arange(rows.numel(), device=src.device), counts)
    single = counts == 1
    if bool(single.any()):  # the sum of one term is the term
        one = single[slot]
        out.index_copy_(0, dest[one], src.index_select(0, source[one]))
    bucket = _ceil_log2(counts)  # rows of similar length are padded and summed together
    for b in torch.unique(bucket[~single]).tolist():
        members = torch.nonzero((bucket == b) & ~single).squeeze(1)  # slots of this bucket
        width = int(counts[members].max())
        local = torch.full((rows.numel(),), -1, dtype=torch.int64, device=src.device)
        local[members] = torch.arange(members.numel(), device=src.device)
        take = local[slot] >= 0
        padded = torch.full((members.numel() * width, D), -0.0, dtype=src.dtype, device=src.device)
        place = local[slot[take]] * width + rank[take]  # distinct places: a copy
        padded.index_copy_(0, place, src.index_select(0, source[take]))
        out.index_copy_(0, rows[members], R.sum(padded.reshape(members.numel(), width, D), dim=1))
    return out


def _ceil_log2(n):
    """ceil(log2(n)) of positive int64 counts, with integer shifts only."""
    v, out = n - 1, torch.zeros_like(n)
    while bool((v > 0).any()):
        out += (v > 0).to(n.dtype)
        v = v >> 1
    return out


def _gather(table, index, fill):
    missing = index < 0
    out = table.index_select(0, index.clamp(min=0))
    if bool(missing.any()):
        out[missing] = fill
    return canonical_nan(out)


class _GatherRows(backend.Function):
    """table[index] (rows; index -1 gives a row of `fill`), NaN canonical.
    Backward: scatter-sum of the gradient rows to `grad_index` (-1: no gradient).
    vmap: with the table unbatched, the samples' indices are gathered at once
    (a copy is exact); otherwise one call per sample."""

    @staticmethod
    def forward(table, index, grad_index, fill):
        return _gather(table, index, fill)

    @staticmethod
    def setup_context(ctx, inputs, output):
        table, _, grad_index, _ = inputs
        ctx.num_rows = table.shape[0]
        ctx.save_for_backward(grad_index)

    @staticmethod
    def backward(ctx, g):
        (grad_index,) = ctx.saved_tensors
        return scatter_sum_rows(g, grad_index, ctx.num_rows), None, None, None

    @staticmethod
    def vmap(info, in_dims, table, index, grad_index, fill):
        if in_dims[0] is None and in_dims[1] is not None:
            index = batching.front(index, in_dims[1])
            out = _gather(table, index.reshape(-1), fill)
            return out.reshape(*index.shape, *out.shape[1:]), 0
        return batching.per_sample(lambda t, i, gi, f: _gather(t, i, f), info, in_dims, table, index,
                                   grad_index, fill)


class _ScatterSumRows(backend.Function):
    """vmap: one call per sample (each sample's rows are summed in its own order)."""

    @staticmethod
    def forward(src, index, num_rows):
        return _scatter_sum(src.detach(), index, num_rows)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1])

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        # src row i went to row index[i]: its gradient is that row's gradient (a gather);
        # a dropped row gets +0
        return gather_rows(g, index, index, 0.0), None, None

    @staticmethod
    def vmap(info, in_dims, src, index, num_rows):
        return batching.per_sample(lambda s, i, n: _scatter_sum(s.detach(), i, n), info, in_dims, src, index,
                                   num_rows)


class _EmbeddingRows(backend.Function):
    """weight[index] for an index of `samples` equal runs (dim 0 of embedding's
    input, the sample dim).  Backward: per sample, each row's gradient rows in
    source order (`scatter_sum_rows`, +0 for a row the sample does not use),
    then the batch tree over the samples (docs/order.md, "The batch order");
    for a whole batch with nothing to record, one serial kernel computes the
    same sums (`_light_table_grad`).  vmap: one call per sample."""

    @staticmethod
    def forward(table, index, grad_index, fill, samples):
        dtype = _light_dtype(table, index)
        return _gather(table, index, fill) if dtype is None else _light_rows(dtype, table, index)

    @staticmethod
    def setup_context(ctx, inputs, output):
        table, _, grad_index, _, ctx.samples = inputs
        ctx.table = table
        ctx.save_for_backward(grad_index)

    @staticmethod
    def backward(ctx, g):
        (grad_index,) = ctx.saved_tensors
        grad = _light_table_grad(g, grad_index, ctx.table, ctx.samples)
        if grad is not None:
            return grad, None, None, None, None
        rows, samples = ctx.table.shape[0], ctx.samples
        per = grad_index.numel() // samples if samples else 0
        sample = torch.arange(samples, device=grad_index.device).repeat_interleave(per)
        slot = torch.where(grad_index >= 0, grad_index + sample * rows, grad_index)  # one row block per sample
        partials = scatter_sum_rows(g, slot, samples * rows).reshape(samples, *ctx.table.shape)
        return batchtree.param_grad("embedding", "weight", ctx.table, partials), None, None, None, None

    @staticmethod
    def vmap(info, in_dims, table, index, grad_index, fill, samples):
        return batching.per_sample(lambda t, i, gi, f, n: _gather(t, i, f), info, in_dims, table, index,
                                   grad_index, fill, samples)


def _light_dtype(table, index):
    """The numpy dtype of `table` when the serial embedding kernels
    (softrep/cpu/embedding.py) may read table and index by their addresses:
    `backend.light_dtype`'s plain, C-contiguous CPU float table (whether or
    not it requires grad: `_EmbeddingRows` records the gradient), an int64 C-contiguous CPU index, and at most
    SERIAL_ROWS_MAX elements copied; else None."""
    if (type(index) is not torch.Tensor or index.dtype != torch.int64 or not index.is_cpu
            or not index.is_contiguous() or index.numel() * table.shape[1] > cpu_embedding.SERIAL_ROWS_MAX):
        return None
    return backend.light_dtype((table,), own_function=True)


def _light_rows(dtype, table, index):
    """table[index] by `serial_rows`, the bits of `_gather` (a copy, every NaN
    the canonical NaN); an index outside [0, num_embeddings) raises
    embedding's IndexError."""
    out = torch.empty((index.numel(), table.shape[1]), dtype=table.dtype)
    bad = cpu_embedding.serial_rows(dtype, out.data_ptr(), table.data_ptr(), index.data_ptr(), index.numel(),
                                    table.shape[0], table.shape[1])
    if bad >= 0:
        _check_index(index, table.shape[0])
    return out


def _light_table_grad(g, grad_index, table, samples):
    """`_EmbeddingRows`' gradient of the table by `serial_table_grad`, or None
    where that kernel does not run: a batch slice, a graph to record
    (create_graph), a torch.func transform, tensors not plain CPU ones, the
    CUDA backend, more than SERIAL_GRAD_MAX elements of partials and gradient
    rows.  The kernel adds what `scatter_sum_rows` and `tree_sum` add, in the
    same order, with the same canonical NaNs and the same copied single rows:
    the same bits."""
    rows, width = table.shape
    if (batchtree.current() is not None or torch.is_grad_enabled()
            or (samples * rows + grad_index.numel()) * width > cpu_embedding.SERIAL_GRAD_MAX):
        return None
    g = g.contiguous()
    dtype = backend.light_dtype((g,))
    if dtype is None:
        return None
    out = torch.empty((rows, width), dtype=g.dtype)
    per = grad_index.numel() // samples if samples else 0
    if cpu_embedding.serial_table_grad(dtype, out.data_ptr(), g.data_ptr(), grad_index.data_ptr(), samples, per,
                                       rows, width) >= 0:
        raise IndexError("softrep.embedding: a saved index names a row outside [-1, num_embeddings)")
    return out


def gather_rows(table, index, grad_index=None, fill=-0.0):
    """table (n, D)[index] for an int64 index (m,), with -1 giving a row of `fill`;
    the gradient of table is `scatter_sum_rows(g, grad_index)` (grad_index
    defaults to index; -1 entries get no gradient)."""
    return _GatherRows.apply(table, index, index if grad_index is None else grad_index, fill)


def scatter_sum_rows(src, index, num_rows):
    """(num_rows, D): row r is the softrep.sum, in source order, of the rows src[i]
    with index[i] == r (+0 if none; -1 drops a row)."""
    return _ScatterSumRows.apply(src, index, num_rows)


# ----------------------------------------------------------------------------- embedding

def _check_index(index, n):
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= n):
        bad = int(index.min()) if int(index.min()) < 0 else int(index.max())
        raise IndexError(f"softrep.embedding: argument 'input' holds index {bad}, out of range [0, {n - 1}] "
                         f"for num_embeddings={n}")
    return index.clone()


class _CheckedIndex(backend.Function):
    """The embedding indices, checked against the table size (a Function so that
    the check reads the plain index tensor under torch.func.vmap too)."""

    @staticmethod
    def forward(index, n):
        return _check_index(index, n)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def backward(ctx, g):
        return None, None

    @staticmethod
    def vmap(info, in_dims, index, n):
        return _check_index(index, n), in_dims[0]


def _reject(name, value, default, why):
    if value != default:
        raise NotImplementedError(f"softrep.embedding: argument '{name}'={value!r} is not supported ({why}); "
                                  f"use the default {default!r}")


@mixed.float32_compute("embedding")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """weight[input], like torch.nn.functional.embedding.

    Forward: an exact copy of rows (a NaN is stored as the canonical NaN).
    Backward (gradient of weight): dim 0 of a 2-D or larger `input` is the
    sample dim (a 0-D or 1-D input is one sample).  Per sample, row r gets the
    softrep.sum of the gradient rows of the sample's positions holding r, in
    row-major order (+0 when it holds none); the samples' partials are added
    along the batch tree (docs/order.md, "The batch order").  `padding_idx`
    gets +0 (its forward row is still copied).
    max_norm (renormalises weight in place), scale_grad_by_freq and sparse are
    not implemented and raise NotImplementedError."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.embedding: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"softrep.embedding: argument 'weight' must be a torch.Tensor, got {type(weight).__name__}")
    if input.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"softrep.embedding: argument 'input' must have dtype torch.int64 or torch.int32, "
                        f"got {input.dtype}")
    if weight.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"softrep.embedding: argument 'weight' has dtype {weight.dtype}; "
                        "expected torch.float32 or torch.float64")
    if weight.dim() != 2:
        raise ValueError(f"softrep.embedding: argument 'weight' must be 2-D (num_embeddings, embedding_dim), "
                         f"got shape {tuple(weight.shape)}")
    if input.device != weight.device:
        raise ValueError(f"softrep.embedding: argument 'input' is on {input.device} but 'weight' is on "
                         f"{weight.device}")
    _reject("max_norm", max_norm, None, "it renormalises weight in place with a rounded norm")
    _reject("scale_grad_by_freq", scale_grad_by_freq, False, "not implemented")
    _reject("sparse", sparse, False, "softrep gradients are dense")
    n = weight.shape[0]
    if padding_idx is not None:
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
            raise TypeError(f"softrep.embedding: argument 'padding_idx' must be an int or None, "
                            f"got {type(padding_idx).__name__}")
        if not -n <= padding_idx < n:
            raise ValueError(f"softrep.embedding: argument 'padding_idx' is {padding_idx}, must be within "
                             f"[{-n}, {n - 1}] for num_embeddings={n}")
        padding_idx %= n
    index = input.reshape(-1).to(torch.int64)
    dtype = _light_dtype(weight, index)
    if dtype is None:
        index = _CheckedIndex.apply(index, n)
    batch_slice = batchtree.current()
    if batch_slice is not None and input.dim() >= 2:
        batch_slice.check_rows("embedding", "input", input)
    if dtype is not None and not backend.records(weight):
        # nothing to record: the kernel checks the index as it copies
        return _light_rows(dtype, weight, index).reshape(*input.shape, weight.shape[1])
    # with the kernels, _EmbeddingRows' forward checks the index as it copies;
    # the saved index is a copy of the input's either way
    if padding_idx is not None:
        grad_index = index.masked_fill(index == padding_idx, -1)
    else:
        grad_index = index if dtype is None else index.clone()
    samples = input.shape[0] if input.dim() >= 2 else 1
    out = _EmbeddingRows.apply(weight, index, grad_index, 0.0, samples)
    return out.reshape(*input.shape, weight.shape[1])


__all__ = ["embedding"]
