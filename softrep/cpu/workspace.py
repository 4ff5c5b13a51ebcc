"""Scratch buffers of the CPU schedules, kept from one call to the next.

A product's packed operands and its padded accumulators are written in full
before any of them is read (packing fills the zero padding too, and a k
block's first micro-kernel call starts its accumulators from +0), so their
previous contents never matter.  Allocated fresh at every call, each 4 KB
page costs a fault at its first write, and the faults of one process's
threads are taken one at a time: a 2048 x 2048 float32 product ran no faster
on two threads than on one.  Each thread keeps one buffer per slot, grown
when a larger one is asked for; requests above MAX_BYTES get a fresh array
and are not kept.  A caller must not ask for a slot again while it still
uses that slot's previous array.
"""

import math
import threading

import numpy as np

MAX_BYTES = 1 << 28  # 256 MiB per slot and thread

_local = threading.local()


def scratch(slot, shape, dtype):
    """An uninitialised C-contiguous array of `shape` and `dtype`, backed by
    this thread's buffer for `slot` (a name)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > MAX_BYTES:
        return np.empty(shape, dtype)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(slot)
    if buf is None or buf.size < nbytes:
        # 64-byte aligned, as a vector load of a whole zmm register prefers
        raw = np.empty(nbytes + 64, np.uint8)
        start = (-raw.ctypes.data) % 64
        buf = buffers[slot] = raw[start:start + nbytes]
    return buf[:nbytes].view(dtype).reshape(shape)


def scratch_address(slot, nbytes):
    """The address of at least `nbytes` of this thread's scratch memory for
    `slot` (64-byte aligned), for a serial kernel that takes addresses: the
    same buffers as `scratch`, without building a numpy view at each call."""
    addresses = getattr(_local, "addresses", None)
    if addresses is None:
        addresses = _local.addresses = {}
    known = addresses.get(slot)
    if known is not None and known[0] >= nbytes:
        return known[1]
    buf = scratch(slot, (max(nbytes, 64),), np.uint8)
    addresses[slot] = (buf.size, buf.ctypes.data, buf)
    return addresses[slot][1]
