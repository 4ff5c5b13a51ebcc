# softrep: no kernels
"""Base class: torch.optim.Optimizer plus the checks shared by softrep's optimizers.

bfloat16 and float16 parameters get float32 master weights, as mixed-precision
recipes keep them (docs/training.md, "Low-precision parameters"): the state
entry "master_param" holds the float32 parameter, the update runs on it in
float32 with the gradient widened exactly, and the parameter is the master
rounded once to its dtype -- to nearest-even, or stochastically with
`stochastic_rounding=True`, with Philox words keyed by (rounding_seed, the
parameter's index in the param groups, its step).
"""

import numbers

import torch

from ..ops import mixed
from ..ops.generator import Generator
from ..ops.lowp import round_to


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
            if p.dtype not in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
                raise TypeError(f"softrep.optim.{type(self).__name__}: parameters must be float32, float64, "
                                f"bfloat16 or float16, got {p.dtype}")
            yield p

    def _init_low_precision(self, stochastic_rounding, rounding_seed):
        """The rounding of low-precision parameters from their float32 masters."""
        if not isinstance(stochastic_rounding, bool):
            raise TypeError(f"softrep.optim.{type(self).__name__}: argument 'stochastic_rounding' must be a bool, "
                            f"got {type(stochastic_rounding).__name__}")
        if isinstance(rounding_seed, bool) or not isinstance(rounding_seed, int) \
                or not 0 <= rounding_seed < 2**64:
            raise ValueError(f"softrep.optim.{type(self).__name__}: argument 'rounding_seed' must be an int in "
                             f"[0, 2**64), got {rounding_seed!r}")
        self.stochastic_rounding = stochastic_rounding
        self.rounding_seed = rounding_seed

    def _round_master(self, master, p, index, state):
        """The float32 master rounded once to p's dtype.  Stochastic rounding uses
        the Philox words of (key rounding_seed, offset index * 2**32 + step),
        element i of the parameter its word i: independent of the device, and
        a different draw for every parameter and step."""
        if not getattr(self, "stochastic_rounding", False):
            return mixed.round_cast(master, p.dtype)
        step = state.get("rounding_step", 0) + 1
        state["rounding_step"] = step
        if index >= 2**32 or step >= 2**32:
            raise OverflowError(f"softrep.optim.{type(self).__name__}: stochastic rounding counts at most 2**32 "
                                "parameters and 2**32 steps per parameter")
        generator = Generator(getattr(self, "rounding_seed", 0))
        generator.set_state((generator.seed, (index << 32) | step))
        rounded = round_to(master, mixed.LOW_FORMATS[p.dtype], "stochastic", generator=generator)
        return mixed.exact_cast(rounded, p.dtype)

    def _update_group(self, group, entries):
        """Update the float32/float64 parameters of `group`: `entries` are
        (parameter, its state) pairs.  Op by op here; subclasses fuse."""
        for p, state in entries:
            p.copy_(self._update(group, p, p.grad.detach(), state))

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        index_of = {id(p): i for i, p in enumerate(q for g in self.param_groups for q in g["params"])}
        with torch.no_grad():
            for group in self.param_groups:
                self._check_flags(group)
                # Like torch, a parameter gets a state entry only if its update keeps one.
                entries = [(p, self.state.get(p, {})) for p in self._params_with_grad(group)]
                for p, state in entries:
                    if mixed.is_low(p):
                        # float32 master weights: the update in float32, the parameter rounded once
                        master = state.get("master_param")
                        if master is None:
                            master = p.detach().to(torch.float32)  # exact
                        master = self._update(group, master, p.grad.detach().to(torch.float32), state)
                        state["master_param"] = master
                        p.copy_(self._round_master(master, p, index_of[id(p)], state))
                self._update_group(group, [(p, state) for p, state in entries if not mixed.is_low(p)])
                for p, state in entries:
                    if state:
                        self.state[p] = state
        return loss
