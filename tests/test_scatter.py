"""The ordered scatter-sum of rows (softrep.ops.scatter, softrep/cpu/scatter.py).

Each destination row is the documented sum of the source rows landing on it,
in source order: checked against a plain-Python emulation of docs/order.md's
block/tree order (numpy's IEEE additions, references.documented_sum), and
against the torch-op form of softrep.nn.functional.sparse that the other
backends run, on rows of 0, 1, 2, 128, 129 and 300 terms, dropped rows (-1),
signed zeros, infinities, NaN and subnormals."""

import numpy as np
import pytest
import torch

from softrep.nn.functional import sparse
from softrep.ops import scatter

from references import documented_sum


def _bits(t):
    t = t.detach().contiguous()
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int64)


def _case(dtype, columns, seed=3):
    rng = np.random.default_rng(seed)
    counts = {0: 0, 1: 1, 2: 2, 3: 128, 4: 129, 5: 300, 6: 5}  # row -> terms; row 7 gets none either
    index = np.concatenate([np.full(c, r) for r, c in counts.items()] + [np.full(40, -1)])
    rng.shuffle(index)
    values = rng.standard_normal((index.size, columns)) * np.exp2(rng.integers(-30, 30, (index.size, columns)))
    src = torch.from_numpy(values).to(dtype)
    tiny = torch.finfo(dtype).tiny
    flat = src.view(-1)
    flat[:8] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), tiny / 4, -tiny / 2, -0.0])
    where = torch.from_numpy(index)
    src[where == 2] = -0.0  # a row whose terms are all -0: its sum is -0
    src[(where == 6).nonzero()[0]] = float("inf")
    src[(where == 6).nonzero()[1]] = -float("inf")  # inf + -inf: NaN, made canonical
    return src, where, 8


def _emulated(src, index, num_rows):
    values = src.numpy()
    out = np.zeros((num_rows, src.shape[1]), values.dtype)
    for r in range(num_rows):
        rows = [values[i] for i in range(index.numel()) if index[i] == r]
        if len(rows) == 1:
            out[r] = rows[0]
        elif rows:
            for d in range(src.shape[1]):
                s = documented_sum([row[d] for row in rows])
                out[r, d] = np.nan if np.isnan(s) else s
    return torch.from_numpy(out)


@pytest.mark.parametrize("columns", [1, 7, 33])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kernel_gives_the_documented_sums(dtype, columns):
    src, index, num_rows = _case(dtype, columns)
    got = scatter.ordered_scatter_sum(src, index, num_rows)
    assert got is not None
    assert torch.equal(_bits(got), _bits(_emulated(src, index, num_rows)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kernel_gives_the_bits_of_the_torch_op_form(dtype, monkeypatch):
    src, index, num_rows = _case(dtype, 16, seed=5)
    got = sparse._scatter_sum(src, index, num_rows)
    monkeypatch.setattr(scatter, "ordered_scatter_sum", lambda *args: None)
    assert torch.equal(_bits(got), _bits(sparse._scatter_sum(src, index, num_rows)))


def test_kernel_only_on_the_cpu_launcher(monkeypatch):
    src, index, num_rows = _case(torch.float32, 4)
    assert scatter.ordered_scatter_sum(src.to(torch.bfloat16), index, num_rows) is None
    monkeypatch.setenv("SOFTREP_BACKEND", "cuda")
    assert scatter.ordered_scatter_sum(src, index, num_rows) is None


def test_index_beyond_the_rows_raises():
    with pytest.raises(IndexError, match="outside"):
        scatter.ordered_scatter_sum(torch.ones(3, 2), torch.tensor([0, 5, 1]), 4)
