"""Eight or sixteen float32 lanes in one CPU vector register: the vector rounding primitive.

A `float32x8` value is LLVM's `<8 x float>` in a CPU kernel (one AVX register)
and an 8-element numpy float32 array in Python.  Its operations:

* `add_rn_f32x8(a, b)`: lane j is add_rn(a[j], b[j]), the IEEE-754 float32
  addition rounded to nearest, ties to even -- one LLVM `fadd` on the vector
  without fast-math flags (no reassociation, no flush to zero: subnormal
  operands and results and signed zeros are those of the scalar add_rn).  It
  is the only arithmetic on these vectors.
* `load_f32x8(a, i)` / `store_f32x8(a, i, v)`: a[i:i+8] as one vector, and
  back (a: a 1-D C-contiguous float32 array; the caller keeps i + 8 <= a.size,
  nothing is checked).
* `transpose_f32x8(r0, ..., r7)`: the 8 columns of the 8x8 tile whose rows are
  r0..r7 (column k = [r0[k], ..., r7[k]]), by shuffles; moves bits, computes
  nothing.
* `lane_f32x8(v, j)`: lane j of v as a float32 scalar (0 <= j < 8, not
  checked in a kernel).
* `even_lanes_f32x8(a, b)`: lanes 0, 2, 4, 6 of a, then of b -- the 8
  elements at stride 2 of the 16 that a and b hold -- by one shuffle; moves
  bits, computes nothing.

`float32x16` is sixteen lanes, LLVM's `<16 x float>` (one AVX-512 register; LLVM
splits it in two elsewhere), for hosts with 512-bit vectors:

* `add_rn_f32x16(a, b)`: lane j is add_rn(a[j], b[j]), as `add_rn_f32x8`.
* `load_f32x8_pair(a, i, j)`: a[i:i+8] in lanes 0-7 and a[j:j+8] in lanes
  8-15 (two rows' runs side by side).
* `transpose_f32x8_pairs(r0, ..., r7)`: two 8x8 tiles at once, one per half:
  column k = [r0[k], ..., r7[k], r0[8+k], ..., r7[8+k]]; moves bits only.
* `lane_f32x16(v, j)`: lane j of v as a float32 scalar.

The vectors exist for CPU kernels only (CUDA kernels compute one value per
thread).  Like the scalar primitives in `softrep.primitives.rounding`, every
operation is also a Python function with the same meaning, so an algorithm
written with them runs unchanged in plain Python.
"""

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.datamodel import models
from numba.core.extending import intrinsic, overload, register_model

from .rounding import add_rn

LANES = 8

_F32 = ir.FloatType()
_V8 = ir.VectorType(_F32, LANES)
_I32 = ir.IntType(32)


def _float32_vector(lanes):
    """The Numba type float32x<lanes>: LLVM's <lanes x float> in a kernel."""
    llvm_type = ir.VectorType(_F32, lanes)

    class Float32Vector(types.Type):
        def __init__(self):
            super().__init__(name=f"float32x{lanes}")

    @register_model(Float32Vector)
    class _Model(models.PrimitiveModel):
        def __init__(self, dmm, fe_type):
            super().__init__(dmm, fe_type, llvm_type)

    return Float32Vector()


float32x8 = _float32_vector(LANES)
float32x16 = _float32_vector(2 * LANES)


def _is_f32_c_vector_array(a):
    return isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.float32 and a.layout == "C"


def _element_pointer(context, builder, array_type, array, index, index_type):
    data = context.make_array(array_type)(context, builder, array).data
    at = context.cast(builder, index, index_type, types.intp)
    return builder.bitcast(builder.gep(data, [at]), _V8.as_pointer())


# --------------------------------------------------------------------------- Python semantics


def _check_vector(name, v, lanes=LANES):
    if not (isinstance(v, np.ndarray) and v.shape == (lanes,) and v.dtype == np.float32):
        raise TypeError(f"{name}: expected a float32x{lanes} (numpy float32 array of {lanes} lanes), got {v!r}")


