"""The batch order (docs/order.md, "The batch order"; docs/distributed.md).

* Each batch reduction against an MPFR (gmpy2) emulation of the documented
  tree: per-sample partials in the op's own order, then the fixed binary tree
  over the global sample positions.
* One training run gives the same fingerprints with the full batch, uneven
  micro-batches, 2 and 3 gloo ranks on localhost, ranks x micro-batches, and
  after a resume on another world size: a CNN with BatchNorm and dropout and a
  transformer encoder with dropout, several Adam steps each.
* A split that cannot be supported raises an error naming the constraint.
"""

import gc
import os
import tempfile
import weakref

import gmpy2
import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as multiprocessing

import softrep
import softrep.nn.functional as F
from softrep import nn as snn
from softrep.distributed import (DistributedDataParallel, DistributedSampler, GradientAccumulator, load_checkpoint,
                                 save_checkpoint)
from softrep.ops import batchtree
from softrep.tools.fingerprint import fingerprint

from golden import normal_tensor
import references
from references import identical_bits

# --------------------------------------------------------------------------- the MPFR emulation

CTX = gmpy2.ieee(32)


def mp(x):
    return gmpy2.mpfr(float(x))


def add(a, b):
    with gmpy2.context(CTX):
        return a + b


def fma(a, b, c):
    with gmpy2.context(CTX):
        return gmpy2.fma(a, b, c)


def mul(a, b):
    with gmpy2.context(CTX):
        return a * b


def div(a, b):
    with gmpy2.context(CTX):
        return a / b


def tree(values, n=None):
    """The batch tree of docs/order.md written from its definition: node (L, j)
    covers [j 2^L, (j+1) 2^L) of [0, n); left + right, or the left child alone."""
    n = len(values) if n is None else n

    def node(level, j):
        if level == 0:
            return values[j]
        left, right = node(level - 1, 2 * j), None
        if (2 * j + 1) << (level - 1) < n:
            right = node(level - 1, 2 * j + 1)
        return left if right is None else add(left, right)

    return node(batchtree.levels(n), 0)


def documented_sum(terms):
    """softrep.sum's order, in MPFR."""
    return references.documented_sum(terms, add=add)


def check(got, want):
    got = got.detach().reshape(-1).numpy()
    want = np.array([np.float32(float(w)) for w in np.asarray(want, dtype=object).reshape(-1)], dtype=np.float32)
    for a, b in zip(got, want):
        assert identical_bits(a, b), (a, b)


# --------------------------------------------------------------------------- each reduction vs MPFR


@pytest.mark.parametrize("samples", [1, 5, 7])
def test_linear_grads_are_the_tree(samples):
    x = normal_tensor(1, (samples, 3, 4)).requires_grad_()
    w = normal_tensor(2, (2, 4)).requires_grad_()
    b = normal_tensor(3, (2,)).requires_grad_()
    g = normal_tensor(4, (samples, 3, 2))
    gw, gb = torch.autograd.grad(softrep.linear(x, w, b), (w, b), g)
    X, G = x.detach().numpy(), g.numpy()
    want_w = [[tree([_chain(G[s, :, o], X[s, :, i]) for s in range(samples)]) for i in range(4)] for o in range(2)]
    want_b = [tree([documented_sum([mp(v) for v in G[s, :, o]]) for s in range(samples)]) for o in range(2)]
    check(gw, want_w)
    check(gb, want_b)


def _chain(a, b):
    acc = mp(0.0)
    for u, v in zip(a, b):
        acc = fma(mp(u), mp(v), acc)
    return acc


def test_linear_on_rows_has_one_row_per_sample():
    x = normal_tensor(5, (6, 3)).requires_grad_()
    w = normal_tensor(6, (2, 3)).requires_grad_()
    g = normal_tensor(7, (6, 2))
    gw, = torch.autograd.grad(softrep.linear(x, w), (w,), g)
    X, G = x.detach().numpy(), g.numpy()
    check(gw, [[tree([fma(mp(G[s, o]), mp(X[s, i]), mp(0.0)) for s in range(6)]) for i in range(3)]
               for o in range(2)])


