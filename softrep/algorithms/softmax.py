"""Algorithm source of softmax's and log_softmax's rows, forward and backward
(docs/order.md, "Math and derived functions").

Along one row x[0:n] (n >= 1), the separate ops compute

    softmax:      m = amax(x); z = sub(x, m); e = exp(z); out = div(e, sum(e))
    log_softmax:  z = sub(x, amax(x)); out = sub(z, log(sum(exp(z))))
    softmax backward:      dx = mul(out, sub(g, sum(mul(g, out))))
    log_softmax backward:  dx = sub(g, mul(exp(out), sum(g)))

each step one IEEE operation rounded to nearest (exp and log correctly
rounded), each sum in the documented order (softrep.algorithms.reduction).
Cross-entropy with class-index targets is log_softmax followed by the
negative log likelihood (docs/order.md, "Losses"): loss = neg(logp[t]), +0
where the target is ignored; its gradient with respect to logp is a row of
+0 holding the loss's coefficient at t, which log_softmax's backward takes.
The row functions below compute exactly these values in a few passes over
the row, without the intermediate tensors: the max is the winner of the
total order of `order_key` (NaN wins, +0 above -0), as amax's; an op stores a
NaN as the canonical NaN and a NaN stays a NaN through every later step, so
one canonical() of each stored result gives the same bits.  log_softmax keeps
exp(z) in its output for the sum, then recomputes z = sub(x, m) (the same
rounding) for the final subtraction.

exp is evaluated by its branch-free fast path over the whole row first (a
loop that vectorises), which marks the elements it leaves undecided with
`undecided`, a NaN no result has; only then, and only at the marked
elements, does the correctly rounded scalar function run.  So every element
is exp(z) correctly rounded, as the elementwise op computes it.  The
backward's loop (`exp_product_grad`) marks a NaN result too, and the scalar
pass stores it canonical: a comparison costs the vector loop less than
canonicalising every element (a bit test and a select).

Scratch: `partials` holds at least ceil(n / BLOCK) elements of the row's
dtype (the block partials of the row's sums).

The block functions at the end take many short rows at once, flat, through
the same loops (the CPU schedule of rows of at most BLOCK elements).
"""

import numpy as np
from numba.core import types as _types

from ..primitives.jit import by_type, per_element
from ..primitives.rounding import (add_rn, canonical, div_rn, is_undecided, jitable, mul_rn, negate, sub_rn, undecided,
                                   zero)
from .math.exp import exp_f32, exp_f64, exp_fast, exp_fast64
from .math.log import log_f32, log_f64
from .reduction import BLOCK, eight_short_row_totals, key_value, narrow_key, row_sum, widen_key


def exp_decide(x):
    """(exp(x) correctly rounded, True), or (anything, False): the fast path of x's dtype."""
    return exp_fast(x) if isinstance(x, np.float32) else exp_fast64(x)


by_type(exp_decide, {_types.float32: exp_fast, _types.float64: exp_fast64})


def exp_rn(x):
    """exp(x) correctly rounded in x's dtype (the elementwise op's kernel)."""
    return exp_f32(x) if isinstance(x, np.float32) else exp_f64(x)


by_type(exp_rn, {_types.float32: exp_f32, _types.float64: exp_f64})


def log_rn(x):
    """log(x) correctly rounded in x's dtype (the elementwise op's kernel)."""
    return log_f32(x) if isinstance(x, np.float32) else log_f64(x)


by_type(log_rn, {_types.float32: log_f32, _types.float64: log_f64})


@jitable
def row_max(x):
    """amax(x[0:n]): the winner of the total order (NaN canonical), as amax computes it."""
    n = x.shape[0]
    best = narrow_key(x[0], True)
    for k in range(1, n):
        key = narrow_key(x[k], True)
        best = key if key > best else best
    return canonical(key_value(x[0], widen_key(x[0], best), True))


# The loops below take a row's value (its max m, its sum s, log of its sum
# ls) either once (a row) or per element (`per_element`: a block of rows,
# each row's value repeated over its elements; see "blocks of short rows").


@jitable
def shifted_exp(e, x, m):
    """e[k] = exp(sub(x[k], m)) for every k, correctly rounded."""
    n = x.shape[0]
    marked = False
    for k in range(np.uint64(0), np.uint64(n)):
        r, ok = exp_decide(sub_rn(x[k], per_element(m, k)))
        e[k] = r if ok else undecided(r)
        marked |= not ok
    if marked:
        for k in range(n):
            if is_undecided(e[k]):
                e[k] = exp_rn(sub_rn(x[k], per_element(m, k)))


@jitable
def divided(out, s):
    """out[k] = div(out[k], s) for every k (softmax's last step), NaN canonical."""
    for k in range(np.uint64(0), np.uint64(out.shape[0])):
        out[k] = canonical(div_rn(out[k], per_element(s, k)))


