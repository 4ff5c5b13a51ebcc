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

# torch.distributed.nn.functional takes torch.distributed.group.WORLD as a
# default argument value when it is first imported.  torch imports it lazily
# (building the first torch.optim optimizer does), and if that happens after
# init_process_group, those defaults hold the default group for good:
# destroy_process_group cannot free it, and its gloo worker threads live into
# interpreter shutdown.  A collective issued during backward (as the gradient
# exchange is) carries a Python object to its worker thread; released there
# after shutdown has begun, it aborts the process ("terminate called without
# an active exception").  Importing the module here, before the user's
# init_process_group, binds the defaults to None.
import torch.distributed.nn.functional  # noqa: F401

from .accumulate import GradientAccumulator, Step
from .checkpoint import checkpoint_state, load_checkpoint, save_checkpoint
from .parallel import DistributedDataParallel, DistributedSampler

__all__ = ["GradientAccumulator", "Step", "DistributedDataParallel", "DistributedSampler", "checkpoint_state",
           "load_checkpoint", "save_checkpoint"]
