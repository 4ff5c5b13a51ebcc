# softrep: no kernels
"""DistributedDataParallel and DistributedSampler on torch.distributed, with
the bits of one process (docs/distributed.md).

Each rank computes a contiguous slice of every global batch (rank r: the
samples [start_r, stop_r) in rank order).  A rank's gradient of a parameter is
the set of maximal nodes of the batch tree inside its slice (at most about
2 log2 N tensors of the parameter's shape); the nodes of all ranks are
all-gathered and every rank completes the same tree, so every rank holds the
one-process gradient.  Batch-norm statistics all-gather each rank's per-sample
partials (N x C values) and every rank adds the same tree.  Only
torch.distributed collectives are used (gloo on CPU, NCCL on CUDA).
"""

import contextlib

import torch
import torch.distributed as dist

from ..ops import batchtree
from ..ops.random import randperm
from ..ops.generator import Generator
from .accumulate import GradientAccumulator


def _group_size(group):
    return dist.get_world_size(group)


def _all_gather_padded(flat, sizes, group):
    """Every rank's 1-D tensor (rank r's has sizes[r] elements), in rank order."""
    width = max(sizes)
    padded = torch.zeros(width, dtype=flat.dtype, device=flat.device)
    padded[:flat.numel()] = flat
    out = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(out, padded, group=group)
    return [t[:n] for t, n in zip(out, sizes)]


class _Exchange:
    """The collectives of one step: the ranks' slices, the gathers of tree nodes
    and of batch-norm partials."""

    def __init__(self, group, local_size, device):
        self.group = group
        world = _group_size(group)
        sizes = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
        dist.all_gather(sizes, torch.tensor([int(local_size)], dtype=torch.int64, device=device), group=group)
        self.sizes = [int(s.item()) for s in sizes]
        self.rank = dist.get_rank(group)
        self.starts = [sum(self.sizes[:r]) for r in range(world)]
        self.total = sum(self.sizes)

    @property
    def start(self):
        return self.starts[self.rank]

    @property
    def stop(self):
        return self.starts[self.rank] + self.sizes[self.rank]

    def gather_partials(self, partials):
        """All ranks' per-sample partials (their slices in rank order): (N, ...)."""
        rest = tuple(partials.shape[1:])
        per = 1
        for s in rest:
            per *= s
        parts = _all_gather_padded(partials.detach().reshape(-1), [n * per for n in self.sizes], self.group)
        return torch.cat([p.reshape(n, *rest) for p, n in zip(parts, self.sizes)])

    def gather_nodes(self, node_lists, loss_lists):
        """Every rank's maximal nodes of every gradient and loss: rank r's are those
        of its slice [start_r, stop_r), known to all ranks, so only values travel."""
        lists = list(node_lists) + list(loss_lists)
        if not lists:
            return node_lists, loss_lists
        keys = [batchtree.range_nodes_keys(a, a + n, self.total) for a, n in zip(self.starts, self.sizes)]
        mine = keys[self.rank]
        for nodes in lists:
            if [(level, j) for level, j, _ in nodes] != mine:
                raise RuntimeError("softrep.distributed: this rank's tree nodes do not match its slice "
                                   f"[{self.start}, {self.stop}); every rank must run the same model code")
        shapes = [nodes[0][2].shape if nodes else None for nodes in lists]
        by_dtype = {}
        for i, nodes in enumerate(lists):
            by_dtype.setdefault(nodes[0][2].dtype if nodes else None, []).append(i)
        gathered = [[[] for _ in lists] for _ in keys]
        for dtype, members in by_dtype.items():
            if dtype is None:
                continue
            numel = [lists[i][0][2].numel() for i in members]
            flat = torch.cat([value.reshape(-1) for i in members for _, _, value in lists[i]]) if mine else \
                torch.zeros(0, dtype=dtype, device=lists[members[0]][0][2].device)
            per_node = sum(numel)
            parts = _all_gather_padded(flat, [len(k) * per_node for k in keys], self.group)
            for r, (part, rank_keys) in enumerate(zip(parts, keys)):
                at = 0
                for i, size in zip(members, numel):
                    for level, j in rank_keys:
                        gathered[r][i].append((level, j, part[at:at + size].reshape(shapes[i])))
                        at += size
        merged = [[node for r in range(len(keys)) for node in gathered[r][i]] for i in range(len(lists))]
        return merged[:len(node_lists)], merged[len(node_lists):]


