"""CPU launchers for elementwise kernels (one parallel loop over the outputs),
and the registry of every CPU kernel softrep launches.

Each output element depends only on the input elements at the same index, so
the thread count and the split of the loop cannot change any bit.

The registry (`KERNELS`) is what the kernel audit (`python -m softrep
audit-kernels`, softrep/tools/kernel_audit.py) compiles and checks.  A kernel
is registered where it is built: `elementwise` registers the kernels it makes,
for every dtype the scalar kernel has, when an op asks for its launcher; a
hand-written kernel carries the `kernel(name, *signatures)` decorator.  The
ops ask for their launchers when they are defined, so importing softrep
registers every kernel its ops can launch.
"""

import ctypes
import functools

import numba
import numpy as np
import llvmlite.binding as llvm
from llvmlite import ir
from numba import carray, njit, prange
from numba.core import config as _numba_config
from numba.core import types
from numba.core.extending import intrinsic, register_jitable

from ..primitives.fpenv import CONTROL_MASK, enter_ieee, leave_ieee
from ..primitives.jit import KernelRegistry, interleave_vector_loops
from ..primitives.rounding import canonical, canonical_nan, is_undecided, undecided

FLOATS = (types.float32, types.float64)

# --------------------------------------------------------------------------- registry

KERNELS = KernelRegistry("CPU")
add = KERNELS.add
register = KERNELS.register


def kernel(name, *signatures):
    """Decorator: register the `njit` dispatcher below it under `name`, launched
    with `signatures` (each a tuple of Numba argument types)."""
    signatures = tuple(tuple(s) for s in signatures)

    def register_dispatcher(dispatcher):
        add(name, lambda: (dispatcher, signatures))
        return dispatcher

    return register_dispatcher


def elementwise_signatures(f, nin):
    """Argument types of every launch of the elementwise kernel of scalar kernel `f`:
    1-D C-contiguous arrays (out, *inputs) of each dtype `f` is implemented for
    (`implemented_types` of a `by_type` kernel; float32 and float64 otherwise)."""
    return tuple((types.Array(dtype, 1, "C"),) * (nin + 1) for dtype in getattr(f, "implemented_types", FLOATS))


# --------------------------------------------------------------------------- elementwise


@functools.lru_cache(maxsize=None)
def elementwise(f, nin):
    """Launcher `run(out, *inputs)` over 1-D contiguous arrays: out[i] = f(*inputs[i]).

    Registers the kernel as `elementwise.<f's name>`; `run.kernels` holds the
    registered kernels the launcher runs.
    """
    if nin not in (1, 2, 3):
        raise ValueError(f"elementwise kernels take 1 to 3 inputs, got nin={nin}")
    fast = getattr(f, "decided_fast", None)
    fast64 = getattr(f, "decided_fast64", None)
    fast2 = getattr(f, "decided_fast2", None) if nin == 1 else None
    if nin in (1, 2) and (fast is not None or fast64 is not None):
        return _decided_first(f, nin, fast, fast64, fast2)
    run = _one_loop(f, nin)
    signatures = elementwise_signatures(f, nin)
    run.kernels = (add(f"elementwise.{f.__name__}", lambda: (run, signatures)),)
    _add_serial(run, f, nin, signatures)
    return run


def _one_loop(f, nin):
    """The parallel loop out[i] = f(*inputs[i]) over 1-D contiguous arrays."""
    if nin == 1:

        def run(out, x):
            for i in prange(out.size):
                out[i] = canonical(f(x[i]))

    elif nin == 2:

        def run(out, x, y):
            for i in prange(out.size):
                out[i] = canonical(f(x[i], y[i]))

    else:

        def run(out, x, y, z):
            for i in prange(out.size):
                out[i] = canonical(f(x[i], y[i], z[i]))

    return njit(parallel=True, cache=True)(run)