@jitable
def log_softmax_values(out, x, m, ls):
    """out[k] = sub(sub(x[k], m), ls) for every k (log_softmax's last step:
    z recomputed), NaN canonical."""
    for k in range(np.uint64(0), np.uint64(x.shape[0])):
        out[k] = canonical(sub_rn(sub_rn(x[k], per_element(m, k)), per_element(ls, k)))


@jitable
def log_of_sum(s):
    """log(s) correctly rounded, NaN canonical: log_softmax's log(sum(exp(z)))."""
    return canonical(log_rn(s))


@jitable
def softmax_row(out, x, partials):
    """out = div(e, sum(e)) with e = exp(sub(x, amax(x)))."""
    m = row_max(x)
    shifted_exp(out, x, m)
    divided(out, row_sum(out, partials))


@jitable
def log_softmax_row(out, x, partials):
    """out = sub(z, log(sum(exp(z)))) with z = sub(x, amax(x))."""
    m = row_max(x)
    shifted_exp(out, x, m)
    log_softmax_values(out, x, m, log_of_sum(row_sum(out, partials)))


@jitable
def softmax_grad_row(dx, g, out, partials):
    """dx = mul(out, sub(g, sum(mul(g, out)))); dx holds the products first."""
    products(dx, g, out)
    softmax_grad_values(dx, g, out, row_sum(dx, partials))


@jitable
def products(dx, g, out):
    """dx[k] = mul(g[k], out[k]) for every k."""
    for k in range(np.uint64(0), np.uint64(g.shape[0])):
        dx[k] = mul_rn(g[k], out[k])


@jitable
def softmax_grad_values(dx, g, out, s):
    """dx[k] = mul(out[k], sub(g[k], s)) for every k, NaN canonical."""
    for k in range(np.uint64(0), np.uint64(g.shape[0])):
        dx[k] = canonical(mul_rn(out[k], sub_rn(g[k], per_element(s, k))))


@jitable
def log_softmax_grad_row(dx, g, out, partials):
    """dx = sub(g, mul(exp(out), sum(g)))."""
    exp_product_grad(dx, g, out, row_sum(g, partials))


@jitable
def exp_product_grad(dx, g, out, s):
    """dx[k] = sub(g[k], mul(exp(out[k]), s)) for every k, exp correctly
    rounded, NaN canonical: exp's fast path over the row, then the marked
    elements.  The row length is read from `out`, which the loop only reads:
    taken from dx, the array it stores to, the loop does not vectorise."""
    n = out.shape[0]
    marked = False
    for k in range(np.uint64(0), np.uint64(n)):
        r, ok = exp_decide(out[k])
        v = sub_rn(g[k], mul_rn(r, per_element(s, k)))
        ok = ok & (v == v)
        dx[k] = v if ok else undecided(r)
        marked |= not ok
    if marked:
        for k in range(n):
            if is_undecided(dx[k]):
                dx[k] = canonical(sub_rn(g[k], mul_rn(exp_rn(out[k]), per_element(s, k))))


@jitable
def nll_of_row(logp, t, kept):
    """The loss of one position: neg(logp[t]), the exact sign change stored with
    the canonical NaN as the elementwise op stores it; +0 where the target is
    ignored (not kept), as the selection into zeros gives."""
    if not kept:
        return zero(logp[0])
    return canonical(negate(logp[t]))


@jitable
def nll_grad_row(dx, zeros, logp, t, kept, coef):
    """log_softmax's input gradient of one row whose output gradient g is the
    nll's: +0 at every class and `coef` at class t (+0 everywhere where the
    target is ignored, not kept).  These are the bits of
    `log_softmax_grad_row(dx, g, logp, partials)`, without the row g:

    * sum(g) is known exactly.  With c = coef (+0 where ignored), every
      addition of the documented sum has a +0 operand (the other partials
      are sums of +0), and x + (+0) is x for every x but -0, which gives +0.
      So each partial is c or +0, and the sum is c for a row of one class
      (no addition), add_rn(c, +0) otherwise; NaN canonical, as row_sum
      returns it.
    * dx = sub(g, mul(exp(logp), s)) is computed with g = `zeros` (a row of
      +0 of the row's length, which every row can share), then class t
      again with g[t] = coef (`exp_rn` gives exp_decide's bits wherever
      that decides)."""
    s = nll_grad_sum(coef, kept, logp.shape[0])
    exp_product_grad(dx, zeros, logp, s)
    if kept:
        nll_grad_at_target(dx, logp, t, coef, s)


@jitable
def nll_grad_sum(coef, kept, n):
    """sum(g) of the nll's output gradient over a row of n classes, known
    exactly (`nll_grad_row`)."""
    z = zero(coef)
    c = coef if kept else z
    return canonical(c if n == 1 else add_rn(c, z))


