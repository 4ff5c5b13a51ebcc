"""Hypothesis strategies that reach the corners of IEEE arithmetic.

Plain `st.floats` already yields +-0, +-inf, NaN and subnormals.  The extra
strategies build operands from small integer significands and chosen exponents,
which is how exact ties (a result exactly halfway between two floats), exact
cancellations, results on the overflow boundary and results in the subnormal
range actually occur.
"""

import numpy as np
from hypothesis import strategies as st

_INFO = {np.float32: (24, -149, 127), np.float64: (53, -1074, 1023)}


def _structured(dtype):
    p, emin_sub, emax = _INFO[dtype]

    def build(m, e):
        with np.errstate(over="ignore", under="ignore"):
            return dtype(np.ldexp(np.float64(m), e)) if dtype is np.float32 else dtype(np.ldexp(m, e))

    # significands of 1 to p+2 bits (ties appear when two of them are added or
    # multiplied), exponents over the whole range including the edges
    return st.builds(
        build,
        st.integers(-(2 ** (p + 1)), 2 ** (p + 1)),
        st.one_of(
            st.integers(emin_sub - 2, emax - p + 2),
            st.sampled_from([emin_sub, emin_sub + 1, emin_sub + p, emax - p, emax - p + 1, 0, -p, -1]),
        ),
    )


def _edges(dtype):
    info = np.finfo(dtype)
    tiny, sub = info.tiny, dtype(np.ldexp(1.0, _INFO[dtype][1]))
    vals = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, info.max, -info.max, tiny, -tiny, sub, -sub,
            np.nextafter(info.max, dtype(0)), np.nextafter(tiny, dtype(0)), np.nextafter(dtype(1), dtype(2)),
            np.nextafter(dtype(1), dtype(0)), 2.0, 0.5, 3.0]
    return st.sampled_from([dtype(v) for v in vals])


def floats(dtype):
    """Operands of `dtype` covering specials, subnormals, edges and tie-makers."""
    width = 32 if dtype is np.float32 else 64
    return st.one_of(
        st.floats(width=width, allow_nan=True, allow_infinity=True).map(dtype),
        _structured(dtype),
        _edges(dtype),
    )
