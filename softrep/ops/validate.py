"""Argument checks shared by the public ops: every error names the argument."""

import functools
import numbers

import torch

from ..primitives.rounding import MODES, SUFFIX

FLOAT_DTYPES = (torch.float32, torch.float64)
# the dtypes of the ops that take bfloat16/float16 tensors (softrep/ops/mixed.py)
ALL_FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def rounding_suffix(fn, rounding):
    """'rn', 'rd', 'ru' or 'rz' for a rounding name, or a ValueError naming it."""
    if rounding not in SUFFIX:
        extra = ""
        if rounding in ("nearest_away", "odd", "stochastic"):
            extra = (f"; {rounding!r} is available with an explicit format, e.g. "
                     f"softrep.{fn}(..., rounding={rounding!r}, format=\"float32\") (docs/lowprecision.md)")
        raise ValueError(
            f"softrep.{fn}: argument 'rounding' must be one of {', '.join(map(repr, MODES))} "
            f"on float32/float64 tensors; got {rounding!r}{extra}"
        )
    return SUFFIX[rounding]


def tensor_operands(fn, dtypes=FLOAT_DTYPES, **operands):
    """Check the operands of an elementwise op and return them as tensors.

    Tensors must share one floating dtype (one of `dtypes`) and one device;
    softrep never promotes silently, since a promotion is a rounding the caller
    did not ask for.  Python numbers are converted to the tensors' dtype.
    """
    names = list(operands)
    tensors = {k: v for k, v in operands.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise TypeError(f"softrep.{fn}: at least one of {', '.join(names)} must be a torch.Tensor")
    first_name, first = next(iter(tensors.items()))
    for name, t in tensors.items():
        if t.dtype not in dtypes:
            raise TypeError(
                f"softrep.{fn}: argument '{name}' has dtype {t.dtype}; expected {' or '.join(map(str, dtypes))}"
            )
    for name, t in tensors.items():
        if t.dtype != first.dtype:
            raise TypeError(
                f"softrep.{fn}: argument '{name}' has dtype {t.dtype} but '{first_name}' has {first.dtype}; "
                "softrep does not promote dtypes, convert one of them explicitly"
            )
        if t.device != first.device:
            raise ValueError(
                f"softrep.{fn}: argument '{name}' is on {t.device} but '{first_name}' is on {first.device}"
            )
    out = []
    for name, v in operands.items():
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, numbers.Real) and not isinstance(v, bool):
            out.append(torch.tensor(float(v), dtype=first.dtype, device=first.device))
        else:
            raise TypeError(
                f"softrep.{fn}: argument '{name}' must be a tensor or a real number, got {type(v).__name__}"
            )
    return out


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes of shapes (tuples of ints), by the same rule --
    sizes aligned from the right, each pair equal or one of them 1 -- without
    its Python reference implementation's cost; RuntimeError where they do
    not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, size in enumerate(s):
            have = out[offset + i]
            if size != have:
                if have == 1:
                    out[offset + i] = size
                elif size != 1:
                    raise RuntimeError(f"shapes {', '.join(str(tuple(t)) for t in shapes)} do not broadcast")
    return torch.Size(out)


def broadcast_shape(fn, names, tensors):
    shape = tensors[0].shape
    if all(t.shape == shape for t in tensors):
        return shape  # the common case
    try:
        return broadcast_shapes(*(t.shape for t in tensors))
    except RuntimeError:
        shapes = ", ".join(f"'{n}' {tuple(t.shape)}" for n, t in zip(names, tensors))
        raise ValueError(f"softrep.{fn}: shapes do not broadcast: {shapes}") from None


def normalize_dim(fn, dim, ndim, name="dim"):
    """One dim index in [0, ndim), or an IndexError naming the argument."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be an int, got {type(dim).__name__}")
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"softrep.{fn}: argument '{name}' is {dim}, out of range [{lo}, {hi}] for a {ndim}-d tensor")
    return dim % max(ndim, 1)


def _key(value):
    """A hashable key of an argument that tells apart what its check tells
    apart: each value with its type (True is not 1, 1.0 is not 1), tuples
    and lists by their items (a list keyed as the tuple of its items: a
    memoized check must treat the two alike).  A sequence of ints only (a
    shape, a stride) is keyed by its items themselves, without a key per
    item: no item of another type's key is an int, so the two forms never
    meet."""
    kind = type(value)
    if kind is tuple or kind is list or kind is torch.Size:
        for v in value:
            if type(v) is not int:
                return tuple, tuple(_key(v) for v in value)
        return tuple, tuple(value)
    if isinstance(value, (tuple, list)):
        return tuple, tuple(_key(v) for v in value)
    return kind, value


def memoized_check(check, maxsize=4096):
    """`check(*args)` -- argument checks of an op that read only its
    arguments (shapes, ints, tuples, strings) and return them normalised --
    remembered per argument tuple: an op called again with the same
    arguments, as a layer is at every step, skips the checks' Python.  A
    check that raises is not remembered (the error comes every time, with the
    caller's own values in its message); unhashable arguments run the check
    each time; at most `maxsize` argument tuples are kept."""
    memo = {}

    @functools.wraps(check)
    def run(*args):
        try:
            key = tuple(_key(a) for a in args)
            return memo[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable argument
            return check(*args)
        value = check(*args)
        if len(memo) < maxsize:
            memo[key] = value
        return value

    return run
