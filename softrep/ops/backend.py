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

Small CPU launches run on the calling thread (`execute`'s `work`, and the
light path of the elementwise ops, `light_dtype`): waking Numba's thread pool
costs microseconds on a quiet machine and milliseconds on a loaded one, more
than the work.  The thread count never changes a result (docs/order.md).
"""

import contextlib
import inspect
import os

import numpy as np
import torch
from torch._functorch.utils import unwrap_dead_wrappers as _unwrap_dead_wrappers

from ..cpu import launch as cpu_launch
from ..primitives.fpenv import ieee_state
from ..primitives.jit import SIMULATOR, require_cuda

_CHOICES = ("auto", "cpu", "cuda")

# Launches of at most this much work (in elements, or the `work` a launcher
# states) run their parallel kernels with one thread.
SERIAL_WORK = 1 << 15

_NUMPY_DTYPES = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
_transforms_active = torch._C._are_functorch_transforms_active
_requested_cache = {}


# os.environ keeps its variables in a dict keyed by the encoded name, which
# its __setitem__/__delitem__ (monkeypatch.setenv included) update along with
# the process environment.  Reading that dict directly sees the same values as
# os.environ.get at a twentieth of the cost (2 us per call on a slow host,
# more than a small op's kernel).  A replaced os.environ, or one without that
# dict, is read the ordinary way.
_ENVIRON = os.environ
_ENVIRON_DATA = getattr(os.environ, "_data", None)
try:
    _BACKEND_KEY = os.environ.encodekey("SOFTREP_BACKEND")
except AttributeError:
    _ENVIRON_DATA = None


def requested():
    if os.environ is _ENVIRON and _ENVIRON_DATA is not None:
        raw = _ENVIRON_DATA.get(_BACKEND_KEY)  # encoded; decoded below on a cache miss
    else:
        raw = os.environ.get("SOFTREP_BACKEND")
    value = _requested_cache.get(raw)
    if value is None:
        text = _ENVIRON.decodevalue(raw) if isinstance(raw, bytes) else raw
        value = (text or "auto").strip().lower() or "auto"
        if value not in _CHOICES:
            raise ValueError(f"SOFTREP_BACKEND must be one of {', '.join(_CHOICES)}; got {value!r}")
        _requested_cache[raw] = value
    return value


@contextlib.contextmanager
def selected(backend):
    """Inside the block, SOFTREP_BACKEND is `backend` ("auto", "cpu" or "cuda");
    the caller's setting is restored afterwards."""
    old = os.environ.get("SOFTREP_BACKEND")
    os.environ["SOFTREP_BACKEND"] = backend
    try:
        yield
    finally:
        if old is None:
            del os.environ["SOFTREP_BACKEND"]
        else:
            os.environ["SOFTREP_BACKEND"] = old


def light_dtype(tensors, same_shape=True, transposed=False, own_function=False):
    """The numpy dtype of `tensors` when an op on them may take the light CPU
    path, else None.  The light path skips the autograd Function, the
    broadcasting and the conversion to numpy: it needs plain CPU tensors of
    one float dtype and (with `same_shape`) one shape, C-contiguous (or, with
    `transposed`, the transpose of their last two dims C-contiguous), with no
    gradient to record (none requires one, or grad mode is off), no torch.func
    transform active, and the CPU backend.  `own_function`: the caller runs
    the kernel inside its own autograd Function, which records the gradient,
    so tensors requiring one are accepted."""
    first = tensors[0]
    if type(first) not in _PLAIN_TENSORS:
        return None
    dtype = _NUMPY_DTYPES.get(first.dtype)
    grad = torch.is_grad_enabled() and not own_function
    if dtype is None or not first.is_cpu or not _laid_out(first, transposed) or (grad and first.requires_grad):
        return None
    if len(tensors) > 1:
        kind = first.dtype
        shape = first.shape if same_shape else None
        for t in tensors[1:]:
            if (type(t) not in _PLAIN_TENSORS or not t.is_cpu or t.dtype != kind
                    or (same_shape and t.shape != shape) or not _laid_out(t, transposed)
                    or (grad and t.requires_grad)):
                return None
    if _transforms_active() or requested() == "cuda":
        return None
    return dtype


def _laid_out(t, transposed):
    return t.is_contiguous() or (transposed and t.dim() >= 2 and t.transpose(-1, -2).is_contiguous())


def new_empty(like, shape):
    """`like.new_empty(shape)` (a tuple of ints), by the varargs form where
    there is one: torch parses separate ints about a microsecond faster than a
    tuple, which is a tenth of a small op's whole cost."""
    return like.new_empty(*shape) if shape else like.new_empty(())


def transforms_active():
    """Whether a torch.func transform (grad, vmap, jacrev, ...) is active here."""
    return _transforms_active()


def unrecorded():
    """Whether nothing records autograd here: grad mode off and no torch.func
    transform active.  Fused kernels that skip the autograd Functions of the
    separate ops (their results have no graph) may run only then."""
    return not torch.is_grad_enabled() and not _transforms_active()


