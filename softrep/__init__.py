"""softrep: bitwise-reproducible deep learning.

Every floating-point operation is an IEEE-754 operation with a named rounding,
every reduction follows the order written in docs/order.md, and the same
algorithm source runs on the CPU (Numba) and on CUDA (numba-cuda).
"""

from . import cpu, cuda, rounding  # noqa: F401  (registers the primitives)
from .elementwise import abs, add, div, fma, mul, neg, reciprocal, sqrt, square, sub
from . import reduction  # noqa: F401
from .reduction import amax, amin, argmax, argmin, mean, std, sum, var
from . import lowp  # noqa: F401
from .formats import Format
from .lowp import round_to
from .random import Generator, manual_seed

__version__ = "0.1.0"

__all__ = [
    "abs", "add", "div", "fma", "mul", "neg", "reciprocal", "sqrt", "square", "sub",
    "amax", "amin", "argmax", "argmin", "mean", "std", "sum", "var",
    "Format", "Generator", "manual_seed", "round_to",
]

# Correctly rounded math functions (one per softrep/math module: exp, log, tanh, ...)
# and the DL functions built from them.
from . import math as _mathlib  # noqa: E402
from .math import *  # noqa: E402,F401,F403
from .activations import log_softmax, logsumexp, mish, silu, softmax, softplus  # noqa: E402
from .gelu import gelu  # noqa: E402

__all__ += _mathlib.__all__ + ["log_softmax", "logsumexp", "mish", "silu", "softmax", "softplus"]
__all__ += ["gelu"]

from .products import addmm, bmm, dot, linear, matmul, mm  # noqa: E402
from .conv import conv1d, conv2d  # noqa: E402

__all__ += ["addmm", "bmm", "dot", "linear", "matmul", "mm", "conv1d", "conv2d"]

from .normalization import batch_norm, group_norm, layer_norm, rms_norm  # noqa: E402
from .losses import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss  # noqa: E402

__all__ += ["batch_norm", "group_norm", "layer_norm", "rms_norm",
            "binary_cross_entropy_with_logits", "cross_entropy", "mse_loss", "nll_loss"]

from .activations import leaky_relu, relu  # noqa: E402
from .attention import scaled_dot_product_attention  # noqa: E402
from .dropout import dropout  # noqa: E402
from .embedding import embedding  # noqa: E402
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d  # noqa: E402

__all__ += ["relu", "leaky_relu", "scaled_dot_product_attention", "dropout", "embedding",
            "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]

from .fingerprint import fingerprint  # noqa: E402
from .random_ops import bernoulli, rand, randint, randn, randperm  # noqa: E402
from . import optim, nn  # noqa: E402,F401
from .convert import UnsupportedModuleError, from_torch_module  # noqa: E402

__all__ += ["fingerprint", "bernoulli", "rand", "randint", "randn", "randperm"]
__all__ += ["from_torch_module", "UnsupportedModuleError"]

from .dispatch import NotReproducibleError, audit, patch, reproducible  # noqa: E402

__all__ += ["audit", "patch", "reproducible", "NotReproducibleError"]

from .recording import ReplayDivergenceError, ReplayLogError, record, replay  # noqa: E402

__all__ += ["record", "replay", "ReplayDivergenceError", "ReplayLogError"]
