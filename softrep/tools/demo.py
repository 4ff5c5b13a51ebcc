# softrep: no kernels
"""`python -m softrep demo`: train a LeNet-style CNN on scikit-learn's digits
and check that the run produced the published fingerprints.

The digits data (1,797 grey images of 8x8 pixels, values 0..16) ships inside
scikit-learn, so nothing is downloaded.  Everything random -- the train/test
split, the initial weights, the order of the batches and the dropout masks --
comes from one softrep Generator, so the run is a pure function of the seed:
the three fingerprints below are the same on every CPU, every GPU and every
thread count.  examples/train_digits.py is the same run written as plain user
code.

`--autocast bfloat16` runs the same training under torch.autocast: the
convolutions and linear layers in bfloat16 (float32 accumulation, one
rounding of each output), the loss in float32, the float32 weights updated by
Adam (docs/lowprecision.md).  It has its own published fingerprints.

`--world-size N` runs it as N data-parallel gloo processes on localhost
(softrep.distributed.DistributedDataParallel, each rank a contiguous slice of
every batch) and `--micro-batches K` splits each rank's slice into K
micro-batches (softrep.distributed.GradientAccumulator): the fingerprints are
the same for every N and K, because every reduction over the batch follows
one tree over the global sample positions (docs/order.md, "The batch order").
"""

import argparse
import contextlib
import os
import sys
import tempfile

import torch

from .. import nn, optim
from ..ops.generator import Generator
from ..ops.random import randperm
from .fingerprint import fingerprint

# The published reference values (also in the README; CHANGELOG.md says why
# they last moved).  A change to any algorithm on the path -- a rounding
# primitive, a reduction order, exp/log, Philox, an initialiser -- moves them.
REFERENCE = {
    "initial model": "eae0780a8c7f0ba980d4047171e5698d28ccb1b405b1b97f5aa53ca61a3dc647",
    "trained model": "e25cf5c6bb966f1debb542303f14828a02f8fcf2af9c4d7470a801cbae325a44",
    "test logits": "7210820652c86beb6e11512370c353fce1b4d116adbdb4fb4f56676b4830d692",
}

# The same run under torch.autocast(dtype=torch.bfloat16) (also in the README).
REFERENCE_AUTOCAST = {
    "bfloat16": {
        "initial model": "eae0780a8c7f0ba980d4047171e5698d28ccb1b405b1b97f5aa53ca61a3dc647",
        "trained model": "665745019113573c3656f340cbbfd171364e549f80940bcdc3467aec4af43c2c",
        "test logits": "2c36d339a5c33a4bde3d9343bf1b4e3f0ba0da7bdcb5f08efe044cfd8e9ea6eb",
    },
}

SEED = 2026
EPOCHS = 15
BATCH_SIZE = 64
LEARNING_RATE = 2e-3
TEST_SIZE = 360


def lenet(generator):
    """Two conv-relu-maxpool stages and a two-layer classifier with dropout."""
    from .. import nn as snn

    return torch.nn.Sequential(
        snn.Conv2d(1, 8, 3, padding=1, generator=generator), snn.ReLU(), snn.MaxPool2d(2),    # 8 x 4 x 4
        snn.Conv2d(8, 16, 3, padding=1, generator=generator), snn.ReLU(), snn.MaxPool2d(2),   # 16 x 2 x 2
        torch.nn.Flatten(),
        snn.Linear(64, 64, generator=generator), snn.ReLU(), snn.Dropout(0.25, generator=generator),
        snn.Linear(64, 10, generator=generator),
    )


def load_digits(generator, device="cpu"):
    """(x_train, y_train, x_test, y_test): images scaled to [0, 1] by x/16, which
    is exact in float32, and a split drawn with softrep.randperm."""
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).div_(16).unsqueeze(1)  # /16: exact
    y = torch.tensor(digits.target, dtype=torch.int64)
    order = randperm(len(y), generator=generator)
    test, train = order[:TEST_SIZE], order[TEST_SIZE:]
    return x[train].to(device), y[train].to(device), x[test].to(device), y[test].to(device)


