"""CPU launcher of the Philox word draw: one parallel loop over the elements."""

from numba import njit, prange, types

from ..algorithms.random import key_offset, store_element_words
from .launch import kernel


@kernel("philox.words", (types.Array(types.int64, 1, "C"),) + (types.int64,) * 4)
@njit(parallel=True, cache=True)
def words(out, key_lo, key_hi, off_lo, off_hi):
    """out (int64, 4n): the words of elements [0, n) of the draw at (key, offset)."""
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size // 4):
        store_element_words(out, key, offset, i)
