# softrep: no kernels
"""softrep.nn.Linear: torch.nn.Linear computed by softrep.linear, initialised from a softrep Generator."""

import math

import torch

from .. import functional as F
from .. import init
from ._common import generator_of, set_generator


def reset_weight_and_bias(module):
    """torch's default for Linear and ConvNd: weight kaiming_uniform_(a=sqrt(5)),
    then bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (0 when fan_in is 0); two draws
    from the module's generator, weight first."""
    gen = generator_of(module)
    init.kaiming_uniform_(module.weight, a=math.sqrt(5), generator=gen)
    if module.bias is not None:
        fan_in = module.weight.shape[1] * math.prod(module.weight.shape[2:])
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(module.bias, -bound, bound, generator=gen)


class Linear(torch.nn.Linear):
    """torch.nn.Linear (same arguments, parameters and state_dict); forward is
    softrep.linear; `generator=` (a softrep.Generator, default the global one)
    draws the initial weight and bias."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *, generator=None):
        set_generator(self, "Linear", generator)
        super().__init__(in_features, out_features, bias, device, dtype)

    def reset_parameters(self):
        reset_weight_and_bias(self)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)
