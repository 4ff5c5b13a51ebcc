"""cos(x) for float32, correctly rounded (scheme: softrep/algorithms/math/exception_tables.py).

cos is even: computed on a = |x|.  cos(+-inf) and cos(NaN) are NaN.

Fast path: a * 2/pi = 4n + q + t (softrep/algorithms/math/trig_reduction.py, exact reduction for
every float32), cos(a) = cos(pi t/2), -sin(pi t/2), -cos(pi t/2), sin(pi t/2)
for q = 0, 1, 2, 3; relative error < 2^-50.1 (argued in _trig).
Accurate path: the table below (every input whose fast result cannot be
rounded safely, with its MPFR value).
For |x| < 2^20 a Cody-Waite reduction is tried first (`cos_fast`), with the
same kernels and the same bound; where its rounding test fails, and for
larger |x|, the exact reduction and the table decide (`cos_window`).
"""

import numpy as np

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import bitcast, jitable, negate
from .core import abs32
from .exception_tables import decide, exception_arrays, lookup_exception
from .trig_reduction import cos_halfpi, decide_quadrant, quadrant_small, reduce_quadrant, sin_halfpi
from .trig64 import COS, trig_f64, trig_fast64_cody_waite

NAN32 = np.float32(np.nan)
INF32 = np.float32(np.inf)
ZERO_F32 = np.float32(0.0)

# BEGIN GENERATED EXCEPTIONS (python -m softrep.algorithms.math.exception_tables scan cos): (bits of |x|, bits of cos|x|)
COS_EXCEPTIONS = (
    (0x39800000, 0x3f800000),
    (0x3a0f1bbd, 0x3f7ffffd),
    (0x3a544395, 0x3f7ffffb),
    (0x3b434e12, 0x3f7fffb5),
    (0x3c107fe6, 0x3f7ffd74),
    (0x3cfcfbff, 0x3f7fe0c1),
    (0x3d58a0ea, 0x3f7fa45e),
    (0x3dac4fc0, 0x3f7f182d),
    (0x3e5fa70e, 0x3f79eb10),
    (0x3ea0e6ef, 0x3f73765c),
    (0x3efec12e, 0x3f60f582),
    (0x3f8626a5, 0x3eff9eb8),
    (0x3faa2672, 0x3e74e5b3),
    (0x3fdb3c0e, 0xbe10e4b3),
    (0x4010a4bf, 0xbf22cea3),
    (0x40259f7c, 0xbf59bec4),
    (0x4215bfe0, 0x3f774807),
    (0x42378db8, 0xbea87a07),
    (0x424790ce, 0x3f6e4c01),
    (0x4297114b, 0x3f7da6d5),
    (0x4475404c, 0x3f2d324a),
    (0x466735fa, 0x3f545456),
    (0x46ec2f8d, 0xbf794cdd),
    (0x46f85a22, 0xbf4232b9),
    (0x474d265c, 0xbf7009f2),
    (0x47a0e238, 0x3f7e19dd),
    (0x47d7c67e, 0x3f773488),
    (0x4847462b, 0xbf319354),
    (0x4986afee, 0x3f090d16),
    (0x49f85c2d, 0x3ee4d05c),
    (0x4a01dca4, 0x3f30b318),
    (0x4b511330, 0x3f0effc7),
    (0x4b9bbb2a, 0x3e758090),
    (0x4c46d929, 0xbd293d05),
    (0x4d9bc85f, 0x3f5683b8),
    (0x4dd46702, 0x3f7932b8),
    (0x4e5b65ff, 0xbf62075d),
    (0x4ea2216b, 0xbf7fe8c2),
    (0x4eb4d529, 0xbdc9a075),
    (0x504be581, 0x3df8dc9c),
    (0x50e46dc7, 0xbed73c90),
    (0x513d8d25, 0xbf70c252),
    (0x51abf5aa, 0xbcc6b7a4),
    (0x52d9d3fe, 0xbf5e187b),
    (0x52f88494, 0x3f5c5971),
    (0x53f91a52, 0xbe66756d),
    (0x543f6e04, 0x3f0f0187),
    (0x5531c16b, 0x3ef965f4),
    (0x557ece24, 0xbf544410),
    (0x55e5235d, 0xbe83c11a),
    (0x569ec55c, 0xbf7f070f),
    (0x571196b3, 0x3f267def),
    (0x58b939c0, 0xbe715ad0),
    (0x58d567a5, 0xbf79a1c2),
    (0x58f72162, 0x3f7f9642),
    (0x5922aa80, 0x3f08aebf),
    (0x59443c0a, 0x3f425f62),
    (0x5956c49c, 0x3e77bfd8),
    (0x5a1a3626, 0xbf5fdc79),
    (0x5a8c921b, 0x3f5ea913),
    (0x5bae7209, 0xbe11d727),
    (0x5bcde59e, 0x3f6266e6),
    (0x5bff82fd, 0xbf7ffc69),
    (0x5d173a7d, 0xbf7ff3bf),
    (0x5d9615e4, 0xbf7b5816),
    (0x5da7ab87, 0xbf73e8cb),
    (0x5df96a14, 0x3f37deef),
    (0x5f18b878, 0x3f7f14bb),
    (0x5f675bac, 0xbf78d37f),
    (0x6094669a, 0xbee0428d),
    (0x60e81eef, 0x3ed683a2),
    (0x6115cb11, 0x3f78142f),
    (0x61703976, 0x3edacc56),
    (0x62fe22bd, 0xbf62b2db),
    (0x6328a4e2, 0x3db4f783),
    (0x63b37133, 0xbf7b92c6),
    (0x64639ab6, 0x3f478f03),
    (0x647a941f, 0x3f60eed7),
    (0x64933b14, 0x3d4bf754),
    (0x650247d7, 0x3f25bdc8),
    (0x6598fdb5, 0xbf3d75bd),
    (0x6978e912, 0xbd769ca5),
    (0x699f1bf1, 0xbf6de4e7),
    (0x69b7b0b9, 0xbf6b9c0b),
    (0x6aa2e13a, 0x3f58445f),
    (0x6b35e825, 0xbf74a560),
    (0x6ba11b42, 0xbeafbdf8),
    (0x6bdb1cfc, 0xbee04440),
    (0x6e1ad2be, 0x3f7be1d5),
    (0x6e1b06c0, 0xbf1d93b2),
    (0x71510edb, 0xbf7e37e8),
    (0x71874a79, 0xbf45a449),
    (0x721d0204, 0x3f7cf4ed),
    (0x72a4a047, 0xbe84fe24),
    (0x72cfc61d, 0x3eec0d38),
    (0x7403c71c, 0xbe84072c),
    (0x741b2833, 0x3dd03c80),
    (0x744fd5d8, 0x3f6cb54a),
    (0x75da4c95, 0x3f7aeabb),
    (0x768bd236, 0xbf2045fb),
    (0x76d7173f, 0x3f266b3e),
    (0x76fcc75d, 0xbf3f89bd),
    (0x77e9fa6b, 0xbf010d64),
    (0x77f7b624, 0x3f67741e),
    (0x77fb4fbf, 0xbf63b128),
    (0x78e6fa17, 0xbf237b17),
    (0x7908cd73, 0x3f798bb5),
    (0x790c0eae, 0x3f48a1ac),
    (0x797cef4f, 0x3f7de018),
    (0x79f953b7, 0x3f6a411b),
    (0x7a38ab34, 0x3f7b3195),
    (0x7a4b1a27, 0x3f7c54da),
    (0x7a4fa716, 0x3f7fa7a6),
    (0x7a879c44, 0xbe661acc),
    (0x7c06dc1b, 0xbf2c5ab6),
    (0x7c352f65, 0x3dcc732a),
    (0x7c64841e, 0xbf7fc6f8),
    (0x7c69ae1e, 0xbf7ff9fe),
    (0x7c75f2a4, 0xbe61ec6f),
    (0x7d378aef, 0x3d98150f),
    (0x7db91687, 0x3edfe26d),
    (0x7dbeb31d, 0xbf4fbafd),
    (0x7e82fea4, 0xbe0d7da7),
)
# END GENERATED EXCEPTIONS
_KEYS, _VALUES = exception_arrays(COS_EXCEPTIONS)

