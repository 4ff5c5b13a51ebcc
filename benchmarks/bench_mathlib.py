"""Throughput of softrep's correctly rounded math functions against torch's, on
10^7 float32 elements with 2 threads, in one run.

    python benchmarks/bench_mathlib.py [--n 10000000] [--threads 2] [--repeat 7]
                                       [--functions exp,log,...]

Arguments on [-10, 10], or [1e-3, 100] for the log functions, rsqrt and
pow's base; pow's exponent and hypot's second argument on [-10, 10].

Each function is timed twice: allocating its output (`softrep.exp(x)`,
`torch.exp(x)`), and into a preallocated output on both sides
(`softrep.exp(x, out=o)`, `torch.exp(x, out=o)`), which leaves out the page
faults of a fresh 40 MB output (about 17 ms of torch's 28 ms for exp on the
development VM).

torch's functions are not correctly rounded (they are vectorised approximations
of a few ulps); softrep's are, on every input.  Prints elements per second and
softrep / torch ratios (> 1 means softrep is faster).  Timings are the median
of --repeat runs after one warm-up call (which also loads or compiles the
kernel); softrep's and torch's runs alternate, so a change in the machine's
load reaches both (on a shared machine the median says more than the best).
"""

import argparse
import time

import numpy as np
import torch


def median_times(f_ours, f_theirs, x, repeat):
    """Median seconds of `repeat` alternating calls of each (after one warm-up
    call each); x is the tuple of arguments."""
    f_ours(*x)
    f_theirs(*x)
    ours, theirs = [], []
    for _ in range(repeat):
        for fn, times in ((f_ours, ours), (f_theirs, theirs)):
            t = time.perf_counter()
            fn(*x)
            times.append(time.perf_counter() - t)
    return float(np.median(ours)), float(np.median(theirs))


# timed on [1e-3, 100], the rest on [-10, 10]; pow's base too, its exponent on [-10, 10]
POSITIVE_DOMAIN = ("log", "log2", "log10", "log1p", "rsqrt", "pow")
TWO_ARGUMENTS = ("pow", "hypot")  # the second argument on [-10, 10]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--functions", default="exp,log,tanh,sigmoid,erf,sin,cos",
                        help="comma-separated list (default: %(default)s)")
    args = parser.parse_args()

    import numba

    import softrep

    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    rng = np.random.Generator(np.random.PCG64(0))
    wide = torch.from_numpy(rng.uniform(-10, 10, args.n).astype(np.float32))
    positive = torch.from_numpy(rng.uniform(1e-3, 100, args.n).astype(np.float32))
    names = args.functions.split(",")
    missing = [n for n in names if getattr(softrep, n, None) is None or getattr(torch, n, None) is None]
    if missing:
        parser.error(f"--functions: {', '.join(missing)}: not a function that both softrep and torch have")
    cases = [(name, (positive if name in POSITIVE_DOMAIN else wide,) + ((wide,) if name in TWO_ARGUMENTS else ()))
             for name in names]
    print(f"n = {args.n}, threads = {args.threads}, median of {args.repeat}")
    print(f"{'function':10s} {'output':>12s} {'softrep Melem/s':>16s} {'torch Melem/s':>14s} {'ratio':>7s}")
    ours_out, theirs_out = torch.empty(args.n), torch.empty(args.n)
    ours_out.fill_(0)  # touched once: the preallocated rows time no page faults
    theirs_out.fill_(0)
    for name, x in cases:
        ours, theirs = getattr(softrep, name), getattr(torch, name)
        for label, f_ours, f_theirs in [
                ("allocating", ours, theirs),
                ("out=", lambda *v: ours(*v, out=ours_out), lambda *v: theirs(*v, out=theirs_out))]:
            t_ours, t_torch = median_times(f_ours, f_theirs, x, args.repeat)
            print(f"{name:10s} {label:>12s} {args.n / t_ours / 1e6:16.1f} {args.n / t_torch / 1e6:14.1f} "
                  f"{t_torch / t_ours:7.2f}")


if __name__ == "__main__":
    main()
