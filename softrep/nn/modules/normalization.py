# softrep: no kernels
"""Normalization modules: torch's classes (parameters, buffers, state_dict and
initial values, which are constants), forward by softrep's functional ops.

BatchNorm's running statistics follow torch's definition: in training mode with
track_running_stats, num_batches_tracked += 1 (exact integer add), then
running = (1 - momentum) * running + momentum * batch statistic (unbiased
variance), computed by softrep.nn.functional.batch_norm; momentum=None is the
cumulative average, momentum = 1 / num_batches_tracked (a binary64 division).
"""

import torch

from .. import functional as F


class _BatchNormMixin:
    def forward(self, input):
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNormMixin, torch.nn.BatchNorm1d):
    """torch.nn.BatchNorm1d by softrep.nn.functional.batch_norm."""


class BatchNorm2d(_BatchNormMixin, torch.nn.BatchNorm2d):
    """torch.nn.BatchNorm2d by softrep.nn.functional.batch_norm."""


class LayerNorm(torch.nn.LayerNorm):
    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.RMSNorm):
    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)


class GroupNorm(torch.nn.GroupNorm):
    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)
