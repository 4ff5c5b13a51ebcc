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


CANONICAL_NAN_BITS = {np.dtype(np.float32): 0x7FC00000, np.dtype(np.float64): 0x7FF8000000000000}


def identical_bits(got, want):
    """Bitwise equality of softrep's result `got` with the reference `want` (numpy
    scalars of one dtype): the sign of zero counts, and a NaN result must be the
    canonical NaN of the dtype whatever NaN the reference holds."""
    got, want = np.asarray(got), np.asarray(want)
    if math.isnan(want):
        uint = np.uint32 if got.dtype == np.float32 else np.uint64
        return int(got.view(uint)) == CANONICAL_NAN_BITS[got.dtype]
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()


# The sum order of docs/order.md ("Reductions"): blocks of SUM_BLOCK terms, each
# added left to right from its first term, then a pairwise tree over the block
# partials, level by level (an odd last partial moves up unchanged).
SUM_BLOCK = 128


def documented_sum(terms, add=lambda a, b: a + b, empty=None):
    """The documented sum of `terms` with `add` rounding once per addition (by
    default numpy's + on the terms' own dtype: IEEE round to nearest).  No
    terms: `empty`."""
    terms = list(terms)
    if not terms:
        return empty
    partials = []
    with np.errstate(all="ignore"):
        for start in range(0, len(terms), SUM_BLOCK):
            p = terms[start]
            for t in terms[start + 1:start + SUM_BLOCK]:
                p = add(p, t)
            partials.append(p)
        while len(partials) > 1:
            level = [add(partials[2 * t], partials[2 * t + 1]) for t in range(len(partials) // 2)]
            if len(partials) % 2:
                level.append(partials[-1])
            partials = level
    return partials[0]


def batch_tree(partials, add=lambda a, b: a + b):
    """The batch order of docs/order.md: per-sample partials added pairwise,
    level by level, an odd last node moving up unchanged (node (L, j) covers
    the samples [j 2^L, (j+1) 2^L))."""
    level = list(partials)
    while len(level) > 1:
        nxt = [add(level[2 * i], level[2 * i + 1]) for i in range(len(level) // 2)]
        level = nxt + (level[-1:] if len(level) % 2 else [])
    return level[0]


def correctly_rounded_f32(name, x):
    """float32 name(x) rounded once to nearest: MPFR in IEEE binary32 (sigmoid,
    which gmpy2 lacks, from the verifier's MPFR evaluation)."""
    if name == "sigmoid":
        from softrep.tools import verify as verify

        return verify.mpfr_f32("sigmoid", np.float32(x))[0]
    with gmpy2.context(gmpy2.ieee(32)):
        return np.float32(float(getattr(gmpy2, name)(gmpy2.mpfr(float(x)))))


def worst_relative_error(got, exact):
    """log2 of max |got[i] - exact(i)| / |exact(i)| over i, exact(i) an MPFR
    value computed at 200 bits (exact: i -> gmpy2.mpfr)."""
    worst = gmpy2.mpfr(0)
    with gmpy2.context(precision=200):
        for i, y in enumerate(got):
            e = exact(i)
            worst = max(worst, abs((gmpy2.mpfr(float(y)) - e) / e))
        return float(gmpy2.log2(worst)) if worst else -math.inf
