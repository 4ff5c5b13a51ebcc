"""A tiny character-level transformer language model, trained reproducibly.

The text is the Zen of Python, which ships with every Python (the `this`
module) and has not changed in decades, so the data -- and therefore the
fingerprints this prints -- are the same on every machine and Python version.
The run checks its three fingerprints against the published values below
(REFERENCE, also in examples/README.md and CHANGELOG.md), published for the
default 150 steps and for a short run of 10 steps:

    python examples/char_transformer.py [--device cuda] [--steps 150]

Exit code 1 when a published configuration does not reproduce its values.
"""

import argparse
import codecs
import contextlib
import io
import os
import sys

import torch

import softrep
import softrep.nn as snn

CONTEXT, WIDTH, BATCH = 32, 32, 16
SEED, LEARNING_RATE, STEPS = 7, 3e-3, 150
SHORT_STEPS = 10  # the configuration tests/test_examples.py runs
# characters decoded after training; tests that only compare two runs decode fewer
SAMPLE_LENGTH = int(os.environ.get("SOFTREP_EXAMPLE_BATCHES", 80))

# The published reference fingerprints per number of training steps (the
# initial model does not depend on it).  A change to any algorithm on the path
# -- a rounding primitive, a reduction order, exp/log, Philox, an initialiser,
# AdamW -- moves them; CHANGELOG.md lists every move with its reason.
REFERENCE = {
    STEPS: {
        "initial model": "51655330bdd2f84d10ac7f3e4eab79be7ad923aef22d605b28b4381331e02ff0",
        "trained model": "1fadb934a36fa14b19f5a1cd12b8e86f0e00b446b5eeb7c102ba58adbcb41d13",
        "last logits": "af6f1afcea13af71c1b1e8d5f9829f7653cc349ba4b4022ab7ee235824dc2921",
    },
    SHORT_STEPS: {
        "initial model": "51655330bdd2f84d10ac7f3e4eab79be7ad923aef22d605b28b4381331e02ff0",
        "trained model": "b63d63cd4275debfb10f2eec72854d2336f1aa4e52456542067ceadcbe27d892",
        "last logits": "def08184adbfe8741ac8cfc99306d04c3d8b816765800f0c253e4e91d5b203e0",
    },
}


def zen_of_python():
    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
        import this
    return codecs.decode(this.s, "rot13")


class CharLM(torch.nn.Module):
    def __init__(self, vocab_size, generator):
        super().__init__()
        self.tokens = snn.Embedding(vocab_size, WIDTH, generator=generator)
        self.positions = snn.Embedding(CONTEXT, WIDTH, generator=generator)
        self.block = snn.TransformerEncoderLayer(WIDTH, nhead=2, dim_feedforward=64, dropout=0.1,
                                                 batch_first=True, norm_first=True, generator=generator)
        self.head = snn.Linear(WIDTH, vocab_size, generator=generator)

    def forward(self, idx):
        h = softrep.add(self.tokens(idx), self.positions(torch.arange(idx.shape[1], device=idx.device)))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(idx.shape[1], device=idx.device)
        return self.head(self.block(h, src_mask=mask, is_causal=True))


def run(steps=STEPS, device="cpu", log=print):
    """Train for `steps` steps, then decode greedily; returns the three
    fingerprints and the decoded sample."""
    text = zen_of_python()
    vocab = sorted(set(text))
    data = torch.tensor([vocab.index(c) for c in text], device=device)
    gen = softrep.Generator(SEED)  # the one source of randomness: init, batches, dropout

    model = CharLM(len(vocab), gen).to(device)
    result = {"initial model": softrep.fingerprint(model)}
    optimizer = softrep.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    loss_fn = snn.CrossEntropyLoss()
    for step in range(steps):
        start = softrep.randint(len(data) - CONTEXT - 1, (BATCH,), generator=gen, device=device)
        window = start[:, None] + torch.arange(CONTEXT + 1, device=device)
        x, y = data[window[:, :-1]], data[window[:, 1:]]
        loss = loss_fn(model(x).reshape(-1, len(vocab)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 0 or step == steps - 1:
            log(f"step {step:4d}  loss {loss.item():.4f}")

    model.eval()
    idx = data[:CONTEXT].clone()
    with torch.no_grad():
        for _ in range(SAMPLE_LENGTH):  # greedy decoding: argmax is exact, so the sample is reproducible too
            logits = model(idx[None, -CONTEXT:])[0, -1]
            idx = torch.cat([idx, logits.argmax().reshape(1)])
    result["trained model"] = softrep.fingerprint(model)
    result["last logits"] = softrep.fingerprint(logits)
    result["sample"] = "".join(vocab[i] for i in idx[CONTEXT:].tolist())
    return result


def verdict(result, steps):
    """The verdict line for a run of `steps` steps, and whether it passes."""
    reference = REFERENCE.get(steps)
    if reference is None:
        return (f"VERDICT: not comparable: reference fingerprints are published for "
                f"--steps {' and '.join(map(str, sorted(REFERENCE, reverse=True)))} only."), True
    differing = [name for name, value in reference.items() if result[name] != value]
    if differing:
        return (f"VERDICT: MISMATCH with the published reference fingerprints for {steps} steps "
                f"({', '.join(differing)} differ; CHANGELOG.md lists the changes that move them)."), False
    return (f"VERDICT: all three fingerprints equal the published reference fingerprints for {steps} steps "
            "(examples/README.md): this machine computed the same bits as the run that published them."), True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=STEPS,
                        help=f"training steps (default {STEPS}; reference values for {STEPS} and {SHORT_STEPS})")
    args = parser.parse_args(argv)
    if args.steps < 0:
        parser.error(f"argument --steps: must be at least 0, got {args.steps}")
    result = run(args.steps, args.device)
    for name in ("initial model", "trained model", "last logits"):
        print(f"{name:14}", result[name])
    print("sample:", repr(result["sample"]))
    line, ok = verdict(result, args.steps)
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
