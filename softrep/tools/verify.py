"""`python -m softrep verify FUNC [--exhaustive | --hash] [--backend cpu|cuda] [--sample N]`.

(float64: `--dtype float64 --sample N`, softrep/tools/verify_f64.py.)

Checks that softrep.FUNC on float32 tensors returns the correctly rounded
result, against references that share nothing with softrep/algorithms/math:

1. **A float64 reference** (the platform libm through Numba: glibc's `exp`,
   `log1p`, `pow`, `hypot`, ...; cbrt: one Newton step in double-double from
   numpy's cbrt) **with a measured error bound**.  Nobody documents a bound
   for these functions, so none is assumed: `measure_reference` compares the
   float64 reference with MPFR on every committed hard case, both ends of every
   binade and random inputs in every binade (pairs: every binade combination),
   and the result, with the libc version, the machine and the input count, is
   recorded in `softrep/tools/data/libm_reference_errors.json`.  The window
   used is K = max(16, 8 E) float64 ulps (E the measured maximum error,
   K a power of two), so the measured error is used at most to 1/8.  On a
   platform whose libc or machine differs from the recorded one the verifier
   measures the reference there first (`reference_bound`).  The true value then
   lies in [r - w, r + w] with w = max(K |r| 2^-52, K 2^-1074) (a relative
   window is at least K ulps of the exact value; the absolute term covers
   float64 subnormal results, where an ulp error is absolute).  Where both
   ends round to the same float32 that is the answer (float32 rounding is
   monotone); a float64 result of +-inf is an overflow beyond 2^1024 and rounds
   to +-inf in float32; NaN means NaN.
2. **MPFR** (gmpy2) for every input the first step cannot decide, every input
   whose value is within 2^-20 float32 ulp (plus the window) of a float32
   rounding boundary -- a midpoint, or the overflow threshold FLT_MAX + ulp/2
   (FLT_MAX (1 + 2^-25)) -- every input whose float64 result is a zero unless
   the reference declares the function positive (the sign of zero matters:
   log(1), tanh(-0)), every input the float64 reference says softrep misrounds
   (so a wrong reference cannot produce a false "misrounded"), and SPOT_CHECKS
   pseudo-random inputs of every chunk.  At every MPFR input the float64
   reference's own error is measured too: an error beyond the window is a
   *reference violation*, reported, and the run does not count as a proof
   (the window's assumption failed, so inputs it decided are unproven).
   MPFR evaluates the reference expression at precision p with a stated
   relative error of at most 2^(c - p); Ziv's loop raises p until the whole
   error interval rounds to one float32 (exact integer rounding, subnormals
   and overflow included, `round_to_f32`).

The output is compared bit for bit (NaN must be the canonical 0x7FC00000).
Inputs whose exact value is within 2^-20 ulp of a rounding boundary are "hard
cases"; `--exhaustive` saves them to tests/data/mathlib_hard_cases/<name>.txt,
which the sampled CI tests replay.  pow and hypot take two arguments: they are
checked on pairs (`pair_inputs`: special pairs, the saved hard cases, random
pairs in every combination of signs and binades, pairs with results in range),
never exhaustively.

`--hash` recomputes the SHA-256 of the function's float32 outputs over all
2^32 inputs (`hash_inputs`; CPU backend) and compares it with
`softrep/tools/data/mathlib_output_sha256.json`, so that a proof made on one
version of the code carries over to a later one with the same outputs.
"""

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from numba import njit, prange

from ..ops.backend import selected
from ..primitives.jit import bitcast

HARD_ULPS = 2.0**-20  # "hard case": within this many float32 ulps of a rounding boundary
CHUNK = 1 << 24
SPOT_CHECKS = 32  # inputs per chunk whose float64 reference is compared with MPFR
WINDOW_MARGIN = 8  # the window is at least this many times the measured reference error
MIN_WINDOW_ULPS = 16
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
REFERENCE_ERROR_FILE = os.path.join(DATA_DIR, "libm_reference_errors.json")
HASH_FILE = os.path.join(DATA_DIR, "mathlib_output_sha256.json")
HARD_CASE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "tests", "data", "mathlib_hard_cases")

OK, MISROUNDED, ASK_MPFR = 0, 1, 2


@dataclass
class Reference:
    libm: object  # numba njit function float64 [, float64] -> float64
    mpfr: object  # callable(gmpy2.mpfr x [, y]) -> mpfr, evaluated in the current gmpy2 context
    mpfr_error: int = 0  # c: relative error of `mpfr` <= 2^(c - precision); 0 = correctly rounded
    arity: int = 1
    # The function is > 0 for every finite input (a mathematical fact, not a
    # property of the code under test).  A float64 result of exactly 0 then means
    # an exact value in (0, K 2^-1074], which rounds to +0 in float32: no MPFR call
    # is needed for the sign of zero (erfc on [26.5, 256): MPFR spends up to
    # 3 ms per input there, 28 million inputs), and the window is clipped at 0.
    positive: bool = False
    description: str = ""  # what the float64 reference is, for the report
    # Optional: (xs, ys) -> +1 / -1 per input, the sign of the exact value wherever it
    # can be zero or round to zero (a mathematical fact: pow's sign).  A float64
    # result of 0 then decides a zero of that sign without MPFR.
    zero_sign: object = None


# --------------------------------------------------------------------------- references


@njit(cache=True)
def _libm_exp(x):
    return math.exp(x)


@njit(cache=True)
def _libm_exp2(x):
    return math.pow(2.0, x)


@njit(cache=True)
def _libm_exp10(x):
    return math.pow(10.0, x)


@njit(cache=True)
def _libm_expm1(x):
    return math.expm1(x)


@njit(cache=True)
def _libm_log(x):
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return math.nan
    return math.log(x)


@njit(cache=True)
def _libm_log2(x):
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return math.nan
    return math.log2(x)


@njit(cache=True)
def _libm_log10(x):
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return math.nan
    return math.log10(x)


@njit(cache=True)
def _libm_log1p(x):
    if x == -1.0:
        return -math.inf
    if x < -1.0:
        return math.nan
    return math.log1p(x)


@njit(cache=True)
def _libm_sinh(x):
    return math.sinh(x)


@njit(cache=True)
def _libm_cosh(x):
    return math.cosh(x)


@njit(cache=True)
def _libm_tanh(x):
    return math.tanh(x)


