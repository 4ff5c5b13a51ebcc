"""`python -m softrep verify FUNC [--exhaustive] [--backend cpu|cuda] [--sample N]`.

Checks that softrep.FUNC on float32 tensors returns the correctly rounded
result, against references that share nothing with softrep/math:

1. **Platform libm in float64** (`math.exp`, ... through Numba, i.e. glibc),
   with a stated error bound of K = 16 float64 ulps (glibc documents at most
   2-5 ulps for these functions; the bound leaves a wide margin).  The true
   value then lies in [r - K ulp(r), r + K ulp(r)] (computed as r -+ |r| K 2^-52,
   which is slightly wider).  Where both ends round to the same float32 that is
   the answer; float32 rounding is monotone.  A float64 result of +-inf is an
   overflow beyond 2^1024 and rounds to +-inf in float32; NaN means NaN.
2. **MPFR** (gmpy2), for every input the first step cannot decide, every input
   whose value is within 2^-20 float32 ulp (plus the libm window) of a float32
   rounding midpoint, and every input whose float64 result is an exact 0 for
   |x| < 256 (where the sign of zero matters: log(1), tanh(-0)) unless the
   reference declares the function positive (then the answer is +0).  MPFR
   evaluates the reference expression at precision p with a stated relative
   error of at most 2^(c - p); Ziv's loop raises p until the whole error
   interval rounds to one float32 (exact integer rounding, subnormals and
   overflow included, `round_to_f32`).

The output is compared bit for bit (NaN must be the canonical 0x7FC00000).
Inputs whose exact value is within 2^-20 ulp of a midpoint are "hard cases";
`--exhaustive` saves them to tests/data/mathlib_hard_cases/<name>.txt, which the
sampled CI tests replay.

References live in `REFERENCES` (name -> `Reference`): part 2 of the library
adds its entries there.
"""

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numba import njit, prange

from ..primitives.jit import bitcast

HARD_ULPS = 2.0**-20  # "hard case": within this many float32 ulps of a rounding midpoint
LIBM_ULPS = 16  # error bound assumed for the float64 platform libm, in float64 ulps
CHUNK = 1 << 24
HARD_CASE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "tests", "data", "mathlib_hard_cases")

OK, MISROUNDED, ASK_MPFR = 0, 1, 2


@dataclass
class Reference:
    libm: object  # numba njit function float64 -> float64 (platform libm)
    mpfr: object  # callable(gmpy2.mpfr x) -> mpfr, evaluated in the current gmpy2 context
    mpfr_error: int = 0  # c: relative error of `mpfr` <= 2^(c - precision); 0 = correctly rounded
    libm_ulps: int = LIBM_ULPS
    arity: int = 1
    # The function is > 0 for every finite input (a mathematical fact, not a
    # property of the code under test).  A float64 result of exactly 0 then means
    # an exact value in (0, 2^-1070), which rounds to +0 in float32: no MPFR call
    # is needed for the sign of zero.  (erfc on [26.5, 256): MPFR spends up to
    # 3 ms per input there, 28 million inputs.)
    positive: bool = False


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
    # exp (<= 1 ulp), 1 + t and the division (0.5 ulp each, no cancellation): < 3 ulps
    return 1.0 / (1.0 + math.exp(-x))


def _mp(name):
    import gmpy2

    return getattr(gmpy2, name)


def _mp_sigmoid(x):
    import gmpy2

    # three operations rounded to nearest at precision p, no cancellation: < 2^(2 - p)
    return 1 / (1 + gmpy2.exp(-x))


# Part 2 (sin, cos, tan, atan, erf, erfc, rsqrt, cbrt): glibc in float64, <= 1-5 ulps.
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
    # IEEE 754 rSqrt: +-0 -> +-inf, negative -> NaN; sqrt and the division: < 2 ulps
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x < 0.0:
        return math.nan
    return 1.0 / math.sqrt(x)


