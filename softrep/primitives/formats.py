"""Floating-point formats and the one rounding mechanism used for all of them.

A format is (precision p, emin, emax, subnormals) plus two details some fp8
formats need: the largest significand at emax (`max_significand`, 2**p - 1 for
IEEE-like formats; 0b1110 for float8_e4m3fn, whose all-ones code is NaN) and
whether it has infinities.

The mechanism (`round_significand`) rounds an exact value given as

    (-1)**neg * (m + s) * 2**exp,   m a uint64 with bit 63 set (or m == 0),
                                     s = 0 if not sticky, else some s in (0, 1)

to the format in one of seven modes, with nothing but integer and bit
operations:

1. The quantum of the result is 2**q with q = lead - p + 1, where lead = exp + 63
   is the exponent of the leading bit; below the normal range the quantum is
   fixed at 2**(emin - p + 1) (subnormals) or 2**emin (no subnormals: the only
   values below 2**emin are then 0 and 2**emin, and the same rule rounds to them).
2. k = the bits of m above the quantum (the value truncated toward zero); the
   dropped bits, compared with half a quantum (sticky breaks a tie upward),
   decide nearest and nearest_away; "inexact" decides the directed modes and
   odd (set the last bit); the top 32 dropped bits, compared with a random
   32-bit word, decide stochastic rounding: it rounds away from zero with
   probability floor(2**32 * distance / quantum) / 2**32.
3. A carry to 2**p renormalises; a result above the largest finite number
   overflows: to +-max for saturate, zero, odd, and the directed mode that
   points toward zero, otherwise to +-inf, which is NaN in a format without
   infinities (float8_e4m3fn).

The result (kind, k, q) is then written as a float32 or float64 bit pattern
(`from_parts`).  Because the target grid is a subset of the output type's
grid (checked by `Format.fits`), that last step is exact.

Callers supply the exact value: a float (`round_value`, sticky = 0), or the
float64 round-to-nearest result of an operation plus the sign of its error
(`round_with_residual`), which is what the emulated arithmetic uses.
"""

import numpy as np
import torch
from numba.core import types as _types

from .rounding import (add_rd, add_rn, add_ru, bitcast, by_type, div_rd, div_rn, div_ru, fma_rd, fma_rn,
                       fma_ru, jitable, mul_rd, mul_rn, mul_ru, sqrt_rd, sqrt_rn, sqrt_ru, sub_rd, sub_rn,
                       sub_ru)

# ---------------------------------------------------------------------------- modes

from .modes import DOWN, NEAREST, NEAREST_AWAY, ODD, STOCHASTIC, UP, ZERO  # noqa: E402

ROUNDINGS = {
    "nearest": NEAREST,
    "nearest_away": NEAREST_AWAY,
    "down": DOWN,
    "up": UP,
    "zero": ZERO,
    "odd": ODD,
    "stochastic": STOCHASTIC,
}
DETERMINISTIC = tuple(r for r in ROUNDINGS if r != "stochastic")

# result kinds of round_significand
FINITE, INFINITE, NOT_A_NUMBER = 0, 1, 2
# classes of split_float
CLASS_ZERO, CLASS_FINITE, CLASS_INF, CLASS_NAN = 0, 1, 2, 3

# ---------------------------------------------------------------------------- Format


