"""Training-step time: the demo's LeNet and a small transformer encoder, and
softrep's DistributedDataParallel against torch's on gloo.

    python benchmarks/bench_distributed.py [--repeat 5] [--ddp]

Prints the best and median step time (forward, backward, Adam) after two
untimed steps.  Run it on two source trees (PYTHONPATH) in one sitting to
compare orders; with --ddp it also times 2 gloo ranks on localhost, softrep's
wrapper against torch.nn.parallel.DistributedDataParallel on the same
softrep model (torch's all-reduce does not give softrep's bits; this is the
time only).
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ddp", action="store_true")
    args = parser.parse_args()
    for kind, make in (("lenet, batch 64", lenet), ("encoder, batch 64 x 32 tokens", Encoder)):
        x, y = data("lenet" if kind.startswith("lenet") else "encoder")
        best, median = step_times(make(), x, y, args.repeat)
        print(f"{kind:32} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms")
    if args.ddp:
        import torch.multiprocessing as mp

        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.pt")
            mp.spawn(_rank, args=(os.path.join(tmp, "init"), args.repeat, out), nprocs=2)
            for name, (best, median) in torch.load(out).items():
                print(f"lenet, 2 gloo ranks, {name:12} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
