"""Accuracy of the documented orders: measured error next to the error bound.

    python benchmarks/accuracy.py [--max-k 1000000] [--seed 0]

For each order of docs/order.md that reduces (the product chain of mm, sum,
mean, var, logsumexp / softmax / log_softmax, layer_norm) this prints the
error of softrep and of torch on the same inputs, in the same run, and the
bound derived in docs/order.md ("Accuracy of the orders"), where the numbers
are recorded.

References are independent of both libraries:

* sum and mm: the error itself is computed by math.fsum (correctly rounded)
  over [result, -term_0, -term_1, ...], each term an exact product (a float32
  product is exact in float64; a float64 product is split exactly into two
  doubles by Dekker's algorithm), so the printed error is exact to 2^-53
  relative.
* mean and var: exact rational arithmetic on the float32 inputs scaled to
  integers (every float32 is an integer multiple of 2^-149).
* logsumexp, softmax, log_softmax, layer_norm: float64 with math.fsum
  (relative error about 1e-15, far below the float32 errors measured).

Each case is a few rows of random terms: "positive" terms are uniform in
[0, 1), "signed" terms standard normal.  The printed error is the largest over
the rows; "bound" is the documented bound for the same n.
"""

import argparse
import math
import os
from fractions import Fraction

BLOCK = 128  # the block length of the sum order (docs/order.md, "sum")
UNIT_ROUNDOFF = {"float32": 2.0**-24, "float64": 2.0**-53}
CHUNK = 1000  # chunk length of the split product (a caller's way to shorten the chain)


def gamma(rounds, u):
    """gamma_n = n u / (1 - n u): |prod of n factors (1 + delta_i)^(+-1) - 1| <= gamma_n."""
    return rounds * u / (1 - rounds * u)