class DistributedDataParallel(torch.nn.Module):
    """torch.nn.parallel.DistributedDataParallel's role with softrep's batch order.

    Each rank calls the wrapper on its contiguous slice of the global batch
    (softrep.distributed.DistributedSampler gives them; slices may differ in
    size).  In training mode with gradients enabled, a call opens one step: the
    ranks exchange their slice sizes (one int each), the loss functions divide
    by the global batch size, batch-norm statistics are those of the global
    batch, and at the end of the backward pass the ranks all-gather their tree
    nodes and every rank writes the one-process gradient to `param.grad`;
    `loss` is then the global loss.  `accumulate(local_batch_size)` runs one
    step as several micro-batches per rank.  As torch's, the constructor
    broadcasts rank 0's parameters and buffers.  Only `module`,
    `process_group` and `broadcast_buffers` change anything; torch's other
    arguments are accepted for drop-in use (`device_ids` etc.)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if dim != 0:
            raise ValueError(f"softrep.distributed.DistributedDataParallel: argument 'dim' must be 0 (the sample "
                             f"dim of softrep's batch order), got {dim}")
        if not dist.is_initialized():
            raise RuntimeError("softrep.distributed.DistributedDataParallel: torch.distributed is not initialized; "
                               "call torch.distributed.init_process_group first")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.accumulator = GradientAccumulator(module)
        self.loss = None
        self._auto = None
        with torch.no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t.data, src=dist.get_global_rank(process_group, 0) if process_group else 0,
                               group=process_group)

    def _open(self, local_size, device):
        exchange = _Exchange(self.process_group, local_size, device)
        return exchange, self.accumulator.step(exchange.total, start=exchange.start, stop=exchange.stop,
                                               gather_nodes=exchange.gather_nodes,
                                               gather_partials=exchange.gather_partials)

    @contextlib.contextmanager
    def accumulate(self, local_batch_size):
        """One step of this rank's `local_batch_size` samples as several calls
        (micro-batches) of any sizes adding up to it; the ranks combine their
        nodes when the block ends."""
        self._close_auto()
        first = next(iter(self.module.parameters()), None)
        device = first.device if first is not None else torch.device("cpu")
        _, context = self._open(local_batch_size, device)
        with context as step:
            yield step
        self.loss = step.loss

    def _close_auto(self):
        if self._auto is not None:
            context, self._auto = self._auto, None
            context.__exit__(RuntimeError, RuntimeError("abandoned"), None)  # a step whose backward never ran

    def forward(self, *inputs, **kwargs):
        if self.accumulator.current is not None or not (self.training and torch.is_grad_enabled()):
            return self.module(*inputs, **kwargs)
        self._close_auto()
        x = next(a for a in list(inputs) + list(kwargs.values()) if isinstance(a, torch.Tensor))
        _, context = self._open(x.shape[0], x.device)
        step = context.__enter__()
        self._auto = context
        out = self.module(*inputs, **kwargs)
        first = next((t for t in (out if isinstance(out, (tuple, list)) else [out])
                      if isinstance(t, torch.Tensor) and t.requires_grad), None)
        if first is None:
            self._close_auto()
            return out

        def finish():
            context, self._auto = self._auto, None
            if context is not None:
                context.__exit__(None, None, None)
                self.loss = step.loss

        def queue(grad):
            torch.autograd.Variable._execution_engine.queue_callback(finish)
            return grad

        first.register_hook(queue)
        return out


class DistributedSampler(torch.utils.data.Sampler):
    """Each rank's contiguous slice of every global batch, as lists of dataset
    indices (use it as a DataLoader's `batch_sampler`).

    torch's arguments (dataset, num_replicas, rank, shuffle, seed, drop_last)
    and `set_epoch`, plus `batch_size`, the GLOBAL batch size: epoch e's order
    is softrep.randperm(len(dataset)) from Generator(seed + e) (or 0, 1, ...
    without shuffle), cut into global batches of `batch_size` (the last one
    shorter, or dropped with drop_last), and rank r gets the samples
    [r*B // R, (r+1)*B // R) of a batch of B over R ranks -- the same order for
    every world size.  `state_dict()` / `load_state_dict()` save the position
    (epoch and batches already taken), so a run resumed on another world size
    continues with the next global batch."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, *,
                 batch_size):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"softrep.distributed.DistributedSampler: argument 'batch_size' (the global batch "
                             f"size) must be a positive int, got {batch_size!r}")
        if num_replicas is None:
            num_replicas = dist.get_world_size() if dist.is_initialized() else 1
        if rank is None:
            rank = dist.get_rank() if dist.is_initialized() else 0
        if not 0 <= rank < num_replicas:
            raise ValueError(f"softrep.distributed.DistributedSampler: argument 'rank' must be in [0, "
                             f"{num_replicas}), got {rank}")
        if batch_size < num_replicas:
            raise ValueError(f"softrep.distributed.DistributedSampler: argument 'batch_size' ({batch_size}) must be "
                             f"at least the number of replicas ({num_replicas}): every rank needs a sample")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.batch_size = shuffle, seed, drop_last, batch_size
        self.epoch, self.taken = 0, 0

    def set_epoch(self, epoch):
        if epoch != self.epoch:
            self.epoch, self.taken = epoch, 0

    def order(self):
        n = len(self.dataset)
        if self.shuffle:
            return randperm(n, generator=Generator(self.seed + self.epoch)).tolist()
        return list(range(n))

    def batches(self):
        """The global batches of this epoch (lists of dataset indices)."""
        order, b = self.order(), self.batch_size
        out = [order[i:i + b] for i in range(0, len(order), b)]
        if out and (self.drop_last and len(out[-1]) < b or len(out[-1]) < self.num_replicas):
            out.pop()
        return out

    def rank_slice(self, size):
        return size * self.rank // self.num_replicas, size * (self.rank + 1) // self.num_replicas

    def __iter__(self):
        batches = self.batches()
        while self.taken < len(batches):
            batch = batches[self.taken]
            self.taken += 1
            a, b = self.rank_slice(len(batch))
            yield batch[a:b]
        self.epoch, self.taken = self.epoch + 1, 0

    def __len__(self):
        return len(self.batches()) - self.taken

    def state_dict(self):
        return {"epoch": self.epoch, "taken": self.taken}

    def load_state_dict(self, state):
        self.epoch, self.taken = int(state["epoch"]), int(state["taken"])


__all__ = ["DistributedDataParallel", "DistributedSampler"]