def _check_array(name, a, i, size=LANES, argument="i"):
    if not (isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype == np.float32 and a.flags.c_contiguous):
        raise TypeError(f"{name}: argument 'a' must be a 1-D C-contiguous float32 array")
    if not 0 <= i <= a.size - size:
        raise IndexError(f"{name}: argument '{argument}' = {i} leaves fewer than {size} elements of 'a'")


def add_rn_f32x8(a, b):
    """Lane-wise IEEE-754 float32 addition rounded to nearest: lane j = add_rn(a[j], b[j])."""
    _check_vector("add_rn_f32x8", a)
    _check_vector("add_rn_f32x8", b)
    return np.array([add_rn(a[j], b[j]) for j in range(LANES)], dtype=np.float32)


def load_f32x8(a, i):
    """a[i:i+8] as one vector."""
    _check_array("load_f32x8", a, int(i))
    return a[i:i + LANES].copy()


def store_f32x8(a, i, v):
    """a[i:i+8] = the lanes of v."""
    _check_array("store_f32x8", a, int(i))
    _check_vector("store_f32x8", v)
    a[i:i + LANES] = v


def transpose_f32x8(r0, r1, r2, r3, r4, r5, r6, r7):
    """The columns of the 8x8 tile with rows r0..r7: column k = [r0[k], ..., r7[k]]."""
    rows = (r0, r1, r2, r3, r4, r5, r6, r7)
    for r in rows:
        _check_vector("transpose_f32x8", r)
    tile = np.stack(rows)
    return tuple(tile[:, k].copy() for k in range(LANES))


def even_lanes_f32x8(a, b):
    """[a[0], a[2], a[4], a[6], b[0], b[2], b[4], b[6]]."""
    _check_vector("even_lanes_f32x8", a)
    _check_vector("even_lanes_f32x8", b)
    return np.concatenate([a[::2], b[::2]])


def lane_f32x8(v, j):
    """Lane j of v, a float32 scalar."""
    _check_vector("lane_f32x8", v)
    if not 0 <= j < LANES:
        raise IndexError(f"lane_f32x8: argument 'j' = {j} is not a lane (0 to {LANES - 1})")
    return np.float32(v[j])


def add_rn_f32x16(a, b):
    """Lane-wise IEEE-754 float32 addition rounded to nearest: lane j = add_rn(a[j], b[j])."""
    _check_vector("add_rn_f32x16", a, 2 * LANES)
    _check_vector("add_rn_f32x16", b, 2 * LANES)
    return np.array([add_rn(a[j], b[j]) for j in range(2 * LANES)], dtype=np.float32)


def load_f32x8_pair(a, i, j):
    """a[i:i+8] and a[j:j+8] as one vector of 16 lanes."""
    _check_array("load_f32x8_pair", a, int(i))
    _check_array("load_f32x8_pair", a, int(j), argument="j")
    return np.concatenate([a[i:i + LANES], a[j:j + LANES]])


def transpose_f32x8_pairs(r0, r1, r2, r3, r4, r5, r6, r7):
    """The columns of two 8x8 tiles, rows r0..r7 holding a row of each in
    their two halves: column k = [r0[k], ..., r7[k], r0[8+k], ..., r7[8+k]]."""
    rows = (r0, r1, r2, r3, r4, r5, r6, r7)
    for r in rows:
        _check_vector("transpose_f32x8_pairs", r, 2 * LANES)
    tile = np.stack(rows)
    return tuple(np.concatenate([tile[:, k], tile[:, LANES + k]]) for k in range(LANES))


def lane_f32x16(v, j):
    """Lane j of v, a float32 scalar."""
    _check_vector("lane_f32x16", v, 2 * LANES)
    if not 0 <= j < 2 * LANES:
        raise IndexError(f"lane_f32x16: argument 'j' = {j} is not a lane (0 to {2 * LANES - 1})")
    return np.float32(v[j])


# --------------------------------------------------------------------------- CPU lowering


