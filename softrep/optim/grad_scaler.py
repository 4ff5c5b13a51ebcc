# softrep: no kernels
"""Loss scaling for float16 training: `softrep.optim.GradScaler`, with the
methods of torch.amp.GradScaler (scale, unscale_, step, update, get_scale,
state_dict, load_state_dict).

Every step is deterministic and bit-reproducible (docs/training.md, "Loss
scaling"):

* `scale(loss)` is mul_rn(loss, S) in the loss's dtype, S the current scale.
* `unscale_(optimizer)` multiplies every gradient by 1/S (computed in binary64
  and rounded to the gradient's dtype by the op) with mul_rn, and records
  whether any gradient element, before or after, is inf or NaN: a test on
  every element, whose answer does not depend on any order.
* `step(optimizer)` runs optimizer.step() only when no gradient was inf or NaN;
  otherwise the step is skipped (parameters, moments and step counts untouched).
* `update()` multiplies S by `backoff_factor` after a skipped step and by
  `growth_factor` after `growth_interval` consecutive good steps, in binary64.

With the default factors (2.0, 0.5) and a power-of-two initial scale, S is a
power of two, so scaling and unscaling are exact for every gradient that
neither overflows nor lands in the subnormal range.
"""

import torch

from ..ops.elementwise import mul
from .optimizer import check_float


class GradScaler:
    """Dynamic loss scaling with a deterministic skip of steps whose gradients
    hold inf or NaN (module docstring)."""

    def __init__(self, device="cpu", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        self.init_scale = check_float("GradScaler", "init_scale", init_scale, low_open=True)
        self.growth_factor = check_float("GradScaler", "growth_factor", growth_factor)
        if self.growth_factor <= 1.0:
            raise ValueError(f"softrep.optim.GradScaler: argument 'growth_factor' must be > 1, got {growth_factor}")
        self.backoff_factor = check_float("GradScaler", "backoff_factor", backoff_factor, low_open=True)
        if self.backoff_factor >= 1.0:
            raise ValueError(f"softrep.optim.GradScaler: argument 'backoff_factor' must be < 1, got {backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or growth_interval < 1:
            raise ValueError(f"softrep.optim.GradScaler: argument 'growth_interval' must be a positive int, "
                             f"got {growth_interval!r}")
        if not isinstance(enabled, bool):
            raise TypeError(f"softrep.optim.GradScaler: argument 'enabled' must be a bool, got {type(enabled).__name__}")
        self.device = device
        self.growth_interval = growth_interval
        self._enabled = enabled
        self._scale = self.init_scale
        self._growth_tracker = 0
        self._found_inf = {}  # id(optimizer) -> bool, for the current iteration
        self._unscaled = set()

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """outputs * S (a tensor, or a list/tuple of them), one mul_rn each."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, torch.Tensor):
            return mul(outputs, self._scale)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"softrep.optim.GradScaler.scale: argument 'outputs' must be a tensor or a list/tuple of "
                        f"tensors, got {type(outputs).__name__}")

    def unscale_(self, optimizer):
        """Divide the gradients of `optimizer`'s parameters by S (a product by 1/S)
        and record whether any of them is inf or NaN; once per step."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError("softrep.optim.GradScaler.unscale_ was already called for this optimizer since "
                               "the last update()")
        inverse = 1.0 / self._scale  # binary64; exact for a power of two
        found = False
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = mul(p.grad, inverse)
                    found = found or not bool(torch.isfinite(p.grad).all()) or not bool(torch.isfinite(g).all())
                    p.grad.copy_(g)
        self._found_inf[id(optimizer)] = found
        self._unscaled.add(id(optimizer))

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless a gradient is inf or NaN (then None)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._found_inf[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """The scale of the next iteration (module docstring), or `new_scale`."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = check_float("GradScaler.update", "new_scale", float(new_scale), low_open=True)
        elif any(self._found_inf.values()):
            self._scale = self._scale * self.backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self.growth_interval:
                self._scale = self._scale * self.growth_factor
                self._growth_tracker = 0
        self._found_inf.clear()
        self._unscaled.clear()

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self.growth_factor, "backoff_factor": self.backoff_factor,
                "growth_interval": self.growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        self._scale = float(state_dict["scale"])
        self.growth_factor = float(state_dict["growth_factor"])
        self.backoff_factor = float(state_dict["backoff_factor"])
        self.growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
