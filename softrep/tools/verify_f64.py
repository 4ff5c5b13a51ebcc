"""`python -m softrep verify FUNC --dtype float64 [--sample N] [--backend cpu|cuda] [--seed S]`.

Checks softrep.FUNC on float64 tensors bit for bit against MPFR (gmpy2).

**The reference has no error window.**  MPFR's functions are correctly
rounded at any precision: evaluated in the context `gmpy2.ieee(64)` (precision
53, emin -1073, emax 1024, subnormalize=True) `gmpy2.exp(x)` *is* the
correctly rounded binary64 exp(x), subnormal and overflowing results included.
Every function of the library whose expression is a single MPFR function uses
it that way; the others (sigmoid = 1/(1 + e^-x)) run Ziv's loop: the
expression at precision p with a stated relative error of at most 2^(c - p),
p raised until both ends of the error interval round to the same binary64.
So a run compares against the exact answer and rests on no measured or
assumed bound.

Inputs (`sample_inputs`): special values (+-0, +-inf, NaNs, integers and
halves, small powers of two), both ends of every binade of both signs (the
smallest and largest double of each of the 2046 exponents, and the
subnormals' ends), the committed hard cases
(tests/data/mathlib_hard_cases_f64/FUNC.txt), N/2 uniform random bit patterns
(every binade equally often) and N/2 random inputs of the function's domain
(`DOMAINS`: where its results are neither 0, 1 nor infinite, so that they
exercise the evaluation).  Two-argument functions take pairs of such values.

The report counts how often the accurate (triple-double) path ran: the
fast path's own kernel (`MathKernel.f64_fast`, (result, decided)) is run on
the same inputs.  Results are appended to
softrep/tools/data/mathlib_f64_verification.json (inputs, misrounded,
accurate-path count, seed, time, platform), as the exhaustive float32 runs
are recorded in docs/mathlib.md.
"""

import json
import math
import os
import platform
import time
from dataclasses import dataclass, field

import numpy as np

from ..ops.backend import selected

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
HARD_CASE_DIR_F64 = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                 "tests", "data", "mathlib_hard_cases_f64")
RESULT_FILE = os.path.join(DATA_DIR, "mathlib_f64_verification.json")
CANONICAL_NAN64 = 0x7FF8000000000000


def _mp(name):
    def reference(*args):
        import gmpy2

        return getattr(gmpy2, name)(*args)

    reference.__name__ = name
    return reference


def _mp_sigmoid(x):
    import gmpy2

    # three operations rounded to nearest at precision p, no cancellation: < 2^(2 - p)
    return 1 / (1 + gmpy2.exp(-x))


def _mp_rsqrt(x):
    import gmpy2

    # MPFR's rec_sqrt(-0) is +inf; IEEE 754 (and softrep, torch) give -inf
    return gmpy2.rec_sqrt(x) if not gmpy2.is_zero(x) else 1 / x


def _mp_pow(x, y):
    return x ** y  # mpfr_pow: the C99 Annex F / IEEE 754 pow special cases


@dataclass(frozen=True)
class Reference64:
    mpfr: object  # callable on gmpy2.mpfr arguments, evaluated in the current context
    arity: int = 1
    error: int = None  # None: one correctly rounded MPFR function; c: relative error <= 2^(c - precision)
    description: str = ""


REFERENCES64 = {
    "exp": Reference64(_mp("exp"), description="mpfr_exp"),
    "exp2": Reference64(_mp("exp2"), description="mpfr_exp2"),
    "exp10": Reference64(_mp("exp10"), description="mpfr_exp10"),
    "expm1": Reference64(_mp("expm1"), description="mpfr_expm1"),
    "log": Reference64(_mp("log"), description="mpfr_log"),
    "log2": Reference64(_mp("log2"), description="mpfr_log2"),
    "log10": Reference64(_mp("log10"), description="mpfr_log10"),
    "log1p": Reference64(_mp("log1p"), description="mpfr_log1p"),
    "sinh": Reference64(_mp("sinh"), description="mpfr_sinh"),
    "cosh": Reference64(_mp("cosh"), description="mpfr_cosh"),
    "tanh": Reference64(_mp("tanh"), description="mpfr_tanh"),
    "sigmoid": Reference64(_mp_sigmoid, error=2, description="1/(1 + mpfr_exp(-x)), Ziv's loop"),
    "sin": Reference64(_mp("sin"), description="mpfr_sin"),
    "cos": Reference64(_mp("cos"), description="mpfr_cos"),
    "tan": Reference64(_mp("tan"), description="mpfr_tan"),
    "atan": Reference64(_mp("atan"), description="mpfr_atan"),
    "erf": Reference64(_mp("erf"), description="mpfr_erf"),
    "erfc": Reference64(_mp("erfc"), description="mpfr_erfc"),
    "rsqrt": Reference64(_mp_rsqrt, description="mpfr_rec_sqrt (1/x at zeros)"),
    "cbrt": Reference64(_mp("cbrt"), description="mpfr_cbrt"),
    "pow": Reference64(_mp_pow, arity=2, description="mpfr_pow"),
    "hypot": Reference64(_mp("hypot"), arity=2, description="mpfr_hypot"),
}

