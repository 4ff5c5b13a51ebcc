"""CPU launchers of the random draws: one parallel loop over the output elements."""

from numba import njit, prange

from ..algorithms.random import key_offset, rand_f32_element, rand_f64_element, randn_f32_element


@njit(parallel=True, cache=True)
def rand_f32(out, key_lo, key_hi, off_lo, off_hi, shift, scale):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = rand_f32_element(key, offset, i, shift, scale)


@njit(parallel=True, cache=True)
def rand_f64(out, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = rand_f64_element(key, offset, i)


@njit(parallel=True, cache=True)
def randn_f32(out, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = randn_f32_element(key, offset, i)
