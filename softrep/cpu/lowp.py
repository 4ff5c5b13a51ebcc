"""CPU launchers of the low-precision kernels: parallel loops over output
elements, each element computed by softrep/algorithms/lowp.py.

The random word of output element i (stochastic rounding) is Philox of
(key, offset, i) -- or of (key, offset, i * K + k) for the k-th rounding of an
emulated dot product -- so the thread split changes no bit.
"""

from numba import njit, prange, types

from ..algorithms.lowp import decode_float8, elementwise_element, mm_element, mx_block, round_to_element
from ..algorithms.random import key_offset
from .launch import kernel

# Argument types of the launches, for the kernel audit (softrep/cpu/launch.py).
_FLOATS = (types.float32, types.float64)
_SPEC = types.UniTuple(types.int64, 9)
_RNG = (types.int64,) * 4


def _v(t):
    return types.Array(t, 1, "C")


def _m(t):
    return types.Array(t, 2, "C")


@kernel("lowp.round_to", *[(_v(t), _v(t), _SPEC) + _RNG for t in _FLOATS])
@njit(parallel=True, cache=True)
def round_to(out, x, spec, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = round_to_element(x[i], i, spec, key, offset)


@kernel("lowp.elementwise", *[(_v(t),) * 4 + (types.int64, _SPEC) + _RNG for t in _FLOATS])
@njit(parallel=True, cache=True)
def elementwise(out, x, y, z, op, spec, key_lo, key_hi, off_lo, off_hi):
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    for i in prange(out.size):
        out[i] = elementwise_element(op, x[i], y[i], z[i], i, spec, key, offset)


@kernel("lowp.mm", *[(_m(t),) * 3 + (_SPEC,) + _RNG for t in _FLOATS])
@njit(parallel=True, cache=True)
def mm(out, a, b, spec, key_lo, key_hi, off_lo, off_hi):
    """out[i, j] = the emulated product's element (algorithms.lowp.mm_element)."""
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    rows, cols = out.shape
    for o in prange(rows * cols):
        i = o // cols
        mm_element(out, a, b, i, o - i * cols, spec, key, offset)


def _t(t):
    return types.Array(t, 3, "C")


@kernel("lowp.mx", *[(_t(t), _t(t), _t(types.float32), _t(t), _SPEC, types.int64) + _RNG for t in _FLOATS])
@njit(parallel=True, cache=True)
def mx(values, elements, scales, x, spec, block, key_lo, key_hi, off_lo, off_hi):
    """One task per MX block (algorithms.lowp.mx_block) of x (outer, length, inner)."""
    key, offset = key_offset(key_lo, key_hi, off_lo, off_hi)
    outer, nblocks, inner = scales.shape
    for t in prange(outer * nblocks * inner):
        o = t // (nblocks * inner)
        rest = t - o * nblocks * inner
        blk = rest // inner
        mx_block(values, elements, scales, x, o, blk, rest - blk * inner, spec, block, key, offset)


@kernel("lowp.decode_float8", (_v(types.float32), _v(types.uint8), types.int64, types.int64, types.int64))
@njit(parallel=True, cache=True)
def decode_float8_codes(out, codes, mantissa_bits, bias, ieee_specials):
    """out[i] = the float32 value of the 8-bit float code[i] (algorithms.lowp.decode_float8)."""
    for i in prange(out.size):
        out[i] = decode_float8(codes[i], mantissa_bits, bias, ieee_specials)