def test_conv2d_grads_are_the_tree():
    n, cin, cout, hw = 3, 2, 2, 4
    x = normal_tensor(8, (n, cin, hw, hw)).requires_grad_()
    w = normal_tensor(9, (cout, cin, 3, 3)).requires_grad_()
    b = normal_tensor(10, (cout,)).requires_grad_()
    g = normal_tensor(11, (n, cout, hw, hw))
    gw, gb = torch.autograd.grad(F.conv2d(x, w, b, padding=1), (w, b), g)
    xp = np.pad(x.detach().numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)))
    G = g.numpy()
    want_w = np.empty((cout, cin, 3, 3), dtype=object)
    for co in range(cout):
        for c in range(cin):
            for kh in range(3):
                for kw in range(3):
                    per = []
                    for s in range(n):
                        acc = mp(0.0)
                        for oh in range(hw):
                            for ow in range(hw):
                                acc = fma(mp(G[s, co, oh, ow]), mp(xp[s, c, oh + kh, ow + kw]), acc)
                        per.append(acc)
                    want_w[co, c, kh, kw] = tree(per)
    check(gw, want_w)
    check(gb, [tree([documented_sum([mp(v) for v in G[s, co].reshape(-1)]) for s in range(n)]) for co in range(cout)])


def test_embedding_grad_is_the_tree():
    idx = torch.tensor([[1, 3, 1, 0], [2, 2, 1, 4], [3, 1, 1, 1]])
    w = normal_tensor(12, (5, 2)).requires_grad_()
    g = normal_tensor(13, (3, 4, 2))
    gw, = torch.autograd.grad(F.embedding(idx, w), (w,), g)
    G = g.numpy()
    want = np.empty((5, 2), dtype=object)
    for r in range(5):
        for d in range(2):
            per = []
            for s in range(3):
                terms = [mp(G[s, t, d]) for t in range(4) if int(idx[s, t]) == r]
                per.append(documented_sum(terms) if terms else mp(0.0))
            want[r, d] = tree(per)
    check(gw, want)


def test_layer_norm_weight_grad_is_the_tree():
    x = normal_tensor(14, (5, 3, 6))
    w = normal_tensor(15, (6,)).requires_grad_()
    b = normal_tensor(16, (6,)).requires_grad_()
    g = normal_tensor(17, (5, 3, 6))
    gw, gb = torch.autograd.grad(F.layer_norm(x, (6,), w, b), (w, b), g)
    xhat = F.layer_norm(x, (6,)).numpy()
    G = g.numpy()
    check(gw, [tree([documented_sum([mul(mp(G[s, t, e]), mp(xhat[s, t, e])) for t in range(3)])
                     for s in range(5)]) for e in range(6)])
    check(gb, [tree([documented_sum([mp(G[s, t, e]) for t in range(3)]) for s in range(5)]) for e in range(6)])


def test_batch_norm_statistics_are_the_tree():
    x = normal_tensor(18, (5, 2, 3, 3))
    rm, rv = torch.zeros(2), torch.ones(2)
    F.batch_norm(x, rm, rv, training=True, momentum=1.0)  # momentum 1: the running stats are the batch's
    X = x.numpy()
    count = mp(5 * 9)
    means = [div(tree([documented_sum([mp(v) for v in X[s, c].reshape(-1)]) for s in range(5)]), count)
             for c in range(2)]
    check(rm, means)
    ss = []
    for c in range(2):
        m = np.float32(float(means[c]))
        per = []
        for s in range(5):
            d = [np.float32(v) - m for v in X[s, c].reshape(-1)]  # numpy float32 subtraction: IEEE, nearest
            per.append(documented_sum([mul(mp(v), mp(v)) for v in d]))
        ss.append(div(tree(per), mp(5 * 9 - 1)))
    check(rv, ss)


