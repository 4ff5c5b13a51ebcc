"""softrep.nn.init: values equal the documented fma of the softrep draw (MPFR
reference), with bounds / standard deviations from torch's documented formulas."""

import math

import numpy as np
import pytest
import torch

import softrep
from softrep.nn import init
from references import mpfr_op


def _fma_ref(draw, scale, shift):
    """mpfr fma(draw, scale, shift) per element in float32, scale/shift rounded to float32 first."""
    s, c = np.float32(scale), np.float32(shift)
    return np.array([mpfr_op("fma", (np.float32(d), s, c), np.float32) for d in draw.reshape(-1).tolist()],
                    dtype=np.float32).reshape(draw.shape)


def _same(t, ref):
    assert t.detach().numpy().tobytes() == ref.tobytes()


@pytest.mark.parametrize("name", ["uniform", "kaiming_uniform", "xavier_uniform"])
def test_uniform_family_exact(name):
    t = torch.empty(6, 4, 3)
    fan_in, fan_out = 4 * 3, 6 * 3
    if name == "uniform":
        init.uniform_(t, -0.5, 2.0, generator=softrep.Generator(1))
        low, high = -0.5, 2.0
    elif name == "kaiming_uniform":
        init.kaiming_uniform_(t, a=math.sqrt(5), generator=softrep.Generator(1))
        high = math.sqrt(6.0 / ((1 + 5.0) * fan_in))  # torch doc: gain * sqrt(3 / fan_in)
        low = -high
    else:
        init.xavier_uniform_(t, gain=2.0, generator=softrep.Generator(1))
        high = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
        low = -high
    u = softrep.rand(6, 4, 3, generator=softrep.Generator(1))
    _same(t, _fma_ref(u.numpy(), high - low, low))
    assert t.min() >= np.float32(low) and t.max() <= np.float32(high)


@pytest.mark.parametrize("name", ["normal", "kaiming_normal", "xavier_normal"])
def test_normal_family_exact(name):
    t = torch.empty(5, 8)
    fan_in, fan_out = 8, 5
    if name == "normal":
        init.normal_(t, 0.25, 3.0, generator=softrep.Generator(2))
        mean, std = 0.25, 3.0
    elif name == "kaiming_normal":
        init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu", generator=softrep.Generator(2))
        mean, std = 0.0, math.sqrt(2.0) / math.sqrt(fan_out)
    else:
        init.xavier_normal_(t, generator=softrep.Generator(2))
        mean, std = 0.0, math.sqrt(2.0 / (fan_in + fan_out))
    z = softrep.randn(5, 8, generator=softrep.Generator(2))
    _same(t, _fma_ref(z.numpy(), std, mean))


def test_statistics_match_torch_formulas():
    t = torch.empty(400, 250)
    init.kaiming_normal_(t, generator=softrep.Generator(3))
    std = math.sqrt(2.0) / math.sqrt(250)  # gain for leaky_relu with a=0 is sqrt(2)
    assert abs(t.double().std().item() / std - 1) < 0.02
    init.xavier_uniform_(t, generator=softrep.Generator(3))
    bound = math.sqrt(6.0 / 650)
    assert abs(t.double().var().item() / (bound * bound / 3) - 1) < 0.02


def test_trunc_normal():
    t = torch.empty(2000, dtype=torch.float64)
    init.trunc_normal_(t, mean=0.5, std=2.0, a=-1.0, b=1.5, generator=softrep.Generator(4))
    assert t.min() >= -1.0 and t.max() <= 1.5
    z = softrep.randn(2000, generator=softrep.Generator(4), dtype=torch.float64)
    first = 0.5 + 2.0 * z  # exact here: z is a widened float32, 2z exact, one rounding of the sum
    inside = (first >= -1.0) & (first <= 1.5)
    assert torch.equal(t[inside], first[inside]) and 0 < inside.sum() < 2000
    t2 = torch.empty(2000, dtype=torch.float64)
    init.trunc_normal_(t2, mean=0.5, std=2.0, a=-1.0, b=1.5, generator=softrep.Generator(4))
    assert torch.equal(t, t2)


def test_default_generator_and_returns_tensor():
    softrep.manual_seed(5)
    a = torch.empty(3, 3)
    assert init.xavier_normal_(a) is a
    softrep.manual_seed(5)
    assert torch.equal(init.xavier_normal_(torch.empty(3, 3)), a)
    p = torch.nn.Parameter(torch.empty(2, 2))
    init.uniform_(p)  # parameters that require grad are filled without autograd errors
    assert p.requires_grad


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        init.kaiming_uniform_(torch.empty(3))
    with pytest.raises(ValueError, match="'mode'"):
        init.kaiming_normal_(torch.empty(3, 3), mode="fan")
    with pytest.raises(TypeError, match="'tensor'"):
        init.normal_(torch.empty(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="'a' and 'b'"):
        init.trunc_normal_(torch.empty(3), a=1.0, b=0.0)
    with pytest.raises(ValueError, match="nonlinearity"):
        init.kaiming_uniform_(torch.empty(3, 3), nonlinearity="bogus")


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    def draws():
        t = torch.empty(3, 2)
        return [init.kaiming_uniform_(t.clone(), generator=softrep.Generator(6)),
                init.trunc_normal_(t.clone(), generator=softrep.Generator(6))]

    sim = draws()
    backend("cpu")
    for s, c in zip(sim, draws()):
        assert s.numpy().tobytes() == c.numpy().tobytes()
