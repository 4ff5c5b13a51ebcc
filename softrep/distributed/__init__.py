# softrep: no kernels
"""softrep.distributed: one training run, the same bits on 1 process, on N
data-parallel ranks and with any micro-batch split (docs/distributed.md).

* `GradientAccumulator`: one optimizer step as several micro-batches.
* `DistributedDataParallel`, `DistributedSampler`: data parallelism on
  torch.distributed (gloo on CPU, NCCL on CUDA), torch's names and arguments.
* `save_checkpoint`, `load_checkpoint`: model, optimizer, Generators, sampler
  position; a resumed run continues with the bits of an uninterrupted one, on
  any world size.

All of it rests on the batch order of docs/order.md: every reduction over the
batch is a fixed tree over the global sample positions.
"""

from .accumulate import GradientAccumulator, Step
from .checkpoint import checkpoint_state, load_checkpoint, save_checkpoint
from .parallel import DistributedDataParallel, DistributedSampler

__all__ = ["GradientAccumulator", "Step", "DistributedDataParallel", "DistributedSampler", "checkpoint_state",
           "load_checkpoint", "save_checkpoint"]
