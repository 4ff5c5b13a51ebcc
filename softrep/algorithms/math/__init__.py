"""Correctly rounded scalar math kernels, one function per module.

Each module `<name>.py` holds

* `<name>_f32(x)` (or `(x, y)`): a jitable scalar kernel, float32 in, float32
  out, correctly rounded to nearest-even for every input (the scheme is
  described in core.py, the proofs in docs/mathlib.md);
* optionally `<name>_fast(x)`: the float32 fast path alone, branch-free,
  returning (result, True) when it decides the correctly rounded result and
  (anything, False) otherwise; `<name>_f32` is exactly "fast, else the
  accurate path", which lets the CPU launcher run it as a vectorisable first
  loop (a function without one gets its float64 fast path's, narrowed:
  narrowed.py);
* optionally `<name>_window(x)` (`fast2`), a second branch-free step of the
  same form, for one input: `<name>_f32` is then "fast, else window, else
  the accurate path", and the CPU launcher runs it as a vectorisable second
  loop over chunks that the first left undecided;
* optionally `<name>_f64(x)`: the float64 version, correctly rounded
  (scheme: multiword.py), and `<name>_fast64(x)`, its double-double fast path
  alone, returning (result, True) when the rounding test decides and
  (anything, False) otherwise; `<name>_f64` is "fast64, else the accurate
  path" (the verifier counts how often the accurate path runs with it).

`KERNELS` lists them all; the tensor ops (softrep/ops/math.py) and the verifier
are built from it.  Nothing here knows about tensors or gradients.
"""

from dataclasses import dataclass, replace

from .atan import atan_f32, atan_f64, atan_fast, atan_fast64
from .cbrt import cbrt_f32, cbrt_f64, cbrt_fast64
from .cos import cos_f32, cos_f64, cos_fast, cos_fast64, cos_window
from .cosh import cosh_f32, cosh_f64, cosh_fast, cosh_fast64
from .erf import erf_f32, erf_f64, erf_fast, erf_fast64
from .erfc import erfc_f32, erfc_f64, erfc_fast, erfc_fast64
from .exp import exp_f32, exp_f64, exp_fast, exp_fast64
from .exp10 import exp10_f32, exp10_f64, exp10_fast, exp10_fast64
from .exp2 import exp2_f32, exp2_f64, exp2_fast, exp2_fast64
from .expm1 import expm1_f32, expm1_f64, expm1_fast, expm1_fast64
from .hypot import hypot_f32, hypot_f64, hypot_fast64
from .log import log_f32, log_f64, log_fast, log_fast64
from .log10 import log10_f32, log10_f64, log10_fast, log10_fast64
from .log1p import log1p_f32, log1p_f64, log1p_fast, log1p_fast64
from .log2 import log2_f32, log2_f64, log2_fast, log2_fast64
from .narrowed import float32_first_step
from .pow import pow_f32, pow_f64, pow_fast64
from .rsqrt import rsqrt_f32, rsqrt_f64, rsqrt_fast, rsqrt_fast64
from .sigmoid import sigmoid_f32, sigmoid_f64, sigmoid_fast, sigmoid_fast64
from .sin import sin_f32, sin_f64, sin_fast, sin_fast64, sin_window
from .sinh import sinh_f32, sinh_f64, sinh_fast, sinh_fast64
from .tan import tan_f32, tan_f64, tan_fast, tan_fast64
from .tanh import tanh_f32, tanh_f64, tanh_fast, tanh_fast64


@dataclass(frozen=True)
class MathKernel:
    """The scalar kernels of one function.  `f64`, `fast`, `f64_fast` and `fast2` are None where absent."""

    name: str
    arity: int
    f32: object
    f64: object = None
    fast: object = None
    f64_fast: object = None
    fast2: object = None


# Functions without a float32 fast path of their own that keep their float32
# kernel alone: hypot's is branch-free and vectorises as it is.
OWN_FLOAT32_PATH = frozenset({"hypot"})


def _with_narrowed(k):
    """k, with the float32 fast path of its float64 one (narrowed.py) where it
    has none of its own: every float32 result that path decides is the
    correctly rounded one, so `f32` is still "fast, else `f32`"."""
    if k.fast is not None or k.f64_fast is None or k.name in OWN_FLOAT32_PATH:
        return k
    return replace(k, fast=float32_first_step(k.f64_fast, k.arity))


KERNELS = {k.name: _with_narrowed(k) for k in (
    MathKernel("atan", 1, atan_f32, atan_f64, atan_fast, atan_fast64),
    MathKernel("cbrt", 1, cbrt_f32, cbrt_f64, None, cbrt_fast64),
    MathKernel("cos", 1, cos_f32, cos_f64, cos_fast, cos_fast64, cos_window),
    MathKernel("cosh", 1, cosh_f32, cosh_f64, cosh_fast, cosh_fast64),
    MathKernel("erf", 1, erf_f32, erf_f64, erf_fast, erf_fast64),
    MathKernel("erfc", 1, erfc_f32, erfc_f64, erfc_fast, erfc_fast64),
    MathKernel("exp", 1, exp_f32, exp_f64, exp_fast, exp_fast64),
    MathKernel("exp10", 1, exp10_f32, exp10_f64, exp10_fast, exp10_fast64),
    MathKernel("exp2", 1, exp2_f32, exp2_f64, exp2_fast, exp2_fast64),
    MathKernel("expm1", 1, expm1_f32, expm1_f64, expm1_fast, expm1_fast64),
    MathKernel("hypot", 2, hypot_f32, hypot_f64, None, hypot_fast64),
    MathKernel("log", 1, log_f32, log_f64, log_fast, log_fast64),
    MathKernel("log10", 1, log10_f32, log10_f64, log10_fast, log10_fast64),
    MathKernel("log1p", 1, log1p_f32, log1p_f64, log1p_fast, log1p_fast64),
    MathKernel("log2", 1, log2_f32, log2_f64, log2_fast, log2_fast64),
    MathKernel("pow", 2, pow_f32, pow_f64, None, pow_fast64),
    MathKernel("rsqrt", 1, rsqrt_f32, rsqrt_f64, rsqrt_fast, rsqrt_fast64),
    MathKernel("sigmoid", 1, sigmoid_f32, sigmoid_f64, sigmoid_fast, sigmoid_fast64),
    MathKernel("sin", 1, sin_f32, sin_f64, sin_fast, sin_fast64, sin_window),
    MathKernel("sinh", 1, sinh_f32, sinh_f64, sinh_fast, sinh_fast64),
    MathKernel("tan", 1, tan_f32, tan_f64, tan_fast, tan_fast64),
    MathKernel("tanh", 1, tanh_f32, tanh_f64, tanh_fast, tanh_fast64),
)}

__all__ = ["KERNELS", "MathKernel"]