class Format:
    """A binary floating-point format: `precision` significand bits (the
    leading bit included), exponents emin..emax of normal numbers (emin
    defaults to 1 - emax), with or without subnormals."""

    def __init__(self, precision, emax, emin=None, subnormals=True, *, max_significand=None,
                 has_infinity=True, name=None):
        for arg, value in (("precision", precision), ("emax", emax), ("emin", emin)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"softrep.Format: argument '{arg}' must be an int, got {type(value).__name__}")
        if not 1 <= precision <= 53:
            raise ValueError(f"softrep.Format: argument 'precision' must be in [1, 53], got {precision}")
        if emin is None:
            emin = 1 - emax
        if emin > emax:
            raise ValueError(f"softrep.Format: argument 'emin' ({emin}) is larger than 'emax' ({emax})")
        if max_significand is None:
            max_significand = (1 << precision) - 1
        if not (1 << (precision - 1)) <= max_significand < (1 << precision):
            raise ValueError(f"softrep.Format: argument 'max_significand' must be a {precision}-bit integer "
                             f"with its top bit set, got {max_significand}")
        self.precision = precision
        self.emax = emax
        self.emin = emin
        self.subnormals = bool(subnormals)
        self.max_significand = max_significand
        self.has_infinity = bool(has_infinity)
        self.name = name

    def _key(self):
        return (self.precision, self.emax, self.emin, self.subnormals, self.max_significand, self.has_infinity)

    def __eq__(self, other):
        return isinstance(other, Format) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.name:
            return f"softrep.Format({self.name!r})"
        return (f"softrep.Format(precision={self.precision}, emax={self.emax}, emin={self.emin}, "
                f"subnormals={self.subnormals})")

    @property
    def max_finite(self):
        """The largest finite value, as a Python float."""
        return float(self.max_significand) * 2.0 ** (self.emax - self.precision + 1)

    def lowest_quantum(self, subnormals=None):
        """Exponent of the smallest nonzero magnitude."""
        sub = self.subnormals if subnormals is None else subnormals
        return self.emin - self.precision + 1 if sub else self.emin

    def fits(self, dtype, subnormals=None):
        """Whether every value of this format is a value of torch `dtype`."""
        p, emax, qmin = _DTYPE_LIMITS[dtype]
        return self.precision <= p and self.emax <= emax and self.lowest_quantum(subnormals) >= qmin

    def spec(self, rounding_code, subnormals=True, saturate=False, native=False):
        """The integer tuple the kernels take."""
        return (self.precision, self.emin, self.emax, self.max_significand, int(self.has_infinity),
                int(self.subnormals and subnormals), int(bool(saturate)), rounding_code, int(native))


# (precision, emax, exponent of the smallest subnormal)
_DTYPE_LIMITS = {torch.float32: (24, 127, -149), torch.float64: (53, 1023, -1074)}

FORMATS = {
    "bfloat16": Format(8, 127, name="bfloat16"),
    "float16": Format(11, 15, name="float16"),
    "tf32": Format(11, 127, name="tf32"),
    # OCP 8-bit floats (OFP8, 2023): E4M3 has no infinities; S.1111.111 is NaN,
    # so the largest significand at emax = 8 is 1.110b: max = 448.
    "float8_e4m3fn": Format(4, 8, -6, max_significand=0b1110, has_infinity=False, name="float8_e4m3fn"),
    "float8_e5m2": Format(3, 15, name="float8_e5m2"),
    "float32": Format(24, 127, name="float32"),
    "float64": Format(53, 1023, name="float64"),
    # OCP MX v1.0 element formats (FP6 and FP4, no infinities and no NaN; ml_dtypes
    # names): E2M3 = 1.111b * 2**2 = 7.5, E3M2 = 1.11b * 2**4 = 28, E2M1 = 1.1b * 2**2 = 6.
    "float6_e2m3fn": Format(4, 2, 0, has_infinity=False, name="float6_e2m3fn"),
    "float6_e3m2fn": Format(3, 4, -2, has_infinity=False, name="float6_e3m2fn"),
    "float4_e2m1fn": Format(2, 2, 0, has_infinity=False, name="float4_e2m1fn"),
}
_TORCH_NAMES = {
    torch.bfloat16: "bfloat16",
    torch.float16: "float16",
    torch.float8_e4m3fn: "float8_e4m3fn",
    torch.float8_e5m2: "float8_e5m2",
    torch.float32: "float32",
    torch.float64: "float64",
}
TORCH_DTYPES = {name: dt for dt, name in _TORCH_NAMES.items()}


# ---------------------------------------------------------------------------- OCP Microscaling

# E8M0, the shared scale of the MX formats: 2**s for s in [-127, 127]; code 0xFF is NaN.
E8M0_MIN_EXPONENT, E8M0_MAX_EXPONENT = -127, 127


