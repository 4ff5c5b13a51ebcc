"""scaled_dot_product_attention: the documented sequence of softrep ops (bits
equal to the steps written out with the public ops, the scale checked against
an MPFR reference), agreement with torch in float32, gradcheck in float64,
masks, causal, grouped-query heads, dropout, fully masked rows (zeros, as
torch), CPU == simulator bits."""

import math

import gmpy2
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import softrep
from softrep.nn.functional.attention import scaled_dot_product_attention as sdpa
from softrep.nn.functional.regularization import dropout

from golden import check, normal_tensor
from test_pooling import bits


def qkv(seed, B=2, H=2, L=3, S=5, E=4, Ev=3, Hk=None, dtype=torch.float32):
    q = normal_tensor(seed, (B, H, L, E), dtype)
    k = normal_tensor(seed + 1, (B, Hk or H, S, E), dtype)
    v = normal_tensor(seed + 2, (B, Hk or H, S, Ev), dtype)
    return q, k, v


def test_scale_is_rounded_once_from_the_correct_double():
    for E in (1, 3, 4, 7, 64, 100):
        with gmpy2.context(gmpy2.ieee(64)):
            ref = float(1 / gmpy2.sqrt(gmpy2.mpfr(E)))  # MPFR sqrt, then one double division
        from softrep.nn.functional.attention import default_scale
        assert default_scale(torch.zeros(1, E), None) == ref


def test_documented_sequence():
    q, k, v = qkv(40, E=7)
    mask = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    gen_a, gen_b = softrep.Generator(3), softrep.Generator(3)
    out = sdpa(q, k, v, attn_mask=mask, dropout_p=0.25, generator=gen_a)
    scale = float(np.float32(1 / math.sqrt(7)))
    s = softrep.add(softrep.mul(softrep.matmul(q, k.transpose(-2, -1)), scale), mask)
    w = dropout(softrep.softmax(s, -1), 0.25, generator=gen_b)
    assert np.array_equal(bits(out), bits(softrep.matmul(w, v)))
    assert gen_a.offset == gen_b.offset == 1


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3), dict(mask="bool"),
                                dict(mask="float")])