_VECTORS = (float32x8, float32x16)


@intrinsic
def _add_rn_lanes(typingctx, a, b):
    if a not in _VECTORS or b != a:
        return None

    def codegen(context, builder, signature, args):
        # A plain fadd: LLVM gives it IEEE semantics in the default environment
        # (round to nearest, subnormals kept) unless fast-math flags say
        # otherwise, and none are set.
        return builder.fadd(args[0], args[1])

    return a(a, b), codegen


@intrinsic
def _load_f32x8(typingctx, a, i):
    if not (_is_f32_c_vector_array(a) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        return builder.load(ptr, align=4)

    return float32x8(a, i), codegen


@intrinsic
def _store_f32x8(typingctx, a, i, v):
    if not (_is_f32_c_vector_array(a) and isinstance(i, types.Integer) and v == float32x8):
        return None

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        builder.store(args[2], ptr, align=4)
        return context.get_dummy_value()

    return types.void(a, i, v), codegen


def _shuffle(builder, a, b, lanes):
    mask = ir.Constant(ir.VectorType(_I32, len(lanes)), [ir.Constant(_I32, k) for k in lanes])
    return builder.shuffle_vector(a, b, mask)


@intrinsic
def _transpose_f32x8(typingctx, r0, r1, r2, r3, r4, r5, r6, r7):
    rows = (r0, r1, r2, r3, r4, r5, r6, r7)
    if any(r != float32x8 for r in rows):
        return None
    result = types.UniTuple(float32x8, LANES)

    def codegen(context, builder, signature, args):
        # Three rounds of two-input shuffles (interleave pairs of rows, then
        # pairs of pairs, then the two 128-bit halves): 24 shuffles in all.
        lo, hi = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
        t = []
        for p in range(0, LANES, 2):
            t += [_shuffle(builder, args[p], args[p + 1], lo), _shuffle(builder, args[p], args[p + 1], hi)]
        a, b = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
        u = [_shuffle(builder, t[q], t[q + 2], m) for q in (0, 1, 4, 5) for m in (a, b)]
        l4, h4 = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
        columns = [_shuffle(builder, u[q], u[q + 4], l4) for q in range(4)] + \
            [_shuffle(builder, u[q], u[q + 4], h4) for q in range(4)]
        return context.make_tuple(builder, signature.return_type, columns)

    return result(*rows), codegen


@intrinsic
def _even_lanes_f32x8(typingctx, a, b):
    if a != float32x8 or b != float32x8:
        return None

    def codegen(context, builder, signature, args):
        return _shuffle(builder, args[0], args[1], [0, 2, 4, 6, 8, 10, 12, 14])

    return float32x8(a, b), codegen


@intrinsic
def _lane(typingctx, v, j):
    if v not in _VECTORS or not isinstance(j, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        at = context.cast(builder, args[1], signature.args[1], types.int32)
        return builder.extract_element(args[0], at)

    return types.float32(v, j), codegen


@intrinsic
def _load_f32x8_pair(typingctx, a, i, j):
    if not (_is_f32_c_vector_array(a) and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        first = builder.load(_element_pointer(context, builder, signature.args[0], args[0], args[1],
                                              signature.args[1]), align=4)
        second = builder.load(_element_pointer(context, builder, signature.args[0], args[0], args[2],
                                               signature.args[2]), align=4)
        return _shuffle(builder, first, second, list(range(2 * LANES)))

    return float32x16(a, i, j), codegen


def _in_halves(lanes):
    """A two-input shuffle mask of 8-lane vectors ([0, 16): lanes of a then b)
    applied to each half of two 16-lane vectors."""
    return [k if k < LANES else k + LANES for k in lanes] + [k + LANES if k < LANES else k + 2 * LANES for k in lanes]


@intrinsic
def _transpose_f32x8_pairs(typingctx, r0, r1, r2, r3, r4, r5, r6, r7):
    rows = (r0, r1, r2, r3, r4, r5, r6, r7)
    if any(r != float32x16 for r in rows):
        return None
    result = types.UniTuple(float32x16, LANES)

    def codegen(context, builder, signature, args):
        # `_transpose_f32x8`'s three rounds, each shuffle in both halves at once
        lo, hi = _in_halves([0, 8, 1, 9, 4, 12, 5, 13]), _in_halves([2, 10, 3, 11, 6, 14, 7, 15])
        t = []
        for p in range(0, LANES, 2):
            t += [_shuffle(builder, args[p], args[p + 1], lo), _shuffle(builder, args[p], args[p + 1], hi)]
        a, b = _in_halves([0, 1, 8, 9, 4, 5, 12, 13]), _in_halves([2, 3, 10, 11, 6, 7, 14, 15])
        u = [_shuffle(builder, t[q], t[q + 2], m) for q in (0, 1, 4, 5) for m in (a, b)]
        l4, h4 = _in_halves([0, 1, 2, 3, 8, 9, 10, 11]), _in_halves([4, 5, 6, 7, 12, 13, 14, 15])
        columns = [_shuffle(builder, u[q], u[q + 4], l4) for q in range(4)] + \
            [_shuffle(builder, u[q], u[q + 4], h4) for q in range(4)]
        return context.make_tuple(builder, signature.return_type, columns)

    return result(*rows), codegen


@overload(add_rn_f32x8, target="cpu")
def _ov_add_rn_f32x8(a, b):
    if a == float32x8 and b == float32x8:
        return lambda a, b: _add_rn_lanes(a, b)


@overload(load_f32x8, target="cpu")
def _ov_load_f32x8(a, i):
    if _is_f32_c_vector_array(a) and isinstance(i, types.Integer):
        return lambda a, i: _load_f32x8(a, i)


@overload(store_f32x8, target="cpu")
def _ov_store_f32x8(a, i, v):
    if _is_f32_c_vector_array(a) and isinstance(i, types.Integer) and v == float32x8:
        return lambda a, i, v: _store_f32x8(a, i, v)


@overload(transpose_f32x8, target="cpu")
def _ov_transpose_f32x8(r0, r1, r2, r3, r4, r5, r6, r7):
    if all(r == float32x8 for r in (r0, r1, r2, r3, r4, r5, r6, r7)):
        return lambda r0, r1, r2, r3, r4, r5, r6, r7: _transpose_f32x8(r0, r1, r2, r3, r4, r5, r6, r7)


@overload(even_lanes_f32x8, target="cpu")
def _ov_even_lanes_f32x8(a, b):
    if a == float32x8 and b == float32x8:
        return lambda a, b: _even_lanes_f32x8(a, b)


@overload(lane_f32x8, target="cpu")
def _ov_lane_f32x8(v, j):
    if v == float32x8 and isinstance(j, types.Integer):
        return lambda v, j: _lane(v, j)


@overload(add_rn_f32x16, target="cpu")
def _ov_add_rn_f32x16(a, b):
    if a == float32x16 and b == float32x16:
        return lambda a, b: _add_rn_lanes(a, b)


@overload(load_f32x8_pair, target="cpu")
def _ov_load_f32x8_pair(a, i, j):
    if _is_f32_c_vector_array(a) and isinstance(i, types.Integer) and isinstance(j, types.Integer):
        return lambda a, i, j: _load_f32x8_pair(a, i, j)


@overload(transpose_f32x8_pairs, target="cpu")
def _ov_transpose_f32x8_pairs(r0, r1, r2, r3, r4, r5, r6, r7):
    if all(r == float32x16 for r in (r0, r1, r2, r3, r4, r5, r6, r7)):
        return lambda r0, r1, r2, r3, r4, r5, r6, r7: _transpose_f32x8_pairs(r0, r1, r2, r3, r4, r5, r6, r7)


@overload(lane_f32x16, target="cpu")
def _ov_lane_f32x16(v, j):
    if v == float32x16 and isinstance(j, types.Integer):
        return lambda v, j: _lane(v, j)
