"""A float32 fast path from a float64 one: the float64 result, narrowed by a rounding test.

For a function whose float32 kernel has no branch-free fast path of its own,
its float64 fast path (`<name>_fast64`, branch-free, vectorised by the CPU
launcher) gives one: for a float32 x, widened exactly to double,

    (r, ok) = fast64(x),  r = RN64(f(x)) wherever ok.

r is within half an ulp of f(x) (ulp(r) = 2^(e-52) for r = m 2^e, 1 <= m < 2;
below a power of 2 the doubles are twice as dense, so the bound holds there
too).  The rounding test of core.round_if_within with the window 1 -+ 2^-52
brackets every such value: r 2^-52 = m ulp(r) >= ulp(r), so r (1 + 2^-52) >=
r + ulp(r) and r (1 - 2^-52) <= r - ulp(r) (r > 0; r < 0 is the mirror
image), both doubles, and rounding is monotone: the computed ends satisfy
hi' >= r + ulp(r) > f(x) and lo' <= r - ulp(r) < f(x).  Rounding to float32 is
monotone too, so where lo' and hi' round to the same float32, f(x) does:
RN32(f(x)) is decided, correctly rounded, whatever f(x) is.  (The window is
needed: RN32(r) alone can differ from RN32(f(x)) when r is a float32 midpoint
that f(x) is not.)  A float32 rounding boundary falls in the window for about
2^-26 of the arguments; those go on to the float32 kernel's own accurate
path, as ok = False does.

The other cases decide as they should: r = +-0 or a subnormal double (|f(x)| <
2^-1022) narrows to a zero of f(x)'s sign, as RN32 does below 2^-150; r =
+-inf (|f(x)| beyond the double range) narrows to +-inf, as RN32 does beyond
FLT_MAX (1 + 2^-25); a NaN r (f(x) is NaN where the float64 step decides)
is the canonical float32 NaN.

The float32 kernel stays what the verifier proves correctly rounded over every
float32 input (`python -m softrep verify NAME --hash` runs the launcher, so
this path too); this first step only decides most arguments in a vector loop.
"""

from ...primitives.jit import inline_into_callers
from ...primitives.rounding import jitable
from .core import F64, NAN32, round_if_within

NARROW_WINDOW_LO = F64(1.0 - 2.0**-52)
NARROW_WINDOW_HI = F64(1.0 + 2.0**-52)


@jitable
def narrow(r, ok):
    """(RN32(f(x)), True), or (anything, False), from (r, ok) of a float64 fast
    path (module docstring)."""
    inline_into_callers()
    lo, same = round_if_within(r, NARROW_WINDOW_LO, NARROW_WINDOW_HI)
    nan = r != r
    return NAN32 if nan else lo, ok & (same | nan)


def float32_first_step(fast64, arity):
    """The float32 fast path `fast(x)` (arity 1) or `fast(x, y)` (arity 2) of
    the float64 fast path `fast64` of the same function."""
    if arity == 1:

        def fast(x):
            inline_into_callers()
            r, ok = fast64(F64(x))
            return narrow(r, ok)

    else:

        def fast(x, y):
            inline_into_callers()
            r, ok = fast64(F64(x), F64(y))
            return narrow(r, ok)

    fast.__name__ = fast.__qualname__ = fast64.__name__.replace("_fast64", "_narrowed_fast")
    return jitable(fast)
