# softrep: no kernels
"""Deep-learning functions built from the correctly rounded math library.

softmax, log_softmax, logsumexp, silu, softplus and mish, with torch's
signatures.  Each is a fixed sequence of softrep ops (elementwise ops rounded
to nearest, the correctly rounded `exp`, `log`, `log1p`, `sigmoid`, `tanh`,
and the reductions `amax` and `sum`, whose order is that of docs/order.md), so
the bits depend on nothing but the inputs.  The sequences are documented in
docs/order.md ("Math and derived functions").

softmax, log_softmax and logsumexp have their own autograd Functions (the
backward formulas below, made of softrep ops); silu, softplus and mish are
compositions whose backward is the autograd of their softrep ops.  Selections
(`torch.where`) copy values and do no arithmetic.

softmax and log_softmax over the last dim of a contiguous input (or a dim
followed by size-1 dims only), forward and backward, run as one row kernel
(softrep.ops.softmax) when autograd records nothing on it: the same
roundings in the same order, the same bits.  With a graph of the backward
(create_graph=True) or under a torch.func transform the separate ops run.
"""

import torch

from ...algorithms import elementwise as arith
from ...ops import backend, batching
from ...ops import mixed
from ...ops import softmax as S
from ...ops import elementwise as E
from ...ops import math as M
from ...ops import reduction as R
from ...ops.validate import normalize_dim


def _check_tensor(fn, input):
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'input' must be a torch.Tensor, got {type(input).__name__}")
    if input.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"softrep.{fn}: argument 'input' has dtype {input.dtype}; expected torch.float32 "
                        "(or torch.float64 where the math functions support it)")


def _check_dtype_arg(fn, input, dtype):
    if dtype is not None and dtype != input.dtype:
        raise TypeError(f"softrep.{fn}: argument 'dtype' must be None or the input's dtype {input.dtype}; "
                        f"got {dtype} (softrep does not convert silently)")


def _shift(x, dim):
    """x - max(x, dim): the max is exact and the subtraction rounds once.  The max
    is a constant of the backward (softmax is invariant under the shift)."""
    m = R.amax(x, dim, keepdim=True).detach()
    return E.sub(x, m)


def _fused_rows(dim, x, *others):
    """x (and each of `others`, of x's shape) as rows (R, n) for the fused row
    kernels (softrep.ops.softmax), or None where the separate ops must run:
    autograd would record them, or dim is not x's last non-trivial dim of a
    contiguous layout (`others` are made contiguous: a gradient may be
    expanded)."""
    if not S.fusable(x, *others):
        return None
    rows = S.rows_of(x, dim)
    if rows is None:
        return None
    return (rows,) + tuple(S.rows_of(t.contiguous(), dim) for t in others)


def _softmax_forward(x, dim):
    fused = _fused_rows(dim, x)
    if fused is not None:  # the same roundings in one kernel
        return S.softmax_rows(*fused).reshape(x.shape)
    e = M.exp(_shift(x.detach(), dim))
    return E.div(e, R.sum(e, dim, keepdim=True))


def _log_softmax_forward(x, dim):
    fused = _fused_rows(dim, x)
    if fused is not None:  # the same roundings in one kernel
        return S.log_softmax_rows(*fused).reshape(x.shape)
    z = _shift(x.detach(), dim)
    return E.sub(z, M.log(R.sum(M.exp(z), dim, keepdim=True)))


def _logsumexp_forward(x, dims, keepdim):
    xd = x.detach()
    m = R.amax(xd, dims, keepdim=True)
    # as torch: an infinite max is replaced by 0, so that all -inf rows give -inf
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    out = E.add(m, M.log(R.sum(M.exp(E.sub(xd, m)), dims, keepdim=True)))
    return out if keepdim else out.squeeze(dims)


# The vmap rules below put the batch dim first and shift the softmax dims by
# one: each row is reduced in the order of its own length, so every sample
# gets its own bits.

