"""A tiny character-level transformer language model, trained reproducibly.

The text is the Zen of Python, which ships with every Python (the `this`
module) and has not changed in decades, so the data -- and therefore the
fingerprints this prints -- are the same on every machine and Python version.

    python examples/char_transformer.py [--device cuda] [--steps 150]
"""

import argparse
import codecs
import contextlib
import io
import os

import torch

import softrep
import softrep.nn as snn

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--device", default="cpu")
parser.add_argument("--steps", type=int, default=150)
args = parser.parse_args()

with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
    import this
text = codecs.decode(this.s, "rot13")
vocab = sorted(set(text))
data = torch.tensor([vocab.index(c) for c in text], device=args.device)
CONTEXT, WIDTH, BATCH = 32, 32, 16
SAMPLE_LENGTH = int(os.environ.get("SOFTREP_EXAMPLE_BATCHES", 80))  # the tests decode fewer characters
gen = softrep.Generator(7)


class CharLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = snn.Embedding(len(vocab), WIDTH, generator=gen)
        self.positions = snn.Embedding(CONTEXT, WIDTH, generator=gen)
        self.block = snn.TransformerEncoderLayer(WIDTH, nhead=2, dim_feedforward=64, dropout=0.1,
                                                 batch_first=True, norm_first=True, generator=gen)
        self.head = snn.Linear(WIDTH, len(vocab), generator=gen)

    def forward(self, idx):
        h = softrep.add(self.tokens(idx), self.positions(torch.arange(idx.shape[1], device=idx.device)))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(idx.shape[1], device=idx.device)
        return self.head(self.block(h, src_mask=mask, is_causal=True))


model = CharLM().to(args.device)
print("initial model ", softrep.fingerprint(model))
optimizer = softrep.optim.AdamW(model.parameters(), lr=3e-3)
loss_fn = snn.CrossEntropyLoss()
for step in range(args.steps):
    start = softrep.randint(len(data) - CONTEXT - 1, (BATCH,), generator=gen, device=args.device)
    window = start[:, None] + torch.arange(CONTEXT + 1, device=args.device)
    x, y = data[window[:, :-1]], data[window[:, 1:]]
    loss = loss_fn(model(x).reshape(-1, len(vocab)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 25 == 0 or step == args.steps - 1:
        print(f"step {step:4d}  loss {loss.item():.4f}")

model.eval()
idx = data[:CONTEXT].clone()
with torch.no_grad():
    for _ in range(SAMPLE_LENGTH):  # greedy decoding: argmax is exact, so the sample is reproducible too
        logits = model(idx[None, -CONTEXT:])[0, -1]
        idx = torch.cat([idx, logits.argmax().reshape(1)])
print("trained model ", softrep.fingerprint(model))
print("last logits   ", softrep.fingerprint(logits))
print("sample:", repr("".join(vocab[i] for i in idx[CONTEXT:].tolist())))