# Where each function's results are neither 0, 1 nor infinite: half of the
# random inputs are drawn uniformly from here (the other half are uniform bit
# patterns).  ("log-uniform", lo, hi): |x| = 2^u, u uniform in [lo, hi], both signs
DOMAINS = {
    "exp": ("uniform", -745.2, 709.8), "exp2": ("uniform", -1075.0, 1024.0),
    "exp10": ("uniform", -323.7, 308.3), "expm1": ("uniform", -40.0, 709.8),
    "log": ("log-positive", -1074, 1024), "log2": ("log-positive", -1074, 1024),
    "log10": ("log-positive", -1074, 1024), "log1p": ("log1p", -1074, 1024),
    "sinh": ("uniform", -710.5, 710.5), "cosh": ("uniform", -710.5, 710.5),
    "tanh": ("uniform", -20.0, 20.0), "sigmoid": ("uniform", -746.0, 40.0),
    "sin": ("log-uniform", -30, 30), "cos": ("log-uniform", -30, 30), "tan": ("log-uniform", -30, 30),
    "atan": ("log-uniform", -60, 60), "erf": ("uniform", -6.0, 6.0), "erfc": ("uniform", -6.0, 27.3),
    "rsqrt": ("log-positive", -1074, 1024), "cbrt": ("log-uniform", -1074, 1024),
    "pow": ("pow", 0, 0), "hypot": ("log-uniform", -1074, 1024),
}


# --------------------------------------------------------------------------- the reference


def mpfr_f64(name, *xs):
    """The correctly rounded binary64 value of FUNC(*xs) (numpy float64; NaN is the
    canonical NaN), from MPFR: directly in the binary64 context for one MPFR
    function, by Ziv's loop otherwise."""
    import gmpy2

    ref = REFERENCES64[name]
    if ref.error is None:
        with gmpy2.context(gmpy2.ieee(64)):
            v = ref.mpfr(*(gmpy2.mpfr(float(x)) for x in xs))
            return np.float64(float(v))
    precision = 128
    while precision <= 8192:
        with gmpy2.context(precision=precision, emin=-(1 << 30), emax=1 << 30) as ctx:
            ctx.clear_flags()
            v = ref.mpfr(*(gmpy2.mpfr(float(x)) for x in xs))
            exact = not ctx.inexact
        if gmpy2.is_nan(v) or gmpy2.is_infinite(v) or gmpy2.is_zero(v) or exact:
            with gmpy2.context(gmpy2.ieee(64)):
                return np.float64(float(gmpy2.mpfr(v)))
        err = abs(v) * gmpy2.exp2(ref.error - precision)
        with gmpy2.context(precision=precision + 8, emin=-(1 << 30), emax=1 << 30):
            lo, hi = v - err, v + err  # exact at the higher precision (err has one significant bit)
        with gmpy2.context(gmpy2.ieee(64)):
            a, b = float(gmpy2.mpfr(lo)), float(gmpy2.mpfr(hi))
        if a == b and math.copysign(1, a) == math.copysign(1, b):
            return np.float64(a)
        precision *= 2
    raise RuntimeError(f"{name}{tuple(map(float, xs))}: MPFR could not decide the binary64 rounding")


