"""tan(x) for float32, correctly rounded (scheme: softrep/algorithms/math/exception_tables.py).

tan is odd: computed on a = |x| and the sign applied after (tan(+-0) = +-0).
tan(+-inf) and tan(NaN) are NaN.  No float32 is close enough to a pole for
an overflow: |t| >= 2^-29.8 after reduction, so |tan| < 2^30.

Fast path: a * 2/pi = 4n + q + t (softrep/algorithms/math/trig_reduction.py), tan(a) =
sin(pi t/2) / cos(pi t/2) for even q, -cos(pi t/2) / sin(pi t/2) for odd q;
relative error < 2^-49.1 (argued in _trig).
For |x| < 2^20 a Cody-Waite reduction is tried first (`tan_fast`, branch-free,
for the CPU's vector loop), with the same kernels and the same bound; where
its rounding test fails, and for larger |x|, the exact reduction and the
table decide.
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import bitcast, div_rn, jitable, negate
from .core import abs32, neg32, signbit32
from .exception_tables import exception_arrays, finish
from .trig_reduction import cos_halfpi, decide_quadrant, quadrant_small, reduce_quadrant, sin_halfpi
from .trig64 import TAN, trig_f64, trig_fast64_cody_waite

NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.algorithms.math.exception_tables scan tan): (bits of |x|, bits of tan|x|)
TAN_EXCEPTIONS = (
    (0x39b89ba2, 0x39b89ba2),
    (0x3a5e7737, 0x3a5e773a),
    (0x3d7f15c0, 0x3d7f6a4e),
    (0x3e19205e, 0x3e1a4733),
    (0x3ea2fef4, 0x3ea8bc2f),
    (0x4017205b, 0xbf7d5fbd),
    (0x408174dd, 0x3fa29b31),
    (0x40e67f59, 0x3fa80c88),
    (0x410b96a9, 0xbf57d7c4),
    (0x41de6e08, 0xbf023c2c),
    (0x43b055d2, 0x3f8705f6),
    (0x43bf198b, 0xbfec8514),
    (0x451e0885, 0xbef714d6),
    (0x453c5846, 0x3f64fa0e),
    (0x457b890f, 0x3e40a998),
    (0x48632aa3, 0xbf4f824b),
    (0x48652066, 0xc001908a),
    (0x4872b9fa, 0xc12f32dd),
    (0x490b32df, 0xbe97e86c),
    (0x49ced458, 0x404682c8),
    (0x4c0a82a3, 0xbffd2655),
    (0x4cbf0722, 0x3eb8116c),
    (0x4d0deed5, 0xbfd35758),
    (0x4dfecc4d, 0x3e7b9176),
    (0x4ece8446, 0xbfbd4d2f),
    (0x4f9f4275, 0x408f769b),
    (0x4ff70099, 0xc0c5dfec),
    (0x505b24ec, 0xbf8fd6df),
    (0x536b7a05, 0xbcfde1da),
    (0x53ebc27a, 0x3e6aeb2b),
    (0x5586a33a, 0xbff3e188),
    (0x5668f95e, 0x3fa62e82),
    (0x56947c41, 0x3e62ee0f),
    (0x56b773f2, 0xc14a83ce),
    (0x575852f8, 0xbfc0e1da),
    (0x57ddad01, 0x3e9f5671),
    (0x594f900c, 0xbdb9d37f),
    (0x59fdb9c4, 0xbf7c22ee),
    (0x5a848ab9, 0xc0ea3967),
    (0x5be68bcd, 0xbff16157),
    (0x5c136919, 0x40aa6cf4),
    (0x5d5873ae, 0x3ea6bfed),
    (0x5d608c2d, 0x3e68f763),
    (0x5db845eb, 0xc156b52c),
    (0x5dc574a6, 0x3f2e6c11),
    (0x5de62a6d, 0x3ee9c638),
    (0x5ef23c3f, 0x3ffd27c1),
    (0x5ffd33a4, 0x3fd06c8c),
    (0x601ff374, 0x3dcc72d0),
    (0x611bc894, 0xc16605b6),
    (0x613d28d9, 0x3ec05657),
    (0x6187688a, 0x3db012f5),
    (0x61f0c8e2, 0xbcc32ad4),
    (0x61fe289f, 0xbcb3073d),
    (0x624684ef, 0x3fb4f1df),
    (0x648ddbbb, 0x3dce8e3c),
    (0x64e8e6f3, 0x3fad828b),
    (0x6694993e, 0xbff43895),
    (0x670d6012, 0xc05d70d7),
    (0x67a2943d, 0xbfcd73cb),
    (0x68058f5d, 0x3e9076c9),
    (0x6a70270c, 0xc18c93aa),
    (0x75bb16de, 0x3e1a706c),
    (0x75cf0823, 0x40b654e6),
    (0x7602e9da, 0xbf942454),
    (0x764f3941, 0x3f425e14),
    (0x76eb0bdc, 0x4019eb75),
    (0x7714b423, 0x3fe83698),
    (0x77b68a9f, 0x3f1716e5),
    (0x77cda26b, 0x3f882b34),
    (0x787693c5, 0x3ff17dc2),
    (0x79c42c65, 0x3fa2e336),
    (0x7a98d2c2, 0x3f4aef73),
    (0x7b97b9ec, 0x3e2e5b04),
    (0x7c924a11, 0x3ee5f778),
    (0x7dae7426, 0x3f4ac6db),
    (0x7e4f5c9c, 0x400411b4),
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(TAN_EXCEPTIONS)

@jitable
def tan_of_quadrant(q, t):
    """tan(a) from a * 2/pi = 4n + q + t: sin(pi t/2) / cos(pi t/2) for even q,
    -cos(pi t/2) / sin(pi t/2) for odd q.  Branch-free (both polynomials are
    evaluated and the operands selected: the same value as a branch)."""
    inline_into_callers()
    s = sin_halfpi(t)
    c = cos_halfpi(t)
    odd = q & 1 != 0
    v = div_rn(c if odd else s, s if odd else c)
    return negate(v) if odd else v


@jitable
def tan_approx(a):
    """tan(a) in double for a finite float32 a >= 0, relative error < 2^-49.1."""
    q, t = reduce_quadrant(a)
    return tan_of_quadrant(q, t)


@jitable
def tan_fast(x):
    """(tan(x) correctly rounded, True), or (anything, False): for |x| < 2^20
    the rounding test on tan_of_quadrant after the Cody-Waite reduction
    (trig_reduction.reduce_quadrant_small: the same q, and t within the
    2^-51.4 the bound takes, so the approximation is again within 2^-49.1
    and the window decides correctly); |x| >= 2^20, NaN and
    infinities are left undecided (one flag; the next step gives NaN for
    the last two).  Branch-free: vectorises in the CPU's
    decided-first loop."""
    inline_into_callers()
    q, t, small = quadrant_small(x)
    return decide_quadrant(x, tan_of_quadrant(q, t), small, True)

@jitable
def tan_f32(x):
    r, ok = tan_fast(x)
    if ok:
        return r
    a = abs32(x)
    if x != x or a == INF32:
        return NAN32
    r = finish(tan_approx(a), _KEYS, _VALUES, bitcast(a))
    if signbit32(x):
        return neg32(r)
    return r


@jitable
def tan_f64(x):
    """tan for float64, correctly rounded (softrep/algorithms/math/trig64.py)."""
    return trig_f64(x, TAN)


@jitable
def tan_fast64(x):
    """(the correctly rounded tan(x), True) where the float64 fast path decides, else (anything, False):
    branch-free, for |x| < 2^20 (trig64.trig_fast64_cody_waite); `tan_f64` takes the rest."""
    inline_into_callers()
    return trig_fast64_cody_waite(x, TAN)