@njit(cache=True)
def _libm_cbrt(x):
    return np.cbrt(x)


def _mp_rsqrt(x):
    import gmpy2

    # MPFR's rec_sqrt(-0) is +inf; IEEE 754 (and softrep, torch) give -inf
    return gmpy2.rec_sqrt(x) if not gmpy2.is_zero(x) else 1 / x


REFERENCES = {
    "exp": Reference(_libm_exp, _mp("exp")),
    "exp2": Reference(_libm_exp2, _mp("exp2")),
    "exp10": Reference(_libm_exp10, _mp("exp10")),
    "expm1": Reference(_libm_expm1, _mp("expm1")),
    "log": Reference(_libm_log, _mp("log")),
    "log2": Reference(_libm_log2, _mp("log2")),
    "log10": Reference(_libm_log10, _mp("log10")),
    "log1p": Reference(_libm_log1p, _mp("log1p")),
    "sinh": Reference(_libm_sinh, _mp("sinh")),
    "cosh": Reference(_libm_cosh, _mp("cosh")),
    "tanh": Reference(_libm_tanh, _mp("tanh")),
    "sigmoid": Reference(_libm_sigmoid, _mp_sigmoid, mpfr_error=2),
    "sin": Reference(_libm_sin, _mp("sin")),
    "cos": Reference(_libm_cos, _mp("cos")),
    "tan": Reference(_libm_tan, _mp("tan")),
    "atan": Reference(_libm_atan, _mp("atan")),
    "erf": Reference(_libm_erf, _mp("erf")),
    "erfc": Reference(_libm_erfc, _mp("erfc"), positive=True),
    "rsqrt": Reference(_libm_rsqrt, _mp_rsqrt),
    "cbrt": Reference(_libm_cbrt, _mp("cbrt")),
}


# --------------------------------------------------------------------------- exact float32 rounding


_F32_MAX = Fraction((2**24 - 1) * 2**104)
_F32_OVERFLOW = Fraction((2**25 - 1) * 2**103)  # FLT_MAX + ulp/2: at or above, rounds to inf


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


def mpfr_f32(name, *xs):
    """The correctly rounded float32 value of FUNC(*xs) and the exact value's distance
    to the nearest float32 rounding midpoint in ulps (None when the result is 0, inf
    or NaN).  Ziv's loop on the MPFR evaluation."""
    import gmpy2

    ref = REFERENCES[name]
    precision = 96
    while precision <= 8192:
        v, exact = _mpfr_value(ref, xs, precision)
        if gmpy2.is_nan(v):
            return np.float32(np.nan), None
        if gmpy2.is_infinite(v):
            return np.float32(float(v)), None
        if gmpy2.is_zero(v):
            return np.float32(float(v)), None  # keeps the sign of zero
        num, den = v.as_integer_ratio()
        q = Fraction(int(num), int(den))
        err = 0 if exact else abs(q) * Fraction(1, 2 ** (precision - max(ref.mpfr_error, 1)))
        lo, hi = round_to_f32(q - err), round_to_f32(q + err)
        if lo.view(np.uint32) == hi.view(np.uint32):
            return lo, _midpoint_distance(q, lo)
        precision *= 2
    raise RuntimeError(f"{name}{tuple(map(float, xs))}: MPFR could not decide the rounding "
                       "(an exact float32 midpoint?)")


def _midpoint_distance(q, r):
    """Distance of q to the nearest float32 rounding midpoint around r, in ulps of r."""
    if not np.isfinite(r):
        return None
    a = abs(q)
    ra = abs(r)
    up = np.nextafter(ra, np.float32(np.inf))
    up = Fraction(2**128) if not np.isfinite(up) else Fraction(float(up))
    down = Fraction(float(np.nextafter(ra, np.float32(0)))) if ra > 0 else -Fraction(2**-149)
    fr = Fraction(float(ra))
    ulp = up - fr
    d = min(abs(a - (fr + up) / 2), abs(a - (fr + down) / 2))
    return float(d / ulp)


