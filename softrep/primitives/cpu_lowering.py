"""CPU implementation of the rounding primitives (`softrep.primitives.rounding`).

Round to nearest is the hardware operation: LLVM `fadd`, `fsub`, `fmul`, `fdiv`
without fast-math flags, `llvm.sqrt` and `llvm.fma`.  LLVM never contracts
instructions that carry no `contract` flag, and Numba's default target options
allow no fusion, so a separate `fmul` and `fadd` stay separate.

The directed roundings (down, up, zero) do not touch the floating-point
environment (MXCSR on x86, FPCR on ARM): changing it is slow, thread-local and
not portable.  Instead each one computes the round-to-nearest result r and the
exact sign d of (exact result - r), then steps r one ulp toward the exact result
where the direction asks for it (`_adjust`).  Stepping from the nearest value is
enough: the exact value lies within half an ulp of r, so the directed result is
r or its neighbour on the side of d.  Overflow fits the same rule: when r is
+-inf but the operands are finite, the exact value is finite, d = -sign(r), and
stepping from inf gives the largest finite number.

How d is found exactly, per operation:

* float32 mul, div, sqrt, fma: float64 has room for the exact product of two
  float32 values (48 <= 53 bits, exponents within range), so the error is
  evaluated in float64 where its sign is exact.
* add/sub (both precisions): TwoSum gives the exact error of any
  non-overflowing addition, subnormals included.
* float64 mul, div, sqrt: the operands are scaled by powers of two into [1, 2),
  r is scaled the same way (exact: the scaled value is a normal number), and
  one `fma` gives the exact residual a'*b' - r' (or a' - r'*b', a' - r'^2).
  The scaling is what keeps the residual away from the subnormal range, where
  an fma residual would itself be rounded.
* float64 fma: the product's exact value P + E (TwoProduct, after scaling) and
  the scaled addend and result are summed as a floating-point expansion
  (Shewchuk's grow-expansion); the sign of the largest component is the sign of
  the exact residual.

Signed zeros: an exact zero sum has sign + in every direction except toward
-inf, where it is - (IEEE 754-2019 section 6.3); `_zero_sum_down` applies it.
"""

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic, overload, register_jitable

from . import rounding as R
from .jit import bitcast, with_arity

from .modes import DOWN, NEAREST, UP, ZERO  # noqa: E402
_MODE = {"rn": NEAREST, "rd": DOWN, "ru": UP, "rz": ZERO}
_FLOATS = (types.float32, types.float64)


# --------------------------------------------------------------------------- LLVM intrinsics


def _llvm_float_intrinsic(name, nargs):
    def typer(typingctx, *args):
        if len(args) != nargs or args[0] not in _FLOATS or any(a != args[0] for a in args):
            return None
        sig = args[0](*args)

        def codegen(context, builder, signature, llargs):
            ty = context.get_value_type(signature.return_type)
            fn = builder.module.declare_intrinsic(name, [ty], ir.FunctionType(ty, [ty] * nargs))
            return builder.call(fn, llargs)

        return sig, codegen

    # numba's @intrinsic inspects the typer's explicit parameters
    if nargs == 1:
        return intrinsic(lambda typingctx, a: typer(typingctx, a))
    return intrinsic(lambda typingctx, a, b, c: typer(typingctx, a, b, c))


llvm_fma = _llvm_float_intrinsic("llvm.fma", 3)
llvm_sqrt = _llvm_float_intrinsic("llvm.sqrt", 1)


@intrinsic
def llvm_fdiv(typingctx, a, b):
    """LLVM `fdiv` (no fast-math flags): the IEEE division, rounded to nearest.
    Numba's `/` under its default error model (`error_model="python"`, which
    every kernel compiled without `error_model="numpy"` gets, and which an
    overload inherits from its caller) tests the divisor and raises
    ZeroDivisionError at 0; IEEE gives +-inf or NaN there, and the test's
    branch on every element can also keep a loop from vectorising."""
    if a not in _FLOATS or b != a:
        return None

    def codegen(context, builder, signature, llargs):
        return builder.fdiv(*llargs)

    return a(a, b), codegen


# --------------------------------------------------------------------------- helpers

