"""Golden vectors: SHA-256 of op outputs on fixed inputs, stored in tests/golden/.

Inputs come from numpy's PCG64 (its stream is specified and platform
independent) drawn as raw bit patterns, so they include subnormals, infinities
and NaNs, or are stored as bits (`from_bits`).  They are never computed with
torch arithmetic (torch.softmax, torch.randn, ...): torch does not promise the
same bits on every platform, and a golden input must not depend on one.  Every backend -- the CPU, the CUDA simulator, a real GPU, another
CPU architecture -- must reproduce the same hashes.

Regenerate after an intentional algorithm change with
    SOFTREP_UPDATE_GOLDEN=1 python -m pytest tests -k golden
and record the reason in CHANGELOG.md.
"""

import hashlib
import json
import os

import numpy as np
import torch

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
UPDATE = os.environ.get("SOFTREP_UPDATE_GOLDEN") == "1"


def bit_pattern_tensor(seed, shape, dtype=torch.float32):
    """Uniform random bit patterns (every float class occurs), fixed by `seed`."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n = int(np.prod(shape))
    if dtype == torch.float32:
        bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
        arr = bits.view(np.float32)
    else:
        bits = rng.integers(0, 2**63, size=n, dtype=np.uint64) * 2 + rng.integers(0, 2, size=n, dtype=np.uint64)
        arr = bits.view(np.float64)
    return torch.from_numpy(arr.copy()).reshape(shape)


def normal_tensor(seed, shape, dtype=torch.float32, scale=1.0):
    """Ordinary values (normal distribution), fixed by `seed`."""
    rng = np.random.Generator(np.random.PCG64(seed))
    arr = (rng.standard_normal(int(np.prod(shape))) * scale).astype(
        np.float32 if dtype == torch.float32 else np.float64)
    return torch.from_numpy(arr).reshape(shape)


def from_bits(bits, shape):
    """A float32 tensor with the given bit patterns: golden inputs that no platform's
    arithmetic can change."""
    return torch.from_numpy(np.array(bits, dtype=np.uint32).view(np.float32).copy()).reshape(shape)


def digest(t):
    t = t.detach().cpu().contiguous()
    h = hashlib.sha256()
    h.update(str(t.dtype).encode())
    h.update(str(tuple(t.shape)).encode())
    h.update(t.numpy().tobytes())
    return h.hexdigest()


def check(file, key, tensor):
    """Assert (or, with SOFTREP_UPDATE_GOLDEN=1, record) the digest of `tensor`."""
    path = os.path.join(GOLDEN_DIR, file)
    data = {}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    d = digest(tensor)
    if UPDATE:
        data[key] = d
        with open(path, "w") as f:
            json.dump(dict(sorted(data.items())), f, indent=1)
            f.write("\n")
        return
    assert key in data, f"no golden digest for {key!r} in {file}; run with SOFTREP_UPDATE_GOLDEN=1"
    assert data[key] == d, f"{key}: output bits differ from the golden vector in {file}"