@jitable
def cos_of_quadrant(q, t):
    """cos(a) from a * 2/pi = 4n + q + t: cos(pi t/2), -sin(pi t/2), -cos(pi t/2),
    sin(pi t/2) for q = 0, 1, 2, 3.  Branch-free (both polynomials are
    evaluated and one selected: the same value as a branch)."""
    inline_into_callers()
    s = sin_halfpi(t)
    c = cos_halfpi(t)
    c = s if q & 1 else c
    return negate(c) if q == 1 or q == 2 else c

@jitable
def cos_approx(a):
    """cos(a) in double for a finite float32 a >= 0, relative error < 2^-50.1.
    Branch-free; inf and NaN give some finite value."""
    inline_into_callers()
    q, t = reduce_quadrant(a)
    return cos_of_quadrant(q, t)

@jitable
def cos_window(x):
    """(cos(x) correctly rounded, True), or (the float32 nearest cos_approx,
    False) where the rounding test cannot decide: the inputs of the table
    above."""
    inline_into_callers()
    a = abs32(x)
    special = (x != x) | (a == INF32)
    r, ok = decide(cos_approx(a))
    return (NAN32 if special else r), ok | special

@jitable
def cos_fast(x):
    """(cos(x) correctly rounded, True), or (anything, False): for |x| < 2^20
    the rounding test on cos_of_quadrant after the Cody-Waite reduction
    (trig_reduction.reduce_quadrant_small: the same q, and t within the
    2^-51.4 the kernels' bound takes, so the approximation is again within
    2^-50.1 and the window decides correctly); |x| >= 2^20, NaN and
    infinities are left undecided (one flag; the next step gives NaN for
    the last two).  Branch-free: vectorises in the CPU's
    decided-first loop."""
    inline_into_callers()
    q, t, small = quadrant_small(x)
    return decide_quadrant(x, cos_of_quadrant(q, t), small, False)

@jitable
def cos_f32(x):
    r, ok = cos_fast(x)
    if ok:
        return r
    r, ok = cos_window(x)
    if ok:
        return r
    return lookup_exception(_KEYS, _VALUES, bitcast(abs32(x)), r)


@jitable
def cos_f64(x):
    """cos for float64, correctly rounded (softrep/algorithms/math/trig64.py)."""
    return trig_f64(x, COS)


@jitable
def cos_fast64(x):
    """(the correctly rounded cos(x), True) where the float64 fast path decides, else (anything, False):
    branch-free, for |x| < 2^20 (trig64.trig_fast64_cody_waite); `cos_f64` takes the rest."""
    inline_into_callers()
    return trig_fast64_cody_waite(x, COS)

