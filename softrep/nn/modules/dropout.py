# softrep: no kernels
"""softrep.nn.Dropout: the mask comes from softrep's counter-based generator
(`generator=`, default the global one): one draw per forward call in training
mode, none in eval mode.  `inplace=True` is computed out of place."""

import torch

from .. import functional as F
from ._common import generator_of, set_generator


class Dropout(torch.nn.Dropout):
    def __init__(self, p=0.5, inplace=False, *, generator=None):
        set_generator(self, "Dropout", generator)
        super().__init__(p, inplace)

    def forward(self, input):
        return F.dropout(input, self.p, self.training, generator=generator_of(self))
