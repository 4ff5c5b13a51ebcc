"""The rounding primitives: the only place where a softrep kernel does arithmetic.

Every floating-point operation in a kernel is one of these calls.  Each is the
IEEE-754 operation on float32 or float64 operands (both of the same type) with a
named rounding direction:

    suffix  rounding                      libdevice / PTX
    _rn     to nearest, ties to even      __fadd_rn  /  add.rn
    _rd     toward -infinity ("down")     __fadd_rd  /  add.rm
    _ru     toward +infinity ("up")       __fadd_ru  /  add.rp
    _rz     toward zero                   __fadd_rz  /  add.rz

Operations: add, sub, mul, div, sqrt, fma (a*b + c with a single rounding).

Each name is a stub with three implementations:

* CUDA (`softrep/primitives/cuda_lowering.py`): libdevice's explicitly rounded functions.
  NVVM never contracts them, so `fma` happens exactly where the source says.
* CPU (`softrep/primitives/cpu_lowering.py`): LLVM `fadd`/`fmul`/... without fast-math
  flags and `llvm.fma`/`llvm.sqrt` for round-to-nearest; the directed roundings
  are derived from the round-to-nearest result and the exact sign of its error.
* Python (the body of each stub below): exact rational arithmetic rounded once,
  which is what Numba's CUDA simulator runs.

The module also holds the few non-arithmetic helpers every kernel needs:
`canonical` (NaN -> the canonical quiet NaN), `is_nan`, the undecided marker
of the two-pass fast paths (`undecided`, `is_undecided`), and the float32 and
float64 constants kernels use (Numba types a bare float literal as float64).
"""


import numpy as np

from . import pyfloat as _pyfloat
from numba.core import types as _types

from .jit import bitcast, by_type, jitable, wrapping_add, wrapping_sub  # noqa: F401  (re-exported for kernel authors)

MODES = ("nearest", "down", "up", "zero")
SUFFIX = {"nearest": "rn", "down": "rd", "up": "ru", "zero": "rz"}
_PYMODE = {"rn": _pyfloat.NEAREST, "rd": _pyfloat.DOWN, "ru": _pyfloat.UP, "rz": _pyfloat.ZERO}

NAN32 = np.float32(np.nan)  # bits 0x7FC00000
NAN64 = np.float64(np.nan)  # bits 0x7FF8000000000000
ZERO32 = np.float32(0.0)
ZERO64 = np.float64(0.0)
ONE32 = np.float32(1.0)
ONE64 = np.float64(1.0)
ZERO32 = np.float32(0.0)
ZERO64 = np.float64(0.0)


def _check_same_float(*args):
    t = type(args[0])
    if t not in (np.float32, np.float64) or any(type(a) is not t for a in args):
        raise TypeError(
            "rounding primitives take numpy float32 or float64 scalars of one type, got "
            + ", ".join(type(a).__name__ for a in args)
        )


def _binary(op, suffix):
    pyop = getattr(_pyfloat, op)
    mode = _PYMODE[suffix]

    def primitive(a, b):
        _check_same_float(a, b)
        return pyop(a, b, mode)

    primitive.__name__ = primitive.__qualname__ = f"{op}_{suffix}"
    primitive.__doc__ = f"IEEE-754 {op}(a, b) rounded {suffix}."
    return primitive


def _sqrt(suffix):
    mode = _PYMODE[suffix]

    def primitive(a):
        _check_same_float(a)
        return _pyfloat.sqrt(a, mode)

    primitive.__name__ = primitive.__qualname__ = f"sqrt_{suffix}"
    primitive.__doc__ = f"IEEE-754 squareRoot(a) rounded {suffix}."
    return primitive


def _fma(suffix):
    mode = _PYMODE[suffix]

    def primitive(a, b, c):
        _check_same_float(a, b, c)
        return _pyfloat.fma(a, b, c, mode)

    primitive.__name__ = primitive.__qualname__ = f"fma_{suffix}"
    primitive.__doc__ = f"IEEE-754 fusedMultiplyAdd(a, b, c) rounded {suffix}."
    return primitive


add_rn, add_rd, add_ru, add_rz = (_binary("add", s) for s in ("rn", "rd", "ru", "rz"))
sub_rn, sub_rd, sub_ru, sub_rz = (_binary("sub", s) for s in ("rn", "rd", "ru", "rz"))
mul_rn, mul_rd, mul_ru, mul_rz = (_binary("mul", s) for s in ("rn", "rd", "ru", "rz"))
div_rn, div_rd, div_ru, div_rz = (_binary("div", s) for s in ("rn", "rd", "ru", "rz"))
sqrt_rn, sqrt_rd, sqrt_ru, sqrt_rz = (_sqrt(s) for s in ("rn", "rd", "ru", "rz"))
fma_rn, fma_rd, fma_ru, fma_rz = (_fma(s) for s in ("rn", "rd", "ru", "rz"))

PRIMITIVES = {
    f"{op}_{s}": globals()[f"{op}_{s}"]
    for op in ("add", "sub", "mul", "div", "sqrt", "fma")
    for s in ("rn", "rd", "ru", "rz")
}


