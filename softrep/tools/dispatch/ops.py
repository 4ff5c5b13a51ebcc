# softrep: no kernels
"""The op table: every aten op falls in one of three classes.

* REPRODUCIBLE ("reproducible through softrep"): softrep computes it.  `RULES`
  maps the aten overload (``str(func)``, e.g. ``"aten.mm.default"``) to a
  `Rule`: `accepts` says whether these arguments are covered (dtype, options),
  `run` computes the result with softrep (no autograd: the dispatch mode sits
  below autograd, and backward aten ops arrive as ops of their own).
* EXACT ("exact by IEEE"): the result is defined bit for bit by IEEE 754 or
  moves values without arithmetic, so torch's own kernel gives the same bits on
  every device (views, copies, indexing, comparisons, selections such as relu
  and max, dtype conversions rounded to nearest, integer arithmetic).
* NOT_REPRODUCIBLE: anything else; the bits may depend on the device, the
  library version, the thread count or the order of atomics.

Backward ops that torch fuses (``_softmax_backward_data``, ``tanh_backward``,
``convolution_backward``, ``gelu_backward``, ...) are computed with the formula
of softrep's own autograd, so a functional torch model under the mode has the
same gradient bits as the same model written with softrep ops.  Backward
formulas that torch writes as several aten ops (the gradient of ``div`` by its
divisor, of ``var``, of ``erf``) are torch's formula evaluated with softrep
ops: reproducible, but not necessarily the bits of softrep's own autograd
(docs/patching.md lists which).
"""

import contextlib
from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_leaves

REPRODUCIBLE = "reproducible through softrep"
EXACT = "exact by IEEE"
NOT_REPRODUCIBLE = "not reproducible"
CLASSES = (REPRODUCIBLE, EXACT, NOT_REPRODUCIBLE)

SOFTREP_DTYPES = (torch.float32, torch.float64)


@dataclass
class Rule:
    """How softrep computes one aten overload."""

    run: object  # run(*args, **kwargs) -> the aten op's result
    accepts: object  # accepts(*args, **kwargs) -> None | "integer" | reason string
    note: str = ""  # for the table in docs/patching.md


class _Integer(str):
    """An `accepts` answer: no floating operand, so the op is integer arithmetic (exact)."""


INTEGER = _Integer("integer arithmetic")


# --------------------------------------------------------------------------- dtype checks


def _tensors(*values):
    return [v for v in tree_leaves(list(values)) if isinstance(v, torch.Tensor)]


def _dtype_answer(dtype):
    if dtype in SOFTREP_DTYPES:
        return None
    if dtype.is_floating_point or dtype.is_complex:
        return f"softrep computes float32 and float64, not {dtype}"
    return INTEGER


def _same_float(*args, **kwargs):
    """All tensor operands share one dtype, float32 or float64 (softrep never promotes)."""
    ts = _tensors(args, kwargs)
    if not ts:
        return "no tensor operand"
    dtypes = {t.dtype for t in ts}
    if len(dtypes) > 1:
        if not any(d.is_floating_point for d in dtypes):
            return INTEGER
        return f"mixed dtypes {sorted(map(str, dtypes))}"
    return _dtype_answer(ts[0].dtype)


def _result_type(a, b):
    """torch's promoted dtype of an elementwise op on a tensor and a tensor or number
    (0-d tensors and numbers only raise the category, as in torch)."""
    return torch.result_type(a, b) if isinstance(a, torch.Tensor) else torch.result_type(b, a)


def _elementwise_answer(a, b):
    return _dtype_answer(_result_type(a, b))


def _as(v, dtype, device):
    """An operand in the op's computation dtype: tensors converted (an IEEE
    conversion, rounded to nearest, as torch does before computing), numbers left
    to softrep (converted to the dtype by rounding to nearest, as torch does)."""
    if isinstance(v, torch.Tensor):
        return v if (v.dtype == dtype and v.device == device) else v.to(device=device, dtype=dtype)
    if isinstance(v, bool):
        return float(v)
    return v


# --------------------------------------------------------------------------- rules


def _ew():
    from ...ops import elementwise

    return elementwise


def _binary(name, inplace=False):
    """add/sub/mul/div.Tensor and .Scalar (and the in-place forms), with torch's alpha."""

    def accepts(self, other, *, alpha=1, rounding_mode=None):
        answer = _elementwise_answer(self, other)
        if rounding_mode is not None and not isinstance(answer, _Integer):
            return f"rounding_mode={rounding_mode!r} (softrep's div is IEEE division)"
        return answer

    def run(self, other, *, alpha=1, rounding_mode=None):
        E = _ew()
        ts = [v for v in (self, other) if isinstance(v, torch.Tensor)]
        dtype = _result_type(self, other)
        # a 0-d operand (a wrapped number) may sit on the CPU next to a CUDA tensor
        device = next((t.device for t in ts if t.dim() > 0), ts[0].device)
        a, b = _as(self, dtype, device), _as(other, dtype, device)
        if name in ("add", "sub") and alpha != 1:
            # torch computes self + alpha*other as one fused multiply-add; so does softrep
            out = E.fma(b, float(alpha) if name == "add" else -float(alpha), a)
        else:
            out = getattr(E, name)(a, b)
        if inplace:
            return self.copy_(out)
        return out

    return Rule(run, accepts, f"softrep.{name}" + (" (alpha != 1: softrep.fma)" if name in ("add", "sub") else ""))


def _rsub():
    def accepts(self, other, alpha=1):
        return _elementwise_answer(self, other)

    def run(self, other, alpha=1):
        E = _ew()
        dtype = _result_type(self, other)
        a = _as(self, dtype, self.device)
        if alpha != 1:
            return E.fma(a, -float(alpha), other)
        return E.sub(other, a)

    return Rule(run, accepts, "softrep.sub(other, self)")


def _unary_math(name):
    """A correctly rounded function of softrep/algorithms/math."""

    def accepts(self):
        from ...ops import math as M

        dtype = self.dtype if self.dtype.is_floating_point else torch.get_default_dtype()
        answer = _dtype_answer(dtype)
        if answer is None and dtype == torch.float64 and M.FUNCTIONS[name].f64 is None:
            return f"softrep.{name} has no float64 kernel yet"
        return answer if answer is not INTEGER else None

    def run(self):
        from ...ops import math as M

        x = self if self.dtype.is_floating_point else self.to(torch.get_default_dtype())
        return M.FUNCTIONS[name].op(x)

    return Rule(run, accepts, f"softrep.{name} (correctly rounded)")


# The functions of softrep/algorithms/math rerouted from their aten op of the same name (each
# one checked against the softrep API in tests/test_dispatch.py).
UNARY_MATH = ("exp", "log", "tanh", "sigmoid", "erf", "log1p", "expm1", "sin", "cos", "rsqrt")


