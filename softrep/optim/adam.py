# softrep: no kernels
"""Adam and AdamW with torch's formulas and defaults, amsgrad included."""

import math

import torch

from ..ops.elementwise import add, div, fma, mul, neg, sqrt, sub

from .optimizer import Optimizer, check_float, pow_by_squaring


class Adam(Optimizer):
    """torch.optim.Adam, one rounded softrep op at a time (order in docs/training.md)."""

    _name = "Adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False, stochastic_rounding=False, rounding_seed=0):
        name = self._name
        check_float(name, "lr", lr)
        check_float(name, "eps", eps)
        check_float(name, "weight_decay", weight_decay)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"softrep.optim.{name}: argument 'betas' must be a pair of floats, got {betas!r}")
        for i, beta in enumerate(betas):
            if check_float(name, f"betas[{i}]", beta) >= 1.0:
                raise ValueError(f"softrep.optim.{name}: invalid value for argument 'betas[{i}]': {beta}")
        if not isinstance(amsgrad, bool):
            raise TypeError(f"softrep.optim.{name}: argument 'amsgrad' must be a bool, got {type(amsgrad).__name__}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        for group in self.param_groups:
            self._check_flags(group)
        self._init_low_precision(stochastic_rounding, rounding_seed)

    def _update(self, group, p, grad, state):
        if not state:
            # torch keeps `step` as a float32 scalar tensor (exact up to 2^24 steps).
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        # Not in place: a loaded state_dict may share its tensors with another optimizer.
        state["step"] = state["step"] + 1
        step = int(state["step"].item())
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]

        if group["maximize"]:
            grad = neg(grad)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p = mul(p, 1.0 - lr * wd)
            else:
                grad = fma(p, wd, grad)
        m = fma(sub(grad, state["exp_avg"]), 1.0 - beta1, state["exp_avg"])
        v = fma(mul(grad, grad), 1.0 - beta2, mul(state["exp_avg_sq"], beta2))
        state["exp_avg"], state["exp_avg_sq"] = m, v

        # Host scalars in binary64 (IEEE ops; the power by squaring), then rounded to p's dtype by the op.
        step_size = lr / (1.0 - pow_by_squaring(beta1, step))
        bias_correction2_sqrt = math.sqrt(1.0 - pow_by_squaring(beta2, step))
        if group["amsgrad"]:
            # the largest second moment so far: a selection (exact; NaN propagates, as torch.maximum)
            v = torch.maximum(state["max_exp_avg_sq"], v)
            state["max_exp_avg_sq"] = v
        denom = add(div(sqrt(v), bias_correction2_sqrt), eps)
        return fma(div(m, denom), -step_size, p)


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    _name = "AdamW"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None,
                 stochastic_rounding=False, rounding_seed=0):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True,
                         stochastic_rounding=stochastic_rounding, rounding_seed=rounding_seed)