@njit(cache=True)
def _libm_sigmoid(x):
    # e^-x overflows float64 below x = -709.8 while sigmoid(x) ~ e^x is still a
    # float64 subnormal down to -745: for x < 0 the form e^x / (1 + e^x) keeps it
    if x < 0.0:
        e = math.exp(x)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(-x))


def _mp(name):
    import gmpy2

    return getattr(gmpy2, name)


def _mp_sigmoid(x):
    import gmpy2

    # three operations rounded to nearest at precision p, no cancellation: < 2^(2 - p)
    return 1 / (1 + gmpy2.exp(-x))


@njit(cache=True)
def _libm_sin(x):
    return math.sin(x)


@njit(cache=True)
def _libm_cos(x):
    return math.cos(x)


@njit(cache=True)
def _libm_tan(x):
    return math.tan(x)


@njit(cache=True)
def _libm_atan(x):
    return math.atan(x)


@njit(cache=True)
def _libm_erf(x):
    return math.erf(x)


@njit(cache=True)
def _libm_erfc(x):
    return math.erfc(x)


@njit(cache=True)
def _libm_rsqrt(x):
    # IEEE 754 rSqrt: +-0 -> +-inf, negative -> NaN
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x < 0.0:
        return math.nan
    return 1.0 / math.sqrt(x)


_SPLITTER = 134217729.0  # 2^27 + 1: Veltkamp's split of a double into two 26-bit halves


