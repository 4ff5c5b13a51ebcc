"""`python -m softrep verify-lowp`: the math functions on bfloat16 and float16
tensors against MPFR, over every input.

For each unary function and each format, all 2^16 bit patterns are run
through softrep's op on a tensor of that dtype and compared bit for bit with
MPFR (gmpy2) evaluated at the format's own precision and exponent range with
subnormals (bfloat16: 8 bits, emin -132, emax 128; float16: 11 bits, emin -23,
emax 16): MPFR rounds each function correctly in that context, so its result
is the correctly rounded value.  NaN results must be the canonical NaN.
sigmoid, which MPFR lacks, is 1/(1 + e^-x) evaluated at 256 and at 384 bits
and rounded to the format; the two must agree (they do: no input is that
close to a rounding boundary).

Binary functions (pow, hypot) have 2^32 input pairs; they are checked on
`--pairs` random pairs per format plus every pair of special values, not
exhaustively.

--write records, for each unary function and format, the inputs where the
float32 result rounded once more to the format is wrong, with their MPFR
results, in softrep/algorithms/math/lowp_exceptions.py (the ops correct them
by selection); the check then runs against the new table on the next call.
"""

import argparse
import os
import sys

import numpy as np
import torch

from ..ops import math as M

# (precision, emin, emax) of MPFR contexts that hold exactly the format's values
CONTEXTS = {"bfloat16": (8, -132, 128), "float16": (11, -23, 16)}
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
UNARY = ["atan", "cbrt", "cos", "cosh", "erf", "erfc", "exp", "exp10", "exp2", "expm1", "log", "log10", "log1p",
         "log2", "rsqrt", "sigmoid", "sin", "sinh", "tan", "tanh"]
BINARY = ["hypot", "pow"]
TABLE_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "algorithms", "math",
                          "lowp_exceptions.py")


def _mpfr_function(gmpy2, name):
    if name == "rsqrt":
        return lambda x: gmpy2.rec_sqrt(x) if not gmpy2.is_zero(x) else 1 / x  # IEEE: rsqrt(-0) = -inf
    if name == "pow":
        return lambda x, y: x ** y
    return getattr(gmpy2, name)


def _sigmoid(gmpy2, x, ctx):
    """1/(1 + e^-x) rounded to the format of `ctx`, via 256 and 384 bits (which must agree)."""
    results = []
    for bits in (256, 384):
        with gmpy2.context(precision=bits, emin=-(1 << 30), emax=1 << 30):
            v = 1 / (1 + gmpy2.exp(-x))
        with gmpy2.context(ctx):
            results.append(float(+v))
    if results[0] != results[1] and not (np.isnan(results[0]) and np.isnan(results[1])):
        raise AssertionError(f"sigmoid({x}): the 256- and 384-bit evaluations round differently")
    return results[0]


def reference(name, fmt, *columns):
    """MPFR's correctly rounded results (float64 numpy array) at the format's precision and range."""
    import gmpy2

    precision, emin, emax = CONTEXTS[fmt]
    ctx = gmpy2.context(precision=precision, emin=emin, emax=emax, subnormalize=True)
    out = np.empty(len(columns[0]), dtype=np.float64)
    if name == "sigmoid":
        for i, x in enumerate(columns[0]):
            out[i] = _sigmoid(gmpy2, gmpy2.mpfr(float(x)), ctx)
        return out
    f = _mpfr_function(gmpy2, name)
    with gmpy2.context(ctx):
        for i, args in enumerate(zip(*columns)):
            out[i] = float(f(*(gmpy2.mpfr(float(a)) for a in args)))
    return out


def all_inputs(fmt):
    return torch.arange(65536, dtype=torch.int32).to(torch.int16).view(DTYPES[fmt])


def _bits(t):
    return t.contiguous().view(torch.int16).numpy().astype(np.int32) & 0xFFFF


def compare(result, ref, dtype):
    """Indices where the low-precision `result` tensor differs from `ref` (float64
    numpy), NaN compared as 'canonical NaN'."""
    got = _bits(result)
    want = _bits(torch.from_numpy(ref).to(torch.float32).to(dtype))  # exact: ref holds values of the format
    nan = np.isnan(ref)
    want[nan] = {torch.bfloat16: 0x7FC0, torch.float16: 0x7E00}[dtype]
    return np.nonzero(got != want)[0], want


def check_unary(name, fmt, progress=None):
    """(wrong, raw_wrong, table): inputs (bits) where softrep's op is wrong; inputs
    where the float32 result rounded again is wrong; the table that corrects them."""
    dtype = DTYPES[fmt]
    x = all_inputs(fmt)
    ref = reference(name, fmt, x.to(torch.float64).numpy())
    result = M.FUNCTIONS[name].op(x)
    wrong, want = compare(result, ref, dtype)
    raw = M.double_rounded(M.FUNCTIONS[name].spec, [x])
    raw_wrong, _ = compare(raw, ref, dtype)
    bits = _bits(x)
    table = tuple((int(bits[i]), int(want[i])) for i in sorted(raw_wrong, key=lambda i: bits[i]))
    return [int(bits[i]) for i in wrong], [int(bits[i]) for i in raw_wrong], table


