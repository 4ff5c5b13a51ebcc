"""Shared pieces of sin, cos, tan, atan, erf and erfc (part 2 of the math library).

These functions follow the scheme of softrep/algorithms/math/core.py -- a fast path in
double with a proven relative error, then a rounding test -- but their
accurate path is a table of exceptional inputs instead of a double-double
evaluation:

* The fast path of each function has a relative error below 2^-49 (argued in
  its file).  `round_if_within` widens the double result y to the window
  [y (1 - 2^-48), y (1 + 2^-48)] (the two products are rounded, by 2^-53
  relatively, so the window still contains every value within 2^-49 of y) and
  returns the common float32 rounding of both ends when they agree: rounding
  is monotone, so that float32 is the correctly rounded value.
* A float32 rounding boundary falls inside the window for about one input in
  2^23.5, i.e. a few hundred of the 2^32.  The fast path is deterministic (the
  same primitives on every backend), so running it on every float32 input
  finds all of them: `python -m softrep.algorithms.math.exception_tables scan NAME` does this,
  asks MPFR (gmpy2, 200 bits) for their correctly rounded values, and writes
  them into the generated block of the function's file.  `lookup_exception`
  finds them by binary search.  Each table therefore lists, for every input
  where the double evaluation cannot decide, the MPFR value; the exhaustive
  verifier re-checks every input against an independent reference.
* The hard cases (exact value within 2^-20 ulp of a float32 rounding
  midpoint) are saved by the exhaustive verifier, `python -m softrep verify
  NAME --exhaustive`, to tests/data/mathlib_hard_cases/NAME.txt.

Functions that are odd or even are tabulated on |x|: the key is the bit
pattern of |x| and the sign is applied afterwards.
"""

import numpy as np

from ...primitives.rounding import add_rn, bitcast, fma_rn, jitable, mul_rn
from .core import abs32, neg32, round_if_within, signbit32

F64 = np.float64
U32 = np.uint32

# Window of the rounding test: relative half-width 2^-48 (both factors exact).
WINDOW_LO = F64(1.0 - 2.0**-48)
WINDOW_HI = F64(1.0 + 2.0**-48)

@jitable
def lookup_exception(keys, values, key, fallback):
    """values[i] (float32 bits) where keys[i] == key (keys sorted), else fallback."""
    lo = 0
    hi = keys.size - 1
    while lo <= hi:
        mid = (lo + hi) >> 1
        k = keys[mid]
        if k == key:
            return bitcast(values[mid])
        if k < key:
            lo = mid + 1
        else:
            hi = mid - 1
    return fallback

@jitable
def finish(y, keys, values, key):
    """The correctly rounded float32 of the value that y approximates within
    2^-49 relatively; `key` (uint32 bits of the argument) selects the table
    entry when the window straddles a rounding boundary."""
    r, ok = round_if_within(y, WINDOW_LO, WINDOW_HI)
    if ok:
        return r
    return lookup_exception(keys, values, key, r)

@jitable
def decide(y):
    """(the float32 of y, True) if the window of `finish` around y rounds to
    one float32, else (the float32 of its lower end, False): `finish`
    without the table, for the branch-free fast paths (the table search is a
    loop)."""
    return round_if_within(y, WINDOW_LO, WINDOW_HI)

@jitable
def finish_odd(x, r, keys, values):
    """The result of an odd function at x where its fast path did not decide:
    the table entry of |x| with the sign of x.  r is the fast path's result
    (the float32 of its window's lower end) with the sign of x; without a
    table entry (never: the table lists every undecided input) it is
    returned, as `finish` would."""
    negative = signbit32(x)
    r = lookup_exception(keys, values, bitcast(abs32(x)), neg32(r) if negative else r)
    return neg32(r) if negative else r

def exception_arrays(pairs):
    """Sorted key and value arrays for `lookup_exception`; a NaN key (never
    looked up: NaN arguments return before) keeps the arrays non-empty."""
    pairs = sorted(set(pairs) | {(0xFFFFFFFF, 0x7FC00000)})
    keys = np.array([k for k, _ in pairs], dtype=np.uint32)
    values = np.array([v for _, v in pairs], dtype=np.uint32)
    return keys, values

@jitable
def horner_columns(columns, row, u):
    """sum columns[i][row] u^i by Horner's rule with fma (`coefficient_columns`)."""
    n = len(columns)
    p = columns[n - 1][row]
    for i in range(n - 2, -1, -1):
        p = fma_rn(p, u, columns[i][row])
    return p

def coefficient_array(values):
    return np.array(values, dtype=np.float64)

def coefficient_columns(rows):
    """A table of polynomials (one row each, lowest coefficient first) as a
    tuple of columns for `horner_columns`: the tuple's length (the degree) is
    known when the kernel compiles, so the Horner loop unrolls, and a
    vectorised loop reads column i of each lane's row with one gather."""
    table = np.array(rows, dtype=np.float64)
    return tuple(np.ascontiguousarray(table[:, i]) for i in range(table.shape[1]))

