# softrep: no kernels
"""softrep.nn.Embedding: torch.nn.Embedding by softrep's embedding, initialised
N(0, 1) from a softrep Generator (one draw), padding_idx row then zeroed."""

import torch

from .. import functional as F
from .. import init
from ._common import generator_of, set_generator


class Embedding(torch.nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None,
                 *, generator=None):
        set_generator(self, "Embedding", generator)
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                         sparse, _weight, _freeze, device, dtype)

    def reset_parameters(self):
        init.normal_(self.weight, generator=generator_of(self))
        self._fill_padding_idx_with_zero()

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)
