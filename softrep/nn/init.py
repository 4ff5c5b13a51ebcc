# softrep: no kernels
"""softrep.nn.init: torch.nn.init's initialisers drawing from a softrep Generator.

Formulas and defaults are torch's.  The draw is `softrep.rand` / `softrep.randn`
(default: the global generator), and the affine map onto the requested range
is one rounded softrep fma; the host scalars (bounds, standard deviations) are
binary64 IEEE operations (math.sqrt, +, *, /).  Exact order: docs/training.md
("Initialisation").
"""

import math

import torch

from ..ops.elementwise import fma
from ..ops.random import rand, randn

from ..ops.generator import resolve


def _check(fn, tensor):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"softrep.nn.init.{fn}: argument 'tensor' must be a tensor, got {type(tensor).__name__}")
    if tensor.dtype not in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        # bfloat16/float16: the draw and the fma in the tensor's own format (one rounding each)
        raise TypeError(f"softrep.nn.init.{fn}: argument 'tensor' must be float32, float64, bfloat16 or float16, "
                        f"got {tensor.dtype}")


def _fill(tensor, values):
    with torch.no_grad():
        tensor.copy_(values)
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """U(a, b): fma(u, b - a, a) with u = softrep.rand in tensor's dtype."""
    _check("uniform_", tensor)
    gen = resolve("nn.init.uniform_", generator)
    u = rand(tuple(tensor.shape), generator=gen, dtype=tensor.dtype, device=tensor.device)
    return _fill(tensor, fma(u, float(b) - float(a), float(a)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """N(mean, std^2): fma(z, std, mean) with z = softrep.randn in tensor's dtype."""
    _check("normal_", tensor)
    gen = resolve("nn.init.normal_", generator)
    z = randn(tuple(tensor.shape), generator=gen, dtype=tensor.dtype, device=tensor.device)
    return _fill(tensor, fma(z, float(std), float(mean)))


MAX_TRUNC_ROUNDS = 1000


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) restricted to [a, b], by rejection: round j draws
    x_j = fma(randn, std, mean) (one generator offset per round) and each element
    keeps its first x_j inside [a, b].  Element i depends only on (seed, first
    offset, i); the number of offsets consumed is the number of rounds needed."""
    _check("trunc_normal_", tensor)
    if not float(a) < float(b):
        raise ValueError(f"softrep.nn.init.trunc_normal_: arguments 'a' and 'b' need a < b, got a={a}, b={b}")
    gen = resolve("nn.init.trunc_normal_", generator)
    shape = tuple(tensor.shape)
    result = torch.empty(shape, dtype=tensor.dtype, device=tensor.device)
    pending = torch.ones(shape, dtype=torch.bool, device=tensor.device)
    for _ in range(MAX_TRUNC_ROUNDS):
        if not bool(pending.any()):
            return _fill(tensor, result)
        z = randn(shape, generator=gen, dtype=tensor.dtype, device=tensor.device)
        x = fma(z, float(std), float(mean))
        take = pending & (x >= a) & (x <= b)
        result = torch.where(take, x, result)
        pending = pending & ~take
    if bool(pending.any()):
        raise ValueError("softrep.nn.init.trunc_normal_: [a, b] has too little probability mass under "
                         f"N(mean, std^2) (no sample inside after {MAX_TRUNC_ROUNDS} rounds)")
    return _fill(tensor, result)


def _fans(fn, tensor):
    if tensor.dim() < 2:
        raise ValueError(f"softrep.nn.init.{fn}: fan in and fan out need a tensor with at least 2 dimensions, "
                         f"got {tensor.dim()}")
    receptive = math.prod(tensor.shape[2:]) if tensor.dim() > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(fn, tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"softrep.nn.init.{fn}: argument 'mode' must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(fn, tensor)
    return fan_in if mode == "fan_in" else fan_out


def calculate_gain(nonlinearity, param=None):
    """torch.nn.init.calculate_gain; leaky_relu: sqrt(2 / (1 + slope * slope)) in binary64."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"softrep.nn.init.calculate_gain: negative_slope {slope!r} is not a valid number")
        return math.sqrt(2.0 / (1.0 + float(slope) * float(slope)))
    try:
        return torch.nn.init.calculate_gain(nonlinearity, param)
    except ValueError as err:
        raise ValueError(f"softrep.nn.init.calculate_gain: {err}") from None


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound), bound = sqrt(3) * gain / sqrt(fan)."""
    _check("kaiming_uniform_", tensor)
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan("kaiming_uniform_", tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2), std = gain / sqrt(fan)."""
    _check("kaiming_normal_", tensor)
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan("kaiming_normal_", tensor, mode))
    return normal_(tensor, 0.0, std, generator=generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-bound, bound), bound = sqrt(3) * gain * sqrt(2 / (fan_in + fan_out))."""
    _check("xavier_uniform_", tensor)
    fan_in, fan_out = _fans("xavier_uniform_", tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    _check("xavier_normal_", tensor)
    fan_in, fan_out = _fans("xavier_normal_", tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator=generator)


__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
           "xavier_uniform_", "xavier_normal_"]