@functools.lru_cache(maxsize=None)
def broadcast_second(f):
    """Launchers of out = f(x, y) with y broadcast, the operands flat: out and x
    hold (outer, period, inner) elements, y holds `period`, and element
    (o, p, j) is f(x[(o, p, j)], y[p]).  `run(out, x, y, outer, period, inner)`
    picks the loop: for inner = 1 (y repeats along the last dims: a bias, a
    layer norm's weight) the loop over p vectorises, otherwise the loop over
    j (y constant along them: a row's statistic, a channel's scale).  Each
    element is f of the same two values as in the materialised launch, so
    the split changes no bit.  Registered as `elementwise.<f>.broadcast_*`."""
    # Each parallel loop calls a separately compiled row function: Numba's
    # parfor lowering of a loop nested in a prange body keeps it from
    # vectorising.
    @njit(cache=True, error_model="numpy")
    def periodic_row(out, x, y):
        for p in range(out.size):
            out[p] = canonical(f(x[p], y[p]))

    @njit(cache=True, error_model="numpy")
    def blocked_row(out, x, v):
        for j in range(out.size):
            out[j] = canonical(f(x[j], v))

    def periodic(out, x, y, outer, period):
        for o in prange(outer):
            periodic_row(out[o * period:(o + 1) * period], x[o * period:(o + 1) * period], y)

    def blocked(out, x, y, rows, period, inner):
        for r in prange(rows):
            blocked_row(out[r * inner:(r + 1) * inner], x[r * inner:(r + 1) * inner], y[r % period])

    def serial_of(dtype):
        # the same rows on the calling thread, the buffers given by their
        # addresses (see `_serial_kernel`)
        def serial(out, x, y, outer, period, inner, mask):
            old = enter_ieee(mask)
            n = outer * period * inner
            o, a = carray(_address_as_pointer(out), n, dtype), carray(_address_as_pointer(x), n, dtype)
            b = carray(_address_as_pointer(y), period, dtype)
            if inner == 1:
                for r in range(outer):
                    periodic_row(o[r * period:(r + 1) * period], a[r * period:(r + 1) * period], b)
            else:
                for r in range(outer * period):
                    blocked_row(o[r * inner:(r + 1) * inner], a[r * inner:(r + 1) * inner], b[r % period])
            leave_ieee(old)

        return njit(cache=True, error_model="numpy")(serial)

    periodic = njit(parallel=True, cache=True, error_model="numpy")(periodic)
    blocked = njit(parallel=True, cache=True, error_model="numpy")(blocked)
    arrays = elementwise_signatures(f, 2)
    kernels = (add(f"elementwise.{f.__name__}.broadcast_periodic", lambda: (periodic, tuple(a + (types.int64,) * 2
                                                                                           for a in arrays))),
               add(f"elementwise.{f.__name__}.broadcast_blocked", lambda: (blocked, tuple(a + (types.int64,) * 3
                                                                                         for a in arrays))))

    def run(out, x, y, outer, period, inner):
        if inner == 1:
            periodic(out, x, y, outer, period)
        else:
            blocked(out, x, y, outer * period, period, inner)

    run.serial = {}
    run.serial_max = SERIAL_MAX
    for signature in arrays:
        dtype = np.dtype(str(signature[0].dtype))
        serial = run.serial[dtype] = serial_of(dtype.type)
        argtypes = ((types.intp,) * 3 + (types.int64,) * 4,)
        kernels += (add(f"elementwise.{f.__name__}.broadcast_serial.{dtype.name}",
                        lambda s=serial, a=argtypes: (s, a)),)
    run.kernels = kernels
    return run


# --------------------------------------------------------------------------- the light path

# Up to this many elements an elementwise launch runs on the calling thread
# (`run.serial`): waking Numba's pool costs ~2-3 us on a quiet machine while
# its workers spin, tens of microseconds when they wait passively
# (softrep/cpu/__init__.py) and milliseconds on a loaded machine, while 2^15
# float32 additions take ~5 us on one core.  Which thread computes an element
# never changes its bits.
SERIAL_MAX = 1 << 15


