"""bfloat16 and float16 bit patterns to float32 and back, per element.

The CPU product kernels read bfloat16/float16 operands as 16-bit patterns and
widen them while packing (softrep/cpu/linalg.py), and write their outputs as
16-bit patterns; these functions are those two conversions.  Both formats are
subsets of float32 (8 and 11 significand bits, exponents within float32's,
subnormals included), so widening is exact; `narrowed_bits` first rounds a
float32 once to the format (`round_value`, the mechanism of every softrep
rounding) and then only re-encodes a value the format holds.

Format codes: BFLOAT16 = 0, FLOAT16 = 1.  NaN comes out as the format's
canonical NaN (0x7FC0, 0x7E00).
"""

import numpy as np

from ..primitives.formats import round_value
from ..primitives.rounding import bitcast, canonical, jitable

BFLOAT16 = 0
FLOAT16 = 1

_U16 = np.uint32(0xFFFF)


@jitable
def bfloat16_to_float32(u):
    """The float32 of bfloat16 pattern u (any integer type): the pattern is the top half."""
    return bitcast(np.uint32((np.uint32(u) & _U16) << np.uint32(16)))


@jitable
def float16_to_float32(u):
    """The float32 of float16 pattern u: sign, exponent rebiased by 127 - 15,
    significand shifted up 13 bits; a subnormal m * 2^-24 is normalised."""
    h = np.uint32(u) & _U16
    sign = np.uint32((h & np.uint32(0x8000)) << np.uint32(16))
    e = (h >> np.uint32(10)) & np.uint32(0x1F)
    m = h & np.uint32(0x3FF)
    if e == np.uint32(0x1F):
        bits = sign | np.uint32(0x7F800000) | np.uint32(m << np.uint32(13))
    elif e == np.uint32(0):
        if m == np.uint32(0):
            bits = sign
        else:
            shift = np.uint32(0)
            while (m & np.uint32(0x400)) == np.uint32(0):
                m = np.uint32(m << np.uint32(1))
                shift += np.uint32(1)
            # m * 2^-24 = 1.f * 2^(-14 - shift): biased exponent 113 - shift
            bits = sign | np.uint32((np.uint32(113) - shift) << np.uint32(23)) \
                | np.uint32((m & np.uint32(0x3FF)) << np.uint32(13))
    else:
        bits = sign | np.uint32((e + np.uint32(112)) << np.uint32(23)) | np.uint32(m << np.uint32(13))
    return bitcast(np.uint32(bits))


@jitable
def widened(u, fmt):
    """float32 of the 16-bit pattern u of format `fmt` (BFLOAT16 or FLOAT16)."""
    if fmt == BFLOAT16:
        return bfloat16_to_float32(u)
    return float16_to_float32(u)


@jitable
def _float16_bits(x):
    """The float16 pattern of a float32 x that is a float16 value (or inf, or canonical NaN)."""
    b = np.uint32(bitcast(x))
    sign = np.uint32((b >> np.uint32(16)) & np.uint32(0x8000))
    e = (b >> np.uint32(23)) & np.uint32(0xFF)
    m = b & np.uint32(0x7FFFFF)
    if e == np.uint32(0xFF):
        return np.uint16(sign | np.uint32(0x7C00) | np.uint32(m >> np.uint32(13)))
    if e <= np.uint32(102):  # zero (float16's smallest subnormal 2^-24 has e = 103)
        return np.uint16(sign)
    if e >= np.uint32(113):  # normal in float16: exponent e - 127 + 15
        return np.uint16(sign | np.uint32((e - np.uint32(112)) << np.uint32(10)) | np.uint32(m >> np.uint32(13)))
    # subnormal in float16: (2^23 + m) * 2^(e - 150) in units of 2^-24
    return np.uint16(sign | np.uint32((m | np.uint32(0x800000)) >> (np.uint32(126) - e)))


@jitable
def narrowed_bits(x, spec, fmt):
    """The 16-bit pattern of float32 x rounded once to the format (`spec`: the
    format's spec for round to nearest-even, as the kernels take it)."""
    r = canonical(round_value(x, spec, np.uint64(0)))
    if fmt == BFLOAT16:
        return np.uint16(np.uint32(bitcast(r)) >> np.uint32(16))
    return _float16_bits(r)