# --------------------------------------------------------------------------- classification (numba)


@njit(cache=True)
def _f32_bits_equal(a, b):
    return bitcast(np.float32(a)) == bitcast(np.float32(b))


@njit(parallel=True, cache=True)
def _classify(libm, xs, got, rel, hard_ulps, positive):
    """Per input: OK, MISROUNDED (decided by the float64 reference), or ASK_MPFR."""
    n = xs.size
    status = np.empty(n, np.uint8)
    for i in prange(n):
        x = np.float64(xs[i])
        r = libm(x)
        if r != r:
            status[i] = OK if bitcast(got[i]) == np.uint32(0x7FC00000) else MISROUNDED
            continue
        if r == np.inf or r == -np.inf:
            status[i] = OK if _f32_bits_equal(got[i], np.float32(r)) else MISROUNDED
            continue
        if r == 0.0 and positive:
            status[i] = OK if bitcast(got[i]) == np.uint32(0) else MISROUNDED
            continue
        if r == 0.0 and abs(x) < 256.0:
            status[i] = ASK_MPFR
            continue
        w = abs(r) * rel
        lo = np.float32(r - w)
        hi = np.float32(r + w)
        if bitcast(lo) != bitcast(hi):
            status[i] = ASK_MPFR
            continue
        # distance of r to the nearest float32 midpoint, in ulps; near ones go to MPFR
        ra = abs(r)
        fa = abs(np.float64(np.float32(r)))
        ua = bitcast(np.float32(fa))
        if ua < np.uint32(0x7F800000):
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


# --------------------------------------------------------------------------- driver


@dataclass
class Result:
    name: str
    checked: int = 0
    misrounded: int = 0
    mpfr_calls: int = 0
    seconds: float = 0.0
    examples: list = None
    hard: list = None  # (x bits, result bits, distance in ulps)


def _kernel_output(name, xs, backend):
    import torch

    import softrep.ops.math as M

    old = os.environ.get("SOFTREP_BACKEND")
    os.environ["SOFTREP_BACKEND"] = backend
    try:
        out = M.FUNCTIONS[name].op(torch.from_numpy(xs))
    finally:
        if old is None:
            del os.environ["SOFTREP_BACKEND"]
        else:
            os.environ["SOFTREP_BACKEND"] = old
    return out.numpy()


def check_inputs(name, xs, backend="cpu", result=None):
    """Check softrep.<name> on the float32 array xs; accumulate into `result`."""
    ref = REFERENCES[name]
    result = result or Result(name, examples=[], hard=[])
    xs = np.ascontiguousarray(xs, dtype=np.float32)
    got = np.ascontiguousarray(_kernel_output(name, xs, backend))
    status = _classify(ref.libm, xs, got, ref.libm_ulps * 2.0**-52, HARD_ULPS, ref.positive)
    for i in np.flatnonzero(status == ASK_MPFR):
        expected, dist = mpfr_f32(name, xs[i])
        result.mpfr_calls += 1
        ok = (np.isnan(expected) and got[i].view(np.uint32) == 0x7FC00000) or \
            got[i].view(np.uint32) == expected.view(np.uint32)
        if not ok:
            status[i] = MISROUNDED
        if dist is not None and dist < HARD_ULPS:
            result.hard.append((int(xs[i].view(np.uint32)), int(expected.view(np.uint32)), dist))
    bad = np.flatnonzero(status == MISROUNDED)
    result.checked += xs.size
    result.misrounded += bad.size
    for i in bad[: max(0, 10 - len(result.examples))]:
        expected, _ = mpfr_f32(name, xs[i])
        result.examples.append((int(xs[i].view(np.uint32)), int(got[i].view(np.uint32)),
                                int(expected.view(np.uint32))))
    return result


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