_NEG_ZERO32 = np.float32(-0.0)
_NEG_ZERO64 = np.float64(-0.0)
_U32_ONE = np.uint32(1)
_U64_ONE = np.uint64(1)
_TWO_POW_64 = np.float64(2.0**64)


@register_jitable
def _sgn(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0


@register_jitable
def _finite(x):
    return x - x == 0


@register_jitable
def _signbit32(x):
    return bitcast(x) >= np.uint32(0x80000000)


@register_jitable
def _signbit64(x):
    return bitcast(x) >= np.uint64(0x8000000000000000)


@register_jitable
def _next_up32(x):
    """Smallest float32 above x (x not NaN, not +inf)."""
    if x == 0:
        return bitcast(_U32_ONE)
    u = bitcast(x)
    if x > 0:
        return bitcast(np.uint32(u + _U32_ONE))
    return bitcast(np.uint32(u - _U32_ONE))


@register_jitable
def _next_up64(x):
    """Smallest float64 above x (x not NaN, not +inf)."""
    if x == 0:
        return bitcast(_U64_ONE)
    u = bitcast(x)
    if x > 0:
        return bitcast(np.uint64(u + _U64_ONE))
    return bitcast(np.uint64(u - _U64_ONE))


@register_jitable
def _next_down32(x):
    return -_next_up32(-x)


@register_jitable
def _next_down64(x):
    return -_next_up64(-x)


def _make_adjust(next_up, next_down):
    @register_jitable
    def adjust(r, d, mode):
        """Directed result from the nearest result r and d = sign(exact - r)."""
        if mode == DOWN:
            if d < 0:
                return next_down(r)
        elif mode == UP:
            if d > 0:
                return next_up(r)
        elif mode == ZERO:
            if d < 0 and r > 0:
                return next_down(r)
            if d > 0 and r < 0:
                return next_up(r)
        return r

    return adjust


_adjust32 = _make_adjust(_next_up32, _next_down32)
_adjust64 = _make_adjust(_next_up64, _next_down64)


def _make_zero_sum_down(signbit, neg_zero):
    @register_jitable
    def zero_sum_down(x, y, r):
        """Result of an exact-zero sum x + y rounded down: -0 unless both are +0."""
        if x == 0 and y == 0 and not signbit(x) and not signbit(y):
            return r
        return neg_zero

    return zero_sum_down


_zero_sum_down32 = _make_zero_sum_down(_signbit32, _NEG_ZERO32)
_zero_sum_down64 = _make_zero_sum_down(_signbit64, _NEG_ZERO64)


@register_jitable
def _two_sum(a, b):
    """s + e == a + b exactly, s = RN(a + b) (Knuth; no overflow assumed)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@register_jitable
def _frexp64(x):
    """(m, e) with x == m * 2**e, 1 <= m < 2, for finite x > 0 (subnormals too)."""
    u = bitcast(x)
    shift = 0
    if u < np.uint64(0x0010000000000000):  # subnormal: normalise exactly first
        u = bitcast(x * _TWO_POW_64)
        shift = 64
    biased = np.int64(u >> np.uint64(52))
    m = bitcast((u & np.uint64(0x000FFFFFFFFFFFFF)) | np.uint64(0x3FF0000000000000))
    return m, biased - 1023 - shift


@register_jitable
def _pow2_64(k):
    """2.0**k for -1022 <= k <= 1023."""
    return bitcast(np.uint64(k + 1023) << np.uint64(52))


@register_jitable
def _scale64(x, k):
    """x * 2**k, exact when the result is a normal number (or x is 0)."""
    # Steps of at most 2**1000: going down, every partial product is above the
    # normal result; going up, every partial product is at least |x|.
    while k > 1000:
        x = x * _pow2_64(1000)
        k -= 1000
    while k < -1000:
        x = x * _pow2_64(-1000)
        k += 1000
    return x * _pow2_64(k)


@register_jitable
def _expansion_sign(e0, e1, x, y):
    """Sign of e0 + e1 + x + y, exactly, where (e0, e1) is a nonoverlapping
    expansion with |e0| <= ulp(e1)/2 and nothing overflows."""
    # grow (e0, e1) by x
    q, h0 = _two_sum(x, e0)
    q, h1 = _two_sum(q, e1)
    h2 = q
    # grow (h0, h1, h2) by y
    q, g0 = _two_sum(y, h0)
    q, g1 = _two_sum(q, h1)
    q, g2 = _two_sum(q, h2)
    # components are nonoverlapping and increase in magnitude: the largest
    # nonzero one outweighs the sum of the others
    if q != 0:
        return _sgn(q)
    if g2 != 0:
        return _sgn(g2)
    if g1 != 0:
        return _sgn(g1)
    return _sgn(g0)


# --------------------------------------------------------------------------- add / sub


def _make_add(adjust, zero_sum_down):
    @register_jitable
    def add(a, b, mode):
        s = a + b
        if mode == NEAREST:
            return s
        if not _finite(s):
            if s == s and _finite(a) and _finite(b):
                return adjust(s, -_sgn(s), mode)  # overflow
            return s
        if s == 0:  # an addition is exact when its rounded result is 0
            if mode == DOWN:
                return zero_sum_down(a, b, s)
            return s
        # s is finite, so the error of the larger-magnitude-first form
        # (Fast2Sum) is exact without overflow; TwoSum's s - a can overflow
        # when |s| is near the largest finite value (3e292 - DBL_MAX).
        if (a if a >= 0 else -a) < (b if b >= 0 else -b):
            a, b = b, a
        e = b - (s - a)
        return adjust(s, _sgn(e), mode)

    return add


_add32 = _make_add(_adjust32, _zero_sum_down32)
_add64 = _make_add(_adjust64, _zero_sum_down64)


# --------------------------------------------------------------------------- float32 via float64


@register_jitable
def _mul32(a, b, mode):
    r = a * b
    if mode == NEAREST:
        return r
    p = np.float64(a) * np.float64(b)  # exact
    return _adjust32(r, _sgn(p - np.float64(r)), mode)


@register_jitable
def _div32(a, b, mode):
    r = llvm_fdiv(a, b)
    if mode == NEAREST:
        return r
    # r*b is exact in float64; a - r*b rounds once but keeps its sign and is
    # zero only when exact (float32 magnitudes stay far above float64 underflow)
    b64 = np.float64(b)
    rem = np.float64(a) - np.float64(r) * b64
    return _adjust32(r, _sgn(rem) * _sgn(b64), mode)


@register_jitable
def _sqrt32(a, mode):
    r = llvm_sqrt(a)
    if mode == NEAREST:
        return r
    r64 = np.float64(r)
    return _adjust32(r, _sgn(np.float64(a) - r64 * r64), mode)


@register_jitable
def _fma32(a, b, c, mode):
    r = llvm_fma(a, b, c)
    if mode == NEAREST:
        return r
    if not _finite(r):
        if r == r and _finite(a) and _finite(b) and _finite(c):
            return _adjust32(r, -_sgn(r), mode)
        return r
    p = np.float64(a) * np.float64(b)  # exact
    s, t = _two_sum(p, np.float64(c))  # exact: p + c == s + t
    if s == 0:  # exact zero result
        if mode == DOWN:
            return _zero_sum_down32(np.float32(p), c, r)
        return r
    # s and r are both within half an ulp (of their formats) of the exact value,
    # so s - r is exact or, when r is 0, is s; a nonzero s - r outweighs t.
    diff = s - np.float64(r)
    if diff != 0:
        return _adjust32(r, _sgn(diff), mode)
    return _adjust32(r, _sgn(t), mode)


# --------------------------------------------------------------------------- float64 by scaling


@register_jitable
def _mul64(a, b, mode):
    r = a * b
    if mode == NEAREST:
        return r
    if not (_finite(a) and _finite(b)) or a == 0 or b == 0:
        return r  # exact: 0, inf or NaN
    if not _finite(r):
        return _adjust64(r, -_sgn(r), mode)
    ma, ea = _frexp64(abs(a))
    mb, eb = _frexp64(abs(b))
    rs = _scale64(abs(r), -(ea + eb))
    d = _sgn(llvm_fma(ma, mb, -rs))
    if (a < 0) != (b < 0):
        d = -d
    return _adjust64(r, d, mode)


@register_jitable
def _div64(a, b, mode):
    r = llvm_fdiv(a, b)
    if mode == NEAREST:
        return r
    if not (_finite(a) and _finite(b)) or a == 0 or b == 0:
        return r
    if not _finite(r):
        return _adjust64(r, -_sgn(r), mode)
    ma, ea = _frexp64(abs(a))
    mb, eb = _frexp64(abs(b))
    rs = _scale64(abs(r), -(ea - eb))
    d = _sgn(llvm_fma(-rs, mb, ma))
    if (a < 0) != (b < 0):
        d = -d
    return _adjust64(r, d, mode)


@register_jitable
def _sqrt64(a, mode):
    r = llvm_sqrt(a)
    if mode == NEAREST:
        return r
    if not (a > 0) or not _finite(a):
        return r
    ma, ea = _frexp64(a)
    if ea & 1:
        ma = ma * np.float64(2.0)
        ea -= 1
    rs = _scale64(r, -(ea // 2))
    return _adjust64(r, _sgn(llvm_fma(-rs, rs, ma)), mode)


@register_jitable
def _fma64(a, b, c, mode):
    r = llvm_fma(a, b, c)
    if mode == NEAREST:
        return r
    if not (_finite(a) and _finite(b) and _finite(c)):
        return r
    if a == 0 or b == 0:  # exact: (+-0) + c
        if mode == DOWN and r == 0:
            return _zero_sum_down64(a * b, c, r)
        return r
    if not _finite(r):
        return _adjust64(r, -_sgn(r), mode)
    psign = 1 if (a < 0) == (b < 0) else -1
    if r == c:  # then exact - r is the product itself
        return _adjust64(r, psign, mode)
    ma, ea = _frexp64(abs(a))
    mb, eb = _frexp64(abs(b))
    p_hi = ma * mb
    p_lo = llvm_fma(ma, mb, -p_hi)  # exact: p_hi lies in [1, 4)
    if psign < 0:
        p_hi = -p_hi
        p_lo = -p_lo
    ep = ea + eb
    # r != c implies |a*b| >= ulp(c)/2, so c * 2**-ep stays below 2**57.  When c
    # is below 2**-1000 * |a*b| it would be rounded by the scaling; then it only
    # acts as a sticky bit behind the (much larger) residual of the product.
    c_tiny = False
    cs = np.float64(0.0)
    if c != 0:
        mc, ec = _frexp64(abs(c))
        if ec - ep < -1000:
            c_tiny = True
        else:
            cs = _scale64(c, -ep)
    rs = _scale64(r, -ep)
    d = _expansion_sign(p_lo, p_hi, cs, -rs)
    if d == 0 and c_tiny:
        d = _sgn(c)
    if d == 0:  # r is exact; if it is 0 then a*b = -c, a sum of opposites: -0 downward
        if r == 0 and mode == DOWN:
            return _NEG_ZERO64
        return r
    return _adjust64(r, d, mode)


# --------------------------------------------------------------------------- registration

_IMPLS = {
    "add": (_add32, _add64),
    "mul": (_mul32, _mul64),
    "div": (_div32, _div64),
    "sqrt": (_sqrt32, _sqrt64),
    "fma": (_fma32, _fma64),
}


_NEAREST = {
    # the hardware operation itself, with no detour through the directed path
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: llvm_fdiv(a, b),
    "sqrt": lambda a: llvm_sqrt(a),
    "fma": lambda a, b, c: llvm_fma(a, b, c),
}


def _register(op, suffix):
    mode = _MODE[suffix]
    f32, f64 = _IMPLS["add" if op == "sub" else op]
    nargs = {"sqrt": 1, "fma": 3}.get(op, 2)

    def choose(args):
        if args[0] not in _FLOATS or any(a != args[0] for a in args):
            return None
        if mode == NEAREST:
            return _NEAREST[op]
        f = f32 if args[0] == types.float32 else f64
        if op == "sub":
            return lambda a, b: f(a, -b, mode)
        if nargs == 1:
            return lambda a: f(a, mode)
        if nargs == 2:
            return lambda a, b: f(a, b, mode)
        return lambda a, b, c: f(a, b, c, mode)

    overload(R.PRIMITIVES[f"{op}_{suffix}"], target="cpu")(with_arity(nargs, choose))


for _op in ("add", "sub", "mul", "div", "sqrt", "fma"):
    for _suffix in ("rn", "rd", "ru", "rz"):
        _register(_op, _suffix)
