# softrep: no kernels
"""softrep.nn.functional: softrep's reproducible ops under torch.nn.functional's names.

Every function here is the softrep op of the same name (signatures and
defaults follow torch.nn.functional); this module only gathers them, so
`import softrep.nn.functional as F` is a drop-in for torch's `F` in model code.
The bits of each op are specified where the op lives (docs/order.md,
docs/training.md).
"""

import importlib

from ..activations import log_softmax, silu, softmax
from ..conv import conv1d, conv2d
from ..gelu import gelu
from ..math import sigmoid, tanh
from ..products import linear

# name -> softrep module that defines it, for the ops imported on first use
# (their modules import this package's parents, so they are not loaded eagerly).
_LAZY = {
    "batch_norm": "normalization", "layer_norm": "normalization", "rms_norm": "normalization",
    "group_norm": "normalization",
    "cross_entropy": "losses", "nll_loss": "losses", "mse_loss": "losses",
    "binary_cross_entropy_with_logits": "losses",
    "relu": "activations", "leaky_relu": "activations",
    "max_pool2d": "pooling", "avg_pool2d": "pooling", "adaptive_avg_pool2d": "pooling",
    "embedding": "embedding", "dropout": "dropout",
    "scaled_dot_product_attention": "attention",
}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"softrep.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'softrep.nn.functional' has no attribute {name!r}")


__all__ = ["linear", "conv1d", "conv2d", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax"] + list(_LAZY)
