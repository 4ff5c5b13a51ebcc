"""Exact IEEE-754 arithmetic in plain Python, for the primitives' Python semantics.

Inside a Numba kernel the rounding primitives compile to hardware instructions
(CUDA) or to LLVM operations plus error-free transformations (CPU).  When the
same kernel source runs as Python -- in Numba's CUDA simulator, or when a
primitive is called directly -- these functions give the primitives their
meaning: compute the exact result as a rational number, then round it once.

They are slow (a few microseconds per operation) and obviously correct, which is
what a simulator needs.  Only the simulator and direct Python calls use them.
"""

import math
from fractions import Fraction

import numpy as np

from .modes import DOWN, NEAREST, UP, ZERO  # noqa: E402

# precision p, minimum normal exponent emin, maximum exponent emax
_FORMATS = {
    np.float32: (24, -126, 127),
    np.float64: (53, -1022, 1023),
}


def _is_neg(x):
    return math.copysign(1.0, float(x)) < 0


def round_fraction(q, dtype, mode, sign_if_zero=False):
    """Round the rational q to `dtype` (np.float32 or np.float64) in `mode`.

    `sign_if_zero` is the sign bit to use when q is exactly zero.
    """
    p, emin, emax = _FORMATS[dtype]
    if q == 0:
        return dtype(-0.0 if sign_if_zero else 0.0)
    neg = q < 0
    m = -q if neg else q
    # exponent e with 2**e <= m < 2**(e+1)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    quantum = max(e, emin) - (p - 1)  # exponent of the last significand bit
    scaled = m / Fraction(2) ** quantum
    n = scaled.numerator // scaled.denominator
    rest = scaled - n
    if rest != 0:
        if mode == NEAREST:
            if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
                n += 1
        elif mode == ZERO:
            pass
        elif (mode == UP) != neg:  # away from zero for up on positives, down on negatives
            n += 1
    largest = (2**p - 1) * Fraction(2) ** (emax - p + 1)
    value = n * Fraction(2) ** quantum
    if value > largest:
        to_inf = mode == NEAREST or (mode == UP and not neg) or (mode == DOWN and neg)
        value = math.inf if to_inf else float(largest)
        return dtype(-value if neg else value)
    f = math.ldexp(n, quantum)
    return dtype(-f if neg else f)


def _nan(dtype):
    return dtype(np.nan)


def _zero_sum_sign(x, y, mode):
    """Sign bit of an exact-zero sum x + y (IEEE 754 section 6.3)."""
    if x == 0 and y == 0 and _is_neg(x) == _is_neg(y):
        return _is_neg(x)
    return mode == DOWN


def add(a, b, mode):
    dtype = type(a)
    if math.isnan(a) or math.isnan(b):
        return _nan(dtype)
    if math.isinf(a) or math.isinf(b):
        if math.isinf(a) and math.isinf(b) and _is_neg(a) != _is_neg(b):
            return _nan(dtype)
        return dtype(a if math.isinf(a) else b)
    q = Fraction(float(a)) + Fraction(float(b))
    return round_fraction(q, dtype, mode, _zero_sum_sign(a, b, mode) if q == 0 else False)


def sub(a, b, mode):
    return add(a, -b, mode)


def mul(a, b, mode):
    dtype = type(a)
    if math.isnan(a) or math.isnan(b):
        return _nan(dtype)
    neg = _is_neg(a) != _is_neg(b)
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0:
            return _nan(dtype)
        return dtype(-math.inf if neg else math.inf)
    return round_fraction(Fraction(float(a)) * Fraction(float(b)), dtype, mode, neg)


def div(a, b, mode):
    dtype = type(a)
    if math.isnan(a) or math.isnan(b):
        return _nan(dtype)
    neg = _is_neg(a) != _is_neg(b)
    if math.isinf(a):
        if math.isinf(b):
            return _nan(dtype)
        return dtype(-math.inf if neg else math.inf)
    if math.isinf(b):
        return dtype(-0.0 if neg else 0.0)
    if b == 0:
        if a == 0:
            return _nan(dtype)
        return dtype(-math.inf if neg else math.inf)
    return round_fraction(Fraction(float(a)) / Fraction(float(b)), dtype, mode, neg)


def sqrt(a, mode):
    dtype = type(a)
    if math.isnan(a) or (a < 0):
        return _nan(dtype)
    if a == 0 or math.isinf(a):
        return a
    # sqrt(a) = sqrt(n) * 2**(k/2); scale so that the integer square root carries
    # more than enough bits (p + 3), then the remainder decides the sticky bit.
    f = Fraction(float(a))
    p = _FORMATS[dtype][0]
    k = 2 * (p + 3) - (f.numerator.bit_length() - f.denominator.bit_length())
    k += k % 2
    scaled = f * Fraction(2) ** k
    n = scaled.numerator // scaled.denominator
    r = math.isqrt(n)
    exact = r * r == n and scaled.denominator == 1
    root = Fraction(r) / Fraction(2) ** (k // 2)
    if not exact:
        # r < sqrt(scaled) < r + 1: a value strictly inside the interval rounds
        # like the true root, because the interval is far below half an ulp.
        root += Fraction(1, 2) / Fraction(2) ** (k // 2)
    return round_fraction(root, dtype, mode)


def fma(a, b, c, mode):
    dtype = type(a)
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return _nan(dtype)
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0:
            return _nan(dtype)
        prod_neg = _is_neg(a) != _is_neg(b)
        if math.isinf(c) and _is_neg(c) != prod_neg:
            return _nan(dtype)
        return dtype(-math.inf if prod_neg else math.inf)
    if math.isinf(c):
        return c
    prod = Fraction(float(a)) * Fraction(float(b))
    q = prod + Fraction(float(c))
    if q == 0:
        prod_zero = dtype(-0.0 if (_is_neg(a) != _is_neg(b)) else 0.0) if prod == 0 else dtype(1.0)
        return round_fraction(q, dtype, mode, _zero_sum_sign(prod_zero, c, mode))
    return round_fraction(q, dtype, mode)
