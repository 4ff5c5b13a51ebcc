# softrep: no kernels
"""softrep.nn: reproducible layers with torch.nn's names (see softrep/nn/modules),
their functional ops (softrep.nn.functional) and initialisers (softrep.nn.init)."""

from . import functional, init  # noqa: F401
from .modules import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BCEWithLogitsLoss, Conv1d, Conv2d,
                      CrossEntropyLoss, Dropout, Embedding, Flatten, GELU, GroupNorm, Identity, LayerNorm, LeakyReLU,
                      Linear, LogSoftmax, MaxPool2d, ModuleDict, ModuleList, MSELoss, MultiheadAttention, NLLLoss,
                      ReLU, RMSNorm, Sequential, Sigmoid, SiLU, Softmax, Tanh, TransformerEncoder,
                      TransformerEncoderLayer, Unflatten)

__all__ = [
    "Linear", "Conv1d", "Conv2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm", "GroupNorm", "Embedding",
    "Dropout", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
    "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
    "CrossEntropyLoss", "MSELoss", "NLLLoss", "BCEWithLogitsLoss",
    "Flatten", "Unflatten", "Identity", "Sequential", "ModuleList", "ModuleDict",
]
