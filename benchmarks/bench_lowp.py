"""round_to throughput: softrep vs plain torch (and pychop / qtorch if installed).

    python benchmarks/bench_lowp.py [--n 4194304] [--repeat 5]

Plain torch, to nearest: `x.to(dtype).to(x.dtype)` (torch's own conversion);
stochastic bfloat16: the usual bit trick (add 16 random bits, truncate), which
is torch's RNG and therefore not reproducible across devices.  Prints a
markdown table of Melem/s (median of `repeat` runs, after one warm-up run).
"""

import argparse
import importlib.util
import statistics
import time

import torch

import softrep


def _time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _torch_stochastic_bf16(x):
    bits = x.view(torch.int32)
    noise = torch.randint(0, 1 << 16, x.shape, dtype=torch.int32)
    return ((bits + noise) & -65536).view(torch.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    x = torch.randn(args.n)
    rows = []
    for fmt, dt in [("bfloat16", torch.bfloat16), ("float16", torch.float16),
                    ("float8_e4m3fn", torch.float8_e4m3fn), ("float8_e5m2", torch.float8_e5m2)]:
        rows.append((f"{fmt}, nearest", "softrep.round_to", _time(lambda: softrep.round_to(x, fmt), args.repeat)))
        rows.append((f"{fmt}, nearest", "torch .to(dtype).to(float32)",
                     _time(lambda: x.to(dt).to(torch.float32), args.repeat)))
    for mode in ("down", "odd"):
        rows.append((f"bfloat16, {mode}", "softrep.round_to",
                     _time(lambda: softrep.round_to(x, "bfloat16", mode), args.repeat)))
    g = softrep.Generator(0)
    rows.append(("bfloat16, stochastic", "softrep.round_to (Philox, reproducible)",
                 _time(lambda: softrep.round_to(x, "bfloat16", "stochastic", generator=g), args.repeat)))
    rows.append(("bfloat16, stochastic", "torch bit trick (torch RNG)",
                 _time(lambda: _torch_stochastic_bf16(x), args.repeat)))
    for name in ("pychop", "qtorch"):
        found = importlib.util.find_spec(name) is not None
        rows.append((f"({name})", "installed" if found else "not installed: not measured", None))
    print(f"n = {args.n}, torch threads = {torch.get_num_threads()}, median of {args.repeat}")
    print("| format, rounding | implementation | Melem/s |")
    print("|---|---|---:|")
    for case, impl, t in rows:
        rate = "" if t is None else f"{args.n / t / 1e6:.0f}"
        print(f"| {case} | {impl} | {rate} |")


if __name__ == "__main__":
    main()
