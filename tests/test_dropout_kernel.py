"""dropout as one kernel (the draw, the mask and the product) against the
separate ops it replaces -- the bernoulli mask, the selection of the scale
and `mul` -- bit for bit, forward and backward, float32 and float64, on the
CPU and the CUDA simulator; and the generator advanced by one offset either
way."""

import numpy as np
import pytest
import torch

import softrep
from softrep.nn.functional import regularization as R
from softrep.ops import elementwise as E


def bits(t):
    a = t.detach().contiguous().cpu().numpy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def special_values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=dtype) * 3
    flat = x.view(-1)
    info = torch.finfo(dtype)
    specials = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, info.tiny / 4, info.max,
                             -info.tiny * 3], dtype=dtype)
    flat[:min(8, flat.numel())] = specials[:flat.numel()]
    return x


def at(seed, offset):
    """A generator of `seed` whose next draw takes `offset`."""
    gen = softrep.Generator(seed)
    gen.set_state((seed, offset))
    return gen


def counting(monkeypatch):
    calls = [0]
    draw = R.dropout_draw

    def counted(*args):
        calls[0] += 1
        return draw(*args)

    monkeypatch.setattr(R, "dropout_draw", counted)
    return calls


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64))
@pytest.mark.parametrize("shape", ((1,), (7, 3), (64, 64), (3, 40000)))
def test_one_kernel_matches_separate_ops(monkeypatch, shape, dtype):
    calls = counting(monkeypatch)
    x = special_values(shape, dtype, 3)
    g = special_values(shape, dtype, 4)
    for p in (0.1, 0.5, 0.9, 1.0 / 3.0):
        gen = at(5, 11)
        xr = x.clone().requires_grad_()
        out = softrep.nn.functional.dropout(xr, p, generator=gen)
        assert gen.offset == 12  # one draw
        noise = R.dropout_noise(x, p, at(5, 11))  # the separate ops: the noise, then mul
        assert np.array_equal(bits(out), bits(E.mul(x, noise)))
        out.backward(g)
        assert np.array_equal(bits(xr.grad), bits(E.mul(g, noise)))
        with torch.no_grad():
            assert np.array_equal(bits(softrep.nn.functional.dropout(x, p, generator=at(5, 11))), bits(out))
    assert calls[0] == 8


def test_gradients_of_gradients_and_transforms():
    x = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: softrep.nn.functional.dropout(t, 0.3, generator=at(2, 0)), (x,))
    with pytest.raises(Exception, match="random"):
        torch.func.vmap(lambda t: softrep.nn.functional.dropout(t, 0.3, generator=at(2, 0)))(x)


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = special_values((9, 50), torch.float32, 6)
    y = special_values((70,), torch.float64, 7)

    def both():
        return [softrep.nn.functional.dropout(x, 0.4, generator=at(11, 3)),
                softrep.nn.functional.dropout(y, 0.25, generator=at(12, 0))]

    backend("cuda")
    sim = both()
    backend("cpu")
    cpu = both()
    for s, c in zip(sim, cpu):
        assert np.array_equal(bits(s), bits(c))
