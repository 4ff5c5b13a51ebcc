"""softrep reductions vs torch, in one run, with the same thread count.

    python benchmarks/bench_reduction.py [--threads 2] [--repeat 10]

Prints, per case, the best time of each side and the ratio torch_time /
softrep_time (>= 1 means softrep is as fast as torch).  The normalisation
and loss cases (layer norm with its affine map, softmax, cross-entropy with
mean reduction) are timed forward alone and forward + backward (the
backward of a fixed output gradient, or of the loss).  Results are recorded
in docs/benchmarks.md.  Numba's threading layer matters when torch runs in the
same process: with the 'omp' layer the two OpenMP pools wait on each other; set
NUMBA_THREADING_LAYER=workqueue (or tbb) to avoid it (the layer is printed).
"""

import argparse
import os
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)

    import numba
    import numpy as np
    import torch

    import softrep

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)

    def tensor(*shape):
        return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))

    big = tensor(10**7)
    rows64 = tensor(10**5, 64)
    rows256 = tensor(4 * 10**4, 256)
    rows = tensor(10**4, 1000)
    cols = tensor(1000, 10**4)
    nchw = tensor(32, 64, 56, 56)
    tokens = tensor(4096, 768).requires_grad_()
    ln_weight, ln_bias = tensor(768).requires_grad_(), tensor(768).requires_grad_()
    logits = tensor(4096, 1000).requires_grad_()
    labels = torch.from_numpy(rng.integers(0, 1000, 4096))
    grad_tokens, grad_logits = tensor(4096, 768), tensor(4096, 1000)

    def layer_norm(m):
        return m.nn.functional.layer_norm(tokens, (768,), ln_weight, ln_bias)

    def softmax(m):
        return m.nn.functional.softmax(logits, 1)

    def cross_entropy(m):
        return m.nn.functional.cross_entropy(logits, labels)

    cases = [
        ("sum, 1e7 float32, all", lambda m: m.sum(big)),
        ("sum, [1e5, 64] dim 1", lambda m: m.sum(rows64, 1)),
        ("sum, [4e4, 256] dim 1", lambda m: m.sum(rows256, 1)),
        ("sum, [1e4, 1000] dim 1", lambda m: m.sum(rows, 1)),
        ("sum, [1000, 1e4] dim 0", lambda m: m.sum(cols, 0)),
        ("sum, [32,64,56,56] dims (0,2,3)", lambda m: m.sum(nchw, (0, 2, 3))),
        ("mean, [1e5, 64] dim 1", lambda m: m.mean(rows64, 1)),
        ("mean, [4e4, 256] dim 1", lambda m: m.mean(rows256, 1)),
        ("mean, [1e4, 1000] dim 1", lambda m: m.mean(rows, 1)),
        ("var, [1e4, 1000] dim 1", lambda m: m.var(rows, 1)),
        ("amax, [1e5, 64] dim 1", lambda m: m.amax(rows64, 1)),
        ("amax, [4e4, 256] dim 1", lambda m: m.amax(rows256, 1)),
        ("amax, [1e4, 1000] dim 1", lambda m: m.amax(rows, 1)),
        ("argmax, 1e7 float32", lambda m: m.argmax(big)),
        ("BatchNorm stats: mean, var [32,64,56,56] dims (0,2,3)",
         lambda m: (m.mean(nchw, (0, 2, 3)), m.var(nchw, (0, 2, 3)))),
        ("layer_norm, [4096, 768] affine, forward", layer_norm),
        ("layer_norm, [4096, 768] affine, forward + backward",
         lambda m: torch.autograd.grad(layer_norm(m), (tokens, ln_weight, ln_bias), grad_tokens)),
        ("softmax, [4096, 1000] dim 1, forward", softmax),
        ("softmax, [4096, 1000] dim 1, forward + backward",
         lambda m: torch.autograd.grad(softmax(m), logits, grad_logits)),
        ("cross_entropy, [4096, 1000] logits, forward", cross_entropy),
        ("cross_entropy, [4096, 1000] logits, forward + backward",
         lambda m: torch.autograd.grad(cross_entropy(m), logits)),
    ]

    def best(fn):
        fn()
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    print(f"threads={args.threads} numba threading layer={numba.config.THREADING_LAYER} "
          f"cpu={os.cpu_count()} torch={torch.__version__}", file=sys.stderr)
    softrep.sum(big)  # compile
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "?"
    print(f"| case | softrep ms | torch ms | torch/softrep | (numba layer {layer}) |")
    print("|---|---|---|---|---|")
    for name, call in cases:
        s = best(lambda: call(softrep))
        t = best(lambda: call(torch))
        print(f"| {name} | {s * 1e3:.2f} | {t * 1e3:.2f} | {t / s:.2f} | |", flush=True)


if __name__ == "__main__":
    main()
