# softrep: no kernels
"""Fused optimizer updates: the whole update rule of SGD or Adam/AdamW for
every parameter of a param group in one kernel launch (the rules and their
order of operations: docs/training.md, "Optimizers"; the per-element code:
softrep/algorithms/optim.py).

Each element gets exactly the rounded operations of the op-by-op update with
one softrep elementwise op per step, so the bits are the same; what goes is
one launch, one allocation and one pass over memory per step and parameter.

On CPU tensors with the CPU backend, all parameters go to one launch through
a table of their addresses (softrep/cpu/optim.py).  Otherwise (CUDA tensors,
the CUDA backend, the simulator) each parameter is one fused launch
(softrep/cuda/optim.py) through `softrep.ops.backend.execute`.

The parameters are updated in place; the new state tensors are fresh ones
(softrep.optim replaces its state tensors rather than updating them).
"""

import numpy as np
import torch

from . import backend
from ..algorithms.optim import COUPLED_DECAY, DECOUPLED_DECAY, NO_DECAY  # noqa: F401  (Adam's decay kinds)
from ..cpu import optim as cpu_optim
from ..primitives.fpenv import CONTROL_MASK, ieee_state

_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
_NUMPY_DTYPES = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def fusable(p, *tensors):
    """Whether the fused update applies to parameter `p` with the gradient and
    state tensors `tensors`: plain float32/float64 tensors, not meta, all of
    p's dtype, shape and device, C-contiguous.  Elsewhere the optimizers take
    the op-by-op path (same bits)."""
    if type(p) not in _PLAIN_TENSORS or p.dtype not in _NUMPY_DTYPES or p.is_meta or not p.is_contiguous():
        return False
    for t in tensors:
        if (type(t) not in _PLAIN_TENSORS or t.dtype != p.dtype or t.shape != p.shape or t.device != p.device
                or not t.is_contiguous()):
            return False
    return True


def in_dtype(value, dtype):
    """The Python number `value` rounded to `dtype` as a numpy scalar: the
    rounding an elementwise op applies to a Python operand (to nearest, by
    torch's conversion; softrep.ops.validate.tensor_operands)."""
    return torch.tensor(float(value), dtype=dtype).numpy()[()]


def _on_cpu_backend(tensors):
    return backend.requested() != "cuda" and all(t.is_cpu for t in tensors)


def _launch_cpu(kernels, columns, args):
    """One launch over all parameters: `columns` is a list of per-column
    tensor lists (softrep/cpu/optim.py's table order)."""
    serial, parallel = kernels
    table = np.array([[t.data_ptr() for t in row] for row in zip(*columns)], dtype=np.int64)
    offsets = np.zeros(len(columns[0]) + 1, dtype=np.int64)
    np.cumsum([t.numel() for t in columns[0]], out=offsets[1:])
    if offsets[-1] <= cpu_optim.SERIAL_MAX:
        serial(table, offsets, *args, CONTROL_MASK)
    else:
        with ieee_state():
            parallel(table, offsets, *args)


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, maximize, decay_kind, weight_decay,
         decay_factor, one_minus_beta1, one_minus_beta2, beta2, bias_correction2_sqrt, eps, neg_step_size):
    """One Adam step on `params` (updated in place; `fusable` each, one dtype
    and device), `max_exp_avg_sqs` None without amsgrad.  The scalars are
    Python numbers, each rounded to the dtype as the op-by-op update rounds it.
    Returns (new exp_avgs, new exp_avg_sqs, new max_exp_avg_sqs or None)."""
    if decay_kind not in (NO_DECAY, COUPLED_DECAY, DECOUPLED_DECAY):
        raise ValueError(f"softrep.ops.updates.adam: argument 'decay_kind' must be NO_DECAY, COUPLED_DECAY or "
                         f"DECOUPLED_DECAY, got {decay_kind!r}")
    dtype = params[0].dtype
    amsgrad = max_exp_avg_sqs is not None
    args = (int(maximize), decay_kind, int(amsgrad)) + tuple(
        in_dtype(c, dtype) for c in (weight_decay, decay_factor, one_minus_beta1, one_minus_beta2, beta2,
                                     bias_correction2_sqrt, eps, neg_step_size))
    m_out = [torch.empty_like(m) for m in exp_avgs]
    v_out = [torch.empty_like(v) for v in exp_avg_sqs]
    # without amsgrad the kernel reads v in place of v_max and writes no v_max
    vmax_in = max_exp_avg_sqs if amsgrad else exp_avg_sqs
    vmax_out = [torch.empty_like(v) for v in vmax_in] if amsgrad else v_out
    if _on_cpu_backend(params):
        kernels = cpu_optim.KERNELS_BY_DTYPE[_NUMPY_DTYPES[dtype]]
        _launch_cpu(kernels[:2], [params, grads, exp_avgs, exp_avg_sqs, vmax_in, params, m_out, v_out, vmax_out],
                    args)
    else:
        from ..cuda import optim as cuda_optim

        for row in zip(params, grads, exp_avgs, exp_avg_sqs, vmax_in, m_out, v_out, vmax_out):
            p, g, m, v, vmax, m_new, v_new, vmax_new = row
            p_new = torch.empty_like(p)
            if not amsgrad:
                vmax_new = torch.empty_like(p)  # not written; execute copies every output back
            backend.execute(cpu_optim.adam_arrays, cuda_optim.adam_arrays,
                            [p_new.view(-1), m_new.view(-1), v_new.view(-1), vmax_new.view(-1)],
                            [t.view(-1) for t in (p, g, m, v, vmax)], *args)
            p.copy_(p_new)
    return m_out, v_out, (vmax_out if amsgrad else None)


def sgd(params, grads, momentum_buffers, *, maximize, weight_decay, momentum, dampening, nesterov, lr):
    """One SGD step on `params` (updated in place; `fusable` each, one dtype
    and device).  `momentum_buffers`: None without momentum, else a list with
    a buffer per parameter, or None for all at their first step.  Returns the
    new momentum buffers (None without momentum)."""
    dtype = params[0].dtype
    has_momentum = momentum != 0
    first_step = has_momentum and momentum_buffers is None
    args = (int(maximize), int(weight_decay != 0), int(has_momentum), int(first_step), int(nesterov)) + tuple(
        in_dtype(c, dtype) for c in (weight_decay, 1.0 - dampening, momentum, -lr))
    # without momentum (or at the first step) the kernel reads the gradient in
    # place of the buffer and writes no buffer
    buf_in = momentum_buffers if has_momentum and not first_step else grads
    buf_out = [torch.empty_like(p) for p in params] if has_momentum else params
    if _on_cpu_backend(params):
        kernels = cpu_optim.KERNELS_BY_DTYPE[_NUMPY_DTYPES[dtype]]
        _launch_cpu(kernels[2:], [params, grads, buf_in, params, buf_out], args)
    else:
        from ..cuda import optim as cuda_optim

        for p, g, buf, buf_new in zip(params, grads, buf_in, buf_out):
            p_new = torch.empty_like(p)
            if not has_momentum:
                buf_new = torch.empty_like(p)  # not written; execute copies every output back
            backend.execute(cpu_optim.sgd_arrays, cuda_optim.sgd_arrays, [p_new.view(-1), buf_new.view(-1)],
                            [t.view(-1) for t in (p, g, buf)], *args)
            p.copy_(p_new)
    return buf_out if has_momentum else None