def records(*tensors):
    """Whether autograd would record an op on these tensors: one of them
    requires grad in grad mode, or a torch.func transform is active."""
    if _transforms_active():
        return True
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def call(function, *args):
    """`function.apply(*args)` for an autograd Function written in torch.func's
    form (forward without ctx, setup_context), or its forward directly when
    autograd has nothing to record: grad mode off or no argument requiring
    grad, no torch.func transform active, plain tensors only.  The forward is
    the same either way; the direct call saves the Function's bookkeeping
    (tens of microseconds), which dominates an op on a small tensor."""
    grad = torch.is_grad_enabled()
    record = False
    for a in args:
        if isinstance(a, torch.Tensor):
            if type(a) not in _PLAIN_TENSORS:
                return function.apply(*args)
            record = record or (grad and a.requires_grad)
    if record or _transforms_active():
        return function.apply(*args)
    return function.forward(*args)


_SINGLE_LEVEL_SETUP_CONTEXT = torch.autograd.Function.setup_context
_BINDINGS = {}


def _binding(cls):
    """How to bind a call's positional arguments to the forward of a
    torch.func-form Function the way torch's apply does: (number of
    parameters, their trailing defaults), with None for the number when the
    forward ends in *args (then without defaults: every argument binds as
    given).  None where torch's own binding is needed: a classic-form
    Function, or a forward with **kwargs, keyword-only parameters or defaults
    before *args."""
    if cls in _BINDINGS:
        return _BINDINGS[cls]
    binding = None
    if cls.setup_context is not _SINGLE_LEVEL_SETUP_CONTEXT:
        params = list(inspect.signature(cls.forward).parameters.values())
        varargs = bool(params) and params[-1].kind is params[-1].VAR_POSITIONAL
        fixed = params[:-1] if varargs else params
        defaults = tuple(p.default for p in fixed if p.default is not p.empty)
        if (all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in fixed)
                and all(p.default is not p.empty for p in fixed[len(fixed) - len(defaults):])
                and not (varargs and defaults)):
            binding = (None if varargs else len(fixed), defaults)
    _BINDINGS[cls] = binding
    return binding


class Function(torch.autograd.Function):
    """The base of softrep's autograd Functions: torch's, with an `apply` that
    binds the arguments once per class instead of at every call.

    For a Function in torch.func's form (forward without ctx, setup_context),
    torch's apply binds the call's arguments to the forward's signature and
    fills in the defaults (`inspect.signature`, tens of microseconds per call)
    before handing them to the C++ apply.  Here the signature is read once:
    positional arguments are completed with the trailing defaults and handed
    on as torch hands them on (dead torch.func wrappers unwrapped), so
    forward, setup_context and backward see exactly what torch's apply gives
    them.  Keyword arguments, a classic-form Function, a forward with *args
    and an active torch.func transform take torch's apply unchanged."""

    @classmethod
    def apply(cls, *args, **kwargs):
        binding = _binding(cls)
        if binding is None or kwargs or _transforms_active():
            return super().apply(*args, **kwargs)
        count, defaults = binding
        if count is not None and count != len(args):
            missing = count - len(args)
            if missing < 0 or missing > len(defaults):
                return super().apply(*args)  # torch's own error for a wrong argument count
            args = args + defaults[len(defaults) - missing:]
        # torch.autograd.Function.apply ends with this call: the C++ apply
        return super(torch.autograd.Function, cls).apply(*_unwrap_dead_wrappers(args))


def cpu_dtype(tensors):
    """The numpy dtype of `tensors` (detached, of one dtype) when their kernel
    runs on the CPU backend, else None."""
    for t in tensors:
        if not t.is_cpu:
            return None
    if requested() == "cuda":
        return None
    return _NUMPY_DTYPES.get(tensors[0].dtype)


def select(*tensors):
    """'cpu' or 'cuda' for an op whose tensor arguments are `tensors`."""
    value = requested()
    if value != "auto":
        return value
    return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


def on_cpu_launcher(*tensors):
    """Whether `execute` hands these tensors to the CPU launcher as numpy views
    of their own memory (CPU tensors, and the backend not forced to CUDA):
    then a launcher may read layouts the CUDA kernels do not take."""
    return requested() != "cuda" and all(t.is_cpu for t in tensors)


def execute(cpu_launcher, cuda_launcher, outputs, inputs, *args, work=None):
    """Run one kernel launch on torch tensors.

    `outputs` and `inputs` are lists of tensors (outputs already allocated on
    the inputs' device).  `cpu_launcher(*out_arrays, *in_arrays, *args)` gets
    numpy views; `cuda_launcher(stream, *out_arrays, *in_arrays, *args)` gets
    device arrays (numpy arrays under the simulator).  On meta tensors nothing
    runs: the outputs are already meta tensors of the right shape and dtype.
    `work`: the launch's cost in element operations (default: the elements of
    all outputs and inputs); a CPU launch of at most SERIAL_WORK runs on one
    thread.
    """
    if on_cpu_launcher(*outputs, *inputs):
        # CPU tensors on the CPU backend: numpy views of them, no copies
        arrays = [t.detach().numpy() for t in outputs] + [t.detach().numpy() for t in inputs]
        if work is None:
            work = sum(a.size for a in arrays)
        with ieee_state():
            if work <= SERIAL_WORK:
                cpu_launch.on_one_thread(cpu_launcher, *arrays, *args)
            else:
                cpu_launcher(*arrays, *args)
        return
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
            # contiguous copy changes no bits.  It is always a copy: after a
            # launch the simulator writes every argument back to the host,
            # inputs included, so an input that is also the output (out= the
            # same elements) would put its old values over the results.
            host_in = [t.clone(memory_format=torch.contiguous_format) for t in host_in]
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
