"""Generator of the two tables of the float64 erf's and erfc's plain-double
first steps (softrep/algorithms/math/erf64.py).

`python -m softrep.algorithms.math.erf64_fast_tables` refits both with mpmath
(a development dependency, 320-bit arithmetic), measures their error and
rewrites their data files; nothing here runs at import of softrep.

Each table cuts a range of a into pieces; on piece j, with centre c_j and
d = a - c_j, the function is approximated by the polynomial of degree
`degree` that interpolates it at the degree + 1 Chebyshev nodes of the piece
(mpmath.chebyfit).  Row j holds the coefficients of d^0 .. d^degree rounded
to double (the high words), then the remainders of those of d^0 ..
d^(low_words - 1), rounded to double (the low words).  The error of the
rounded polynomial (high words only above low_words) is measured at
SAMPLES + 1 points per piece, relative to the function, and so are the tails
sum_{m >= k} |c_m| h^m / (the function's minimum on the piece), h the
largest |d| of the piece, which the error analyses in erf64.py use.

* ERF_RATIO (erf64_ratio_data.py): G(a) = erf(a)/a (G(0) = 2/sqrt(pi)), even,
  smooth and decreasing on [0, 6), between 0.166 and 1.129.  768 uniform
  pieces of width 1/128: piece j is [j/128, (j+1)/128), centre (2j + 1)/256,
  except piece 0, whose centre is 0 (so that d = a - c_0 = a is exact for
  every tiny a).  Degree 7, three low words.
* ERFCX_FAST (erf64_erfcx_fast_data.py): R(a) = e^(a^2) erfc(a) (erfcx),
  smooth, positive and decreasing on [0, 32): the 7 binades [2^k, 2^(k+1)),
  k = -2 .. 4, of 128 pieces each, piece j = 128 (k + 2) + i being [2^k (1 +
  i/128), 2^k (1 + (i+1)/128)), centre 2^k (1 + (2i+1)/256), half-width
  h = 2^k/256; then [0, 1/4) in 128 uniform pieces of width 1/512, piece
  j = 896 + i being [i/512, (i+1)/512), centre (2i + 1)/1024, except piece
  896, whose centre is 0 (d = a exact for every tiny a).  Degree 8, four
  low words.  (erf64_table.py fits the 16-per-binade triple-double table of
  the double-double and triple-double steps.)
"""

import base64
import os
from dataclasses import dataclass

import numpy as np

SAMPLES = 400  # per piece, for the error measurement


def _uniform_pieces(j):
    """ERF_RATIO's piece j: [j/128, (j+1)/128), centre (2j + 1)/256 (piece 0: 0)."""
    lo, hi = j / 128.0, (j + 1) / 128.0
    return lo, hi, (0.0 if j == 0 else (lo + hi) / 2)


BINADE_PIECES = 7 * 128  # ERFCX_FAST's pieces of [1/4, 32), by binade
NEAR_ZERO_PIECES = 128  # ERFCX_FAST's pieces of [0, 1/4), uniform


def _binade_pieces(j):
    """ERFCX_FAST's piece j: j = 128 (k + 2) + i of binade 2^k below
    BINADE_PIECES, then [i/512, (i+1)/512) for j = BINADE_PIECES + i."""
    if j >= BINADE_PIECES:
        i = j - BINADE_PIECES
        lo, hi = i / 512.0, (i + 1) / 512.0
        return lo, hi, (0.0 if i == 0 else (lo + hi) / 2)
    k, i = -2 + j // 128, j % 128
    return 2.0**k * (1 + i / 128), 2.0**k * (1 + (i + 1) / 128), 2.0**k * (1 + (2 * i + 1) / 256)


def _erf_ratio(mp, a):
    return 2 / mp.sqrt(mp.pi) if a == 0 else mp.erf(a) / a


def _erfcx(mp, a):
    return mp.exp(a * a) * mp.erfc(a)


@dataclass(frozen=True)
class FastTable:
    name: str  # the array's name in softrep (its data is NAME_BASE64)
    data_file: str  # beside this module
    what: str  # the function, in words, for the data file's docstring
    function: object  # (mpmath, a) -> the function at a, decreasing on the table's range
    piece_bounds: object  # j -> (lo, hi, c): piece j is [lo, hi), centre c (exact binary fractions)
    pieces: int
    degree: int
    low_words: int

    @property
    def words(self):
        return self.degree + 1 + self.low_words


