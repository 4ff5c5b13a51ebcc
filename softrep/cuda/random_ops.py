"""CUDA launchers of the random draws: grid-stride loops over the output elements."""

from numba import cuda

from ..primitives.jit import SIMULATOR
from ..algorithms.random import (dropout_noise, dropout_product, key_offset, rand_f32_element, rand_f64_element,
                                 randn_f32_element)
from .launch import grid


@cuda.jit(cache=not SIMULATOR)
def _rand_f32_kernel(out, key_lo, key_hi, off_lo, off_hi, first, shift, scale):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = rand_f32_element(key, offset, first + i, shift, scale)


@cuda.jit(cache=not SIMULATOR)
def _rand_f64_kernel(out, key_lo, key_hi, off_lo, off_hi, first):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = rand_f64_element(key, offset, first + i)


@cuda.jit(cache=not SIMULATOR)
def _randn_f32_kernel(out, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = randn_f32_element(key, offset, i)


@cuda.jit(cache=not SIMULATOR)
def _dropout_f32_kernel(out, noise, x, key_lo, key_hi, off_lo, off_hi, first, shift, uscale, keep, scale):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        multiplier = dropout_noise(rand_f32_element(key, offset, first + i, shift, uscale), keep, scale)
        noise[i] = multiplier
        out[i] = dropout_product(x[i], multiplier)


@cuda.jit(cache=not SIMULATOR)
def _dropout_f64_kernel(out, noise, x, key_lo, key_hi, off_lo, off_hi, first, keep, scale):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        multiplier = dropout_noise(rand_f64_element(key, offset, first + i), keep, scale)
        noise[i] = multiplier
        out[i] = dropout_product(x[i], multiplier)


def rand_f32(stream, out, key_lo, key_hi, off_lo, off_hi, first, shift, scale):
    blocks, threads = grid(out.size)
    _rand_f32_kernel[blocks, threads, stream](out, key_lo, key_hi, off_lo, off_hi, first, shift, scale)


def rand_f64(stream, out, key_lo, key_hi, off_lo, off_hi, first):
    blocks, threads = grid(out.size)
    _rand_f64_kernel[blocks, threads, stream](out, key_lo, key_hi, off_lo, off_hi, first)


def randn_f32(stream, out, key_lo, key_hi, off_lo, off_hi):
    blocks, threads = grid(out.size)
    _randn_f32_kernel[blocks, threads, stream](out, key_lo, key_hi, off_lo, off_hi)


def dropout_f32(stream, out, noise, x, key_lo, key_hi, off_lo, off_hi, first, shift, uscale, keep, scale):
    blocks, threads = grid(out.size)
    _dropout_f32_kernel[blocks, threads, stream](out, noise, x, key_lo, key_hi, off_lo, off_hi, first, shift, uscale,
                                                 keep, scale)


def dropout_f64(stream, out, noise, x, key_lo, key_hi, off_lo, off_hi, first, keep, scale):
    blocks, threads = grid(out.size)
    _dropout_f64_kernel[blocks, threads, stream](out, noise, x, key_lo, key_hi, off_lo, off_hi, first, keep, scale)


def _register_audit():
    from numba.core import types

    from . import audit

    i64 = (types.int64,) * 4
    audit.register("random_ops.rand_f32", lambda: (
        _rand_f32_kernel.py_func, (types.Array(types.float32, 1, "C"),) + i64 + (types.int64, types.int64,
                                                                                  types.float32)))
    audit.register("random_ops.rand_f64", lambda: (
        _rand_f64_kernel.py_func, (types.Array(types.float64, 1, "C"),) + i64 + (types.int64,)))
    f32, f64 = types.Array(types.float32, 1, "C"), types.Array(types.float64, 1, "C")
    audit.register("random_ops.dropout_f32", lambda: (
        _dropout_f32_kernel.py_func, (f32,) * 3 + i64 + (types.int64, types.int64) + (types.float32,) * 3))
    audit.register("random_ops.dropout_f64", lambda: (
        _dropout_f64_kernel.py_func, (f64,) * 3 + i64 + (types.int64,) + (types.float64,) * 2))
    audit.register("random_ops.randn_f32", lambda: (
        _randn_f32_kernel.py_func, (types.Array(types.float32, 1, "C"),) + i64))


_register_audit()
