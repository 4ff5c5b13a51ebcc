"""softrep's CUDA kernels against torch on the same GPU, in one run.

    python benchmarks/bench_gpu.py [--repeat 10]

Same inputs for both; each time is the best of `--repeat` runs after a
warm-up (which also compiles softrep's kernels), synchronised with
torch.cuda.synchronize().  The last column is torch time / softrep time
(>= 1: softrep at least as fast).  torch uses cuBLAS/cuDNN with TF32 off, so
both sides compute in float32.
"""

import argparse
import time

import torch

import softrep


def best_time(fn, repeat):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def cases(device):
    g = torch.Generator(device=device).manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g, device=device)

    a, b = randn(2048, 2048), randn(2048, 2048)
    yield "mm 2048^2", lambda: softrep.mm(a, b), lambda: torch.mm(a, b)
    x, w = randn(32, 64, 56, 56), randn(64, 64, 3, 3)
    yield "conv2d 32x64x56x56, 3x3", lambda: softrep.conv2d(x, w, padding=1), \
        lambda: torch.nn.functional.conv2d(x, w, padding=1)
    v = randn(10**7)
    yield "sum 10^7", lambda: softrep.sum(v), lambda: torch.sum(v)
    for name in ("exp", "log", "tanh", "sigmoid", "erf"):
        arg = v.abs() if name == "log" else v
        yield f"{name} 10^7", (lambda f=getattr(softrep, name), t=arg: f(t)), \
            (lambda f=getattr(torch, name), t=arg: f(t))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu.py: torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    print(f"{'case':28} {'softrep ms':>11} {'torch ms':>10} {'torch/softrep':>14}")
    for name, ours, theirs in cases("cuda"):
        t_ours, t_theirs = best_time(ours, args.repeat), best_time(theirs, args.repeat)
        print(f"{name:28} {t_ours * 1e3:11.3f} {t_theirs * 1e3:10.3f} {t_theirs / t_ours:14.2f}")


if __name__ == "__main__":
    main()
