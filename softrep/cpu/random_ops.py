"""CPU launchers of the random draws: one parallel loop over the output elements."""

from numba import njit, prange, types

from ..algorithms.random import (dropout_noise, dropout_product, key_offset, rand_f32_element, rand_f64_element,
                                 randn_f32_element)
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


# The draws first, then the products, as two loops: one loop storing both
# compiles to code about ten times slower (docs/benchmarks.md).  Every element
# is computed alone either way, so the loops' split changes no bit.

@kernel("random_ops.dropout_f32", (_v(types.float32),) * 3 + _RNG + (types.int64, types.int64) + (types.float32,) * 3)
@njit(parallel=True, cache=True)
def dropout_f32(out, noise, x, key_lo, key_hi, off_lo, off_hi, first, shift, uscale, keep, scale):
    """noise[i] = dropout's multiplier of element first + i (its float32
    draw), out[i] = mul_rn(x[i], noise[i])."""
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        noise[i] = dropout_noise(rand_f32_element(key, offset, first + i, shift, uscale), keep, scale)
    for i in prange(out.size):
        out[i] = dropout_product(x[i], noise[i])


@kernel("random_ops.dropout_f64", (_v(types.float64),) * 3 + _RNG + (types.int64,) + (types.float64,) * 2)
@njit(parallel=True, cache=True)
def dropout_f64(out, noise, x, key_lo, key_hi, off_lo, off_hi, first, keep, scale):
    """As `dropout_f32`, with the float64 draw."""
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        noise[i] = dropout_noise(rand_f64_element(key, offset, first + i), keep, scale)
    for i in prange(out.size):
        out[i] = dropout_product(x[i], noise[i])