def load_hard_cases(name):
    """The inputs saved by an exhaustive run (uint32 bit patterns), or an empty array."""
    path = os.path.join(HARD_CASE_DIR, f"{name}.txt")
    if not os.path.exists(path):
        return np.zeros(0, np.uint32)
    with open(path) as f:
        rows = [line.split()[0] for line in f if line.strip() and not line.startswith("#")]
    return np.array([int(r, 16) for r in rows], dtype=np.uint32)


def save_hard_cases(result):
    os.makedirs(HARD_CASE_DIR, exist_ok=True)
    path = os.path.join(HARD_CASE_DIR, f"{result.name}.txt")
    with open(path, "w") as f:
        f.write(f"# {result.name}: float32 inputs whose exact value is within 2^-20 ulp of a rounding\n"
                "# midpoint (found by `python -m softrep verify "
                f"{result.name} --exhaustive`).\n# input_bits  correctly_rounded_bits  distance_in_ulps\n")
        for xb, rb, d in sorted(result.hard):
            f.write(f"0x{xb:08x} 0x{rb:08x} {d:.3e}\n")
    return path


def run(name, exhaustive=False, backend="cpu", sample=None, seed=0, progress=True, save=None):
    """Verify one function; returns a `Result`."""
    from tqdm import tqdm

    if name not in REFERENCES:
        raise SystemExit(f"verify: no reference for {name!r}; known: {', '.join(sorted(REFERENCES))}")
    import softrep.ops.math as M

    if name not in M.FUNCTIONS:
        raise SystemExit(f"verify: softrep has no function {name!r}")
    result = Result(name, examples=[], hard=[])
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
        parts = [special_inputs(), load_hard_cases(name).view(np.float32),
                 rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)]
        xs = np.concatenate(parts)
        bar = tqdm(total=xs.size, unit="x", unit_scale=True, disable=not progress, desc=f"verify {name}")
        step = CHUNK if backend == "cpu" else 1 << 10
        for lo in range(0, xs.size, step):
            check_inputs(name, xs[lo:lo + step], backend, result)
            bar.update(min(step, xs.size - lo))
        bar.close()
    result.seconds = time.perf_counter() - start
    if save if save is not None else exhaustive:
        save_hard_cases(result)
    return result


def report(result):
    lines = [f"{result.name}: {result.checked} inputs checked, {result.misrounded} misrounded, "
             f"{len(result.hard)} hard cases (within 2^-20 ulp of a midpoint), "
             f"{result.mpfr_calls} MPFR evaluations, {result.seconds:.1f} s"]
    for xb, gb, eb in result.examples:
        lines.append(f"  x = 0x{xb:08x} ({np.uint32(xb).view(np.float32)!r}): got 0x{gb:08x}, "
                     f"correctly rounded 0x{eb:08x}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m softrep verify",
                                     description="Check a softrep math function against MPFR-backed references.")
    parser.add_argument("func", help="function name (e.g. exp), or 'all'")
    parser.add_argument("--exhaustive", action="store_true", help="all 2^32 float32 inputs")
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--sample", type=int, default=None,
                        help="random inputs (default 10^6 on cpu, 2000 on cuda) besides special values "
                             "and the saved hard cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-save", action="store_true", help="do not rewrite the hard-case file")
    args = parser.parse_args(argv)
    if args.backend == "cuda":
        from ..primitives.jit import SIMULATOR

        if not SIMULATOR:
            import torch

            if not torch.cuda.is_available():
                raise SystemExit("verify --backend cuda needs a GPU, or NUMBA_ENABLE_CUDASIM=1 for the simulator")
        if args.exhaustive and SIMULATOR:
            raise SystemExit("verify: --exhaustive on the simulator would take months; use --sample")
    names = sorted(REFERENCES) if args.func == "all" else [args.func]
    failed = False
    for name in names:
        result = run(name, args.exhaustive, args.backend, args.sample, args.seed,
                     save=False if args.no_save else None)
        print(report(result))
        failed |= result.misrounded > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
