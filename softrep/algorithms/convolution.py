"""Algorithm source of the convolution: which input element each step of a chain reads.

A 2-D convolution is the matrix product W_g (Cout/G, K) @ cols_g (K, N*OH*OW)
per group g, K = Cin/G * KH * KW (docs/order.md, "Convolution"), each output
element being the chain of `softrep.algorithms.products` over k from +0.
Row k of cols is the kernel tap (c, kh, kw) in row-major order, column col is
the output position (n, oh, ow) in row-major order, and

    cols_g[k, col] = xpad[n, g*Cin/G + c, oh*sh + kh*dh, ow*sw + kw*dw]

where xpad is the zero-padded input (the ops layer pads it once, for every
backend, so a padding position is an ordinary term fma(+0, w, acc)).  No
kernel builds cols: the CPU copies it panel by panel into the product
kernel's packed layout (softrep/cpu/conv.py), the CUDA kernel loads it tile by
tile into shared memory (softrep/cuda/conv.py).  Both find the element
through the functions below, so a slip in stride, dilation, groups or the tap
order cannot give different bits on the two devices.

The flat index of cols_g[k, col] in a C-contiguous xpad (N, Cin, Hp, Wp) is
linear in the coordinates, so it splits into a part that depends only on the
column and a part that depends only on the tap:

    column_offset(col) + tap_offset(k, g)

which lets a kernel compute each part once per column and once per row.
All of this is integer arithmetic: the values are only moved.
"""

from ..primitives.rounding import jitable


@jitable
def output_size(padded, kernel, stride, dilation):
    """Number of output positions along one spatial dim: the dilated kernel
    (dilation*(kernel-1) + 1 inputs wide) fits at 0, stride, 2*stride, ..."""
    return (padded - dilation * (kernel - 1) - 1) // stride + 1


@jitable
def column_offset(col, oh, ow, sh, sw, c_in, hp, wp):
    """Flat index in xpad of the input that output column col = (n, oh, ow)
    reads at channel 0, tap (0, 0): xpad[n, 0, oh*sh, ow*sw]."""
    n = col // (oh * ow)
    pix = col % (oh * ow)
    return (n * c_in * hp + (pix // ow) * sh) * wp + (pix % ow) * sw


@jitable
def tap_offset(k, g, c_g, kh, kw, dh, dw, hp, wp):
    """Offset from `column_offset` of row k = (c, kh, kw) of group g's cols:
    input channel g*c_g + c, kh*dh rows down, kw*dw columns across."""
    c = k // (kh * kw)
    rest = k % (kh * kw)
    return ((g * c_g + c) * hp + (rest // kw) * dh) * wp + (rest % kw) * dw