def _pow_rule():
    """x ** c: softrep.pow(x, c), correctly rounded (so x ** 2 is mul(x, x) exactly)."""

    def accepts(self, exponent):
        from ...ops import math as M

        answer = _dtype_answer(self.dtype)
        if answer is None and self.dtype == torch.float64 and M.FUNCTIONS["pow"].f64 is None:
            return "softrep.pow has no float64 kernel yet"
        return answer

    def run(self, exponent):
        from ...ops import math as M

        return M.FUNCTIONS["pow"].op(self, float(exponent))

    return Rule(run, accepts, "softrep.pow (correctly rounded)")


def _unary_float(fn_name, fn):
    """An op with a float result: integer inputs are converted to the default dtype, as torch does."""

    def accepts(self):
        answer = _dtype_answer(self.dtype if self.dtype.is_floating_point else torch.get_default_dtype())
        return answer

    def run(self):
        return fn()(self if self.dtype.is_floating_point else self.to(torch.get_default_dtype()))

    return Rule(run, accepts, f"softrep.{fn_name}")


def _math_grad(name):
    """tanh_backward(grad, output), sigmoid_backward(grad, output): the math
    op's gradient (softrep/ops/math.py), which only reads the output for
    these two."""

    def run(grad_output, output):
        from ...ops import math as M

        return M.FUNCTIONS[name].grad(grad_output, output, None)[0]

    return Rule(run, _same_float, f"softrep.{name}'s gradient (softrep/ops/math.py)")


_AUTOGRAD_KEYS = (torch._C.DispatchKey.AutogradFunctionality, torch._C.DispatchKey.ADInplaceOrView)


@contextlib.contextmanager
def _autograd_on():
    """Grad mode, and torch's autograd dispatch keys back on: an op that reaches the
    mode came through autograd's kernel, which excludes those keys for the ops
    below it, so without this the aten ops (reshape, gather) inside a softrep
    function would record no graph."""
    excluded = [torch._C._dispatch_tls_is_dispatch_key_excluded(k) for k in _AUTOGRAD_KEYS]
    for key in _AUTOGRAD_KEYS:
        torch._C._dispatch_tls_set_dispatch_key_excluded(key, False)
    try:
        with torch.enable_grad():
            yield
    finally:
        for key, was in zip(_AUTOGRAD_KEYS, excluded):
            torch._C._dispatch_tls_set_dispatch_key_excluded(key, was)


def _replay_grad(fn, grad_output, *inputs, **kwargs):
    """The input gradients of a softrep function by running its autograd: the same
    bits as the backward of the softrep API (the dispatch mode is off inside its
    own handler, so softrep's ops run plainly).  An input given as None is passed
    as None and gets no gradient."""
    with _autograd_on():
        leaves = [None if x is None else x.detach().requires_grad_(True) for x in inputs]
        out = fn(*leaves, **kwargs)
        wanted = [x for x in leaves if x is not None]
        grads = iter(torch.autograd.grad(out, wanted, grad_output))
        return tuple(None if x is None else next(grads) for x in leaves)


def _gelu_rules():
    def run(self, approximate="none"):
        from ...nn.functional.gelu import gelu

        return gelu(self, approximate=approximate)

    def run_backward(grad_output, self, approximate="none"):
        from ...nn.functional.gelu import gelu

        return _replay_grad(gelu, grad_output, self, approximate=approximate)[0]

    def accepts(self, approximate="none"):
        return _same_float(self)

    def accepts_backward(grad_output, self, approximate="none"):
        return _same_float(grad_output, self)

    return Rule(run, accepts, "softrep.gelu"), Rule(run_backward, accepts_backward, "autograd of softrep.gelu")


def _silu_rules():
    def run(self):
        from ...nn.functional.activations import silu

        return silu(self)

    def run_backward(grad_output, self):
        from ...nn.functional.activations import silu

        return _replay_grad(silu, grad_output, self)[0]

    return Rule(run, _same_float, "softrep.silu"), Rule(run_backward, _same_float, "autograd of softrep.silu")


def _dtype_kwarg(dtype, input):
    if dtype is not None and dtype != input.dtype:
        return f"dtype={dtype} (softrep does not convert inside a reduction)"
    return None


def _reduction_rules():
    from ...ops import reduction as R

    def sum_accepts(self, dim=None, keepdim=False, *, dtype=None):
        if not self.dtype.is_floating_point:
            return INTEGER
        return _dtype_kwarg(dtype, self) or _dtype_answer(self.dtype)

    def sum_run(self, dim=None, keepdim=False, *, dtype=None):
        return R.sum(self, None if dim is None else tuple(dim), keepdim)

    def mean_run(self, dim=None, keepdim=False, *, dtype=None):
        return R.mean(self, None if dim is None else tuple(dim), keepdim)

    def mean_accepts(self, dim=None, keepdim=False, *, dtype=None):
        return _dtype_kwarg(dtype, self) or _dtype_answer(self.dtype)

    def extreme_run(largest):
        def run(self, dim=(), keepdim=False):
            return (R.amax if largest else R.amin)(self, tuple(dim), keepdim)
        return run

    def extreme_accepts(self, dim=(), keepdim=False):
        return _dtype_answer(self.dtype)

    def var_run(fn):
        def run(self, dim=None, *, correction=None, keepdim=False):
            return fn(self, None if dim is None else tuple(dim), correction=1 if correction is None else correction,
                      keepdim=keepdim)
        return run

    def var_accepts(self, dim=None, *, correction=None, keepdim=False):
        return _dtype_answer(self.dtype)

    return {
        "aten.sum.default": Rule(lambda self, *, dtype=None: R.sum(self), sum_accepts, "softrep.sum"),
        "aten.sum.dim_IntList": Rule(sum_run, sum_accepts, "softrep.sum"),
        "aten.mean.default": Rule(lambda self, *, dtype=None: R.mean(self), mean_accepts, "softrep.mean"),
        "aten.mean.dim": Rule(mean_run, mean_accepts, "softrep.mean"),
        "aten.amax.default": Rule(extreme_run(True), extreme_accepts, "softrep.amax"),
        "aten.amin.default": Rule(extreme_run(False), extreme_accepts, "softrep.amin"),
        "aten.var.correction": Rule(var_run(R.var), var_accepts, "softrep.var"),
        "aten.std.correction": Rule(var_run(R.std), var_accepts, "softrep.std"),
    }


def _product_rules():
    from ...ops import products as P

    def addmm_accepts(self, mat1, mat2, *, beta=1, alpha=1):
        if beta != 1 or alpha != 1:
            return f"addmm with beta={beta}, alpha={alpha} (softrep has beta = alpha = 1)"
        return _same_float(self, mat1, mat2)

    def two(a, b):
        return _same_float(a, b)

    # the public ops (under no_grad: forward only) check shapes, which torch's
    # kernels would have done below the dispatcher
    return {
        "aten.mm.default": Rule(lambda self, mat2: P.mm(self, mat2), two, "softrep.mm"),
        "aten.bmm.default": Rule(lambda self, mat2: P.bmm(self, mat2), two, "softrep.bmm"),
        "aten.addmm.default": Rule(
            lambda self, mat1, mat2, *, beta=1, alpha=1: P.addmm(self, mat1, mat2), addmm_accepts,
            "softrep.addmm (bias added once after the chain)"),
    }


