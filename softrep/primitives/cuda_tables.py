"""Where a CUDA kernel keeps softrep's tables: read-only global memory.

A NumPy array that kernel code reads as a global (the exponential's 2^(j/256),
erf's and erfc's coefficients, the bits of 2/pi for sin and cos) is baked into
the compiled kernel.  numba-cuda puts each such array in constant memory, one
copy per function that reads it.  Constant memory holds 64 KiB per module, and
the float64 sin, cos, tan, erf and erfc kernels need more (up to 760 KB with
the copies): ptxas refuses them ("too much global constant data"), so they
would not load on any GPU.  Constant memory also serves one address per warp
at a time, while a table lookup per element reads a different address in
every thread.

`place_tables_in_global_memory`, installed at the first CUDA use, lowers every
such array as a read-only global of the global address space instead, named
by a hash of its bytes, dtype and shape, with `linkonce_odr` linkage, so that
the functions of one kernel share a single copy.  Only where the bytes
live changes: the values, and so every result, are the same.
`tests/test_cuda_tables.py` assembles the kernels' PTX with nvJitLink (ptxas,
no GPU needed).

Importing this module imports no numba-cuda, an optional dependency.
"""

import hashlib

from .jit import when_cuda_ready

ADDRSPACE_GLOBAL = 1


def _lower_in_global_memory(context, builder, aryty, arr):
    """The array `arr` (of Numba type `aryty`) as a read-only global of the
    global address space, one per module and content; its value as a Numba
    array (what numba-cuda's own `make_constant_array` builds, with the data
    pointer cast to the generic address space)."""
    import numpy as np
    from llvmlite import ir
    from numba.cuda import types

    if any(s < 0 for s in arr.strides) or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        arr = np.ascontiguousarray(arr)
    data = arr.tobytes(order="A")
    digest = hashlib.sha256(data + repr((arr.dtype.str, arr.shape, arr.strides)).encode()).hexdigest()[:24]
    name = f"_softrep_table_{digest}"
    module = builder.module
    try:
        gv = module.get_global(name)
    except KeyError:
        bytes_type = ir.ArrayType(ir.IntType(8), len(data))
        gv = ir.GlobalVariable(module, bytes_type, name, addrspace=ADDRSPACE_GLOBAL)
        gv.linkage = "linkonce_odr"
        gv.global_constant = True
        gv.initializer = ir.Constant(bytes_type, bytearray(data))
        itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
        gv.align = max(16, 2 ** (itemsize - 1).bit_length())
    generic = builder.addrspacecast(gv, ir.PointerType(ir.IntType(8)), "generic")
    ary = context.make_array(aryty)(context, builder)
    context.populate_array(
        ary,
        data=builder.bitcast(generic, ary.data.type),
        shape=[context.get_constant(types.intp, s) for s in arr.shape],
        strides=[context.get_constant(types.intp, s) for s in arr.strides],
        itemsize=ary.itemsize,
        parent=ary.parent,
        meminfo=None,
    )
    return ary._getvalue()


def place_tables_in_global_memory():
    """Make numba-cuda lower every constant array of a kernel in global memory
    (`_lower_in_global_memory`), once per process."""
    from numba.cuda.target import CUDATargetContext

    if getattr(CUDATargetContext.make_constant_array, "softrep_global_tables", False):
        return

    def make_constant_array(self, builder, aryty, arr):
        return _lower_in_global_memory(self, builder, aryty, arr)

    make_constant_array.softrep_global_tables = True
    make_constant_array.numba_cuda_original = CUDATargetContext.make_constant_array
    CUDATargetContext.make_constant_array = make_constant_array


when_cuda_ready(place_tables_in_global_memory)