def _specials(fmt):
    dtype = DTYPES[fmt]
    vals = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, float("inf"), float("-inf"), float("nan"),
            float(torch.finfo(dtype).max), -float(torch.finfo(dtype).max), float(torch.finfo(dtype).tiny),
            float(torch.finfo(dtype).smallest_normal) / 4]
    return torch.tensor(vals, dtype=torch.float32).to(dtype)


def check_binary(name, fmt, pairs, seed=0):
    """Indices of wrong results over `pairs` random pairs and all pairs of special values."""
    dtype = DTYPES[fmt]
    g = np.random.default_rng(seed)
    xs = torch.from_numpy(g.integers(0, 65536, pairs).astype(np.int32)).to(torch.int16).view(dtype)
    ys = torch.from_numpy(g.integers(0, 65536, pairs).astype(np.int32)).to(torch.int16).view(dtype)
    if name == "pow":  # many exact and near-exact cases have small integer exponents
        ys[: pairs // 4] = torch.from_numpy(g.integers(-8, 9, pairs // 4).astype(np.float32)).to(dtype)
    s = _specials(fmt)
    xs = torch.cat([xs, s.repeat_interleave(len(s))])
    ys = torch.cat([ys, s.repeat(len(s))])
    ref = reference(name, fmt, xs.to(torch.float64).numpy(), ys.to(torch.float64).numpy())
    wrong, _ = compare(M.FUNCTIONS[name].op(xs, ys), ref, dtype)
    return [(float(xs[i]), float(ys[i])) for i in wrong], len(xs)


def write_table(tables):
    """Replace the generated block of lowp_exceptions.py by `tables`."""
    with open(TABLE_FILE) as f:
        text = f.read()
    begin = text.index("# BEGIN GENERATED")
    end = text.index("# END GENERATED")
    lines = [text[begin:text.index("\n", begin) + 1], "TABLES = {\n"]
    for fmt in sorted(tables):
        lines.append(f"    {fmt!r}: {{\n")
        for name in sorted(tables[fmt]):
            entries = ", ".join(f"(0x{k:04X}, 0x{v:04X})" for k, v in tables[fmt][name])
            lines.append(f"        {name!r}: ({entries},),\n")
        lines.append("    },\n")
    lines.append("}\n")
    with open(TABLE_FILE, "w") as f:
        f.write(text[:begin] + "".join(lines) + text[end:])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m softrep verify-lowp", description=__doc__.split("\n\n")[0])
    parser.add_argument("functions", nargs="*", help="functions to check (default: all)")
    parser.add_argument("--format", choices=sorted(CONTEXTS), action="append", help="default: both")
    parser.add_argument("--pairs", type=int, default=1 << 16, help="random pairs per binary function and format")
    parser.add_argument("--write", action="store_true", help="rewrite the exception tables of the unary functions")
    args = parser.parse_args(argv)
    names = args.functions or UNARY + BINARY
    unknown = [n for n in names if n not in UNARY + BINARY]
    if unknown:
        parser.error(f"unknown function(s): {', '.join(unknown)}")
    formats = args.format or sorted(CONTEXTS)
    failures = 0
    tables = {fmt: {} for fmt in formats}
    for fmt in formats:
        for name in names:
            if name in UNARY:
                wrong, raw_wrong, table = check_unary(name, fmt)
                if table:
                    tables[fmt][name] = table
                status = "OK" if not wrong else f"FAIL ({len(wrong)} wrong: {', '.join(f'0x{b:04X}' for b in wrong[:8])})"
                print(f"{fmt:9s} {name:8s} 65536 inputs: {status}; float32 result rounded again: "
                      f"{len(raw_wrong)} wrong", flush=True)
            else:
                wrong, n = check_binary(name, fmt, args.pairs)
                status = "OK" if not wrong else f"FAIL ({len(wrong)} wrong: {wrong[:4]})"
                print(f"{fmt:9s} {name:8s} {n} pairs (sampled): {status}", flush=True)
            failures += bool(wrong)
    if args.write:
        if set(names) >= set(UNARY) and set(formats) == set(CONTEXTS):
            write_table(tables)
            print(f"wrote {TABLE_FILE}")
        else:
            print("--write needs every unary function and both formats", file=sys.stderr)
            return 2
    return 1 if failures and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["main", "check_unary", "check_binary", "reference", "CONTEXTS", "UNARY", "BINARY"]