def _softmax_rules():
    from ...nn.functional import activations as A

    def accepts(self, dim, half_to_float):
        return "half_to_float=True" if half_to_float else _dtype_answer(self.dtype)

    def accepts_backward(grad_output, output, dim, input_dtype):
        if input_dtype != output.dtype:
            return f"input dtype {input_dtype} differs from the output's {output.dtype}"
        return _same_float(grad_output, output)

    def backward(function):
        def run(grad_output, output, dim, input_dtype):
            ctx = SimpleNamespace(saved_tensors=(output,), dim=dim % max(output.dim(), 1))
            return function.backward(ctx, grad_output)[0]
        return run

    return {
        "aten._softmax.default": Rule(lambda self, dim, half_to_float: A.softmax(self, dim), accepts,
                                      "softrep.softmax"),
        "aten._log_softmax.default": Rule(lambda self, dim, half_to_float: A.log_softmax(self, dim), accepts,
                                          "softrep.log_softmax"),
        "aten._softmax_backward_data.default": Rule(backward(A.SoftmaxFunction), accepts_backward,
                                                    "softrep.softmax's backward"),
        "aten._log_softmax_backward_data.default": Rule(backward(A.LogSoftmaxFunction), accepts_backward,
                                                        "softrep.log_softmax's backward"),
    }


def _conv_rules():
    from ...ops import conv as C

    def accepts(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
        if transposed:
            return "transposed convolution"
        if input.dim() not in (3, 4):
            return f"{input.dim() - 2}-D convolution (softrep has conv1d and conv2d)"
        return _same_float(input, weight, bias)

    def run(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
        fn = C.conv1d if input.dim() == 3 else C.conv2d
        return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)

    def accepts_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
        return accepts(input, weight, None, stride, padding, dilation, transposed, output_padding, groups) \
            or _same_float(grad_output, input, weight)

    def run_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                     output_padding, groups, output_mask):
        # softrep's own backward (softrep/ops/conv.py, _Conv2d.backward) on the tensors it saves
        one_d = input.dim() == 3
        x, w, g = (input.unsqueeze(2), weight.unsqueeze(2), grad_output.unsqueeze(2)) if one_d else (
            input, weight, grad_output)
        stride, dilation = tuple(stride), tuple(dilation)
        pads = tuple((p, p) for p in padding)
        if one_d:
            stride, dilation, pads = (1,) + stride, (1,) + dilation, ((0, 0),) + pads
        xpad = F.pad(x.detach(), (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
        ctx = SimpleNamespace(saved_tensors=(w.detach(), xpad), needs_input_grad=tuple(output_mask),
                              conf=(x.shape, xpad.shape, stride, pads, dilation, groups, bias_sizes is not None))
        gx, gw, gb = C.Conv2dFunction.backward(ctx, g)[:3]
        if one_d:
            gx = None if gx is None else gx.squeeze(2)
            gw = None if gw is None else gw.squeeze(2)
        return gx, gw, gb

    return {
        "aten.convolution.default": Rule(run, accepts, "softrep.conv1d / conv2d"),
        "aten.convolution_backward.default": Rule(run_backward, accepts_backward, "softrep.conv2d's backward"),
    }


_REDUCTIONS = ("none", "mean", "sum")  # torch's reduction enum


def _nll_rules():
    """nll_loss_forward / nll_loss2d_forward -> (output, total_weight) and their
    backward: softrep.nll_loss (softrep/nn/functional/losses.py) and its autograd."""

    def accepts(self, target, weight, reduction, ignore_index):
        return _same_float(self, weight) if weight is not None else _dtype_answer(self.dtype)

    def run(self, target, weight, reduction, ignore_index):
        from ...nn.functional import losses as L
        from ...ops import reduction as R

        out = L.nll_loss(self, target, weight, ignore_index, _REDUCTIONS[reduction])
        class_dim = 0 if self.dim() == 1 else 1
        _, _, w_t = L.gather_targets("nll_loss", self, target, weight, ignore_index, class_dim)
        return out, R.sum(w_t)  # total_weight: only torch's own backward reads it

    def accepts_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
        return accepts(self, target, weight, reduction, ignore_index) or _same_float(grad_output, self)

    def run_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
        from ...nn.functional import losses as L

        def loss(x):
            return L.nll_loss(x, target, weight, ignore_index, _REDUCTIONS[reduction])

        return _replay_grad(loss, grad_output, self)[0]

    forward = Rule(run, accepts, "softrep.nll_loss")
    backward = Rule(run_backward, accepts_backward, "autograd of softrep.nll_loss")
    return {"aten.nll_loss_forward.default": forward, "aten.nll_loss2d_forward.default": forward,
            "aten.nll_loss_backward.default": backward, "aten.nll_loss2d_backward.default": backward}


def _mse_rules():
    """mse_loss and mse_loss_backward: softrep.mse_loss (softrep/nn/functional/losses.py) and its autograd."""

    def accepts(self, target, reduction=1):
        return _same_float(self, target)

    def run(self, target, reduction=1):
        from ...nn.functional import losses as L

        return L.mse_loss(self, target, _REDUCTIONS[reduction])

    def accepts_backward(grad_output, self, target, reduction):
        return _same_float(grad_output, self, target)

    def run_backward(grad_output, self, target, reduction):
        from ...nn.functional import losses as L

        return _replay_grad(lambda x: L.mse_loss(x, target, _REDUCTIONS[reduction]), grad_output, self)[0]

    return {"aten.mse_loss.default": Rule(run, accepts, "softrep.mse_loss"),
            "aten.mse_loss_backward.default": Rule(run_backward, accepts_backward, "autograd of softrep.mse_loss")}


# native_layer_norm_backward gets the forward's mean and rstd but not eps, which
# softrep's backward needs (it recomputes nothing from rstd).  The forward rule
# therefore returns rstd as a view of a buffer with two more elements, a tag and
# eps (rounded to the dtype, which is all softrep.layer_norm uses of it); the
# saved rstd shares that storage.
_EPS_TAG = -1234.5  # an rstd is positive, so this value marks the buffer as softrep's


def _carry_eps(rstd, eps):
    buf = torch.empty(rstd.numel() + 2, dtype=rstd.dtype, device=rstd.device)
    buf[:-2] = rstd.reshape(-1)
    buf[-2] = _EPS_TAG
    buf[-1] = eps
    return buf[:-2].view(rstd.shape)


def _carried_eps(rstd):
    n, offset, size = rstd.numel(), rstd.storage_offset(), rstd.element_size()
    storage = rstd.untyped_storage()
    if not rstd.is_contiguous() or storage.nbytes() < (offset + n + 2) * size:
        return None
    tail = torch.empty(0, dtype=rstd.dtype, device=rstd.device).set_(storage, offset + n, (2,))
    return float(tail[1]) if float(tail[0]) == _EPS_TAG else None


def _layer_norm_rules():
    """native_layer_norm -> (out, mean, rstd) by softrep.layer_norm's ops; its
    backward by the autograd of softrep.layer_norm."""

    def accepts(input, normalized_shape, weight, bias, eps):
        return _same_float(input, weight, bias)

    def run(input, normalized_shape, weight, bias, eps):
        from ...ops import elementwise as E
        from ...nn.functional import normalization as N

        if input.numel() == 0:
            out = N.layer_norm(input, normalized_shape, weight, bias, eps)
            empty = input.new_empty(input.shape[:input.dim() - len(normalized_shape)] + (1,) * len(normalized_shape))
            return out, empty, _carry_eps(empty, eps)
        shape, dims = N.normalized_shape_dims("layer_norm", input, normalized_shape)
        N.check_param("layer_norm", "weight", weight, input, shape)
        N.check_param("layer_norm", "bias", bias, input, shape)
        eps = N.check_eps("layer_norm", eps)
        # the ops of softrep.layer_norm (_Normalize.forward, then _affine)
        xhat, mean, _, s = N.moments(input, dims, eps, True)
        return N.affine(xhat, weight, bias, shape), mean, _carry_eps(E.reciprocal(s), eps)

    def accepts_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
        return _same_float(grad_out, input, weight, bias)

    def run_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
        from ...nn.functional import normalization as N

        eps = _carried_eps(rstd)
        if eps is None:
            raise RuntimeError("softrep.reproducible: native_layer_norm_backward of a layer norm whose forward ran "
                               "outside the mode (its eps is unknown); run the forward under the mode too")
        # every operand gets a gradient (as softrep's autograd computes them all);
        # the ones torch did not ask for are dropped
        grads = _replay_grad(lambda x, w, b: N.layer_norm(x, normalized_shape, w, b, eps), grad_out,
                             input, weight, bias)
        return tuple(g if wanted else None for g, wanted in zip(grads, output_mask))

    return {"aten.native_layer_norm.default": Rule(run, accepts, "softrep.layer_norm"),
            "aten.native_layer_norm_backward.default": Rule(run_backward, accepts_backward,
                                                            "autograd of softrep.layer_norm")}


def _batch_norm_rules():
    """native_batch_norm -> (out, save_mean, save_invstd) by softrep.batch_norm
    (running statistics updated in place, as torch's kernel does); its backward
    (which receives eps and the training flag) by the autograd of
    softrep.batch_norm on the same input: the batch statistics in training, the
    running ones in evaluation."""

    def accepts(input, weight, bias, running_mean, running_var, training, momentum, eps):
        return _same_float(input, weight, bias, running_mean, running_var)

    def run(input, weight, bias, running_mean, running_var, training, momentum, eps):
        from ...nn.functional import normalization as N

        out = N.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
        # only torch's own backward reads these two; softrep's recomputes from input
        empty = input.new_zeros((input.shape[1] if training else 0,))
        return out, empty, empty.clone()

    def accepts_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
                         output_mask):
        return _same_float(grad_out, input, weight, running_mean, running_var)

    def run_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
                     output_mask):
        from ...nn.functional import normalization as N

        # weight and bias stand in as ones / zeros when absent: neither changes the
        # gradient of input (mul by 1 and add of 0 are exact), and their own
        # gradients are dropped unless torch asked for them
        w = weight if weight is not None else input.new_ones(input.shape[1])
        b = input.new_zeros(input.shape[1])
        stats = (None, None) if train else (running_mean, running_var)
        grads = _replay_grad(lambda x, w, b: N.batch_norm(x, *stats, w, b, train, 0.0, eps), grad_out, input, w, b)
        return tuple(g if wanted else None for g, wanted in zip(grads, output_mask))

    return {"aten.native_batch_norm.default": Rule(run, accepts, "softrep.batch_norm"),
            "aten.native_batch_norm_backward.default": Rule(run_backward, accepts_backward,
                                                            "autograd of softrep.batch_norm")}


