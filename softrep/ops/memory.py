# softrep: no kernels
"""Output allocation for the ops: `empty(shape, dtype, device)`, and the
small int64 tables that kernels read (`index_table`).

A fresh CPU tensor of tens of megabytes is first touched by the kernel that
fills it, and with 4 KB pages every page is a fault: on the development VM
(transparent huge pages in "madvise" mode, as on most distributions) faulting
in 40 MB took ~17 ms, more than computing exp of its 10^7 floats.  So large
CPU outputs are advised MADV_HUGEPAGE before the first touch (as numpy does
for its own arrays): 2 MB pages, ~4 ms.  The advice changes where the bytes
live, never their values; where it is unavailable (not Linux, no libc
`madvise`) or refused, allocation is torch's plain `torch.empty`.
"""

import ctypes
import functools
import sys

import torch

HUGE_PAGE = 1 << 21
ADVISE_FROM = 4 * HUGE_PAGE  # bytes; smaller outputs have few pages to fault
_MADV_HUGEPAGE = 14  # linux/mman.h


def _load_madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


_madvise = _load_madvise()


def advise_huge_pages(t):
    """Ask the kernel to back the whole 2 MB-aligned pages inside `t`'s memory
    with huge pages; returns whether the advice was given."""
    nbytes = t.numel() * t.element_size()
    if _madvise is None or t.device.type != "cpu" or nbytes < ADVISE_FROM:
        return False
    start = t.data_ptr()
    lo = (start + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
    hi = (start + nbytes) & ~(HUGE_PAGE - 1)
    return hi > lo and _madvise(lo, hi - lo, _MADV_HUGEPAGE) == 0


def empty(shape, *, dtype, device):
    """`torch.empty(shape, dtype=dtype, device=device)`, large CPU ones advised huge pages."""
    out = torch.empty(shape, dtype=dtype, device=device)
    advise_huge_pages(out)
    return out


@functools.lru_cache(maxsize=1024)
def _table(values, device):
    return torch.tensor(values, dtype=torch.int64, device=device)


def index_table(values, device="cpu"):
    """An int64 tensor holding `values` (ints), kept per (values, device): the
    launch tables of the tree kernels (each node's first sample and count,
    the operands' dims), which the kernels only read.  Callers must not
    write to it."""
    return _table(tuple(int(v) for v in values), torch.device(device))
