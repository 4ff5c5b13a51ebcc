"""The fused optimizer updates (softrep.ops.updates) give the bits of the
op-by-op updates (one softrep elementwise op per step of docs/training.md),
parameters and state, for every flag combination, over several steps, on
the CPU kernels and in the CUDA simulator."""

import itertools

import numpy as np
import pytest
import torch

import softrep
from golden import normal_tensor
from softrep.ops import updates

SHAPES = [(3, 5), (7,), (0,), (2, 3, 4)]
# special values: signed zeros, subnormals, infinities, NaNs with a payload
_SPECIAL32 = np.array([0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x7F800000, 0xFF800000, 0x7FC00001,
                       0xFFC00000, 0x7F7FFFFF], dtype=np.uint32)


def _tensor(seed, shape, dtype, specials):
    t = normal_tensor(seed, shape).to(dtype)
    if specials and t.numel() >= len(_SPECIAL32) and dtype == torch.float32:
        flat = t.view(-1).view(torch.int32)
        flat[:len(_SPECIAL32)] = torch.from_numpy(_SPECIAL32.view(np.int32)).roll(seed % len(_SPECIAL32))
    return t


def _bits(t):
    return t.detach().contiguous().view(torch.int32 if t.dtype == torch.float32 else torch.int64).clone()


def _train(make, dtype, shapes, fused, monkeypatch, steps=3, specials=False):
    """Parameters and state after `steps` steps with fixed gradients; the
    op-by-op path when not `fused`."""
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(updates, "fusable", lambda *args: False)
        params = [torch.nn.Parameter(_tensor(100 + i, s, dtype, False)) for i, s in enumerate(shapes)]
        opt = make(params)
        for k in range(steps):
            for i, p in enumerate(params):
                p.grad = _tensor(1000 * i + k, p.shape, dtype, specials and k == 1)
            opt.step()
    state = [(name, _bits(v)) for p in params for name, v in sorted(opt.state[p].items())
             if isinstance(v, torch.Tensor)]
    return [_bits(p) for p in params], state


def _same(a, b):
    (pa, sa), (pb, sb) = a, b
    assert len(pa) == len(pb) and all(torch.equal(x, y) for x, y in zip(pa, pb))
    assert [n for n, _ in sa] == [n for n, _ in sb]
    for (name, x), (_, y) in zip(sa, sb):
        assert torch.equal(x, y), name


ADAM_FLAGS = list(itertools.product((False, True), (0.0, 0.1), (False, True), (False, True)))
SGD_FLAGS = [(maximize, wd, momentum, dampening, nesterov)
             for maximize, wd, momentum, dampening, nesterov
             in itertools.product((False, True), (0.0, 0.1), (0.0, 0.9), (0.0, 0.5), (False, True))
             if not nesterov or (momentum > 0 and dampening == 0)]


def _adam(maximize, wd, decoupled, amsgrad):
    return lambda ps: softrep.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=wd,
                                         amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=decoupled)


def _sgd(maximize, wd, momentum, dampening, nesterov):
    return lambda ps: softrep.optim.SGD(ps, lr=0.1, momentum=momentum, dampening=dampening, weight_decay=wd,
                                        nesterov=nesterov, maximize=maximize)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("flags", ADAM_FLAGS)
