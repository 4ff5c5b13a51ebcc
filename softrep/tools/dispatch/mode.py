# softrep: no kernels
"""`with softrep.reproducible(strict=True):` and `softrep.patch(model)`.

`reproducible` is a TorchDispatchMode: every aten op, whoever calls it (a
functional call inside `forward`, torch's autograd in backward, a library), is
classified by softrep/tools/dispatch/ops.py and

* computed by softrep when softrep has it (`counts` records how many times);
* run by torch when it is exact by IEEE;
* otherwise refused with `NotReproducibleError` naming the op and its call site
  (strict=True), or run by torch after one `NotReproducibleWarning` per op
  (strict=False).

Above autograd, it also enters a TorchFunctionMode (functions.py) that
computes the torch functions whose backward reduces over the batch
(`F.linear`, `F.conv2d`, the norms, the losses, ...) with softrep's own
functions, so that autograd records softrep's Functions and their gradients
follow the batch order of docs/order.md, as with the explicit softrep API.

A backward runs under the mode only if `.backward()` is called inside it (the
mode is thread-local state of the caller); `patch` takes care of that.
"""

import collections
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_leaves, tree_unflatten

from ...ops import backend
from ...ops.generator import follow_torch_manual_seed
from . import functions
from . import ops
from . import sites

# torch.manual_seed(s) also rewinds the Philox stream that torch's random ops use
# under the mode (softrep.ops.generator.torch_stream), so that seeding twice with
# the same value restarts the draws, as it does for torch's own generator.
follow_torch_manual_seed()


class NotReproducibleError(RuntimeError):
    """An aten op whose bits are not reproducible ran under `softrep.reproducible(strict=True)`."""

    def __init__(self, op, site, reason):
        self.op, self.site, self.reason = op, site, reason
        super().__init__(f"{op} at {site} is not reproducible: {reason}. "
                         "Rewrite that call with softrep ops, or use softrep.reproducible(strict=False) to run "
                         "torch's kernel with a warning")


class NotReproducibleWarning(UserWarning):
    """An aten op that is not reproducible ran under `softrep.reproducible(strict=False)`."""


class reproducible(TorchDispatchMode):  # noqa: N801  (used like torch.no_grad)
    """Dispatch mode: supported aten ops run softrep's kernels, exact ops run torch's,
    other ops raise (strict=True) or warn once per op (strict=False).

    `counts` is a Counter of what softrep computed: aten overload names (e.g.
    ``aten.mm.default``) for the aten ops rerouted, and
    ``torch.nn.functional.<name>`` for the torch functions computed by their
    softrep function (`functions`; the aten ops that function runs are not
    counted again).

    functions=True (the default) computes the torch functions of
    softrep.tools.dispatch.functions.ROUTES (linear, conv1d, conv2d, embedding,
    the norms, scaled_dot_product_attention, the losses) with softrep's
    functions above autograd, so that their gradients follow softrep's batch
    order; functions=False leaves every call to the aten-level rerouting alone
    (weight gradients of linear are then one chain over all rows).
    """

    def __init__(self, strict=True, *, functions=True, _shared=None):
        super().__init__()
        if not isinstance(strict, bool):
            raise TypeError(f"softrep.reproducible: argument 'strict' must be a bool, got {type(strict).__name__}")
        if not isinstance(functions, bool):
            raise TypeError(f"softrep.reproducible: argument 'functions' must be a bool, got "
                            f"{type(functions).__name__}")
        self.strict = strict
        self.functions = functions
        shared = _shared if _shared is not None else {"counts": collections.Counter(), "warned": set()}
        self.counts = shared["counts"]
        self._warned = shared["warned"]
        self._routes = []  # the FunctionRoutes entered with each (nested) `with`

    def __enter__(self):
        routes = functions.FunctionRoutes(self.counts) if self.functions else None
        result = super().__enter__()
        if routes is not None:
            routes.__enter__()
        self._routes.append(routes)
        return result

    def __exit__(self, exc_type, exc_value, traceback):
        routes = self._routes.pop()
        if routes is not None:
            routes.__exit__(exc_type, exc_value, traceback)
        return super().__exit__(exc_type, exc_value, traceback)

    def _run_rule(self, rule, args, kwargs):
        # the mode is off inside its handler, so softrep's ops run plainly here;
        # no_grad: autograd sits above the dispatcher and is already handled;
        # the function routes are paused: a rule's softrep code is never rerouted
        routes = self._routes[-1] if self._routes else None
        if routes is not None:
            routes.paused += 1
        try:
            with torch.no_grad():
                return rule.run(*args, **kwargs)
        finally:
            if routes is not None:
                routes.paused -= 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        cls, rule, reason = ops.classify_call(func, args, kwargs)
        if cls == ops.REPRODUCIBLE and rule is None:  # inside softrep's own op: its own torch call
            return func(*args, **kwargs)
        if cls == ops.REPRODUCIBLE:
            self.counts[str(func)] += 1
            return self._run_rule(rule, args, kwargs)
        if cls == ops.NOT_REPRODUCIBLE:
            name = str(func)
            _, site = sites.current_site()
            if self.strict:
                raise NotReproducibleError(name, site, reason)
            if name not in self._warned:
                self._warned.add(name)
                warnings.warn(f"{name} at {site} is not reproducible ({reason}); running torch's kernel",
                              NotReproducibleWarning, stacklevel=2)
        return func(*args, **kwargs)


