"""The CPU's floating-point control state, set to IEEE 754's defaults around every kernel.

The rounding primitives compile to plain hardware instructions (LLVM `fadd`,
`fmul`, `llvm.fma`, ...), whose results depend on the thread's control
register: MXCSR on x86-64, FPCR on AArch64.  IEEE 754 semantics need

* round to nearest, ties to even (MXCSR RC = 00, FPCR RMode = 00): the
  directed roundings are derived from the round-to-nearest result
  (softrep/primitives/cpu_lowering.py), so a caller's `fesetround` would
  otherwise change every result;
* no flush-to-zero of results (MXCSR FTZ, bit 15; FPCR FZ, bit 24) and no
  treating of subnormal inputs as zero (MXCSR DAZ, bit 6): deep-learning code
  sets these for speed (`torch.set_flush_denormal(True)` sets FTZ and DAZ on
  the calling thread), and softrep must still return the IEEE subnormal.
  (AArch64 has no separate DAZ: FZ covers inputs and outputs.  FPCR.FZ16 and
  AH only affect half precision and the alternate mode, which softrep does
  not use; they are cleared too.)

`ieee_state()` is a context manager: it reads the calling thread's state,
writes the IEEE defaults (exception masks and flags untouched) if they differ,
and restores the caller's exact state afterwards.  Worker threads: Numba's
thread pool starts its threads from the thread that launches the first
parallel kernel, and a new thread inherits the control state of the thread
that creates it, so a pool started inside `ieee_state()` runs with the IEEE
defaults.  A pool started earlier (by other Numba code, under a flushing
state) is reset once, on the first use, by `_reset_workers`: one iteration per
worker thread of a `prange` loop, which Numba's scheduler spreads as one
contiguous chunk per thread.  After that, no softrep code changes the
workers' state, and they run only Numba kernels.
"""

import platform
import threading

import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import types
from numba.core.extending import intrinsic

_MACHINE = platform.machine().lower()
X86 = _MACHINE in ("x86_64", "amd64", "i386", "i686")
ARM64 = _MACHINE in ("aarch64", "arm64")

# Bits that must be clear for IEEE semantics (see the module docstring).
if X86:
    CONTROL_MASK = (1 << 15) | (1 << 6) | (3 << 13)  # FTZ, DAZ, RC
elif ARM64:
    CONTROL_MASK = (1 << 24) | (3 << 22) | (1 << 19) | (1 << 1)  # FZ, RMode, FZ16, AH
else:
    CONTROL_MASK = 0


@intrinsic
def _read_control(typingctx):
    """The calling thread's MXCSR (x86-64) or FPCR (AArch64), as an int64."""
    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        module = builder.module
        if X86:
            i32 = ir.IntType(32)
            slot = builder.alloca(i32)
            fn = module.declare_intrinsic("llvm.x86.sse.stmxcsr", fnty=ir.FunctionType(
                ir.VoidType(), [ir.IntType(8).as_pointer()]))
            builder.call(fn, [builder.bitcast(slot, ir.IntType(8).as_pointer())])
            return builder.zext(builder.load(slot), i64)
        if ARM64:
            fn = module.declare_intrinsic("llvm.aarch64.get.fpcr", fnty=ir.FunctionType(i64, []))
            return builder.call(fn, [])
        return ir.Constant(i64, 0)
    return types.int64(), codegen


@intrinsic
def _write_control(typingctx, value):
    """Set the calling thread's MXCSR (x86-64) or FPCR (AArch64)."""
    def codegen(context, builder, sig, args):
        module = builder.module
        if X86:
            i32 = ir.IntType(32)
            slot = builder.alloca(i32)
            builder.store(builder.trunc(args[0], i32), slot)
            fn = module.declare_intrinsic("llvm.x86.sse.ldmxcsr", fnty=ir.FunctionType(
                ir.VoidType(), [ir.IntType(8).as_pointer()]))
            builder.call(fn, [builder.bitcast(slot, ir.IntType(8).as_pointer())])
        elif ARM64:
            fn = module.declare_intrinsic("llvm.aarch64.set.fpcr", fnty=ir.FunctionType(
                ir.VoidType(), [ir.IntType(64)]))
            builder.call(fn, [args[0]])
        return context.get_dummy_value()
    return types.void(types.int64), codegen


@njit(cache=True)
def read_control():
    return _read_control()


@njit(cache=True)
def write_control(value):
    _write_control(value)


@njit(cache=True)
def enter_ieee(mask):
    """Clear the `mask` bits of the calling thread's control state (pass
    CONTROL_MASK); returns the previous state, or -1 if it already had them clear.

    Callable from a serial kernel, which then sets and restores the state
    itself (`leave_ieee`) with no call from Python: the light launch path of
    small tensors (softrep/cpu/launch.py).  The intrinsics that read and write
    the control register may touch any memory as far as LLVM knows, so no load
    of the kernel's inputs moves above `enter_ieee` and no store of its outputs
    below `leave_ieee`: every float operation of the kernel runs in between,
    under the IEEE state.
    """
    old = _read_control()
    if old & mask == 0:
        return -1
    _write_control(old & ~mask)
    return old


@njit(cache=True)
def leave_ieee(old):
    """Undo `enter_ieee`: the caller's state back, bit for bit (nothing to do for -1)."""
    if old != -1:
        _write_control(old)



@njit(parallel=True, cache=True)
def _reset_workers(mask, n):
    seen = np.zeros(n, np.int64)
    for i in prange(n):
        old = _read_control()
        if old & mask != 0:
            _write_control(old & ~mask)
        seen[i] = old
    return seen


_workers_reset = False
_lock = threading.Lock()


def reset_workers():
    """Give every thread of Numba's pool the IEEE defaults (once per process
    is enough: softrep never changes them afterwards)."""
    global _workers_reset
    import numba

    with _lock:
        # every thread of the pool, not only the ones the current setting uses
        wanted = numba.get_num_threads()
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        try:
            _reset_workers(CONTROL_MASK, numba.config.NUMBA_NUM_THREADS)
        finally:
            numba.set_num_threads(wanted)
        _workers_reset = True


class ieee_state:
    """Context manager: the calling thread runs with IEEE 754's default control
    state (round to nearest, no flush-to-zero, no denormals-are-zero), and gets
    its own state back afterwards, bit for bit."""

    __slots__ = ("_old",)

    def __enter__(self):
        self._old = enter_ieee(CONTROL_MASK) if CONTROL_MASK else -1
        if not _workers_reset and CONTROL_MASK:
            reset_workers()
        return self

    def __exit__(self, *exc):
        if self._old != -1:
            write_control(self._old)
        return False
