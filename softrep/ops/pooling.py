"""max_pool2d's windows as one kernel: each window's winner and its value."""

import torch

from . import backend
from ..cpu import pooling as cpu_pooling
from ..cuda import pooling as cuda_pooling

# A window position costs about as much as four elements of an elementwise
# op (its order key, a comparison and a select), which is what the serial
# threshold of `backend.execute` counts (docs/benchmarks.md).
_POSITION_WORK = 4


def max_windows(planes, out_size, kernel, stride, padding, dilation):
    """(values, indices) of planes (P, H, W): for every window (P, OH, OW) of
    max_pool2d's geometry, the winner's value (a copy, NaN canonical) and its
    in-plane index ih * W + iw (int64), found by
    softrep.algorithms.pooling.window_argmax.  No autograd: the caller's
    Function owns the gradient."""
    planes = planes.detach().contiguous()
    shape = (planes.shape[0], *out_size)
    values = torch.empty(shape, dtype=planes.dtype, device=planes.device)
    idx = torch.empty(shape, dtype=torch.int64, device=planes.device)
    backend.execute(cpu_pooling.max_windows, cuda_pooling.max_windows, [values, idx], [planes],
                    *kernel, *stride, *padding, *dilation, work=idx.numel() * kernel[0] * kernel[1] * _POSITION_WORK)
    return values, idx