def test_loss_mean_is_the_tree():
    a, b = normal_tensor(19, (7, 3)), normal_tensor(20, (7, 3))
    got = F.mse_loss(a, b)
    d = (a - b).numpy()  # torch float32 subtraction of two float32: IEEE, nearest
    want = div(tree([documented_sum([mul(mp(v), mp(v)) for v in d[s]]) for s in range(7)]), mp(21))
    check(got, [want])


def test_slices_make_the_nodes_of_the_whole_tree():
    rng = np.random.default_rng(3)
    for total in (1, 2, 5, 13, 64, 70):
        values = normal_tensor(total, (total, 2))
        whole = batchtree.tree_sum(values)
        check(whole, [tree([mp(v) for v in values[:, k].numpy()]) for k in range(2)])
        for _ in range(4):
            cuts = sorted(set(rng.integers(1, total, size=3).tolist())) if total > 1 else []
            bounds = [0] + cuts + [total]
            nodes = []
            for lo, hi in zip(bounds, bounds[1:]):
                nodes += batchtree.slice_nodes(values[lo:hi], lo, total)
            rng.shuffle(nodes)
            assert torch.equal(batchtree.merge_nodes(nodes, total).view(torch.int32), whole.view(torch.int32))


# --------------------------------------------------------------------------- the models


def cnn(generator):
    return torch.nn.Sequential(
        snn.Conv2d(1, 4, 3, padding=1, generator=generator), snn.BatchNorm2d(4), snn.ReLU(), snn.MaxPool2d(2),
        torch.nn.Flatten(), snn.Linear(64, 16, generator=generator), snn.ReLU(),
        snn.Dropout(0.25, generator=generator), snn.Linear(16, 10, generator=generator))


def cnn_without_batch_norm(generator):
    return torch.nn.Sequential(
        snn.Conv2d(1, 4, 3, padding=1, generator=generator), snn.ReLU(), snn.MaxPool2d(2),
        torch.nn.Flatten(), snn.Linear(64, 16, generator=generator), snn.ReLU(),
        snn.Dropout(0.25, generator=generator), snn.Linear(16, 10, generator=generator))


class Encoder(torch.nn.Module):
    """Token and position embeddings, a transformer encoder layer (seq-first, as
    torch's default), a linear head; output (N, classes, L) for cross_entropy."""

    def __init__(self, generator):
        super().__init__()
        self.tokens = snn.Embedding(12, 16, generator=generator)
        self.positions = snn.Embedding(8, 16, generator=generator)
        self.encoder = snn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, generator=generator)
        self.head = snn.Linear(16, 12, generator=generator)

    def forward(self, t):
        pos = torch.arange(t.shape[1]).expand(t.shape[0], -1)
        h = softrep.add(self.tokens(t), self.positions(pos))
        h = self.encoder(h.transpose(0, 1)).transpose(0, 1)
        return self.head(h).transpose(1, 2)


MODELS = {"cnn": cnn, "cnn-no-bn": cnn_without_batch_norm, "encoder": Encoder}
BATCH, STEPS = 64, 3


def dataset(kind):
    g = softrep.Generator(5)
    n = 96
    if kind.startswith("cnn"):
        return softrep.rand(n, 1, 8, 8, generator=g), (softrep.rand(n, generator=g) * 10).long()
    return (softrep.rand(n, 8, generator=g) * 12).long(), (softrep.rand(n, 8, generator=g) * 12).long()