def reference_bits(name, args, progress=False, desc=None):
    """uint64 bits of the correctly rounded results at every input (args: float64 arrays)."""
    import gmpy2
    from tqdm import tqdm

    ref = REFERENCES64[name]
    n = args[0].size
    out = np.empty(n, np.float64)
    cols = [a.tolist() for a in args]
    bar = tqdm(total=n, unit="x", unit_scale=True, disable=not progress, desc=desc or f"MPFR {name}",
               mininterval=1.0)
    if ref.error is None:
        fn, mpfr = ref.mpfr, gmpy2.mpfr
        step = 1 << 16
        with gmpy2.context(gmpy2.ieee(64)):
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                if ref.arity == 1:
                    out[lo:hi] = [float(fn(mpfr(x))) for x in cols[0][lo:hi]]
                else:
                    out[lo:hi] = [float(fn(mpfr(x), mpfr(y))) for x, y in zip(cols[0][lo:hi], cols[1][lo:hi])]
                bar.update(hi - lo)
    else:
        for i in range(n):
            out[i] = mpfr_f64(name, *(c[i] for c in cols))
            bar.update(1)
    bar.close()
    bits = out.view(np.uint64).copy()
    bits[np.isnan(out)] = CANONICAL_NAN64
    return bits


# --------------------------------------------------------------------------- inputs


def binade_ends():
    """The smallest and largest double of every binade (2046 normal exponents and
    the subnormals), both signs, as float64."""
    e = np.arange(1, 2047, dtype=np.uint64) << np.uint64(52)
    bits = np.concatenate([e, e | np.uint64((1 << 52) - 1),
                           np.array([1, 2, (1 << 52) - 1], dtype=np.uint64)])
    bits = np.concatenate([bits, bits | np.uint64(1 << 63)])
    return bits.view(np.float64)


def special_inputs():
    """Zeros, infinities, NaNs (quiet, signalling, negative), integers and halves in
    [-1100, 1100], small powers of two and their neighbours, and the binade ends."""
    bits = np.array([0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                     0x7FF0000000000001, 0xFFF8000000000000, 0x7FFFFFFFFFFFFFFF], dtype=np.uint64)
    ints = np.arange(-1100, 1101, dtype=np.float64)
    powers = np.ldexp(1.0, np.arange(-80, 81))
    near = np.concatenate([np.nextafter(powers, 0), np.nextafter(powers, np.inf)])
    vals = np.concatenate([bits.view(np.float64), ints, ints + 0.5, powers, -powers, near, -near, binade_ends()])
    return vals


def domain_sample(name, n, rng):
    kind, lo, hi = DOMAINS[name]
    if kind == "uniform":
        return rng.uniform(lo, hi, n)
    u = rng.uniform(lo, hi, n)
    a = np.ldexp(1.0 + rng.random(n), np.floor(u).astype(np.int64) - 1)  # log-uniform magnitude
    if kind == "log-positive":
        return a
    if kind == "log1p":
        # x > -1 at every scale: tiny |x|, x near -1, and large x
        s = rng.integers(0, 3, n)
        return np.where(s == 0, a, np.where(s == 1, -np.minimum(a, 1.0) * rng.random(n), -1.0 + np.ldexp(
            rng.random(n), -rng.integers(1, 53, n))))
    return np.where(rng.integers(0, 2, n) == 1, -a, a)


def random_bits(n, rng):
    return rng.integers(0, 2**64, size=n, dtype=np.uint64).view(np.float64)


def pair_sample(name, n, rng):
    """Random pairs: half uniform bit patterns; half with |result| in range: pow:
    x log-uniform over all binades (both signs), y = t / log2|x| with t uniform in
    (-1100, 1100), a quarter of the y rounded to integers (x < 0 too); hypot: both
    arguments log-uniform within 2^60 of each other."""
    half = n // 2
    xs, ys = random_bits(half, rng), random_bits(half, rng)
    m = n - half
    if name == "pow":
        u = rng.uniform(-1074, 1024, m)
        ax = np.ldexp(1.0 + rng.random(m), np.floor(u).astype(np.int64) - 1)
        ay = rng.uniform(-1100, 1100, m) / np.where(np.abs(np.log2(ax)) < 2.0**-40, 1.0, np.log2(ax))
        ay = np.where(rng.integers(0, 4, m) == 0, np.round(ay), ay)
        ax = np.where(rng.integers(0, 2, m) == 1, -ax, ax)
    else:
        u = rng.uniform(-1000, 1000, m)
        ax = np.ldexp(1.0 + rng.random(m), np.floor(u).astype(np.int64))
        with np.errstate(over="ignore"):  # exponents past 1023 give inf, an input hypot takes too
            ay = np.ldexp(1.0 + rng.random(m), np.floor(u + rng.uniform(-60, 60, m)).astype(np.int64))
        ax = np.where(rng.integers(0, 2, m) == 1, -ax, ax)
        ay = np.where(rng.integers(0, 2, m) == 1, -ay, ay)
    return np.concatenate([xs, ax]), np.concatenate([ys, ay])


