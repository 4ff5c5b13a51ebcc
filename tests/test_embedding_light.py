"""embedding's serial CPU kernels (softrep/cpu/embedding.py) against the
general path they stand in for, bit for bit.

The general path (the index checked by `_CheckedIndex`, rows gathered by
torch's index ops, the gradient by `scatter_sum_rows` and the batch tree)
is forced by switching the light paths off with monkeypatch; spies on the
kernels check which path each run took, so that a comparison never compares
a path with itself.  Data: repeated indices (one row more than two blocks of
128 times in a sample), at least 33 samples (a batch tree of several
levels), rows some samples do not use and a row no sample uses, NaNs with
payloads, infinities, signed zeros and subnormals in the table and the
gradient, padding_idx, 0-D to 3-D inputs, float32 and float64."""

import os

import numpy as np
import pytest
import torch
from test_backend_sources import ROOT, schedule_findings

from softrep.cpu import embedding as cpu_embedding
from softrep.nn.functional import sparse
from softrep.nn.functional.sparse import embedding

INT = {torch.float32: torch.int32, torch.float64: torch.int64}
UNSIGNED = {torch.float32: np.uint32, torch.float64: np.uint64}
SIGNED = {torch.float32: np.int32, torch.float64: np.int64}
SPECIALS = {
    torch.float32: [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC0BEEF, 0xFFC00001, 0x7F800001,
                    0x00000001, 0x80000001, 0x007FFFFF, 0x7F7FFFFF],
    torch.float64: [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF80000DEADBEEF,
                    0xFFF8000000000001, 0x7FF0000000000001, 1, (1 << 63) | 1, 0x000FFFFFFFFFFFFF,
                    0x7FEFFFFFFFFFFFFF],
}


def values(seed, shape, dtype, kind):
    """'wide': normal values scaled by 2^-30 .. 2^30 (sums round); 'specials':
    the same with 5% NaNs (payloads), infinities, signed zeros, subnormals
    and the largest number; 'zeros': +0, -0 and a few subnormals."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal(shape) * np.exp2(rng.integers(-30, 30, size=shape))).to(dtype)
    bits = x.view(INT[dtype])
    pool = torch.from_numpy(np.array(SPECIALS[dtype], UNSIGNED[dtype]).view(SIGNED[dtype]))
    if kind == "specials":
        pick = torch.from_numpy(rng.random(shape) < 0.05)
        bits[pick] = pool[torch.from_numpy(rng.integers(0, len(pool), size=shape))][pick]
    elif kind == "zeros":
        choice = torch.from_numpy(rng.integers(0, 20, size=shape))
        bits[:] = torch.where(choice < 9, pool[0], torch.where(choice < 18, pool[1], pool[7]))
    return x


def bits(t):
    return t.detach().view(INT[t.dtype])


def unsigned_bits(x):
    """The bits of the one-element tensor x as a non-negative int."""
    return int(x.detach().numpy().view(UNSIGNED[x.dtype]))


class Spy:
    """Counts the calls of the serial kernels."""

    def __init__(self, monkeypatch):
        self.calls = {"serial_rows": 0, "serial_table_grad": 0}
        for name in self.calls:
            monkeypatch.setattr(cpu_embedding, name, self._counted(name, getattr(cpu_embedding, name)))

    def _counted(self, name, f):
        def call(*args):
            self.calls[name] += 1
            return f(*args)
        return call


def run(idx, table, g, padding_idx):
    """(forward without grad, forward with grad, gradient of the table)."""
    with torch.no_grad():
        plain = embedding(idx, table, padding_idx=padding_idx)
    w = table.clone().requires_grad_()
    out = embedding(idx, w, padding_idx=padding_idx)
    (grad,) = torch.autograd.grad(out, w, g)
    return plain, out.detach(), grad


def general(monkeypatch, *args):
    """`run` with the light paths switched off."""
    with monkeypatch.context() as m:
        m.setattr(sparse, "_light_dtype", lambda table, index: None)
        m.setattr(sparse, "_light_table_grad", lambda *a: None)
        return run(*args)


def token_index(seed, samples, per, rows):
    """(samples, per) indices: row 3 at 300 positions (three blocks) of most
    samples, absent from every fifth sample; row rows - 1 never used."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, rows - 1, size=(samples, per))
    for s in range(samples):
        if s % 5 == 4:
            idx[s][idx[s] == 3] = 4
        else:
            idx[s, rng.permutation(per)[:300]] = 3
    return torch.from_numpy(idx)


