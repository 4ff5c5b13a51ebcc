# softrep: no kernels
"""One optimizer step over slices of a global batch, with the bits of one pass.

`GradientAccumulator(model).step(batch_size)` is a context manager for one
optimizer step whose global batch has `batch_size` samples.  Inside it, every
call of the model takes the next consecutive slice of the batch (its length
is dim 0 of the first tensor argument); each slice's backward hands its tree
nodes (softrep.ops.batchtree) to the step instead of adding gradients, and
leaving the step completes the batch tree of every parameter and writes
`param.grad`.  The gradients, the loss reported in `step.loss`, the dropout
masks (keyed by global sample index) and the generators' states after the
step are bit for bit those of one pass over the whole batch.

With a `process_group` (softrep.distributed.DistributedDataParallel sets one),
the slices of one step are spread over the ranks: each rank's nodes are
all-gathered and every rank completes the same tree (docs/distributed.md).
"""

import contextlib

import torch

from ..nn.modules._common import generator_of
from ..ops import batchtree
from ..ops import elementwise as E
from ..ops.generator import default_generator


def module_generators(module):
    """Every softrep Generator the module's layers draw from, the default one first."""
    out, seen = [default_generator], {id(default_generator)}
    for m in module.modules():
        g = generator_of(m)
        if g is not None and id(g) not in seen:
            seen.add(id(g))
            out.append(g)
    return out


