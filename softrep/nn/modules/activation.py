# softrep: no kernels
"""Activation modules: torch's classes (same arguments and repr) whose forward is
the softrep function.  `inplace=True` is accepted and computed out of place:
softrep ops never modify their inputs, and the result bits are the same."""

import torch

from .. import functional as F


class ReLU(torch.nn.ReLU):
    def forward(self, input):
        return F.relu(input)


class LeakyReLU(torch.nn.LeakyReLU):
    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)


class GELU(torch.nn.GELU):
    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)


class SiLU(torch.nn.SiLU):
    def forward(self, input):
        return F.silu(input)


class Tanh(torch.nn.Tanh):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(torch.nn.Sigmoid):
    def forward(self, input):
        return F.sigmoid(input)


def _dim(module, name, input):
    # dim=None is torch's legacy implicit choice (with its deprecation warning): same rule here
    if module.dim is None:
        return torch.nn.functional._get_softmax_dim(name, input.dim(), 5)
    return module.dim


class Softmax(torch.nn.Softmax):
    def forward(self, input):
        return F.softmax(input, _dim(self, "softmax", input))


class LogSoftmax(torch.nn.LogSoftmax):
    def forward(self, input):
        return F.log_softmax(input, _dim(self, "log_softmax", input))