@intrinsic
def _address_as_pointer(typingctx, address):
    """An integer address (torch's `data_ptr()`) as a void pointer."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.voidptr(types.intp), codegen


# for the schedules that reach several tensors through a table of addresses
address_as_pointer = _address_as_pointer


def _serial_kernel(f, nin, dtype, chunk=None):
    """`serial(out, *inputs, n, mask)`: out[i] = f(*inputs[i]) for i < n on the
    calling thread, every argument an integer (the addresses of C-contiguous
    buffers of `dtype`, the element count, CONTROL_MASK).  A Python call with
    integers costs a fraction of one with arrays, and the kernel sets IEEE's
    control state itself (`enter_ieee`), so the launch is one call.  With
    `chunk(out, *inputs, lo, hi)` (one or two inputs), the loop is that
    function's."""
    if chunk is not None and nin == 1:

        def serial(out, x, n, mask):
            old = enter_ieee(mask)
            chunk(carray(_address_as_pointer(out), n, dtype), carray(_address_as_pointer(x), n, dtype), 0, n)
            leave_ieee(old)

    elif chunk is not None:

        def serial(out, x, y, n, mask):
            old = enter_ieee(mask)
            chunk(carray(_address_as_pointer(out), n, dtype), carray(_address_as_pointer(x), n, dtype),
                  carray(_address_as_pointer(y), n, dtype), 0, n)
            leave_ieee(old)

    elif nin == 1:

        def serial(out, x, n, mask):
            old = enter_ieee(mask)
            o, a = carray(_address_as_pointer(out), n, dtype), carray(_address_as_pointer(x), n, dtype)
            for i in range(n):
                o[i] = canonical(f(a[i]))
            leave_ieee(old)

    elif nin == 2:

        def serial(out, x, y, n, mask):
            old = enter_ieee(mask)
            o, a = carray(_address_as_pointer(out), n, dtype), carray(_address_as_pointer(x), n, dtype)
            b = carray(_address_as_pointer(y), n, dtype)
            for i in range(n):
                o[i] = canonical(f(a[i], b[i]))
            leave_ieee(old)

    else:

        def serial(out, x, y, z, n, mask):
            old = enter_ieee(mask)
            o, a = carray(_address_as_pointer(out), n, dtype), carray(_address_as_pointer(x), n, dtype)
            b, c = carray(_address_as_pointer(y), n, dtype), carray(_address_as_pointer(z), n, dtype)
            for i in range(n):
                o[i] = canonical(f(a[i], b[i], c[i]))
            leave_ieee(old)

    return njit(cache=True, error_model="numpy")(serial)


def _add_serial(run, f, nin, signatures, chunks=None):
    """Give the launcher `run` its serial kernels, `run.serial[numpy dtype]`
    (see `_serial_kernel`; `chunks`: numpy dtype -> chunk function), registered
    as `elementwise.<f>.serial.<dtype>`."""
    run.serial = {}
    run.serial_max = SERIAL_MAX
    for signature in signatures:
        dtype = signature[0].dtype
        chunk = (chunks or {}).get(np.dtype(str(dtype)))
        serial = _serial_kernel(f, nin, np.dtype(str(dtype)).type, chunk)
        run.serial[np.dtype(str(dtype))] = serial
        argtypes = ((types.intp,) * (nin + 2) + (types.int64,),)
        run.kernels += (add(f"elementwise.{f.__name__}.serial.{dtype}", lambda s=serial, a=argtypes: (s, a)),)


@njit  # not cached: Numba cannot cache the thread-count functions (a ctypes pointer)
def set_threads(n):
    """Set the calling thread's Numba thread count to n; returns the previous
    count.  Compiled: `numba.set_num_threads` called from Python takes a
    process-wide lock each time (tens of microseconds under load)."""
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    return old


def on_one_thread(launcher, *args):
    """`launcher(*args)` with its parallel kernels on the calling thread only."""
    on_threads(1, launcher, *args)