class MXFormat:
    """An OCP Microscaling (MX v1.0) format: blocks of `block_size` consecutive
    elements along one dimension share one E8M0 scale X = 2**s, and each element
    is a value of the `element` format times X.

    Conversion (OCP MX v1.0, section 6.3): s = floor(log2(amax)) - emax_elem,
    amax the largest magnitude of the block and emax_elem = element.emax (the
    exponent of the element format's largest normal binade); s is raised to
    -127 when it is smaller (and an all-zero block takes s = -127), and a block
    with s > 127, an infinity or a NaN has the NaN scale: all its values are
    NaN.  Every element V is then rounded to the element format scaled by X,
    with normal overflows clamped to +-(largest element) * X (always: the
    specification saturates).  Rounding V / X to the element format and
    multiplying by X is the same as rounding V to the element grid shifted by
    s, which is how it is computed: no division, one rounding."""

    def __init__(self, element, block_size=32, name=None):
        if not isinstance(element, Format):
            raise TypeError(f"softrep.MXFormat: argument 'element' must be a softrep.Format, "
                            f"got {type(element).__name__}")
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"softrep.MXFormat: argument 'block_size' must be a positive int, got {block_size!r}")
        self.element = element
        self.block_size = block_size
        self.name = name

    @property
    def emax_elem(self):
        return self.element.emax

    def _key(self):
        return (self.element, self.block_size)

    def __eq__(self, other):
        return isinstance(other, MXFormat) and self._key() == other._key()

    def __hash__(self):
        return hash(("mx",) + self._key())

    def __repr__(self):
        if self.name:
            return f"softrep.MXFormat({self.name!r})"
        return f"softrep.MXFormat(element={self.element!r}, block_size={self.block_size})"

    def fits(self, dtype, subnormals=True):
        """Whether every value of every block (element times any E8M0 scale up to
        the one a finite input of `dtype` can produce) is a value of `dtype`."""
        p, emax, qmin = _DTYPE_LIMITS[dtype]
        element = self.element
        largest_scale = min(E8M0_MAX_EXPONENT, emax - element.emax)
        return (element.precision <= p and element.emax + largest_scale <= emax
                and element.lowest_quantum(subnormals) + E8M0_MIN_EXPONENT >= qmin)


# The element of MXINT8 is an 8-bit two's complement integer k times 2**-6.  As a
# sign-magnitude grid that is the 7-bit format with emin = emax = 0: normals
# [1, 2) and subnormals below 1 share the quantum 2**-6, the largest value is
# 127/64.  The conversion clamps symmetrically to +-127/64 (the code -128, i.e.
# -2, is never produced), as microsoft/microxcaling does.
MXINT8_ELEMENT = Format(7, 0, 0, name="int8 (MX, 2**-6 units)")

MX_FORMATS = {
    "mxfp8_e4m3": MXFormat(FORMATS["float8_e4m3fn"], name="mxfp8_e4m3"),
    "mxfp8_e5m2": MXFormat(FORMATS["float8_e5m2"], name="mxfp8_e5m2"),
    "mxfp6_e2m3": MXFormat(FORMATS["float6_e2m3fn"], name="mxfp6_e2m3"),
    "mxfp6_e3m2": MXFormat(FORMATS["float6_e3m2fn"], name="mxfp6_e3m2"),
    "mxfp4_e2m1": MXFormat(FORMATS["float4_e2m1fn"], name="mxfp4_e2m1"),
    "mxint8": MXFormat(MXINT8_ELEMENT, name="mxint8"),
}


def resolve(fn, format, arg="format", mx=False):
    """A Format from a Format, a name in FORMATS, or a torch dtype; with mx=True
    also an MXFormat from an MXFormat or a name in MX_FORMATS."""
    if isinstance(format, Format):
        return format
    if isinstance(format, MXFormat) or (isinstance(format, str) and format in MX_FORMATS):
        if mx:
            return format if isinstance(format, MXFormat) else MX_FORMATS[format]
        raise ValueError(f"softrep.{fn}: argument '{arg}' is the block-scaled format {format!r}; MX formats "
                         "are accepted by round_to, quantize_mx and the input_format of mm and linear only")
    if isinstance(format, torch.dtype):
        if format in _TORCH_NAMES:
            return FORMATS[_TORCH_NAMES[format]]
        raise ValueError(f"softrep.{fn}: argument '{arg}' is the torch dtype {format}, which is not a "
                         f"supported format; use one of {', '.join(map(str, _TORCH_NAMES))}")
    if isinstance(format, str) and format in FORMATS:
        return FORMATS[format]
    names = list(FORMATS) + (list(MX_FORMATS) if mx else [])
    kinds = "softrep.Format, a softrep.MXFormat" if mx else "softrep.Format"
    raise ValueError(f"softrep.{fn}: argument '{arg}' must be a {kinds}, a torch dtype or one of "
                     f"{', '.join(map(repr, names))}; got {format!r}")


def rounding_code(fn, rounding):
    if rounding not in ROUNDINGS:
        raise ValueError(f"softrep.{fn}: argument 'rounding' must be one of "
                         f"{', '.join(map(repr, ROUNDINGS))}; got {rounding!r}")
    return ROUNDINGS[rounding]


