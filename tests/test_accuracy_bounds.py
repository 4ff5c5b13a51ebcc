"""The error bounds of docs/order.md ("Accuracy of the orders") hold, and are
reached: sum and the product chain (mm).

Bounds, as documented: a product chain of K fmas errs by at most
gamma_K * sum|a_k b_k|; the sum of n terms by at most gamma_L * sum|x| with
L = min(n, 128) - 1 + ceil(log2(ceil(n / 128))); gamma_n = n u / (1 - n u),
u = 2^-24 (float32) or 2^-53 (float64).

The reference is the exact error: math.fsum (correctly rounded) of the result
and the negated exact terms (a float32 product is exact in float64; float64
products are only used where they are exact).  The adversarial inputs make
every rounding on the longest path lose a full half ulp, so the measured error
reaches the bound to first order in u: a looser order (a longer chain, terms
dropped) would exceed it, a tighter one fall short of the stated fraction.
"""

import math

import numpy as np
import pytest
import torch

import softrep

U = {torch.float32: 2.0**-24, torch.float64: 2.0**-53}
NP = {torch.float32: np.float32, torch.float64: np.float64}
DTYPES = [torch.float32, torch.float64]


def gamma(rounds, u):
    return rounds * u / (1 - rounds * u)


def sum_depth(n):
    """Roundings on the longest path of the documented sum of n >= 1 terms."""
    blocks = math.ceil(n / 128)
    return min(n, 128) - 1 + math.ceil(math.log2(blocks))


def exact_error(result, terms):
    """result - sum(terms), correctly rounded (terms: float64 values summing exactly)."""
    return math.fsum([float(result)] + [-float(t) for t in terms])


def test_sum_depth_counts_block_and_tree_levels():
    # one block: a chain of n - 1 additions; then one tree level per doubling of the block count
    assert [sum_depth(n) for n in (1, 2, 128, 129, 256, 257, 1000, 10**6)] == \
        [0, 1, 127, 128, 128, 129, 130, 127 + 13]


# --------------------------------------------------------------------------- random terms within the bound


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["positive", "signed"])
@pytest.mark.parametrize("n", [100, 1000, 5000])
def test_sum_error_within_bound(dtype, kind, n):
    rng = np.random.default_rng(n)
    x = rng.random((4, n)) if kind == "positive" else rng.standard_normal((4, n))
    x = torch.from_numpy(x.astype(NP[dtype]))
    got = softrep.sum(x, 1)
    bound = gamma(sum_depth(n), U[dtype])
    for r in range(4):
        terms = x[r].double().tolist()  # float32 -> float64 is exact
        scale = math.fsum(abs(t) for t in terms)
        assert abs(exact_error(got[r], terms)) <= bound * scale


@pytest.mark.parametrize("kind", ["positive", "signed"])
@pytest.mark.parametrize("k", [10, 700, 3000])
def test_mm_error_within_bound(kind, k):
    rng = np.random.default_rng(k)
    draw = rng.random if kind == "positive" else rng.standard_normal
    a = torch.from_numpy(draw((3, k)).astype(np.float32))
    b = torch.from_numpy(draw((k, 2)).astype(np.float32))
    got = softrep.mm(a, b)
    bound = gamma(k, U[torch.float32])
    for i in range(3):
        for j in range(2):
            products = (a[i].double() * b[:, j].double()).tolist()  # exact: 24 + 24 bits < 53
            scale = math.fsum(abs(p) for p in products)
            assert abs(exact_error(got[i, j], products)) <= bound * scale


# --------------------------------------------------------------------------- adversarial terms reach the bound


def adversarial_sum_terms(levels, dtype):
    """n = 128 * 2^levels terms whose documented sum loses u on each of its
    L = 127 + levels roundings: block 0 is [1, u, ..., u] (1 + u rounds to 1,
    a tie to even, 127 times), and the blocks 2^i .. 2^(i+1) - 1 add up to u
    exactly, so that the tree adds u to the running 1 once per level, each
    time rounding back to 1."""
    u = U[dtype]
    x = np.empty(128 * 2**levels, NP[dtype])
    x[0], x[1:128] = 1.0, u
    for i in range(levels):
        x[128 * 2**i:128 * 2**(i + 1)] = u / 2**i / 128  # a power of two: every partial is exact
    return torch.from_numpy(x)


