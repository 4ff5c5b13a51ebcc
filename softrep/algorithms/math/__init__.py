"""Correctly rounded scalar math kernels, one function per module.

Each module `<name>.py` holds

* `<name>_f32(x)` (or `(x, y)`): a jitable scalar kernel, float32 in, float32
  out, correctly rounded to nearest-even for every input (the scheme is
  described in core.py, the proofs in docs/mathlib.md);
* optionally `<name>_fast(x)`: the float32 fast path alone, branch-free,
  returning (result, True) when it decides the correctly rounded result and
  (anything, False) otherwise; `<name>_f32` is exactly "fast, else the
  accurate path", which lets the CPU launcher run it as a vectorisable first
  loop;
* optionally `<name>_f64(x)`: the float64 version.

`KERNELS` lists them all; the tensor ops (softrep/ops/math.py) and the verifier
are built from it.  Nothing here knows about tensors or gradients.
"""

from dataclasses import dataclass

from .atan import atan_f32
from .cbrt import cbrt_f32, cbrt_f64
from .cos import cos_f32, cos_f64
from .cosh import cosh_f32
from .erf import erf_f32
from .erfc import erfc_f32
from .exp import exp_f32, exp_f64, exp_fast
from .exp10 import exp10_f32
from .exp2 import exp2_f32
from .expm1 import expm1_f32
from .hypot import hypot_f32, hypot_f64
from .log import log_f32, log_f64, log_fast
from .log10 import log10_f32
from .log1p import log1p_f32
from .log2 import log2_f32
from .pow import pow_f32
from .rsqrt import rsqrt_f32, rsqrt_f64
from .sigmoid import sigmoid_f32, sigmoid_f64, sigmoid_fast
from .sin import sin_f32, sin_f64
from .sinh import sinh_f32
from .tan import tan_f32, tan_f64
from .tanh import tanh_f32, tanh_f64, tanh_fast


@dataclass(frozen=True)
class MathKernel:
    """The scalar kernels of one function.  `f64` and `fast` are None where absent."""

    name: str
    arity: int
    f32: object
    f64: object = None
    fast: object = None


KERNELS = {k.name: k for k in (
    MathKernel("atan", 1, atan_f32),
    MathKernel("cbrt", 1, cbrt_f32, cbrt_f64),
    MathKernel("cos", 1, cos_f32, cos_f64),
    MathKernel("cosh", 1, cosh_f32),
    MathKernel("erf", 1, erf_f32),
    MathKernel("erfc", 1, erfc_f32),
    MathKernel("exp", 1, exp_f32, exp_f64, exp_fast),
    MathKernel("exp10", 1, exp10_f32),
    MathKernel("exp2", 1, exp2_f32),
    MathKernel("expm1", 1, expm1_f32),
    MathKernel("hypot", 2, hypot_f32, hypot_f64),
    MathKernel("log", 1, log_f32, log_f64, log_fast),
    MathKernel("log10", 1, log10_f32),
    MathKernel("log1p", 1, log1p_f32),
    MathKernel("log2", 1, log2_f32),
    MathKernel("pow", 2, pow_f32),
    MathKernel("rsqrt", 1, rsqrt_f32, rsqrt_f64),
    MathKernel("sigmoid", 1, sigmoid_f32, sigmoid_f64, sigmoid_fast),
    MathKernel("sin", 1, sin_f32, sin_f64),
    MathKernel("sinh", 1, sinh_f32),
    MathKernel("tan", 1, tan_f32, tan_f64),
    MathKernel("tanh", 1, tanh_f32, tanh_f64, tanh_fast),
)}

__all__ = ["KERNELS", "MathKernel"]
