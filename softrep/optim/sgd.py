# softrep: no kernels
"""SGD with torch's formulas (momentum, dampening, nesterov, weight_decay, maximize)."""

import torch

from ..ops import updates
from ..ops.elementwise import fma, mul, neg

from .optimizer import Optimizer, check_float


class SGD(Optimizer):
    """torch.optim.SGD: the rounded ops of docs/training.md, fused into one launch per param group
    (softrep.ops.updates) or one softrep op at a time, with the same bits."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None, stochastic_rounding=False,
                 rounding_seed=0):
        check_float("SGD", "lr", lr)
        check_float("SGD", "momentum", momentum)
        check_float("SGD", "weight_decay", weight_decay)
        if isinstance(dampening, bool) or not isinstance(dampening, (int, float)):
            raise TypeError("softrep.optim.SGD: argument 'dampening' must be a real number")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("softrep.optim.SGD: argument 'nesterov' requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            self._check_flags(group)
        self._init_low_precision(stochastic_rounding, rounding_seed)

    def _update(self, group, p, grad, state):
        d_p = neg(grad) if group["maximize"] else grad
        if group["weight_decay"] != 0:
            d_p = fma(p, group["weight_decay"], d_p)
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = d_p.clone()
            else:
                buf = fma(d_p, 1.0 - group["dampening"], mul(buf, momentum))
            state["momentum_buffer"] = buf
            d_p = fma(buf, momentum, d_p) if group["nesterov"] else buf
        return fma(d_p, -group["lr"], p)

    def _update_group(self, group, entries):
        """All parameters of `group` that the fused update takes (updates.fusable)
        in one launch per dtype, device and first-step-or-not; the others op by op."""
        momentum = group["momentum"]
        batches = {}
        for p, state in entries:
            buf = state.get("momentum_buffer") if momentum != 0 else None
            if not updates.fusable(p, p.grad, *(() if buf is None else (buf,))) or (
                    momentum != 0 and "momentum_buffer" in state and not isinstance(buf, torch.Tensor)):
                p.copy_(self._update(group, p, p.grad.detach(), state))
                continue
            batches.setdefault((p.dtype, p.device, buf is None), []).append((p, state))
        for (_, _, first_step), batch in batches.items():
            params = [p for p, _ in batch]
            buffers = None if first_step else [s["momentum_buffer"] for _, s in batch]
            new_buffers = updates.sgd(params, [p.grad.detach() for p in params], buffers,
                                      maximize=group["maximize"], weight_decay=group["weight_decay"],
                                      momentum=momentum, dampening=group["dampening"], nesterov=group["nesterov"],
                                      lr=group["lr"])
            if new_buffers is not None:
                for (_, state), buf in zip(batch, new_buffers):
                    state["momentum_buffer"] = buf
