"""max_pool2d's window winners as one kernel: indices only, no gradient."""

import torch

from . import backend
from ..cpu import pooling as cpu_pooling
from ..cuda import pooling as cuda_pooling


def _launch(planes, out_size, kernel, stride, padding, dilation):
    planes = planes.detach().contiguous()
    idx = torch.empty((planes.shape[0], *out_size), dtype=torch.int64, device=planes.device)
    backend.execute(cpu_pooling.max_indices, cuda_pooling.max_indices, [idx], [planes],
                    *kernel, *stride, *padding, *dilation, work=idx.numel() * kernel[0] * kernel[1])
    return idx


class MaxWindowIndices(backend.Function):
    """int64 (P, OH, OW): for planes x (P, H, W), the in-plane index ih * W + iw
    of every window's winner (softrep.algorithms.pooling.window_argmax).  An
    index has no gradient; the Function exists for its batching rule."""

    @staticmethod
    def forward(x, out_size, kernel, stride, padding, dilation):
        return _launch(x, out_size, kernel, stride, padding, dilation)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def backward(ctx, g):
        return None, None, None, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, out_size, kernel, stride, padding, dilation):
        # every plane's windows are found alone: the samples' planes run as one batch of planes
        xb = x.movedim(in_dims[0], 0)
        B, P = xb.shape[0], xb.shape[1]
        idx = _launch(xb.reshape(B * P, *xb.shape[2:]), out_size, kernel, stride, padding, dilation)
        return idx.reshape(B, P, *out_size), 0


def max_window_indices(x, out_size, kernel, stride, padding, dilation):
    """MaxWindowIndices of planes x (P, H, W): the windows' winners."""
    return MaxWindowIndices.apply(x, tuple(out_size), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation))
