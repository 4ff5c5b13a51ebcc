"""The `out=` argument of the elementwise ops, the math functions and `mm`, with torch's semantics.

* `out` must be a tensor of the result's dtype (softrep never converts: a
  conversion would be a rounding the caller did not ask for) on the result's
  device; errors name the argument.
* An `out` of another shape is resized to the result's shape: silently when it
  has no elements, with torch's deprecation warning otherwise.
* Functions with `out=` are not differentiable: with grad mode on, an input
  (or `out`) that requires grad is a RuntimeError, as in torch.
* The result is written into `out` and `out` itself is returned.  An `out`
  that is not C-contiguous, or shares memory with an input other than as the
  very same elements (`add(x, y, out=x)` is fine for an elementwise op), gets
  the result through a temporary and `copy_`, which moves bits unchanged.
"""

import warnings

import torch


def prepare(fn, out, shape, dtype, device, inputs):
    """Check `out` for a result of `shape`, `dtype` on `device` computed from
    the tensors `inputs`, and resize it as torch does."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"softrep.{fn}: argument 'out' must be a torch.Tensor, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"softrep.{fn}: argument 'out' has dtype {out.dtype} but the result has {dtype}; "
                        "softrep does not convert results, pass an 'out' of the result's dtype")
    if out.device != device:
        raise ValueError(f"softrep.{fn}: argument 'out' is on {out.device} but the result is on {device}")
    if torch.is_grad_enabled() and (out.requires_grad or any(t.requires_grad for t in inputs)):
        raise RuntimeError(f"softrep.{fn}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad")
    shape = torch.Size(shape)
    if out.shape != shape:
        if out.numel() != 0:
            warnings.warn(
                f"softrep.{fn}: an output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape {list(shape)}.  "
                "As in torch, this behavior is deprecated: resize 'out' to zero elements (out.resize_(0)) "
                "to reuse it", UserWarning, stacklevel=3)
        out.resize_(shape)


def _shares_memory(a, b):
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def writable(out, inputs, same_elements_ok):
    """Whether a kernel may write its C-contiguous result straight into `out`
    while reading `inputs`: `out` is C-contiguous and shares no memory with an
    input, or (`same_elements_ok`, for elementwise kernels, which read element
    i before writing element i) only as the same elements in the same layout.
    (The math functions' launchers, which mark elements in their output and
    read the inputs again, go through scratch themselves: `writes_marks` in
    softrep/cpu/launch.py.)"""
    if not out.is_contiguous():
        return False
    for t in inputs:
        if _shares_memory(out, t):
            same = (t.data_ptr() == out.data_ptr() and t.shape == out.shape and t.is_contiguous())
            if not (same_elements_ok and same):
                return False
    return True
