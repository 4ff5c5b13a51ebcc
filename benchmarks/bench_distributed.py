"""Training-step time: the demo's LeNet, a small transformer encoder and
bench_training.py's ResNet-style CNN, and softrep's DistributedDataParallel
against torch's on gloo.

    python benchmarks/bench_distributed.py [--repeat 5] [--ddp] [--order-cost]

Prints the best and median step time (forward, backward, Adam) after two
untimed steps.  Run it on two source trees (PYTHONPATH) in one sitting to
compare orders; with --ddp it also times 2 gloo ranks on localhost, softrep's
wrapper against torch.nn.parallel.DistributedDataParallel on the same
softrep model (torch's all-reduce does not give softrep's bits; this is the
time only).

--order-cost isolates what the batch order costs inside one source tree: for
the weight and bias gradient of every linear and conv layer of the models
(at their shapes), the batch-order gradient (the layer's backward) against
the same products as one chain over all rows (softrep.mm of the transposed
gradient and the input or its im2col, softrep.sum over the rows), and for
the CNN's BatchNorm layers their six per-channel batch sums as per-sample
sums and the tree against one sum; median of `--repeat` runs each; it prints
the step time with the chain estimated as the step minus the difference.
"""

import argparse
import os
import statistics
import tempfile
import time

import torch

import softrep
from softrep import nn as snn
from softrep.ops import batchtree


def lenet():
    from softrep.tools.demo import lenet as demo_lenet

    return demo_lenet(softrep.Generator(1))


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = softrep.Generator(1)
        self.tokens = snn.Embedding(64, 64, generator=g)
        self.encoder = snn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True, generator=g)
        self.head = snn.Linear(64, 64, generator=g)

    def forward(self, t):
        return self.head(self.encoder(self.tokens(t))).transpose(1, 2)


def resnet_cnn():
    """bench_training.py's ResNet-style CNN with BatchNorm, from softrep.nn."""
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_training

    return bench_training.cnn(bench_training.Namespace("softrep"))


def data(kind, n=64):
    g = softrep.Generator(5)
    if kind == "lenet":
        return softrep.rand(n, 1, 8, 8, generator=g), (softrep.rand(n, generator=g) * 10).long()
    if kind == "cnn":
        return softrep.rand(32, 3, 32, 32, generator=g), (softrep.rand(32, generator=g) * 10).long()
    return (softrep.rand(n, 32, generator=g) * 64).long(), (softrep.rand(n, 32, generator=g) * 64).long()


def step_times(model, x, y, repeat, wrap=None):
    model = wrap(model) if wrap else model
    optimizer = softrep.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = snn.CrossEntropyLoss()
    times = []
    for i in range(repeat + 2):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        if i >= 2:
            times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def _rank(rank, path, repeat, out):
    import torch.distributed as dist

    from softrep.distributed import DistributedDataParallel

    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=2)
    x, y = data("lenet")
    x, y = x[32 * rank:32 * (rank + 1)], y[32 * rank:32 * (rank + 1)]
    result = {
        "softrep DDP": step_times(lenet(), x, y, repeat, DistributedDataParallel),
        "torch DDP": step_times(lenet(), x, y, repeat, torch.nn.parallel.DistributedDataParallel),
    }
    if rank == 0:
        torch.save(result, out)
    dist.destroy_process_group()


# (out_features, in_features) of the encoder's linear layers: the packed
# attention projection, the attention output, the two feed-forward layers, the head
ENCODER_LINEARS = ((192, 64), (64, 64), (128, 64), (64, 128), (64, 64))
# LeNet's (demo) layers: conv (c_out, c_in, input size) with 3x3 kernels and
# padding 1, then linear (out_features, in_features)
LENET_CONVS = ((8, 1, 8), (16, 8, 4))
LENET_LINEARS = ((64, 64), (10, 64))
# bench_training.py's ResNet-style CNN (batch 32 of 3x32x32): conv (c_out, c_in,
# input size, kernel, stride) without bias, BatchNorm (channels, size), and a
# 32 -> 10 linear head
CNN_CONVS = ((16, 3, 32, 3, 1), (16, 16, 32, 3, 1), (16, 16, 32, 3, 1), (32, 16, 32, 3, 2), (32, 32, 16, 3, 1),
             (32, 16, 32, 1, 2))
CNN_BATCH_NORMS = ((16, 32), (16, 32), (16, 32), (32, 16), (32, 16), (32, 16))


