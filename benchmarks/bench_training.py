"""Time of one training step, torch's modules against softrep's, both with Adam.

    python benchmarks/bench_training.py [--steps 20] [--threads 2] [--models lenet,cnn,transformer] [--phases]

Each model is built twice with the same shapes, once from torch.nn and once
from softrep.nn (same layer names), and trained on the same random batch:
forward, cross-entropy loss, backward, Adam step (torch.optim.Adam and
softrep.optim.Adam).  Prints the median step time of `--steps` steps after
three untimed ones (which also load or compile softrep's kernels), and the
ratio torch / softrep (1.0 = as fast as torch).  With `--phases`, also the
median time of each phase of the step: forward, loss, backward (with
zero_grad), optimizer step.

* lenet: the demo's LeNet (softrep/tools/demo.py) on 8x8 images, batch 64;
* cnn: a small ResNet-style CNN with BatchNorm on 3x32x32 images, batch 32
  (a 3x3 stem, two residual blocks, one of them strided, average pooling);
* transformer: the char-transformer example's model (examples/char_transformer.py:
  embeddings, one pre-norm TransformerEncoderLayer of width 32 with 2 heads,
  a linear head), 16 windows of 32 tokens.

Never asserted in tests: the machine may be shared.
"""

import argparse
import statistics
import time

import torch

import softrep
import softrep.nn as snn

VOCAB, CONTEXT, WIDTH = 64, 32, 32


class Namespace:
    """The modules and ops of one side: torch's or softrep's."""

    def __init__(self, side):
        self.side = side
        self.nn = torch.nn if side == "torch" else snn
        self.generator = None if side == "torch" else softrep.Generator(0)

    def __call__(self, name, *args, **kwargs):
        if self.generator is not None and name in ("Conv2d", "Linear", "Dropout", "Embedding",
                                                  "TransformerEncoderLayer"):
            kwargs["generator"] = self.generator
        return getattr(self.nn, name)(*args, **kwargs)

    def add(self, a, b):
        return a + b if self.side == "torch" else softrep.add(a, b)

    def adam(self, params):
        return (torch.optim.Adam if self.side == "torch" else softrep.optim.Adam)(params, lr=1e-3)


def lenet(ns):
    return torch.nn.Sequential(
        ns("Conv2d", 1, 8, 3, padding=1), ns("ReLU"), ns("MaxPool2d", 2),
        ns("Conv2d", 8, 16, 3, padding=1), ns("ReLU"), ns("MaxPool2d", 2),
        torch.nn.Flatten(),
        ns("Linear", 64, 64), ns("ReLU"), ns("Dropout", 0.25),
        ns("Linear", 64, 10))


class Block(torch.nn.Module):
    def __init__(self, ns, cin, cout, stride):
        super().__init__()
        self.ns = ns
        self.conv1 = ns("Conv2d", cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = ns("BatchNorm2d", cout)
        self.conv2 = ns("Conv2d", cout, cout, 3, padding=1, bias=False)
        self.bn2 = ns("BatchNorm2d", cout)
        self.relu = ns("ReLU")
        self.skip = None if stride == 1 and cin == cout else torch.nn.Sequential(
            ns("Conv2d", cin, cout, 1, stride=stride, bias=False), ns("BatchNorm2d", cout))

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return self.relu(self.ns.add(h, x if self.skip is None else self.skip(x)))


def cnn(ns):
    return torch.nn.Sequential(
        ns("Conv2d", 3, 16, 3, padding=1, bias=False), ns("BatchNorm2d", 16), ns("ReLU"),
        Block(ns, 16, 16, 1), Block(ns, 16, 32, 2),
        ns("AdaptiveAvgPool2d", 1), torch.nn.Flatten(), ns("Linear", 32, 10))


class CharLM(torch.nn.Module):
    def __init__(self, ns):
        super().__init__()
        self.ns = ns
        self.tokens = ns("Embedding", VOCAB, WIDTH)
        self.positions = ns("Embedding", CONTEXT, WIDTH)
        self.block = ns("TransformerEncoderLayer", WIDTH, nhead=2, dim_feedforward=64, dropout=0.1,
                        batch_first=True, norm_first=True)
        self.head = ns("Linear", WIDTH, VOCAB)

    def forward(self, idx):
        h = self.ns.add(self.tokens(idx), self.positions(torch.arange(idx.shape[1])))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        return self.head(self.block(h, src_mask=mask, is_causal=True)).reshape(-1, VOCAB)


MODELS = {
    # name: (model builder, input batch, target batch)
    "lenet": (lenet, lambda g: torch.randn(64, 1, 8, 8, generator=g), lambda g: torch.randint(10, (64,), generator=g)),
    "cnn": (cnn, lambda g: torch.randn(32, 3, 32, 32, generator=g), lambda g: torch.randint(10, (32,), generator=g)),
    "transformer": (CharLM, lambda g: torch.randint(VOCAB, (16, CONTEXT), generator=g),
                    lambda g: torch.randint(VOCAB, (16 * CONTEXT,), generator=g)),
}


PHASES = ("forward", "loss", "backward", "optimizer")


def step_times(side, name, steps):
    """The step times, and the times of each phase (PHASES) per step."""
    build, make_x, make_y = MODELS[name]
    g = torch.Generator().manual_seed(0)
    x, y = make_x(g), make_y(g)
    ns = Namespace(side)
    model = build(ns)
    model.train()
    optimizer = ns.adam(model.parameters())
    loss_fn = ns("CrossEntropyLoss")
    times, phases = [], []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        out = model(x)
        t1 = time.perf_counter()
        loss = loss_fn(out, y)
        t2 = time.perf_counter()
        optimizer.zero_grad()
        loss.backward()
        t3 = time.perf_counter()
        optimizer.step()
        t4 = time.perf_counter()
        if i >= 3:
            times.append(t4 - t0)
            phases.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
    return times, phases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--phases", action="store_true", help="also the median time of each phase")
    args = parser.parse_args()
    import numba

    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    print(f"median of {args.steps} steps, {args.threads} threads")
    print("| training step | torch ms | softrep ms | ratio |\n|---|---|---|---|")
    split = {}
    for name in args.models.split(","):
        ours, our_phases = step_times("softrep", name, args.steps)
        theirs, their_phases = step_times("torch", name, args.steps)
        ours, theirs = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
        print(f"| {name} | {theirs:.1f} | {ours:.1f} | {theirs / ours:.2f} |")
        split[name] = [[statistics.median(column) * 1e3 for column in zip(*p)] for p in (our_phases, their_phases)]
    if args.phases:
        print(f"\nmedian ms per phase ({' / '.join(PHASES)})")
        print("| model | softrep | torch |\n|---|---|---|")
        for name, (ours, theirs) in split.items():
            print(f"| {name} | {' / '.join(f'{t:.2f}' for t in ours)} | {' / '.join(f'{t:.2f}' for t in theirs)} |")


if __name__ == "__main__":
    main()