def check_adversarial_sum(levels, dtype):
    x = adversarial_sum_terms(levels, dtype)
    n, u = x.numel(), U[dtype]
    depth = sum_depth(n)
    assert depth == 127 + levels
    got = softrep.sum(x)
    assert float(got) == 1.0
    terms = x.double().tolist()
    error = abs(exact_error(got, terms))
    assert error == depth * u  # every rounding on the longest path lost u
    bound = gamma(depth, u) * math.fsum(terms)
    # error / bound = (1 - L u) / (1 + L u): the bound is reached to first order
    assert 0.999 * bound <= error <= bound


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("levels", [0, 3])
def test_adversarial_sum_reaches_the_bound(dtype, levels):
    check_adversarial_sum(levels, dtype)


def adversarial_chain(k, dtype):
    """a (1, K), b (K, 1) whose fma chain loses u at each of its K steps.

    a0 * b0 = (1 + 2^-h1)(1 + 2^-h2) with h1 + h2 = p (the precision) lies
    exactly halfway between two floats and rounds (to even) down by u; every
    later step adds u * 1 to that even value, again a tie rounded down."""
    h1, h2 = {torch.float32: (11, 13), torch.float64: (26, 27)}[dtype]
    u = U[dtype]
    a = np.full(k, u, NP[dtype])
    b = np.ones(k, NP[dtype])
    a[0], b[0] = 1 + 2.0**-h1, 1 + 2.0**-h2
    return torch.from_numpy(a).reshape(1, k), torch.from_numpy(b).reshape(k, 1)


def check_adversarial_chain(k, dtype):
    a, b = adversarial_chain(k, dtype)
    u = U[dtype]
    got = softrep.mm(a, b)[0, 0]
    h1, h2 = {torch.float32: (11, 13), torch.float64: (26, 27)}[dtype]
    # the exact products as float64 pairs: (1 + 2^-h1)(1 + 2^-h2) = 1 + 2^-h1 + 2^-h2 + u
    products = [1.0, 2.0**-h1, 2.0**-h2, u] + [u] * (k - 1)
    assert float(got) == 1 + 2.0**-h1 + 2.0**-h2
    error = abs(exact_error(got, products))
    assert error == k * u  # K roundings, each a loss of u
    bound = gamma(k, u) * math.fsum(products)
    # error / bound = (1 - K u) / sum|a_k b_k|, about 1 - 2^-11 - K u here
    assert 0.99 * bound <= error <= bound


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 300])
def test_adversarial_chain_reaches_the_bound(dtype, k):
    check_adversarial_chain(k, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_blocks_keep_small_terms_that_a_chain_drops(dtype):
    # 1 followed by 1023 terms u: a single left-to-right chain (the order of a
    # product) rounds 1 + u back to 1 at every step and loses all 1023 u,
    # beyond the sum's bound; the documented blocks lose only block 0's 127
    # (the other blocks add up to 128 u exactly, which 1 + 128 u represents).
    u = U[dtype]
    n = 1024
    x = torch.full((n,), u, dtype=dtype)
    x[0] = 1.0
    terms = x.double().tolist()
    got = softrep.sum(x)
    assert float(got) == 1 + (n - 128) * u
    assert abs(exact_error(got, terms)) == 127 * u
    bound = gamma(sum_depth(n), u) * math.fsum(terms)
    assert abs(exact_error(1.0, terms)) == (n - 1) * u > 7 * bound


# --------------------------------------------------------------------------- the CUDA kernels (simulator)


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
def test_simulator_adversarial_sum_reaches_the_bound(dtype, backend):
    backend("cuda")
    check_adversarial_sum(3, dtype)


@pytest.mark.simulator
@pytest.mark.parametrize("dtype", DTYPES)
def test_simulator_adversarial_chain_reaches_the_bound(dtype, backend):
    backend("cuda")
    check_adversarial_chain(40, dtype)
