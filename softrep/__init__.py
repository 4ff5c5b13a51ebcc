"""softrep: bitwise-reproducible deep learning.

Every floating-point operation is an IEEE-754 operation with a named rounding,
every reduction follows the order written in docs/order.md, and the same
algorithm source runs on the CPU (Numba) and on CUDA (numba-cuda).

The package is layered, each layer importing only from those below it
(docs/architecture.md):

    primitives  rounding, formats, Philox, the jit helpers
    algorithms  math kernels, products, convolution, reduction order, random draws
    cpu, cuda   schedules: packing, tiling, grids, threads
    ops         tensor ops and their autograd Functions
    nn, optim   layers, functional ops, optimizers
    tools       audit, patch, record and replay, verify, demo
"""

from . import cpu, cuda  # noqa: F401  (CPU primitives; CUDA ones at the first CUDA use)
from . import nn, optim  # noqa: F401
from .nn.functional import (adaptive_avg_pool2d, avg_pool2d, batch_norm, binary_cross_entropy_with_logits,
                            cross_entropy, dropout, embedding, gelu, group_norm, layer_norm, leaky_relu,
                            log_softmax, max_pool2d, mish, mse_loss, nll_loss, relu, rms_norm,
                            scaled_dot_product_attention, silu, softmax, softplus)
from .nn.functional.activations import logsumexp
from .ops.conv import conv1d, conv2d
from .ops.elementwise import abs, add, div, fma, mul, neg, reciprocal, sqrt, square, sub
from .ops.generator import Generator, manual_seed
from .ops.lowp import quantize_mx, round_to
from .ops.math import (atan, cbrt, cos, cosh, erf, erfc, exp, exp2, exp10, expm1, hypot, log, log1p, log2, log10,
                       pow, rsqrt, sigmoid, sin, sinh, tan, tanh)
from .ops.products import addmm, bmm, dot, linear, matmul, mm, scaled_mm
from .ops.random import bernoulli, rand, randint, randn, randperm
from .ops.reduction import amax, amin, argmax, argmin, mean, std, sum, var
from .primitives.formats import Format, MXFormat
from .tools.convert import UnsupportedModuleError, from_torch_module
from .tools.dispatch import NotReproducibleError, audit, patch, reproducible
from .tools.fingerprint import fingerprint
from .tools.recording import ReplayDivergenceError, ReplayLogError, record, replay
from .tools.version import __version__

__all__ = [
    # elementwise arithmetic, one rounding each
    "abs", "add", "div", "fma", "mul", "neg", "reciprocal", "sqrt", "square", "sub",
    # reductions
    "amax", "amin", "argmax", "argmin", "mean", "std", "sum", "var",
    # correctly rounded math
    "atan", "cbrt", "cos", "cosh", "erf", "erfc", "exp", "exp2", "exp10", "expm1", "hypot", "log", "log1p",
    "log2", "log10", "pow", "rsqrt", "sigmoid", "sin", "sinh", "tan", "tanh",
    # products and convolution
    "addmm", "bmm", "dot", "linear", "matmul", "mm", "scaled_mm", "conv1d", "conv2d",
    # neural-network functions
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits", "cross_entropy",
    "dropout", "embedding", "gelu", "group_norm", "layer_norm", "leaky_relu", "log_softmax", "logsumexp",
    "max_pool2d", "mish", "mse_loss", "nll_loss", "relu", "rms_norm", "scaled_dot_product_attention", "silu",
    "softmax", "softplus",
    # randomness and low precision
    "Generator", "manual_seed", "bernoulli", "rand", "randint", "randn", "randperm", "Format", "round_to",
    "MXFormat", "quantize_mx",
    # tools
    "fingerprint", "from_torch_module", "UnsupportedModuleError", "audit", "patch", "reproducible",
    "NotReproducibleError", "record", "replay", "ReplayDivergenceError", "ReplayLogError",
]