def run(kind, world=1, rank=0, micro=None, steps=STEPS, resume=None, save=None):
    """Train `steps` Adam steps from the step `resume` names (a checkpoint) or
    from scratch; `micro`: the micro-batch sizes of this rank's slice
    (fractions of it: sizes are rounded so that they add up)."""
    torch.manual_seed(0)
    model = MODELS[kind](softrep.Generator(1))
    x, y = dataset(kind)
    loss_fn = snn.CrossEntropyLoss()
    if world > 1:
        model = DistributedDataParallel(model)
    optimizer = softrep.optim.Adam(model.parameters(), lr=1e-2)
    sampler = DistributedSampler(x, num_replicas=world, rank=rank, seed=7, batch_size=BATCH)
    if resume is not None:
        load_checkpoint(resume, model, optimizer, sampler)
    accumulator = GradientAccumulator(model) if world == 1 and micro else None
    losses = []
    for _ in range(steps):
        try:
            part = next(iter(sampler))
        except StopIteration:
            sampler.set_epoch(sampler.epoch)
            part = next(iter(sampler))
        xs, ys = x[part], y[part]
        optimizer.zero_grad()
        if micro is None:
            loss = loss_fn(model(xs), ys)
            loss.backward()
            losses.append(loss.item() if world == 1 else model.loss.item())
        else:
            sizes = _sizes(len(part), micro)
            context = model.accumulate(len(part)) if world > 1 else accumulator.step(len(part))
            with context as step:
                at = 0
                for n in sizes:
                    loss_fn(model(xs[at:at + n]), ys[at:at + n]).backward()
                    at += n
            losses.append(step.loss.item())
        optimizer.step()
    if save is not None and rank == 0:
        save_checkpoint(save, model, optimizer, sampler)
    return fingerprint(model.module if world > 1 else model), losses


def _sizes(total, fractions):
    cuts = [round(total * f) for f in np.cumsum(fractions)[:-1]]
    bounds = [0] + cuts + [total]
    return [b - a for a, b in zip(bounds, bounds[1:]) if b > a]


UNEVEN = (5 / 64, 27 / 64, 32 / 64)  # 64 = 5 + 27 + 32


def _worker(rank, world, path, jobs, results):
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world)
    group = weakref.ref(dist.group.WORLD)
    try:
        out = []
        for kind, micro, steps, resume, save in jobs:
            out.append(run(kind, world, rank, micro, steps, resume, save))
        if rank == 0:
            torch.save(out, results)
    finally:
        dist.destroy_process_group()
    gc.collect()
    # the group's worker threads must end here: alive at interpreter shutdown,
    # they abort the process when they release the last collective of a
    # backward pass (softrep/distributed/__init__.py)
    assert group() is None, "destroy_process_group left the default process group alive"


def distributed(world, jobs):
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "results.pt")
        multiprocessing.spawn(_worker, args=(world, os.path.join(tmp, "init"), jobs, results), nprocs=world)
        return torch.load(results)


@pytest.fixture(scope="module")
def reference():
    return {kind: run(kind) for kind in ("cnn", "encoder", "cnn-no-bn")}


def test_micro_batches_equal_the_full_batch(reference):
    assert run("encoder", micro=UNEVEN) == reference["encoder"]
    assert run("cnn-no-bn", micro=UNEVEN) == reference["cnn-no-bn"]
    assert run("cnn-no-bn", micro=(1 / 64,) * 64) == reference["cnn-no-bn"]


def test_ranks_and_micro_batches_equal_one_process(reference, tmp_path):
    checkpoint = str(tmp_path / "step2.pt")
    two = distributed(2, [("cnn", None, STEPS, None, None), ("encoder", None, STEPS, None, None),
                          ("encoder", (10 / 32, 22 / 32), STEPS, None, None),
                          ("cnn", None, 2, None, checkpoint)])
    assert two[0] == reference["cnn"]
    assert two[1] == reference["encoder"]
    assert two[2] == reference["encoder"]
    # resume the 2-rank run at step 2 on 3 ranks: the bits of never stopping
    three = distributed(3, [("cnn", None, STEPS, None, None), ("encoder", None, STEPS, None, None),
                            ("cnn", None, STEPS - 2, checkpoint, None)])
    assert three[0] == reference["cnn"]
    assert three[1] == reference["encoder"]
    assert three[2][0] == reference["cnn"][0]
    assert three[2][1] == reference["cnn"][1][2:]


