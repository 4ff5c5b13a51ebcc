"""Independent references for tests: MPFR (gmpy2) in IEEE binary32 / binary64.

A gmpy2 context with the format's precision, exponent range and
`subnormalize=True` rounds exactly like an IEEE-754 operation, so
`mpfr_op(...)` is the correctly rounded result in the requested direction,
computed by code that shares nothing with softrep.
"""

import math

import gmpy2
import numpy as np

ROUNDINGS = ("nearest", "down", "up", "zero")
_GMPY_ROUND = {
    "nearest": gmpy2.RoundToNearest,
    "down": gmpy2.RoundDown,
    "up": gmpy2.RoundUp,
    "zero": gmpy2.RoundToZero,
}


def context(dtype, rounding="nearest"):
    bits = 32 if np.dtype(dtype) == np.float32 else 64
    ctx = gmpy2.ieee(bits)
    ctx.round = _GMPY_ROUND[rounding]
    return ctx


def mpfr_op(op, args, dtype, rounding="nearest"):
    """Correctly rounded op(*args) as a numpy scalar of `dtype`."""
    dtype = np.dtype(dtype).type
    ctx = context(dtype, rounding)
    with gmpy2.context(ctx):
        xs = [gmpy2.mpfr(float(a)) for a in args]
        if op == "add":
            r = xs[0] + xs[1]
        elif op == "sub":
            r = xs[0] - xs[1]
        elif op == "mul":
            r = xs[0] * xs[1]
        elif op == "div":
            r = xs[0] / xs[1]
        elif op == "sqrt":
            r = gmpy2.sqrt(xs[0])
        elif op == "fma":
            r = gmpy2.fma(xs[0], xs[1], xs[2])
        else:
            raise ValueError(op)
        r = ctx.check_range(r) if hasattr(ctx, "check_range") else r
    return dtype(float(r))


def same_bits(a, b):
    """Bitwise equality of two numpy float scalars, any NaN equal to any NaN."""
    if math.isnan(a) and math.isnan(b):
        return True
    return np.array(a).tobytes() == np.array(b).tobytes()