def test_agrees_with_torch(kw):
    q, k, v = qkv(41)
    kw = dict(kw)
    m = kw.pop("mask", None)
    if m == "bool":
        kw["attn_mask"] = torch.rand(3, 5, generator=torch.Generator().manual_seed(1)) > 0.3
    elif m == "float":
        kw["attn_mask"] = normal_tensor(42, (2, 1, 3, 5))
    qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
    out = sdpa(qr, kr, vr, **kw)
    g = normal_tensor(43, out.shape)
    grads = torch.autograd.grad(out, (qr, kr, vr), g)
    qt, kt, vt = (t.clone().requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(qt, kt, vt, **kw)
    ref_grads = torch.autograd.grad(ref, (qt, kt, vt), g)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_gqa_and_fully_masked_rows():
    q, k, v = qkv(44, H=4, Hk=2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
    out = sdpa(qr, kr, vr, attn_mask=mask, enable_gqa=True)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert torch.equal(out[:, :, 1], torch.zeros_like(out[:, :, 1]))  # as torch: zeros, not NaN
    gq, gk, gv = torch.autograd.grad(out, (qr, kr, vr), torch.ones_like(out))
    assert torch.equal(gq[:, :, 1], torch.zeros_like(gq[:, :, 1]))
    assert not torch.isnan(gk).any() and not torch.isnan(gv).any()
    # the key gradient of a shared head is the softrep.sum of the two query heads' gradients
    k4, v4 = k.repeat_interleave(2, 1).requires_grad_(), v.repeat_interleave(2, 1)
    out4 = sdpa(q, k4, v4, attn_mask=mask)
    (gk4,) = torch.autograd.grad(out4, k4, torch.ones_like(out4))
    assert np.array_equal(bits(gk), bits(softrep.sum(gk4.reshape(2, 2, 2, 5, 4), dim=2)))


def test_gradcheck_float64():
    q, k, v = qkv(45, B=1, H=2, L=2, S=3, E=2, Ev=2, Hk=1, dtype=torch.float64)
    fm = normal_tensor(46, (2, 3), torch.float64)
    bm = torch.tensor([[True, False, True], [False, False, False]])
    args = tuple(t.requires_grad_() for t in (q, k, v))
    assert torch.autograd.gradcheck(lambda *t: sdpa(*t, attn_mask=fm, enable_gqa=True), args, fast_mode=True)
    # bool mask with a fully masked row (safe softmax), and dropout, in one check
    assert torch.autograd.gradcheck(
        lambda *t: sdpa(*t, attn_mask=bm, dropout_p=0.5, enable_gqa=True, generator=softrep.Generator(4)),
        args, fast_mode=True)


def test_dropout_uses_generator():
    q, k, v = qkv(47)
    a = sdpa(q, k, v, dropout_p=0.5, generator=softrep.Generator(1))
    b = sdpa(q, k, v, dropout_p=0.5, generator=softrep.Generator(1))
    c = sdpa(q, k, v, dropout_p=0.5, generator=softrep.Generator(2))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_bad_input():
    q, k, v = qkv(48)
    with pytest.raises(ValueError, match="'attn_mask' and 'is_causal'"):
        sdpa(q, k, v, attn_mask=torch.ones(3, 5, dtype=torch.bool), is_causal=True)
    with pytest.raises(TypeError, match="'key'"):
        sdpa(q, k.double(), v)
    with pytest.raises(ValueError, match="'key'"):
        sdpa(q, k[..., :3], v)
    with pytest.raises(ValueError, match="'value'"):
        sdpa(q, k, v[..., :4, :])
    with pytest.raises(ValueError, match="'dropout_p'"):
        sdpa(q, k, v, dropout_p=2.0)
    with pytest.raises(ValueError, match="'attn_mask'"):
        sdpa(q, k, v, attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="'attn_mask'"):
        sdpa(q, k, v, attn_mask=torch.ones(3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="enable_gqa"):
        sdpa(*qkv(49, H=4, Hk=2))
    with pytest.raises(ValueError, match="'enable_gqa'"):
        sdpa(*qkv(49, H=4, Hk=3), enable_gqa=True)
    with pytest.raises(ValueError, match="'query'"):
        sdpa(torch.zeros(3), k, v)


def test_thread_counts_bit_identical():
    """Pooling, embedding, dropout and attention, forward and backward, with 1 and 2
    numba and torch threads (set in-process; the kernels read the count per launch)."""
    import numba

    from softrep.nn.functional.sparse import embedding
    from softrep.nn.functional.pooling import avg_pool2d, max_pool2d

    def run_all():
        q, k, v = (t.requires_grad_() for t in qkv(52, L=9, S=9, E=8, Ev=8))
        x = normal_tensor(53, (2, 3, 9, 9)).requires_grad_()
        w = normal_tensor(54, (7, 8)).requires_grad_()
        idx = torch.from_numpy(np.random.default_rng(55).integers(0, 7, size=(4, 40)))
        outs = [sdpa(q, k, v, is_causal=True, dropout_p=0.1, generator=softrep.Generator(5)),
                max_pool2d(x, 3, 1, 1), avg_pool2d(x, 3, 2, 1), embedding(idx, w)]
        loss = softrep.add(softrep.add(softrep.sum(outs[0]), softrep.sum(outs[1])),
                           softrep.add(softrep.sum(outs[2]), softrep.sum(outs[3])))
        return outs + list(torch.autograd.grad(loss, (q, k, v, x, w)))

    numba_threads, torch_threads = numba.get_num_threads(), torch.get_num_threads()
    try:
        results = []
        for n in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(n)
            torch.set_num_threads(n)
            results.append(run_all())
    finally:
        numba.set_num_threads(numba_threads)
        torch.set_num_threads(torch_threads)
    for a, b in zip(*results):
        assert np.array_equal(bits(a), bits(b))


def test_golden():
    q, k, v = qkv(50, L=6, S=6, E=8, Ev=8)
    qr = q.clone().requires_grad_()
    out = sdpa(qr, k, v, is_causal=True, dropout_p=0.2, generator=softrep.Generator(50))
    check("attention.json", "sdpa.causal.dropout", out)
    check("attention.json", "sdpa.causal.dropout.grad_q", torch.autograd.grad(out, qr, torch.ones_like(out))[0])


@pytest.mark.simulator
def test_simulator_matches_cpu(backend):
    q, k, v = qkv(51, B=1, H=2, L=2, S=3, E=2, Ev=2, Hk=1)

    def both():
        qr, kr = q.clone().requires_grad_(), k.clone().requires_grad_()
        out = sdpa(qr, kr, v, is_causal=True, dropout_p=0.3, enable_gqa=True, generator=softrep.Generator(9))
        return [out, *torch.autograd.grad(out, (qr, kr), torch.ones_like(out))]

    backend("cuda")
    sim = both()
    backend("cpu")
    cpu = both()
    for s, c in zip(sim, cpu):
        assert np.array_equal(bits(s), bits(c))
