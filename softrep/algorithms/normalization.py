"""Algorithm source of the normalisations' fused steps (docs/order.md, "Normalization").

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

batch_norm's affine map y = add(mul(xhat, w), b), w and b per channel, is
`affine_element` per element, in the same pass as the normalisation (the
stored xhat and y are those of the separate ops); its backward and the
normalisation's sums run in one row pass (`batch_norm_grad_row`).

layer_norm and rms_norm normalise each row of their trailing dims and apply
the affine map in the same pass (`layer_norm_row`, `layer_norm_grad_row`).
A row's sums are the documented sums (the streaming form of
softrep.algorithms.reduction: blocks of 128 left to right, then the pairwise
tree), and every elementwise step is a separate op's rounding.  A missing
weight is a weight of ones and a missing bias a bias of -0: mul_rn(y, 1) and
add_rn(y, -0) are y exactly for every y (signed zeros, subnormals and NaN
included), so one row function serves every case.  Without centring (rms_norm)
m and the gradient's mean are +0, and sub_rn(x, +0) is x exactly.
"""

from ..primitives.rounding import add_rn, canonical, div_rn, jitable, mul_rn, sqrt_rn, sub_rn
from .reduction import row_sum, stream_add, stream_total, term_centered_square, zero_like


@jitable
def normalize_element(x, m, s):
    """xhat = div_rn(sub_rn(x, m), s): two roundings, as sub then div."""
    return canonical(normalized(x, m, s))


@jitable
def normalized(x, m, s):
    """`normalize_element` without the canonical NaN, for an xhat that only
    feeds later steps whose results are stored canonical (a NaN stays a NaN
    through them): the same stored bits, one bit test and select fewer."""
    return div_rn(sub_rn(x, m), s)


@jitable
def normalize_grad_element(g, xhat, mg, c, s):
    """dx = div_rn(sub_rn(sub_rn(g, mg), mul_rn(xhat, c)), s): the gradient of
    xhat through the normalisation, in the order of the separate ops."""
    return canonical(div_rn(sub_rn(sub_rn(g, mg), mul_rn(xhat, c)), s))


@jitable
def scaled_normalize_grad_element(gy, w, xhat, mg, c, s):
    """normalize_grad_element of g = mul_rn(gy, w), the gradient of xhat when
    gy is that of add(mul(xhat, w), b): the affine map's backward and the
    normalisation's in one element (w = 1 gives g exactly; a NaN g reaches
    the result's canonical() as any NaN does)."""
    return normalize_grad_element(mul_rn(gy, w), xhat, mg, c, s)


@jitable
def affine_element(xhat, w, b):
    """y = add_rn(mul_rn(xhat, w), b): the affine map's two roundings."""
    return canonical(add_rn(mul_rn(xhat, w), b))


@jitable
def mean_of_sum(total, n):
    """div_rn(sum, n), n the count rounded to the dtype: `mean`'s rounding."""
    return canonical(div_rn(total, n))


@jitable
def scale_of_squares(squares, n, eps):
    """s = sqrt_rn(add_rn(div_rn(squares, n), eps)), squares the documented sum
    of mul(sub(x, m), sub(x, m)) over the row; n and eps rounded to the dtype."""
    return canonical(sqrt_rn(add_rn(div_rn(squares, n), eps)))


@jitable
def layer_norm_row(y, x, w, b, n, eps, center, stack):
    """One row of layer_norm (rms_norm when not `center`); returns (m, s) and
    writes y[k] = add(mul(div(sub(x[k], m), s), w[k]), b[k]).

    m = div(sum(x), n) (+0 without centring), s = `scale_of_squares` of the
    documented sum of mul(sub(x, m), sub(x, m)).  `stack`: STACK scratch
    entries of the dtype (softrep.algorithms.reduction); n and eps are the row
    length and eps rounded to the dtype."""
    m = zero_like(n)
    count = 0
    if center:
        for k in range(x.shape[0]):
            count = stream_add(stack, count, x[k])
        m = mean_of_sum(canonical(stream_total(stack, count)), n)
    count = 0
    for k in range(x.shape[0]):
        count = stream_add(stack, count, term_centered_square(x[k], m))
    s = scale_of_squares(canonical(stream_total(stack, count)), n, eps)
    for k in range(x.shape[0]):
        y[k] = affine_element(normalized(x[k], m, s), w[k], b[k])
    return m, s


