"""Philox4x32-10 and softrep.Generator: Random123 known-answer vectors, the draw
layout (element i depends on seed, offset and i only), CPU = simulator."""

import numpy as np
import pytest
import torch

import softrep
from softrep.ops import generator as srandom
from softrep.primitives.philox import philox4x32

# Random123's kat_vectors for philox4x32_10: (counter, key) -> output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_known_answers_python(counter, key, expected):
    out = philox4x32(*[np.uint64(c) for c in counter], *[np.uint64(k) for k in key])
    assert tuple(int(w) for w in out) == expected


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_known_answers_compiled(counter, key, expected):
    from numba import njit

    run = njit(lambda a, b, c, d, e, f: philox4x32(a, b, c, d, e, f))
    out = run(*[np.uint64(c) for c in counter], *[np.uint64(k) for k in key])
    assert tuple(int(w) for w in out) == expected


def _reference_words(seed, offset, n):
    """Element i of a draw: Philox of counter (i lo, i hi, offset lo, offset hi), key = seed."""
    m = 0xFFFFFFFF
    return [tuple(int(w) for w in philox4x32(np.uint64(i & m), np.uint64(i >> 32), np.uint64(offset & m),
                                             np.uint64(offset >> 32), np.uint64(seed & m), np.uint64(seed >> 32)))
            for i in range(n)]


def test_uniform_words_layout_and_offsets():
    seed = 0xA4093822299F31D0
    g = softrep.Generator(seed)
    first = srandom.uniform_words(5, generator=g)
    second = srandom.uniform_words(3, generator=g)
    assert [tuple(r) for r in first.tolist()] == _reference_words(seed, 0, 5)
    assert [tuple(r) for r in second.tolist()] == _reference_words(seed, 1, 3)
    assert g.offset == 2
    # element i does not depend on how many elements the draw has
    g.set_state((seed, 0))
    assert srandom.uniform_words(2, generator=g).tolist() == first[:2].tolist()


def test_generator_state_and_manual_seed():
    g = softrep.Generator(7)
    srandom.uniform_words(4, generator=g)
    state = g.get_state()
    a = srandom.uniform_words(4, generator=g)
    g.set_state(state)
    assert torch.equal(srandom.uniform_words(4, generator=g), a)
    g.manual_seed(7)
    assert g.get_state() == (7, 0)
    assert softrep.Generator(-1).seed == 2**64 - 1
    with pytest.raises(TypeError, match="seed"):
        softrep.Generator(1.5)
    with pytest.raises(ValueError, match=r"state\[1\]"):
        g.set_state((1, -1))
    with pytest.raises(TypeError, match="generator"):
        srandom.uniform_words(3, generator=torch.Generator())


def test_default_generator_manual_seed():
    softrep.manual_seed(1234)
    a = srandom.uniform_words(3)
    softrep.manual_seed(1234)
    assert torch.equal(srandom.uniform_words(3), a)
    assert [tuple(r) for r in a.tolist()] == _reference_words(1234, 0, 3)


def test_zero_draw():
    g = softrep.Generator(1)
    assert srandom.uniform_words(0, generator=g).shape == (0, 4)


@pytest.mark.simulator
def test_uniform_words_simulator_matches_cpu(backend):
    seed = 0x0123456789ABCDEF
    g = softrep.Generator(seed)
    g.set_state((seed, 2**40 + 3))
    got = srandom.uniform_words(20, generator=g)
    backend("cpu")
    g.set_state((seed, 2**40 + 3))
    ref = srandom.uniform_words(20, generator=g)
    assert torch.equal(got, ref)
    assert [tuple(r) for r in got.tolist()] == _reference_words(seed, 2**40 + 3, 20)
