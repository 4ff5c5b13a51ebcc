# softrep: no kernels
"""`softrep.fingerprint(obj)`: a SHA-256 over names, dtypes, shapes and bytes.

The exact byte layout is specified in docs/training.md ("Fingerprint") so that
another implementation can reproduce the hash.  In short: a version header,
then one record per leaf of the flattened object, in its iteration order.
"""

import hashlib
import struct
from collections.abc import Mapping

import torch

HEADER = b"softrep.fingerprint.v1\n"


def _u64(n):
    return struct.pack("<Q", n)


def _field(data):
    """A length-prefixed byte string: uint64 little-endian length, then the bytes."""
    return _u64(len(data)) + data


def _tensor_bytes(t):
    """The tensor's elements in row-major order, little-endian, as stored."""
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.dtype.is_complex:
        flat = torch.view_as_real(flat).reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes()


def _leaves(prefix, obj, out):
    if isinstance(obj, torch.Tensor):
        out.append((prefix, obj))
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            _leaves(f"{prefix}.{key}" if prefix else str(key), value, out)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            _leaves(f"{prefix}.{index}" if prefix else str(index), value, out)
    elif obj is None or isinstance(obj, (bool, int, float, str)):
        out.append((prefix, obj))
    elif isinstance(obj, (torch.nn.Module, torch.optim.Optimizer)):
        _leaves(prefix, obj.state_dict(), out)  # a module or optimizer inside a list or mapping
    else:
        raise TypeError(f"softrep.fingerprint: cannot hash a value of type {type(obj).__name__} at '{prefix}'")


def _check(obj):
    # softrep.optim optimizers subclass torch.optim.Optimizer.
    if not isinstance(obj, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, Mapping, list, tuple)):
        raise TypeError(
            "softrep.fingerprint: argument 'obj' must be a tensor, an nn.Module, a state_dict "
            f"(mapping of names to tensors) or an optimizer, got {type(obj).__name__}"
        )
    return obj


def fingerprint(obj):
    """SHA-256 hex digest of `obj`: a tensor, an nn.Module (its state_dict:
    parameters and persistent buffers), a state_dict (a mapping of names to
    tensors; nested mappings and lists allowed) or an optimizer (its
    state_dict).  Equal for a module and its state_dict."""
    leaves = []
    _leaves("", _check(obj), leaves)
    h = hashlib.sha256()
    h.update(HEADER)
    for name, value in leaves:
        h.update(_field(name.encode("utf-8")))
        if isinstance(value, torch.Tensor):
            h.update(b"T")
            h.update(_field(str(value.dtype).encode("ascii")))
            h.update(_u64(value.dim()))
            for size in value.shape:
                h.update(_u64(size))
            h.update(_field(_tensor_bytes(value)))
        else:
            h.update(b"S")
            h.update(_field(f"{type(value).__name__}:{value!r}".encode("utf-8")))
    return h.hexdigest()