def _group_norm_rules():
    """native_group_norm -> (out, mean, rstd) by softrep.group_norm; its backward
    (which gets no eps: carried in rstd, as for layer_norm) by its autograd."""

    def accepts(input, weight, bias, N, C, HxW, group, eps):
        return _same_float(input, weight, bias)

    def run(input, weight, bias, N, C, HxW, group, eps):
        from ...nn.functional import normalization as Nm

        out = Nm.group_norm(input, group, weight, bias, eps)
        stats = input.new_zeros((N, group))
        return out, stats, _carry_eps(stats.clone(), eps)

    def accepts_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
        return _same_float(grad_out, input, weight)

    def run_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
        from ...nn.functional import normalization as Nm

        eps = _carried_eps(rstd)
        if eps is None:
            raise RuntimeError("softrep.reproducible: native_group_norm_backward of a group norm whose forward ran "
                               "outside the mode (its eps is unknown); run the forward under the mode too")
        w = weight if weight is not None else input.new_ones(C)
        grads = _replay_grad(lambda x, w, b: Nm.group_norm(x, group, w, b, eps), grad_out, input, w,
                             input.new_zeros(C))
        return tuple(g if wanted else None for g, wanted in zip(grads, output_mask))

    return {"aten.native_group_norm.default": Rule(run, accepts, "softrep.group_norm"),
            "aten.native_group_norm_backward.default": Rule(run_backward, accepts_backward,
                                                            "autograd of softrep.group_norm")}


def _rms_norm_decomposition(input, normalized_shape, weight, eps):
    """torch's own rms_norm on the CPU (the composite of aten/native/layer_norm.cpp),
    in torch ops: under the mode each op is rerouted to softrep, which is what
    F.rms_norm computes on a CPU tensor under the mode."""
    dims = [input.dim() - i - 1 for i in range(len(normalized_shape))]
    eps = torch.finfo(input.dtype).eps if eps is None else eps
    rstd = torch.rsqrt(torch.pow(input, 2).mean(dims, keepdim=True).add_(eps))
    out = input.mul(rstd)
    return (out.mul(weight) if weight is not None else out), rstd


# A fresh strict `reproducible` mode; mode.py sets it (this module sits below the
# mode and cannot import it).  Rules that evaluate torch code under the mode use
# it: the outer mode is off inside its own handler.
new_mode = None


def _under_mode(fn, *args):
    """fn(*args) with its torch ops rerouted (a nested mode) and recorded by autograd."""
    with _autograd_on(), new_mode():
        return fn(*args)


