"""relu and leaky_relu: forward and backward bits against MPFR products and
exact selections written out here; torch's special cases (relu(-0) = -0, NaN
stays NaN but canonical); gradcheck in float64; CPU == simulator bits."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from softrep.nn.functional.activations import leaky_relu, relu

from golden import bit_pattern_tensor, check, normal_tensor
from references import mpfr_op
from test_pooling import bits


def test_relu_bits():
    x = bit_pattern_tensor(60, (2000,))  # every class: NaN payloads, infinities, subnormals, zeros
    x[:4] = torch.tensor([-0.0, 0.0, float("-inf"), float("inf")])
    out = relu(x)
    xs = x.numpy()
    expect = np.where(np.isnan(xs), np.float32("nan"), np.where(xs < 0, np.float32(0.0), xs)).astype(np.float32)
    assert np.array_equal(bits(out), expect.view(np.uint32))
    assert bits(out)[0] == 0x80000000  # relu(-0) = -0, as torch
    finite = ~torch.isnan(x)
    assert torch.equal(out[finite], torch.relu(x)[finite])


@pytest.mark.parametrize("slope", [0.01, 0.2, -1.5])
def test_leaky_relu_bits(slope):
    x = bit_pattern_tensor(61, (600,))
    g = bit_pattern_tensor(62, (600,))
    xr = x.clone().requires_grad_()
    out = leaky_relu(xr, slope)
    (grad,) = torch.autograd.grad(out, xr, g)
    s = np.float32(slope)
    xs, gs = x.numpy(), g.numpy()
    e_out = np.array([v if v > 0 else mpfr_op("mul", [v, s], np.float32) for v in xs], np.float32)
    e_grad = np.array([gv if v > 0 else mpfr_op("mul", [gv, s], np.float32) for v, gv in zip(xs, gs)], np.float32)
    e_out[np.isnan(e_out)] = np.float32("nan")
    e_grad[np.isnan(e_grad)] = np.float32("nan")
    assert np.array_equal(bits(out), e_out.view(np.uint32))
    assert np.array_equal(bits(grad), e_grad.view(np.uint32))


def test_relu_backward_selects():
    x = torch.tensor([-1.0, -0.0, 0.0, 3.0, float("nan")], requires_grad=True)
    g = torch.tensor([5.0, 6.0, 7.0, 8.0, 9.0])
    (grad,) = torch.autograd.grad(relu(x), x, g)
    assert grad.tolist() == [0.0, 0.0, 0.0, 8.0, 9.0]  # torch's threshold_backward: NaN passes


def test_agree_with_torch_and_gradcheck():
    x = normal_tensor(63, (4, 5))
    assert torch.equal(relu(x), F.relu(x))
    assert torch.equal(leaky_relu(x, 0.1), F.leaky_relu(x, 0.1))
    xd = torch.randn(6, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).requires_grad_()
    assert torch.autograd.gradcheck(relu, (xd,))
    assert torch.autograd.gradcheck(lambda t: leaky_relu(t, 0.3), (xd,))
    assert torch.autograd.gradgradcheck(lambda t: leaky_relu(t, 0.3), (xd,))


def test_inplace_and_bad_input():
    x = normal_tensor(64, (3, 3))
    y = x.clone()
    assert relu(y, inplace=True) is y and torch.equal(y, F.relu(x))
    y = x.clone()
    assert leaky_relu(y, 0.2, True) is y and torch.equal(y, F.leaky_relu(x, 0.2))
    z = x.t()  # non-contiguous
    assert torch.equal(relu(z), F.relu(z))
    assert relu(torch.zeros(0, 3)).shape == (0, 3)
    with pytest.raises(TypeError, match="'input'"):
        relu(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(TypeError, match="'negative_slope'"):
        leaky_relu(x, "0.1")
    with pytest.raises(TypeError, match="'inplace'"):
        relu(x, inplace=None)


def test_golden():
    x = bit_pattern_tensor(65, (64, 16))
    check("pooling.json", "relu.bit_patterns", relu(x))
    check("pooling.json", "leaky_relu.bit_patterns", leaky_relu(x, 0.01))


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    x = bit_pattern_tensor(66, (16,))
    g = bit_pattern_tensor(67, (16,))

    def both():
        xr = x.clone().requires_grad_()
        out = leaky_relu(xr, 0.2)
        return [relu(x), out, torch.autograd.grad(out, xr, g)[0]]

    backend("cuda")
    sim = both()
    backend("cpu")
    cpu = both()
    for s, c in zip(sim, cpu):
        assert np.array_equal(bits(s), bits(c))