def load_hard_cases_f64(name):
    """The committed hard cases, as float64 arrays (one per argument); empty if none."""
    arity = REFERENCES64[name].arity
    path = os.path.join(HARD_CASE_DIR_F64, f"{name}.txt")
    if not os.path.exists(path):
        return tuple(np.zeros(0, np.float64) for _ in range(arity))
    with open(path) as f:
        rows = [line.split()[:arity] for line in f if line.strip() and not line.startswith("#")]
    bits = np.array([[int(v, 16) for v in row] for row in rows], dtype=np.uint64).reshape(-1, arity)
    return tuple(np.ascontiguousarray(bits[:, i]).view(np.float64) for i in range(arity))


def sample_inputs(name, n, seed=0):
    """The inputs of a sampled run (module docstring), as a tuple of float64 arrays."""
    rng = np.random.Generator(np.random.PCG64(seed))
    hard = load_hard_cases_f64(name)
    if REFERENCES64[name].arity == 1:
        half = n // 2
        return (np.concatenate([special_inputs(), hard[0], random_bits(half, rng),
                                domain_sample(name, n - half, rng)]),)
    sv = np.concatenate([special_inputs()[:8], [1.0, -1.0, 0.5, 2.0, 3.0, -3.0, 0.25, 1e300, 1e-300]])
    sx, sy = np.repeat(sv, sv.size), np.tile(sv, sv.size)
    px, py = pair_sample(name, n, rng)
    return np.concatenate([sx, hard[0], px]), np.concatenate([sy, hard[1], py])


# --------------------------------------------------------------------------- the check


@dataclass
class Result64:
    name: str
    backend: str = "cpu"
    checked: int = 0
    misrounded: int = 0
    accurate: int = 0  # inputs the fast path left to the accurate path
    hard_cases: int = 0
    seconds: float = 0.0
    examples: list = field(default_factory=list)  # (input bits tuple, got bits, expected bits)

    @property
    def proven(self):
        return self.misrounded == 0


def kernel_output64(name, args, backend="cpu"):
    """softrep.<name> on float64 tensors, as uint64 bits."""
    import torch

    import softrep.ops.math as M

    with selected(backend):
        out = M.FUNCTIONS[name].op(*(torch.from_numpy(np.ascontiguousarray(a, np.float64)) for a in args))
    return out.numpy().view(np.uint64)


_UNDECIDED_COUNTERS = {}


def accurate_path_count(name, args):
    """How many of the inputs the float64 fast path (`f64_fast`) does not decide
    (CPU kernel)."""
    from numba import njit, prange

    from ..algorithms.math import KERNELS

    fast = KERNELS[name].f64_fast
    if fast is None:
        return -1
    if name not in _UNDECIDED_COUNTERS:
        if len(args) == 1:
            @njit(parallel=True, cache=True)
            def count(x):
                n = 0
                for i in prange(x.size):
                    _, ok = fast(x[i])
                    n += 0 if ok else 1
                return n
        else:
            @njit(parallel=True, cache=True)
            def count(x, y):
                n = 0
                for i in prange(x.size):
                    _, ok = fast(x[i], y[i])
                    n += 0 if ok else 1
                return n
        _UNDECIDED_COUNTERS[name] = count
    return int(_UNDECIDED_COUNTERS[name](*(np.ascontiguousarray(a, np.float64) for a in args)))


def compare(name, args, got_bits, expected_bits, result):
    """Accumulate the bitwise comparison of got_bits with expected_bits into result."""
    bad = np.flatnonzero(got_bits != expected_bits)
    result.checked += got_bits.size
    result.misrounded += bad.size
    for i in bad[:10 - len(result.examples)]:
        result.examples.append((tuple(int(a[i:i + 1].view(np.uint64)[0]) for a in args),
                                int(got_bits[i]), int(expected_bits[i])))
    return result