def test_resume_in_one_process_on_micro_batches(reference, tmp_path):
    checkpoint = str(tmp_path / "step1.pt")
    run("encoder", steps=1, save=checkpoint)
    fp, losses = run("encoder", micro=UNEVEN, steps=STEPS - 1, resume=checkpoint)
    assert fp == reference["encoder"][0]
    assert losses == reference["encoder"][1][1:]


# --------------------------------------------------------------------------- what cannot be split


def test_batch_norm_statistics_refuse_micro_batches():
    model = cnn(softrep.Generator(1))
    x, y = dataset("cnn")
    with pytest.raises(ValueError, match="batch statistics need every sample of the global batch"):
        with GradientAccumulator(model).step(8) as _:
            model(x[:3])


def test_slices_must_add_up_to_the_batch():
    model = cnn_without_batch_norm(softrep.Generator(1))
    x, y = dataset("cnn")
    accumulator = GradientAccumulator(model)
    with pytest.raises(ValueError, match="the slices must add up to the batch size"):
        with accumulator.step(8):
            F.cross_entropy(model(x[:3]), y[:3]).backward()
    with pytest.raises(ValueError, match="past the end"):
        with accumulator.step(4):
            model(x[:3])
            model(x[3:8])


def test_weighted_mean_refuses_a_split():
    model = cnn_without_batch_norm(softrep.Generator(1))
    x, y = dataset("cnn")
    with pytest.raises(ValueError, match="class weights or ignored targets"):
        with GradientAccumulator(model).step(8):
            F.cross_entropy(model(x[:8]), y[:8], weight=torch.ones(10)).backward()


def test_a_gradient_outside_the_batch_order_is_refused():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = snn.Linear(4, 2, generator=softrep.Generator(1))
            self.scale = torch.nn.Parameter(torch.ones(2))

        def forward(self, x):
            return softrep.mul(self.linear(x), self.scale)  # a plain broadcast: softrep.sum over the batch

    model = Scaled()
    with pytest.raises(ValueError, match="not a batch reduction of softrep's batch order"):
        with GradientAccumulator(model).step(4):
            F.mse_loss(model(torch.ones(4, 4)), torch.zeros(4, 2)).backward()


def test_dim_0_must_hold_the_slice():
    w = torch.ones(2, 3, requires_grad=True)
    with batchtree.active(batchtree.BatchSlice(8, 0, 4, sink=lambda *a: None)):
        with pytest.raises(ValueError, match="does not hold the 4 samples of the current slice"):
            softrep.linear(torch.ones(5, 3), w)


# --------------------------------------------------------------------------- CUDA simulator


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = normal_tensor(21, (5, 2, 4, 4))
    w = normal_tensor(22, (3, 2, 3, 3))
    g = normal_tensor(23, (5, 3, 4, 4))

    def both():
        wr = w.clone().requires_grad_()
        gw, = torch.autograd.grad(F.conv2d(x, wr, padding=1), (wr,), g)
        lw = normal_tensor(24, (3, 16)).requires_grad_()
        lg, = torch.autograd.grad(softrep.linear(x.reshape(5, 2, 16), lw), (lw,), normal_tensor(25, (5, 2, 3)))
        with batchtree.active(batchtree.BatchSlice(9, 4, 5)):
            mask = F.dropout(x, 0.5, generator=softrep.Generator(3))
        rm, rv = torch.zeros(2), torch.ones(2)
        F.batch_norm(x, rm, rv, training=True)
        return [gw, lg, mask, rm, rv]

    backend("cuda")
    sim = both()
    backend("cpu")
    for a, b in zip(sim, both()):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_dropout_of_a_slice_is_the_slice_of_the_mask():
    x = normal_tensor(26, (9, 3, 2))
    whole = F.dropout(x, 0.5, generator=softrep.Generator(3))
    with batchtree.active(batchtree.BatchSlice(9, 4, 5)):
        part = F.dropout(x[4:], 0.5, generator=softrep.Generator(3))
    assert torch.equal(part.view(torch.int32), whole[4:].view(torch.int32))
