"""Train a small CNN on scikit-learn's digits, reproducibly, and print fingerprints.

This is `python -m softrep demo` written as plain user code.  With the default
arguments it prints the fingerprints published in the README, on any machine:

    python examples/train_digits.py            # CPU
    python examples/train_digits.py --device cuda
"""

import argparse
import os

import torch
from sklearn.datasets import load_digits

import softrep
import softrep.nn as snn

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--device", default="cpu")
parser.add_argument("--epochs", type=int, default=15)
args = parser.parse_args()

# One counter-based generator drives everything random: split, init, shuffling, dropout.
gen = softrep.Generator(2026)

digits = load_digits()
x = torch.tensor(digits.images, dtype=torch.float32).div_(16).unsqueeze(1)  # 8x8 pixels in [0, 1]
y = torch.tensor(digits.target)
order = softrep.randperm(len(y), generator=gen)
x_test, y_test = x[order[:360]].to(args.device), y[order[:360]].to(args.device)
x_train, y_train = x[order[360:]].to(args.device), y[order[360:]].to(args.device)

model = torch.nn.Sequential(
    snn.Conv2d(1, 8, 3, padding=1, generator=gen), snn.ReLU(), snn.MaxPool2d(2),
    snn.Conv2d(8, 16, 3, padding=1, generator=gen), snn.ReLU(), snn.MaxPool2d(2),
    torch.nn.Flatten(),
    snn.Linear(64, 64, generator=gen), snn.ReLU(), snn.Dropout(0.25, generator=gen),
    snn.Linear(64, 10, generator=gen),
).to(args.device)
print("initial model  ", softrep.fingerprint(model))

optimizer = softrep.optim.Adam(model.parameters(), lr=2e-3)
BATCHES_PER_EPOCH = int(os.environ.get("SOFTREP_EXAMPLE_BATCHES", len(y_train)))  # the tests run fewer
loss_fn = snn.CrossEntropyLoss()
for epoch in range(args.epochs):
    model.train()
    perm = softrep.randperm(len(y_train), generator=gen, device=args.device)
    for batch in perm.split(64)[:BATCHES_PER_EPOCH]:
        loss = loss_fn(model(x_train[batch]), y_train[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch + 1}: last batch loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    logits = model(x_test)
print("trained model  ", softrep.fingerprint(model))
print("test logits    ", softrep.fingerprint(logits))
print("test accuracy  ", (logits.argmax(1) == y_test).double().mean().item())