def _rms_norm_rules():
    """_fused_rms_norm (what F.rms_norm calls on CUDA) -> torch's CPU composite of
    rms_norm with every op rerouted, so a CUDA tensor gets the bits F.rms_norm gives
    a CPU tensor under the mode; its backward is the autograd of that composite
    under the mode (eps carried in rstd, as for layer_norm)."""

    def accepts(input, normalized_shape, weight, eps):
        return _same_float(input, weight)

    def run(input, normalized_shape, weight, eps):
        with new_mode():
            out, rstd = _rms_norm_decomposition(input, normalized_shape, weight, eps)
        eps = torch.finfo(input.dtype).eps if eps is None else eps
        return out, _carry_eps(rstd.contiguous(), eps)

    def accepts_backward(grad_out, input, normalized_shape, rstd, weight, output_mask):
        return _same_float(grad_out, input, weight)

    def run_backward(grad_out, input, normalized_shape, rstd, weight, output_mask):
        eps = _carried_eps(rstd)
        if eps is None:
            raise RuntimeError("softrep.reproducible: _fused_rms_norm_backward of an rms norm whose forward ran "
                               "outside the mode (its eps is unknown); run the forward under the mode too")
        leaves = [input.detach().requires_grad_(True)]
        if weight is not None:
            leaves.append(weight.detach().requires_grad_(True))
        with _autograd_on():
            out = _under_mode(lambda x, *w: _rms_norm_decomposition(x, normalized_shape, w[0] if w else None,
                                                                   eps)[0], *leaves)
            grads = _under_mode(lambda: torch.autograd.grad(out, leaves, grad_out))
        gw = grads[1] if weight is not None else None
        return (grads[0] if output_mask[0] else None), (gw if output_mask[1] else None)

    return {"aten._fused_rms_norm.default": Rule(run, accepts, "torch's CPU rms_norm in softrep ops"),
            "aten._fused_rms_norm_backward.default": Rule(run_backward, accepts_backward,
                                                          "its autograd in softrep ops")}


def _pool_rules():
    """max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and their
    backward: softrep's pooling (softrep/nn/functional/pooling.py) and its autograd.
    softrep's max pool defines the ties torch leaves open (+0 above -0, NaN
    largest, the first window position among equal values)."""
    from ...nn.functional import pooling as Pl

    def one(input, *rest, **kwargs):
        return _dtype_answer(input.dtype)

    def two(grad_output, input, *rest, **kwargs):
        return _same_float(grad_output, input)

    def max_run(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return Pl.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)

    def max_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode, indices):
        return _replay_grad(lambda x: Pl.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode),
                            grad_output, input)[0]

    def avg_run(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
        return Pl.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)

    def avg_backward(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override):
        return _replay_grad(lambda x: Pl.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                                    divisor_override), grad_output, input)[0]

    def adaptive_backward(grad_output, input):
        size = tuple(grad_output.shape[-2:])
        return _replay_grad(lambda x: Pl.adaptive_avg_pool2d(x, size), grad_output, input)[0]

    return {
        "aten.max_pool2d_with_indices.default": Rule(max_run, one, "softrep.max_pool2d"),
        "aten.max_pool2d_with_indices_backward.default": Rule(max_backward, two, "autograd of softrep.max_pool2d"),
        "aten.avg_pool2d.default": Rule(avg_run, one, "softrep.avg_pool2d"),
        "aten.avg_pool2d_backward.default": Rule(avg_backward, two, "autograd of softrep.avg_pool2d"),
        "aten._adaptive_avg_pool2d.default": Rule(lambda input, output_size: Pl.adaptive_avg_pool2d(
            input, tuple(output_size)), one, "softrep.adaptive_avg_pool2d"),
        "aten._adaptive_avg_pool2d_backward.default": Rule(adaptive_backward, two,
                                                           "autograd of softrep.adaptive_avg_pool2d"),
    }


