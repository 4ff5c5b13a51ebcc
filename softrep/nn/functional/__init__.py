# softrep: no kernels
"""softrep.nn.functional: softrep's reproducible ops under torch.nn.functional's names.

Every function here is the softrep op of the same name (signatures and
defaults follow torch.nn.functional); this module only gathers them, so
`import softrep.nn.functional as F` is a drop-in for torch's `F` in model code.
The bits of each op are specified where the op lives (docs/order.md,
docs/training.md).
"""

from .activations import leaky_relu, log_softmax, mish, relu, silu, softmax, softplus
from .attention import scaled_dot_product_attention
from ...ops.conv import conv1d, conv2d
from .regularization import dropout
from .sparse import embedding
from .gelu import gelu
from .losses import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss
from ...ops.math import sigmoid, tanh
from .normalization import batch_norm, group_norm, layer_norm, rms_norm
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from ...ops.products import linear

__all__ = [
    "linear", "conv1d", "conv2d",
    "batch_norm", "layer_norm", "rms_norm", "group_norm",
    "embedding", "dropout",
    "relu", "leaky_relu", "gelu", "silu", "mish", "softplus", "tanh", "sigmoid", "softmax", "log_softmax",
    "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "scaled_dot_product_attention",
    "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits",
]