ERF_RATIO = FastTable("ERF_RATIO", "erf64_ratio_data.py", "G(a) = erf(a)/a", _erf_ratio, _uniform_pieces,
                      768, 7, 3)
ERFCX_FAST = FastTable("ERFCX_FAST", "erf64_erfcx_fast_data.py", "R(a) = e^(a^2) erfc(a)", _erfcx, _binade_pieces,
                       BINADE_PIECES + NEAR_ZERO_PIECES, 8, 4)
TABLES = (ERF_RATIO, ERFCX_FAST)


def fit_piece(table, j):
    """(row j of `table`: table.words doubles, max relative error of the rounded
    polynomial at SAMPLES + 1 points, [sum_{m >= k} |c_m| h^m / min for
    k = 0 .. degree]), by mpmath at 320 bits."""
    import mpmath as mp

    with mp.workprec(320):
        lo, hi, c = (mp.mpf(v) for v in table.piece_bounds(j))

        def f(d):
            return table.function(mp, c + d)

        poly = mp.chebyfit(f, [lo - c, hi - c], table.degree + 1)[::-1]  # lowest degree first
        high = [float(v) for v in poly]
        low = [float(poly[k] - mp.mpf(high[k])) for k in range(table.low_words)]
        rounded = [mp.mpf(w) for w in high]
        for k in range(table.low_words):
            rounded[k] += mp.mpf(low[k])
        h = max(abs(lo - c), abs(hi - c))
        least = f(hi - c)  # the function decreases
        tails = [sum(abs(rounded[m]) * h**m for m in range(k, table.degree + 1)) / least
                 for k in range(table.degree + 1)]
        worst = mp.mpf(0)
        for s in range(SAMPLES + 1):
            d = (lo - c) + (hi - lo) * s / SAMPLES
            p = mp.mpf(0)
            for v in reversed(rounded):
                p = p * d + v
            worst = max(worst, abs(p / f(d) - 1))
        return np.array(high + low), worst, tails


def fit(table, progress=True):
    """(array of shape (pieces, words), max relative error of the rounded
    polynomials, max over pieces of the tails by k)."""
    import mpmath as mp

    rows = np.zeros((table.pieces, table.words))
    worst, tails = 0, [0] * (table.degree + 1)
    for j in range(table.pieces):
        rows[j], w, t = fit_piece(table, j)
        worst = max(worst, w)
        tails = [max(a, b) for a, b in zip(tails, t)]
        if progress and (j % 64 == 63 or j == table.pieces - 1):
            print(f"{table.name} pieces 0..{j}: max rel err so far 2^{float(mp.log(worst, 2)):.2f}", flush=True)
    return rows, worst, tails


def write_data(table, rows, worst, tails):
    import mpmath as mp

    path = os.path.join(os.path.dirname(__file__), table.data_file)
    blob = base64.b64encode(np.ascontiguousarray(rows, "<f8").tobytes()).decode()
    lines = [blob[i:i + 100] for i in range(0, len(blob), 100)]
    entries = [f"{k}: 2^{float(mp.log(t, 2)):.1f}" for k, t in enumerate(tails)]
    with open(path, "w") as f:
        f.write('"""Generated by `python -m softrep.algorithms.math.erf64_fast_tables` (mpmath, 320 bits): do not\n'
                "edit.\n\n"
                f"{table.name}: {table.what}, shape ({rows.shape[0]}, {rows.shape[1]}), piece j, then the high\n"
                f"words of the coefficients of d^0 .. d^{table.degree} and the low words of those of\n"
                f"d^0 .. d^{table.low_words - 1}, little-endian float64 in base64 (layout: erf64_fast_tables.py).\n"
                f"Max relative error of the rounded polynomials at {SAMPLES + 1} points per piece: "
                f"2^{float(mp.log(worst, 2)):.2f}.\n"
                "Max over pieces of sum_{m >= k} |c_m| h^m / min, by k:\n"
                "    " + ", ".join(entries) + "\n"
                '"""\n\n'
                f"{table.name}_BASE64 = (\n")
        for line in lines:
            f.write(f'    "{line}"\n')
        f.write(")\n")
    return path


def load(table, blob):
    """The table's rows from its data file's base64 `blob` (a tuple of lines)."""
    rows = np.frombuffer(base64.b64decode("".join(blob)), dtype="<f8").astype(np.float64)
    return rows.reshape(table.pieces, table.words)


if __name__ == "__main__":
    for t in TABLES:
        print(write_data(t, *fit(t)))
