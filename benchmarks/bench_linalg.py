"""softrep matrix products and convolution against torch, same inputs, same thread count.

    python benchmarks/bench_linalg.py [--threads 2] [--repeat 3] [--quick]

Prints, per case, the best-of-`repeat` wall time of softrep and of torch and
the throughput ratio torch_time / softrep_time (1.0 = as fast as torch).  The
first softrep call of each case (compilation or cache load) is not timed.
"""

import argparse
import os
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    # Numba reads its thread count at import: set it before softrep is imported.
    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("SOFTREP_BACKEND", "cpu")
    import torch
    import torch.nn.functional as F

    import softrep

    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)

    def best(fn):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    def case(name, ours, theirs, flops):
        t0 = time.perf_counter()
        ours()
        first = time.perf_counter() - t0
        t_ours, t_torch = best(ours), best(theirs)
        print(f"{name:<44} softrep {t_ours * 1e3:9.1f} ms ({flops / t_ours / 1e9:6.1f} GFLOP/s)  "
              f"torch {t_torch * 1e3:9.1f} ms  ratio {t_torch / t_ours:5.2f}  (first call {first:.1f} s)",
              flush=True)

    sizes = [256, 512] if args.quick else [256, 512, 1024, 2048]
    for dtype in (torch.float32, torch.float64):
        for n in sizes:
            if dtype == torch.float64 and n > 1024:
                continue
            a = torch.randn(n, n, dtype=dtype, generator=gen)
            b = torch.randn(n, n, dtype=dtype, generator=gen)
            case(f"mm {n}x{n} {str(dtype)[6:]}", lambda: softrep.mm(a, b), lambda: torch.mm(a, b), 2 * n ** 3)
    x = torch.randn(64, 768, dtype=torch.float32, generator=gen)
    w = torch.randn(3072, 768, dtype=torch.float32, generator=gen)
    bias = torch.randn(3072, dtype=torch.float32, generator=gen)
    case("linear 64x768 -> 3072 float32", lambda: softrep.linear(x, w, bias),
         lambda: F.linear(x, w, bias), 2 * 64 * 768 * 3072)
    # the backward's skinny products: the input's gradient (64x3072 @ 3072x768)
    # and the weight's (3072x64 @ 64x768; softrep: the batch tree over the
    # 64 one-row samples, docs/order.md), with the bias's sums
    xg, wg, bg = (t.clone().requires_grad_() for t in (x, w, bias))
    gy = torch.randn(64, 3072, dtype=torch.float32, generator=gen)
    case("linear 64x768 -> 3072 float32 fwd+bwd",
         lambda: torch.autograd.grad(softrep.linear(xg, wg, bg), (xg, wg, bg), gy),
         lambda: torch.autograd.grad(F.linear(xg, wg, bg), (xg, wg, bg), gy), 3 * 2 * 64 * 768 * 3072)

    batch = 4 if args.quick else 32
    x = torch.randn(batch, 64, 56, 56, dtype=torch.float32, generator=gen)
    w = torch.randn(64, 64, 3, 3, dtype=torch.float32, generator=gen)
    flops = 2 * batch * 64 * 56 * 56 * 64 * 9
    case(f"conv2d ResNet 3x3 {batch}x64x56x56 forward", lambda: softrep.conv2d(x, w, padding=1),
         lambda: F.conv2d(x, w, padding=1), flops)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    g = torch.randn(batch, 64, 56, 56, dtype=torch.float32, generator=gen)

    def ours_fb():
        torch.autograd.grad(softrep.conv2d(xg, wg, padding=1), (xg, wg), g)

    def theirs_fb():
        torch.autograd.grad(F.conv2d(xg, wg, padding=1), (xg, wg), g)

    case(f"conv2d ResNet 3x3 {batch}x64x56x56 fwd+bwd", ours_fb, theirs_fb, 3 * flops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