def _embedding_rules():
    """embedding (an exact copy of rows, rerouted so that a NaN row is canonical as
    in softrep) and embedding_dense_backward: the autograd of softrep.embedding
    (per row, the softrep.sum of its gradient rows in row-major order of the
    indices) instead of torch's accumulation in an unspecified order."""
    from ...nn.functional import sparse as S

    def accepts(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        if scale_grad_by_freq or sparse:
            return "embedding with scale_grad_by_freq or sparse (not in softrep.embedding)"
        return _dtype_answer(weight.dtype)

    def run(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        return S.embedding(indices, weight)

    def accepts_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
        if scale_grad_by_freq:
            return "embedding with scale_grad_by_freq (not in softrep.embedding)"
        return _dtype_answer(grad_output.dtype)

    def run_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
        table = grad_output.new_zeros((num_weights, grad_output.shape[-1]))
        pad = None if padding_idx < 0 else padding_idx
        return _replay_grad(lambda w: S.embedding(indices, w, pad), grad_output, table)[0]

    return {"aten.embedding.default": Rule(run, accepts, "softrep.embedding"),
            "aten.embedding_dense_backward.default": Rule(run_backward, accepts_backward,
                                                          "autograd of softrep.embedding")}


def _attention_rules():
    """_scaled_dot_product_flash_attention_for_cpu (what F.scaled_dot_product_attention
    calls on the CPU) and its backward: softrep.scaled_dot_product_attention and its
    autograd.  The logsumexp output is only read by torch's own backward."""
    from ...nn.functional import attention as At

    def accepts(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
        if dropout_p:
            return "attention dropout (torch's random generator inside the fused kernel)"
        return _same_float(query, key, value, attn_mask if attn_mask is None or attn_mask.is_floating_point()
                           else None)

    def sdpa(query, key, value, attn_mask, is_causal, scale):
        return At.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, is_causal=is_causal,
                                               scale=scale)

    def run(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
        out = sdpa(query, key, value, attn_mask, is_causal, scale)
        return out, query.new_zeros(query.shape[:-1], dtype=torch.float32)

    def accepts_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
                         scale=None):
        return accepts(query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale) \
            or _same_float(grad_out, query)

    def run_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
                     scale=None):
        return _replay_grad(lambda q, k, v: sdpa(q, k, v, attn_mask, is_causal, scale), grad_out, query, key, value)

    return {"aten._scaled_dot_product_flash_attention_for_cpu.default": Rule(
                run, accepts, "softrep.scaled_dot_product_attention"),
            "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": Rule(
                run_backward, accepts_backward, "autograd of softrep.scaled_dot_product_attention")}


def _foreach_rules():
    """torch.optim's foreach forms (_foreach_add, _foreach_mul, ...): the rule of
    the single-tensor op applied to each tensor of the list in turn."""
    table = {}

    def listed(rule, inplace, scalar_list):
        def pairs(self, other):
            if scalar_list or isinstance(other, (list, tuple)):
                return list(zip(self, other))
            return [(t, other) for t in self]

        def accepts(self, other, **kwargs):
            answers = [rule.accepts(a, b, **kwargs) for a, b in pairs(self, other)]
            refused = [a for a in answers if a is not None and not isinstance(a, _Integer)]
            if refused:
                return refused[0]
            return INTEGER if answers and all(isinstance(a, _Integer) for a in answers) else None

        def run(self, other, **kwargs):
            outs = [rule.run(a, b, **kwargs) for a, b in pairs(self, other)]
            return None if inplace else outs

        return Rule(run, accepts, f"{rule.note}, per tensor")

    for name in ("add", "sub", "mul", "div"):
        for inplace in (False, True):
            single = _binary(name, inplace)
            op = f"aten._foreach_{name}{'_' if inplace else ''}"
            for overload in ("List", "Scalar", "Tensor"):
                table[f"{op}.{overload}"] = listed(single, inplace, False)
            table[f"{op}.ScalarList"] = listed(single, inplace, True)
    return table


TORCH_GENERATOR_REASON = ("an explicit torch.Generator (its state cannot be mapped to a Philox stream); "
                          "draw without one, or use softrep's random functions with a softrep.Generator")


def _random_rules():
    """torch's random ops -> softrep's Philox draws (softrep/ops/random.py) on the
    stream softrep.ops.generator.torch_stream(): key torch.initial_seed(), one
    offset per call, counted from the last torch.manual_seed.  Element i of a draw
    depends only on (seed, offset, i), so the same script draws the same numbers on
    every device."""
    from ...ops import generator as G
    from ...ops import random as Rn

    def no_generator(kwargs):
        return TORCH_GENERATOR_REASON if kwargs.get("generator") is not None else None

    def float_dtype(dtype):
        dtype = torch.get_default_dtype() if dtype is None else dtype
        return None if dtype in SOFTREP_DTYPES else f"softrep draws float32 and float64, not {dtype}"

    def created(size, kwargs, dtype_default=None):
        return no_generator(kwargs) or float_dtype(kwargs.get("dtype", dtype_default))

    def factory(draw):
        def run(size, **kwargs):
            dtype = kwargs.get("dtype") or torch.get_default_dtype()
            out = draw(tuple(size), generator=G.torch_stream(), dtype=dtype, device=kwargs.get("device"))
            return out.requires_grad_(False)
        return Rule(run, lambda size, **kwargs: created(size, kwargs), f"softrep.{draw.__name__}")

    def like(draw):
        def accepts(self, **kwargs):
            return no_generator(kwargs) or float_dtype(kwargs.get("dtype") or self.dtype)

        def run(self, **kwargs):
            dtype = kwargs.get("dtype") or self.dtype
            return draw(tuple(self.shape), generator=G.torch_stream(), dtype=dtype,
                        device=kwargs.get("device") or self.device)
        return Rule(run, accepts, f"softrep.{draw.__name__}")

    def randint_accepts(*args, **kwargs):
        return no_generator(kwargs)

    def randint_run(*args, **kwargs):
        low, high, size = (0, *args) if len(args) == 2 else args
        return Rn.randint(low, high, tuple(size), generator=G.torch_stream(),
                          dtype=kwargs.get("dtype") or torch.int64, device=kwargs.get("device"))

    def randperm_run(n, **kwargs):
        return Rn.randperm(n, generator=G.torch_stream(), dtype=kwargs.get("dtype") or torch.int64,
                           device=kwargs.get("device"))

    def fill_accepts(self, *args, **kwargs):
        return no_generator(kwargs) or float_dtype(self.dtype)

    def uniform_run(self, low=0.0, high=1.0, **kwargs):
        return Rn.uniform_(self, low, high, generator=G.torch_stream())

    def normal_run(self, mean=0.0, std=1.0, **kwargs):
        return Rn.normal_(self, mean, std, generator=G.torch_stream())

    def bernoulli_accepts(self, p=0.5, **kwargs):
        return no_generator(kwargs) or (_dtype_answer(p.dtype) if isinstance(p, torch.Tensor) else None) \
            or (float_dtype(self.dtype) if self.dtype.is_floating_point else None)

    def bernoulli_fill(self, p=0.5, **kwargs):
        return Rn.bernoulli_(self, p, generator=G.torch_stream())

    def bernoulli_new(self, p=None, **kwargs):
        if p is None:  # torch.bernoulli(probs)
            return Rn.bernoulli(self, generator=G.torch_stream())
        return Rn.bernoulli_(torch.empty_like(self), p, generator=G.torch_stream())

    def dropout_accepts(input, p, train):
        return _dtype_answer(input.dtype)

    def dropout_run(input, p, train):
        """native_dropout (what F.dropout calls on CUDA): the ops of torch's CPU dropout,
        noise = div(bernoulli_(1 - p), 1 - p) and mul(input, noise), so both devices
        give the same bits; the mask is the kept positions."""
        if not train or p == 0:
            return input.clone(), torch.ones_like(input, dtype=torch.bool)
        E = _ew()
        noise = Rn.bernoulli_(torch.empty_like(input), 1.0 - p, generator=G.torch_stream())
        if p < 1:
            noise = E.div(noise, 1.0 - p)
        return E.mul(input, noise), noise != 0

    def dropout_backward(grad_output, mask, scale):
        """mul(grad, noise) with noise = div(1, fl(1 - p)) where kept, +0 elsewhere:
        torch passes scale = 1 / (1 - p) in binary64; 1 / scale gives back 1 - p to
        within an ulp of binary64, which rounds to the same float32 / float64 q."""
        E = _ew()
        q = torch.tensor(1.0 / scale if scale else 0.0, dtype=torch.float64).to(grad_output.dtype)
        kept = E.div(torch.ones((), dtype=grad_output.dtype), q).to(grad_output.device) if scale else \
            torch.zeros((), dtype=grad_output.dtype, device=grad_output.device)
        noise = torch.where(mask, kept, torch.zeros((), dtype=grad_output.dtype, device=grad_output.device))
        return E.mul(grad_output, noise)

    rules = {
        "aten.rand.default": factory(Rn.rand),
        "aten.randn.default": factory(Rn.randn),
        "aten.rand_like.default": like(Rn.rand),
        "aten.randn_like.default": like(Rn.randn),
        "aten.randint.default": Rule(randint_run, randint_accepts, "softrep.randint"),
        "aten.randint.low": Rule(randint_run, randint_accepts, "softrep.randint"),
        "aten.randperm.default": Rule(randperm_run, lambda n, **kwargs: no_generator(kwargs), "softrep.randperm"),
        "aten.uniform_.default": Rule(uniform_run, fill_accepts, "softrep.ops.random.uniform_"),
        "aten.normal_.default": Rule(normal_run, fill_accepts, "softrep.ops.random.normal_"),
        "aten.bernoulli_.float": Rule(bernoulli_fill, bernoulli_accepts, "softrep.ops.random.bernoulli_"),
        "aten.bernoulli_.Tensor": Rule(bernoulli_fill, bernoulli_accepts, "softrep.ops.random.bernoulli_"),
        "aten.bernoulli.default": Rule(bernoulli_new, bernoulli_accepts, "softrep.bernoulli"),
        "aten.bernoulli.p": Rule(bernoulli_new, bernoulli_accepts, "softrep.ops.random.bernoulli_"),
        "aten.native_dropout.default": Rule(dropout_run, dropout_accepts,
                                            "softrep.ops.random.bernoulli_, then div and mul as torch's CPU dropout"),
        "aten.native_dropout_backward.default": Rule(dropout_backward, lambda g, mask, scale: _dtype_answer(g.dtype),
                                                     "softrep.mul by dropout's noise"),
    }
    return rules


def _build_rules():
    rules = {}
    for name in ("add", "sub", "mul", "div"):
        rules[f"aten.{name}.Tensor"] = _binary(name)
        rules[f"aten.{name}.Scalar"] = _binary(name)
        rules[f"aten.{name}_.Tensor"] = _binary(name, inplace=True)
        rules[f"aten.{name}_.Scalar"] = _binary(name, inplace=True)
    rules["aten.div.Tensor_mode"] = _binary("div")
    rules["aten.rsub.Scalar"] = _rsub()
    for name in UNARY_MATH:
        rules[f"aten.{name}.default"] = _unary_math(name)
    rules["aten.pow.Tensor_Scalar"] = _pow_rule()
    rules["aten.sqrt.default"] = _unary_float("sqrt", lambda: _ew().sqrt)
    rules["aten.tanh_backward.default"] = _math_grad("tanh")
    rules["aten.sigmoid_backward.default"] = _math_grad("sigmoid")
    rules["aten.gelu.default"], rules["aten.gelu_backward.default"] = _gelu_rules()
    rules["aten.silu.default"], rules["aten.silu_backward.default"] = _silu_rules()
    rules.update(_reduction_rules())
    rules.update(_product_rules())
    rules.update(_softmax_rules())
    rules.update(_conv_rules())
    rules.update(_nll_rules())
    rules.update(_mse_rules())
    rules.update(_layer_norm_rules())
    rules.update(_batch_norm_rules())
    rules.update(_group_norm_rules())
    rules.update(_rms_norm_rules())
    rules.update(_pool_rules())
    rules.update(_embedding_rules())
    rules.update(_attention_rules())
    rules.update(_foreach_rules())
    rules.update(_random_rules())
    return rules


_RULES = None


def rules():
    """overload name -> Rule (built on first use: it imports softrep's op modules)."""
    global _RULES
    if _RULES is None:
        _RULES = _build_rules()
    return _RULES


# --------------------------------------------------------------------------- exact ops

# Packets (every overload) whose results are defined bit for bit without rounding
# choices: views and copies, creation with a constant, indexing that reads,
# comparisons and selections, sign manipulations, integer-valued queries, and
# conversions between dtypes (one IEEE rounding to nearest; a float -> int
# conversion of NaN or an out-of-range value is undefined in C and differs
# between devices: see docs/patching.md).
EXACT_PACKETS = frozenset("aten." + name for name in """
    view _unsafe_view reshape _reshape_alias view_as expand expand_as t transpose permute squeeze unsqueeze
    t_ transpose_ squeeze_ unsqueeze_ slice select narrow as_strided split split_with_sizes unbind chunk
    diagonal unfold flatten unflatten movedim alias clone detach contiguous copy_ _to_copy to lift_fresh
    select_backward slice_backward diagonal_backward select_scatter slice_scatter diagonal_scatter
    resolve_conj resolve_neg conj _conj conj_physical _neg_view
    lift_fresh_copy _to_dense
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full full_like
    new_zeros new_ones new_full fill fill_ zero_ zero scalar_tensor
    cat stack flip roll repeat constant_pad_nd im2col index_select gather index masked_select masked_fill
    masked_fill_ where triu tril triu_ tril_ repeat_interleave
    eq ne lt le gt ge eq_ ne_ lt_ le_ gt_ ge_ logical_and logical_or logical_not logical_xor bitwise_and
    bitwise_or bitwise_not bitwise_xor isnan isinf isfinite isneginf isposinf signbit equal is_nonzero
    nonzero any all argmax argmin
    relu relu_ threshold threshold_ threshold_backward clamp clamp_ clamp_min clamp_max clamp_min_
    clamp_max_ hardtanh hardtanh_ hardtanh_backward maximum minimum max min abs neg neg_ sign
    floor ceil trunc round floor_ ceil_ trunc_ round_ _foreach_neg _foreach_neg_ _foreach_zero_ _foreach_copy_
    _local_scalar_dense sym_size sym_stride sym_numel sym_storage_offset is_same_size set_ resize_ detach_
    _has_compatible_shallow_copy_type record_stream _assert_async _assert_tensor_metadata
""".split())


def _exact_index_put(self, indices, values, accumulate=False):
    """index_put without accumulation is a copy when the indices are masks (no
    position can be written twice); with integer indices a repeated index makes
    the kept value device-dependent."""
    if accumulate:
        return "index_put with accumulate=True adds in an unspecified order"
    if all(i is None or i.dtype in (torch.bool, torch.uint8) for i in indices):
        return None
    return "index_put with integer indices: a repeated index keeps a device-dependent value"


def _exact_scatter_add(self, dim, index, src):
    """scatter_add adds in an unspecified order where an index repeats; where every
    target position is hit at most once (the backward of a gather with distinct
    indices per slice) each sum is self + one value: a single IEEE addition.
    scatter (a copy) keeps a device-dependent value where an index repeats, and
    is a plain copy otherwise."""
    if index.numel() == 0:
        return None
    positions = index.movedim(dim, -1).reshape(-1, index.shape[dim]) if index.dim() else index.reshape(1, 1)
    ordered = positions.sort(dim=-1).values
    if bool((ordered[:, 1:] != ordered[:, :-1]).all()):
        return None
    return "scatter with a repeated index within a slice: the order of the writes is unspecified"


def _exact_sort(self, *args, stable=None, **kwargs):
    """A sort moves values (comparisons are exact); with stable=True equal keys keep
    their index order, so the permutation is defined too.  Without it the order
    of equal keys (and of +0 / -0) is whatever the device's algorithm leaves."""
    if stable:
        return None
    return "sort without stable=True: the order of equal values is unspecified"


def _exact_arange(*args, **kwargs):
    """arange from integers: integer values (exactly converted to a float dtype up
    to 2**24 / 2**53).  A float start or step accumulates roundings."""
    if all(isinstance(a, int) for a in args):
        return None
    return "arange with a floating start, end or step"


CONDITIONAL_EXACT = {
    "aten.index_put.default": _exact_index_put,
    "aten.index_put_.default": _exact_index_put,
    "aten.scatter_add.default": _exact_scatter_add,
    "aten.scatter.src": _exact_scatter_add,
    "aten.scatter.value": _exact_scatter_add,
    "aten.sort.stable": _exact_sort,
    "aten.argsort.stable": _exact_sort,
    "aten.arange.default": _exact_arange,
    "aten.arange.start": _exact_arange,
    "aten.arange.start_step": _exact_arange,
}

# Integer arithmetic: exact (wrapping identically on every device) when every
# tensor operand is an integer or boolean tensor and every number is an int.
INTEGER_PACKETS = frozenset("aten." + name for name in """
    __lshift__ __rshift__ __ilshift__ __irshift__ __and__ __or__ __xor__ __iand__ __ior__ __ixor__
    bitwise_left_shift bitwise_right_shift bitwise_left_shift_ bitwise_right_shift_
    remainder remainder_ fmod fmod_ floor_divide floor_divide_ cumsum cumsum_ cumprod prod bincount
    pow pow_ mul mul_ add add_ sub sub_ rsub div div_ sum mean lcm gcd unique_consecutive _unique2 unique_dim
    bucketize searchsorted histc
""".split())

# Bookkeeping outside aten's arithmetic: nothing is computed.
BOOKKEEPING_NAMESPACES = ("profiler.",)

RANDOM_PACKETS = frozenset("aten." + name for name in """
    rand rand_like randn randn_like randint randint_like randperm uniform_ normal normal_ bernoulli bernoulli_
    native_dropout multinomial exponential_ geometric_ cauchy_ log_normal_ random_
""".split())

# torch.optim.Adam / AdamW's update: lerp, addcmul, addcdiv round differently
# from the documented sequence of softrep.optim.Adam, which is the replacement.
ADAM_PACKETS = frozenset("aten." + name for name in """
    lerp lerp_ addcmul addcmul_ addcdiv addcdiv_ _foreach_lerp _foreach_lerp_ _foreach_addcmul _foreach_addcmul_
    _foreach_addcdiv _foreach_addcdiv_ _fused_adam _fused_adam_ _fused_adamw _fused_adamw_
""".split())
ADAM_REASON = ("torch.optim's Adam/AdamW update (lerp, addcmul, addcdiv); use softrep.optim.Adam or "
               "softrep.optim.AdamW, which compute it with documented roundings")


def _all_integer(args, kwargs):
    """Every tensor operand integer or boolean, every number an int (or bool), and
    no floating dtype requested."""
    dtype = kwargs.get("dtype")
    if isinstance(dtype, torch.dtype) and (dtype.is_floating_point or dtype.is_complex):
        return False
    found = False
    for v in tree_leaves([list(args), kwargs]):
        if isinstance(v, torch.Tensor):
            if v.dtype.is_floating_point or v.dtype.is_complex:
                return False
            found = True
        elif isinstance(v, float) or isinstance(v, complex):
            return False
    return found


# --------------------------------------------------------------------------- classification


def packet_name(name):
    """'aten.add.Tensor' -> 'aten.add'."""
    return name.rsplit(".", 1)[0]


def classify(func, args=(), kwargs=None):
    """(class, rule or None, reason) for one call of an aten overload."""
    kwargs = kwargs or {}
    name = str(func)
    if name.startswith(BOOKKEEPING_NAMESPACES):
        return EXACT, None, "bookkeeping (torch's profiler): no values computed"
    tensors = _tensors(args, kwargs)
    if tensors and all(t.is_meta for t in tensors) or kwargs.get("device") == torch.device("meta"):
        return EXACT, None, "meta tensors hold no values"
    rule = rules().get(name)
    if rule is not None:
        try:
            answer = rule.accepts(*args, **kwargs)
        except TypeError as e:  # an argument form the rule does not know
            answer = f"arguments not understood ({e})"
        if answer is None:
            return REPRODUCIBLE, rule, rule.note
        if isinstance(answer, _Integer):
            return EXACT, None, "integer arithmetic"
        return NOT_REPRODUCIBLE, None, answer
    packet = packet_name(name)
    if packet in EXACT_PACKETS:
        return EXACT, None, ""
    check = CONDITIONAL_EXACT.get(name)
    if check is not None:
        answer = check(*args, **kwargs)
        return (EXACT, None, "") if answer is None else (NOT_REPRODUCIBLE, None, answer)
    if packet in INTEGER_PACKETS and _all_integer(args, kwargs):
        return EXACT, None, "integer arithmetic"
    if packet in RANDOM_PACKETS:
        if kwargs.get("generator") is not None:
            return NOT_REPRODUCIBLE, None, TORCH_GENERATOR_REASON
        return NOT_REPRODUCIBLE, None, "torch's random generator (use softrep.rand/randn/bernoulli and a softrep.Generator)"
    if packet in ADAM_PACKETS:
        return NOT_REPRODUCIBLE, None, ADAM_REASON
    return NOT_REPRODUCIBLE, None, "softrep has no replacement"


def classify_call(func, args=(), kwargs=None):
    """`classify` for an op being dispatched now: an op that is not reproducible by
    itself but is called by softrep's own ops (sites.softrep_caller) belongs to
    that op, whose bits softrep's tests pin; it runs as torch's kernel and is
    counted as reproducible through softrep (rule None)."""
    from . import sites

    cls, rule, reason = classify(func, args, kwargs)
    if cls == NOT_REPRODUCIBLE:
        caller = sites.softrep_caller()
        if caller is not None:
            return REPRODUCIBLE, None, f"inside softrep's own op ({caller})"
    return cls, rule, reason


def markdown_table():
    """The classification as Markdown (docs/patching.md holds this text verbatim;
    tests/test_dispatch.py keeps the two in sync)."""
    lines = ["| aten op | class | computed as |", "|---|---|---|"]
    for name in sorted(rules()):
        lines.append(f"| `{name}` | {REPRODUCIBLE} | {rules()[name].note} |")
    for name in sorted(CONDITIONAL_EXACT):
        when = ("every index is a boolean mask and accumulate=False" if "index_put" in name
                else "no index repeats within a slice" if "scatter" in name
                else "stable=True" if "sort" in name
                else "start, end and step are integers")
        lines.append(f"| `{name}` | {EXACT} when {when}, else {NOT_REPRODUCIBLE} | torch |")
    lines.append("")
    lines.append(f"**{EXACT}** (every overload; torch's kernel runs): "
                 + ", ".join(f"`{p[5:]}`" for p in sorted(EXACT_PACKETS)) + ".")
    lines.append("")
    lines.append(f"**{EXACT}, bookkeeping**: every op of the namespaces "
                 + ", ".join(f"`{n}*`" for n in BOOKKEEPING_NAMESPACES) + " (torch's profiler ranges).")
    lines.append("")
    lines.append(f"**{EXACT} when every tensor operand is an integer or boolean tensor and every number an int** "
                 "(integer arithmetic; otherwise the rule above, or not reproducible): "
                 + ", ".join(f"`{p[5:]}`" for p in sorted(INTEGER_PACKETS)) + ".")
    lines.append("")
    lines.append(f"**{NOT_REPRODUCIBLE}, torch's random generator** (the overloads without a rule above, and any "
                 "draw with an explicit torch.Generator): "
                 + ", ".join(f"`{p[5:]}`" for p in sorted(RANDOM_PACKETS)) + ".")
    lines.append("")
    lines.append(f"**{NOT_REPRODUCIBLE}, torch.optim's Adam/AdamW update** (the error points to softrep.optim): "
                 + ", ".join(f"`{p[5:]}`" for p in sorted(ADAM_PACKETS)) + ".")
    lines.append("")
    lines.append(f"**{NOT_REPRODUCIBLE}**: every other op, and a listed op on float16/bfloat16/complex "
                 "tensors or with an option softrep does not implement. A listed op whose operands are all "
                 f"integers or booleans is {EXACT} (integer arithmetic), and so is any op on meta tensors "
                 "(they hold no values).")
    return "\n".join(lines)
