"""Which backend runs an op, and how torch tensors reach its kernels.

* `SOFTREP_BACKEND=auto` (default): CPU tensors run the CPU kernels, CUDA
  tensors run the CUDA kernels on the tensor's device and torch's current stream.
* `SOFTREP_BACKEND=cpu`: always the CPU kernels (CUDA tensors are copied to the
  host and the results copied back).
* `SOFTREP_BACKEND=cuda`: always the CUDA kernels.  With
  `NUMBA_ENABLE_CUDASIM=1` they run in Numba's simulator on CPU tensors, which
  is how the CUDA source is tested on a machine without a GPU.

The variable is read at every call, so tests can switch it with monkeypatch.
The CUDA kernels need numba-cuda (`pip install "softrep[cuda]"`); without it,
an op that would run them raises ImportError naming that extra.
"""

import os

import torch

from ..primitives.fpenv import ieee_state
from ..primitives.jit import SIMULATOR, require_cuda

_CHOICES = ("auto", "cpu", "cuda")


def requested():
    value = os.environ.get("SOFTREP_BACKEND", "auto").strip().lower() or "auto"
    if value not in _CHOICES:
        raise ValueError(f"SOFTREP_BACKEND must be one of {', '.join(_CHOICES)}; got {value!r}")
    return value


def select(*tensors):
    """'cpu' or 'cuda' for an op whose tensor arguments are `tensors`."""
    value = requested()
    if value != "auto":
        return value
    return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


def execute(cpu_launcher, cuda_launcher, outputs, inputs, *args):
    """Run one kernel launch on torch tensors.

    `outputs` and `inputs` are lists of tensors (outputs already allocated on
    the inputs' device).  `cpu_launcher(*out_arrays, *in_arrays, *args)` gets
    numpy views; `cuda_launcher(stream, *out_arrays, *in_arrays, *args)` gets
    device arrays (numpy arrays under the simulator).  On meta tensors nothing
    runs: the outputs are already meta tensors of the right shape and dtype.
    """
    if any(t.is_meta for t in (*outputs, *inputs)):
        # Meta tensors carry shapes and dtypes, no values: the outputs already
        # have theirs, so shape propagation launches no kernel.
        return
    kind = select(*inputs, *outputs)
    if kind == "cuda":
        require_cuda()
    if kind == "cpu" or (kind == "cuda" and SIMULATOR):
        host_out = [t if not t.is_cuda else torch.empty(t.shape, dtype=t.dtype) for t in outputs]
        host_in = [t.detach().cpu() for t in inputs]
        if kind == "cuda":
            # The simulator's device arrays reject some strided numpy buffers
            # ("Array contains non-contiguous buffer"); a real GPU takes the
            # strided tensor as it is, and kernels index by strides, so a
            # contiguous copy changes no bits.
            host_in = [t.contiguous() for t in host_in]
        arrays = [t.detach().numpy() for t in host_out] + [t.numpy() for t in host_in]
        # IEEE defaults (no flush-to-zero, round to nearest) whatever the caller set
        with ieee_state():
            if kind == "cpu":
                cpu_launcher(*arrays, *args)
            else:
                cuda_launcher(0, *arrays, *args)
        for t, h in zip(outputs, host_out):
            if t is not h:
                t.copy_(h)
        return
    _run_on_gpu(cuda_launcher, outputs, inputs, args)


def _run_on_gpu(cuda_launcher, outputs, inputs, args):
    from numba import cuda

    device = next((t.device for t in list(inputs) + list(outputs) if t.is_cuda), None)
    if device is None:
        if not torch.cuda.is_available():
            raise RuntimeError(
                "SOFTREP_BACKEND=cuda needs a CUDA device, or NUMBA_ENABLE_CUDASIM=1 for the simulator"
            )
        device = torch.device("cuda", torch.cuda.current_device())
    dev_out = [t if t.is_cuda else torch.empty(t.shape, dtype=t.dtype, device=device) for t in outputs]
    dev_in = [t.detach() if t.is_cuda else t.detach().to(device) for t in inputs]
    with torch.cuda.device(device), cuda.gpus[device.index or 0]:
        stream = cuda.external_stream(torch.cuda.current_stream(device).cuda_stream)
        arrays = [cuda.as_cuda_array(t.detach()) for t in dev_out + dev_in]
        cuda_launcher(stream, *arrays, *args)
    for t, d in zip(outputs, dev_out):
        if t is not d:
            t.copy_(d)
