"""Low-precision emulation, per output element: the algorithm source of
`round_to`, the emulated elementwise ops and the emulated `mm`
(docs/lowp.md).

Each function computes one output element from its inputs, the format spec
(softrep.primitives.formats) and, for stochastic rounding, the generator's
(key, offset): the random word of a rounding is the first Philox word of
(key, offset, index) with a fixed index per rounding, so the result never
depends on the device, the thread count or the launch shape.  The CPU
launchers (softrep/cpu/lowp.py), the CUDA launchers (softrep/cuda/lowp.py)
and the simulator all call these functions; the launchers only loop.

Word indices:

* `round_to`, elementwise ops: the output's flat index i;
* `mm`: o * K + k for the k-th rounding (k = 0 .. K-1) of output o = i * N + j
  of an [M, K] x [K, N] product;
* MX block formats (`mx_block`): the element's flat (row-major) index in the
  input, whatever the block dimension.
"""

import numpy as np

from ..primitives.formats import (CLASS_FINITE, CLASS_ZERO, E8M0_MAX_EXPONENT, E8M0_MIN_EXPONENT, FINITE,
                                  INFINITE, NOT_A_NUMBER, OP_FMA, STOCHASTIC, U0, U1, emulated_op, from_parts,
                                  round_significand, round_value, split_float)
from ..primitives.philox import element_word0
from ..primitives.rounding import canonical, jitable


@jitable
def rounding_word(spec, key, offset, index):
    """The random word of rounding number `index` (uint64-convertible): Philox
    for stochastic rounding, 0 (unused) for the other modes."""
    if spec[7] == STOCHASTIC:
        return element_word0(key, offset, np.uint64(index))
    return U0


@jitable
def round_to_element(x, i, spec, key, offset):
    """Element i of round_to: x (= input[i]) rounded once to the format `spec`,
    in x's type, NaN canonical."""
    return canonical(round_value(x, spec, rounding_word(spec, key, offset, i)))


@jitable
def elementwise_element(op, x, y, z, i, spec, key, offset):
    """Element i of an emulated elementwise op (a formats.OP_* code): op(x, y[, z])
    rounded once to `spec`, in x's type, NaN canonical."""
    return canonical(emulated_op(op, x, y, z, spec, rounding_word(spec, key, offset, i)))


@jitable
def mm_element(out, a, b, i, j, spec, key, offset):
    """out[i, j] = element (i, j) of the emulated product of a [M, K] and b [K, N]:
    acc = +0; for k = 0 .. K-1 in order: acc = round(a[i, k] * b[k, j] + acc),
    each step one fma rounded once to `spec`; NaN canonical."""
    depth = a.shape[1]
    o = i * out.shape[1] + j
    acc = from_parts(out[i, j], False, FINITE, U0, 0)  # +0 in the type of out (its value is not read)
    for k in range(depth):
        acc = emulated_op(OP_FMA, a[i, k], b[k, j], acc, spec, rounding_word(spec, key, offset, o * depth + k))
    out[i, j] = canonical(acc)


# ---------------------------------------------------------------------------- OCP Microscaling


@jitable
def mx_shared_exponent(x, o, l0, l1, n, emax_elem):
    """The E8M0 exponent s of the block x[o, l0:l1, n] (OCP MX v1.0, 6.3):
    floor(log2(amax)) - emax_elem, raised to -127 (also for an all-zero block);
    E8M0_MAX_EXPONENT + 1 (the NaN scale) when it exceeds 127 or the block holds
    an infinity or a NaN.

    floor(log2(amax)) is the exponent of amax's leading bit, which is the
    largest leading-bit exponent of the block's elements: no logarithm and no
    comparison of values is needed."""
    lead_max = E8M0_MIN_EXPONENT + emax_elem
    for l in range(l0, l1):
        cls, neg, m, exp = split_float(x[o, l, n])
        if cls == CLASS_FINITE:
            lead = exp + 63
            if lead > lead_max:
                lead_max = lead
        elif cls != CLASS_ZERO:
            return E8M0_MAX_EXPONENT + 1
    s = lead_max - emax_elem
    return s if s <= E8M0_MAX_EXPONENT else E8M0_MAX_EXPONENT + 1


