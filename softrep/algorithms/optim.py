"""The per-element update rules of softrep.optim's SGD and Adam/AdamW, fused:
one function per rule computes, for one element, exactly the chain of
rounded operations that the op-by-op update computes with one softrep
elementwise op per step (docs/training.md, "Optimizers").

Every operation is a rounding primitive to nearest in the parameter's dtype,
in the documented order, with the same constants (the hyperparameters and
the host-computed bias corrections, rounded to the dtype on the host exactly
as an op rounds a Python number).  The op-by-op chain canonicalises each
intermediate NaN; here only the stored results are canonicalised: every
primitive maps a NaN operand to a NaN result, and the elementwise maximum of
amsgrad tests for NaN itself, so no intermediate payload can reach a
non-NaN result.

The CPU launchers (softrep/cpu/optim.py) and the CUDA launchers
(softrep/cuda/optim.py) call these functions per element.

Flags are kernel arguments, not compile-time constants: one compiled kernel
serves every combination, and a branch that is the same for every element
costs nothing next to the division and the square root.
"""

from ..primitives.rounding import (add_rn, canonical, div_rn, fma_rn, jitable, mul_rn, negate, sqrt_rn,
                                   sub_rn)

# weight-decay kinds of Adam (the `decay_kind` argument)
NO_DECAY, COUPLED_DECAY, DECOUPLED_DECAY = 0, 1, 2


@jitable
def maximum_nan(a, b):
    """torch.maximum(a, b) on the values: the larger one, `a` when they compare
    equal; a NaN if either is one (canonicalised by the caller when stored)."""
    if a != a:
        return a
    if b != b:
        return b
    if b > a:
        return b
    return a


@jitable
def adam_element(p, g, m, v, vmax, maximize, decay_kind, amsgrad,
                 weight_decay, decay_factor, one_minus_beta1, one_minus_beta2, beta2,
                 bias_correction2_sqrt, eps, neg_step_size):
    """(new p, new exp_avg, new exp_avg_sq, new max_exp_avg_sq) of one element.

    decay_kind: NO_DECAY, COUPLED_DECAY (g = fma(p, weight_decay, g)) or
    DECOUPLED_DECAY (p = mul(p, decay_factor), decay_factor = 1 - lr * wd).
    `vmax` is read and the fourth result meaningful only with `amsgrad`."""
    if maximize:
        g = negate(g)
    if decay_kind == DECOUPLED_DECAY:
        p = mul_rn(p, decay_factor)
    elif decay_kind == COUPLED_DECAY:
        g = fma_rn(p, weight_decay, g)
    # torch's lerp(m, g, 1 - b1)
    m_new = fma_rn(sub_rn(g, m), one_minus_beta1, m)
    v_new = fma_rn(mul_rn(g, g), one_minus_beta2, mul_rn(v, beta2))
    v_used = v_new
    vmax_new = v_new
    if amsgrad:
        vmax_new = maximum_nan(vmax, v_new)
        v_used = vmax_new
    denom = add_rn(div_rn(sqrt_rn(v_used), bias_correction2_sqrt), eps)
    p_new = fma_rn(div_rn(m_new, denom), neg_step_size, p)
    return canonical(p_new), canonical(m_new), canonical(v_new), canonical(vmax_new)


@jitable
def sgd_element(p, g, buf, maximize, decayed, has_momentum, first_step, nesterov,
                weight_decay, one_minus_dampening, momentum, neg_lr):
    """(new p, new momentum_buffer) of one element; the second result is
    meaningful only with `has_momentum`.  At the first step the buffer is a
    copy of the direction (`buf` is not read): of the gradient itself, NaN
    payload included, when neither maximize nor weight decay made it an op's
    result."""
    d = g
    if maximize:
        d = negate(g)
    if decayed:
        d = fma_rn(p, weight_decay, d)
    buf_new = d
    if has_momentum:
        if not first_step:
            buf_new = fma_rn(d, one_minus_dampening, mul_rn(buf, momentum))
        if nesterov:
            d = fma_rn(buf_new, momentum, d)
        else:
            d = buf_new
    if first_step and not maximize and not decayed:
        return canonical(fma_rn(d, neg_lr, p)), buf_new
    return canonical(fma_rn(d, neg_lr, p)), canonical(buf_new)