# the nested mode of rules that evaluate torch's aten-level composite (ops.py):
# the aten ops alone, as the rule stands for one aten op
ops.new_mode = lambda: reproducible(True, functions=False)


class _UnderMode(backend.Function):
    """Runs a forward under the mode and keeps its graph; the backward runs
    torch.autograd.grad on that graph under the mode too, so that the backward
    aten ops are rerouted wherever `.backward()` is called."""

    @staticmethod
    def forward(ctx, state, *grad_inputs):
        with torch.enable_grad(), state["mode"]():
            out = state["run"]()
        flat, spec = tree_flatten(out)
        diff = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor) and v.requires_grad]
        state.update(flat=flat, spec=spec, diff=diff)
        ctx.state = state
        ctx.inner = [flat[i] for i in diff]
        ctx.grad_inputs = grad_inputs
        return tuple(flat[i].detach() for i in diff)

    @staticmethod
    def backward(ctx, *grads):
        wanted = [i for i, t in enumerate(ctx.grad_inputs) if ctx.needs_input_grad[i + 1]]
        outs = [(o, g) for o, g in zip(ctx.inner, grads) if g is not None]
        result = [None] * len(ctx.grad_inputs)
        if wanted and outs:
            with ctx.state["mode"]():
                got = torch.autograd.grad([o for o, _ in outs], [ctx.grad_inputs[i] for i in wanted],
                                          [g for _, g in outs], allow_unused=True)
            for i, g in zip(wanted, got):
                result[i] = g
        ctx.inner = ctx.grad_inputs = None
        return (None, *result)


def _run_under_mode(module, forward, strict, shared):
    def mode():
        return reproducible(strict, _shared=shared)

    def patched_forward(*args, **kwargs):
        if not torch.is_grad_enabled():
            with mode():
                return forward(*args, **kwargs)
        grad_inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
        grad_inputs += [p for p in module.parameters() if p.requires_grad]
        state = {"mode": mode, "run": lambda: forward(*args, **kwargs)}
        outs = _UnderMode.apply(state, *grad_inputs)
        flat = list(state["flat"])
        for i, t in zip(state["diff"], outs):
            flat[i] = t
        return tree_unflatten(flat, state["spec"])

    return patched_forward


def patch(model, strict=True):
    """`softrep.from_torch_module(model)`, whose forward (and the backward of what
    it returns) runs under `reproducible(strict)`.

    Submodules from_torch_module leaves unconverted keep running in torch, under
    the mode: their ops are rerouted to softrep, exact, or (strict=True) refused
    when they run, with the op and its call site.

    The converted model's `forward` is replaced on the instance; its class,
    parameters and state_dict are those from_torch_module gives.  The Counter of
    rerouted ops is `model.softrep_counts`.
    """
    from ..convert import from_torch_module

    # Modules from_torch_module cannot convert (a user module computing with its
    # own parameters in torch) are exactly what the mode covers: every aten op
    # they run is rerouted or, if softrep lacks it, refused at run time (strict)
    # with its op name and call site.  So the conversion itself never refuses.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        converted = from_torch_module(model, strict=False)
    shared = {"counts": collections.Counter(), "warned": set()}
    converted.forward = _run_under_mode(converted, converted.forward, strict, shared)
    converted.softrep_counts = shared["counts"]
    return converted