def sum_depth(n):
    """Roundings on the longest path of the sum order for n terms: a block of
    min(n, 128) terms takes min(n, 128) - 1 additions, the pairwise tree over
    ceil(n / 128) block partials is ceil(log2(ceil(n / 128))) levels deep."""
    blocks = -(-n // BLOCK)
    return min(n, BLOCK) - 1 + (blocks - 1).bit_length()


def exact_products(a, b):
    """The terms a_k * b_k as float64 arrays whose elementwise sum is exact."""
    import numpy as np

    if a.dtype == np.float32:  # 24 + 24 bits fit in float64's 53
        return [a.astype(np.float64) * b.astype(np.float64)]
    p = a * b
    split = 134217729.0  # 2^27 + 1: Veltkamp's splitting of a double into two 26-bit halves

    def halves(x):
        c = split * x
        hi = c - (c - x)
        return hi, x - hi

    ah, al = halves(a)
    bh, bl = halves(b)
    # Dekker's TwoProduct (numpy never contracts a*b+c into an fma): a*b = p + e exactly
    low = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return [p, low]


def error_of(result, terms):
    """result - (exact sum of the arrays in `terms`), correctly rounded to float64."""
    import numpy as np

    return math.fsum(np.concatenate([[float(result)]] + [-t.ravel() for t in terms]))


def scaled_integers(x):
    """The float32 values of x as Python integers: x_i = ints_i * 2^-149."""
    import numpy as np

    return [int(v) for v in np.ldexp(x.astype(np.float64), 149).tolist()]


def table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  " + "  ".join(str(c).rjust(w) for c, w in zip(r, widths)))


def sci(v):
    return f"{v:.2e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-k", type=int, default=10**6, help="largest K / n (default 10^6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))

    import numpy as np
    import torch

    import softrep

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    sizes = [k for k in (10**3, 10**4, 10**5, 10**6) if k <= args.max_k]

    def terms(kind, shape, dtype):
        x = rng.random(shape) if kind == "positive" else rng.standard_normal(shape)
        return x.astype(dtype)

    print(f"torch {torch.__version__}, {args.threads} threads, seed {args.seed}; "
          "errors are the largest over the rows of each case")

    # ---- products: one fma chain of K steps per output, |err| <= gamma_K sum|a_k b_k|
    rows = []
    for dtype in ("float32", "float64"):
        u = UNIT_ROUNDOFF[dtype]
        for kind in ("positive", "signed"):
            for k in sizes:
                a, b = terms(kind, (4, k), dtype), terms(kind, (k, 4), dtype)
                outs = {"softrep": softrep.mm(torch.from_numpy(a), torch.from_numpy(b)).numpy(),
                        "torch": torch.mm(torch.from_numpy(a), torch.from_numpy(b)).numpy()}
                chunks = k // CHUNK
                if chunks > 1:  # K split by the caller: chains of CHUNK, then the documented sum over chunks
                    a_chunks = torch.from_numpy(np.ascontiguousarray(a.reshape(4, chunks, CHUNK).transpose(1, 0, 2)))
                    b_chunks = torch.from_numpy(b.reshape(chunks, CHUNK, 4))
                    outs["chunked"] = softrep.sum(softrep.bmm(a_chunks, b_chunks), 0).numpy()
                worst = {name: 0.0 for name in outs}
                for i in range(4):
                    for j in range(4):
                        prods = exact_products(a[i], np.ascontiguousarray(b[:, j]))
                        scale = math.fsum(np.abs(np.concatenate(prods)))  # sum |a_k b_k| (to 2^-53)
                        for name, out in outs.items():
                            worst[name] = max(worst[name], abs(error_of(out[i, j], prods)) / scale)
                chunked = [sci(worst["chunked"]), sci(gamma(CHUNK + sum_depth(chunks), u))] if chunks > 1 else ["", ""]
                rows.append([dtype, kind, k, sci(worst["softrep"]), sci(worst["torch"]), sci(gamma(k, u))] + chunked)
    table(f"mm (4 x K) @ (K x 4): |error| / sum|a_k b_k|   bound: gamma_K\n"
          f"  chunked: softrep.sum(softrep.bmm(...), 0) over K/{CHUNK} chunks of {CHUNK}, "
          f"bound gamma_({CHUNK} + L(K/{CHUNK}))",
          ["dtype", "terms", "K", "softrep", "torch", "bound", "chunked", "bound"], rows)

    # ---- sum: blocks of 128 left to right, then a pairwise tree; |err| <= gamma_L sum|x|
    rows = []
    for dtype in ("float32", "float64"):
        u = UNIT_ROUNDOFF[dtype]
        for kind in ("positive", "signed"):
            for n in sizes:
                x = terms(kind, (8, n), dtype)
                outs = {"softrep": softrep.sum(torch.from_numpy(x), 1).numpy(),
                        "torch": torch.sum(torch.from_numpy(x), 1).numpy()}
                worst = {name: 0.0 for name in outs}
                for r in range(8):
                    x64 = x[r].astype(np.float64)
                    scale = math.fsum(np.abs(x64))
                    for name, out in outs.items():
                        worst[name] = max(worst[name], abs(error_of(out[r], [x64])) / scale)
                depth = sum_depth(n)
                rows.append([dtype, kind, n, sci(worst["softrep"]), sci(worst["torch"]), depth, sci(gamma(depth, u)),
                             sci(gamma(n - 1, u)), sci(gamma((n - 1).bit_length(), u))])
    table("sum of n terms: |error| / sum|x|   bound: gamma_L, L = min(n,128) - 1 + ceil(log2(ceil(n/128)))\n"
          "  (for comparison: the bound of one left-to-right chain, gamma_(n-1), and of a pairwise tree, "
          "gamma_ceil(log2 n))",
          ["dtype", "terms", "n", "softrep", "torch", "L", "bound", "chain", "pairwise"], rows)

    # ---- mean and var (float32, exact rational reference)
    u = UNIT_ROUNDOFF["float32"]
    rows_mean, rows_var = [], []
    for offset in (0.0, 100.0):
        for n in sizes:
            x = (offset + rng.standard_normal((4, n))).astype(np.float32)
            t = torch.from_numpy(x)
            means = {"softrep": softrep.mean(t, 1).numpy(), "torch": torch.mean(t, 1).numpy()}
            vars_ = {"softrep": softrep.var(t, 1).numpy(), "torch": torch.var(t, 1).numpy()}
            worst_mean = {name: 0.0 for name in means}
            worst_var = {name: 0.0 for name in vars_}
            bound_mean = bound_var = 0.0
            depth = sum_depth(n)
            for r in range(4):
                ints = scaled_integers(x[r])
                s1 = sum(ints)
                abs_sum = Fraction(sum(abs(i) for i in ints), 2**149)
                exact_mean = Fraction(s1, n * 2**149)
                exact_var = Fraction(n * sum(i * i for i in ints) - s1 * s1, n * (n - 1) * 2**298)
                for name in means:
                    worst_mean[name] = max(worst_mean[name], float(abs(Fraction(float(means[name][r])) - exact_mean)
                                                                   / (abs_sum / n)))
                    worst_var[name] = max(worst_var[name],
                                          float(abs(Fraction(float(vars_[name][r])) - exact_var) / exact_var))
                # mean: (L + 1) roundings (n < 2^24 converts exactly); var: gamma_(L+4) plus the
                # second-order term of the computed mean's error (docs/order.md)
                bound_mean = gamma(depth + 1, u)
                mean_err = gamma(depth + 1, u) * float(abs_sum / n)
                bound_var = max(bound_var, gamma(depth + 4, u)
                                + (1 + gamma(depth + 4, u)) * n / (n - 1) * mean_err**2 / float(exact_var))
            rows_mean.append([offset, n, sci(worst_mean["softrep"]), sci(worst_mean["torch"]), sci(bound_mean)])
            rows_var.append([offset, n, sci(worst_var["softrep"]), sci(worst_var["torch"]), sci(bound_var)])
    table("mean of n float32 terms offset + N(0,1): |error| / (sum|x| / n)   bound: gamma_(L+1)",
          ["offset", "n", "softrep", "torch", "bound"], rows_mean)
    table("var (two-pass, correction 1) of the same terms: relative error   bound: gamma_(L+4) + second order",
          ["offset", "n", "softrep", "torch", "bound"], rows_var)

    # ---- logsumexp / softmax / log_softmax along a row of n (float32, float64 reference)
    rows = []
    for n in sizes:
        x = rng.standard_normal((4, n)).astype(np.float32)
        t = torch.from_numpy(x)
        results = {
            "softrep": (softrep.logsumexp(t, 1).numpy(), softrep.softmax(t, 1).numpy(), softrep.log_softmax(t, 1).numpy()),
            "torch": (torch.logsumexp(t, 1).numpy(), torch.softmax(t, 1).numpy(), torch.log_softmax(t, 1).numpy()),
        }
        worst = {name: [0.0, 0.0, 0.0] for name in results}
        bounds = [0.0, 0.0, 0.0]
        depth = sum_depth(n)
        for r in range(4):
            x64 = x[r].astype(np.float64)
            m = x64.max()
            z = x64 - m  # exact in float64
            total = math.fsum(np.exp(z))
            lse = m + math.log(total)
            soft = np.exp(z) / total
            logsoft = z - math.log(total)
            for name, (lse_, soft_, logsoft_) in results.items():
                w = worst[name]
                w[0] = max(w[0], abs(float(lse_[r]) - lse))
                w[1] = max(w[1], float(np.max(np.abs(soft_[r].astype(np.float64) - soft) / soft)))
                w[2] = max(w[2], float(np.max(np.abs(logsoft_[r].astype(np.float64) - logsoft))))
            # first-order bounds of docs/order.md ("Accuracy of the orders", softmax and kin)
            log_n = math.log(n)
            bounds[0] = max(bounds[0], u * (depth + 1 + 2 * log_n + abs(lse)))
            bounds[1] = max(bounds[1], u * (depth + 3 + log_n + float(np.max(np.abs(z)))))
            bounds[2] = max(bounds[2], u * (depth + 1 + 2 * log_n + float(np.max(np.abs(z) + np.abs(logsoft)))))
        rows.append([n, sci(worst["softrep"][0]), sci(worst["torch"][0]), sci(bounds[0]),
                     sci(worst["softrep"][1]), sci(worst["torch"][1]), sci(bounds[1]),
                     sci(worst["softrep"][2]), sci(worst["torch"][2]), sci(bounds[2])])
    table("logsumexp (absolute error), softmax (largest relative error of an element), log_softmax (largest "
          "absolute error)\n  of a row of n float32 N(0,1) logits; bounds to first order in u",
          ["n", "lse softrep", "torch", "bound", "softmax softrep", "torch", "bound",
           "log_softmax softrep", "torch", "bound"], rows)

    # ---- layer_norm over a row of n (float32, float64 reference)
    rows = []
    for offset in (0.0, 100.0):
        for n in sizes:
            x = (offset + rng.standard_normal((4, n))).astype(np.float32)
            t = torch.from_numpy(x)
            outs = {"softrep": softrep.layer_norm(t, (n,)).numpy(), "torch": torch.nn.functional.layer_norm(t, (n,)).numpy()}
            worst = {name: 0.0 for name in outs}
            bound = 0.0
            depth = sum_depth(n)
            for r in range(4):
                x64 = x[r].astype(np.float64)
                m = math.fsum(x64) / n
                d = x64 - m
                s = math.sqrt(math.fsum(d * d) / n + 1e-5)
                ref = d / s
                for name, out in outs.items():
                    worst[name] = max(worst[name], float(np.max(np.abs(out[r].astype(np.float64) - ref))))
                bound = max(bound, u * ((depth + 1) * float(np.mean(np.abs(x64))) / s
                                        + (depth + 11) / 2 * float(np.max(np.abs(ref)))))
            rows.append([offset, n, sci(worst["softrep"]), sci(worst["torch"]), sci(bound)])
    table("layer_norm (no weight or bias) of a row of n float32 terms offset + N(0,1): largest absolute error\n"
          "  bound to first order: u ((L+1) mean|x| / s + (L+11)/2 max|xhat|)",
          ["offset", "n", "softrep", "torch", "bound"], rows)


if __name__ == "__main__":
    main()