@jitable
def nll_grad_at_target(dx, logp, t, coef, s):
    """dx[t] = sub(coef, mul(exp(logp[t]), s)): class t of `nll_grad_row`."""
    dx[t] = canonical(sub_rn(coef, mul_rn(exp_rn(logp[t]), s)))


@jitable
def nll_mean(total_loss, kept_count):
    """'mean': div(sum of the losses, number of kept positions), rounded once
    (the count is an integer the dtype holds exactly), NaN canonical."""
    return canonical(div_rn(total_loss, kept_count))


@jitable
def nll_coef(g, kept_count, mean):
    """The loss gradient's coefficient at each kept target: neg(div(g, count))
    for 'mean', neg(g) for 'sum', each op's result stored canonical."""
    if mean:
        return canonical(negate(canonical(div_rn(g, kept_count))))
    return canonical(negate(g))


# --------------------------------------------------------------------------- blocks of short rows
#
# A short row's own loops hold a few dozen elements, and a vectorised loop
# leaves most of them to its scalar remainder (there exp's first step runs
# element by element).  The CPU schedule of short rows passes a block of
# consecutive rows of n elements, flat in one array, through the same loops
# once for the whole block, with each row's value (its max, its sum, ...)
# repeated over the row's elements in `each` (scratch of the block's
# length): every element gets the operations of its row function, in the
# same order, so the bits of the row functions above.


@jitable
def repeat_over_row(each, b, n, v):
    """each[b : b + n] = v."""
    for k in range(np.uint64(b), np.uint64(b + n)):
        each[k] = v


@jitable
def repeat_row_sums(each, v, n, partials):
    """each[b : b + n] = row_sum(v[b : b + n]) for each row of the flat block
    v: rows of at most BLOCK elements eight at a time
    (`eight_short_row_totals`, the same bits), the others one by one."""
    total = v.shape[0]
    b = 0
    if n <= BLOCK:
        un = np.uint64(n)
        while b + 8 * n <= total:
            s0, s1, s2, s3, s4, s5, s6, s7 = eight_short_row_totals(v, np.uint64(b), un)
            repeat_over_row(each, b, n, s0)
            repeat_over_row(each, b + n, n, s1)
            repeat_over_row(each, b + 2 * n, n, s2)
            repeat_over_row(each, b + 3 * n, n, s3)
            repeat_over_row(each, b + 4 * n, n, s4)
            repeat_over_row(each, b + 5 * n, n, s5)
            repeat_over_row(each, b + 6 * n, n, s6)
            repeat_over_row(each, b + 7 * n, n, s7)
            b += 8 * n
    for r in range(b, total, n):
        repeat_over_row(each, r, n, row_sum(v[r:r + n], partials))


@jitable
def softmax_block(out, x, n, partials, each):
    """`softmax_row` of each row of the flat block x (out likewise)."""
    for b in range(0, x.shape[0], n):
        repeat_over_row(each, b, n, row_max(x[b:b + n]))
    shifted_exp(out, x, each)
    repeat_row_sums(each, out, n, partials)
    divided(out, each)


@jitable
def log_softmax_block(out, x, n, partials, each, each2):
    """`log_softmax_row` of each row of the flat block x (out likewise)."""
    for b in range(0, x.shape[0], n):
        repeat_over_row(each, b, n, row_max(x[b:b + n]))
    shifted_exp(out, x, each)
    repeat_row_sums(each2, out, n, partials)
    for b in range(0, x.shape[0], n):
        repeat_over_row(each2, b, n, log_of_sum(each2[b]))
    log_softmax_values(out, x, each, each2)


@jitable
def softmax_grad_block(dx, g, out, n, partials, each):
    """`softmax_grad_row` of each row of the flat blocks g and out."""
    products(dx, g, out)
    repeat_row_sums(each, dx, n, partials)
    softmax_grad_values(dx, g, out, each)


@jitable
def log_softmax_grad_block(dx, g, out, n, partials, each):
    """`log_softmax_grad_row` of each row of the flat blocks g and out."""
    repeat_row_sums(each, g, n, partials)
    exp_product_grad(dx, g, out, each)


@jitable
def nll_grad_block(dx, zeros, logp, n, t, ignore, coef, each):
    """`nll_grad_row` of each row r of the flat block logp, its target t[r]
    (kept unless it is `ignore`); zeros: +0s of the block's length."""
    for r in range(t.shape[0]):
        repeat_over_row(each, r * n, n, nll_grad_sum(coef, t[r] != ignore, n))
    exp_product_grad(dx, zeros, logp, each)
    for r in range(t.shape[0]):
        if t[r] != ignore:
            b = r * n
            nll_grad_at_target(dx[b:b + n], logp[b:b + n], t[r], coef, each[b])
