"""CPU launchers of the random draws: one parallel loop over the output elements."""

from numba import njit, prange, types

from ..algorithms.random import key_offset, rand_f32_element, rand_f64_element, randn_f32_element
from .launch import kernel

_RNG = (types.int64,) * 4  # key and offset halves


def _v(t):
    return types.Array(t, 1, "C")


@kernel("random_ops.rand_f32", (_v(types.float32),) + _RNG + (types.int64, types.int64, types.float32))
@njit(parallel=True, cache=True)
def rand_f32(out, key_lo, key_hi, off_lo, off_hi, first, shift, scale):
    """out[i] = the draw of element first + i (a slice of a larger draw)."""
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = rand_f32_element(key, offset, first + i, shift, scale)


@kernel("random_ops.rand_f64", (_v(types.float64),) + _RNG + (types.int64,))
@njit(parallel=True, cache=True)
def rand_f64(out, key_lo, key_hi, off_lo, off_hi, first):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = rand_f64_element(key, offset, first + i)


@kernel("random_ops.randn_f32", (_v(types.float32),) + _RNG)
@njit(parallel=True, cache=True)
def randn_f32(out, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = randn_f32_element(key, offset, i)