# ---------------------------------------------------------------------------- integer helpers

U0 = np.uint64(0)
U1 = np.uint64(1)
U32 = np.uint64(32)
U63 = np.uint64(63)
ALL_ONES64 = np.uint64(0xFFFFFFFFFFFFFFFF)
TOP_BIT64 = np.uint64(0x8000000000000000)


@jitable
def bit_length64(u):
    """Number of significant bits of the uint64 u (0 for 0)."""
    n = 0
    if (u >> np.uint64(32)) != U0:
        u = u >> np.uint64(32)
        n += 32
    if (u >> np.uint64(16)) != U0:
        u = u >> np.uint64(16)
        n += 16
    if (u >> np.uint64(8)) != U0:
        u = u >> np.uint64(8)
        n += 8
    if (u >> np.uint64(4)) != U0:
        u = u >> np.uint64(4)
        n += 4
    if (u >> np.uint64(2)) != U0:
        u = u >> np.uint64(2)
        n += 2
    if (u >> np.uint64(1)) != U0:
        u = u >> np.uint64(1)
        n += 1
    if u != U0:
        n += 1
    return n


@jitable
def normalize64(m, exp):
    """(m, exp) with the same value m * 2**exp and bit 63 of m set (m != 0)."""
    shift = 64 - bit_length64(m)
    return m << np.uint64(shift), exp - shift


# ---------------------------------------------------------------------------- the mechanism


@jitable
def round_significand(neg, m, exp, sticky, spec, word):
    """Round (-1)**neg * (m + s) * 2**exp to the format `spec` (see module doc).

    m: uint64 with bit 63 set, or 0 (then sticky must be set: a nonzero value
    below every quantum of the format).  `word`: a uniform 32-bit random word
    (uint64), used by stochastic rounding only.  Returns (kind, k, q): the
    magnitude k * 2**q (kind FINITE), or an infinity or a NaN.
    """
    prec, emin, emax, max_sig, has_inf, subnormals, saturate, mode, native = spec
    q_low = emin - prec + 1 if subnormals != 0 else emin
    if m == U0:
        q = q_low
        k = U0
        vs_half = -1
        inexact = sticky
        frac32 = U0
    else:
        lead = exp + 63
        q = lead - prec + 1 if lead >= emin else q_low
        shift = q - exp  # >= 64 - prec >= 11: the sticky part is always below the round bit
        if shift <= 64:
            if shift == 64:
                k = U0
                dropped = m
            else:
                k = m >> np.uint64(shift)
                dropped = m & ((U1 << np.uint64(shift)) - U1)
            half = U1 << np.uint64(shift - 1)
            if dropped > half:
                vs_half = 1
            elif dropped == half:
                vs_half = 1 if sticky else 0
            else:
                vs_half = -1
            inexact = dropped != U0 or sticky
            if shift >= 32:
                frac32 = dropped >> np.uint64(shift - 32)
            else:
                frac32 = dropped << np.uint64(32 - shift)
        else:
            # the value is below half a quantum: all of m is dropped
            k = U0
            vs_half = -1
            inexact = True
            frac32 = m >> np.uint64(shift - 32) if shift < 96 else U0
    up = False
    if mode == NEAREST:
        up = vs_half > 0 or (vs_half == 0 and (k & U1) == U1)
    elif mode == NEAREST_AWAY:
        up = vs_half >= 0
    elif mode == DOWN:
        up = inexact and neg
    elif mode == UP:
        up = inexact and not neg
    elif mode == ODD:
        if inexact:
            k = k | U1
    elif mode == STOCHASTIC:
        up = word < frac32
    if up:
        k = k + U1
        if k == (U1 << np.uint64(prec)):
            k = k >> U1
            q += 1
    q_top = emax - prec + 1
    max_k = np.uint64(max_sig)
    # compare leading exponents (not quanta: the flushed grid's quantum 2**emin
    # may exceed emax - p + 1 in a format of fewer than p binades)
    lead = q + bit_length64(k) - 1
    if k != U0 and (lead > emax or (q == q_top and k > max_k)):
        toward_zero = mode == ZERO or mode == ODD or (mode == DOWN and not neg) or (mode == UP and neg)
        if saturate != 0 or toward_zero:
            return FINITE, max_k, q_top
        if has_inf != 0:
            return INFINITE, U0, 0
        return NOT_A_NUMBER, U0, 0
    return FINITE, k, q