class SoftmaxFunction(backend.Function):
    @staticmethod
    def forward(x, dim):
        return _softmax_forward(x, dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[1]
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        # mul(out, sub(g, sum(mul(g, out), dim)))
        fused = _fused_rows(ctx.dim, out, g)
        if fused is not None:  # no graph of the backward: one kernel, same roundings
            return S.softmax_grad_rows(fused[1], fused[0]).reshape(out.shape), None
        s = R.sum(E.mul(g, out), ctx.dim, keepdim=True)
        return E.mul(out, E.sub(g, s)), None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        return _softmax_forward(batching.front(x, in_dims[0]), dim + 1), 0


class LogSoftmaxFunction(backend.Function):
    @staticmethod
    def forward(x, dim):
        return _log_softmax_forward(x, dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[1]
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        # sub(g, mul(exp(out), sum(g, dim)))
        fused = _fused_rows(ctx.dim, out, g)
        if fused is not None:  # no graph of the backward: one kernel, same roundings
            return S.log_softmax_grad_rows(fused[1], fused[0]).reshape(out.shape), None
        return E.sub(g, E.mul(M.exp(out), R.sum(g, ctx.dim, keepdim=True))), None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        return _log_softmax_forward(batching.front(x, in_dims[0]), dim + 1), 0


class _LogSumExp(backend.Function):
    @staticmethod
    def forward(x, dims, keepdim):
        return _logsumexp_forward(x, dims, keepdim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dims, keepdim = inputs
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        # x and the result are constants of the backward, as they always were
        x, out = x.detach(), out.detach()
        if not ctx.keepdim:
            for d in sorted(ctx.dims):
                g = g.unsqueeze(d)
                out = out.unsqueeze(d)
        # mul(g, exp(sub(x, out)))
        return E.mul(g, M.exp(E.sub(x, out))), None, None

    @staticmethod
    def vmap(info, in_dims, x, dims, keepdim):
        return _logsumexp_forward(batching.front(x, in_dims[0]), batching.shift_dims(dims), keepdim), 0


def _one_dim(fn, input, dim):
    _check_tensor(fn, input)
    if dim is None:
        raise TypeError(f"softrep.{fn}: argument 'dim' is required (softrep does not guess it)")
    return normalize_dim(fn, dim, input.dim())


@mixed.float32_compute("softmax")
def softmax(input, dim, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along `dim` (sum in the order of docs/order.md)."""
    d = _one_dim("softmax", input, dim)
    _check_dtype_arg("softmax", input, dtype)
    if input.dim() == 0:
        return backend.call(SoftmaxFunction, input.reshape(1), 0).reshape(())
    if input.numel() == 0:
        return input.clone()
    return backend.call(SoftmaxFunction, input, d)


@mixed.float32_compute("log_softmax")
def log_softmax(input, dim, dtype=None):
    """(x - max) - log(sum(exp(x - max))) along `dim`."""
    d = _one_dim("log_softmax", input, dim)
    _check_dtype_arg("log_softmax", input, dtype)
    if input.dim() == 0:
        return backend.call(LogSoftmaxFunction, input.reshape(1), 0).reshape(())
    if input.numel() == 0:
        return input.clone()
    return backend.call(LogSoftmaxFunction, input, d)


@mixed.float32_compute("logsumexp")
def logsumexp(input, dim, keepdim=False):
    """m + log(sum(exp(x - m))) over `dim` (an int or a tuple), m the max (0 where
    the max is infinite, as in torch)."""
    _check_tensor("logsumexp", input)
    dims = (dim,) if isinstance(dim, int) and not isinstance(dim, bool) else tuple(dim)
    if not dims:
        raise ValueError("softrep.logsumexp: argument 'dim' must name at least one dimension")
    x = input.reshape(1) if input.dim() == 0 else input
    dims = tuple(sorted({normalize_dim("logsumexp", d, input.dim()) for d in dims}))
    out = backend.call(_LogSumExp, x, dims, keepdim or input.dim() == 0)
    return out.reshape(()) if input.dim() == 0 else out


@mixed.float32_compute("silu")
def silu(input, inplace=False):
    """mul(x, sigmoid(x)) (sigmoid correctly rounded, then one rounded product)."""
    _check_tensor("silu", input)
    if inplace:
        raise ValueError("softrep.silu: argument 'inplace' must be False (softrep never modifies inputs)")
    return E.mul(input, M.sigmoid(input))


def _number(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"softrep.{fn}: argument '{name}' must be a number, got {type(value).__name__}")
    return float(value)


@mixed.float32_compute("softplus")
def softplus(input, beta=1.0, threshold=20.0):
    """div(log1p(exp(mul(x, beta))), beta), and x itself where mul(x, beta) > threshold
    (torch's rule).  beta = 1 makes the mul and div exact."""
    _check_tensor("softplus", input)
    beta = _number("softplus", "beta", beta)
    threshold = _number("softplus", "threshold", threshold)
    if beta == 0:
        raise ValueError("softrep.softplus: argument 'beta' must be nonzero")
    bx = E.mul(input, beta)
    linear = bx > threshold
    # the non-selected branch gets x = 0, so that its backward never sees exp overflow (0 * inf)
    safe = torch.where(linear, torch.zeros_like(bx), bx)
    soft = E.div(M.log1p(M.exp(safe)), beta)
    return torch.where(linear, input, soft)


@mixed.float32_compute("mish")
def mish(input, inplace=False):
    """mul(x, tanh(softplus(x))) with softplus(beta=1, threshold=20)."""
    _check_tensor("mish", input)
    if inplace:
        raise ValueError("softrep.mish: argument 'inplace' must be False (softrep never modifies inputs)")
    return E.mul(input, M.tanh(softplus(input)))


# ----------------------------------------------------------------------------- relu, leaky_relu

def _store_inplace(fn, input, out, inplace):
    if isinstance(inplace, bool) and not inplace:
        return out
    if not isinstance(inplace, bool):
        raise TypeError(f"softrep.{fn}: argument 'inplace' must be a bool, got {type(inplace).__name__}")
    return input.copy_(out)  # copy_ passes the gradient through to `out`


# relu's forward and backward are one kernel pass each (softrep.algorithms.elementwise:
# relu, relu_backward; selections, exact).  The backward reads relu's own
# result, which inplace=True copies into the input: nothing the backward needs
# is overwritten.  leaky_relu returns its backward's mask as a second,
# non-differentiable output (torch.func's form has no ctx in forward) for the
# same reason.

def _relu_backward_grads(gg, out, g, relu_out):
    return _relu_grad(gg, relu_out), None


_RELU = E.ElementwiseSpec("relu", ("input",), {"rn": arith.relu}, lambda g, out, x: (_relu_grad(g, out),))
_RELU_BACKWARD = E.ElementwiseSpec("relu_backward", ("grad", "output"), {"rn": arith.relu_backward},
                                   _relu_backward_grads)


def _relu_grad(g, relu_out):
    """g where relu's result is > 0 or NaN, else +0 (differentiable in g)."""
    return _RELU_BACKWARD.apply("rn", [g, relu_out.detach()])


class _Relu(backend.Function):
    """torch's relu: x < 0 ? +0 : x (so relu(-0) = -0 and NaN stays NaN, canonical).
    Backward as torch's threshold_backward on the result: g where out > 0 or out
    is NaN, else +0 -- selections, no arithmetic."""

    @staticmethod
    def forward(x):
        return _RELU.run("rn", [x])

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return _relu_grad(g, out)

    @staticmethod
    def vmap(info, in_dims, x):
        return _Relu.forward(x), in_dims[0]  # elementwise: the batch dim stays in place


class _LeakyRelu(backend.Function):
    """torch's leaky_relu: x > 0 ? x : mul_rn(x, slope) (NaN -> canonical NaN via
    the product).  Backward: x > 0 ? g : mul_rn(g, slope)."""

    @staticmethod
    def forward(x, slope):
        positive = x > 0
        return torch.where(positive, x, E.mul(x, slope)), positive

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.slope = inputs[1]
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(output[1])

    @staticmethod
    def backward(ctx, g, _):
        (positive,) = ctx.saved_tensors
        return torch.where(positive, g, E.mul(g, ctx.slope)), None

    @staticmethod
    def vmap(info, in_dims, x, slope):
        return _LeakyRelu.forward(x, slope), (in_dims[0], in_dims[0])


@mixed.float32_compute("relu")
def relu(input, inplace=False):
    """max(x, 0) as torch computes it (x < 0 ? 0 : x): an exact selection; NaN in,
    canonical NaN out.  `inplace=True` writes the result into `input` and returns it."""
    _check_tensor("relu", input)
    return _store_inplace("relu", input, backend.call(_Relu, input), inplace)


@mixed.float32_compute("leaky_relu")
def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else mul_rn(x, negative_slope) with the slope rounded to
    input's dtype (as torch).  Backward: g, or mul_rn(g, slope)."""
    _check_tensor("leaky_relu", input)
    slope = _number("leaky_relu", "negative_slope", negative_slope)
    return _store_inplace("leaky_relu", input, backend.call(_LeakyRelu, input, slope)[0], inplace)


__all__ = ["softmax", "log_softmax", "logsumexp", "silu", "softplus", "mish", "relu", "leaky_relu"]
