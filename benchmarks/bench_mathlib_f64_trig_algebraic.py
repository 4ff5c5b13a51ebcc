"""Throughput of softrep's correctly rounded float64 sin, cos, tan, atan, rsqrt,
cbrt and hypot against torch's float64 functions, preallocated outputs on both
sides, in one run.

    python benchmarks/bench_mathlib_f64_trig_algebraic.py [--n 4000000] [--threads 2] [--repeat 5]

torch: `torch.<name>(x, out=y)` (cbrt, which torch lacks: numpy's
`np.cbrt(x, out=y)`).  softrep: the CPU launcher of the op's scalar kernel
(`softrep.cpu.launch.elementwise`) writing into a preallocated array, inside
the IEEE control state every launch uses -- the op without its output
allocation.  Best of --repeat runs after a warm-up call (which also loads or
compiles the kernel); elements per second and the softrep / torch ratio
(> 1: softrep is faster).  The comparison functions are not correctly
rounded; softrep's are, on every input.
"""

import argparse
import time

import numpy as np
import torch

# name: (low, high) of the uniform inputs (hypot: both arguments)
CASES = {"sin": (-10.0, 10.0), "cos": (-10.0, 10.0), "tan": (-1.5, 1.5), "atan": (-10.0, 10.0),
         "rsqrt": (1e-3, 100.0), "cbrt": (-100.0, 100.0), "hypot": (-100.0, 100.0)}


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
    parser.add_argument("--only", nargs="*", default=None, help="function names (default: all seven)")
    args = parser.parse_args()

    import numba

    import softrep.ops.math as M
    from softrep.cpu.launch import elementwise
    from softrep.primitives.fpenv import ieee_state

    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    rng = np.random.Generator(np.random.PCG64(0))
    print(f"n = {args.n}, threads = {args.threads}, best of {args.repeat}, float64, preallocated outputs")
    print(f"{'function':10s} {'softrep Melem/s':>16s} {'other Melem/s':>14s} {'ratio':>7s}  other")
    for name in args.only or CASES:
        lo, hi = CASES[name]
        fn = M.FUNCTIONS[name]
        xs = [rng.uniform(lo, hi, args.n) for _ in range(fn.arity)]
        out = np.empty(args.n)
        run = elementwise(fn.kernel, fn.arity)

        def ours():
            with ieee_state():
                run(out, *xs)

        t_ours = best_time(ours, args.repeat)
        if name == "cbrt":
            other = "numpy.cbrt"
            t_other = best_time(lambda: np.cbrt(xs[0], out=out), args.repeat)
        else:
            other = f"torch.{name}"
            ts, yt = [torch.from_numpy(x) for x in xs], torch.empty(args.n, dtype=torch.float64)
            theirs = getattr(torch, name)
            t_other = best_time(lambda: theirs(*ts, out=yt), args.repeat)
        print(f"{name:10s} {args.n / t_ours / 1e6:16.1f} {args.n / t_other / 1e6:14.1f} {t_other / t_ours:7.2f}  "
              f"{other}", flush=True)


if __name__ == "__main__":
    main()