@jitable
def _split32(x):
    """(class, neg, m, exp) of a float32: |x| = m * 2**exp, m normalised."""
    u = np.uint64(bitcast(x))
    neg = (u >> np.uint64(31)) != U0
    field = np.int64((u >> np.uint64(23)) & np.uint64(0xFF))
    frac = u & np.uint64(0x7FFFFF)
    if field == 255:
        return (CLASS_NAN if frac != U0 else CLASS_INF), neg, U0, 0
    if field == 0:
        if frac == U0:
            return CLASS_ZERO, neg, U0, 0
        m, exp = normalize64(frac, -149)
        return CLASS_FINITE, neg, m, exp
    m, exp = normalize64(frac | np.uint64(0x800000), field - 150)
    return CLASS_FINITE, neg, m, exp


@jitable
def _split64(x):
    """(class, neg, m, exp) of a float64: |x| = m * 2**exp, m normalised."""
    u = bitcast(x)
    neg = (u >> U63) != U0
    field = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
    frac = u & np.uint64(0xFFFFFFFFFFFFF)
    if field == 2047:
        return (CLASS_NAN if frac != U0 else CLASS_INF), neg, U0, 0
    if field == 0:
        if frac == U0:
            return CLASS_ZERO, neg, U0, 0
        m, exp = normalize64(frac, -1074)
        return CLASS_FINITE, neg, m, exp
    m, exp = normalize64(frac | np.uint64(0x10000000000000), field - 1075)
    return CLASS_FINITE, neg, m, exp


def split_float(x):
    """(class, neg, m, exp) of a float32 or float64 scalar."""
    if isinstance(x, np.float32):
        return _split32(x)
    return _split64(np.float64(x))


by_type(split_float, {_types.float32: _split32, _types.float64: _split64})


@jitable
def _compose_bits(neg, kind, k, q, mant_bits, emin, exp_field_max, sign_shift):
    """IEEE bit pattern (as uint64) of (-1)**neg * k * 2**q, +-inf or the canonical NaN."""
    mb = np.uint64(mant_bits)
    if kind == NOT_A_NUMBER:
        return (np.uint64(exp_field_max) << mb) | (U1 << np.uint64(mant_bits - 1))
    if kind == INFINITE:
        mag = np.uint64(exp_field_max) << mb
    elif k == U0:
        mag = U0
    else:
        nb = bit_length64(k)
        lead = q + nb - 1
        if lead >= emin:
            frac = (k << np.uint64(mant_bits + 1 - nb)) & ((U1 << mb) - U1)
            mag = (np.uint64(lead - emin + 1) << mb) | frac
        else:
            mag = k << np.uint64(q - (emin - mant_bits))
    if neg:
        mag = mag | (U1 << np.uint64(sign_shift))
    return mag


@jitable
def _from_parts32(like, neg, kind, k, q):
    return bitcast(np.uint32(_compose_bits(neg, kind, k, q, 23, -126, 255, 31)))


@jitable
def _from_parts64(like, neg, kind, k, q):
    return bitcast(_compose_bits(neg, kind, k, q, 52, -1022, 2047, 63))


def from_parts(like, neg, kind, k, q):
    """The float of the type of `like` with value (kind, k, q) and sign neg."""
    if isinstance(like, np.float32):
        return _from_parts32(like, neg, kind, k, q)
    return _from_parts64(like, neg, kind, k, q)


by_type(from_parts, {_types.float32: _from_parts32, _types.float64: _from_parts64})


@jitable
def _special(neg, cls, spec):
    """(kind, k, q) for an infinite input (cls == CLASS_INF) or a NaN."""
    prec, emin, emax, max_sig, has_inf, subnormals, saturate, mode, native = spec
    if cls == CLASS_NAN:
        return NOT_A_NUMBER, U0, 0
    if saturate != 0:
        return FINITE, np.uint64(max_sig), emax - prec + 1
    if has_inf != 0:
        return INFINITE, U0, 0
    return NOT_A_NUMBER, U0, 0


@jitable
def round_value(x, spec, word):
    """x (float32 or float64) rounded to the format `spec`, in the type of x."""
    cls, neg, m, exp = split_float(x)
    if cls == CLASS_ZERO:
        return x
    if cls == CLASS_FINITE:
        kind, k, q = round_significand(neg, m, exp, False, spec, word)
    else:
        kind, k, q = _special(neg, cls, spec)
    return from_parts(x, neg, kind, k, q)


