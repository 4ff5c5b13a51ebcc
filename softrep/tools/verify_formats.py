"""`verify-formats`: check softrep's low-precision rounding against independent references.

    python -m softrep.tools.verify_formats [--exhaustive] [--backend cpu|cuda] [--modes M,...]
                                  [--mx] [--mx-formats F,...] [--mx-blocks N] [--bf16-ops] [--samples N] [--bf16-ops-rows N] [--chunk-bits B]

Conversions (always): float32 -> bfloat16, float16, float8_e4m3fn, float8_e5m2,
in every deterministic rounding (`--modes`, default all six), compared bit for
bit with `reference_conversion`: ml_dtypes (numpy for float16) gives the
nearest value, the format's encoding the two neighbours, exact float64
comparisons the choice, and docs/lowprecision.md's overflow rule the values
beyond the largest finite one.  Bit for bit means a NaN result must be the
canonical 0x7FC00000 and the sign of zero counts.  `--exhaustive` takes all
2**32 float32 bit patterns; otherwise N random bit patterns plus special
values.

`--mx`: the OCP Microscaling formats (mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3,
mxfp6_e3m2, mxfp4_e2m1, mxint8; `--mx-formats` to pick) in every
deterministic rounding of `--modes`, on `--mx-blocks` blocks of 32 float32
values (random bit patterns, normal values at random scales, and blocks with
zeros, infinities, NaNs, subnormals and grid ties), compared bit for bit with
`reference_mx`: the shared exponent from frexp of the block's largest
magnitude (OCP MX v1.0 section 6.3), the element rounding by exact float64
scaling and comparison, saturation, the NaN scale for a block with an
infinity or a NaN (canonical 0x7FC00000), signed zeros.

`--bf16-ops`: add and mul of bfloat16 pairs, in every deterministic rounding,
against a reference written separately (Numba, scalar): the exact sum
(float64 TwoSum) or product (exact in float64), rounded by float64 scaling and
comparison; a NaN result must be the canonical 0x7FC00000.  The first operand
runs over `--bf16-ops-rows` bit patterns (all 65536 = all 2**32 pairs; fewer =
evenly spaced rows), the second over all 65536; `--bf16-ops-only` picks
op-modes.
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import torch
from numba import njit, prange

from ..primitives.jit import bitcast

FORMATS = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
MODES = ("nearest", "nearest_away", "down", "up", "zero", "odd")


def _reference_dtype(name):
    if name == "float16":
        return np.float16
    import ml_dtypes

    return getattr(ml_dtypes, name)


def special_float32_bits():
    """Zeros, infinities, NaNs, every binade edge and the ties of every format."""
    vals = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 1, 0x7F7FFFFF]
    for e in range(256):
        base = e << 23
        for frac in (0, 1, 0x7FFFFF, 0x400000, 0x3FFFFF, 0x400001):
            vals.append(base | frac)
        for drop in (13, 16, 20, 21):  # ties and neighbours for 11-, 8-, 4- and 3-bit significands
            half = 1 << (drop - 1)
            for k in (0, 1, 2, 3):
                for d in (-1, 0, 1):
                    vals.append(base | ((k << drop) + half + d) & 0x7FFFFF)
    vals = np.array(vals, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    vals = vals.astype(np.uint32)
    return np.unique(np.concatenate([vals, vals | np.uint32(0x80000000)]))


def compare_bits(got, ref):
    """Number of mismatches between two float32 arrays, bit for bit (a NaN matches only
    the same NaN: the reference gives the canonical 0x7FC00000; the sign of zero counts)."""
    bad = np.flatnonzero(got.view(np.uint32) != ref.view(np.uint32))
    return int(bad.size), bad


_CANONICAL_NAN = np.uint32(0x7FC00000)
_UINT = {1: np.uint8, 2: np.uint16}


def _grid_step(values, dt, up):
    """The neighbour of each finite value (an array of the format's numpy dtype) on the
    format's grid toward +inf (up) or -inf, from the sign-magnitude encoding: a
    magnitude step is an integer step of the code.  Up from +-0 is the smallest
    positive subnormal, down from +-0 the smallest negative one; a negative value
    stepping up to magnitude 0 gives -0 (the sign of a value rounded to zero)."""
    u = _UINT[dt.itemsize]
    code = values.view(u).astype(np.int64)
    sign = 1 << (8 * dt.itemsize - 1)
    neg = (code & sign) != 0
    mag = code & (sign - 1)
    away = neg != up  # the step increases the magnitude (positive up, negative down)
    new = np.where(away, code + 1, code - 1)
    new = np.where(mag == 0, 1 if up else sign | 1, new)
    return new.astype(u).view(dt)


def reference_conversion(bits, fmt, mode):
    """float32 bit patterns `bits` rounded to `fmt` in `mode`, as float32 values (NaN:
    the canonical 0x7FC00000), following docs/lowprecision.md "Roundings": ml_dtypes
    (numpy for float16) gives the nearest value, the format's encoding the neighbours
    lo < v < hi, and exact float64 comparisons the choice; above the largest finite
    value, the overflow rule."""
    dt = np.dtype(_reference_dtype(fmt))
    info = np.finfo(dt) if fmt == "float16" else __import__("ml_dtypes").finfo(dt)
    maxf = float(info.max)
    p = int(info.nmant) + 1
    spacing = 2.0 ** (math.floor(math.log2(maxf)) - (p - 1))  # grid step above the largest binade
    threshold = maxf + spacing / 2  # ties between the largest finite value and the next (unbounded) one
    max_odd = (int(np.array(maxf, dt).view(_UINT[dt.itemsize])) & 1) == 1
    overflow_value = np.inf if fmt != "float8_e4m3fn" else np.nan
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs
        xd = x.astype(np.float64)
    finite = np.isfinite(xd) & (np.abs(xd) <= maxf)
    with np.errstate(all="ignore"):
        n = x.astype(dt)
    nd = n.astype(np.float64)
    exact = finite & (nd == xd)
    lo_n = np.where(nd < xd, n, _grid_step(np.where(finite, n, np.zeros_like(n)), dt, up=False))
    hi_n = np.where(nd > xd, n, _grid_step(np.where(finite, n, np.zeros_like(n)), dt, up=True))
    lo, hi = lo_n.astype(np.float64), hi_n.astype(np.float64)
    pos = xd > 0
    if mode == "nearest":
        res = nd
    elif mode == "nearest_away":
        tie = xd == (lo + hi) / 2  # exact in float64: lo and hi have at most 11 significant bits
        res = np.where(tie, np.where(pos, hi, lo), nd)
    elif mode == "down":
        res = lo
    elif mode == "up":
        res = hi
    elif mode == "zero":
        res = np.where(pos, lo, hi)
    elif mode == "odd":
        lo_odd = (lo_n.view(_UINT[dt.itemsize]) & 1) == 1
        res = np.where(lo_odd, lo, hi)
    else:
        raise ValueError(f"reference_conversion: mode must be one of {', '.join(MODES)}, got {mode!r}")
    res = np.where(exact, xd, res)
    # |v| above the largest finite value: the unbounded rounding is max or beyond
    big = np.isfinite(xd) & (np.abs(xd) > maxf)
    a = np.abs(xd)
    beyond = {"nearest": (a > threshold) | ((a == threshold) & max_odd),
              "nearest_away": a >= threshold,
              "down": ~pos, "up": pos, "zero": np.zeros_like(pos), "odd": np.zeros_like(pos)}[mode]
    res = np.where(big, np.where(beyond, np.copysign(overflow_value, xd), np.copysign(maxf, xd)), res)
    res = np.where(np.isinf(xd), np.copysign(overflow_value, xd), res)  # infinities stay (NaN in e4m3fn)
    res = np.where(np.isnan(xd), np.nan, res)
    out = res.astype(np.float32)
    return np.where(np.isnan(out), _CANONICAL_NAN.view(np.float32), out).astype(np.float32)


def check_conversion(bits, fmt, mode="nearest"):
    """(mismatches, first bad bit patterns) for float32 patterns `bits` -> fmt in `mode`."""
    from ..ops import lowp

    x = bits.view(np.float32)
    got = lowp.round_to(torch.from_numpy(x), fmt, mode).numpy()
    ref = reference_conversion(bits, fmt, mode)
    count, where = compare_bits(got, ref)
    return count, bits[where[:5]]


# ---------------------------------------------------------------------------- MX reference

MX_FORMATS = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4_e2m1", "mxint8")
# element (precision, emin, emax, largest finite value) from the OCP MX v1.0 tables;
# MXINT8's element is k * 2**-6 with |k| <= 127 (precision None: a fixed quantum)
_MX_ELEMENTS = {
    "mxfp8_e4m3": (4, -6, 8, 448.0),
    "mxfp8_e5m2": (3, -14, 15, 57344.0),
    "mxfp6_e2m3": (4, 0, 2, 7.5),
    "mxfp6_e3m2": (3, -2, 4, 28.0),
    "mxfp4_e2m1": (2, 0, 2, 6.0),
    "mxint8": (None, 0, 0, 127 / 64),
}


def reference_mx(x, fmt, mode):
    """x (blocks, 32) float32 rounded to the MX format `fmt` in `mode`, as float32
    (NaN: the canonical 0x7FC00000), written independently of softrep: the shared
    exponent s = floor(log2(amax)) - emax_elem (frexp), at least -127, NaN for a
    block with an infinity or NaN; t = x * 2**-s exactly in float64; the element
    quantum 2**q from frexp(t) (or 2**-6 for MXINT8); u = |t| / 2**q, its floor and
    fraction (all exact: |t| has at most 24 significant bits and u < 2**8), the
    mode's choice, saturation at the largest element; the result k * 2**q * 2**s
    with the sign of x (zeros keep theirs)."""
    with np.errstate(invalid="ignore", divide="ignore"):  # the NaN and infinite blocks are masked at the end
        return _reference_mx(x, fmt, mode)


def _reference_mx(x, fmt, mode):
    p, emin, emax, maxv = _MX_ELEMENTS[fmt]
    xd = x.astype(np.float64)
    finite = np.all(np.isfinite(xd), axis=1)
    amax = np.max(np.where(np.isfinite(xd), np.abs(xd), 0.0), axis=1)
    lead = np.frexp(amax)[1] - 1
    s = np.where(amax > 0, lead - emax, -127)
    s = np.maximum(s, -127)[:, None].astype(np.float64)
    t = xd * np.exp2(-s)
    a = np.abs(t)
    neg = np.signbit(t)
    if p is None:
        q = np.full_like(a, -6.0)
    else:
        q = (np.maximum(np.frexp(a)[1] - 1, emin) - p + 1).astype(np.float64)
    u = a * np.exp2(-q)
    low = np.floor(u)
    rest = u - low
    odd = np.mod(low, 2) == 1
    inexact = rest != 0
    up = {"nearest": (rest > 0.5) | ((rest == 0.5) & odd), "nearest_away": rest >= 0.5,
          "down": inexact & neg, "up": inexact & ~neg, "zero": np.zeros_like(inexact),
          "odd": inexact & ~odd}[mode]
    r = np.minimum((low + up) * np.exp2(q), maxv)  # the specification clamps every overflow
    res = np.where(neg, -r, r) * np.exp2(s)
    res = np.where(finite[:, None], res, np.nan).astype(np.float32)
    return np.where(np.isnan(res), _CANONICAL_NAN.view(np.float32), res).astype(np.float32)


def mx_blocks(count, seed=0):
    """`count` blocks of 32 float32 values: a third random bit patterns, a third
    normal values at random scales, a third with the edges (zeros, subnormal
    inputs, infinities, NaNs, float32's largest binade, ties of every element grid)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n1 = count // 3
    n2 = count // 3
    n3 = count - n1 - n2
    bits = rng.integers(0, 1 << 32, size=(n1, 32), dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = (rng.standard_normal((n2, 32)) * np.exp2(rng.integers(-140, 125, (n2, 1)))).astype(np.float32)
    # edges: small integers over a power of two hit the ties of every grid; sprinkle specials
    edge = (rng.integers(-512, 513, (n3, 32)) * np.exp2(rng.integers(-150, 118, (n3, 1)))).astype(np.float32)
    pick = rng.integers(0, 8, (n3, 32))
    edge = np.where(pick == 0, np.float32(0), edge)
    edge = np.where((pick == 1) & (rng.integers(0, 64, (n3, 1)) == 0), np.float32(np.inf), edge)
    edge = np.where((pick == 2) & (rng.integers(0, 64, (n3, 1)) == 0), np.float32(np.nan), edge)
    edge = np.where(pick == 3, np.float32(-0.0), edge)
    return np.concatenate([bits, normal, edge]).astype(np.float32)


def check_mx(x, fmt, mode):
    """(mismatches, first bad (block, index, input bits)) of round_to(x, fmt, mode) against reference_mx."""
    from ..ops import lowp

    got = lowp.round_to(torch.from_numpy(x), fmt, mode).numpy()
    ref = reference_mx(x, fmt, mode)
    count, where = compare_bits(got.reshape(-1), ref.reshape(-1))
    return count, [(int(w) // 32, int(w) % 32, hex(int(x.reshape(-1)[w:w + 1].view(np.uint32)[0])))
                   for w in where[:3]]


# ---------------------------------------------------------------------------- bf16 ops reference

_BF16_MAX = float.fromhex("0x1.fep127")
_NEAREST, _NEAREST_AWAY, _DOWN, _UP, _ZERO, _ODD = range(6)  # indices into MODES


@njit(cache=True)
def _round_bf16(s, e, mode, zero_down_sign):
    """Round the exact value s + e (float64, |e| <= ulp(s)/2, s = RN(s + e)) to
    bfloat16 in `mode`, as a float64.  Written independently of softrep.primitives.formats:
    float64 scaling by the quantum and comparisons with half a quantum; every
    step is exact (powers of two, floor, and a difference of two multiples of
    ulp(s) that is below 2 quanta)."""
    if s != s or s == np.inf or s == -np.inf:
        return s
    if s == 0.0:
        return zero_down_sign if mode == _DOWN else s
    neg = s < 0.0
    mag = abs(s)
    me = -e if neg else e  # the error in the direction of the magnitude
    frac, ex = math.frexp(mag)  # mag = frac 2^ex, frac in [1/2, 1)
    lead = ex - 1
    if frac == 0.5 and me < 0.0:  # the exact value lies just below a power of two
        lead -= 1
    quantum = math.ldexp(1.0, max(lead, -126) - 7)
    t = mag / quantum
    low = np.floor(t)  # below 2^9: the significand's integer
    if t == low and me < 0.0:
        low -= 1.0
    d0 = mag - low * quantum
    half = 0.5 * quantum
    above = d0 > half or (d0 == half and me > 0.0)
    tie = d0 == half and me == 0.0
    inexact = d0 != 0.0 or me != 0.0
    odd = (np.int64(low) & 1) == 1
    if mode == _NEAREST:
        up = above or (tie and odd)
    elif mode == _NEAREST_AWAY:
        up = above or tie
    elif mode == _DOWN:
        up = inexact and neg
    elif mode == _UP:
        up = inexact and not neg
    elif mode == _ZERO:
        up = False
    else:  # _ODD
        up = inexact and not odd
    res = (low + (1.0 if up else 0.0)) * quantum
    if res > _BF16_MAX:  # overflow: inf, or the largest finite value toward zero
        to_inf = mode == _NEAREST or mode == _NEAREST_AWAY or (mode == _DOWN and neg) or (mode == _UP and not neg)
        res = np.inf if to_inf else _BF16_MAX
    return -res if neg else res


@njit(cache=True)
def reference_bf16_op(a, b, op, mode):
    """bfloat16 `op` (0 add, 1 mul) of float64 a, b in `mode`, as a float64."""
    if op == 0:
        s = a + b
        if s != s or s == np.inf or s == -np.inf:
            return s
        bb = s - a
        e = (a - (s - bb)) + (b - bb)  # TwoSum: s + e = a + b exactly
        # an exact zero sum is -0 when rounding down unless both operands are +0
        both_pos_zero = a == 0.0 and b == 0.0 and not np.signbit(a) and not np.signbit(b)
        return _round_bf16(s, e, mode, 0.0 if both_pos_zero else -0.0)
    s = a * b  # exact: 8 + 8 significant bits, exponents far inside float64's range
    return _round_bf16(s, 0.0, mode, s)


@njit(parallel=True, cache=True)
def _check_bf16_block(rows, cols, got, op, mode):
    """Per row: mismatches of got[r * cols.size + j] against the reference for
    (rows[r], cols[j]), and the first mismatching j (-1 if none).  A NaN must be
    the canonical 0x7FC00000."""
    n = cols.size
    got_bits = got.view(np.uint32)
    count = np.zeros(rows.size, np.int64)
    first = np.full(rows.size, -1, np.int64)
    for r in prange(rows.size):
        a = np.float64(rows[r])
        for j in range(n):
            ref = np.float32(reference_bf16_op(a, np.float64(cols[j]), op, mode))
            want = np.uint32(0x7FC00000) if ref != ref else bitcast(ref)
            if got_bits[r * n + j] != want:
                count[r] += 1
                if first[r] < 0:
                    first[r] = j
    return count, first


def bf16_values():
    """All 65536 bfloat16 bit patterns as float32 values."""
    return (np.arange(65536, dtype=np.uint32) << np.uint32(16)).view(np.float32)


def check_bf16_rows(rows, op, mode):
    """Mismatches of op(a, b) for a in `rows` (float32 holding bf16 values) and every
    bf16 b: (count, up to 3 (a, b, got, reference))."""
    from ..ops.elementwise import emulated

    cols = bf16_values()
    A = torch.from_numpy(np.ascontiguousarray(rows).reshape(-1, 1))
    B = torch.from_numpy(cols.reshape(1, -1))
    got = emulated(op, [A, B], "bfloat16", mode).numpy().reshape(-1)
    op_code, mode_code = ("add", "mul").index(op), MODES.index(mode)
    count, first = _check_bf16_block(rows, cols, got, op_code, mode_code)
    bad = []
    for r in np.flatnonzero(count)[:3]:
        a, b = float(rows[r]), float(cols[first[r]])
        ref = np.float32(reference_bf16_op(a, b, op_code, mode_code))
        bad.append((a, b, float(got[r * cols.size + first[r]]), float(ref)))
    return int(count.sum()), bad


# ---------------------------------------------------------------------------- command


def main(argv=None):
    parser = argparse.ArgumentParser(prog="softrep verify-formats", description=__doc__.split("\n\n")[0])
    parser.add_argument("--exhaustive", action="store_true", help="all 2**32 float32 inputs")
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--samples", type=int, default=1_000_000, help="random inputs without --exhaustive")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset of " + ",".join(FORMATS))
    parser.add_argument("--modes", default=",".join(MODES),
                        help="conversion roundings, comma-separated subset of " + ",".join(MODES))
    parser.add_argument("--no-conversions", action="store_true", help="skip the conversion checks")
    parser.add_argument("--mx", action="store_true", help="check the OCP Microscaling formats")
    parser.add_argument("--mx-formats", default=",".join(MX_FORMATS),
                        help="with --mx, comma-separated subset of " + ",".join(MX_FORMATS))
    parser.add_argument("--mx-blocks", type=int, default=100_000, help="with --mx, blocks of 32 per format and mode")
    parser.add_argument("--bf16-ops", action="store_true", help="check bfloat16 add and mul of all pairs")
    parser.add_argument("--bf16-ops-rows", type=int, default=65536,
                        help="first operands to take (evenly spaced of 65536; 65536 = all pairs)")
    parser.add_argument("--bf16-ops-only", default=None, metavar="OP:MODE,...",
                        help="with --bf16-ops, only these (e.g. mul:up,mul:odd); default: add and mul in every mode")
    parser.add_argument("--chunk-bits", type=int, default=24, help="log2 of the inputs per chunk")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ["SOFTREP_BACKEND"] = args.backend
    from tqdm import tqdm

    rows_out = []

    def record(name, checked, mismatches, start, first_bad):
        rows_out.append((name, checked, mismatches, time.perf_counter() - start))
        print(f"done: {rows_out[-1]}", flush=True)
        if mismatches:
            print(f"MISMATCH {name}: {first_bad}", file=sys.stderr)

    if not args.no_conversions:
        formats = [f for f in args.formats.split(",") if f]
        modes = [m for m in args.modes.split(",") if m]
        for fmt in formats:
            if fmt not in FORMATS:
                parser.error(f"unknown format {fmt!r}")
        for mode in modes:
            if mode not in MODES:
                parser.error(f"--modes: unknown rounding {mode!r}; use {', '.join(MODES)}")
        for fmt in formats:
            for mode in modes:
                start = time.perf_counter()
                mismatches, examples, checked = 0, [], 0
                if args.exhaustive:
                    chunk = 1 << args.chunk_bits
                    offsets = np.arange(chunk, dtype=np.uint32)
                    bar = tqdm(range(0, 1 << 32, chunk), desc=f"float32 -> {fmt} {mode}", unit="chunk")
                    for lo in bar:
                        bits = offsets + np.uint32(lo)
                        n, ex = check_conversion(bits, fmt, mode)
                        mismatches += n
                        examples += list(ex)
                        checked += bits.size
                        bar.set_postfix(checked=checked, mismatches=mismatches)
                        if n:
                            print(f"MISMATCH {fmt} {mode}: chunk {lo:#x}: {[hex(int(b)) for b in ex]}",
                                  file=sys.stderr, flush=True)
                else:
                    rng = np.random.Generator(np.random.PCG64(args.seed))
                    random = rng.integers(0, 1 << 32, size=args.samples, dtype=np.uint64).astype(np.uint32)
                    bits = np.concatenate([random, special_float32_bits()])
                    mismatches, ex = check_conversion(bits, fmt, mode)
                    examples = list(ex)
                    checked = bits.size
                record(f"float32 -> {fmt}, {mode}", checked, mismatches, start,
                       f"first inputs {[hex(int(b)) for b in examples[:5]]}")
    if args.mx:
        mx_formats = [f for f in args.mx_formats.split(",") if f]
        for fmt in mx_formats:
            if fmt not in MX_FORMATS:
                parser.error(f"--mx-formats: unknown format {fmt!r}; use {', '.join(MX_FORMATS)}")
        modes = [m for m in args.modes.split(",") if m]
        for mode in modes:
            if mode not in MODES:
                parser.error(f"--modes: unknown rounding {mode!r}; use {', '.join(MODES)}")
        blocks = mx_blocks(args.mx_blocks, args.seed)
        for fmt in mx_formats:
            for mode in modes:
                start = time.perf_counter()
                mismatches, examples = check_mx(blocks, fmt, mode)
                record(f"float32 -> {fmt} (blocks of 32), {mode}", blocks.size, mismatches, start,
                       f"(block, index, input bits) {examples}")
    if args.bf16_ops:
        all_rows = bf16_values()
        nrows = max(1, min(args.bf16_ops_rows, 65536))
        picks = all_rows[np.linspace(0, 65535, nrows).round().astype(np.int64)] if nrows < 65536 else all_rows
        block = max(1, (1 << args.chunk_bits) // 65536)
        pairs = [(op, mode) for op in ("add", "mul") for mode in MODES]
        if args.bf16_ops_only:
            wanted = [tuple(item.split(":")) for item in args.bf16_ops_only.split(",") if item]
            unknown = [":".join(w) for w in wanted if w not in pairs]
            if unknown:
                parser.error(f"--bf16-ops-only: unknown {', '.join(unknown)}; "
                             f"use OP:MODE with OP in add, mul and MODE in {', '.join(MODES)}")
            pairs = wanted
        for op, mode in pairs:
            start = time.perf_counter()
            mismatches, checked, examples = 0, 0, []
            for lo in tqdm(range(0, picks.size, block), desc=f"bf16 {op} {mode}", unit="chunk"):
                rows = picks[lo:lo + block]
                n, bad = check_bf16_rows(rows, op, mode)
                mismatches += n
                examples += bad
                checked += rows.size * 65536
            record(f"bfloat16 {op}, {mode}", checked, mismatches, start, f"(a, b, got, ref) {examples[:3]}")
    print(f"\nbackend: {args.backend}")
    print("| check | inputs checked | mismatches | time (s) |")
    print("|---|---:|---:|---:|")
    for name, checked, mismatches, elapsed in rows_out:
        print(f"| {name} | {checked:,} | {mismatches} | {elapsed:.1f} |")
    return 1 if any(mismatches for _, _, mismatches, _ in rows_out) else 0


if __name__ == "__main__":
    sys.exit(main())
