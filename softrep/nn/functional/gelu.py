# softrep: no kernels
"""gelu(input, approximate='none'|'tanh'), torch.nn.functional.gelu's signature.

A fixed sequence of softrep ops (elementwise ops rounded to nearest and the
correctly rounded `erf` / `tanh` of softrep/algorithms/math), so the bits depend only on
the input.  Constants are Python floats (the nearest double to the real
constant), converted to the input's dtype by rounding to nearest.  The order
(docs/order.md, "gelu") is torch's:

    approximate='none':  mul(mul(x, 0.5), add(erf(mul(x, SQRT1_2)), 1))
    approximate='tanh':  inner = mul(add(x, mul(mul(mul(x, x), x), KAPPA)), BETA)
                         mul(mul(x, 0.5), add(tanh(inner), 1))

with SQRT1_2 = 1/sqrt(2), KAPPA = 0.044715, BETA = sqrt(2/pi).  The backward is
the autograd of these softrep ops (erf's and tanh's gradients are softrep ops
too), so it is reproducible as well; it is not a separately rounded formula.
"""

import torch

from ...ops import elementwise as E
from ...ops import mixed
from ...ops import math as M

SQRT1_2 = 0.7071067811865476  # 1/sqrt(2)
KAPPA = 0.044715
BETA = 0.7978845608028654  # sqrt(2/pi)
APPROXIMATIONS = ("none", "tanh")


@mixed.float32_compute("gelu")
def gelu(input, approximate="none"):
    """Gaussian error linear unit x Phi(x) (or its tanh approximation), in softrep's
    documented order; see the module docstring."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.gelu: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"softrep.gelu: argument 'approximate' must be 'none' or 'tanh'; got {approximate!r}")
    x = input
    half_x = E.mul(x, 0.5)
    if approximate == "none":
        return E.mul(half_x, E.add(M.erf(E.mul(x, SQRT1_2)), 1.0))
    inner = E.mul(E.add(x, E.mul(E.mul(E.mul(x, x), x), KAPPA)), BETA)
    return E.mul(half_x, E.add(M.tanh(inner), 1.0))
