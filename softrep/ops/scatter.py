"""The ordered scatter-sum of rows as one CPU launch: no autograd.

out[r] is the documented sum (docs/order.md, "Reductions") of the rows
src[i] with index[i] == r, in increasing i: +0 where none lands, the row
itself where one does.  softrep.nn.functional.sparse builds the same sums
from torch's index ops and `softrep.sum` (sorted, bucketed and padded with
-0); on the CPU launcher this kernel computes them directly
(softrep/cpu/scatter.py), with the same bits.
"""

import torch

from . import backend
from ..cpu import scatter as cpu_scatter


def ordered_scatter_sum(src, index, num_rows):
    """(num_rows, D) from src (n, D) and an int64 index (n,) with entries in
    [-1, num_rows) (-1 drops the row), or None where the kernel does not run:
    tensors not for the CPU launcher, or not plain float32/float64 ones."""
    if (type(src) is not torch.Tensor or src.dtype not in (torch.float32, torch.float64)
            or index.dtype != torch.int64 or not backend.on_cpu_launcher(src, index)):
        return None
    out = torch.empty((num_rows, src.shape[1]), dtype=src.dtype)
    backend.execute(cpu_scatter.scatter_sum_rows, None, [out], [src.contiguous(), index.contiguous()],
                    work=src.numel())
    return out
