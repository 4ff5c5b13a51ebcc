"""Weight gradients whose per-sample chains stream into the batch tree
(softrep.ops.products.tree_product) have the bits of the materialised form:
the batched product of the per-sample partials, then the tree's additions
level by level (softrep.ops.batchtree.slice_nodes).

The MPFR reference of the tree for linear and conv2d is in tests/test_split.py;
it now runs the streaming kernel.  Here the two forms are compared directly,
on shapes the MPFR tests cannot afford: batches that are not powers of two,
slices of a larger batch, uneven micro-batches, infinities and NaNs.
"""

import pytest
import torch

import softrep
import softrep.nn.functional as F
from softrep import nn as snn
from softrep.distributed import GradientAccumulator
from softrep.ops import batchtree, conv, products


def bits(t):
    t = t.detach().contiguous()
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int64)


def assert_same_bits(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    bad = (bits(got) != bits(want)).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} elements differ, first at {bad[0].tolist()}"


def operands(seed, samples, k, m, n, dtype, specials=True):
    g = torch.Generator().manual_seed(seed)
    # magnitudes over many binades, so that the order of the additions shows in the bits
    at = torch.randn(samples, 1, k, m, generator=g, dtype=dtype) * torch.exp(
        3 * torch.randn(samples, 1, k, m, generator=g, dtype=dtype))
    b = torch.randn(samples, 1, k, n, generator=g, dtype=dtype)
    if specials and samples > 3 and k > 0 and m > 1 and n > 2:
        at[1, 0, 0, 0], at[2, 0, 0, 0] = float("inf"), float("-inf")  # inf - inf in a tree node
        b[3, 0, 0, 2] = float("nan")
        at[0, 0, 0, 1] = -0.0
    return at, b


def materialised_nodes(at, b, start, total):
    with torch.no_grad():
        partials = products.bmm(at[:, 0].transpose(1, 2).contiguous(), b[:, 0].contiguous())
        return batchtree.slice_nodes(partials, start, total)


CASES = [  # samples, k, m, n
    (1, 1, 1, 1), (2, 3, 5, 4), (3, 5, 7, 9), (7, 4, 17, 33), (13, 3, 30, 40), (64, 2, 15, 70), (37, 0, 3, 4),
    # one row per sample (k = 1): nodes of eight in registers, either operand along the lanes
    (8, 1, 5, 40), (13, 1, 40, 6), (64, 1, 15, 70), (100, 1, 33, 17), (9, 1, 1, 9), (6, 1, 4, 3),
    (11, 1, 150, 130)]  # both rows long enough for the lanes: the output's own rows along them