def primitive(op, rounding):
    """The primitive for `op` ('add', ..., 'fma') and a rounding name ('nearest', ...)."""
    return PRIMITIVES[f"{op}_{SUFFIX[rounding]}"]


# --------------------------------------------------------------------------- non-arithmetic


@jitable
def is_nan(x):
    return x != x


# Canonicalisation works on the bits: LLVM treats all NaNs as interchangeable
# and may fold a float `select(isnan(x), NAN, x)` into plain `x`, keeping the
# hardware's payload (x86 produces 0xFFC00000 for sqrt(-1)).
_CANON32, _ABS_BITS32, _INF_BITS32 = np.uint32(0x7FC00000), np.uint32(0x7FFFFFFF), np.uint32(0x7F800000)
_CANON64 = np.uint64(0x7FF8000000000000)
_ABS_BITS64, _INF_BITS64 = np.uint64(0x7FFFFFFFFFFFFFFF), np.uint64(0x7FF0000000000000)


@jitable
def canonical32(x):
    """x, with any NaN replaced by the canonical quiet NaN 0x7FC00000."""
    u = bitcast(x)
    if np.uint32(u & _ABS_BITS32) > _INF_BITS32:
        return bitcast(_CANON32)
    return x


@jitable
def canonical64(x):
    """x, with any NaN replaced by the canonical quiet NaN 0x7FF8000000000000."""
    u = bitcast(x)
    if np.uint64(u & _ABS_BITS64) > _INF_BITS64:
        return bitcast(_CANON64)
    return x


def canonical(x):
    """x, with any NaN replaced by the canonical quiet NaN of its type."""
    if x != x:
        return type(x)(np.nan)
    return x


by_type(canonical, {_types.float32: canonical32, _types.float64: canonical64})


def canonical_nan(x):
    """The canonical quiet NaN in the type of x."""
    return type(x)(np.nan)


by_type(canonical_nan, {_types.float32: lambda x: NAN32, _types.float64: lambda x: NAN64})


# A quiet NaN with a payload no result has (every NaN a kernel stores is
# canonical): it marks, in an output buffer, an element that a branch-free
# fast path left undecided, so that a second pass finds the few it must
# compute again without a flag array and without evaluating the fast path
# twice.
UNDECIDED_BITS32 = np.uint32(0x7FC00001)
UNDECIDED_BITS64 = np.uint64(0x7FF8000000000001)


def undecided(x):
    """The undecided marker in the type of x."""
    return bitcast(UNDECIDED_BITS32 if isinstance(x, np.float32) else UNDECIDED_BITS64)


by_type(undecided, {_types.float32: lambda x: bitcast(UNDECIDED_BITS32),
                    _types.float64: lambda x: bitcast(UNDECIDED_BITS64)})


def is_undecided(x):
    """Whether x is the undecided marker (its bits; no other NaN is)."""
    return bitcast(x) == (UNDECIDED_BITS32 if isinstance(x, np.float32) else UNDECIDED_BITS64)


by_type(is_undecided, {_types.float32: lambda x: bitcast(x) == UNDECIDED_BITS32,
                       _types.float64: lambda x: bitcast(x) == UNDECIDED_BITS64})


def one(x):
    """1 in the type of x (a float literal in a kernel would be float64)."""
    return type(x)(1.0)


by_type(one, {_types.float32: lambda x: ONE32, _types.float64: lambda x: ONE64})


def zero(x):
    """+0 in the type of x."""
    return type(x)(0.0)


by_type(zero, {_types.float32: lambda x: ZERO32, _types.float64: lambda x: ZERO64})


# Sign-bit operations.  Negation and absolute value are exact, but Numba lowers
# `-x` to `fsub -0.0, x`, an arithmetic instruction NVVM may fold into a
# neighbouring multiply; flipping the bit says exactly what is meant.
_SIGN32 = np.uint32(0x80000000)
_SIGN64 = np.uint64(0x8000000000000000)
_MAGNITUDE32 = np.uint32(0x7FFFFFFF)
_MAGNITUDE64 = np.uint64(0x7FFFFFFFFFFFFFFF)


@jitable
def _negate32(x):
    # Numba widens uint32 ^ uint32 to uint64; narrow it back before the bitcast
    return bitcast(np.uint32(bitcast(x) ^ _SIGN32))


@jitable
def _negate64(x):
    return bitcast(np.uint64(bitcast(x) ^ _SIGN64))


@jitable
def _fabs32(x):
    return bitcast(np.uint32(bitcast(x) & _MAGNITUDE32))


@jitable
def _fabs64(x):
    return bitcast(np.uint64(bitcast(x) & _MAGNITUDE64))


def negate(x):
    """-x, by flipping the sign bit (exact, also for 0, inf and NaN)."""
    return -x


def fabs(x):
    """|x|, by clearing the sign bit."""
    return type(x)(abs(x))


by_type(negate, {_types.float32: _negate32, _types.float64: _negate64})
by_type(fabs, {_types.float32: _fabs32, _types.float64: _fabs64})
