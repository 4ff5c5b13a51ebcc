"""softrep's random number generator: a Philox4x32-10 key and a draw counter.

A `Generator` holds a 64-bit `seed` (the Philox key) and a 64-bit `offset`.
Every draw (one call of an op that consumes randomness) uses the current
offset and then advances it by one.  Element i of the draw (i = the element's
index in the row-major order of the op's output) gets the four 32-bit words

    philox4x32(counter = (i mod 2**32, i // 2**32, offset mod 2**32, offset // 2**32),
               key     = (seed mod 2**32, seed // 2**32))

(`softrep.primitives.philox.element_words`).  So a random bit depends only on
(seed, offset, element index): not on the device, the thread count, the memory
layout, or on how many elements other draws had.

`uniform_words(n, generator)` is the core draw: the words of elements [0, n) at
the generator's offset, as an int64 tensor of shape (n, 4).  Ops that need
randomness inside a kernel (stochastic rounding) take `generator.next_offset()`
and compute the same words in the kernel.
"""

import torch

from . import backend

DEFAULT_SEED = 0x5EED_50F7_2E90_0001  # fixed, so that a fresh process always draws the same numbers
_MASK64 = (1 << 64) - 1


def _check_u64(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be an int, got {type(value).__name__}")
    if not 0 <= value <= _MASK64:
        raise ValueError(f"softrep.{fn}: argument '{name}' must be in [0, 2**64), got {value}")
    return value


class Generator:
    """A Philox4x32-10 stream: `seed` (64-bit key) and `offset` (draw counter)."""

    def __init__(self, seed=DEFAULT_SEED):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        """Set the key to `seed` (an int; negative values are taken modulo 2**64)
        and rewind the offset to 0.  Returns self, like torch.Generator."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"softrep.Generator.manual_seed: argument 'seed' must be an int, got {type(seed).__name__}")
        self._seed = seed & _MASK64
        self._offset = 0
        return self

    def initial_seed(self):
        return self._seed

    @property
    def seed(self):
        return self._seed

    @property
    def offset(self):
        return self._offset

    def get_state(self):
        """(seed, offset) as a tuple of ints."""
        return (self._seed, self._offset)

    def set_state(self, state):
        seed, offset = state
        self._seed = _check_u64("Generator.set_state", "state[0]", seed)
        self._offset = _check_u64("Generator.set_state", "state[1]", offset)

    def next_offset(self):
        """The offset for one draw; advances the generator past it."""
        offset = self._offset
        self._offset = (offset + 1) & _MASK64
        return offset

    def __repr__(self):
        return f"softrep.Generator(seed={self._seed:#x}, offset={self._offset})"


default_generator = Generator(DEFAULT_SEED)


def manual_seed(seed):
    """Seed the default generator (offset back to 0); returns it."""
    return default_generator.manual_seed(seed)


# torch's own random ops (torch.rand, nn.init's uniform_/normal_, dropout's
# bernoulli_, ...) rerouted by softrep.reproducible() draw from this stream.  Its
# key is torch.initial_seed() (the seed of the last torch.manual_seed, or torch's
# start-up seed) and its offset counts the rerouted draws since that seed was set:
# so `torch.manual_seed(s)` followed by the same script gives the same draws on
# every device, as torch users expect of their seed.
torch_generator = Generator(DEFAULT_SEED)


def torch_stream():
    """The Generator of torch's random ops under softrep.reproducible(): key
    torch.initial_seed() (mod 2**64), offset 0 after each torch.manual_seed and
    +1 per draw.  A seed set before `follow_torch_manual_seed` was installed is
    picked up here: a key that differs from torch's seed restarts at offset 0."""
    seed = torch.initial_seed() & _MASK64
    if torch_generator.seed != seed:
        torch_generator.manual_seed(seed)
    return torch_generator


def follow_torch_manual_seed():
    """Wrap torch.manual_seed (and torch.random.manual_seed, the same function) so
    that it also rewinds `torch_generator` to (the new seed, offset 0).  Seeding
    twice with the same value must restart the draws, which torch.initial_seed()
    alone cannot reveal.  Idempotent; torch's own generator is seeded as before."""
    import torch.random

    original = torch.random.manual_seed
    if getattr(original, "_softrep_follows", False):
        return

    def manual_seed(seed):
        result = original(seed)
        torch_generator.manual_seed(torch.initial_seed() & _MASK64)
        return result

    manual_seed.__doc__ = original.__doc__
    manual_seed.__wrapped__ = original
    manual_seed._softrep_follows = True
    torch.random.manual_seed = manual_seed
    torch.manual_seed = manual_seed


def _under_vmap():
    functorch = torch._C._functorch
    if functorch.maybe_current_level() is None:
        return False
    stack = functorch.get_interpreter_stack() or ()
    return any(i.key() == functorch.TransformType.Vmap for i in stack)


def check_generator(fn, generator):
    """A TypeError naming the argument unless `generator` is None or a softrep.Generator."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"softrep.{fn}: argument 'generator' must be a softrep.Generator, "
                        f"got {type(generator).__name__}")


def resolve(fn, generator):
    """The generator a draw of `fn` uses (softrep's global one for None).

    Every draw goes through here, so this is also where a draw under
    torch.func.vmap is refused: a vmapped call would take one draw for the
    whole batch, where calling the op once per sample takes one draw each, so
    the vmapped bits would not be the per-sample ones."""
    check_generator(fn, generator)
    if _under_vmap():
        raise RuntimeError(f"softrep.{fn}: draws random numbers and cannot run under torch.func.vmap: a "
                           "vmapped call would consume one draw for the whole batch, not one per sample; draw "
                           "outside vmap and pass the result in")
    return default_generator if generator is None else generator


def split64(value):
    """(low 32 bits, high 32 bits) of a 64-bit int, for kernel arguments."""
    return value & 0xFFFFFFFF, value >> 32


def uniform_words(n, *, generator=None, device=None):
    """The four 32-bit Philox words of elements [0, n) of one draw: an int64
    tensor of shape (n, 4), values in [0, 2**32).  Advances the generator."""
    from ..cpu import philox as cpu_philox
    from ..cuda import philox as cuda_philox

    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"softrep.uniform_words: argument 'n' must be a non-negative int, got {n!r}")
    gen = resolve("uniform_words", generator)
    offset = gen.next_offset()
    out = torch.empty((n, 4), dtype=torch.int64, device=device)
    if n == 0:
        return out
    key_lo, key_hi = split64(gen.seed)
    off_lo, off_hi = split64(offset)
    backend.execute(cpu_philox.words, cuda_philox.words, [out.view(-1)], [], key_lo, key_hi, off_lo, off_hi)
    return out