def _median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _linear_cost(out_f, in_f, rows_shape, g, repeat):
    x = softrep.rand(*rows_shape, in_f, generator=g)
    grad = softrep.rand(*rows_shape, out_f, generator=g)
    w = softrep.rand(out_f, in_f, generator=g).requires_grad_()
    b = softrep.rand(out_f, generator=g).requires_grad_()
    y = softrep.linear(x, w, b)

    def batch_order():
        w.grad = b.grad = None
        y.backward(grad, retain_graph=True)

    def one_chain():
        rows = grad.reshape(-1, out_f)
        softrep.mm(rows.t(), x.reshape(-1, in_f))
        softrep.sum(rows, 0)

    return _median_time(batch_order, repeat), _median_time(one_chain, repeat)


def _conv_cost(c_out, c_in, size, batch, g, repeat, kernel=3, stride=1, padding=1, bias=True):
    x = softrep.rand(batch, c_in, size, size, generator=g)
    w = softrep.rand(c_out, c_in, kernel, kernel, generator=g).requires_grad_()
    b = softrep.rand(c_out, generator=g).requires_grad_() if bias else None
    y = softrep.conv2d(x, w, b, stride=stride, padding=padding)
    grad = softrep.rand(*y.shape, generator=g)

    def batch_order():
        w.grad = None
        if b is not None:
            b.grad = None
        y.backward(grad, retain_graph=True)

    def one_chain():
        # the same products as one chain over all (sample, pixel) rows
        cols = torch.nn.functional.unfold(x, kernel, padding=padding, stride=stride).transpose(1, 2)
        rows = grad.permute(0, 2, 3, 1).reshape(-1, c_out)
        softrep.mm(rows.t(), cols.reshape(-1, c_in * kernel * kernel))
        if b is not None:
            softrep.sum(rows, 0)

    return _median_time(batch_order, repeat), _median_time(one_chain, repeat)


def _batch_norm_cost(channels, size, batch, g, repeat):
    """A training BatchNorm's batch reductions: the statistics (sum of x and of
    the squared deviations), the backward's two means and the affine
    gradients -- six per-channel sums, each per sample over its positions and
    then the batch tree, against one sum over (N, H, W)."""
    x = softrep.rand(batch, channels, size, size, generator=g)

    def batch_order():
        for _ in range(6):
            batchtree.tree_sum(softrep.sum(x, (2, 3)))

    def one_chain():
        for _ in range(6):
            softrep.sum(x, (0, 2, 3))

    return _median_time(batch_order, repeat), _median_time(one_chain, repeat)


def order_cost(kind, repeat, batch=64, tokens=32):
    """(time of the batch-order weight and bias gradients, time of the same
    gradients as one chain over all rows), summed over the layers of `kind`
    ("lenet" or "encoder"), in seconds."""
    g = softrep.Generator(7)
    costs = []
    if kind == "lenet":
        costs += [_conv_cost(c_out, c_in, size, batch, g, repeat) for c_out, c_in, size in LENET_CONVS]
        costs += [_linear_cost(o, i, (batch,), g, repeat) for o, i in LENET_LINEARS]
    elif kind == "cnn":
        costs += [_conv_cost(c_out, c_in, size, batch, g, repeat, kernel, stride, kernel // 2, False)
                  for c_out, c_in, size, kernel, stride in CNN_CONVS]
        costs += [_batch_norm_cost(c, size, batch, g, repeat) for c, size in CNN_BATCH_NORMS]
        costs += [_linear_cost(10, 32, (batch,), g, repeat)]
    else:
        costs += [_linear_cost(o, i, (batch, tokens), g, repeat) for o, i in ENCODER_LINEARS]
    return sum(t for t, _ in costs), sum(c for _, c in costs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--order-cost", action="store_true")
    args = parser.parse_args()
    for kind, make in (("lenet, batch 64", lenet), ("encoder, batch 64 x 32 tokens", Encoder),
                       ("cnn, batch 32", resnet_cnn)):
        name = kind.split(",")[0]
        x, y = data(name)
        best, median = step_times(make(), x, y, args.repeat)
        print(f"{kind:32} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms")
        if args.order_cost:
            tree, chain = order_cost(name, args.repeat, batch=32 if name == "cnn" else 64)
            print(f"  weight/bias gradients: batch order {tree * 1e3:.1f} ms, one chain {chain * 1e3:.1f} ms; "
                  f"step with the chain ~{(median - tree + chain) * 1e3:.1f} ms, "
                  f"order cost {median / (median - tree + chain):.2f}x")
    if args.ddp:
        import torch.multiprocessing as mp

        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.pt")
            mp.spawn(_rank, args=(os.path.join(tmp, "init"), args.repeat, out), nprocs=2)
            for name, (best, median) in torch.load(out).items():
                print(f"lenet, 2 gloo ranks, {name:12} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
