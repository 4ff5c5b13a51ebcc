"""softrep's CPU kernels give IEEE results whatever floating-point control state
the caller left (flush-to-zero, denormals-are-zero, a directed rounding), on
the calling thread and on Numba's worker threads, and give the caller its
state back.  Results are compared as bits: reading a subnormal with .item()
under DAZ would itself give 0."""

import subprocess
import sys
import textwrap

import pytest
import torch

import softrep
from softrep.primitives import fpenv

pytestmark = pytest.mark.skipif(not (fpenv.X86 or fpenv.ARM64), reason="control register known on x86-64 and AArch64")

FTZ_DAZ = (1 << 15) | (1 << 6) if fpenv.X86 else 1 << 24
ROUND_DOWN = (1 << 13) if fpenv.X86 else (2 << 22)


def _bits(t):
    return t.contiguous().view(torch.int32 if t.dtype == torch.float32 else torch.int64).tolist()


def _inputs():
    """Made before any flag is set: converting 2^-140 to float32 under
    flush-to-zero would itself give 0."""
    return {
        "tiny": torch.tensor([2.0**-126, -(2.0**-126), 3 * 2.0**-127], dtype=torch.float32),
        "half": torch.tensor([0.5, 0.5, 0.25], dtype=torch.float32),
        "sub": torch.tensor([2.0**-140, -(2.0**-149), 2.0**-130], dtype=torch.float32),  # subnormal inputs
        "zeros": torch.zeros(3),
        "div": torch.tensor([4.0, 8.0, 3.0]),
        "a": torch.full((48, 40), 2.0**-70),
        "neg": torch.tensor([-100.0, -103.0, -90.0]),
        "one": torch.tensor([1.0]),
        "eps": torch.tensor([2.0**-30]),
        "tiny64": torch.tensor([2.0**-1022], dtype=torch.float64),
        "half64": torch.tensor([0.5], dtype=torch.float64),
    }


def _workload(x):
    return {
        "mul": softrep.mul(x["tiny"], x["half"]),
        "add": softrep.add(x["sub"], x["zeros"]),
        "div": softrep.div(x["tiny"], x["div"]),
        "mm": softrep.mm(x["a"], x["a"].t()),
        "sum": softrep.sum(x["sub"]),
        "exp": softrep.exp(x["neg"]),
        "add_up": softrep.add(x["one"], x["eps"], rounding="up"),
        "f64": softrep.mul(x["tiny64"], x["half64"]),
    }


def _expected(x):
    return {k: _bits(v) for k, v in _workload(x).items()}


def test_flush_denormal_from_torch():
    x = _inputs()
    expected = _expected(x)
    assert expected["mul"][0] == 0x00400000  # 2^-127: a subnormal
    assert expected["add"][0] == 0x00000200  # 2^-140 kept
    before = fpenv.read_control()
    torch.set_flush_denormal(True)
    try:
        flushing = fpenv.read_control()
        assert flushing & FTZ_DAZ  # torch's flag is on for this thread ...
        assert _bits(x["tiny"] * 0.5)[0] == 0  # ... and torch's own mul flushes
        got = {k: _bits(v) for k, v in _workload(x).items()}
        assert fpenv.read_control() == flushing  # the caller's state is given back
    finally:
        torch.set_flush_denormal(False)
    assert fpenv.read_control() == before
    assert got == expected


@pytest.mark.parametrize("bits", [FTZ_DAZ, ROUND_DOWN, FTZ_DAZ | ROUND_DOWN], ids=["ftz-daz", "round-down", "both"])
def test_control_register_set_directly(bits):
    x = _inputs()
    expected = _expected(x)
    before = fpenv.read_control()
    fpenv.write_control(before | bits)
    try:
        got = {k: _bits(v) for k, v in _workload(x).items()}
        after = fpenv.read_control()
    finally:
        fpenv.write_control(before)
    # exception flags may have been raised meanwhile; the control bits are the caller's
    assert after & (FTZ_DAZ | ROUND_DOWN | (3 << 13 if fpenv.X86 else 3 << 22)) == bits
    assert got == expected


WORKER_SCRIPT = textwrap.dedent("""
    import json, sys, numpy as np, numba, torch
    from numba import njit, prange
    first = sys.argv[1]
    if first == "other-numba":
        # a Numba pool started by other code under flush-to-zero: its threads inherit the flag
        @njit(parallel=True)
        def touch(n):
            s = np.zeros(n)
            for i in prange(n):
                s[i] = i
            return s
        torch.set_flush_denormal(True)
        touch(64)
    else:
        torch.set_flush_denormal(True)
    import softrep
    a = torch.full((256, 256), 2.0**-70)  # 2^-70 is normal
    out = softrep.mm(a, a.t()).view(torch.int32)
    torch.set_flush_denormal(False)
    x = torch.full((1 << 20,), 2.0**-140)  # made without the flag: the conversion would flush
    torch.set_flush_denormal(True)
    s = softrep.sum(x.reshape(64, -1), dim=1).view(torch.int32)
    torch.set_flush_denormal(False)
    print(json.dumps({"mm": sorted(set(out.reshape(-1).tolist())), "sum": sorted(set(s.tolist()))}))
""")


@pytest.mark.parametrize("first", ["softrep", "other-numba"])
def test_worker_threads(first):
    """Parallel kernels: every worker thread computes IEEE subnormals, whether
    softrep or other Numba code started the thread pool under flush-to-zero."""
    import json

    env = {"NUMBA_NUM_THREADS": "2", "OMP_WAIT_POLICY": "passive"}
    import os

    env = dict(os.environ, **env)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", WORKER_SCRIPT, first], env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # 256 products of 2^-140: 2^-132 (a subnormal); the sum of 16384 terms 2^-140 is 2^-126
    assert got["mm"] == [0x00020000]
    assert got["sum"] == [0x00800000]
