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
"""

import argparse
import contextlib
import sys

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
    "trained model": "6d1023acf6f0fd84403ff75162bf57cf1be6b8623cbf50b504d7f55362c633e4",
    "test logits": "7db3c20984774a0cb7b5295c8e904534528076857a1e1a2cf6ece13c42c37fc0",
}

# The same run under torch.autocast(dtype=torch.bfloat16) (also in the README).
REFERENCE_AUTOCAST = {
    "bfloat16": {
        "initial model": "eae0780a8c7f0ba980d4047171e5698d28ccb1b405b1b97f5aa53ca61a3dc647",
        "trained model": "cc152758560d087a0f38dbe69c04ab4766cb45ac2881958c106204597c5729f5",
        "test logits": "8cea95d61e7107230ef76930a3a380086b17978bd7b8161f3bf81c60b05092f1",
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


def run(device="cpu", seed=SEED, epochs=EPOCHS, progress=True, autocast=None):
    """Train and evaluate; returns a dict of fingerprints plus the test accuracy.
    autocast: None, or a low-precision dtype name ("bfloat16") for torch.autocast."""
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
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    steps = epochs * -(-len(y_train) // BATCH_SIZE)
    with progress_bar(total=steps, desc="training", unit="step", enabled=progress) as bar:
        for epoch in range(epochs):
            model.train()
            order = randperm(len(y_train), generator=generator, device=device)
            for start in range(0, len(order), BATCH_SIZE):
                batch = order[start:start + BATCH_SIZE]
                with mixed_precision():
                    logits = model(x_train[batch])
                    loss = loss_fn(logits, y_train[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                correct = (logits.argmax(1) == y_train[batch]).sum().item()
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.4f}", acc=f"{correct / len(batch):.3f}")
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m softrep demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--epochs", type=int, default=EPOCHS,
                        help=f"epochs (default {EPOCHS}; the reference values are for the default)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--autocast", choices=sorted(REFERENCE_AUTOCAST),
                        help="train under torch.autocast in this dtype (its own reference values)")
    args = parser.parse_args(argv)
    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        parser.error(f"argument --device: expected cpu or cuda, got {args.device!r}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"argument --device: {args.device!r} requested but torch sees no CUDA device")
    if args.epochs < 1:
        parser.error(f"argument --epochs: must be at least 1, got {args.epochs}")
    result = run(args.device, epochs=args.epochs, progress=not args.no_progress, autocast=args.autocast)
    print(f"device {args.device}, seed {SEED}, {args.epochs} epochs, batch {BATCH_SIZE}, Adam lr {LEARNING_RATE}"
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
