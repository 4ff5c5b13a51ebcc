# softrep: no kernels
"""softrep.nn modules: torch.nn's classes with softrep forwards.

Each class subclasses the torch module of the same name, so constructor
arguments, defaults, parameter and buffer names, state_dict, repr and
train/eval behaviour are torch's; forward is made of softrep ops, and
parameters that torch initialises randomly are drawn from a softrep Generator
(`generator=`, default the global one) with torch's formulas.
Flatten, Unflatten, Identity and the containers compute nothing that rounds
and are torch's own classes.
"""

from torch.nn import Flatten, Identity, ModuleDict, ModuleList, Sequential, Unflatten

from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .linear import Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sparse import Embedding
from .transformer import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer

# the classes with a softrep forward (each subclasses the torch class of its name)
CONVERTED = (
    Linear, Conv1d, Conv2d, BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm, GroupNorm, Embedding, Dropout,
    MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
    ReLU, LeakyReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, LogSoftmax,
    MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
    CrossEntropyLoss, MSELoss, NLLLoss, BCEWithLogitsLoss,
)
# torch classes used as they are: they move values but never round
EXACT = (Flatten, Unflatten, Identity, Sequential, ModuleList, ModuleDict)

__all__ = [cls.__name__ for cls in CONVERTED + EXACT]
