"""bfloat16 / float16 matrix products: softrep's low-precision mm against its own
float32 mm and against torch's mm in the same dtype, same inputs, same thread count.

    python benchmarks/bench_mixed.py [--threads 2] [--repeat 5] [--sizes 256 512 1024]

A softrep bfloat16 mm widens its operands to float32 (exact), runs the float32
kernel and rounds the output once; the target is >= 0.7x softrep's float32 mm.
Prints best-of-`repeat` wall times and the ratios; the first call of each case
(compilation or cache load) is not timed.
"""

import argparse
import os
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch's intra-op threads (default: --threads); on an oversubscribed machine "
                             "torch's parallel elementwise conversions can take milliseconds, 1 avoids that")
    args = parser.parse_args()
    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("SOFTREP_BACKEND", "cpu")
    import torch

    import softrep

    torch.set_num_threads(args.torch_threads or args.threads)
    gen = torch.Generator().manual_seed(0)

    def best(fn):
        fn()
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    print(f"threads {args.threads} (torch {args.torch_threads or args.threads}), best of {args.repeat}")
    print(f"{'n':>6} {'dtype':>9} {'softrep f32':>12} {'softrep low':>12} {'torch low':>10} "
          f"{'low/f32 speed':>14} {'vs torch low':>13}")
    for n in args.sizes:
        a = torch.randn(n, n, generator=gen)
        b = torch.randn(n, n, generator=gen)
        t32 = best(lambda: softrep.mm(a, b))
        for dtype in (torch.bfloat16, torch.float16):
            al, bl = a.to(dtype), b.to(dtype)
            tlow = best(lambda: softrep.mm(al, bl))
            ttorch = best(lambda: torch.mm(al, bl))
            print(f"{n:>6} {str(dtype).split('.')[1]:>9} {t32 * 1e3:>10.1f}ms {tlow * 1e3:>10.1f}ms "
                  f"{ttorch * 1e3:>8.1f}ms {t32 / tlow:>13.2f}x {ttorch / tlow:>12.2f}x")


if __name__ == "__main__":
    main()
