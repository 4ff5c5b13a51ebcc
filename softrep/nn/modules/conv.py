# softrep: no kernels
"""softrep.nn.Conv1d / Conv2d: torch's modules computed by softrep.conv1d / conv2d."""

import torch

from .. import functional as F
from ._common import set_generator
from .linear import reset_weight_and_bias


def _check_padding_mode(cls_name, padding_mode):
    if padding_mode != "zeros":
        raise NotImplementedError(f"softrep.nn.{cls_name}: argument 'padding_mode' must be 'zeros' "
                                  f"(softrep implements zero padding only), got {padding_mode!r}")


class _ConvMixin:
    _fn = None

    @classmethod
    def _softrep_unsupported(cls, module):
        if module.padding_mode != "zeros":
            return f"padding_mode={module.padding_mode!r} (softrep implements 'zeros' only)"
        return None

    def reset_parameters(self):
        reset_weight_and_bias(self)

    def _conv_forward(self, input, weight, bias):
        # torch's padding attribute is either a string ('same'/'valid') or a tuple; softrep takes both.
        return type(self)._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvMixin, torch.nn.Conv1d):
    """torch.nn.Conv1d computed by softrep.conv1d (padding_mode 'zeros' only);
    `generator=` draws the initial weight and bias."""

    _fn = staticmethod(F.conv1d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, *, generator=None):
        _check_padding_mode("Conv1d", padding_mode)
        set_generator(self, "Conv1d", generator)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)


class Conv2d(_ConvMixin, torch.nn.Conv2d):
    """torch.nn.Conv2d computed by softrep.conv2d (padding_mode 'zeros' only);
    `generator=` draws the initial weight and bias."""

    _fn = staticmethod(F.conv2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, *, generator=None):
        _check_padding_mode("Conv2d", padding_mode)
        set_generator(self, "Conv2d", generator)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