def test_adam_fused_equals_op_by_op(flags, dtype, monkeypatch):
    _same(_train(_adam(*flags), dtype, SHAPES, True, monkeypatch, specials=True),
          _train(_adam(*flags), dtype, SHAPES, False, monkeypatch, specials=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("flags", SGD_FLAGS)
def test_sgd_fused_equals_op_by_op(flags, dtype, monkeypatch):
    _same(_train(_sgd(*flags), dtype, SHAPES, True, monkeypatch, specials=True),
          _train(_sgd(*flags), dtype, SHAPES, False, monkeypatch, specials=True))


def test_fused_takes_the_fused_path(monkeypatch):
    """The comparisons above compare two different paths: the fused kernel runs
    (one launch per group), and the op-by-op path launches no fused kernel."""
    calls = []
    original = updates.adam
    monkeypatch.setattr(updates, "adam", lambda *a, **k: calls.append(1) or original(*a, **k))
    _train(_adam(False, 0.1, True, True), torch.float32, SHAPES, True, monkeypatch)
    assert len(calls) == 3
    calls.clear()
    _train(_adam(False, 0.1, True, True), torch.float32, SHAPES, False, monkeypatch)
    assert calls == []


def test_large_group_parallel_launch(monkeypatch):
    """More elements than the serial limit: the parallel kernel, same bits."""
    shapes = [(300, 300), (5,), (200, 100)]
    _same(_train(_adam(True, 0.1, False, True), torch.float32, shapes, True, monkeypatch, steps=2),
          _train(_adam(True, 0.1, False, True), torch.float32, shapes, False, monkeypatch, steps=2))
    _same(_train(_sgd(False, 0.1, 0.9, 0.0, True), torch.float32, shapes, True, monkeypatch, steps=2),
          _train(_sgd(False, 0.1, 0.9, 0.0, True), torch.float32, shapes, False, monkeypatch, steps=2))


def test_mixed_groups_fall_back(monkeypatch):
    """A non-contiguous parameter takes the op path, its neighbours the fused one; same bits."""
    def make_params():
        base = _tensor(7, (4, 6), torch.float32, False)
        strided = torch.nn.Parameter(base.t())  # a transposed view: not contiguous
        return [strided, torch.nn.Parameter(_tensor(8, (5,), torch.float32, False))]

    results = []
    for fused in (True, False):
        with monkeypatch.context() as m:
            if not fused:
                m.setattr(updates, "fusable", lambda *args: False)
            params = make_params()
            opt = softrep.optim.AdamW(params, lr=0.01)
            for k in range(2):
                for i, p in enumerate(params):
                    p.grad = _tensor(50 * i + k, p.shape, torch.float32, False)
                opt.step()
            results.append([_bits(p) for p in params])
    assert all(torch.equal(a, b) for a, b in zip(*results))


SIM_FLAGS = [(True, 0.1, False, True), (False, 0.1, True, False), (False, 0.0, False, False)]
SIM_SGD_FLAGS = [(False, 0.1, 0.9, 0.0, True), (True, 0.0, 0.9, 0.5, False), (False, 0.1, 0.0, 0.0, False)]


@pytest.mark.simulator
def test_simulator_fused_equals_cpu_op_by_op(backend, monkeypatch):
    shapes = [(3, 5), (0,), (11,)]
    sim = [_train(_adam(*f), torch.float32, shapes, True, monkeypatch, steps=2, specials=True) for f in SIM_FLAGS]
    sim += [_train(_sgd(*f), torch.float32, shapes, True, monkeypatch, steps=2, specials=True)
            for f in SIM_SGD_FLAGS]
    sim.append(_train(_adam(*SIM_FLAGS[0]), torch.float64, shapes, True, monkeypatch, steps=2))
    backend("cpu")
    cpu = [_train(_adam(*f), torch.float32, shapes, False, monkeypatch, steps=2, specials=True)
           for f in SIM_FLAGS]
    cpu += [_train(_sgd(*f), torch.float32, shapes, False, monkeypatch, steps=2, specials=True)
            for f in SIM_SGD_FLAGS]
    cpu.append(_train(_adam(*SIM_FLAGS[0]), torch.float64, shapes, False, monkeypatch, steps=2))
    for a, b in zip(sim, cpu):
        _same(a, b)


@pytest.mark.parametrize("make", [_adam(False, 0.1, False, True), _sgd(False, 0.0, 0.9, 0.0, False)])
def test_parameters_at_different_steps(make, monkeypatch):
    """A parameter whose gradient first appears later is at another step count
    (Adam) or its first momentum step (SGD): its own launch, same bits."""
    results = []
    for fused in (True, False):
        with monkeypatch.context() as m:
            if not fused:
                m.setattr(updates, "fusable", lambda *args: False)
            params = [torch.nn.Parameter(_tensor(20 + i, (4, 3), torch.float32, False)) for i in range(3)]
            opt = make(params)
            for k in range(3):
                for i, p in enumerate(params):
                    p.grad = _tensor(60 * i + k, p.shape, torch.float32, False) if k >= i else None
                opt.step()
            state = [_bits(v) for p in params for _, v in sorted(opt.state[p].items())]
            results.append(([_bits(p) for p in params], state))
    assert all(torch.equal(a, b) for a, b in zip(results[0][0], results[1][0]))
    assert len(results[0][1]) == len(results[1][1])
    assert all(torch.equal(a, b) for a, b in zip(results[0][1], results[1][1]))
