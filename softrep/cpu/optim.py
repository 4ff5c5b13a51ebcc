"""CPU launchers of the fused optimizer updates (softrep/algorithms/optim.py):
every parameter of a param group in one launch.

The tensors are reached through a table of addresses, one row per parameter
(columns below), and `offsets`, the running element count (offsets[t] is the
first element of parameter t in the concatenation of all parameters, the last
entry the total).  The parallel kernels split that concatenation into work
items of CHUNK elements, so a large parameter is shared between threads and
many small ones fit in one item; the serial kernels (small groups) walk it on
the calling thread.  Each element depends only on the elements at its own
index, so neither the split nor the thread count can change a bit.
"""

import numpy as np
from numba import carray, njit, prange, types

from ..algorithms.optim import adam_element, sgd_element
from ..primitives.fpenv import enter_ieee, leave_ieee
from .launch import address_as_pointer, kernel

CHUNK = 8192  # elements per work item

# Up to this many elements in all a group's update runs on the calling thread:
# waking Numba's pool costs more than the work (milliseconds on a loaded machine).
SERIAL_MAX = 65536

# columns of the address tables
ADAM_COLUMNS = ("param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                "param_out", "exp_avg_out", "exp_avg_sq_out", "max_exp_avg_sq_out")
SGD_COLUMNS = ("param", "grad", "momentum_buffer", "param_out", "momentum_buffer_out")

_I = types.int64
_TABLE, _OFFSETS = types.Array(types.int64, 2, "C"), types.Array(types.int64, 1, "C")


@njit(cache=True)
def _first_tensor(offsets, index):
    """The parameter t holding element `index`: offsets[t] <= index < offsets[t + 1]."""
    return np.searchsorted(offsets, index, side="right") - 1


@njit(cache=True)
def _segment(offsets, t, hi):
    """(first element of parameter t, its element count, where a walk ending
    at `hi` leaves it)."""
    start, stop = offsets[t], offsets[t + 1]
    return start, stop - start, min(hi, stop)


def _kernels(dtype):
    """(adam_serial, adam_parallel, sgd_serial, sgd_parallel) on buffers of numpy `dtype`."""

    def column(table, t, k, n):
        """Column k of the address table at parameter t: its n elements."""
        return carray(address_as_pointer(table[t, k]), n, dtype)

    column = njit(cache=True)(column)

    # The element loops index with unsigned integers: a signed index gets
    # Numba's negative-index wraparound on every access, and LLVM then left
    # the loops scalar.
    def adam_range(table, offsets, lo, hi, maximize, decay_kind, amsgrad, weight_decay, decay_factor,
                   one_minus_beta1, one_minus_beta2, beta2, bias_correction2_sqrt, eps, neg_step_size):
        t, i = _first_tensor(offsets, lo), lo
        while i < hi:
            start, n, end = _segment(offsets, t, hi)
            p, g, m, v = column(table, t, 0, n), column(table, t, 1, n), column(table, t, 2, n), column(table, t, 3, n)
            vmax, p_out, m_out = column(table, t, 4, n), column(table, t, 5, n), column(table, t, 6, n)
            v_out, vmax_out = column(table, t, 7, n), column(table, t, 8, n)
            if table[t, 5] == table[t, 0] and not amsgrad:
                # The parameter updated in place, and no v_max: the stores go
                # through the array the loads read (the same index, so LLVM
                # needs no overlap check there) and v_max is left alone.  In
                # the general loop below, p_out = p and v_max_out = v_out
                # fail LLVM's run-time overlap checks, and it runs its scalar
                # loop (docs/benchmarks.md).
                for j in range(np.uint64(i - start), np.uint64(end - start)):
                    pj, mj, vj, _ = adam_element(p[j], g[j], m[j], v[j], v[j], maximize, decay_kind, amsgrad,
                                                 weight_decay, decay_factor, one_minus_beta1, one_minus_beta2,
                                                 beta2, bias_correction2_sqrt, eps, neg_step_size)
                    p[j], m_out[j], v_out[j] = pj, mj, vj
            else:
                for j in range(np.uint64(i - start), np.uint64(end - start)):
                    pj, mj, vj, vmaxj = adam_element(p[j], g[j], m[j], v[j], vmax[j], maximize, decay_kind,
                                                     amsgrad, weight_decay, decay_factor, one_minus_beta1,
                                                     one_minus_beta2, beta2, bias_correction2_sqrt, eps,
                                                     neg_step_size)
                    p_out[j], m_out[j], v_out[j] = pj, mj, vj
                    if amsgrad:
                        vmax_out[j] = vmaxj
            i, t = end, t + 1

    def sgd_range(table, offsets, lo, hi, maximize, decayed, has_momentum, first_step, nesterov,
                  weight_decay, one_minus_dampening, momentum, neg_lr):
        t, i = _first_tensor(offsets, lo), lo
        while i < hi:
            start, n, end = _segment(offsets, t, hi)
            p, g, buf = column(table, t, 0, n), column(table, t, 1, n), column(table, t, 2, n)
            p_out, buf_out = column(table, t, 3, n), column(table, t, 4, n)
            if table[t, 3] == table[t, 0]:
                # in place, as adam_range's first loop; without momentum the
                # buffer column is the parameter's, and nothing else is stored
                if has_momentum:
                    for j in range(np.uint64(i - start), np.uint64(end - start)):
                        p[j], buf_out[j] = sgd_element(p[j], g[j], buf[j], maximize, decayed, has_momentum,
                                                       first_step, nesterov, weight_decay, one_minus_dampening,
                                                       momentum, neg_lr)
                else:
                    for j in range(np.uint64(i - start), np.uint64(end - start)):
                        p[j], _ = sgd_element(p[j], g[j], buf[j], maximize, decayed, has_momentum, first_step,
                                              nesterov, weight_decay, one_minus_dampening, momentum, neg_lr)
            else:
                for j in range(np.uint64(i - start), np.uint64(end - start)):
                    pj, bufj = sgd_element(p[j], g[j], buf[j], maximize, decayed, has_momentum, first_step,
                                           nesterov, weight_decay, one_minus_dampening, momentum, neg_lr)
                    p_out[j] = pj
                    if has_momentum:
                        buf_out[j] = bufj
            i, t = end, t + 1

    adam_range = njit(cache=True, error_model="numpy")(adam_range)
    sgd_range = njit(cache=True, error_model="numpy")(sgd_range)

    def adam_serial(table, offsets, maximize, decay_kind, amsgrad, weight_decay, decay_factor, one_minus_beta1,
                    one_minus_beta2, beta2, bias_correction2_sqrt, eps, neg_step_size, mask):
        old = enter_ieee(mask)
        adam_range(table, offsets, 0, offsets[offsets.size - 1], maximize, decay_kind, amsgrad, weight_decay,
                   decay_factor, one_minus_beta1, one_minus_beta2, beta2, bias_correction2_sqrt, eps,
                   neg_step_size)
        leave_ieee(old)

    def adam_parallel(table, offsets, maximize, decay_kind, amsgrad, weight_decay, decay_factor, one_minus_beta1,
                      one_minus_beta2, beta2, bias_correction2_sqrt, eps, neg_step_size):
        total = offsets[offsets.size - 1]
        for c in prange((total + CHUNK - 1) // CHUNK):
            adam_range(table, offsets, c * CHUNK, min(total, c * CHUNK + CHUNK), maximize, decay_kind, amsgrad,
                       weight_decay, decay_factor, one_minus_beta1, one_minus_beta2, beta2,
                       bias_correction2_sqrt, eps, neg_step_size)

    def sgd_serial(table, offsets, maximize, decayed, has_momentum, first_step, nesterov, weight_decay,
                   one_minus_dampening, momentum, neg_lr, mask):
        old = enter_ieee(mask)
        sgd_range(table, offsets, 0, offsets[offsets.size - 1], maximize, decayed, has_momentum, first_step,
                  nesterov, weight_decay, one_minus_dampening, momentum, neg_lr)
        leave_ieee(old)

    def sgd_parallel(table, offsets, maximize, decayed, has_momentum, first_step, nesterov, weight_decay,
                     one_minus_dampening, momentum, neg_lr):
        total = offsets[offsets.size - 1]
        for c in prange((total + CHUNK - 1) // CHUNK):
            sgd_range(table, offsets, c * CHUNK, min(total, c * CHUNK + CHUNK), maximize, decayed, has_momentum,
                      first_step, nesterov, weight_decay, one_minus_dampening, momentum, neg_lr)

    scalar = types.float32 if dtype == np.float32 else types.float64
    name = str(scalar)
    adam_args = (_TABLE, _OFFSETS, _I, _I, _I) + (scalar,) * 8
    sgd_args = (_TABLE, _OFFSETS) + (_I,) * 5 + (scalar,) * 4
    return (kernel(f"optim.adam.serial.{name}", adam_args + (_I,))(
                njit(cache=True, error_model="numpy")(adam_serial)),
            kernel(f"optim.adam.{name}", adam_args)(njit(parallel=True, cache=True)(adam_parallel)),
            kernel(f"optim.sgd.serial.{name}", sgd_args + (_I,))(njit(cache=True, error_model="numpy")(sgd_serial)),
            kernel(f"optim.sgd.{name}", sgd_args)(njit(parallel=True, cache=True)(sgd_parallel)))


# numpy dtype -> (adam_serial, adam_parallel, sgd_serial, sgd_parallel)
KERNELS_BY_DTYPE = {np.dtype(d): _kernels(d) for d in (np.float32, np.float64)}


def _one_row(arrays):
    """The address table and offsets of one parameter given as numpy arrays."""
    table = np.array([[a.ctypes.data for a in arrays]], dtype=np.int64)
    return table, np.array([0, arrays[0].size], dtype=np.int64)


def adam_arrays(p_out, m_out, v_out, vmax_out, p, g, m, v, vmax, *args):
    """The Adam update of one parameter given as C-contiguous numpy arrays
    (`softrep.ops.backend.execute`'s form); `args` as the kernels take them."""
    table, offsets = _one_row((p, g, m, v, vmax, p_out, m_out, v_out, vmax_out))
    KERNELS_BY_DTYPE[p.dtype][1](table, offsets, *args)


def sgd_arrays(p_out, buf_out, p, g, buf, *args):
    """The SGD update of one parameter given as C-contiguous numpy arrays."""
    table, offsets = _one_row((p, g, buf, p_out, buf_out))
    KERNELS_BY_DTYPE[p.dtype][3](table, offsets, *args)
