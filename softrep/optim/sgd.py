# softrep: no kernels
"""SGD with torch's formulas (momentum, dampening, nesterov, weight_decay, maximize)."""

from ..ops.elementwise import fma, mul, neg

from .optimizer import Optimizer, check_float


class SGD(Optimizer):
    """torch.optim.SGD, one rounded softrep op at a time (order in docs/training.md)."""

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
