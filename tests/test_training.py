# softrep: no kernels
"""End-to-end training reproducibility: a small CNN and a small transformer,
initialised, shuffled (randperm) and dropped out by softrep generators and
trained a few steps with softrep.optim, give the same softrep.fingerprint of
model and optimizer with 1 and 2 threads, under the CUDA simulator, twice in
one process, and as recorded in tests/golden/training.json (any machine must
reproduce those).

Regenerate the golden fingerprints after an intentional change with
    SOFTREP_UPDATE_GOLDEN=1 python -m pytest tests/test_training.py
"""

import json
import os
import subprocess
import sys

import pytest
import torch

import softrep
import softrep.nn as snn
import softrep.nn.functional as F
from golden import UPDATE

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden", "training.json")

# (channels, images, batch, side, steps) / (vocab, d_model, heads, ff, length, sequences, batch, steps)
CNN = {"full": (4, 16, 4, 8, 4), "tiny": (2, 4, 2, 4, 1)}
LM = {"full": (11, 8, 2, 16, 6, 8, 4, 3), "tiny": (5, 4, 2, 4, 3, 2, 2, 1)}


def train_cnn(size, seed=1):
    channels, n, batch, side, steps = CNN[size]
    gen, data_gen = softrep.Generator(seed), softrep.Generator(seed + 1000)
    model = snn.Sequential(
        snn.Conv2d(1, channels, 3, padding=1, generator=gen), snn.BatchNorm2d(channels), snn.ReLU(),
        snn.MaxPool2d(2), snn.Dropout(0.25, generator=gen), snn.Flatten(),
        snn.Linear(channels * (side // 2) ** 2, 3, generator=gen))
    opt = softrep.optim.Adam(model.parameters(), lr=1e-2)
    images = softrep.randn(n, 1, side, side, generator=data_gen)
    labels = softrep.randint(0, 3, (n,), generator=data_gen)
    order = torch.empty(0, dtype=torch.int64)
    for step in range(steps):
        if len(order) < batch:
            order = softrep.randperm(n, generator=data_gen)
        idx, order = order[:batch], order[batch:]
        loss = F.cross_entropy(model(images[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return softrep.fingerprint([model, opt])


class TinyLM(torch.nn.Module):
    def __init__(self, vocab, d_model, heads, ff, gen):
        super().__init__()
        self.embed = snn.Embedding(vocab, d_model, generator=gen)
        self.layer = snn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1, batch_first=True, generator=gen)
        self.norm = snn.LayerNorm(d_model)
        self.head = snn.Linear(d_model, vocab, generator=gen)

    def forward(self, tokens):
        length = tokens.shape[1]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        return self.head(self.norm(self.layer(self.embed(tokens), src_mask=causal, is_causal=True)))


def train_lm(size, seed=2):
    vocab, d_model, heads, ff, length, n, batch, steps = LM[size]
    gen, data_gen = softrep.Generator(seed), softrep.Generator(seed + 1000)
    model = TinyLM(vocab, d_model, heads, ff, gen)
    opt = softrep.optim.AdamW(model.parameters(), lr=1e-2)
    tokens = softrep.randint(0, vocab, (n, length + 1), generator=data_gen)
    order = torch.empty(0, dtype=torch.int64)
    for step in range(steps):
        if len(order) < batch:
            order = softrep.randperm(n, generator=data_gen)
        idx, order = order[:batch], order[batch:]
        logits = model(tokens[idx, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[idx, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return softrep.fingerprint([model, opt])


def fingerprints(size):
    return {f"cnn_{size}": train_cnn(size), f"transformer_{size}": train_lm(size)}


def _check_golden(results):
    data = {}
    if os.path.exists(GOLDEN):
        with open(GOLDEN) as f:
            data = json.load(f)
    if UPDATE:
        data.update(results)
        with open(GOLDEN, "w") as f:
            json.dump(dict(sorted(data.items())), f, indent=1)
            f.write("\n")
        return
    for key, value in results.items():
        assert key in data, f"no golden fingerprint for {key!r}; run with SOFTREP_UPDATE_GOLDEN=1"
        assert data[key] == value, f"{key}: trained model differs from the golden fingerprint"


def test_twice_in_one_process_and_golden():
    first = fingerprints("full")
    assert fingerprints("full") == first
    assert first["cnn_full"] != first["transformer_full"]
    _check_golden(first)


def test_tiny_configs_golden():
    _check_golden(fingerprints("tiny"))


_SCRIPT = """
import json, sys, torch
torch.set_num_threads({threads})
sys.path.insert(0, 'tests')
import test_training
print(json.dumps(test_training.fingerprints('full')))
"""


def test_thread_counts():
    procs = [subprocess.Popen([sys.executable, "-c", _SCRIPT.format(threads=threads)],
                              env=dict(os.environ, NUMBA_NUM_THREADS=str(threads), SOFTREP_BACKEND="cpu"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.path.dirname(HERE))
             for threads in (1, 2)]
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        assert proc.returncode == 0, stderr[-3000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    assert outs[0] == outs[1]
    _check_golden(outs[0])


@pytest.mark.simulator
def test_simulator_matches_cpu_and_golden(backend):
    simulated = fingerprints("tiny")
    backend("cpu")
    assert simulated == fingerprints("tiny")
    _check_golden(simulated)