def check_inputs64(name, args, backend="cpu", result=None, progress=False):
    """Check softrep.<name> on the float64 inputs args (a tuple of arrays)."""
    result = result or Result64(name, backend)
    args = tuple(np.ascontiguousarray(a, np.float64) for a in args)
    got = kernel_output64(name, args, backend)
    expected = reference_bits(name, args, progress=progress)
    compare(name, args, got, expected, result)
    if backend == "cpu":
        result.accurate += accurate_path_count(name, args)
    return result


def run64(name, sample=None, backend="cpu", seed=0, progress=True, chunk=1 << 20):
    """Verify one function in float64 on a sample; returns a Result64."""
    from tqdm import tqdm

    import softrep.ops.math as M

    if name not in REFERENCES64:
        raise SystemExit(f"verify: no float64 reference for {name!r}; known: {', '.join(sorted(REFERENCES64))}")
    if M.FUNCTIONS[name].f64 is None:
        raise SystemExit(f"verify: softrep.{name} has no float64 version yet")
    n = sample if sample is not None else (10**7 if backend == "cpu" else 2000)
    args = sample_inputs(name, n, seed)
    result = Result64(name, backend)
    result.hard_cases = load_hard_cases_f64(name)[0].size
    start = time.perf_counter()
    total = args[0].size
    bar = tqdm(total=total, unit="x", unit_scale=True, disable=not progress, desc=f"verify {name} float64")
    step = chunk if backend == "cpu" else 1 << 10
    for lo in range(0, total, step):
        check_inputs64(name, tuple(a[lo:lo + step] for a in args), backend, result)
        bar.update(min(step, total - lo))
        bar.set_postfix(misrounded=result.misrounded, accurate=result.accurate)
    bar.close()
    result.seconds = time.perf_counter() - start
    return result


def report64(result):
    ref = REFERENCES64[result.name]
    acc = "" if result.backend != "cpu" else f", accurate path ran {result.accurate} times"
    lines = [f"{result.name} float64 ({result.backend}): {result.checked} inputs checked "
             f"({result.hard_cases} committed hard cases among them), {result.misrounded} misrounded{acc}, "
             f"{result.seconds:.1f} s",
             f"  reference {ref.description} in MPFR's binary64 context: correctly rounded, no error window"]
    for xb, gb, eb in result.examples:
        xs = ", ".join(f"0x{b:016x} ({np.uint64(b).view(np.float64)!r})" for b in xb)
        lines.append(f"  x = {xs}: got 0x{gb:016x}, correctly rounded 0x{eb:016x}")
    return "\n".join(lines)