@jitable
def round_with_residual(like, rn, rd, ru, spec, word):
    """Round the exact result of an operation to `spec`, in the type of `like`.

    rn, rd, ru: the operation in float64 rounded to nearest, down and up.  They
    give rn and the sign d of (exact - rn): 0 if rd == ru, otherwise +1 when rn
    is the lower neighbour.  The exact value then lies within half a float64
    ulp of rn, on the side d, which no point of the target grid and no midpoint
    between two of its points separates from rn when the format has at most 51
    bits and its smallest quantum is at least 2**-1072 (`lowp.operation_spec`):
    rounding (rn, d) with the sticky bit is rounding the exact value once.
    """
    prec, emin, emax, max_sig, has_inf, subnormals, saturate, mode, native = spec
    if rn != rn:
        return from_parts(like, False, NOT_A_NUMBER, U0, 0)
    if native != 0:
        # the target is float64 itself: the IEEE results are already at hand
        if mode == DOWN:
            return rd
        if mode == UP:
            return ru
        if mode == ZERO and rd != ru:
            return rd if rn > 0 else ru
        return rn
    d = 0
    if rd != ru:
        d = 1 if rn == rd else -1
    elif rn == 0 and mode == DOWN:
        rn = rd  # an exact zero sum is -0 when rounding down (IEEE 754 6.3)
    cls, neg, m, exp = split_float(rn)
    if d == 0:
        if cls == CLASS_ZERO:
            kind, k, q = FINITE, U0, 0
        elif cls == CLASS_FINITE:
            kind, k, q = round_significand(neg, m, exp, False, spec, word)
        else:
            kind, k, q = _special(neg, cls, spec)
        return from_parts(like, neg, kind, k, q)
    if cls == CLASS_ZERO:
        # float64 underflow: 0 < |exact| < 2**-1074, below every quantum of the format
        neg = d < 0
        m = U0
        exp = 0
    elif cls == CLASS_INF:
        # float64 overflow: |exact| lies in [2**1024 - 2**970, 2**1024) or beyond,
        # above the largest value of any format with at most 51 bits
        m = ALL_ONES64
        exp = 1024 - 64
    elif (d > 0) == neg:
        # |exact| < |rn|: step m down one unit and mark the rest as sticky (the
        # point and its neighbour below lie strictly between the same grid points)
        m = m - U1
        if m < TOP_BIT64:
            m = (m << U1) | U1
            exp -= 1
    kind, k, q = round_significand(neg, m, exp, True, spec, word)
    return from_parts(like, neg, kind, k, q)


# ---------------------------------------------------------------------------- emulated arithmetic

OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_SQRT, OP_FMA = range(6)
OPS = {"add": OP_ADD, "sub": OP_SUB, "mul": OP_MUL, "div": OP_DIV, "sqrt": OP_SQRT, "fma": OP_FMA}


@jitable
def emulated_op(op, a, b, c, spec, word):
    """op(a, b[, c]) rounded once to the format `spec`, in the type of a.

    The operation is done in float64 three times (to nearest, down, up); for
    float32 operands the widening is exact, and `round_with_residual` turns the
    three results into one rounding of the exact value.  Unused operands are
    ignored (sqrt uses a, add..div use a and b).
    """
    a64 = np.float64(a)
    b64 = np.float64(b)
    c64 = np.float64(c)
    if op == OP_ADD:
        rn, rd, ru = add_rn(a64, b64), add_rd(a64, b64), add_ru(a64, b64)
    elif op == OP_SUB:
        rn, rd, ru = sub_rn(a64, b64), sub_rd(a64, b64), sub_ru(a64, b64)
    elif op == OP_MUL:
        rn, rd, ru = mul_rn(a64, b64), mul_rd(a64, b64), mul_ru(a64, b64)
    elif op == OP_DIV:
        rn, rd, ru = div_rn(a64, b64), div_rd(a64, b64), div_ru(a64, b64)
    elif op == OP_SQRT:
        rn, rd, ru = sqrt_rn(a64), sqrt_rd(a64), sqrt_ru(a64)
    else:
        rn, rd, ru = fma_rn(a64, b64, c64), fma_rd(a64, b64, c64), fma_ru(a64, b64, c64)
    return round_with_residual(a, rn, rd, ru, spec, word)
