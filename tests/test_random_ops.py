"""rand, randn, randint, randperm, bernoulli: exact references (pure-Python
Philox, MPFR in binary32), invariances, statistics with fixed seeds, golden
vectors, CPU == simulator bits."""

import os
import subprocess
import sys

import gmpy2
import numpy as np
import pytest
import torch

import softrep
from golden import check

GOLDEN = "random_ops.json"
M32 = 0xFFFFFFFF


def philox_ref(counter, key):
    """Philox4x32-10 on Python ints (independent of softrep.primitives.philox)."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def words_ref(seed, offset, i):
    return philox_ref((i & M32, i >> 32, offset & M32, offset >> 32), (seed & M32, seed >> 32))


def test_reference_philox_known_answer():
    assert philox_ref((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


def normal_ref(w0, w1):
    """Box-Muller as documented, each step correctly rounded in binary32 by MPFR."""
    ctx = gmpy2.ieee(32)
    with gmpy2.context(ctx):
        u1 = gmpy2.mpfr(((w0 >> 8) + 1)) * gmpy2.mpfr(2.0**-24)
        u2 = gmpy2.mpfr(w1 >> 8) * gmpy2.mpfr(2.0**-24)
        r = gmpy2.sqrt(abs(2 * gmpy2.log(u1)))
        theta = gmpy2.mpfr(float(np.float32(2 * np.pi))) * u2
        return np.float32(float(r * gmpy2.cos(theta)))


SEED = 0x1234_5678_9ABC_DEF0


def test_rand_randn_exact_against_reference():
    g = softrep.Generator(SEED)
    g.set_state((SEED, 7))
    r32 = softrep.rand(9, generator=g)
    r64 = softrep.rand(3, 3, generator=g, dtype=torch.float64)
    rn = softrep.randn((3, 3), generator=g)
    assert g.offset == 10
    for i in range(9):
        w = words_ref(SEED, 7, i)
        assert r32[i].item() == (w[0] >> 8) * 2.0**-24
        w = words_ref(SEED, 8, i)
        assert r64.reshape(-1)[i].item() == ((w[0] << 21) | (w[1] >> 11)) * 2.0**-53
        w = words_ref(SEED, 9, i)
        assert rn.reshape(-1)[i].numpy().tobytes() == normal_ref(w[0], w[1]).tobytes()


def test_element_depends_only_on_seed_offset_index():
    a = softrep.rand(10, generator=softrep.Generator(5))
    b = softrep.rand(2, 2, generator=softrep.Generator(5))
    assert torch.equal(a[:4], b.reshape(-1))
    g = softrep.Generator(5)
    first, second = softrep.randn(4, generator=g), softrep.randn(4, generator=g)
    assert not torch.equal(first, second)
    assert torch.equal(softrep.randn(4, generator=softrep.Generator(5)), first)


def test_low_precision_dtypes_and_default_generator():
    for dtype, bits in ((torch.float16, 11), (torch.bfloat16, 8)):
        x = softrep.rand(50, dtype=dtype, generator=softrep.Generator(3)).float()
        w = [words_ref(3, 0, i)[0] >> (32 - bits) for i in range(50)]
        assert x.tolist() == [k * 2.0**-bits for k in w]
    softrep.manual_seed(11)
    a = softrep.rand(3)
    softrep.manual_seed(11)
    assert torch.equal(a, softrep.rand(3))


def test_randint_randperm_bernoulli_exact():
    g = softrep.Generator(SEED)
    ri = softrep.randint(-3, 4, (5,), generator=g)
    ri2 = softrep.randint(100, size=(2,), generator=g)
    perm = softrep.randperm(6, generator=g)
    bern = softrep.bernoulli(torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0]), generator=g)
    k63 = [(lambda w: (w[0] << 31) | (w[1] >> 1))(words_ref(SEED, 0, i)) for i in range(5)]
    assert ri.tolist() == [-3 + k % 7 for k in k63]
    assert ri2.tolist() == [(lambda w: ((w[0] << 31) | (w[1] >> 1)) % 100)(words_ref(SEED, 1, i)) for i in range(2)]
    keys = [(lambda w: (w[0] << 31) | (w[1] >> 1))(words_ref(SEED, 2, i)) for i in range(6)]
    assert perm.tolist() == sorted(range(6), key=lambda i: (keys[i], i))
    u = [(words_ref(SEED, 3, i)[0] >> 8) * 2.0**-24 for i in range(5)]
    assert bern.tolist() == [float(ui < p) for ui, p in zip(u, [0.0, 0.25, 0.5, 0.75, 1.0])]
    assert bern[0] == 0 and bern[4] == 1


def test_statistics_fixed_seed():
    g = softrep.Generator(2024)
    n = softrep.randn(100_000, generator=g).double()
    assert abs(n.mean().item()) < 0.02 and 0.97 < n.var().item() < 1.03
    assert 0.15 < (n > 1).double().mean().item() < 0.17  # P(Z > 1) = 0.1587
    u = softrep.rand(100_000, generator=g).double()
    assert abs(u.mean().item() - 0.5) < 0.01 and abs(u.var().item() - 1 / 12) < 0.005
    assert u.min() >= 0 and u.max() < 1
    b = softrep.bernoulli(torch.zeros(100_000), 0.3, generator=g)
    assert abs(b.mean().item() - 0.3) < 0.01
    r = softrep.randint(0, 10, (100_000,), generator=g)
    counts = torch.bincount(r, minlength=10)
    assert counts.min() > 9_000 and counts.max() < 11_000
    p = softrep.randperm(1000, generator=g)
    assert sorted(p.tolist()) == list(range(1000)) and p.tolist() != list(range(1000))


def test_shapes_dtypes_devices_and_empty():
    assert softrep.rand(0).shape == (0,)
    assert softrep.randn(2, 0, 3).shape == (2, 0, 3)
    assert softrep.rand(()).shape == ()
    assert softrep.randperm(0).tolist() == []
    assert softrep.randn(2, dtype=torch.float64).dtype == torch.float64
    assert softrep.randint(5, (3,), dtype=torch.int32).dtype == torch.int32
    assert softrep.rand(2, device="cpu", requires_grad=True).requires_grad


def test_bad_arguments():
    with pytest.raises(ValueError, match="'size'"):
        softrep.rand(-1)
    with pytest.raises(TypeError, match="'dtype'"):
        softrep.rand(2, dtype=torch.int32)
    with pytest.raises(TypeError, match="'generator'"):
        softrep.randn(2, generator=torch.Generator())
    with pytest.raises(ValueError, match="'low' and 'high'"):
        softrep.randint(5, 5, (2,))
    with pytest.raises(ValueError, match="'n'"):
        softrep.randperm(-2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        softrep.bernoulli(torch.tensor([1.5]))
    with pytest.raises(TypeError, match="'input'"):
        softrep.bernoulli([0.5])


def test_thread_count_independence():
    code = ("import softrep,torch;g=softrep.Generator(9);"
            "print(softrep.fingerprint([softrep.rand(999,generator=g),softrep.randn(999,generator=g),"
            "softrep.rand(99,generator=g,dtype=torch.float64)]))")
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, SOFTREP_BACKEND="cpu")
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True, check=True).stdout)
    assert outs[0] == outs[1] and len(outs[0].strip()) == 64


def _draws(seed):
    g = softrep.Generator(seed)
    return {
        "rand_f32": softrep.rand(7, generator=g),
        "rand_f64": softrep.rand(5, generator=g, dtype=torch.float64),
        "rand_f16": softrep.rand(5, generator=g, dtype=torch.float16).float(),
        "randn_f32": softrep.randn(7, generator=g),
        "randint": softrep.randint(-50, 50, (6,), generator=g),
        "randperm": softrep.randperm(9, generator=g),
        "bernoulli": softrep.bernoulli(torch.full((8,), 0.5), generator=g),
    }


def test_golden():
    for key, value in _draws(77).items():
        check(GOLDEN, key, value)


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    sim = _draws(77)
    backend("cpu")
    cpu = _draws(77)
    for key in sim:
        assert sim[key].numpy().tobytes() == cpu[key].numpy().tobytes(), key
    for key, value in sim.items():
        check(GOLDEN, key, value)
