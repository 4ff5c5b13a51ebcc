"""CUDA launchers of the fused optimizer updates (softrep/algorithms/optim.py):
one grid-stride loop over the elements of one parameter per launch.

Each element depends only on the elements at its own index, so the launch
shape cannot change a bit.
"""

from numba import cuda

from ..algorithms.optim import adam_element, sgd_element
from ..primitives.jit import SIMULATOR
from .launch import grid, python_function, register


@cuda.jit(cache=not SIMULATOR)
def _adam_kernel(p_out, m_out, v_out, vmax_out, p, g, m, v, vmax, maximize, decay_kind, amsgrad, weight_decay,
                 decay_factor, one_minus_beta1, one_minus_beta2, beta2, bias_correction2_sqrt, eps, neg_step_size):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, p.size, step):
        pi, mi, vi, vmaxi = adam_element(p[i], g[i], m[i], v[i], vmax[i], maximize, decay_kind, amsgrad,
                                         weight_decay, decay_factor, one_minus_beta1, one_minus_beta2, beta2,
                                         bias_correction2_sqrt, eps, neg_step_size)
        p_out[i], m_out[i], v_out[i] = pi, mi, vi
        if amsgrad:
            vmax_out[i] = vmaxi


@cuda.jit(cache=not SIMULATOR)
def _sgd_kernel(p_out, buf_out, p, g, buf, maximize, decayed, has_momentum, first_step, nesterov, weight_decay,
                one_minus_dampening, momentum, neg_lr):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, p.size, step):
        pi, bufi = sgd_element(p[i], g[i], buf[i], maximize, decayed, has_momentum, first_step, nesterov,
                               weight_decay, one_minus_dampening, momentum, neg_lr)
        p_out[i] = pi
        if has_momentum:
            buf_out[i] = bufi


def adam_arrays(stream, p_out, m_out, v_out, vmax_out, p, g, m, v, vmax, *args):
    """The Adam update of one parameter (device arrays; `args` as the kernel takes them)."""
    if p.size:
        blocks, threads = grid(p.size)
        _adam_kernel[blocks, threads, stream](p_out, m_out, v_out, vmax_out, p, g, m, v, vmax, *args)


def sgd_arrays(stream, p_out, buf_out, p, g, buf, *args):
    """The SGD update of one parameter (device arrays)."""
    if p.size:
        blocks, threads = grid(p.size)
        _sgd_kernel[blocks, threads, stream](p_out, buf_out, p, g, buf, *args)


def _register_audit():
    from numba.core import types

    i64 = types.int64
    for scalar in (types.float32, types.float64):
        array = types.Array(scalar, 1, "C")
        register(f"optim.adam.{scalar}", lambda a=array, s=scalar: (
            python_function(_adam_kernel), (a,) * 9 + (i64,) * 3 + (s,) * 8))
        register(f"optim.sgd.{scalar}", lambda a=array, s=scalar: (
            python_function(_sgd_kernel), (a,) * 5 + (i64,) * 5 + (s,) * 4))


_register_audit()
