# softrep: no kernels
"""Base class: torch.optim.Optimizer plus the checks shared by softrep's optimizers."""

import numbers

import torch


def check_float(cls, name, value, low=0.0, low_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"softrep.optim.{cls}: argument '{name}' must be a real number, got {type(value).__name__}")
    value = float(value)
    if value != value or value < low or (low_open and value == low):
        raise ValueError(f"softrep.optim.{cls}: invalid value for argument '{name}': {value}")
    return value


def pow_by_squaring(base, n):
    """base**n for an int n >= 0, by square-and-multiply in binary64 from the
    lowest bit of n up: result = result * b when the bit is set, then b = b * b.
    Python's `**` on floats calls the C library's pow, which is not correctly
    rounded and differs between platforms; IEEE multiplications do not."""
    result, b = 1.0, float(base)
    while n:
        if n & 1:
            result = result * b
        n >>= 1
        if n:
            b = b * b
    return result


class Optimizer(torch.optim.Optimizer):
    """torch.optim.Optimizer whose subclasses update parameters with softrep ops only."""

    _unsupported = ("foreach", "fused", "capturable", "differentiable")

    def _check_flags(self, flags):
        for name in self._unsupported:
            if flags.get(name):
                raise ValueError(f"softrep.optim.{type(self).__name__}: argument '{name}' is not supported: "
                                 "softrep updates are always per-tensor sequences of rounded ops")

    def _params_with_grad(self, group):
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError(f"softrep.optim.{type(self).__name__} does not support sparse gradients")
            if p.dtype not in (torch.float32, torch.float64):
                raise TypeError(f"softrep.optim.{type(self).__name__}: parameters must be float32 or float64, "
                                f"got {p.dtype}")
            yield p

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                self._check_flags(group)
                for p in self._params_with_grad(group):
                    # Like torch, a parameter gets a state entry only if its update keeps one.
                    state = self.state.get(p, {})
                    p.copy_(self._update(group, p, p.grad.detach(), state))
                    if state:
                        self.state[p] = state
        return loss
