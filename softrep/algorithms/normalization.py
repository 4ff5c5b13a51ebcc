"""Algorithm source of batch_norm's per-channel elementwise steps (docs/order.md, "Normalization").

batch_norm in training normalises every element of channel c with the
channel's statistics m[c] and s[c] (softrep/nn/functional/normalization.py):

    xhat = div(sub(x, m), s)
    dx   = div(sub(sub(g, mg), mul(xhat, c)), s)        (backward)

each step one IEEE operation rounded to nearest, exactly as the separate
elementwise ops compute it.  Fusing the steps into one pass keeps every
rounding: the intermediate values are the ones the separate ops would have
stored, except that an op stores a NaN as the canonical NaN; a NaN stays a
NaN through every later step, so one canonical() of the result gives the
same bits.  No bit moves; the fusion only saves the passes over memory and
the broadcast copies of the per-channel operands.
"""

from ..primitives.rounding import canonical, div_rn, jitable, mul_rn, sub_rn


@jitable
def normalize_element(x, m, s):
    """xhat = div_rn(sub_rn(x, m), s): two roundings, as sub then div."""
    return canonical(div_rn(sub_rn(x, m), s))


@jitable
def normalize_grad_element(g, xhat, mg, c, s):
    """dx = div_rn(sub_rn(sub_rn(g, mg), mul_rn(xhat, c)), s): the gradient of
    xhat through the normalisation, in the order of the separate ops."""
    return canonical(div_rn(sub_rn(sub_rn(g, mg), mul_rn(xhat, c)), s))