CASES = {
    "tokens": lambda: (token_index(1, 37, 400, 9), 9, 5),
    "one_sample": lambda: (token_index(2, 1, 400, 6).reshape(-1), 6, 3),
    "three_d": lambda: (torch.from_numpy(np.random.default_rng(3).integers(0, 4, size=(5, 6, 7))), 4, 6),
    "one_index": lambda: (torch.tensor(2), 4, 3),
    "no_samples": lambda: (torch.zeros(0, 4, dtype=torch.int64), 4, 3),
    "empty_samples": lambda: (torch.zeros(3, 0, dtype=torch.int64), 4, 3),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["wide", "specials", "zeros"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_light_equals_general(monkeypatch, dtype, kind, case, padding_idx):
    idx, rows, width = CASES[case]()
    table = values(10, (rows, width), dtype, kind)
    g = values(11, (*idx.shape, width), dtype, kind)
    spy = Spy(monkeypatch)
    light = run(idx, table, g, padding_idx)
    assert spy.calls == {"serial_rows": 2, "serial_table_grad": 1}
    reference = general(monkeypatch, idx, table, g, padding_idx)
    assert spy.calls == {"serial_rows": 2, "serial_table_grad": 1}  # the general run took neither kernel
    for a, b in zip(light, reference):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.equal(bits(a), bits(b))
    # the gradient's recorded graph (create_graph) takes the general backward after the light forward
    w = table.clone().requires_grad_()
    (recorded,) = torch.autograd.grad(embedding(idx, w, padding_idx=padding_idx), w, g, create_graph=True)
    assert spy.calls["serial_table_grad"] == 1
    assert torch.equal(bits(recorded), bits(light[2]))
    assert torch.equal(bits(light[0]).reshape(-1, width),
                       bits(sparse._gather(table, idx.reshape(-1), 0.0)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_light_canonical_nan_and_copied_payload(monkeypatch, dtype):
    nan_bits = {torch.float32: 0x7FC00000, torch.float64: 0x7FF8000000000000}[dtype]
    table = torch.zeros(3, 2, dtype=dtype)
    bits(table)[1, 0] = SPECIALS[dtype][4]  # a NaN with a payload
    assert unsigned_bits(embedding(torch.tensor([1, 0]), table)[0, 0]) == nan_bits
    # a row one position of the only sample holds is that gradient row, payload kept (as scatter_sum_rows
    # copies it); two samples' partials go through the tree, whose NaN is canonical
    g = torch.zeros(2, 2, dtype=dtype)
    bits(g)[0, 0] = SPECIALS[dtype][4]
    for idx in (torch.tensor([1, 0]), torch.tensor([[1], [0]])):
        spy = Spy(monkeypatch)
        light = run(idx, table, g.reshape(*idx.shape, 2), None)[2]
        assert spy.calls["serial_table_grad"] == 1
        reference = general(monkeypatch, idx, table, g.reshape(*idx.shape, 2), None)[2]
        assert torch.equal(bits(light), bits(reference))
        assert unsigned_bits(light[1, 0]) == (SPECIALS[dtype][4] if idx.dim() == 1 else nan_bits)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("bad", [[4], [-1], [0, 7, -3, 5], [0, 5, 9, 1]])
def test_light_index_error_unchanged(monkeypatch, grad, bad):
    table = torch.zeros(4, 2, requires_grad=grad)
    idx = torch.tensor(bad)
    spy = Spy(monkeypatch)
    with pytest.raises(IndexError) as light:
        embedding(idx, table)
    assert spy.calls["serial_rows"] == 1
    with monkeypatch.context() as m:
        m.setattr(sparse, "_light_dtype", lambda table, index: None)
        with pytest.raises(IndexError) as reference:
            embedding(idx, table)
    assert spy.calls["serial_rows"] == 1
    assert str(light.value) == str(reference.value)
    assert f"holds index {min(bad) if min(bad) < 0 else max(bad)}," in str(light.value)


def test_light_path_conditions(monkeypatch):
    """Non-contiguous tables and indices, int32 indices and the torch.func
    transforms keep working: a non-contiguous table by the general path, a
    non-contiguous 1-D index checked by `_CheckedIndex`, whose copy the
    kernel then reads, vmap by the general path."""
    table = values(5, (6, 4), torch.float32, "wide")
    idx = torch.tensor([[0, 5, 5], [2, 5, 1]])
    expected = sparse._gather(table, idx.reshape(-1), 0.0).reshape(2, 3, 4)
    spy = Spy(monkeypatch)
    assert torch.equal(embedding(idx.to(torch.int32), table), expected)
    assert spy.calls["serial_rows"] == 1
    assert torch.equal(embedding(idx, table.t().contiguous().t()), expected)
    assert torch.equal(embedding(idx.t().contiguous().t(), table), expected)
    assert spy.calls["serial_rows"] == 2
    assert torch.equal(embedding(torch.tensor([0, 9, 5, 9, 5])[::2], table), expected[0])
    assert spy.calls["serial_rows"] == 3
    assert torch.equal(torch.func.vmap(lambda i: embedding(i, table))(idx), expected)
    with pytest.raises(IndexError, match="holds index 6"):
        torch.func.vmap(lambda i: embedding(i, table))(idx + 1)
    assert spy.calls == {"serial_rows": 3, "serial_table_grad": 0}


def test_kernels_hold_schedules_only():
    """softrep/cpu/embedding.py calls the algorithms for every value it
    produces (the rules of tests/test_backend_sources.py)."""
    path = os.path.join(ROOT, "cpu", "embedding.py")
    with open(path) as f:
        assert schedule_findings(f.read(), path) == []