def on_threads(n, launcher, *args):
    """`launcher(*args)` with its parallel kernels on at most n threads (the
    calling thread among them), n >= 1."""
    threads = set_threads(max(1, min(n, numba.get_num_threads())))
    try:
        launcher(*args)
    finally:
        set_threads(threads)


def launch_serial(run, dtype, out, inputs, n):
    """Run the serial kernel of launcher `run` on addresses: `out` and `inputs`
    are C-contiguous buffers of n elements of numpy dtype `dtype`.  A
    decided-first launcher whose `out` is one of its inputs writes to a
    scratch buffer first (`writes_marks`)."""
    if getattr(run, "writes_marks", False) and out in inputs:
        scratch = np.empty(n, dtype)
        run.serial[dtype](scratch.ctypes.data, *inputs, n, CONTROL_MASK)
        np.copyto(np.frombuffer((ctypes.c_char * scratch.nbytes).from_address(out), dtype), scratch)
        return
    run.serial[dtype](out, *inputs, n, CONTROL_MASK)


def launch_broadcast_serial(run, dtype, out, x, y, outer, period, inner):
    """Run the serial kernel of `broadcast_second` launcher `run` on addresses:
    out and x C-contiguous buffers of outer * period * inner elements of numpy
    dtype `dtype`, y of `period`; the layout of `run`."""
    run.serial[dtype](out, x, y, outer, period, inner, CONTROL_MASK)


CHUNK = 8192  # elements per work item of the decided-first launcher (32 KB of float32)

# Vector iterations interleaved in the float64 first steps' loops: their
# bodies (double-double arithmetic) are long chains of dependent operations,
# which LLVM would run one vector iteration at a time with 16 vector
# registers, and for sin, tan and erfc with 32 (`interleave_vector_loops`).
# The float32 first steps, shorter, keep LLVM's choice: two iterations there
# made some faster and others slower (docs/benchmarks.md).
FLOAT64_INTERLEAVE = 2


def host_cpu_features():
    """The feature string of the CPU Numba compiles for ("+avx2,+fma,..."):
    NUMBA_CPU_FEATURES where set (benchmarks/isa.py), else the host's."""
    features = _numba_config.CPU_FEATURES
    return features if features is not None else llvm.get_host_cpu_features().flatten()


def host_vector_bits():
    """The widest vector registers of the CPU Numba compiles for: 512 bits
    with AVX-512F, else 256 (AVX2; narrower hosts get what LLVM makes of it)."""
    return 512 if "+avx512f" in host_cpu_features().split(",") else 256


def host_prefers_scalar_loads():
    """Whether table reads in vector loops should be scalar loads at indices
    computed in vector registers, on the CPU Numba compiles for: on AMD's
    Zen cores.  LLVM treats every AVX-512 gather as cheap, but on Zen a
    gather of 8 doubles costs more than 8 scalar loads and their inserts.
    Without AVX-512, LLVM already uses scalar loads on these cores, but
    computes each index again in scalar registers, from the load of the
    argument on (`_vector_hints`).  Measurements: docs/benchmarks.md.
    Elsewhere LLVM's choice stands."""
    name = _numba_config.CPU_NAME or llvm.get_host_cpu_name()
    return name.startswith("znver")


VECTOR_BITS = host_vector_bits()
SCALAR_LOADS = host_prefers_scalar_loads()


def _vector_hints(scalar_loads):
    """The codegen of the vector-loop hints: function attributes only."""
    def codegen(context, builder, signature, args):
        # llvmlite's attribute set only admits enum attributes by name; a
        # string attribute is written out as given.
        attributes = builder.function.attributes
        set.add(attributes, f'"prefer-vector-width"="{VECTOR_BITS}"')
        if scalar_loads and SCALAR_LOADS:
            # "prefer-no-gather" keeps gathers out.  "fast-gather" lets LLVM
            # count gathers as available on an AVX2-only target: only then
            # does it keep address computations in vector registers (X86's
            # prefersVectorizedAddressing) and extract each index, where it
            # would otherwise compute every index's chain (the argument's
            # load, the products and sums before the table index) per
            # element in scalar registers, and pack those values into vectors
            # again for their other uses.  With AVX-512 it changes nothing.
            set.add(attributes, f'"target-features"="{host_cpu_features()},+fast-gather,+prefer-no-gather"')
        return context.get_dummy_value()
    return codegen


