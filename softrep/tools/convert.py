# softrep: no kernels
"""softrep.from_torch_module: a copy of a torch model whose computations are softrep's.

What is converted, by behaviour rather than by exact type: every submodule
whose class is (a subclass of) a torch.nn class with a softrep counterpart in
softrep.nn (Linear, Conv1d/2d, BatchNorm1d/2d, LayerNorm, RMSNorm, GroupNorm,
Embedding, Dropout, MultiheadAttention, TransformerEncoderLayer,
TransformerEncoder, the activations, pools and losses: softrep.nn.modules.CONVERTED),
as long as the subclass does not override forward().  The module keeps its object, parameters,
buffers, hooks, device, dtype and train/eval mode; only its class changes to
the softrep one (for a subclass, to a class deriving from both, so that the
subclass's other methods stay).

What is left as it is, and counts as supported: torch's Identity, Flatten,
Unflatten and the containers (Sequential, ModuleList, ModuleDict), which never
round, and user-defined modules (deriving from nn.Module directly) that own no
parameters and no floating-point buffers: their forward() only wires their
children together.  softrep cannot read that glue code: arithmetic written
there (`out += identity`, `x * 2`) runs in torch.  torch's elementwise add
and multiply are single IEEE roundings and give the same bits everywhere;
reductions and products written there do not, so use softrep ops in it.

Unsupported (a non-reproducible computation softrep cannot replace): any other
torch.nn class (LSTM, ConvTranspose2d, ...); a subclass of a supported class
that overrides forward(); a supported class with an option softrep does not
implement (Conv2d padding_mode='circular', MultiheadAttention add_bias_kv, ...);
a user-defined module that owns parameters or floating-point buffers (its own
forward computes with them in torch).  strict=True raises
UnsupportedModuleError naming every one of them; strict=False leaves them as
they are, with one warning each.
"""

import copy
import warnings

import torch

from ..nn import modules as _modules

# torch class -> softrep class
_SOFTREP_OF = {}
for _cls in _modules.CONVERTED:
    _SOFTREP_OF[next(c for c in _cls.__mro__ if c.__module__.startswith("torch.nn."))] = _cls
_EXACT = _modules.EXACT
_SOFTREP_CLASSES = tuple(_modules.CONVERTED)


class UnsupportedModuleError(TypeError):
    """A model holds submodules softrep cannot convert.  `.modules` lists them as
    (qualified name, type name, reason) tuples."""

    def __init__(self, modules):
        self.modules = list(modules)
        lines = [f"  {name or '<root>'} ({type_name}): {reason}" for name, type_name, reason in self.modules]
        super().__init__(f"softrep.from_torch_module: {len(self.modules)} submodule(s) hold computations softrep "
                         "cannot make reproducible (use strict=False to keep them as they are, unreproducible):\n"
                         + "\n".join(lines))


def _type_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def _own_state(module):
    return (any(True for _ in module.parameters(recurse=False))
            or any(b.is_floating_point() for b in module.buffers(recurse=False)))


def _plan(module):
    """(softrep class to mix in or None, reason it is unsupported or None)."""
    cls = type(module)
    if isinstance(module, _SOFTREP_CLASSES):
        return None, None  # already softrep (a user subclass of a softrep module is trusted)
    for base in cls.__mro__:
        if base in _SOFTREP_OF:
            if cls.forward is not base.forward:
                return None, f"overrides forward() of {_type_name(base)}; softrep cannot tell what it computes"
            target = _SOFTREP_OF[base]
            reason = getattr(target, "_softrep_unsupported", lambda m: None)(module)
            return (None, reason) if reason else (target, None)
        if base in _EXACT:
            if cls.forward is base.forward:
                return None, None
            break  # a container with its own forward(): judged like a user-defined module
    else:
        torch_base = next((c for c in cls.__mro__ if c.__module__.startswith("torch.")), torch.nn.Module)
        if torch_base is not torch.nn.Module:
            return None, f"{_type_name(torch_base)} has no softrep equivalent"
    if _own_state(module):
        return None, "owns parameters or floating-point buffers that its own forward() computes with in torch"
    return None, None


_MIXED = {}


def _softrep_class(cls, target):
    """`target` for the torch class itself; for a subclass, one class deriving from
    both (cached), whose MRO puts target's forward before the torch base's."""
    if cls is next(c for c in target.__mro__ if c.__module__.startswith("torch.nn.")):
        return target
    key = (cls, target)
    if key not in _MIXED:
        _MIXED[key] = type(cls.__name__, (cls, target), {"__module__": cls.__module__,
                                                        "__qualname__": cls.__qualname__})
    return _MIXED[key]


def from_torch_module(model, strict=True):
    """A deep copy of `model` with every supported submodule computed by softrep
    (see the module docstring for what is supported).  The original is untouched;
    the copy keeps device, dtype, parameter values, buffers and train/eval mode.

    strict=True: raise UnsupportedModuleError listing every unsupported
    submodule.  strict=False: leave those as they are and warn once for each."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"softrep.from_torch_module: argument 'model' must be a torch.nn.Module, "
                        f"got {type(model).__name__}")
    if not isinstance(strict, bool):
        raise TypeError(f"softrep.from_torch_module: argument 'strict' must be a bool, got {type(strict).__name__}")
    converted = copy.deepcopy(model)
    todo, problems = [], []
    for name, module in converted.named_modules():
        target, reason = _plan(module)
        if reason is not None:
            problems.append((name, _type_name(type(module)), reason))
        elif target is not None:
            todo.append((module, target))
    if problems and strict:
        raise UnsupportedModuleError(problems)
    for name, type_name, reason in problems:
        warnings.warn(f"softrep.from_torch_module: {name or '<root>'} ({type_name}) left unconverted and NOT "
                      f"reproducible: {reason}", UserWarning, stacklevel=2)
    for module, target in todo:
        module.__class__ = _softrep_class(type(module), target)
        after = getattr(module, "_softrep_after_convert", None)
        if after is not None:
            after()
    return converted


__all__ = ["from_torch_module", "UnsupportedModuleError"]
