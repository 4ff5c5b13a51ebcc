"""Training-step time: the demo's LeNet and a small transformer encoder, and
softrep's DistributedDataParallel against torch's on gloo.

    python benchmarks/bench_distributed.py [--repeat 5] [--ddp] [--order-cost]

Prints the best and median step time (forward, backward, Adam) after two
untimed steps.  Run it on two source trees (PYTHONPATH) in one sitting to
compare orders; with --ddp it also times 2 gloo ranks on localhost, softrep's
wrapper against torch.nn.parallel.DistributedDataParallel on the same
softrep model (torch's all-reduce does not give softrep's bits; this is the
time only).

--order-cost isolates what the batch order costs inside one source tree: for
the weight and bias gradient of every linear and conv layer of both models
(at their shapes), the batch-order gradient (the layer's backward) against
the same products as one chain over all rows (softrep.mm of the transposed
gradient and the input or its im2col, softrep.sum over the rows), median of
`--repeat` runs each; it prints the step time with the chain estimated as
the step minus the difference.
"""

import argparse
import os
import statistics
import tempfile
import time

import torch

import softrep
from softrep import nn as snn


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


def data(kind, n=64):
    g = softrep.Generator(5)
    if kind == "lenet":
        return softrep.rand(n, 1, 8, 8, generator=g), (softrep.rand(n, generator=g) * 10).long()
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


def _conv_cost(c_out, c_in, size, batch, g, repeat):
    x = softrep.rand(batch, c_in, size, size, generator=g)
    w = softrep.rand(c_out, c_in, 3, 3, generator=g).requires_grad_()
    b = softrep.rand(c_out, generator=g).requires_grad_()
    y = softrep.conv2d(x, w, b, padding=1)
    grad = softrep.rand(*y.shape, generator=g)

    def batch_order():
        w.grad = b.grad = None
        y.backward(grad, retain_graph=True)

    def one_chain():
        # the same products as one chain over all (sample, pixel) rows
        cols = torch.nn.functional.unfold(x, 3, padding=1).transpose(1, 2).reshape(-1, c_in * 9)
        rows = grad.permute(0, 2, 3, 1).reshape(-1, c_out)
        softrep.mm(rows.t(), cols)
        softrep.sum(rows, 0)

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
    else:
        costs += [_linear_cost(o, i, (batch, tokens), g, repeat) for o, i in ENCODER_LINEARS]
    return sum(t for t, _ in costs), sum(c for _, c in costs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--order-cost", action="store_true")
    args = parser.parse_args()
    for kind, make in (("lenet, batch 64", lenet), ("encoder, batch 64 x 32 tokens", Encoder)):
        x, y = data("lenet" if kind.startswith("lenet") else "encoder")
        best, median = step_times(make(), x, y, args.repeat)
        print(f"{kind:32} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms")
        if args.order_cost:
            tree, chain = order_cost("lenet" if kind.startswith("lenet") else "encoder", args.repeat)
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
