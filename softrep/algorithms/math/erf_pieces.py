"""Double-precision pieces shared by erf and erfc (float32 arguments).

* `erf_small(a)`, 0 <= a <= 1/2: erf a = a P(a^2), P a Chebyshev fit in
  v = a^2 (relative error 2^-55.6).  a^2 is exact (a has 24 bits), Horner on
  P = 2/sqrt(pi) (1 - v/3 + ...) with terms shrinking >= 3x adds < 1.2 * 2^-53,
  the product 2^-53: relative error < 2.3 * 2^-53 = 2^-51.8.
* `erfc_mid(a)`, 1/2 < a <= 10.25: erfc a = e^(-a^2) R(a), R(a) = e^(a^2) erfc(a)
  (smooth, about 1/(a sqrt(pi))).  R is a degree-11 Chebyshev fit on each of
  39 pieces of width 1/4 in d = a - mid_j (relative error 2^-53.2, coefficients
  as rounded); d is exact (a has its last bit at >= 2^-24, mid_j = 5/8 + j/4).
  Horner in d, |d| <= 1/8, with |R'/R| < 1.3: < 1.4 * 2^-53.  e^(-a^2):
  a^2 exact, `exp_core` of _core (2^-50.5).  The product rounds once.
  Total < 2^-50.5 + (0.87 + 1.4 + 1) 2^-53 < 2^-49.9.
* `erf_mid(a)`, 1/2 < a <= 4: erf a itself, a degree-20 Chebyshev fit on
  each of two pieces, [1/2, 2] and [2, 4], in d = a - centre (1.25, 3); d is
  exact.  With the coefficients as rounded the fits miss erf by < 2^-52.4
  absolutely (measured: 2^-53.6 and 2^-52.53).  Horner with fma in double:
  each step rounds its value once, so the result is off by at most
  2^-53 sum_k |d|^k |p_k(d)| (p_k the polynomial of the steps from k up;
  first order in 2^-53, the rest below 2^-100), and that sum is < 1.75 on
  the first piece and < 1.05 on the second (measured on a grid of d, each
  term's maximum taken separately: 1.72 and 1.02).  Absolute error
  < 2^-52.4 + 1.75 * 2^-53 < 2^-51.2, relative (erf a >= erf(1/2) > 0.52)
  < 2^-50.2.  No table and no exponential: erf's fast path without the 12
  gathers per element that erfc_mid's 39 pieces cost.
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import jitable, mul_rn, negate, sub_rn
from .core import coefficient_tuple, exp_core, horner, horner_from
from .exception_tables import coefficient_columns, horner_columns
from .coefficients import ERF_SMALL, ERFCX_PIECES

F64 = np.float64
ZERO = F64(0.0)
ERF_COEFFS = coefficient_tuple(ERF_SMALL)
ERFCX = coefficient_columns(ERFCX_PIECES)
PIECE_START = F64(0.5)
PIECES_PER_UNIT = F64(4.0)
MID_FIRST = F64(0.625)
PIECE_WIDTH = F64(0.25)
HALF_F32 = np.float32(0.5)
PIECE_LAST = np.int32(38)


# erf(c + d) on [1/2, 2] (c = 1.25) and [2, 4] (c = 3): mpmath.chebyfit(lambda d:
# mpmath.erf(c + d), [-h, h], 21) at 160 bits (h = 0.75, 1), each coefficient
# rounded to nearest double, lowest degree first.  Evaluated as the top nine
# coefficients, then the low twelve (`horner_from`): two loops that LLVM
# unrolls.
_ERF_MID_LOW = [float.fromhex(h) for h in (
    "0x1.d8865d98abe01p-1", "0x1.e4652fadcb6b2p-3", "-0x1.2ebf3dcc9f22dp-2", "0x1.571d01c5c56afp-3",
    "-0x1.93a9a7bb82812p-8", "-0x1.8281ce0b345d4p-5", "0x1.5d0003af937a5p-6", "0x1.db43c971a5e16p-9",
    "-0x1.75672cf55decap-8", "0x1.cc22557e473d9p-11", "0x1.a0075276a5698p-11", "-0x1.53b179b51676bp-12",
    "-0x1.ba67231ddbec4p-15", "0x1.d45240507a6bcp-15", "-0x1.9466206b748a1p-19", "-0x1.ae29bdcc7765bp-18",
    "0x1.6a1b54eddd2ccp-20", "0x1.11118ef126866p-21", "-0x1.ba30428b5438ep-23", "-0x1.937c53cb6c16bp-26",
    "0x1.32f7d0ac8bdb9p-26")]
_ERF_MID_HIGH = [float.fromhex(h) for h in (
    "0x1.fffd1ac4135f9p-1", "0x1.2408e9ba2081fp-13", "-0x1.b60d5e974d7adp-12", "0x1.9db74b1e742edp-11",
    "-0x1.11c85b1e82557p-10", "0x1.0a7b553836b51p-10", "-0x1.82f235b298242p-11", "0x1.998b4a07db6ffp-12",
    "-0x1.1aa5e1ddf4e94p-13", "0x1.d2a1b026de650p-17", "0x1.05ff29490eb3ap-16", "-0x1.6a27587344367p-17",
    "0x1.96c7f83d1bee4p-19", "0x1.0649eda6da84ap-23", "-0x1.e5fe5e5c9bbddp-22", "0x1.677dfa17af48ep-23",
    "-0x1.3e21e7312dc98p-27", "-0x1.1921546feed68p-26", "0x1.95ffb86679145p-28", "0x1.326f28ff4a0acp-32",
    "-0x1.db502e6c187fbp-32")]
ERF_MID_COEFFS = (_ERF_MID_LOW, _ERF_MID_HIGH)  # for the tests: each piece's 21 coefficients
ERF_LOW_TOP, ERF_LOW_BOTTOM = coefficient_tuple(_ERF_MID_LOW[12:]), coefficient_tuple(_ERF_MID_LOW[:12])
ERF_HIGH_TOP, ERF_HIGH_BOTTOM = coefficient_tuple(_ERF_MID_HIGH[12:]), coefficient_tuple(_ERF_MID_HIGH[:12])
ERF_LOW_CENTRE = F64(1.25)
ERF_HIGH_CENTRE = F64(3.0)
ERF_SPLIT = np.float32(2.0)


@jitable
def erf_small(a):
    """erf(a) for a float32 0 <= a <= 1/2, relative error < 2^-51.8."""
    ad = F64(a)
    return mul_rn(ad, horner(ERF_COEFFS, mul_rn(ad, ad)))


@jitable
def erfc_mid(a):
    """erfc(a) for a float32 1/2 < a <= 10.25, relative error < 2^-49.9."""
    inline_into_callers()
    ad = F64(a)
    # The piece index (a - 1/2) * 4 is exact and lies in [0, 39]: its integer
    # part fits int32, and, being nonnegative, indexes the columns as an
    # unsigned integer (a signed index gets negative-index wraparound code).
    j = np.int32(mul_rn(sub_rn(ad, PIECE_START), PIECES_PER_UNIT))
    j = PIECE_LAST if j > PIECE_LAST else j
    d = sub_rn(ad, mul_rn(F64(j), PIECE_WIDTH))
    d = sub_rn(d, MID_FIRST)
    r = horner_columns(ERFCX, np.uint32(j), d)
    e = exp_core(negate(mul_rn(ad, ad)), ZERO)
    return mul_rn(e, r)


@jitable
def erf_mid(a):
    """erf(a) for a float32 1/2 < a <= 4, absolute error < 2^-51.2, relative
    < 2^-50.2.  Branch-free: both pieces are evaluated and one is selected
    (an a outside (1/2, 4] gives a value that is discarded)."""
    inline_into_callers()
    ad = F64(a)
    d = sub_rn(ad, ERF_LOW_CENTRE)
    low = horner_from(horner(ERF_LOW_TOP, d), ERF_LOW_BOTTOM, d)
    d = sub_rn(ad, ERF_HIGH_CENTRE)
    high = horner_from(horner(ERF_HIGH_TOP, d), ERF_HIGH_BOTTOM, d)
    return high if a > ERF_SPLIT else low
