"""The CPU products' scratch buffers (softrep/cpu/workspace.py), the padded
inputs of conv2d's included, are kept
between calls: what a previous product left in them must never reach a
result, and threads must not share them."""

import threading

import numpy as np
import torch

import softrep
from softrep.cpu import workspace


def _poison():
    """Every kept buffer of this thread filled with NaN bit patterns."""
    for buf in getattr(workspace._local, "buffers", {}).values():
        buf[:] = 0xFF


def _products(seed):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(70, 300, generator=g), torch.randn(300, 90, generator=g)
    x, w = torch.randn(2, 3, 9, 9, generator=g), torch.randn(5, 3, 3, 3, generator=g)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = softrep.nn.functional.conv2d(xg, wg, padding=1, stride=2)  # the padded input and its gradients
    grads = torch.autograd.grad(y, (xg, wg), torch.randn(y.shape, generator=g))
    return [softrep.mm(a, b), softrep.mm(a[:, :17], b[:17]), softrep.nn.functional.conv2d(x, w, padding=1), *grads]


def test_stale_scratch_contents_never_reach_a_result():
    workspace._local.buffers = {}
    fresh = _products(0)
    softrep.mm(torch.randn(200, 400), torch.randn(400, 300))  # grows the buffers beyond what follows
    _poison()
    assert workspace._local.buffers, "the products kept no scratch buffer: the test checks nothing"
    assert "padded_input" in workspace._local.buffers
    for got, want in zip(_products(0), fresh):
        assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_threads_have_their_own_scratch():
    want = [_products(s) for s in range(4)]
    got = [None] * 4
    errors = []

    def run(i):
        try:
            for _ in range(5):
                got[i] = _products(i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_large_requests_are_not_kept():
    workspace._local.buffers = {}
    big = workspace.scratch("test_slot", (workspace.MAX_BYTES // 4 + 1,), np.float32)
    assert big.size == workspace.MAX_BYTES // 4 + 1 and "test_slot" not in workspace._local.buffers
    small = workspace.scratch("test_slot", (3, 5), np.float64)
    assert small.shape == (3, 5) and small.ctypes.data % 64 == 0
