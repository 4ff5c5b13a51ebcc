# softrep: no kernels
"""Checkpoints of a training run: model, optimizer, softrep Generators, sampler position.

A run resumed from `load_checkpoint` continues with the bits it would have had
without stopping, on any world size and micro-batch split: the model and the
optimizer state are stored exactly (torch.save keeps every bit), each
Generator's (seed, offset) is its whole state, and the sampler's position is
the number of global batches already taken (softrep.distributed.DistributedSampler).
"""

import torch

from ..ops.generator import Generator
from .accumulate import module_generators


def _unwrap(model):
    return model.module if hasattr(model, "module") and isinstance(model.module, torch.nn.Module) else model


def checkpoint_state(model, optimizer=None, sampler=None, generators=()):
    """The checkpoint as a dict: 'model', 'optimizer', 'sampler', and
    'generators': the (seed, offset) of the default generator, of the
    generators of the model's layers (in module order) and of `generators`."""
    model = _unwrap(model)
    gens = module_generators(model) + [g for g in generators if isinstance(g, Generator)]
    return {
        "model": model.state_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "sampler": None if sampler is None else sampler.state_dict(),
        "generators": [g.get_state() for g in gens],
    }


def save_checkpoint(path, model, optimizer=None, sampler=None, generators=()):
    """Write `checkpoint_state(...)` to `path` with torch.save (call it on one rank)."""
    torch.save(checkpoint_state(model, optimizer, sampler, generators), path)


def load_checkpoint(path, model, optimizer=None, sampler=None, generators=(), map_location="cpu"):
    """Restore what `save_checkpoint` wrote into the given objects (on every rank);
    the generators must be given in the same order as when saving."""
    state = torch.load(path, map_location=map_location, weights_only=False)
    model = _unwrap(model)
    model.load_state_dict(state["model"])
    if optimizer is not None:
        if state["optimizer"] is None:
            raise ValueError(f"softrep.distributed.load_checkpoint: {path} holds no optimizer state")
        optimizer.load_state_dict(state["optimizer"])
    if sampler is not None:
        if state["sampler"] is None:
            raise ValueError(f"softrep.distributed.load_checkpoint: {path} holds no sampler position")
        sampler.load_state_dict(state["sampler"])
    gens = module_generators(model) + [g for g in generators if isinstance(g, Generator)]
    if len(gens) != len(state["generators"]):
        raise ValueError(f"softrep.distributed.load_checkpoint: {path} holds {len(state['generators'])} generator "
                         f"states but the model and 'generators' have {len(gens)}; pass the same generators as "
                         "when saving")
    for g, s in zip(gens, state["generators"]):
        g.set_state(s)
    return state


__all__ = ["checkpoint_state", "load_checkpoint", "save_checkpoint"]
