"""Per-call overhead of softrep ops on tiny tensors, against torch.

`python benchmarks/bench_overhead.py [--calls 1000] [--size 10]`: the median
time of `--calls` calls (after 100 untimed ones) of each op on float32 tensors
of `--size` elements (mm: 2x5 @ 5x2 for 10), softrep and torch in the same
process, one after the other (`out=`: into a preallocated tensor on both
sides).  Nothing requires grad; a second table times the same ops with an
input that requires grad (the autograd Function's path).
Never asserted in tests: the machine may be shared.
"""

import argparse
import statistics
import time

import torch

import softrep


def median_us(fn, calls):
    for _ in range(100):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def cases(x, y, a, b, out=None):
    out = torch.empty_like(x) if out is None else out
    return [
        ("add", lambda: softrep.add(x, y), lambda: torch.add(x, y)),
        ("add, out=", lambda: softrep.add(x, y, out=out), lambda: torch.add(x, y, out=out)),
        ("mul", lambda: softrep.mul(x, y), lambda: torch.mul(x, y)),
        ("add, rounding='up'", lambda: softrep.add(x, y, rounding="up"), None),
        ("sqrt", lambda: softrep.sqrt(x.abs()), lambda: torch.sqrt(x.abs())),
        ("exp", lambda: softrep.exp(x), lambda: torch.exp(x)),
        ("exp, out=", lambda: softrep.exp(x, out=out), lambda: torch.exp(x, out=out)),
        ("tanh", lambda: softrep.tanh(x), lambda: torch.tanh(x)),
        ("mul by a number", lambda: softrep.mul(x, 2.0), lambda: torch.mul(x, 2.0)),
        ("sum", lambda: softrep.sum(x), lambda: torch.sum(x)),
        ("mean", lambda: softrep.mean(x), lambda: torch.mean(x)),
        ("amax", lambda: softrep.amax(x), lambda: torch.amax(x)),
        ("mm", lambda: softrep.mm(a, b), lambda: torch.mm(a, b)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--size", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(2)
    n = args.size
    x, y = torch.randn(n), torch.randn(n)
    rows = 2 if n % 2 == 0 else 1
    a, b = torch.randn(rows, n // rows), torch.randn(n // rows, rows)
    print(f"median of {args.calls} calls, float32, {n} elements")
    print(f"| op | softrep us | torch us |\n|---|---|---|")
    for name, ours, theirs in cases(x, y, a, b):
        t_ours = median_us(ours, args.calls)
        t_theirs = median_us(theirs, args.calls) if theirs else float("nan")
        print(f"| {name} | {t_ours:.1f} | {t_theirs:.1f} |")
    xg = x.clone().requires_grad_()
    print("\nwith an input that requires grad (autograd records the op)")
    print(f"| op | softrep us | torch us |\n|---|---|---|")
    recorded = [c for c in cases(xg, y, a, b) if "out=" not in c[0]]  # out= is not differentiable
    for name, ours, theirs in recorded[:5]:
        print(f"| {name} | {median_us(ours, args.calls):.1f} | "
              f"{median_us(theirs, args.calls) if theirs else float('nan'):.1f} |")


if __name__ == "__main__":
    main()
