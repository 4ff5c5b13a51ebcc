"""Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy
as 1, 2, 3", SC'11), the counter-based generator behind softrep's randomness.

A counter-based generator is a pure function: four 32-bit output words from a
128-bit counter and a 64-bit key.  Element i of a random draw is computed from
(key, counter(i)) alone, so any thread on any device produces the same words in
any order -- no sequential state, nothing that depends on the launch shape.

Everything here is integer arithmetic on 32-bit values held in uint64 scalars:
a 32 x 32 -> 64-bit product fits exactly in uint64, every sum is masked back to
32 bits explicitly, so CPU (Numba), CUDA (numba-cuda) and plain Python (the
simulator) compute the same bits.  All constants are np.uint64 so that Numba
never mixes signed and unsigned integers (which it would promote to float64).
"""

import numpy as np

from .rounding import jitable

MASK32 = np.uint64(0xFFFFFFFF)
SHIFT32 = np.uint64(32)
# Round multipliers and Weyl key increments of Philox4x32 (Random123).
PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint64(0x9E3779B9)
PHILOX_W1 = np.uint64(0xBB67AE85)
ROUNDS = 10


@jitable
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0, c1, c2, c3) and key (k0, k1).

    Arguments and results are uint64 scalars holding 32-bit words.
    """
    c0 = np.uint64(c0) & MASK32
    c1 = np.uint64(c1) & MASK32
    c2 = np.uint64(c2) & MASK32
    c3 = np.uint64(c3) & MASK32
    k0 = np.uint64(k0) & MASK32
    k1 = np.uint64(k1) & MASK32
    for r in range(ROUNDS):
        if r > 0:
            k0 = (k0 + PHILOX_W0) & MASK32
            k1 = (k1 + PHILOX_W1) & MASK32
        p0 = PHILOX_M0 * c0  # < 2**64: exact
        p1 = PHILOX_M1 * c2
        hi0 = p0 >> SHIFT32
        lo0 = p0 & MASK32
        hi1 = p1 >> SHIFT32
        lo1 = p1 & MASK32
        c0 = hi1 ^ c1 ^ k0
        c1 = lo1
        c2 = hi0 ^ c3 ^ k1
        c3 = lo0
    return c0, c1, c2, c3


@jitable
def element_words(key, offset, index):
    """The four 32-bit words of element `index` of the draw at `offset`.

    key, offset and index are 64-bit integers (uint64 scalars).  The Philox
    counter is (index low, index high, offset low, offset high): a draw at one
    offset has 2**64 elements of four words each, and distinct (offset, index)
    pairs never share a counter.
    """
    key = np.uint64(key)
    offset = np.uint64(offset)
    index = np.uint64(index)
    return philox4x32(index & MASK32, index >> SHIFT32, offset & MASK32, offset >> SHIFT32,
                      key & MASK32, key >> SHIFT32)


@jitable
def element_word0(key, offset, index):
    """First word of `element_words` (what one-word-per-element draws use)."""
    w0, w1, w2, w3 = element_words(key, offset, index)
    return w0
