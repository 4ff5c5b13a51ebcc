# softrep: no kernels
"""Adam and AdamW with torch's formulas and defaults, amsgrad included."""

import math

import torch

from ..ops import updates
from ..ops.elementwise import add, div, fma, mul, neg, sqrt, sub

from .optimizer import Optimizer, check_float, pow_by_squaring


class Adam(Optimizer):
    """torch.optim.Adam: the rounded ops of docs/training.md, fused into one launch per param group
    (softrep.ops.updates) or one softrep op at a time, with the same bits."""

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

    @staticmethod
    def _advance(group, p, state):
        """Create the state at the first step, count the step; returns it (an int)."""
        if not state:
            # torch keeps `step` as a float32 scalar tensor (exact up to 2^24 steps).
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        # Not in place: a loaded state_dict may share its tensors with another optimizer.
        state["step"] = state["step"] + 1
        return int(state["step"].item())

    @staticmethod
    def _host_scalars(group, step):
        """(step_size, bias_correction2_sqrt) in binary64 (IEEE ops; the power
        by squaring), rounded to p's dtype where they enter the update."""
        lr, (beta1, beta2) = group["lr"], group["betas"]
        step_size = lr / (1.0 - pow_by_squaring(beta1, step))
        bias_correction2_sqrt = math.sqrt(1.0 - pow_by_squaring(beta2, step))
        return step_size, bias_correction2_sqrt

    def _update(self, group, p, grad, state):
        step = self._advance(group, p, state)
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

        step_size, bias_correction2_sqrt = self._host_scalars(group, step)
        if group["amsgrad"]:
            # the largest second moment so far: a selection (exact; NaN propagates, as torch.maximum,
            # which gives a payload of its own in its vector loop: the canonical NaN instead)
            v = torch.maximum(state["max_exp_avg_sq"], v)
            v = torch.where(torch.isnan(v), torch.tensor(float("nan"), dtype=v.dtype, device=v.device), v)
            state["max_exp_avg_sq"] = v
        denom = add(div(sqrt(v), bias_correction2_sqrt), eps)
        return fma(div(m, denom), -step_size, p)

    def _fusable(self, group, p, state):
        names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
        if state and not all(isinstance(state.get(n), torch.Tensor) for n in names + ("step",)):
            return False
        return updates.fusable(p, p.grad, *(state[n] for n in names if state))

    def _update_group(self, group, entries):
        """All parameters of `group` that the fused update takes (updates.fusable)
        in one launch per dtype, device and step count; the others op by op."""
        batches = {}
        for p, state in entries:
            if not self._fusable(group, p, state):
                p.copy_(self._update(group, p, p.grad.detach(), state))
                continue
            step = self._advance(group, p, state)
            batches.setdefault((p.dtype, p.device, step), []).append((p, state))
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if wd == 0:
            decay_kind = updates.NO_DECAY
        else:
            decay_kind = updates.DECOUPLED_DECAY if group["decoupled_weight_decay"] else updates.COUPLED_DECAY
        for (_, _, step), batch in batches.items():
            step_size, bias_correction2_sqrt = self._host_scalars(group, step)
            params = [p for p, _ in batch]
            states = [s for _, s in batch]
            m, v, vmax = updates.adam(
                params, [p.grad.detach() for p in params], [s["exp_avg"] for s in states],
                [s["exp_avg_sq"] for s in states],
                [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else None,
                maximize=group["maximize"], decay_kind=decay_kind, weight_decay=wd, decay_factor=1.0 - lr * wd,
                one_minus_beta1=1.0 - beta1, one_minus_beta2=1.0 - beta2, beta2=beta2,
                bias_correction2_sqrt=bias_correction2_sqrt, eps=eps, neg_step_size=-step_size)
            for k, state in enumerate(states):
                state["exp_avg"], state["exp_avg_sq"] = m[k], v[k]
                if vmax is not None:
                    state["max_exp_avg_sq"] = vmax[k]


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
