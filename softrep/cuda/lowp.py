"""CUDA launchers of the low-precision kernels: grid-stride loops over outputs.

Each element is computed by softrep/algorithms/lowp.py, with the same random
words as softrep/cpu/lowp.py.
"""

from numba import cuda

from ..algorithms.lowp import decode_float8, elementwise_element, mm_element, mx_block, round_to_element
from ..algorithms.random import key_offset
from ..primitives.jit import SIMULATOR
from .launch import grid


@cuda.jit(cache=not SIMULATOR)
def _round_to_kernel(out, x, spec, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = round_to_element(x[i], i, spec, key, offset)


@cuda.jit(cache=not SIMULATOR)
def _elementwise_kernel(out, x, y, z, op, spec, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = elementwise_element(op, x[i], y[i], z[i], i, spec, key, offset)


@cuda.jit(cache=not SIMULATOR)
def _mm_kernel(out, a, b, spec, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    cols = out.shape[1]
    start, step = cuda.grid(1), cuda.gridsize(1)
    for o in range(start, out.shape[0] * cols, step):
        i = o // cols
        mm_element(out, a, b, i, o - i * cols, spec, key, offset)


@cuda.jit(cache=not SIMULATOR)
def _mx_kernel(values, elements, scales, x, spec, block, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    outer, nblocks, inner = scales.shape
    start, step = cuda.grid(1), cuda.gridsize(1)
    for t in range(start, outer * nblocks * inner, step):
        o = t // (nblocks * inner)
        rest = t - o * nblocks * inner
        blk = rest // inner
        mx_block(values, elements, scales, x, o, blk, rest - blk * inner, spec, block, key, offset)


@cuda.jit(cache=not SIMULATOR)
def _decode_float8_kernel(out, codes, mantissa_bits, bias, ieee_specials):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = decode_float8(codes[i], mantissa_bits, bias, ieee_specials)


def mx(stream, values, elements, scales, x, spec, block, *rng):
    """One thread per MX block (algorithms.lowp.mx_block), grid-stride."""
    if scales.size:
        blocks, threads = grid(scales.size)
        _mx_kernel[blocks, threads, stream](values, elements, scales, x, spec, block, *rng)


def decode_float8_codes(stream, out, codes, mantissa_bits, bias, ieee_specials):
    if out.size:
        blocks, threads = grid(out.size)
        _decode_float8_kernel[blocks, threads, stream](out, codes, mantissa_bits, bias, ieee_specials)


def round_to(stream, out, x, spec, *rng):
    if out.size:
        blocks, threads = grid(out.size)
        _round_to_kernel[blocks, threads, stream](out, x, spec, *rng)


def elementwise(stream, out, x, y, z, op, spec, *rng):
    if out.size:
        blocks, threads = grid(out.size)
        _elementwise_kernel[blocks, threads, stream](out, x, y, z, op, spec, *rng)


def mm(stream, out, a, b, spec, *rng):
    if out.size:
        blocks, threads = grid(out.size)
        _mm_kernel[blocks, threads, stream](out, a, b, spec, *rng)


def _register_audit():
    from numba.core import types

    from . import audit

    spec = types.UniTuple(types.int64, 9)
    rng = (types.int64,) * 4
    for dtype in (types.float32, types.float64):
        v = types.Array(dtype, 1, "C")
        m = types.Array(dtype, 2, "C")
        audit.register(f"lowp.round_to.{dtype}", lambda v=v: (_round_to_kernel.py_func, (v, v, spec) + rng))
        audit.register(f"lowp.elementwise.{dtype}", lambda v=v: (
            _elementwise_kernel.py_func, (v, v, v, v, types.int64, spec) + rng))
        audit.register(f"lowp.mm.{dtype}", lambda m=m: (_mm_kernel.py_func, (m, m, m, spec) + rng))
        t3 = types.Array(dtype, 3, "C")
        s3 = types.Array(types.float32, 3, "C")
        audit.register(f"lowp.mx.{dtype}", lambda t3=t3, s3=s3: (
            _mx_kernel.py_func, (t3, t3, s3, t3, spec, types.int64) + rng))
    audit.register("lowp.decode_float8", lambda: (
        _decode_float8_kernel.py_func, (types.Array(types.float32, 1, "C"), types.Array(types.uint8, 1, "C"))
        + (types.int64,) * 3))


_register_audit()