def _first_tensor(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            return a
    raise ValueError("softrep.distributed: the model was called without a tensor argument; the slice's samples "
                     "are read from dim 0 of its first tensor argument")


class Step:
    """The state of one optimizer step over a split batch (made by
    `GradientAccumulator.step`).  `loss`: the global value of the loss after
    the step (the loss functions' batch total, finished: a mean is divided by
    the global count); `losses` when a step reports several."""

    def __init__(self, accumulator, global_size, start, stop, gather_nodes=None, gather_partials=None):
        self.accumulator, self.global_size = accumulator, int(global_size)
        self.start, self.stop, self.next = int(start), int(stop), int(start)
        self.gather_nodes, self.gather_partials = gather_nodes, gather_partials
        self.grads, self.losses_nodes, self.finishers = {}, [], []
        self.loss_slot = 0
        self.losses, self.loss = [], None
        self.slice = None
        self.generator_start = None
        self.generator_end = None
        self.grad_before = {}

    # the sink of every slice
    def sink(self, key, nodes, finish):
        if isinstance(key, batchtree.GradientKey):
            entry = self.grads.setdefault(key.ident(), (key.leaf, key.view, key.use, []))
            entry[3].extend(nodes)
            return
        slot = self.loss_slot
        self.loss_slot += 1
        while len(self.losses_nodes) <= slot:
            self.losses_nodes.append([])
            self.finishers.append(None)
        self.losses_nodes[slot].extend(nodes)
        self.finishers[slot] = finish

    def open_slice(self, size):
        """Make the next `size` samples the current slice."""
        self.close_generators()
        if self.next + size > self.stop:
            raise ValueError(f"softrep.distributed: this slice of {size} samples would end at sample "
                             f"{self.next + size}, past the end of the {self.stop - self.start} samples given to "
                             f"this step (the global batch has {self.global_size}); the slices must add up to "
                             "the batch size")
        for g, state in zip(self.generators, self.generator_start):
            g.set_state(state)  # every slice draws its masks from the step's first offsets
        self.slice = batchtree.BatchSlice(self.global_size, self.next, size, self.sink, self.gather_partials)
        self.loss_slot = 0
        self.next += size
        batchtree.set_current(self.slice)

    def close_generators(self):
        if self.slice is None:
            return
        states = [g.get_state() for g in self.generators]
        if self.generator_end is None:
            self.generator_end = states
        elif states != self.generator_end:
            raise ValueError("softrep.distributed: two slices of one step drew different numbers of random "
                             "numbers (the generators ended in different states); every slice must run the same "
                             "model code, so that dropout takes the same draw in each")

    def begin(self):
        self.generators = module_generators(self.accumulator.module)
        self.generator_start = [g.get_state() for g in self.generators]
        self.grad_before = {id(p): (p.grad, None if p.grad is None else p.grad._version)
                            for p in self.accumulator.params}

    def finish(self):
        """Complete the trees, write param.grad, set `loss`."""
        batchtree.set_current(None)
        self.close_generators()
        if self.next != self.stop:
            raise ValueError(f"softrep.distributed: the step's slices covered samples [{self.start}, {self.next}) "
                             f"but this {'rank' if self.gather_nodes else 'step'} holds [{self.start}, "
                             f"{self.stop}); the slices must add up to the batch size")
        if self.generator_end is not None:
            for g, state in zip(self.generators, self.generator_end):
                g.set_state(state)
        params = self.accumulator.params
        index = {id(p): i for i, p in enumerate(params)}
        keys = []
        for ident, (leaf, view, use, nodes) in self.grads.items():
            if id(leaf) not in index:
                raise ValueError("softrep.distributed: a gradient went to a tensor that is not a parameter of the "
                                 "model given to the accumulator")
            keys.append((index[id(leaf)], view, use, ident))
        keys.sort()
        what = [f"the gradient of parameter {params[k[0]].shape}" for k in keys]
        node_lists = [self._local(self.grads[k[3]][3], name) for k, name in zip(keys, what)]
        loss_lists = [self._local(nodes, "the loss") for nodes in self.losses_nodes]
        if self.gather_nodes is not None:
            node_lists, loss_lists = self.gather_nodes(node_lists, loss_lists)
        roots = [batchtree.merge_nodes(nodes, self.global_size, name) for nodes, name in zip(node_lists, what)]
        self.losses = [finish(batchtree.merge_nodes(nodes, self.global_size, "the loss"))
                       for nodes, finish in zip(loss_lists, self.finishers)]
        self.loss = self.losses[0] if len(self.losses) == 1 else None
        self._write_grads(params, keys, roots)

    def _local(self, nodes, what):
        """This process's nodes combined as far as they go: the maximal nodes of its range."""
        table = batchtree.combine_nodes(nodes, self.global_size, what)
        return [(level, j, value) for (level, j), value in sorted(table.items())]

    def _write_grads(self, params, keys, roots):
        by_leaf = {}
        for (i, view, use, _), root in zip(keys, roots):
            by_leaf.setdefault(i, []).append((view, root))
        for i, p in enumerate(params):
            if i not in by_leaf:
                before = self.grad_before.get(id(p))
                changed = p.grad is not None and (before is None or before[0] is not p.grad
                                                  or before[1] != p.grad._version)
                if changed:
                    raise ValueError(f"softrep.distributed: parameter {i} (shape {tuple(p.shape)}) received a "
                                     "gradient that is not a batch reduction of softrep's batch order (for example "
                                     "a parameter broadcast over the batch by a plain elementwise op); its bits "
                                     "would depend on the split.  Use it through softrep layers (Linear, Conv, "
                                     "Embedding, the normalisations) or softrep.ops.batchtree.expand_param")
                continue
            full, regions = None, None
            for view, root in by_leaf[i]:
                shape, stride, offset = view
                if shape == tuple(p.shape) and stride == tuple(p.stride()) and offset == 0:
                    full = root if full is None else E.add(full, root)
                    continue
                if regions is None:
                    regions = torch.zeros_like(p)
                regions.as_strided(shape, stride, offset + regions.storage_offset()).copy_(root)
            grad = full if regions is None else (regions if full is None else E.add(full, regions))
            p.grad = grad.detach()


class GradientAccumulator:
    """Runs one optimizer step as several forward/backward passes over
    consecutive slices of a global batch, with the bits of one pass::

        accumulator = softrep.distributed.GradientAccumulator(model)
        for x, y in batches:                          # global batches of 64
            optimizer.zero_grad()
            with accumulator.step(len(x)) as step:
                for part in (slice(0, 5), slice(5, 32), slice(32, 64)):
                    loss_fn(model(x[part]), y[part]).backward()
            optimizer.step()                           # step.loss: the batch's loss

    Each call of `model` inside the step is the next slice (its size: dim 0 of
    the first tensor argument); slices may have any sizes that add up to the
    batch.  What cannot be split raises a ValueError that names the constraint:
    batch-norm statistics in training mode (they need every sample at once:
    use data-parallel ranks), loss means with class weights or ignored targets,
    a parameter whose gradient does not go through a batch reduction of
    softrep's batch order.
    """

    def __init__(self, module):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"softrep.distributed.GradientAccumulator: argument 'module' must be a torch.nn.Module, "
                            f"got {type(module).__name__}")
        self.module = module
        self.params = list(module.parameters())
        self.current = None

    def _pre_hook(self, module, args, kwargs):
        if self.current is not None and torch.is_grad_enabled():
            self.current.open_slice(_first_tensor(args, kwargs).shape[0])

    @contextlib.contextmanager
    def step(self, batch_size, *, start=0, stop=None, gather_nodes=None, gather_partials=None):
        """One optimizer step over a global batch of `batch_size` samples (this
        process computing [start, stop) of them; the defaults: all)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"softrep.distributed: argument 'batch_size' must be a positive int, got {batch_size!r}")
        if self.current is not None:
            raise RuntimeError("softrep.distributed: a step is already open on this model; steps do not nest")
        if batchtree.current() is not None:
            raise RuntimeError("softrep.distributed: another split batch is being computed")
        stop = batch_size if stop is None else stop
        step = Step(self, batch_size, start, stop, gather_nodes, gather_partials)
        step.begin()
        handle = self.module.register_forward_pre_hook(self._pre_hook, with_kwargs=True)
        self.current = step
        try:
            yield step
            step.finish()
        finally:
            handle.remove()
            self.current = None
            batchtree.set_current(None)


__all__ = ["GradientAccumulator", "Step", "module_generators"]
