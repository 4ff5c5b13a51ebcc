"""CPU launcher of the Philox word draw: one parallel loop over the elements."""

import numpy as np
from numba import njit, prange

from ..primitives.philox import element_words


@njit(parallel=True, cache=True)
def words(out, key_lo, key_hi, off_lo, off_hi):
    """out (int64, 4n): the words of elements [0, n) of the draw at (key, offset)."""
    key = np.uint64(key_lo) | (np.uint64(key_hi) << np.uint64(32))
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << np.uint64(32))
    for i in prange(out.size // 4):
        w0, w1, w2, w3 = element_words(key, offset, np.uint64(i))
        out[4 * i] = np.int64(w0)
        out[4 * i + 1] = np.int64(w1)
        out[4 * i + 2] = np.int64(w2)
        out[4 * i + 3] = np.int64(w3)
