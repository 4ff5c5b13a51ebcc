"""Build FUNC.txt here from a published list of float64 worst cases.

    python tests/data/mathlib_hard_cases_f64/make_hard_cases.py FUNC LIST.wc

LIST.wc is CORE-MATH's worst-case list for the function
(src/binary64/FUNC/FUNC.wc: one input per line, `x,y` for hypot; lines
starting with '#' are comments).  Those lists serve all rounding modes; a
case is kept when its exact value lies within 2^-20 ulp of a round-to-nearest
boundary (a midpoint between two doubles, or the overflow threshold), which
MPFR at 320 bits decides.  Each line written is

    input_bits [input2_bits] correctly_rounded_bits distance_in_ulps

(for odd and even functions the input |x| only; for rsqrt, which is NaN
below 0, and the others, the sign follows from |x|'s line) with 16 hex
digits per double and the signed distance from the boundary in
ulps of the result.  Nothing here depends on softrep.
"""

import struct
import sys

import gmpy2

MPFR = {"rsqrt": gmpy2.rec_sqrt, "cbrt": gmpy2.cbrt, "hypot": gmpy2.hypot, "sin": gmpy2.sin, "cos": gmpy2.cos,
        "tan": gmpy2.tan, "atan": gmpy2.atan, "erf": gmpy2.erf, "erfc": gmpy2.erfc}


SYMMETRIC = ("rsqrt", "cbrt", "sin", "cos", "tan", "atan", "erf")


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def rounded(f, args):
    with gmpy2.context(precision=53, emin=-1073, emax=1024, subnormalize=True):
        return float(f(*args))


def distance_to_boundary(f, args, r):
    """(v - m) / ulp for the boundary m nearest to the exact value v (320 bits)."""
    with gmpy2.context(precision=320):
        v = f(*args)
        a = abs(v)
        r = abs(r)
        if a > gmpy2.mpfr(2) ** 1024:
            return None
        e = max(int(gmpy2.floor(gmpy2.log2(a))), -1022) - 52 if a > 0 else -1074
        ulp = gmpy2.mpfr(2) ** e
        lo = gmpy2.floor(a / ulp)
        m = (lo + gmpy2.mpfr(0.5)) * ulp
        return float((a - m) / ulp)


def main(name, path):
    f = MPFR[name]
    out = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line or "nan" in line or "inf" in line:
            continue  # special values: tested as such, not hard to round
        xs = [float.fromhex(t) for t in line.replace(",", " ").split()]
        # odd and even functions: |x| only (the tests apply both signs); erfc: both signs;
        # pairs as listed
        if name in SYMMETRIC:
            xs = [abs(x) for x in xs]
        for signs in ((1,), (-1,)) if name == "erfc" else ((1,) * len(xs),):
            args = [gmpy2.mpfr(s * x) for s, x in zip(signs, xs)]
            r = rounded(f, args)
            if r != r:
                continue  # outside the domain (rsqrt of a negative number)
            d = distance_to_boundary(f, args, r)
            if d is None or abs(d) >= 2.0**-20:
                continue
            out.append(" ".join([f"{bits(float(a)):016x}" for a in args] + [f"{bits(r):016x}", f"{d:.3e}"]))
    out = sorted(set(out))
    with open(f"{name}.txt", "w") as fh:
        fh.write(f"# {name}: float64 inputs within 2^-20 ulp of a rounding boundary, from CORE-MATH's {name}.wc\n")
        fh.write("# input_bits [input2_bits] correctly_rounded_bits distance_in_ulps (MPFR)\n")
        fh.write("\n".join(out) + "\n")
    print(name, len(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