def _parts(total, k):
    """k consecutive sizes adding up to total, as equal as they go."""
    return [total * (i + 1) // k - total * i // k for i in range(k)]


def run(device="cpu", seed=SEED, epochs=EPOCHS, progress=True, world_size=1, rank=0, micro_batches=1,
        autocast=None):
    """Train and evaluate; returns a dict of fingerprints plus the test accuracy.
    With world_size > 1 this is rank `rank` of an initialised process group; each
    rank's slice of a batch runs as `micro_batches` micro-batches.
    autocast: None, or a low-precision dtype name ("bfloat16") for torch.autocast."""
    from ..distributed import DistributedDataParallel, GradientAccumulator
    from .progress import bar as progress_bar

    device_type = torch.device(device).type
    if autocast is None:
        mixed_precision = contextlib.nullcontext
    else:
        dtype = {"bfloat16": torch.bfloat16}[autocast]

        def mixed_precision():
            return torch.autocast(device_type, dtype=dtype)

    generator = Generator(seed)
    x_train, y_train, x_test, y_test = load_digits(generator, device)
    model = lenet(generator).to(device)
    result = {"initial model": fingerprint(model)}
    trained = DistributedDataParallel(model) if world_size > 1 else model
    accumulator = GradientAccumulator(model) if world_size == 1 and micro_batches > 1 else None
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    steps = epochs * -(-len(y_train) // BATCH_SIZE)
    with progress_bar(total=steps, desc="training", unit="step", enabled=progress and rank == 0) as bar:
        for epoch in range(epochs):
            model.train()
            order = randperm(len(y_train), generator=generator, device=device)
            for start in range(0, len(order), BATCH_SIZE):
                batch = order[start:start + BATCH_SIZE]
                mine = batch[len(batch) * rank // world_size:len(batch) * (rank + 1) // world_size]
                optimizer.zero_grad()
                if micro_batches == 1:
                    with mixed_precision():
                        loss = loss_fn(trained(x_train[mine]), y_train[mine])
                    loss.backward()
                    loss = trained.loss if world_size > 1 else loss
                else:
                    context = trained.accumulate(len(mine)) if world_size > 1 else accumulator.step(len(mine))
                    with context as step:
                        at = 0
                        for size in _parts(len(mine), micro_batches):
                            part = mine[at:at + size]
                            with mixed_precision():
                                part_loss = loss_fn(trained(x_train[part]), y_train[part])
                            part_loss.backward()
                            at += size
                    loss = step.loss
                optimizer.step()
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.4f}")
                bar.update()
    model.eval()
    with torch.no_grad(), mixed_precision():
        logits = model(x_test)
    result["trained model"] = fingerprint(model)
    result["test logits"] = fingerprint(logits)
    result["test accuracy"] = (logits.argmax(1) == y_test).double().mean().item()
    return result


def verdict(result, reference=REFERENCE):
    """One line per fingerprint, then an overall line; returns (lines, all_match)."""
    lines, ok = [], True
    for name, expected in reference.items():
        match = result[name] == expected
        ok &= match
        lines.append(f"  {name:14} {result[name]}  {'matches' if match else 'DIFFERS from'} the published value")
    lines.append("VERDICT: all three fingerprints equal the published reference fingerprints (README.md, "
                 "CHANGELOG.md): this machine computed the same bits as the run that published them." if ok else
                 "VERDICT: MISMATCH with the published reference fingerprints (see above; CHANGELOG.md lists "
                 "the algorithm changes that move them).")
    return lines, ok


def len_train():
    """The number of training images (the digits minus the test split)."""
    return 1797 - TEST_SIZE


def _rank_main(rank, world_size, init, device, epochs, progress, micro_batches, autocast, out):
    import torch.distributed as dist

    from .. import distributed  # noqa: F401  (before init_process_group: docs/distributed.md)

    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world_size)
    try:
        result = run(device, epochs=epochs, progress=progress, world_size=world_size, rank=rank,
                     micro_batches=micro_batches, autocast=autocast)
        if rank == 0:
            torch.save(result, out)
    finally:
        dist.destroy_process_group()


def spawn(world_size, device, epochs, progress, micro_batches, autocast=None):
    """run() on `world_size` gloo processes on localhost (torch.multiprocessing); rank 0's result."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.pt")
        mp.spawn(_rank_main, args=(world_size, os.path.join(tmp, "init"), device, epochs, progress, micro_batches,
                                   autocast, out), nprocs=world_size)
        return torch.load(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m softrep demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--epochs", type=int, default=EPOCHS,
                        help=f"epochs (default {EPOCHS}; the reference values are for the default)")
    parser.add_argument("--world-size", type=int, default=1,
                        help="data-parallel gloo processes on localhost (default 1); same fingerprints for every N")
    parser.add_argument("--micro-batches", type=int, default=1,
                        help="micro-batches per rank and step (default 1); same fingerprints for every K")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--autocast", choices=sorted(REFERENCE_AUTOCAST),
                        help="train under torch.autocast in this dtype (its own reference values)")
    args = parser.parse_args(argv)
    if args.world_size < 1:
        parser.error(f"argument --world-size: must be at least 1, got {args.world_size}")
    smallest = (len_train() % BATCH_SIZE or BATCH_SIZE) // args.world_size
    if not 1 <= args.micro_batches <= smallest:
        parser.error(f"argument --micro-batches: must be between 1 and {smallest} (every micro-batch of the "
                     f"shortest batch's slice needs a sample), got {args.micro_batches}")
    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        parser.error(f"argument --device: expected cpu or cuda, got {args.device!r}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"argument --device: {args.device!r} requested but torch sees no CUDA device")
    if args.epochs < 1:
        parser.error(f"argument --epochs: must be at least 1, got {args.epochs}")
    if args.world_size > 1:
        result = spawn(args.world_size, args.device, args.epochs, not args.no_progress, args.micro_batches,
                       args.autocast)
    else:
        result = run(args.device, epochs=args.epochs, progress=not args.no_progress,
                     micro_batches=args.micro_batches, autocast=args.autocast)
    print(f"device {args.device}, seed {SEED}, {args.epochs} epochs, batch {BATCH_SIZE}, Adam lr {LEARNING_RATE}, "
          f"{args.world_size} process(es) x {args.micro_batches} micro-batch(es)"
          + (f", autocast {args.autocast}" if args.autocast else ""))
    print(f"test accuracy: {result['test accuracy']:.4f}")
    print("fingerprints (SHA-256, softrep.fingerprint):")
    lines, ok = verdict(result, REFERENCE_AUTOCAST[args.autocast] if args.autocast else REFERENCE)
    if args.epochs != EPOCHS:
        lines[-1] = f"VERDICT: not comparable: the reference values are for --epochs {EPOCHS}."
        ok = True
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
