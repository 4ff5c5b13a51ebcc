"""Random draws on softrep's Philox generator: rand, randn, randint, randperm, bernoulli.

Every draw takes one offset of the generator (`Generator.next_offset`, or one
`softrep.ops.generator.uniform_words` call) and element i (row-major index of the
output) is computed from the Philox words of (seed, offset, i) alone
(`softrep.primitives.philox.element_words`), so the result never depends on the device,
the thread count or the launch shape.  The formulas are in docs/training.md
("Random numbers"); the per-element functions are softrep/algorithms/random.py.
"""

import numbers

import numpy as np
import torch

from . import backend
from .generator import resolve, split64, uniform_words

# Significand bits of the uniform draw per dtype: k * 2^-bits with k < 2^bits is
# exactly representable in the dtype, so the value never rounds up to 1.
_UNIFORM_BITS = {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24}


# ----------------------------------------------------------------------------- public API

def _size(fn, size):
    """torch-style size: varargs of ints, or one tuple / list / torch.Size."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise ValueError(f"softrep.{fn}: argument 'size' must be non-negative ints, got {tuple(size)!r}")
    return tuple(int(s) for s in size)


def _device(device):
    return torch.device("cpu") if device is None else torch.device(device)


def _launch(fn, out, gen, cpu_launcher, cuda_launcher, *args):
    offset = gen.next_offset()
    if out.numel() == 0:
        return out
    key_lo, key_hi = split64(gen.seed)
    off_lo, off_hi = split64(offset)
    backend.execute(cpu_launcher, cuda_launcher, [out.view(-1)], [], key_lo, key_hi, off_lo, off_hi, *args)
    return out


def _uniform(fn, shape, dtype, device, gen, first=0):
    from ..cpu import random_ops as cpu_ops
    from ..cuda import random_ops as cuda_ops

    if dtype == torch.float64:
        out = torch.empty(shape, dtype=torch.float64, device=device)
        return _launch(fn, out, gen, cpu_ops.rand_f64, cuda_ops.rand_f64, first)
    if dtype not in _UNIFORM_BITS:
        raise TypeError(f"softrep.{fn}: argument 'dtype' must be a floating dtype "
                        f"(float16, bfloat16, float32, float64), got {dtype}")
    bits = _UNIFORM_BITS[dtype]
    out = torch.empty(shape, dtype=torch.float32, device=device)
    _launch(fn, out, gen, cpu_ops.rand_f32, cuda_ops.rand_f32, first, 32 - bits, np.float32(2.0**-bits))
    return out.to(dtype)  # exact: the values have at most `bits` significant bits


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform numbers in [0, 1), like torch.rand.  float32: (w0 >> 8) 2^-24;
    float64: 53 bits (w0, w1) times 2^-53; float16 / bfloat16: 11 / 8 bits of w0."""
    shape = _size("rand", size)
    gen = resolve("rand", generator)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    out = _uniform("rand", shape, dtype, _device(device), gen)
    return out.requires_grad_(requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal numbers, like torch.randn: Box-Muller in float32 from the
    correctly rounded softrep log and cos (`normal_f32`).  Other floating dtypes get
    the float32 value converted (exact for float64, rounded to nearest for
    float16 / bfloat16)."""
    from ..cpu import random_ops as cpu_ops
    from ..cuda import random_ops as cuda_ops

    shape = _size("randn", size)
    gen = resolve("randn", generator)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"softrep.randn: argument 'dtype' must be a floating dtype, got {dtype}")
    out = torch.empty(shape, dtype=torch.float32, device=_device(device))
    _launch("randn", out, gen, cpu_ops.randn_f32, cuda_ops.randn_f32)
    return out.to(dtype).requires_grad_(requires_grad)


def _int_arg(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be an int, got {type(value).__name__}")
    return int(value)


def _words63(n, gen, device):
    """63 random bits per element: (w0 << 31) | (w1 >> 1), as int64 in [0, 2^63)."""
    words = uniform_words(n, generator=gen, device=device)
    return (words[:, 0] << 31) | (words[:, 1] >> 1)


def randint(*args, size=None, generator=None, dtype=torch.int64, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size), like torch.randint:
    low + (k mod (high - low)) with k the 63-bit word of the element (bias below
    (high - low) / 2^63)."""
    if size is not None:
        args = args + (size,)
    if len(args) == 2:
        low, high, size = 0, args[0], args[1]
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError("softrep.randint: expected (high, size) or (low, high, size)")
    low = _int_arg("randint", "low", low)
    high = _int_arg("randint", "high", high)
    if not 0 < high - low < 2**63:
        raise ValueError(f"softrep.randint: arguments 'low' and 'high' need 0 < high - low < 2**63, "
                         f"got low={low}, high={high}")
    shape = _size("randint", (size,))
    gen = resolve("randint", generator)
    n = int(np.prod(shape)) if shape else 1
    k = _words63(n, gen, _device(device))
    out = (k % (high - low) + low).reshape(shape)
    return out.to(dtype).requires_grad_(requires_grad)


def randperm(n, *, generator=None, dtype=torch.int64, device=None, requires_grad=False):
    """A random permutation of 0..n-1, like torch.randperm: the indices sorted by
    the key (63-bit word of element i, i) -- a total order, so every correct sort
    gives the same permutation on every backend."""
    n = _int_arg("randperm", "n", n)
    if n < 0:
        raise ValueError(f"softrep.randperm: argument 'n' must be non-negative, got {n}")
    gen = resolve("randperm", generator)
    k = _words63(n, gen, _device(device))
    # A stable sort breaks equal keys by index, which makes the order total.
    perm = torch.sort(k, stable=True).indices
    return perm.to(dtype).requires_grad_(requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """Draws 1 with probability p (default: the elements of `input`), like
    torch.bernoulli: element i is 1 exactly when u_i < p_i, with u_i the uniform
    draw `rand` makes for input's dtype (float32 for integer dtypes).  A Python p
    is converted to input's dtype (rounded to nearest) first."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.bernoulli: argument 'input' must be a tensor, got {type(input).__name__}")
    gen = resolve("bernoulli", generator)
    dtype = input.dtype if input.dtype.is_floating_point else torch.float32
    if p is None:
        if not input.dtype.is_floating_point:
            raise TypeError(f"softrep.bernoulli: argument 'input' must be floating to hold probabilities, "
                            f"got {input.dtype}")
        prob = input.detach()
    else:
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"softrep.bernoulli: argument 'p' must be a real number, got {type(p).__name__}")
        prob = torch.tensor(float(p), dtype=dtype, device=input.device)
    if prob.numel() and not bool(((prob >= 0) & (prob <= 1)).all()):
        raise ValueError("softrep.bernoulli: probabilities ('input' or 'p') must be in [0, 1]")
    u = _uniform("bernoulli", tuple(input.shape), dtype, input.device, gen)
    # The comparison is exact: no rounding anywhere after the draw.
    return (u < prob).to(input.dtype)


def bernoulli_slice(like, p, first, generator=None):
    """The elements [first, first + like.numel()) of one `bernoulli(x, p)` draw
    over a larger x (row-major order), shaped like `like`: element first + i is
    1 exactly when its uniform draw is below p.  Dropout on a slice of a batch
    takes its samples' masks this way, so they do not depend on the split."""
    return bernoulli_slice_mask(like, p, first, generator).to(like.dtype)


def bernoulli_slice_mask(like, p, first, generator=None):
    """`bernoulli_slice` as a bool tensor: True where the draw is 1."""
    gen = resolve("bernoulli", generator)
    dtype = like.dtype if like.dtype.is_floating_point else torch.float32
    prob = torch.tensor(float(p), dtype=dtype, device=like.device)
    u = _uniform("bernoulli", tuple(like.shape), dtype, like.device, gen, int(first))
    return u < prob


def dropout_draw(x, keep, scale, first, generator=None):
    """(out, noise) for a float32/float64 x: noise[i] = `scale` where element
    first + i of a `bernoulli_slice_mask` draw at probability `keep` is kept,
    +0 where it is dropped; out = mul_rn(x, noise) (canonical NaN).  `keep`
    and `scale` are Python floats holding values of x's dtype.  One offset of
    the generator, as the mask alone takes; one kernel instead of the draw,
    the comparison, the selection and the product."""
    from ..cpu import random_ops as cpu_ops
    from ..cuda import random_ops as cuda_ops

    gen = resolve("dropout", generator)
    offset = gen.next_offset()
    x = x.detach().contiguous()
    out, noise = torch.empty_like(x), torch.empty_like(x)
    if x.numel() == 0:
        return out, noise
    key_lo, key_hi = split64(gen.seed)
    off_lo, off_hi = split64(offset)
    arrays = [out.view(-1), noise.view(-1)], [x.view(-1)]
    if x.dtype == torch.float64:
        backend.execute(cpu_ops.dropout_f64, cuda_ops.dropout_f64, *arrays, key_lo, key_hi, off_lo, off_hi,
                        int(first), np.float64(keep), np.float64(scale))
    else:
        bits = _UNIFORM_BITS[torch.float32]
        f32 = np.float32
        backend.execute(cpu_ops.dropout_f32, cuda_ops.dropout_f32, *arrays, key_lo, key_hi, off_lo, off_hi,
                        int(first), 32 - bits, f32(2.0**-bits), f32(keep), f32(scale))
    return out, noise


# ----------------------------------------------------------------------------- in-place fills
# The draws behind torch's in-place initialisers (nn.init, Tensor.uniform_ ...),
# on softrep's stream: one offset per call, like the functions above.

def _fill_target(fn, tensor):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'tensor' must be a tensor, got {type(tensor).__name__}")
    if tensor.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"softrep.{fn}: argument 'tensor' must be float32 or float64, got {tensor.dtype}")


def _real(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a real number, got {type(value).__name__}")
    return float(value)


def uniform_(tensor, low=0.0, high=1.0, *, generator=None):
    """Fill `tensor` in place with uniform numbers in [low, high), like
    Tensor.uniform_: fma(u, high - low, low) with u the `rand` draw of the
    tensor's dtype; high - low is computed in binary64, then it and low are
    rounded to the dtype, and the fma rounds once.  Returns `tensor`."""
    from .elementwise import fma

    _fill_target("uniform_", tensor)
    low, high = _real("uniform_", "low", low), _real("uniform_", "high", high)
    if not low <= high:
        raise ValueError(f"softrep.uniform_: arguments 'low' and 'high' need low <= high, got {low}, {high}")
    gen = resolve("uniform_", generator)
    u = _uniform("uniform_", tuple(tensor.shape), tensor.dtype, tensor.device, gen)
    with torch.no_grad():
        return tensor.copy_(fma(u, high - low, low) if u.numel() else u)


def normal_(tensor, mean=0.0, std=1.0, *, generator=None):
    """Fill `tensor` in place with normal numbers, like Tensor.normal_:
    fma(z, std, mean) with z the `randn` draw (float32 Box-Muller, converted
    exactly to float64); std and mean are rounded to the dtype, the fma rounds
    once.  Returns `tensor`."""
    from .elementwise import fma

    _fill_target("normal_", tensor)
    mean, std = _real("normal_", "mean", mean), _real("normal_", "std", std)
    if not std >= 0:
        raise ValueError(f"softrep.normal_: argument 'std' must be non-negative, got {std}")
    z = randn(tuple(tensor.shape), generator=resolve("normal_", generator), dtype=tensor.dtype,
              device=tensor.device)
    with torch.no_grad():
        return tensor.copy_(fma(z, std, mean) if z.numel() else z)


def bernoulli_(tensor, p=0.5, *, generator=None):
    """Fill `tensor` in place with 0/1 draws, like Tensor.bernoulli_: p a number
    (rounded to the tensor's dtype, float32 for an integer tensor) or a tensor of
    probabilities broadcast to tensor's shape.  Element i is 1 exactly when
    u_i < p_i, u_i being `bernoulli`'s draw.  Returns `tensor`."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"softrep.bernoulli_: argument 'tensor' must be a tensor, got {type(tensor).__name__}")
    if isinstance(p, torch.Tensor):
        if not p.dtype.is_floating_point:
            raise TypeError(f"softrep.bernoulli_: argument 'p' must hold floating probabilities, got {p.dtype}")
        dtype = tensor.dtype if tensor.dtype.is_floating_point else torch.float32
        probs = p.detach().to(device=tensor.device, dtype=dtype).expand(tensor.shape)
        drawn = bernoulli(probs, generator=generator)
    else:
        drawn = bernoulli(tensor, p, generator=generator)
    with torch.no_grad():
        return tensor.copy_(drawn)