@intrinsic
def prefer_host_vectors(typingctx):
    """Ask LLVM to vectorise the calling function's loops for VECTOR_BITS-wide
    registers (the function attribute "prefer-vector-width").  LLVM's cost
    model prefers 256-bit vectors on most AVX-512 cores, which halves the
    throughput of the fast paths: they compute in double, 4 lanes per ymm
    register against 8 per zmm.  Width changes no bit: each lane is the same
    IEEE operation."""
    return types.none(), _vector_hints(False)


@intrinsic
def prefer_host_table_reads(typingctx):
    """`prefer_host_vectors`, and where SCALAR_LOADS, table reads at computed
    indices left to scalar loads at indices computed in vector registers
    ("fast-gather" and "prefer-no-gather" added to the target's features:
    `_vector_hints`): for the math functions' first steps, which read one or
    more table words per element.  (Not for strided reads in general: the short
    rows' amax over rows of 64, which LLVM also vectorises with gathers, ran
    15% slower with scalar loads on Zen 5.)  No bit changes: the same
    values are loaded."""
    return types.none(), _vector_hints(True)


MARK_BLOCK = 64  # elements the marked pass tests at once


@register_jitable
def _count_pending(pending, ok):
    """`pending` (an int64 count) plus one for an undecided element."""
    return pending + (np.int64(0) if ok else np.int64(1))


@register_jitable
def _or_pending(pending, ok):
    """`pending` (a bool) or an undecided element."""
    return pending | (not ok)


# Whether a chunk's first loop left any element undecided: (the value for
# none, the update per element).  Without AVX-512 a comparison gives a
# vector, and a boolean OR of it costs one instruction per vector.  With
# AVX-512 that OR stays in a mask register through the whole loop, while the
# fast paths' own flags need the eight mask registers (log's and tanh's loops
# then spilled masks and ran 7-13% slower); there the undecided elements are
# counted in a vector register instead.  Both beat an integer OR, which
# widened each mask to a vector and shifted it first (docs/benchmarks.md).
PENDING_FORMS = {"count": (np.int64(0), _count_pending), "or": (False, _or_pending)}
_NONE_PENDING, _note_pending = PENDING_FORMS["count" if VECTOR_BITS == 512 else "or"]


def _marked_pass(f, nin, fast):
    """`finish(out, x, y, lo, hi)`: out[i] = f(x[i]) (nin = 2: f(x[i], y[i]); y
    is not read for nin = 1) wherever out[i] holds the `undecided` marker,
    for lo <= i < hi.  The decided-first launcher's second pass.  It tests
    MARK_BLOCK elements at a time in a vectorised loop and walks only the
    blocks that hold a mark: a chunk that holds any usually holds one or two
    (about 2^-14 of the inputs are undecided in the float64 exponentials'
    first step, 2^-15 in float32 exp's and sigmoid's), and an
    element-by-element test is a load, a comparison and a branch for every
    element of the chunk.

    A block with a mark first runs `fast` again over the block in a vector
    loop (`nans`) and stores the canonical NaN where it decided a NaN: the
    first loop marks those (its r == r costs less than a canonical NaN in
    every element), and an input of NaNs or of a function's domain errors
    (log of negatives) would otherwise take f one element at a time, ten to
    twenty times slower than the vector loop."""
    block = np.uint64(MARK_BLOCK)

    if nin == 1:
        def redo(out, i, x, y):
            out[i] = canonical(f(x[i]))

        def nans(out, x, y, b, e):
            prefer_host_table_reads()
            for i in range(b, e):
                r, ok = fast(x[i])
                out[i] = canonical_nan(r) if ok & (r != r) & is_undecided(out[i]) else out[i]
    else:
        def redo(out, i, x, y):
            out[i] = canonical(f(x[i], y[i]))

        def nans(out, x, y, b, e):
            prefer_host_table_reads()
            for i in range(b, e):
                r, ok = fast(x[i], y[i])
                out[i] = canonical_nan(r) if ok & (r != r) & is_undecided(out[i]) else out[i]
    redo = njit(cache=True, error_model="numpy")(redo)
    nans = njit(cache=True, error_model="numpy")(nans)

    def finish(out, x, y, lo, hi):
        for b in range(np.uint64(lo), np.uint64(hi), block):
            e = min(b + block, np.uint64(hi))
            marked = False
            for i in range(b, e):
                marked |= is_undecided(out[i])
            if marked:
                nans(out, x, y, b, e)
                for i in range(b, e):
                    if is_undecided(out[i]):
                        redo(out, i, x, y)

    return njit(cache=True, error_model="numpy")(finish)