@jitable
def mx_block(values, elements, scales, x, o, blk, n, spec, block, key, offset):
    """Block (o, blk, n) of an MX conversion of x (outer, length, inner), the
    block running along the middle axis over l = blk*block .. min(length,
    (blk+1)*block) - 1:

    * scales[o, blk, n] = X = 2**s (float32; NaN for the NaN scale);
    * values[o, l, n] = x rounded once to the element format `spec` scaled by
      X (element grid shifted by s, overflow clamped to +-max * X), in x's type;
    * elements[o, l, n] = values[o, l, n] / X (exactly: the element value).

    `spec` is the element format's spec (formats.Format.spec); its saturation
    flag is replaced by 1, the specification clamping every overflow.  A
    zero keeps its sign; a NaN scale makes every value and element NaN
    (canonical)."""
    length = x.shape[1]
    inner = x.shape[2]
    l0 = blk * block
    l1 = min(length, l0 + block)
    s = mx_shared_exponent(x, o, l0, l1, n, spec[2])
    scale_like = scales[o, blk, n]
    if s > E8M0_MAX_EXPONENT:
        scales[o, blk, n] = from_parts(scale_like, False, NOT_A_NUMBER, U0, 0)
        for l in range(l0, l1):
            nan = from_parts(x[o, l, n], False, NOT_A_NUMBER, U0, 0)
            values[o, l, n] = nan
            elements[o, l, n] = nan
        return
    scales[o, blk, n] = from_parts(scale_like, False, FINITE, U1, s)
    shifted = (spec[0], spec[1] + s, spec[2] + s, spec[3], spec[4], spec[5], 1, spec[7], 0)
    for l in range(l0, l1):
        v = x[o, l, n]
        cls, neg, m, exp = split_float(v)
        if cls == CLASS_ZERO:
            values[o, l, n] = v
            elements[o, l, n] = v
            continue
        word = rounding_word(spec, key, offset, (o * length + l) * inner + n)
        kind, k, q = round_significand(neg, m, exp, False, shifted, word)
        values[o, l, n] = from_parts(v, neg, kind, k, q)
        elements[o, l, n] = from_parts(v, neg, kind, k, q - s)


# ---------------------------------------------------------------------------- fp8 codes


@jitable
def decode_float8(code, mantissa_bits, bias, ieee_specials):
    """The float32 value of the 8-bit float with bits `code` (an integer in
    [0, 256)): sign, 7 - mantissa_bits exponent bits with `bias`, mantissa_bits
    fraction bits.  ieee_specials = 1: the all-ones exponent holds the
    infinities and NaNs (float8_e5m2); 0: only S.1111.111 is NaN, the rest of
    that binade is finite (float8_e4m3fn).  Exact: every such value is a
    float32 (at most 4 significant bits, exponents within [-17, 15]); NaN is
    canonical."""
    like = np.float32(0)
    u = np.uint64(code)
    neg = (u >> np.uint64(7)) != U0
    field = np.int64((u >> np.uint64(mantissa_bits)) & np.uint64((1 << (7 - mantissa_bits)) - 1))
    frac = u & np.uint64((1 << mantissa_bits) - 1)
    top = (1 << (7 - mantissa_bits)) - 1
    if field == top and (ieee_specials != 0 or frac == np.uint64((1 << mantissa_bits) - 1)):
        if ieee_specials != 0 and frac == U0:
            return from_parts(like, neg, INFINITE, U0, 0)
        return from_parts(like, False, NOT_A_NUMBER, U0, 0)
    if field == 0:
        # subnormal (or zero): frac * 2**(1 - bias - mantissa_bits)
        return from_parts(like, neg, FINITE, frac, 1 - bias - mantissa_bits)
    return from_parts(like, neg, FINITE, frac | np.uint64(1 << mantissa_bits), field - bias - mantissa_bits)