@pytest.mark.parametrize("launch", ["serial", "parallel"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("samples,k,m,n", CASES)
def test_tree_product_is_the_materialised_tree(samples, k, m, n, dtype, launch, monkeypatch):
    """On the calling thread (small launches) and in parallel: the bits of the
    materialised tree.  Samples of one row (k = 1) take their own schedule at
    any size; in parallel its output rows are shared among the threads."""
    from softrep.cpu import linalg as cpu_linalg

    if launch == "parallel":
        monkeypatch.setattr(cpu_linalg, "SERIAL_FMAS", -1)
        monkeypatch.setattr(cpu_linalg, "SPLIT_FMAS", 0)
    at, b = operands(samples * 100 + m, samples, k, m, n, dtype)
    for start, total in [(0, samples), (3, samples + 5), (samples % 4, samples + 11)]:
        want = materialised_nodes(at, b, start, total)
        ranges = batchtree.node_ranges(start, samples, total)
        assert [(level, j) for level, j, _ in want] == [(level, j) for level, j, _, _ in ranges]
        got = products.tree_product(at, b, [(first, count) for _, _, first, count in ranges])
        assert got.shape == (len(want), 1, m, n)
        for (_, _, value), node in zip(want, got):
            assert_same_bits(node[0], value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_row_samples_start_their_chains_from_plus_zero(dtype, monkeypatch):
    """A sample's chain of one step is fma(a, b, +0): +0 where a * b is -0
    (a plain product would give -0), in a node of eight, in a shorter run
    and in a lone sample, whichever operand runs along the lanes; and the
    one-row schedule does run."""
    from softrep.cpu import linalg as cpu_linalg
    calls = []
    outer = cpu_linalg.outer_tree
    monkeypatch.setattr(cpu_linalg, "outer_tree", lambda *a: (calls.append(a[-3:]), outer(*a))[1])
    for samples, m, n in [(8, 2, 3), (5, 2, 3), (1, 3, 2), (16, 3, 2)]:
        at = torch.full((samples, 1, 1, m), -0.0, dtype=dtype)
        b = torch.ones(samples, 1, 1, n, dtype=dtype)
        got = products.tree_product(at, b, [(0, samples)])
        assert torch.equal(bits(got), bits(torch.zeros_like(got)))
        assert torch.equal(bits(got), bits(materialised_nodes(at, b, 0, samples)[0][2][None, None]))
    assert calls == [(2, 3, 8), (2, 3, 5), (3, 2, 1), (3, 2, 16)]


@pytest.mark.parametrize("threads", [1, 64])
def test_tree_product_split_into_children_keeps_the_bits(threads, monkeypatch):
    """With many threads to feed, the CPU launcher computes each node as its
    two children in the batch tree and joins them; with one thread it computes
    the node whole.  Both give the materialised tree's bits, for node sizes
    that are and are not powers of two."""
    from types import SimpleNamespace

    from softrep.cpu import linalg as cpu_linalg

    # the thread count the launcher's schedule reads, and nothing else's
    monkeypatch.setattr(cpu_linalg, "numba", SimpleNamespace(get_num_threads=lambda: threads))
    monkeypatch.setattr(cpu_linalg, "TREE_SPLIT_MACS", 0)  # split however small the launch
    monkeypatch.setattr(cpu_linalg, "SERIAL_FMAS", -1)  # the parallel launch, which may split
    samples, k, m, n = 23, 3, 5, 9
    at, b = operands(7, samples, k, m, n, torch.float32)
    for start, total in [(0, samples), (5, samples + 9)]:
        want = materialised_nodes(at, b, start, total)
        ranges = batchtree.node_ranges(start, samples, total)
        got = products.tree_product(at, b, [(first, count) for _, _, first, count in ranges])
        for (_, _, value), node in zip(want, got):
            assert_same_bits(node[0], value)


def test_tree_product_groups_are_independent():
    at, b = operands(5, 6, 4, 3, 5, torch.float32, specials=False)
    at2, b2 = operands(6, 6, 4, 3, 5, torch.float32, specials=False)
    got = products.tree_product(torch.cat([at, at2], 1), torch.cat([b, b2], 1), [(0, 6), (2, 3)])
    for group, (x, y) in enumerate([(at, b), (at2, b2)]):
        assert_same_bits(got[:, group], products.tree_product(x, y, [(0, 6), (2, 3)])[:, 0])


def test_tree_product_takes_transposed_views():
    """The backward's operands are transposed views (the weight gradients of
    linear and conv2d); the CPU launcher copies them into its padded blocks
    from that layout: the bits of the contiguous operands."""
    at, b = operands(7, 9, 6, 11, 13, torch.float32)
    ranges = [(0, 9), (4, 5), (8, 1)]
    want = products.tree_product(at, b, ranges)
    at_view = at.transpose(2, 3).contiguous().transpose(2, 3)
    b_view = b.transpose(2, 3).contiguous().transpose(2, 3)
    assert not at_view.is_contiguous() and not b_view.is_contiguous()
    assert_same_bits(products.tree_product(at_view, b_view, ranges), want)


def _grads(fn, params, streamed, monkeypatch):
    if not streamed:  # the materialised form: per-sample partials, then slice_nodes
        monkeypatch.setattr(products, "streams_tree", lambda *t: False)
        monkeypatch.setattr(conv, "streams_tree", lambda *t: False)
    try:
        return torch.autograd.grad(fn(), params)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("shape", [(11, 3, 6), (11, 6), (6,)])
def test_linear_weight_grad_is_unchanged(shape, monkeypatch):
    x = torch.randn(*shape, dtype=torch.float32).mul(torch.exp(2 * torch.randn(*shape))).requires_grad_()
    w = torch.randn(5, 6).requires_grad_()
    b = torch.randn(5).requires_grad_()
    g = torch.randn(*shape[:-1], 5)

    def fn():
        return (softrep.linear(x, w, b) * g).sum()

    for got, want in zip(_grads(fn, (w, b), True, monkeypatch), _grads(fn, (w, b), False, monkeypatch)):
        assert_same_bits(got, want)


@pytest.mark.parametrize("groups,stride,padding", [(1, 1, 1), (2, 2, 0)])
def test_conv2d_weight_grad_is_unchanged(groups, stride, padding, monkeypatch):
    x = torch.randn(7, 4, 6, 5).mul(torch.exp(2 * torch.randn(7, 4, 6, 5))).requires_grad_()
    w = torch.randn(6, 4 // groups, 3, 2).requires_grad_()
    out_shape = F.conv2d(x, w, None, stride=stride, padding=padding, groups=groups).shape
    g = torch.randn(out_shape)

    def fn():
        return (F.conv2d(x, w, None, stride=stride, padding=padding, groups=groups) * g).sum()

    (got,), (want,) = _grads(fn, (w,), True, monkeypatch), _grads(fn, (w,), False, monkeypatch)
    assert_same_bits(got, want)


def test_second_derivatives_keep_the_materialised_form():
    """With create_graph the weight's gradient is itself differentiable."""
    x = torch.randn(5, 3, dtype=torch.float64).requires_grad_()
    w = torch.randn(2, 3, dtype=torch.float64).requires_grad_()
    gw, = torch.autograd.grad(softrep.linear(x, w).sum(), (w,), create_graph=True)
    gx, = torch.autograd.grad(gw.sum(), (x,))
    assert_same_bits(gx, torch.ones(5, 3, dtype=torch.float64).mul(2))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = softrep.Generator(3)
        self.conv = snn.Conv2d(2, 3, 3, padding=1, generator=g)
        self.fc = snn.Linear(3 * 5 * 5, 4, generator=g)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def test_uneven_micro_batches_equal_the_materialised_full_batch(monkeypatch):
    x = softrep.rand(23, 2, 5, 5, generator=softrep.Generator(4))
    y = (softrep.rand(23, generator=softrep.Generator(5)) * 4).long()
    loss_fn = snn.CrossEntropyLoss()

    monkeypatch.setattr(products, "streams_tree", lambda *t: False)
    monkeypatch.setattr(conv, "streams_tree", lambda *t: False)
    model = Net()
    loss_fn(model(x), y).backward()
    want = [p.grad.clone() for p in model.parameters()]
    monkeypatch.undo()

    model = Net()
    with GradientAccumulator(model).step(23):
        at = 0
        for n in (3, 9, 1, 10):
            loss_fn(model(x[at:at + n]), y[at:at + n]).backward()
            at += n
    for p, w in zip(model.parameters(), want):
        assert_same_bits(p.grad, w)


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_simulator_tree_product_is_the_materialised_tree(dtype):
    samples, k, m, n = 7, 3, 3, 5
    at, b = operands(9, samples, k, m, n, dtype)
    for start, total in [(0, samples), (3, 12)]:
        want = materialised_nodes(at, b, start, total)
        ranges = batchtree.node_ranges(start, samples, total)
        got = products.tree_product(at, b, [(first, count) for _, _, first, count in ranges])
        for (_, _, value), node in zip(want, got):
            assert_same_bits(node[0], value)


# --------------------------------------------------------------------------- rows: one launch per slice

ROW_CASES = [(1, 3), (2, 5), (7, 600), (13, 1030), (37, 1), (64, 64), (5, 0)]  # samples, elements per partial


def row_partials(seed, samples, width, dtype):
    g = torch.Generator().manual_seed(seed)
    p = torch.randn(samples, width, generator=g, dtype=dtype) * torch.exp(
        3 * torch.randn(samples, width, generator=g, dtype=dtype))
    if samples > 3 and width > 2:
        p[1, 0], p[2, 0] = float("inf"), float("-inf")  # inf - inf in a tree node
        p[3, 2] = float("nan")
        p[0, 1] = -0.0
    return p


def level_by_level(p, start, total):
    """slice_nodes as autograd sees it: softrep adds, one launch per level."""
    nodes = batchtree.slice_nodes(p.clone().requires_grad_(), start, total)
    return [(level, j, value.detach()) for level, j, value in nodes]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("samples,width", ROW_CASES)
def test_tree_nodes_are_the_level_by_level_tree(samples, width, dtype):
    p = row_partials(samples * 10 + width, samples, width, dtype)
    for start, total in [(0, samples), (3, samples + 5), (samples % 4, samples + 11)]:
        want = level_by_level(p, start, total)
        got = batchtree.slice_nodes(p, start, total)  # nothing to record: one launch
        assert [(level, j) for level, j, _ in got] == [(level, j) for level, j, _ in want]
        for (_, _, value), (_, _, expected) in zip(got, want):
            assert_same_bits(value, expected)


def test_tree_nodes_keep_a_single_row_as_it_is():
    nan = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)  # a NaN that is not canonical
    p = torch.cat([nan, torch.tensor([1.0, 2.0])]).reshape(3, 1)
    got = batchtree.slice_nodes(p, 1, 4)  # nodes (0, 1), then (1, 1) over positions 2 and 3
    assert [(level, j) for level, j, _ in got] == [(0, 1), (1, 1)]
    assert_same_bits(got[0][2], p[0])
    assert_same_bits(got[1][2], torch.tensor([3.0]))


def test_tree_nodes_shapes_of_partials():
    p = row_partials(3, 6, 12, torch.float32).reshape(6, 3, 4)
    assert_same_bits(batchtree.tree_sum(p), level_by_level(p, 0, 6)[0][2])
    q = p[:, 0, 0]  # 1-D partials: one number per sample
    assert_same_bits(batchtree.tree_sum(q), level_by_level(q.contiguous(), 0, 6)[0][2])


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_simulator_tree_nodes_are_the_level_by_level_tree(dtype):
    p = row_partials(11, 7, 5, dtype)
    for start, total in [(0, 7), (3, 12)]:
        want = level_by_level(p, start, total)
        got = batchtree.slice_nodes(p, start, total)
        for (_, _, value), (_, _, expected) in zip(got, want):
            assert_same_bits(value, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("samples,rows,width", [(1, 1, 5), (1, 7, 3), (2, 1, 4), (5, 3, 17), (16, 32, 64),
                                                (3, 128, 9), (4, 129, 6), (7, 300, 5), (6, 0, 4)])
def test_row_sums_into_the_tree_are_the_sum_then_the_tree(samples, rows, width, dtype, monkeypatch):
    """linear's bias gradient: the serial kernel that sums each sample's rows
    and adds the samples along the batch tree gives the bits of the documented
    sum over dim 1 followed by `param_grad`'s tree -- blocks of 128 rows,
    signed zeros, inf - inf and NaN payloads included (a single row, and a
    single sample, are passed on as they are)."""
    from softrep.cpu import reduce as cpu_reduce

    g = torch.Generator().manual_seed(samples * 1000 + rows * 10 + width)
    x = torch.randn(samples, rows, width, generator=g, dtype=dtype) * torch.exp(
        4 * torch.randn(samples, rows, width, generator=g, dtype=dtype))
    if rows:
        x[0, 0, 0] = -0.0
        if width > 2:
            x[:, :, 1] = -0.0
        if width > 3:
            x[0, 0, 2], x[-1, -1, 2] = float("inf"), float("-inf")
        if width > 4:
            payload = torch.tensor([0x7FC00001 if dtype == torch.float32 else 0x7FF8000000000001],
                                   dtype=torch.int32 if dtype == torch.float32 else torch.int64)
            x[0, -1, 3] = payload.view(dtype)[0]
    param = torch.zeros(width, dtype=dtype)
    calls = []
    original = cpu_reduce.serial_batch_row_sums
    monkeypatch.setattr(cpu_reduce, "serial_batch_row_sums", lambda *a: (calls.append(a[3:5]), original(*a))[1])
    got = batchtree.param_grad_of_row_sums("linear", "bias", param, x)
    # rows: one fused call; no rows: the sums (+0) then the tree, whose small
    # launch is the same kernel over one row per sample (summation.tree_nodes)
    assert calls == [(samples, rows if rows else 1)]
    monkeypatch.setattr(cpu_reduce, "SERIAL_ROWS_MAX", -1)
    per = x[:, 0] if rows == 1 else softrep.sum(x, 1)
    assert_same_bits(got, batchtree.param_grad("linear", "bias", param, per))
    assert_same_bits(got, batchtree.param_grad_of_row_sums("linear", "bias", param, x))
