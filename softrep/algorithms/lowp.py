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
  of an [M, K] x [K, N] product.
"""

import numpy as np

from ..primitives.formats import FINITE, OP_FMA, STOCHASTIC, U0, emulated_op, from_parts, round_value
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