def _decided_chunk(f, fast, nin=1, fast2=None, interleave=0):
    """`chunk(out, x, lo, hi)` (nin = 2: `chunk(out, x, y, lo, hi)`) of the
    decided-first launcher for one dtype: `fast` over [lo, hi), undecided
    elements marked in `out` itself by the `undecided` NaN (a payload that
    no result has: every NaN result is canonical, so no flag array is
    allocated), then `f` on the marked ones only.  A NaN that `fast`
    decides is marked too, and the marked pass stores the canonical NaN
    there: the comparison r == r costs the first loop less than
    canonicalising every result (a bit test and a select on each element).

    Compiled on its own (Numba does not vectorise a loop nested in a prange
    body), with unsigned indices (a signed one gets negative-index wraparound
    code on every access) and the numpy error model (Python's guards integer
    divisions with a branch); either stopped the vectoriser.  Whether any
    element is left undecided is noted by `_note_pending`.

    With `fast2` (one input; `f` is "fast, else fast2, else the accurate
    path"), a chunk with undecided elements first runs `fast2`, branch-free
    too, over the whole chunk, keeping its result where the element is
    marked and `fast2` decides, and `f` then runs where it did not.

    The pass of `f` is `_marked_pass`: it looks for marks a block at a time.

    `interleave` > 0: LLVM interleaves that many vector iterations of the
    loops (`interleave_vector_loops`); 0 leaves the choice to LLVM."""
    finish = _marked_pass(f, nin, fast)

    if nin == 1 and fast2 is not None:

        def chunk(out, x, lo, hi):
            prefer_host_table_reads()
            pending = _NONE_PENDING
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i])
                ok = ok & (r == r)
                out[i] = r if ok else undecided(r)
                pending = _note_pending(pending, ok)
            if pending:
                pending = _NONE_PENDING
                for i in range(np.uint64(lo), np.uint64(hi)):
                    marked = is_undecided(out[i])
                    r, ok = fast2(x[i])
                    ok = ok & (r == r)
                    out[i] = r if marked and ok else out[i]
                    pending = _note_pending(pending, (not marked) | ok)
            if pending:
                finish(out, x, x, lo, hi)

    elif nin == 1:

        def chunk(out, x, lo, hi):
            prefer_host_table_reads()
            pending = _NONE_PENDING
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i])
                ok = ok & (r == r)
                out[i] = r if ok else undecided(r)
                pending = _note_pending(pending, ok)
            if pending:
                finish(out, x, x, lo, hi)

    else:

        def chunk(out, x, y, lo, hi):
            prefer_host_table_reads()
            pending = _NONE_PENDING
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i], y[i])
                ok = ok & (r == r)
                out[i] = r if ok else undecided(r)
                pending = _note_pending(pending, ok)
            if pending:
                finish(out, x, y, lo, hi)

    chunk = njit(cache=True, error_model="numpy")(chunk)
    return interleave_vector_loops(chunk, interleave) if interleave else chunk