# --------------------------------------------------------------------------- exact decisions
# For rsqrt, cbrt and hypot the rounding test's failure is settled exactly: the
# window [y (1 - w), y (1 + w)] contains at most one float32 rounding boundary
# (w is far below the float32 spacing), the midpoint of the two float32
# roundings lo32 < hi32 of its ends.  Each function compares its exact value
# with that midpoint using error-free operations.

OVERFLOW_THRESHOLD = F64(2.0**128 - 2.0**103)  # FLT_MAX + ulp/2: from here up, RN gives inf
_HALF = F64(0.5)


@jitable
def midpoint32(lo32, hi32):
    """The rounding boundary between adjacent positive float32 lo32 < hi32, exact in double."""
    if hi32 == np.float32(np.inf):
        return OVERFLOW_THRESHOLD
    return mul_rn(add_rn(F64(lo32), F64(hi32)), _HALF)


@jitable
def window_ends(y, window_lo, window_hi):
    """The float32 roundings of y * window_lo and y * window_hi (y > 0)."""
    return np.float32(mul_rn(y, window_lo)), np.float32(mul_rn(y, window_hi))


@jitable
def pick(lo32, hi32, above):
    """hi32 if the exact value is above the midpoint (above > 0), lo32 if below
    (< 0); on a tie (0) the one with an even last bit (inf beats FLT_MAX, as IEEE
    754 rounds FLT_MAX + ulp/2 to inf)."""
    if above > 0:
        return hi32
    if above < 0:
        return lo32
    if (bitcast(lo32) & np.uint32(1)) == np.uint32(0):
        return lo32
    return hi32

# --------------------------------------------------------------------------- offline tools
# `python -m softrep.algorithms.math.exception_tables scan NAME` regenerates the exception table of
# NAME (after any change to its fast path, exp_core's included for erf and
# erfc).  It does not run in kernels.

# name -> (approximation function, ranges of key bits [lo, hi), MPFR function name)
SCANS = {
    "sin": ("sin_approx", [(0x00000000, 0x7F800000)], "sin"),
    "cos": ("cos_approx", [(0x00000000, 0x7F800000)], "cos"),
    "tan": ("tan_approx", [(0x00000000, 0x7F800000)], "tan"),
    "atan": ("atan_approx", [(0x00000000, 0x7F800001)], "atan"),
    "erf": ("erf_approx", [(0x00000000, 0x40800001)], "erf"),  # |x| <= 4
    # x in [-4, 10.25]: beyond, erfc rounds to 2 or to 0
    "erfc": ("erfc_approx", [(0x00000000, 0x41240001), (0x80000000, 0xC0800001)], "erfc"),
}


def _scanner(approx):
    from numba import njit, prange

    @njit(parallel=True)
    def scan(lo, flags):
        for i in prange(flags.size):
            y = approx(bitcast(np.uint32(lo + i)))
            _, ok = round_if_within(y, WINDOW_LO, WINDOW_HI)
            flags[i] = 0 if ok else 1
    return scan


def mpfr_f32_bits(fname, key):
    """Bits of the correctly rounded float32 value of gmpy2.<fname>(x), x the float32
    with bits `key` (MPFR is correctly rounded; the IEEE binary32 context
    subnormalizes)."""
    import gmpy2

    x = float(np.array(key, dtype=np.uint32).view(np.float32))
    with gmpy2.context(gmpy2.ieee(32)):
        r = getattr(gmpy2, fname)(gmpy2.mpfr(x))
    return int(np.float32(float(r)).view(np.uint32))


def scan(name, progress=True):
    """Run NAME's fast path on every key in its ranges and rewrite its exception
    table with the MPFR values of the keys that fail the rounding test."""
    import importlib
    import re
    import time

    approx_name, ranges, fname = SCANS[name]
    module = importlib.import_module(f"softrep.algorithms.math.{name}")
    run = _scanner(getattr(module, approx_name))
    chunk = 1 << 24
    flags = np.empty(chunk, dtype=np.uint8)
    keys = []
    start = time.time()
    for lo, hi in ranges:
        for base in range(lo, hi, chunk):
            n = min(chunk, hi - base)
            run(base, flags[:n])
            keys += [base + int(i) for i in np.flatnonzero(flags[:n])]
            if progress:
                print(f"\r{name}: {base + n:#010x} {len(keys)} exceptions {time.time() - start:.0f}s",
                      end="", flush=True)
    if progress:
        print()
    table = sorted((k, mpfr_f32_bits(fname, k)) for k in keys)
    path = module.__file__
    with open(path) as f:
        src = f.read()
    body = "".join(f"    (0x{k:08x}, 0x{v:08x}),\n" for k, v in table)
    src, count = re.subn(rf"({name.upper()}_EXCEPTIONS = \(\n).*?(\)\n# END GENERATED EXCEPTIONS)",
                         lambda m: m.group(1) + body + m.group(2), src, flags=re.S)
    assert count == 1, f"no generated exception block in {path}"
    with open(path, "w") as f:
        f.write(src)
    print(f"{name}: {len(table)} exceptions, {time.time() - start:.0f}s")
    return table


if __name__ == "__main__":
    import sys

    if sys.argv[1] == "scan":
        for fn_name in sys.argv[2:]:
            scan(fn_name)