@njit(cache=True)
def _two_product(a, b):
    """(p, e) with p + e = a b exactly (Dekker; |a|, |b| far from overflow, |ab| far
    above 2^-969).  Numba does not contract a*b+c into an fma unless fastmath is on."""
    p = a * b
    c = _SPLITTER * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLITTER * b
    bh = c - (c - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


@njit(cache=True)
def _libm_cbrt(x):
    """cbrt in float64 within about half an ulp.  np.cbrt in Numba is not libm's
    cbrt (measured: up to 2.6 ulps), so one Newton step y0 - (y0^3 - x)/(3 y0^2) in
    double-double arithmetic follows: the relative error e of y0 becomes about e^2
    (< 2^-100), y0^3 - x is evaluated exactly up to 2^-105 |x| (y0^2 and
    y0^2 * y0 as exact products, c_hi - x exact by Sterbenz's lemma since
    c_hi / x is within 2^-49 of 1), and the correction, about e |y0|, carries a
    relative error of a few 2^-53: the result is within 0.5 ulp + 2^-46 ulp.
    The float32 inputs keep every intermediate far from overflow and underflow
    (2^-50 <= |y0| <= 2^43)."""
    y0 = np.cbrt(x)
    if x == 0.0 or not math.isfinite(x):
        return y0
    s_hi, s_lo = _two_product(y0, y0)
    c_hi, c_lo = _two_product(s_hi, y0)
    residual = ((c_hi - x) + c_lo) + s_lo * y0
    return y0 - residual / (3.0 * s_hi)


@njit(cache=True)
def _libm_pow(x, y):
    return math.pow(x, y)


@njit(cache=True)
def _libm_hypot(x, y):
    return math.hypot(x, y)


def _mp_rsqrt(x):
    import gmpy2

    # MPFR's rec_sqrt(-0) is +inf; IEEE 754 (and softrep, torch) give -inf
    return gmpy2.rec_sqrt(x) if not gmpy2.is_zero(x) else 1 / x


def _pow_sign(xs, ys):
    """The sign of x^y: negative exactly when x is negative (-0 and -inf included) and
    y an odd integer (C99 Annex F / IEEE 754 pow); NaN inputs give NaN, never 0."""
    with np.errstate(invalid="ignore"):
        y = ys.astype(np.float64)
        odd = np.isfinite(y) & (np.floor(y) == y) & (np.abs(y) < 2.0**53) & (np.fmod(y, 2.0) != 0)
    return np.where(np.signbit(xs) & odd, -1.0, 1.0)


def _mp_pow(x, y):
    return x ** y  # mpfr_pow: the C99 Annex F / IEEE 754 pow special cases


def _libm(desc, fn, mp, **kw):
    return Reference(fn, mp, description=desc, **kw)


REFERENCES = {
    "exp": _libm("libm exp", _libm_exp, _mp("exp"), positive=True),
    "exp2": _libm("libm pow(2, x)", _libm_exp2, _mp("exp2"), positive=True),
    "exp10": _libm("libm pow(10, x)", _libm_exp10, _mp("exp10"), positive=True),
    "expm1": _libm("libm expm1", _libm_expm1, _mp("expm1")),
    "log": _libm("libm log", _libm_log, _mp("log")),
    "log2": _libm("libm log2", _libm_log2, _mp("log2")),
    "log10": _libm("libm log10", _libm_log10, _mp("log10")),
    "log1p": _libm("libm log1p", _libm_log1p, _mp("log1p")),
    "sinh": _libm("libm sinh", _libm_sinh, _mp("sinh")),
    "cosh": _libm("libm cosh", _libm_cosh, _mp("cosh"), positive=True),
    "tanh": _libm("libm tanh", _libm_tanh, _mp("tanh")),
    "sigmoid": _libm("libm exp: e^x / (1 + e^x), x < 0; 1 / (1 + e^-x)", _libm_sigmoid, _mp_sigmoid,
                     mpfr_error=2, positive=True),
    "sin": _libm("libm sin", _libm_sin, _mp("sin")),
    "cos": _libm("libm cos", _libm_cos, _mp("cos")),
    "tan": _libm("libm tan", _libm_tan, _mp("tan")),
    "atan": _libm("libm atan", _libm_atan, _mp("atan")),
    "erf": _libm("libm erf", _libm_erf, _mp("erf")),
    "erfc": _libm("libm erfc", _libm_erfc, _mp("erfc"), positive=True),
    "rsqrt": _libm("1 / libm sqrt", _libm_rsqrt, _mp_rsqrt),
    "cbrt": _libm("numpy cbrt + a double-double Newton step", _libm_cbrt, _mp("cbrt")),
    "pow": _libm("libm pow", _libm_pow, _mp_pow, arity=2, zero_sign=_pow_sign),
    # hypot >= 0, and 0 only at (+-0, +-0), where it is +0: "positive" decides as for > 0
    "hypot": _libm("libm hypot", _libm_hypot, _mp("hypot"), arity=2, positive=True),
}


@njit(parallel=True, cache=True)
def _evaluate1(libm, xs):
    r = np.empty(xs.size, np.float64)
    for i in prange(xs.size):
        r[i] = libm(np.float64(xs[i]))
    return r


@njit(parallel=True, cache=True)
def _evaluate2(libm, xs, ys):
    r = np.empty(xs.size, np.float64)
    for i in prange(xs.size):
        r[i] = libm(np.float64(xs[i]), np.float64(ys[i]))
    return r


def evaluate_reference(ref, args):
    """The float64 reference at every input (args: one float32 array per argument)."""
    if ref.arity == 1:
        return _evaluate1(ref.libm, args[0])
    return _evaluate2(ref.libm, args[0], args[1])


# --------------------------------------------------------------------------- the reference's measured error


def platform_key():
    """The libc (name and version) and the machine: what a float64 libm's results depend on."""
    libc, version = platform.libc_ver()
    return f"{libc or 'unknown libc'} {version}".strip(), platform.machine()


@dataclass
class Bound:
    """The error window used for one float64 reference, and what it rests on."""

    ulps: int  # K: the window, in float64 ulps
    measured_ulps: float  # E: the maximum error measured against MPFR
    worst_input: list  # the input bits (one per argument) where E was measured
    inputs: int  # how many inputs the measurement covered
    libc: str
    machine: str
    recorded: bool  # True: read from REFERENCE_ERROR_FILE; False: measured in this process

    def describe(self):
        source = ("recorded in softrep/tools/data/libm_reference_errors.json" if self.recorded
                  else "measured now on this platform")
        return (f"window {self.ulps} float64 ulps; measured maximum error of the float64 reference "
                f"{self.measured_ulps:.3f} ulps over {self.inputs} inputs ({self.libc}, {self.machine}; {source})")


def window_for(measured_ulps):
    """K = max(16, 8 E) rounded up to a power of two."""
    need = max(MIN_WINDOW_ULPS, WINDOW_MARGIN * measured_ulps)
    if not math.isfinite(need):
        raise ValueError(f"the float64 reference has an unbounded measured error ({measured_ulps})")
    return 1 << max(0, math.ceil(math.log2(need)))


_BOUNDS = {}


def load_reference_errors():
    if not os.path.exists(REFERENCE_ERROR_FILE):
        return {"functions": {}}
    with open(REFERENCE_ERROR_FILE) as f:
        return json.load(f)


def reference_bound(name, progress=False):
    """The window for REFERENCES[name]: from the recorded measurement if it was made on
    this libc and machine, else measured now (and kept for this process)."""
    if name in _BOUNDS:
        return _BOUNDS[name]
    libc, machine = platform_key()
    data = load_reference_errors()
    entry = data["functions"].get(name)
    if entry is not None and data.get("libc") == libc and data.get("machine") == machine:
        bound = Bound(entry["window_ulps"], entry["max_ulps"], entry["worst_input"], entry["inputs"],
                      libc, machine, True)
        if bound.ulps < window_for(bound.measured_ulps):
            raise ValueError(f"{REFERENCE_ERROR_FILE}: {name}: window {bound.ulps} ulps is narrower than "
                             f"{WINDOW_MARGIN} x the measured error {bound.measured_ulps}")
    else:
        recorded = f"{data.get('libc')} on {data.get('machine')}" if entry is not None else "none"
        print(f"verify: measuring the float64 reference of {name} on {libc}, {machine} "
              f"(recorded: {recorded})", file=sys.stderr)
        m = measure_reference(name, progress=progress)
        bound = Bound(window_for(m["max_ulps"]), m["max_ulps"], m["worst_input"], m["inputs"],
                      libc, machine, False)
    _BOUNDS[name] = bound
    return bound


_F64_OVERFLOW = Fraction(2**1024 - 2**970)  # 2^1024 (1 - 2^-54): at or beyond, float64 rounds to inf


def _F64_OVERFLOW_MP(gmpy2):
    return gmpy2.mpfr(2**1024 - 2**970)


def f64_error_ulps(r, value):
    """Error of the float64 r against the exact value, in float64 ulps of the value.
    value: a Fraction, or a float NaN/+-inf for an exact NaN/infinity.  A float64
    +-inf is exact for values at or beyond 2^1024 (1 - 2^-54) (it is their
    correct rounding) and counts as +-2^1024 otherwise; ulps of values below
    2^-1022 are 2^-1074."""
    if isinstance(value, float):
        if math.isnan(value):
            return 0.0 if math.isnan(r) else math.inf
        return 0.0 if r == value else math.inf
    if math.isnan(r):
        return math.inf
    q = value
    if math.isinf(r):
        if (r > 0) == (q > 0) and abs(q) >= _F64_OVERFLOW:
            return 0.0
        rr = Fraction(int(math.copysign(1, r)) * 2**1024)
    else:
        rr = Fraction(r)
    if q == 0:
        return float(abs(rr) * 2**1074)
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2^(e-1) < a < 2^(e+1)
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** max(e - 52, -1074)
    return float(abs(rr - q) / ulp)


def _mp_error_ulps(gmpy2, r, v):
    """f64_error_ulps with v an mpfr (precision >= 160): fast enough for 10^5 inputs."""
    if gmpy2.is_nan(v):
        return 0.0 if math.isnan(r) else math.inf
    if math.isnan(r):
        return math.inf
    if gmpy2.is_infinite(v):
        return 0.0 if r == float(v) else math.inf
    if math.isinf(r):
        # correct iff v, of the same sign, is at or beyond the float64 overflow threshold
        if (r > 0) == (v > 0) and abs(v) >= _F64_OVERFLOW_MP(gmpy2):
            return 0.0
        rr = gmpy2.mpfr(math.copysign(1.0, r)) * gmpy2.exp2(1024)
    else:
        rr = gmpy2.mpfr(r)
    if gmpy2.is_zero(v):
        return float(abs(rr) * gmpy2.exp2(1074))
    ulp_exp = max(gmpy2.get_exp(v) - 53, -1074)  # v in [2^(e-1), 2^e)
    return float(gmpy2.mul_2exp(abs(rr - v), -ulp_exp))


def measurement_inputs(name, per_binade=512, seed=0):
    """The inputs on which the float64 reference is measured: the special values
    (both ends of every binade), every saved hard case and `per_binade` random
    inputs in every binade of both signs (one argument); for two arguments see
    `pair_inputs`."""
    ref = REFERENCES[name]
    if ref.arity == 2:
        return pair_inputs(name, random_pairs=2**16, seed=seed)
    rng = np.random.Generator(np.random.PCG64(seed))
    exps = np.repeat(np.arange(255, dtype=np.uint32), per_binade)  # biased exponents 0 .. 254
    mant = rng.integers(0, 1 << 23, size=exps.size, dtype=np.uint32)
    sign = rng.integers(0, 2, size=exps.size, dtype=np.uint32) << np.uint32(31)
    random = (sign | (exps << np.uint32(23)) | mant).view(np.float32)
    return (np.concatenate([special_inputs(), load_hard_cases(name).view(np.float32), random]),)


def measure_reference(name, args=None, progress=False):
    """Maximum error of REFERENCES[name].libm against MPFR (precision 192) over
    `measurement_inputs(name)`, in float64 ulps."""
    import gmpy2
    from tqdm import tqdm

    ref = REFERENCES[name]
    args = measurement_inputs(name) if args is None else tuple(np.asarray(a, np.float32) for a in args)
    r = evaluate_reference(ref, args)
    worst, worst_i = -1.0, 0
    ctx = gmpy2.context(precision=192, emin=-(1 << 30), emax=1 << 30)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs
        cols = [a.astype(np.float64).tolist() for a in args]
    with gmpy2.context(ctx):
        for i in tqdm(range(r.size), disable=not progress, desc=f"measure {name}", unit="x", unit_scale=True):
            v = ref.mpfr(*(gmpy2.mpfr(c[i]) for c in cols))
            err = _mp_error_ulps(gmpy2, float(r[i]), v)
            if err > worst:
                worst, worst_i = err, i
    return {"max_ulps": worst, "inputs": int(r.size),
            "worst_input": [f"0x{int(a[worst_i:worst_i + 1].view(np.uint32)[0]):08x}" for a in args]}


def record_reference_errors(names, progress=True):
    """Measure the references and write REFERENCE_ERROR_FILE (entries of other
    functions are kept when they were measured on the same platform)."""
    import gmpy2

    libc, machine = platform_key()
    data = load_reference_errors()
    if data.get("libc") != libc or data.get("machine") != machine:
        data = {"functions": {}}
    data.update({
        "description": "Maximum error of the float64 references of softrep/tools/verify.py against "
                       "MPFR, in float64 ulps of the exact value, and the window the verifier uses "
                       "(max(16, 8 x max_ulps), a power of two).  Written by "
                       "`python -m softrep verify FUNC --measure-reference`.",
        "libc": libc, "machine": machine, "numpy": np.__version__,
        "numba": __import__("numba").__version__, "mpfr": gmpy2.mpfr_version(),
    })
    for name in names:
        start = time.perf_counter()
        m = measure_reference(name, progress=progress)
        m["window_ulps"] = window_for(m["max_ulps"])
        m["seconds"] = round(time.perf_counter() - start, 1)
        data["functions"][name] = m
        data["functions"] = dict(sorted(data["functions"].items()))
        os.makedirs(DATA_DIR, exist_ok=True)
        with open(REFERENCE_ERROR_FILE, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        _BOUNDS.pop(name, None)
        print(f"{name}: max error {m['max_ulps']:.4f} ulps over {m['inputs']} inputs "
              f"(worst at {' '.join(m['worst_input'])}), window {m['window_ulps']} ulps, {m['seconds']} s")
    return data


# --------------------------------------------------------------------------- exact float32 rounding


_F32_MAX = Fraction((2**24 - 1) * 2**104)
_F32_OVERFLOW = Fraction((2**25 - 1) * 2**103)  # FLT_MAX + ulp/2: at or above, rounds to inf
_F32_MAX_ULP = Fraction(2**104)


def round_to_f32(q):
    """Round the exact rational q (Fraction) to the nearest float32, ties to even;
    subnormals and overflow included.  Returns a numpy float32 (zero: +0)."""
    if q == 0:
        return np.float32(0.0)
    sign = -1 if q < 0 else 1
    a = abs(q)
    if a >= _F32_OVERFLOW:
        return np.float32(sign * np.inf)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2^e <= a < 2^(e+2) roughly
    if Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)  # subnormals share the exponent of the smallest normal binade
    scale = Fraction(2) ** (23 - e)  # a * scale in [2^23, 2^24) for normal a
    m = a * scale
    n = m.numerator // m.denominator
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    value = Fraction(n) / scale
    return np.float32(sign * float(value))  # value is a float32, exact in float64


def _mpfr_value(ref, xs, precision):
    import gmpy2

    ctx = gmpy2.context(precision=precision, emin=-(1 << 30), emax=1 << 30)
    with gmpy2.context(ctx):
        args = [gmpy2.mpfr(float(x)) for x in xs]  # exact: precision >= 53
        gmpy2.get_context().clear_flags()
        v = ref.mpfr(*args)
        # no operation was inexact: v is the exact value (e.g. exp2(-150) = 2^-150, a midpoint)
        return v, not gmpy2.get_context().inexact


def mpfr_decide(name, *xs):
    """(correctly rounded float32, distance of the exact value to the nearest float32
    rounding boundary in ulps or None, the value) for FUNC(*xs), by Ziv's loop on
    the MPFR evaluation.  The value is a Fraction within 2^-90 relatively of the
    exact one, or a float NaN / +-inf (a NaN result, or an overflow beyond
    2^(2^30)); a zero keeps MPFR's sign in the float32."""
    import gmpy2

    ref = REFERENCES[name]
    precision = 96
    while precision <= 8192:
        v, exact = _mpfr_value(ref, xs, precision)
        if gmpy2.is_nan(v):
            return np.float32(np.nan), None, math.nan
        if gmpy2.is_infinite(v):
            return np.float32(float(v)), None, float(v)
        if gmpy2.is_zero(v):
            return np.float32(float(v)), None, Fraction(0)  # keeps the sign of zero
        num, den = v.as_integer_ratio()
        q = Fraction(int(num), int(den))
        err = 0 if exact else abs(q) * Fraction(1, 2 ** (precision - max(ref.mpfr_error, 1)))
        lo, hi = round_to_f32(q - err), round_to_f32(q + err)
        if lo.view(np.uint32) == hi.view(np.uint32):
            return lo, _midpoint_distance(q, lo), q
        precision *= 2
    raise RuntimeError(f"{name}{tuple(map(float, xs))}: MPFR could not decide the rounding "
                       "(an exact float32 midpoint?)")


def mpfr_f32(name, *xs):
    """The correctly rounded float32 value of FUNC(*xs) and the exact value's distance
    to the nearest float32 rounding boundary in ulps (None when the result is 0 or
    NaN, or the value infinite)."""
    f32, dist, _ = mpfr_decide(name, *xs)
    return f32, dist


def _midpoint_distance(q, r):
    """Distance of q to the nearest float32 rounding boundary around r, in ulps of r.
    For r = +-inf the boundary is the overflow threshold FLT_MAX + ulp/2, in ulps of
    FLT_MAX."""
    a = abs(q)
    if not np.isfinite(r):
        d = abs(a - _F32_OVERFLOW) / _F32_MAX_ULP
        return float(d) if d < 2**60 else math.inf
    ra = abs(r)
    with np.errstate(over="ignore"):
        up = np.nextafter(ra, np.float32(np.inf))
    up = Fraction(2**128) if not np.isfinite(up) else Fraction(float(up))
    down = Fraction(float(np.nextafter(ra, np.float32(0)))) if ra > 0 else -Fraction(2**-149)
    fr = Fraction(float(ra))
    ulp = up - fr
    d = min(abs(a - (fr + up) / 2), abs(a - (fr + down) / 2))
    return float(d / ulp)


# --------------------------------------------------------------------------- classification (numba)


_OVERFLOW_THRESHOLD = float(_F32_OVERFLOW)  # exact in float64 (25 significant bits)


@njit(cache=True)
def _f32_bits_equal(a, b):
    return bitcast(np.float32(a)) == bitcast(np.float32(b))


@njit(parallel=True, cache=True)
def _classify(r, got, rel, floor, hard_ulps, positive, zero_sign):
    """Per input, from the float64 reference r: OK, MISROUNDED, or ASK_MPFR.  The
    exact value lies within w = max(|r| rel, floor) of r (rel = K 2^-52,
    floor = K 2^-1074); for a positive function also at or above 0.  A zero r
    decides a zero of sign zero_sign[i] (+-1), or asks MPFR (0)."""
    n = r.size
    status = np.empty(n, np.uint8)
    for i in prange(n):
        ri = r[i]
        if ri != ri:
            status[i] = OK if bitcast(got[i]) == np.uint32(0x7FC00000) else MISROUNDED
            continue
        if ri == np.inf or ri == -np.inf:
            status[i] = OK if _f32_bits_equal(got[i], np.float32(ri)) else MISROUNDED
            continue
        if ri == 0.0:
            # |exact value| <= K 2^-1074: a zero in float32, of the known sign if any
            if zero_sign[i] > 0.0:
                status[i] = OK if bitcast(got[i]) == np.uint32(0) else MISROUNDED
            elif zero_sign[i] < 0.0:
                status[i] = OK if bitcast(got[i]) == np.uint32(0x80000000) else MISROUNDED
            else:
                status[i] = ASK_MPFR  # the sign of zero is MPFR's to decide
            continue
        w = max(abs(ri) * rel, floor)
        low = ri - w
        if positive and low < 0.0:
            low = 0.0
        lo = np.float32(low)
        hi = np.float32(ri + w)
        if bitcast(lo) != bitcast(hi):
            status[i] = ASK_MPFR
            continue
        # distance of r to the nearest float32 rounding boundary (a midpoint, or the
        # overflow threshold); near ones go to MPFR
        ra = abs(ri)
        ua = bitcast(np.float32(abs(lo)))
        if ua >= np.uint32(0x7F800000):
            if ra - _OVERFLOW_THRESHOLD <= 2.0**104 * hard_ulps + 2.0 * w:
                status[i] = ASK_MPFR
                continue
        else:
            fa = np.float64(abs(lo))
            up = np.float64(bitcast(np.uint32(ua + np.uint32(1))))
            if ua == np.uint32(0x7F7FFFFF):
                up = 2.0**128
            down = np.float64(bitcast(np.uint32(ua - np.uint32(1)))) if ua > 0 else -(2.0**-149)
            ulp = up - fa
            d = min(abs(ra - (fa + up) * 0.5), abs(ra - (fa + down) * 0.5))
            if d <= ulp * hard_ulps + 2.0 * w:
                status[i] = ASK_MPFR
                continue
        status[i] = OK if _f32_bits_equal(got[i], lo) else MISROUNDED
    return status


def classify(name, args, got, bound=None):
    """`_classify` for REFERENCES[name] at the inputs `args` with the outputs `got`."""
    ref = REFERENCES[name]
    k = (bound or reference_bound(name)).ulps
    r = evaluate_reference(ref, args)
    if ref.positive:
        zero_sign = np.ones(r.size)
    elif ref.zero_sign is not None:
        zero_sign = np.ascontiguousarray(ref.zero_sign(*args), np.float64)
    else:
        zero_sign = np.zeros(r.size)
    return _classify(r, got, k * 2.0**-52, k * 2.0**-1074, HARD_ULPS, ref.positive, zero_sign), r


# --------------------------------------------------------------------------- driver


@dataclass
class Result:
    name: str
    checked: int = 0
    misrounded: int = 0
    mpfr_calls: int = 0
    seconds: float = 0.0
    examples: list = field(default_factory=list)  # (input bits tuple, got bits, correctly rounded bits)
    hard: list = field(default_factory=list)  # (input bits tuple, result bits, distance in ulps)
    bound: Bound = None
    reference_checked: int = 0  # inputs where the float64 reference was compared with MPFR
    reference_max_ulps: float = 0.0
    reference_violations: list = field(default_factory=list)  # (input bits tuple, float64 result, error ulps)

    @property
    def proven(self):
        return self.misrounded == 0 and not self.reference_violations


def _kernel_output(name, xs, backend, ys=None):
    import torch

    import softrep.ops.math as M

    args = (xs,) if ys is None else (xs, ys)
    with selected(backend):
        out = M.FUNCTIONS[name].op(*(torch.from_numpy(np.ascontiguousarray(a, np.float32)) for a in args))
    return out.numpy()


def _bits(a, i):
    return int(a[i:i + 1].view(np.uint32)[0])


def _spot_indices(n, offset):
    """SPOT_CHECKS pseudo-random indices below n, different for every chunk (offset)."""
    if n == 0:
        return np.zeros(0, np.int64)
    rng = np.random.Generator(np.random.PCG64(offset))
    return rng.integers(0, n, size=min(n, SPOT_CHECKS))


def check_inputs(name, xs, backend="cpu", result=None, ys=None):
    """Check softrep.<name> on the float32 array xs (and ys for two arguments);
    accumulate into `result`."""
    ref = REFERENCES[name]
    bound = reference_bound(name)
    result = result or Result(name)
    result.bound = bound
    args = tuple(np.ascontiguousarray(a, dtype=np.float32) for a in ((xs,) if ref.arity == 1 else (xs, ys)))
    got = np.ascontiguousarray(_kernel_output(name, args[0], backend, ys=args[1] if ref.arity == 2 else None))
    status, r = classify(name, args, got, bound)
    # MPFR decides every input the window did not settle, every input the float64
    # reference calls misrounded, and the spot checks
    todo = np.union1d(np.flatnonzero(status != OK), _spot_indices(got.size, result.checked))
    for i in todo:
        inputs = tuple(a[i] for a in args)
        expected, dist, value = mpfr_decide(name, *inputs)
        result.mpfr_calls += 1
        want = 0x7FC00000 if np.isnan(expected) else int(expected.view(np.uint32))
        status[i] = OK if _bits(got, i) == want else MISROUNDED
        err = f64_error_ulps(float(r[i]), value)
        result.reference_checked += 1
        result.reference_max_ulps = max(result.reference_max_ulps, err)
        if err > bound.ulps:
            result.reference_violations.append((tuple(_bits(a, i) for a in args), float(r[i]), err))
        if dist is not None and dist < HARD_ULPS:
            result.hard.append((tuple(_bits(a, i) for a in args), want, dist))
        if status[i] == MISROUNDED and len(result.examples) < 10:
            result.examples.append((tuple(_bits(a, i) for a in args), _bits(got, i), want))
    result.checked += got.size
    result.misrounded += int(np.count_nonzero(status == MISROUNDED))
    return result


# --------------------------------------------------------------------------- output hashes


PAIR_MULTIPLIER = 0x9E3779B1  # odd, so i -> i * PAIR_MULTIPLIER mod 2^32 is a permutation


def hash_inputs(arity, lo, hi):
    """The inputs number lo .. hi-1 of the hashed sequence.  One argument: the
    float32 whose bits are i, for i = 0 .. 2^32-1 (every float32, in bit order).
    Two arguments: x has the bits i, y the bits i * 0x9E3779B1 mod 2^32; the
    multiplier is odd, so every float32 occurs once as x and once as y."""
    i = np.arange(lo, hi, dtype=np.uint64)
    xs = i.astype(np.uint32).view(np.float32)
    if arity == 1:
        return (xs,)
    ys = ((i * np.uint64(PAIR_MULTIPLIER)) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    return xs, ys


def output_sha256(name, lo=0, hi=2**32, chunk=CHUNK, progress=False):
    """SHA-256 of softrep.<name>'s float32 outputs (CPU backend) over the inputs
    lo .. hi-1 of `hash_inputs`, as little-endian uint32 in input order.  Computed
    in chunks; the digest is that of the whole concatenated array."""
    from tqdm import tqdm

    import softrep.ops.math as M

    arity = M.FUNCTIONS[name].arity
    digest = hashlib.sha256()
    bar = tqdm(total=hi - lo, unit="x", unit_scale=True, disable=not progress, desc=f"hash {name}")
    for start in range(lo, hi, chunk):
        stop = min(start + chunk, hi)
        inputs = hash_inputs(arity, start, stop)
        out = _kernel_output(name, inputs[0], "cpu", ys=inputs[1] if arity == 2 else None)
        digest.update(np.ascontiguousarray(out).view(np.uint32).astype("<u4").tobytes())
        bar.update(stop - start)
    bar.close()
    return digest.hexdigest()


def load_hashes():
    with open(HASH_FILE) as f:
        return json.load(f)


def check_hash(name, progress=True):
    """(matches, computed digest, recorded digest or None)."""
    recorded = load_hashes()["sha256"].get(name)
    digest = output_sha256(name, progress=progress)
    return digest == recorded, digest, recorded


# --------------------------------------------------------------------------- inputs


def special_inputs():
    """Zeros, infinities, NaN, the subnormal and normal binade edges, and small integers."""
    bits = [0x00000000, 0x00000001, 0x00000002, 0x007FFFFF, 0x00800000, 0x00800001,
            0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF]
    for e in range(1, 255):  # both ends of every binade
        bits += [e << 23, (e << 23) | 0x7FFFFF]
    bits += [b | 0x80000000 for b in bits]
    vals = np.array(bits, dtype=np.uint32).view(np.float32)
    ints = np.arange(-160, 161, dtype=np.float32)
    halves = ints + np.float32(0.5)
    return np.concatenate([vals, ints, halves])


def special_pair_values():
    """Arguments of the special pairs: signed zeros, infinities, NaN, +-1, the
    subnormal and overflow edges, small integers and halves, and values near 1."""
    bits = [0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000,
            0x3F7FFFFF, 0x3F800000, 0x3F800001]
    vals = np.array(bits + [b | 0x80000000 for b in bits], dtype=np.uint32).view(np.float32)
    small = np.array([0.5, 1.5, 2, 2.5, 3, 4, 10, 0.25, 1 / 3, 24, 127, 128, 149, 150, 1e10, 3e38],
                     dtype=np.float32)
    return np.concatenate([vals, small, -small])


def pair_inputs(name, random_pairs=2**16, per_combination=1, seed=0):
    """(xs, ys) for a two-argument function: every pair of `special_pair_values`,
    the saved hard cases, `per_combination` random pairs in every combination of
    signs and binades (biased exponents 0 .. 254 for x and for y), and
    `random_pairs` pairs whose result is in range (x of any positive binade,
    |y log2 x| < 160, both signs of x and y)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    sv = special_pair_values()
    sx, sy = np.repeat(sv, sv.size), np.tile(sv, sv.size)
    hard = load_hard_cases(name)
    hx, hy = hard[:, 0].view(np.float32), hard[:, 1].view(np.float32)
    ex, ey = np.meshgrid(np.arange(255, dtype=np.uint32), np.arange(255, dtype=np.uint32), indexing="ij")
    ex = np.tile(np.repeat(ex.ravel(), per_combination), 4)
    ey = np.tile(np.repeat(ey.ravel(), per_combination), 4)
    n = ex.size
    signs = np.repeat(np.arange(4, dtype=np.uint32), n // 4)
    gx = (((signs & np.uint32(1)) << np.uint32(31)) | (ex << np.uint32(23))
          | rng.integers(0, 1 << 23, n, dtype=np.uint32))
    gy = (((signs >> np.uint32(1)) << np.uint32(31)) | (ey << np.uint32(23))
          | rng.integers(0, 1 << 23, n, dtype=np.uint32))
    # results in range: |x| = 2^u with u uniform in [-149, 128), y = t / u, t uniform in (-160, 160)
    u = rng.uniform(-149, 128, random_pairs)
    ax = np.exp2(u).astype(np.float32)
    ay = (rng.uniform(-160, 160, random_pairs) / np.where(np.abs(u) < 2.0**-20, 1.0, u)).astype(np.float32)
    ax = np.where(rng.integers(0, 2, random_pairs) == 1, -ax, ax).astype(np.float32)
    ay = np.where(rng.integers(0, 4, random_pairs) == 0, np.round(ay), ay).astype(np.float32)  # integers: x < 0 too
    xs = np.concatenate([sx, hx, gx.view(np.float32), ax])
    ys = np.concatenate([sy, hy, gy.view(np.float32), ay])
    return xs, ys


def load_hard_cases(name):
    """The inputs saved by an exhaustive (or pair) run, as uint32 bit patterns: an
    array (one argument) or an (n, 2) array (two arguments); empty if none."""
    arity = REFERENCES[name].arity if name in REFERENCES else 1
    path = os.path.join(HARD_CASE_DIR, f"{name}.txt")
    if not os.path.exists(path):
        return np.zeros((0,) if arity == 1 else (0, 2), np.uint32)
    with open(path) as f:
        rows = [line.split()[:arity] for line in f if line.strip() and not line.startswith("#")]
    out = np.array([[int(v, 16) for v in row] for row in rows], dtype=np.uint32).reshape(-1, arity)
    return out[:, 0] if arity == 1 else out


def save_hard_cases(result, source=None):
    """Write result.hard to tests/data/mathlib_hard_cases/<name>.txt; `source` says
    how the inputs were found (default: the exhaustive run)."""
    os.makedirs(HARD_CASE_DIR, exist_ok=True)
    path = os.path.join(HARD_CASE_DIR, f"{result.name}.txt")
    args = "input_bits" if REFERENCES[result.name].arity == 1 else "x_bits y_bits"
    source = source or f"found by `python -m softrep verify {result.name} --exhaustive`"
    with open(path, "w") as f:
        f.write(f"# {result.name}: float32 inputs whose exact value is within 2^-20 ulp of a rounding\n"
                f"# boundary ({source}).\n# {args}  correctly_rounded_bits  distance_in_ulps\n")
        for xb, rb, d in sorted(set(result.hard)):
            f.write(" ".join(f"0x{b:08x}" for b in xb) + f" 0x{rb:08x} {d:.3e}\n")
    return path


def run(name, exhaustive=False, backend="cpu", sample=None, seed=0, progress=True, save=None):
    """Verify one function; returns a `Result`."""
    from tqdm import tqdm

    if name not in REFERENCES:
        raise SystemExit(f"verify: no reference for {name!r}; known: {', '.join(sorted(REFERENCES))}")
    import softrep.ops.math as M

    if name not in M.FUNCTIONS:
        raise SystemExit(f"verify: softrep has no function {name!r}")
    ref = REFERENCES[name]
    if exhaustive and ref.arity != 1:
        raise SystemExit(f"verify: {name} takes two arguments; 2^64 pairs cannot be enumerated "
                         "(run it without --exhaustive: special pairs, hard cases, every binade combination)")
    result = Result(name)
    result.bound = reference_bound(name, progress=progress)
    start = time.perf_counter()
    if exhaustive:
        chunk = CHUNK if backend == "cpu" else 1 << 12
        bar = tqdm(total=2**32, unit="x", unit_scale=True, disable=not progress, desc=f"verify {name}")
        for lo in range(0, 2**32, chunk):
            xs = np.arange(lo, lo + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            check_inputs(name, xs, backend, result)
            bar.update(chunk)
            bar.set_postfix(misrounded=result.misrounded, hard=len(result.hard))
        bar.close()
    else:
        n = sample if sample is not None else (10**6 if backend == "cpu" else 2000)
        rng = np.random.Generator(np.random.PCG64(seed))
        if ref.arity == 1:
            xs = np.concatenate([special_inputs(), load_hard_cases(name).view(np.float32),
                                 rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)])
            ys = None
        else:
            px, py = pair_inputs(name, seed=seed) if backend == "cpu" else \
                pair_inputs(name, random_pairs=n // 2, per_combination=0, seed=seed)
            rand = rng.integers(0, 2**32, size=(2, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
            xs, ys = np.concatenate([px, rand[0]]), np.concatenate([py, rand[1]])
        bar = tqdm(total=xs.size, unit="x", unit_scale=True, disable=not progress, desc=f"verify {name}")
        step = CHUNK if backend == "cpu" else 1 << 10
        for lo in range(0, xs.size, step):
            check_inputs(name, xs[lo:lo + step], backend, result, ys=None if ys is None else ys[lo:lo + step])
            bar.update(min(step, xs.size - lo))
        bar.close()
    result.seconds = time.perf_counter() - start
    if save if save is not None else exhaustive:
        save_hard_cases(result)
    return result


def _fmt_inputs(bits):
    return ", ".join(f"0x{b:08x} ({np.uint32(b).view(np.float32)!r})" for b in bits)


def report(result):
    lines = [f"{result.name}: {result.checked} inputs checked, {result.misrounded} misrounded, "
             f"{len(result.hard)} hard cases (within 2^-20 ulp of a rounding boundary), "
             f"{result.mpfr_calls} MPFR evaluations, {result.seconds:.1f} s"]
    if result.bound is not None:
        lines.append(f"  reference {REFERENCES[result.name].description}: {result.bound.describe()}")
        lines.append(f"  reference checked against MPFR at {result.reference_checked} inputs of this run: "
                     f"max error {result.reference_max_ulps:.3f} ulps, "
                     f"{len(result.reference_violations)} beyond the window")
    for xb, gb, eb in result.examples:
        lines.append(f"  x = {_fmt_inputs(xb)}: got 0x{gb:08x}, correctly rounded 0x{eb:08x}")
    for xb, r, err in result.reference_violations[:10]:
        lines.append(f"  REFERENCE VIOLATION at x = {_fmt_inputs(xb)}: float64 reference {r!r} is "
                     f"{err:.3g} ulps off, beyond the window; this run proves nothing")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m softrep verify",
                                     description="Check a softrep math function against MPFR-backed references.")
    parser.add_argument("func", help="function name (e.g. exp), or 'all'")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--exhaustive", action="store_true", help="all 2^32 float32 inputs (one-argument functions)")
    mode.add_argument("--hash", action="store_true",
                      help="SHA-256 of the outputs over all 2^32 inputs, compared with the recorded one")
    mode.add_argument("--record-hash", action="store_true",
                      help="compute the output SHA-256 and write it to softrep/tools/data/mathlib_output_sha256.json")
    mode.add_argument("--measure-reference", action="store_true",
                      help="measure the float64 reference against MPFR and record it in "
                           "softrep/tools/data/libm_reference_errors.json")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="float64: sampled check against MPFR's correctly rounded binary64 results "
                             "(softrep/tools/verify_f64.py)")
    parser.add_argument("--worst-cases", metavar="FILE",
                        help="with --dtype float64: check every input of a worst-case list (CORE-MATH's .wc "
                             "format) instead of a sample")
    parser.add_argument("--save-hard-cases", type=int, metavar="N", default=0,
                        help="with --worst-cases: write the N inputs closest to a rounding boundary to "
                             "tests/data/mathlib_hard_cases_f64/FUNC.txt")
    parser.add_argument("--source", default=None, help="with --save-hard-cases: where the list comes from")
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--sample", type=int, default=None,
                        help="random inputs (default 10^6 on cpu, 2000 on cuda) besides special values "
                             "and the saved hard cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-save", action="store_true", help="do not rewrite the hard-case file")
    args = parser.parse_args(argv)
    import softrep.ops.math as M

    names = sorted(M.FUNCTIONS) if args.func == "all" else [args.func]
    if args.func != "all" and args.func not in M.FUNCTIONS:
        raise SystemExit(f"verify: softrep has no function {args.func!r}; known: {', '.join(sorted(M.FUNCTIONS))}")
    if args.dtype == "float64":
        return _main_f64(args, names)
    if args.hash or args.record_hash:
        return _main_hash(names, args.record_hash)
    names, skipped = plan(names, args.exhaustive)
    if args.func != "all" and skipped:
        raise SystemExit(f"verify: {args.func}: {skipped[args.func]}")
    for name, why in skipped.items():
        print(f"verify: skipped {name}: {why}")
    if args.measure_reference:
        record_reference_errors(names)
        return 0
    if args.backend == "cuda":
        _require_cuda_backend(args.exhaustive)
    failed = False
    for name in names:
        result = run(name, args.exhaustive, args.backend, args.sample, args.seed,
                     save=False if args.no_save else None)
        print(report(result))
        failed |= not result.proven
    return 1 if failed else 0


def _main_f64(args, names):
    """`--dtype float64`: the sampled float64 check (softrep/tools/verify_f64.py)."""
    from . import verify_f64

    if args.exhaustive or args.hash or args.record_hash or args.measure_reference:
        raise SystemExit("verify --dtype float64 takes --sample N only (2^64 inputs cannot be enumerated; "
                         "the reference is MPFR itself, so there is nothing to measure or hash)")
    import softrep.ops.math as M

    have = [n for n in names if M.FUNCTIONS[n].f64 is not None]
    if args.func != "all" and not have:
        raise SystemExit(f"verify: softrep.{args.func} has no float64 version yet")
    for n in names:
        if n not in have:
            print(f"verify: skipped {n}: no float64 version yet")
    if args.worst_cases:
        failed = False
        for name in have:
            result, dist, worst = verify_f64.check_worst_cases(
                name, args.worst_cases, keep=args.save_hard_cases or 1000, save=args.save_hard_cases > 0,
                source=args.source)
            print(verify_f64.report64(result))
            print(f"  closest to a rounding boundary: {dist:.3e} ulp at {worst}")
            failed |= not result.proven
        return 1 if failed else 0
    if args.backend == "cuda":
        _require_cuda_backend(exhaustive=False)
    return verify_f64.main64(have, args.sample, args.backend, args.seed, save=not args.no_save)


def _require_cuda_backend(exhaustive):
    from ..primitives.jit import SIMULATOR

    if not SIMULATOR:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("verify --backend cuda needs a GPU, or NUMBA_ENABLE_CUDASIM=1 for the simulator")
    if exhaustive and SIMULATOR:
        raise SystemExit("verify: --exhaustive on the simulator would take months; use --sample")


def plan(names, exhaustive):
    """(names to verify, {skipped name: reason}) -- `verify all` says what it leaves out."""
    skipped = {}
    for n in names:
        if n not in REFERENCES:
            skipped[n] = "no reference in softrep/tools/verify.py REFERENCES"
        elif exhaustive and REFERENCES[n].arity != 1:
            skipped[n] = "two arguments, 2^64 pairs: run it without --exhaustive (sampled pairs)"
    return [n for n in names if n not in skipped], skipped


def _main_hash(names, record):
    failed = False
    for name in names:
        start = time.perf_counter()
        if record:
            digest = output_sha256(name, progress=True)
            data = load_hashes() if os.path.exists(HASH_FILE) else {"sha256": {}}
            data["sha256"][name] = digest
            data["sha256"] = dict(sorted(data["sha256"].items()))
            with open(HASH_FILE, "w") as f:
                json.dump(data, f, indent=1)
                f.write("\n")
            print(f"{name}: {digest} recorded ({time.perf_counter() - start:.0f} s)")
            continue
        ok, digest, recorded = check_hash(name)
        verdict = "matches the recorded hash" if ok else \
            ("NO RECORDED HASH" if recorded is None else f"DIFFERS from the recorded {recorded}")
        print(f"{name}: output SHA-256 over all 2^32 inputs {digest} {verdict} "
              f"({time.perf_counter() - start:.0f} s)")
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
