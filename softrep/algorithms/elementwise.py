"""Scalar kernels of the elementwise ops that are not a single primitive.

add, sub, mul, div, sqrt and fma are the rounding primitives themselves
(`softrep.primitives.rounding`); the functions here build the rest from them.
Negation and absolute value only change the sign bit, so they are exact in
every rounding direction and need no primitive.
"""

from ..primitives.rounding import (div_rd, div_rn, div_ru, div_rz, fabs, jitable, mul_rd, mul_rn, mul_ru, mul_rz,
                       negate, one, zero)


@jitable
def neg(x):
    return negate(x)


@jitable
def absolute(x):
    return fabs(x)


@jitable
def square_rn(x):
    return mul_rn(x, x)


@jitable
def square_rd(x):
    return mul_rd(x, x)


@jitable
def square_ru(x):
    return mul_ru(x, x)


@jitable
def square_rz(x):
    return mul_rz(x, x)


@jitable
def reciprocal_rn(x):
    return div_rn(one(x), x)


@jitable
def reciprocal_rd(x):
    return div_rd(one(x), x)


@jitable
def reciprocal_ru(x):
    return div_ru(one(x), x)


@jitable
def reciprocal_rz(x):
    return div_rz(one(x), x)


@jitable
def sign(x):
    """-1, +1 or 0 (keeping the zero's sign) in the type of x; NaN stays NaN."""
    if x > 0:
        return one(x)
    if x < 0:
        return negate(one(x))
    return x


@jitable
def relu(x):
    """x < 0 ? +0 : x, torch's relu: relu(-0) = -0, a NaN passes (the launcher
    makes it canonical).  A selection: exact."""
    if x < 0:
        return zero(x)
    return x


@jitable
def relu_backward(g, out):
    """g where out > 0 or out is NaN, else +0: torch's threshold_backward of
    relu's result at 0 (a NaN compares false with 0)."""
    if out <= 0:
        return zero(g)
    return g
