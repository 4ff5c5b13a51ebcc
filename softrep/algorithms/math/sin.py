"""sin(x) for float32, correctly rounded (scheme: softrep/algorithms/math/exception_tables.py).

sin is odd: computed on a = |x| and the sign applied after (sin(+-0) = +-0).
sin(+-inf) and sin(NaN) are NaN.

Fast path: a * 2/pi = 4n + q + t (softrep/algorithms/math/trig_reduction.py, exact reduction for
every float32), sin(a) = sin(pi t/2), cos(pi t/2), -sin(pi t/2), -cos(pi t/2)
for q = 0, 1, 2, 3; relative error < 2^-50.1 (argued in _trig).
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
For |x| < 2^20 a Cody-Waite reduction is tried first (`sin_fast`), with the
same kernels and the same bound; where its rounding test fails, and for
larger |x|, the exact reduction and the table decide (`sin_window`).
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import jitable, negate
from .core import abs32, neg32, signbit32
from .exception_tables import decide, exception_arrays, finish_odd
from .trig_reduction import cos_halfpi, decide_quadrant, quadrant_small, reduce_quadrant, sin_halfpi
from .trig64 import SIN, trig_f64, trig_fast64_cody_waite

NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.algorithms.math.exception_tables scan sin): (bits of |x|, bits of sin|x|)
SIN_EXCEPTIONS = (
    (0x39e89768, 0x39e89768),
    (0x3a1285ff, 0x3a1285ff),
    (0x3a852018, 0x3a852017),
    (0x3d0650ea, 0x3d064ac0),
    (0x3dcf5597, 0x3dcefaf9),
    (0x3de26fd0, 0x3de1f9c7),
    (0x3ef32001, 0x3eea1732),
    (0x3ef3830f, 0x3eea6f45),
    (0x3fa0fa4e, 0x3f738cb1),
    (0x401f2100, 0x3f1bfc6f),
    (0x40e70813, 0x3f4e3679),
    (0x42d44528, 0xbf20c9a7),
    (0x4371ade3, 0x3e62da56),
    (0x4384f128, 0x3f69cec8),
    (0x439774af, 0x3f77e872),
    (0x45a8abb3, 0x3e51ade2),
    (0x45e38b6e, 0xbf349879),
    (0x4605b1c7, 0xbf7343e3),
    (0x46199998, 0xbeb1fa5d),
    (0x47ae93a5, 0xbf7704a2),
    (0x47b6f08f, 0x3f7ea48f),
    (0x4967cb9b, 0x3ec9df85),
    (0x497d25c7, 0xbeb31ec5),
    (0x4a987933, 0xbf70f319),
    (0x4aa5a796, 0x3f7ff108),
    (0x4b1d730f, 0x3f6e191e),
    (0x4cf3e70e, 0xbf3d38c3),
    (0x4db9313e, 0xbf5cd49f),
    (0x4dbc8385, 0xbe5d22f4),
    (0x4df947f3, 0xbf1f1f91),
    (0x4ecd11c7, 0x3f37516c),
    (0x4f45dcab, 0x3f3539dd),
    (0x4fb56937, 0xbf7ffcb7),
    (0x509b1e93, 0xbedfccf9),
    (0x51c8cefb, 0xbf2cb114),
    (0x521945ed, 0xbd933a00),
    (0x545bb734, 0xbc6fce9e),
    (0x55a209a0, 0x3f1770a1),
    (0x55cafb2a, 0xbf7e7a17),
    (0x55da572e, 0x3d9ed773),
    (0x58dfb085, 0xbf5585ae),
    (0x58eb7ea9, 0xbf654191),
    (0x59c871da, 0x3f4e12f9),
    (0x59d8e261, 0xbf647af0),
    (0x5a935f4c, 0x3f5f0fa8),
    (0x5af484be, 0xbf60d313),
    (0x5b258da4, 0xbf67de0e),
    (0x5b5008a3, 0xbf7847de),
    (0x5b895db8, 0x3f550402),
    (0x5c8248a5, 0xbf683e58),
    (0x5cdaa4f7, 0x3f7108db),
    (0x5d937ce2, 0xbf757e8d),
    (0x5d9ab86b, 0x3e38e41a),
    (0x5dadd689, 0xbf74fc9e),
    (0x5de78921, 0xbe4a4b3a),
    (0x5e060cca, 0x3efbeaa0),
    (0x5f208d82, 0x3f2c7688),
    (0x60c7295d, 0xbdf2fc63),
    (0x612eff34, 0xbf784b2e),
    (0x616d8730, 0x3f67ef01),
    (0x61dfc847, 0xbf0094df),
    (0x6201be80, 0x3d9d0aa3),
    (0x62e31fd9, 0x3eed33b2),
    (0x6446cec0, 0xbf6995bd),
    (0x64e5a461, 0xbe9d4f71),
    (0x6504cef1, 0xbf141a50),
    (0x65127213, 0x3f761b30),
    (0x653cee8f, 0x3f30df39),
    (0x655355c5, 0x3f7d135f),
    (0x656a98a6, 0xbe8ff2a3),
    (0x6652a0dc, 0x3f388139),
    (0x67051b8d, 0xbe7ccf49),
    (0x67a8ecf0, 0xbf69a8f9),
    (0x67a9242b, 0xbf7fab81),
    (0x6a3f60ff, 0xbf79ee5f),
    (0x6d734599, 0xbf5b5135),
    (0x6dcea82e, 0x3f40f5e1),
    (0x6e1cdf42, 0xbf7c9ed7),
    (0x6e60ecb0, 0x3de036f1),
    (0x6e649053, 0xbedf21a7),
    (0x6e671317, 0x3f0eca9e),
    (0x726fd58e, 0xbe03539f),
    (0x729085ef, 0xbf348b3d),
    (0x73243f06, 0x3e943a84),
    (0x73263d14, 0x3f7c42ce),
    (0x7400c9ec, 0x3f063923),
    (0x740e98ce, 0x3f55529a),
    (0x741750cd, 0xbeda3a60),
    (0x742c68ce, 0xbf787516),
    (0x744e6a54, 0x3ecf11f7),
    (0x75a6a9d0, 0xbf6754b0),
    (0x7608c65e, 0x3ee2e015),
    (0x761a2787, 0xbf3d7b9a),
    (0x769b3e02, 0x3ce1c32a),
    (0x76ecd5e5, 0xbedd6781),
    (0x7871df17, 0x3f7df37a),
    (0x78f8b857, 0xbf2d56de),
    (0x7970a79d, 0x3f4207c3),
    (0x79d1f6d3, 0xbf7a88ee),
    (0x7a175df8, 0xbe5b0933),
    (0x7a5aacdb, 0x3eda83bb),
    (0x7a817b08, 0x3e1b493e),
    (0x7a93d493, 0x3f406f11),
    (0x7bcebcdd, 0xbe26a9af),
    (0x7c2e964a, 0xbef4a5ec),
    (0x7c5d6b82, 0x3ea0ddcf),
    (0x7d6b2398, 0xbe2e744f),
    (0x7d9876ae, 0xbeff0d0e),
    (0x7f2a2ca7, 0x3efdc03d),
    (0x7f58cad9, 0xbf315ecf),
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(SIN_EXCEPTIONS)

@jitable
def sin_of_quadrant(q, t):
    """sin(a) from a * 2/pi = 4n + q + t: sin(pi t/2), cos(pi t/2), -sin(pi t/2),
    -cos(pi t/2) for q = 0, 1, 2, 3.  Branch-free (both polynomials are
    evaluated and one selected: the same value as a branch)."""
    inline_into_callers()
    s = sin_halfpi(t)
    c = cos_halfpi(t)
    s = c if q & 1 else s
    return negate(s) if q >= 2 else s

@jitable
def sin_approx(a):
    """sin(a) in double for a finite float32 a >= 0, relative error < 2^-50.1.
    Branch-free; inf and NaN give some finite value."""
    inline_into_callers()
    q, t = reduce_quadrant(a)
    return sin_of_quadrant(q, t)

@jitable
def sin_window(x):
    """(sin(x) correctly rounded, True), or (the float32 nearest sin_approx,
    with x's sign; False) where the rounding test cannot decide: the inputs
    of the table above."""
    inline_into_callers()
    special = (x != x) | (abs32(x) == INF32)
    r, ok = decide(sin_approx(abs32(x)))
    r = neg32(r) if signbit32(x) else r
    return (NAN32 if special else r), ok | special

@jitable
def sin_fast(x):
    """(sin(x) correctly rounded, True), or (anything, False): for |x| < 2^20
    the rounding test on sin_of_quadrant after the Cody-Waite reduction
    (trig_reduction.reduce_quadrant_small: the same q, and t within the
    2^-51.4 the kernels' bound takes, so the approximation is again within
    2^-50.1 and the window decides correctly); |x| >= 2^20, NaN and
    infinities are left undecided (one flag; the next step gives NaN for
    the last two).  Branch-free: vectorises in the CPU's
    decided-first loop."""
    inline_into_callers()
    q, t, small = quadrant_small(x)
    return decide_quadrant(x, sin_of_quadrant(q, t), small, True)

@jitable
def sin_f32(x):
    r, ok = sin_fast(x)
    if ok:
        return r
    r, ok = sin_window(x)
    if ok:
        return r
    return finish_odd(x, r, _KEYS, _VALUES)


@jitable
def sin_f64(x):
    """sin for float64, correctly rounded (softrep/algorithms/math/trig64.py)."""
    return trig_f64(x, SIN)


@jitable
def sin_fast64(x):
    """(the correctly rounded sin(x), True) where the float64 fast path decides, else (anything, False):
    branch-free, for |x| < 2^20 (trig64.trig_fast64_cody_waite); `sin_f64` takes the rest."""
    inline_into_callers()
    return trig_fast64_cody_waite(x, SIN)