def _chunked(chunk, nin=1):
    """The parallel launch of `chunk` (of `nin` inputs) over CHUNK-element work items."""

    if nin == 1:

        def two_loops(out, x):
            n = out.size
            for c in prange((n + CHUNK - 1) // CHUNK):
                chunk(out, x, c * CHUNK, min(n, c * CHUNK + CHUNK))

    else:

        def two_loops(out, x, y):
            n = out.size
            for c in prange((n + CHUNK - 1) // CHUNK):
                chunk(out, x, y, c * CHUNK, min(n, c * CHUNK + CHUNK))

    return njit(parallel=True, cache=True)(two_loops)


@functools.lru_cache(maxsize=None)
def _decided_first(f, nin, fast, fast64=None, fast2=None):
    """Launcher for a kernel `f` of `nin` (1 or 2) inputs whose float32 version
    has a companion `fast(*x) -> (f(*x), True)`, or `(anything, False)` where
    it cannot decide (and/or whose float64 version has such a companion
    `fast64`).  Per chunk of CHUNK elements, a first loop runs only `fast`,
    which is branch-free and vectorises, and notes whether any element is
    undecided; only such a chunk (2^-21 of the inputs are undecided for most
    math functions, 2^-15 for float32 exp and sigmoid: one chunk in four;
    2^-14 for float64 exp, exp2 and sigmoid: two chunks in five) is searched again,
    while it is still in cache, computing `f` at the marked elements.  So out[i] = f(x[i]) for every i,
    exactly as the one-loop launcher computes it (`f` returns `fast`'s result
    whenever `fast` decides: softrep/ops/math.py).  A float32 kernel
    with a second step `fast2` (one input) runs it over such a chunk
    before `f` (`_decided_chunk`).  A dtype without a companion takes the
    one-loop path."""
    one_loop = _one_loop(f, nin)
    chunks = {}
    two_loops = two_loops64 = None
    if fast is not None:
        chunks[np.dtype(np.float32)] = _decided_chunk(f, fast, nin, fast2)
        two_loops = _chunked(chunks[np.dtype(np.float32)], nin)
    if fast64 is not None:
        chunks[np.dtype(np.float64)] = _decided_chunk(f, fast64, nin, interleave=FLOAT64_INTERLEAVE)
        two_loops64 = _chunked(chunks[np.dtype(np.float64)], nin)

    def run(out, *inputs):
        if out.size and any(np.may_share_memory(out, x) for x in inputs):
            # the first loop writes its marks into `out`, and the marked pass
            # reads the inputs again (`writes_marks`): through a scratch copy
            result = np.empty_like(out)
            run(result, *inputs)
            np.copyto(out, result)
            return
        dtype = inputs[0].dtype
        if dtype == np.float32 and fast is not None:
            two_loops(out, *inputs)
        elif dtype == np.float64 and fast64 is not None:
            two_loops64(out, *inputs)
        else:
            one_loop(out, *inputs)

    # The first loop marks the undecided elements in `out` and the marked pass
    # then computes them from the inputs: `out` must not be an input.
    run.writes_marks = True
    signatures = elementwise_signatures(f, nin)
    decided = {types.float32: fast is not None, types.float64: fast64 is not None}
    f32 = tuple(s for s in signatures if s[0].dtype == types.float32 and decided[types.float32])
    f64 = tuple(s for s in signatures if s[0].dtype == types.float64 and decided[types.float64])
    others = tuple(s for s in signatures if not decided.get(s[0].dtype, False))
    run.kernels = ()
    if f32:
        run.kernels += (add(f"elementwise.{f.__name__}.decided_first", lambda: (two_loops, f32)),)
    if f64:
        run.kernels += (add(f"elementwise.{f.__name__}.decided_first64", lambda: (two_loops64, f64)),)
    if others:
        run.kernels += (add(f"elementwise.{f.__name__}", lambda: (one_loop, others)),)
    # Small launches: the same loops on the calling thread (`chunk` over all n
    # elements, so the fast path still vectorises).
    _add_serial(run, f, nin, signatures, chunks)
    return run
