"""Output allocation (softrep/ops/memory.py): huge-page advice for large CPU outputs."""

import os
import sys

import numpy as np
import pytest
import torch

import softrep
from softrep.ops import memory as _memory


def test_small_outputs_are_not_advised():
    assert not _memory.advise_huge_pages(torch.empty(1000))


@pytest.mark.skipif(not (sys.platform.startswith("linux") and os.path.exists("/sys/kernel/mm/transparent_hugepage")),
                    reason="huge-page advice is Linux with transparent huge pages only")
def test_large_cpu_outputs_are_advised():
    t = _memory.empty((4 * 10**6,), dtype=torch.float32, device="cpu")
    assert t.shape == (4 * 10**6,) and t.dtype == torch.float32
    assert _memory.advise_huge_pages(t)


def test_advice_does_not_change_values():
    """A large elementwise result (advised) equals the same op on slices (not advised)."""
    x = torch.from_numpy(np.random.default_rng(0).standard_normal(2**22).astype(np.float32))
    big = softrep.exp(x)
    parts = torch.cat([softrep.exp(p) for p in x.split(1000)])
    assert torch.equal(big.view(torch.int32), parts.view(torch.int32))