@jitable
def grad_terms(gy, x, w, m, s):
    """One element's terms of `layer_norm_grad_row`: (g, h, gw) with
    xhat = div(sub(x, m), s), g = mul(gy, w), h = mul(g, xhat) and the
    weight's partial gw = mul(gy, xhat)."""
    xhat = normalized(x, m, s)
    g = mul_rn(gy, w)
    return g, mul_rn(g, xhat), canonical(mul_rn(gy, xhat))


@jitable
def layer_norm_grad_row(dx, gw, gy, x, w, m, s, n, center, stack, stack2):
    """The backward of one `layer_norm_row`, gy the gradient of y.

    With xhat = div(sub(x, m), s) (the forward's bits) and g = mul(gy, w), the
    gradient of xhat:

        gw[k] = mul(gy[k], xhat[k])           (the weight's per-row partials)
        c     = div(sum(mul(g, xhat)), n)
        mg    = div(sum(g), n)                (+0 without centring)
        dx[k] = div(sub(sub(g[k], mg), mul(xhat[k], c)), s)

    the sums in the documented order; `stack`, `stack2`: STACK scratch
    entries each."""
    count = 0
    for k in range(x.shape[0]):
        g, h, gw[k] = grad_terms(gy[k], x[k], w[k], m, s)
        stream_add(stack2, count, g)
        count = stream_add(stack, count, h)
    c = mean_of_sum(canonical(stream_total(stack, count)), n)
    mg = mean_of_sum(canonical(stream_total(stack2, count)), n) if center else zero_like(n)
    for k in range(x.shape[0]):
        dx[k] = scaled_normalize_grad_element(gy[k], w[k], normalized(x[k], m, s), mg, c, s)


@jitable
def batch_norm_grad_terms(gy, xhat, w):
    """One element's terms of `batch_norm_grad_row`, as the separate ops store
    them (canonical NaN): (g, q, h) with g = mul(gy, w), the gradient of
    xhat, q = mul(gy, xhat), the weight's term, and h = mul(g, xhat)."""
    g = canonical(mul_rn(gy, w))
    return g, canonical(mul_rn(gy, xhat)), canonical(mul_rn(g, xhat))


@jitable
def batch_norm_grad_row(gxhat, q, h, sums, gy, xhat, w, partials):
    """One row (channel c of one sample) of the backward of batch_norm's
    y = add(mul(xhat, w), b), gy the gradient of y, and the per-sample sums
    that the backward of the normalisation needs:

        gxhat[k] = mul(gy[k], w)              (the gradient of xhat, scratch)
        sums[0]  = sum(gy)                    (the bias's partial)
        sums[1]  = sum(mul(gy, xhat))         (the weight's partial)
        sums[2]  = sum(gxhat)
        sums[3]  = sum(mul(gxhat, xhat))

    each a documented sum over the row's positions (`row_sum`) of the terms
    the separate ops would store (`batch_norm_grad_terms`).  gxhat, q, h:
    scratch rows of the row's length (the input's gradient recomputes gxhat:
    `scaled_normalize_grad_element`); `partials`: scratch of its
    ceil(length / BLOCK) blocks."""
    n = gy.shape[0]
    if n == 0:
        for j in range(4):
            sums[j] = zero_like(w)
        return
    for k in range(n):
        gxhat[k], q[k], h[k] = batch_norm_grad_terms(gy[k], xhat[k], w)
    sums[0] = row_sum(gy, partials)
    sums[1] = row_sum(q, partials)
    sums[2] = row_sum(gxhat, partials)
    sums[3] = row_sum(h, partials)
