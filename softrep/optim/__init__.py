# softrep: no kernels
"""softrep.optim: SGD, Adam and AdamW whose updates are sequences of explicitly
rounded softrep elementwise ops, in the order written in docs/training.md
("Optimizers").  The classes subclass torch.optim.Optimizer, with torch's
param-group keys and state names, so their state_dict is torch's and a torch
optimizer's state_dict loads into them (and back)."""

from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .grad_scaler import GradScaler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "GradScaler"]
