# softrep: no kernels
"""What every softrep.nn module shares: the softrep Generator it draws from, and
construction without side effects on torch's random state."""

import contextlib

import torch

from ...ops.generator import check_generator


class _Shared:
    """Holds a module's generator so that copy.deepcopy of the module (torch's
    layer clones, from_torch_module) keeps drawing from the same generator
    rather than from a copy replaying the same stream: a copy would give every
    clone the same dropout masks."""

    def __init__(self, generator):
        self.generator = generator

    def __deepcopy__(self, memo):
        return self


def set_generator(module, cls_name, generator):
    """Record `generator` (None: softrep's default generator, looked up at each draw,
    so that softrep.manual_seed applies) before torch's __init__ runs
    reset_parameters, which reads it."""
    if generator is not None:
        check_generator(f"nn.{cls_name}", generator)
    object.__setattr__(module, "_softrep_generator", _Shared(generator))


def generator_of(module):
    """The module's softrep Generator, or None for the default one.  Modules
    converted by softrep.from_torch_module have none and use the default."""
    shared = getattr(module, "_softrep_generator", None)
    return None if shared is None else shared.generator


@contextlib.contextmanager
def torch_rng_untouched(device):
    """Run a torch constructor that draws from torch's RNG (submodules it builds
    itself) without changing torch's random state; softrep re-initialises
    those parameters from its own generator afterwards."""
    dev = torch.device(device) if device is not None else torch.empty(0).device
    devices = []
    if dev.type == "cuda":
        devices = [dev.index if dev.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=devices):
        yield


def inplace_ignored(module):
    """softrep ops never modify their inputs: `inplace=True` is honoured as an
    out-of-place computation (the bits are the same; only memory differs)."""
    return False
