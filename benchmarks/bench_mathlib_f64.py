"""Throughput of softrep's correctly rounded float64 math functions against torch's
float64 functions, with preallocated outputs on both sides, in one run.

    python benchmarks/bench_mathlib_f64.py [--n 4000000] [--threads 2] [--repeat 5] [--only exp2,sigmoid]

torch: `torch.<name>(x, out=y)` (exp10: torch.pow(10, x); cbrt, which torch
lacks: numpy's `np.cbrt(x, out=y)`; hypot and pow take two uniform arguments).
softrep: the CPU launcher of the op's scalar kernel
(`softrep.cpu.launch.elementwise`) writing into a preallocated array,
inside the IEEE control state every launch uses -- the op without its output
allocation.  Timings are the best of --repeat runs after a warm-up call (which
also loads or compiles the kernel).  Prints elements per second and the
softrep / torch ratio (> 1: softrep is faster).  torch's float64 functions are
not correctly rounded; softrep's are, on every input.
"""

import argparse
import time

import numpy as np
import torch

CASES = {  # name: (input range, log-uniform?)
    "exp": ((-700.0, 700.0), False), "exp2": ((-1000.0, 1000.0), False), "exp10": ((-300.0, 300.0), False),
    "expm1": ((-30.0, 700.0), False), "log": ((-1000, 1000), True), "log2": ((-1000, 1000), True),
    "log10": ((-1000, 1000), True), "log1p": ((-0.9, 1e6), False), "sinh": ((-700.0, 700.0), False),
    "cosh": ((-700.0, 700.0), False), "tanh": ((-20.0, 20.0), False), "sigmoid": ((-700.0, 40.0), False),
    "sin": ((-10.0, 10.0), False), "cos": ((-10.0, 10.0), False), "tan": ((-1.5, 1.5), False),
    "atan": ((-10.0, 10.0), False), "rsqrt": ((1e-3, 100.0), False), "cbrt": ((-100.0, 100.0), False),
    "hypot": ((-100.0, 100.0), False),  # both arguments
    "pow": ((0.0, 30.0), False),  # both arguments: x^y up to 30^30
    "erf": ((-6.0, 6.0), False), "erfc": ((-6.0, 27.0), False),
}
TORCH = {"exp10": None, "sigmoid": torch.sigmoid}


def best_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4 * 10**6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None,
                        help="function names, separated by commas or spaces (default: all of them)")
    args = parser.parse_args()
    names = [n for item in args.only or () for n in item.split(",") if n] or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"--only: {', '.join(unknown)}: not one of the float64 functions ({', '.join(CASES)})")

    import numba

    import softrep.ops.math as M
    from softrep.cpu.launch import elementwise
    from softrep.primitives.fpenv import ieee_state

    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    rng = np.random.Generator(np.random.PCG64(0))
    print(f"n = {args.n}, threads = {args.threads}, best of {args.repeat}, float64, preallocated outputs")
    print(f"{'function':10s} {'softrep Melem/s':>16s} {'torch Melem/s':>14s} {'ratio':>7s}")
    for name in names:
        (lo, hi), log_uniform = CASES[name]
        arity = M.FUNCTIONS[name].arity
        xs = [np.exp2(rng.uniform(lo, hi, args.n)) if log_uniform else rng.uniform(lo, hi, args.n)
              for _ in range(arity)]
        x = xs[0]
        out = np.empty_like(x)
        run = elementwise(M.FUNCTIONS[name].kernel, arity)

        def ours():
            with ieee_state():
                run(out, *xs)

        t_ours = best_time(ours, args.repeat)
        theirs = TORCH.get(name, getattr(torch, name, None))
        if name == "cbrt":  # torch has no cbrt: numpy's (SIMD, on one thread)
            t_torch = best_time(lambda: np.cbrt(x, out=out), args.repeat)
        elif theirs is None:  # torch has no exp10: pow(10, x)
            xt, yt, ten = torch.from_numpy(x), torch.empty(args.n, dtype=torch.float64), torch.tensor(10.0,
                                                                                                   dtype=torch.float64)
            t_torch = best_time(lambda: torch.pow(ten, xt, out=yt), args.repeat)
        else:
            xts, yt = [torch.from_numpy(a) for a in xs], torch.empty(args.n, dtype=torch.float64)
            t_torch = best_time(lambda: theirs(*xts, out=yt), args.repeat)
        print(f"{name:10s} {args.n / t_ours / 1e6:16.1f} {args.n / t_torch / 1e6:14.1f} {t_torch / t_ours:7.2f}",
              flush=True)


if __name__ == "__main__":
    main()
