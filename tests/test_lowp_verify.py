"""The bfloat16 add/mul reference of `python -m softrep verify-formats --bf16-ops`.

The exhaustive run over all 2^32 pairs (docs/lowprecision.md) is only as good
as its reference, so the reference itself is checked here against MPFR (a
gmpy2 context with bfloat16's precision and exponent range), and the checker
is shown to count a wrong result."""

import gmpy2
import numpy as np
import pytest

from softrep.tools.verify_formats import MODES, _check_bf16_block, bf16_values, check_bf16_rows, reference_bf16_op

MPFR_ROUND = {"nearest": gmpy2.RoundToNearest, "down": gmpy2.RoundDown, "up": gmpy2.RoundUp,
              "zero": gmpy2.RoundToZero, "nearest_away": None, "odd": None}


def _bf16_context(round):
    # bfloat16: 8 significant bits, largest 1.fe * 2^127, smallest subnormal 2^-133
    # (MPFR exponents are those of 0.1xxx * 2^e)
    return gmpy2.context(precision=8, emax=128, emin=-132, subnormalize=True, round=round)


def mpfr_bf16(a, b, op, mode):
    """op(a, b) rounded once to bfloat16 by MPFR; nearest_away and odd are built from
    the exact value (a 600-bit MPFR sum is exact for bfloat16 operands)."""
    def apply(x, y):
        return x + y if op == "add" else x * y

    if MPFR_ROUND[mode] is not None:
        with _bf16_context(MPFR_ROUND[mode]):
            return float(apply(gmpy2.mpfr(a), gmpy2.mpfr(b)))
    with gmpy2.context(precision=600):
        exact = apply(gmpy2.mpfr(a), gmpy2.mpfr(b))
    if gmpy2.is_nan(exact) or gmpy2.is_infinite(exact) or gmpy2.is_zero(exact):
        with _bf16_context(gmpy2.RoundToNearest):
            return float(apply(gmpy2.mpfr(a), gmpy2.mpfr(b)))
    with _bf16_context(gmpy2.RoundToZero):
        toward_zero = gmpy2.mpfr(exact)
        away = gmpy2.next_toward(toward_zero, gmpy2.copy_sign(gmpy2.inf(), exact))
    if toward_zero == exact:
        return float(toward_zero)
    if mode == "odd":
        # the candidate whose last significand bit is 1 (bit 16 of the float32 pattern)
        if (int(np.float32(float(toward_zero)).view(np.uint32)) >> 16) & 1:
            return float(toward_zero)
        return float(away) if not gmpy2.is_infinite(away) else float(toward_zero)
    # nearest_away: compare with the midpoint exactly
    with gmpy2.context(precision=600):
        mid = (toward_zero + away) / 2 if not gmpy2.is_infinite(away) else None
        if mid is None:
            mid = toward_zero + (toward_zero - gmpy2.next_toward(toward_zero, gmpy2.mpfr(0))) / 2
            return float("inf") * (1 if exact > 0 else -1) if abs(exact) >= abs(mid) else float(toward_zero)
        return float(away) if abs(exact) >= abs(mid) else float(toward_zero)


def _sample_pairs(n, seed):
    values = bf16_values()
    rng = np.random.Generator(np.random.PCG64(seed))
    a = values[rng.integers(0, 65536, n)]
    b = values[rng.integers(0, 65536, n)]
    # near pairs (cancellation, carries) and the edges: zeros, subnormals, the largest values
    near = (a.view(np.uint32) ^ (rng.integers(0, 8, n).astype(np.uint32) << 16)).view(np.float32)
    edges = np.array([0.0, -0.0, 2.0**-133, -(2.0**-133), 2.0**-126, float.fromhex("0x1.fep127"),
                      -float.fromhex("0x1.fep127"), 1.0, float.fromhex("0x1.02p0"), np.inf, -np.inf, np.nan],
                     dtype=np.float32)
    ea, eb = np.meshgrid(edges, edges)
    return np.concatenate([a, a, ea.ravel()]), np.concatenate([b, near, eb.ravel()])


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("mode", MODES)
def test_reference_matches_mpfr(op, mode):
    a, b = _sample_pairs(1500, seed=MODES.index(mode) + 10 * (op == "mul"))
    with np.errstate(all="ignore"):
        for x, y in zip(a.astype(np.float64), b.astype(np.float64)):
            ref = reference_bf16_op(x, y, ("add", "mul").index(op), MODES.index(mode))
            want = mpfr_bf16(x, y, op, mode)
            if np.isnan(want):
                assert np.isnan(ref), (x, y)
            else:
                assert np.float64(ref).tobytes() == np.float64(want).tobytes(), (op, mode, x, y, ref, want)


@pytest.mark.parametrize("op", ["add", "mul"])
def test_kernel_rows_agree_with_the_reference(op):
    """Eight whole rows (a against all 65536 b) in every deterministic mode."""
    rows = bf16_values()[np.array([0, 1, 0x3F80, 0x7F7F, 0x8001, 0xBF81, 0x7F80, 0x4B00])]
    for mode in MODES:
        count, bad = check_bf16_rows(rows, op, mode)
        assert count == 0, bad


def test_checker_counts_a_wrong_result():
    rows = bf16_values()[[0x3F80, 0x4000]]
    cols = bf16_values()
    ref = np.array([[reference_bf16_op(np.float64(a), np.float64(b), 0, 0) for b in cols] for a in rows],
                   dtype=np.float32).ravel()
    ref[np.isnan(ref)] = np.float32(np.nan)
    ref = np.where(np.isnan(ref), np.uint32(0x7FC00000).view(np.float32), ref)
    got = ref.copy()
    count, first = _check_bf16_block(rows, cols, got, 0, 0)
    assert count.sum() == 0
    got[70000] = np.nextafter(got[70000], np.float32(np.inf))
    got[5] = np.uint32(0x7FC00001).view(np.float32) if np.isnan(ref[5]) else -got[5] if got[5] != 0 else 1.0
    count, first = _check_bf16_block(rows, cols, got, 0, 0)
    assert count.tolist() == [1, 1] and first.tolist() == [5, 70000 - 65536]


def test_command_selects_op_modes_and_names_bad_ones(capsys):
    from softrep.tools.verify_formats import main

    assert main(["--no-conversions", "--bf16-ops", "--bf16-ops-rows", "1", "--bf16-ops-only", "mul:odd"]) == 0
    out = capsys.readouterr().out
    assert "| bfloat16 mul, odd | 65,536 | 0 |" in out and "add" not in out.split("backend")[1]
    with pytest.raises(SystemExit):
        main(["--no-conversions", "--bf16-ops", "--bf16-ops-only", "div:up"])
    assert "unknown div:up" in capsys.readouterr().err