def record64(result, seed):
    """Append the run to RESULT_FILE (one entry per function and backend, replaced)."""
    import gmpy2

    data = {"runs": {}}
    if os.path.exists(RESULT_FILE):
        with open(RESULT_FILE) as f:
            data = json.load(f)
    data["description"] = ("float64 runs of `python -m softrep verify FUNC --dtype float64 --sample N`: "
                           "inputs checked against MPFR's correctly rounded binary64 result, misrounded "
                           "(must be 0), how often the accurate path ran.")
    data["runs"][f"{result.name} {result.backend}"] = {
        "inputs": result.checked, "misrounded": result.misrounded, "accurate_path": result.accurate,
        "hard_cases": result.hard_cases, "seed": seed, "seconds": round(result.seconds, 1),
        "machine": platform.machine(), "mpfr": gmpy2.mpfr_version(),
    }
    data["runs"] = dict(sorted(data["runs"].items()))
    os.makedirs(DATA_DIR, exist_ok=True)
    with open(RESULT_FILE, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def main64(names, sample, backend, seed, save=True):
    failed = False
    for name in names:
        result = run64(name, sample, backend, seed)
        print(report64(result))
        if save:
            record64(result, seed)
        failed |= not result.proven
    return 1 if failed else 0


# --------------------------------------------------------------------------- published worst cases


def parse_worst_cases(path, arity):
    """The inputs of a worst-case list in CORE-MATH's format (one input per line,
    hexadecimal floats, two arguments separated by a comma; '#' starts a
    comment), as float64 arrays."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = [p for p in line.replace(",", " ").split() if p]
            try:
                vals = [float.fromhex(p) if "0x" in p.lower() else float(p) for p in parts[:arity]]
            except ValueError:
                continue
            if len(vals) == arity:
                rows.append(vals)
    a = np.array(rows, dtype=np.float64).reshape(-1, arity)
    return tuple(np.ascontiguousarray(a[:, i]) for i in range(arity))


def boundary_distance(name, *xs, precision=320):
    """Distance of FUNC(*xs) to the nearest binary64 rounding boundary (a midpoint
    between two doubles, subnormals' included), in ulps of the correctly rounded
    result; None for NaN, infinite or zero results.  The value is MPFR's at
    `precision` bits (error < 2^-300 relative): distances above 2^-240 ulp are
    exact to many digits, and 0 means an exact midpoint or a distance below that."""
    import gmpy2

    ref = REFERENCES64[name]
    with gmpy2.context(precision=precision, emin=-(1 << 30), emax=1 << 30):
        v = ref.mpfr(*(gmpy2.mpfr(float(x)) for x in xs))
    if gmpy2.is_nan(v) or gmpy2.is_infinite(v) or gmpy2.is_zero(v):
        return None
    r = abs(float(mpfr_f64(name, *xs)))
    if not np.isfinite(r) or r == 0:
        return None
    up = float(np.nextafter(r, np.inf))
    down = float(np.nextafter(r, 0.0))
    with gmpy2.context(precision=precision, emin=-(1 << 30), emax=1 << 30):
        a, rr = abs(v), gmpy2.mpfr(r)
        hi = gmpy2.exp2(1024) if np.isinf(up) else gmpy2.mpfr(up)
        ulp = hi - rr
        d = min(abs(a - (rr + hi) / 2), abs(a - (rr + gmpy2.mpfr(down)) / 2))
        return float(d / ulp)


def select_hard_cases(name, args, keep=1000, progress=True):
    """(indices of the `keep` inputs closest to a rounding boundary, their distances)."""
    from tqdm import tqdm

    n = args[0].size
    dist = np.full(n, np.inf)
    for i in tqdm(range(n), disable=not progress, desc=f"distances {name}", unit="x", unit_scale=True,
                  mininterval=1.0):
        d = boundary_distance(name, *(a[i] for a in args))
        if d is not None:
            dist[i] = d
    order = np.argsort(dist, kind="stable")[:keep]
    return order[np.isfinite(dist[order])], dist


def save_hard_cases_f64(name, args, idx, dist, source):
    """Write tests/data/mathlib_hard_cases_f64/<name>.txt: the inputs at `idx` with
    their correctly rounded result and distance to the nearest rounding boundary."""
    os.makedirs(HARD_CASE_DIR_F64, exist_ok=True)
    path = os.path.join(HARD_CASE_DIR_F64, f"{name}.txt")
    cols = "input_bits" if len(args) == 1 else "x_bits y_bits"
    with open(path, "w") as f:
        f.write(f"# {name}: float64 inputs whose exact value lies closest to a rounding boundary\n"
                f"# {source}\n"
                "# (distance: to the nearest midpoint between doubles, in ulps of the result, by MPFR at 320 bits;\n"
                "# identical bits after the round bit = -log2(distance) - 1)\n"
                f"# {cols}  correctly_rounded_bits  distance_in_ulps\n")
        for i in sorted(idx, key=lambda i: dist[i]):
            xs = [a[i] for a in args]
            r = mpfr_f64(name, *xs)
            f.write(" ".join(f"0x{int(np.float64(x).view(np.uint64)):016x}" for x in xs)
                    + f" 0x{int(np.float64(r).view(np.uint64)):016x} {dist[i]:.3e}\n")
    return path


def check_worst_cases(name, path, keep=1000, save=False, source=None, progress=True):
    """Check softrep.<name> on every input of a worst-case list (CORE-MATH format);
    with save, commit the `keep` hardest to tests/data/mathlib_hard_cases_f64/.
    Returns (Result64, the smallest distance in ulps, its input bits)."""
    args = parse_worst_cases(path, REFERENCES64[name].arity)
    result = Result64(name)
    start = time.perf_counter()
    step = 1 << 14
    for lo in range(0, args[0].size, step):
        check_inputs64(name, tuple(a[lo:lo + step] for a in args), "cpu", result)
    result.seconds = time.perf_counter() - start
    idx, dist = select_hard_cases(name, args, keep, progress)
    if save:
        save_hard_cases_f64(name, args, idx, dist, source or f"the {keep} hardest of {os.path.basename(path)}")
    best = int(idx[0]) if idx.size else None
    return result, (dist[best] if best is not None else None), (
        None if best is None else tuple(f"{float(a[best]).hex()}" for a in args))
