"""Compile once, run on three targets.

An algorithm in softrep is a plain Python function.  `jitable` registers it so
that it can be called from a CPU kernel (`numba.njit`), from a CUDA kernel
(`numba.cuda.jit`), and, unchanged, from Python itself, which is how the CUDA
simulator (NUMBA_ENABLE_CUDASIM=1) runs it.

`bitcast` reinterprets the bits of a scalar (float32 <-> uint32,
float64 <-> uint64).  It is one LLVM `bitcast`, registered for both targets.
`wrapping_add` and `wrapping_sub` are uint64 sums modulo 2^64, in Python too.
`interleave_vector_loops` has LLVM interleave a CPU dispatcher's vector loop
iterations (a schedule, not a value).

The CUDA half of every registration waits for the first CUDA use
(`require_cuda`), so that `import softrep` and everything on the CPU work
without numba-cuda, which is the optional `softrep[cuda]` extra.

This module also installs a Numba cache locator for softrep's own source files:
the cache key of every softrep kernel is a hash of the whole softrep source
tree, so changing any algorithm (a primitive, a helper called from a kernel)
invalidates every cached kernel.  Numba's default locator only looks at the
modification time of the file that defines the kernel, and would happily reuse
a kernel compiled against an older rounding primitive.  Within one source
tree a kernel is found by Numba's index key, whose hash of the kernel's
closure variables is made the same in every process (`_closure_key`), and
every compiled function's symbol carries a random id, so that kernels compiled
in different processes never share a symbol (`_random_function_ids`).

A module that holds no kernel code at all (it only composes softrep ops on
torch tensors: layers, losses, optimizers, tooling) can opt out of the hash by
carrying the line `# softrep: no kernels` among its first five lines, so that
editing it does not recompile every kernel.  Only modules that neither define
nor import anything a kernel calls may carry it.
"""

import hashlib
from dataclasses import dataclass
import inspect
import os
import secrets

import numpy as np
import numba
from numba.core import types
from numba.core.extending import intrinsic as _cpu_intrinsic
from numba.core.extending import register_jitable as _cpu_register_jitable

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the softrep package

CUDA_INSTALL_HINT = 'CUDA support needs numba-cuda: pip install "softrep[cuda]"'

# Registrations for the CUDA target wait here until the first CUDA use
# (`require_cuda`): importing numba-cuda costs time, pulls in the CUDA
# libraries, and numba-cuda is an optional dependency.
_cuda_registrations = []
_cuda_ready = False


def cuda_ready():
    """Whether `require_cuda` has run in this process."""
    return _cuda_ready


def require_cuda():
    """Import numba-cuda and register every jitable, `by_type` helper, `bitcast`
    and rounding primitive (softrep/primitives/cuda_lowering.py) for the CUDA
    target, once per process.  The simulator needs numba-cuda too, but runs
    the Python source and registers nothing.

    Raises ImportError naming the `softrep[cuda]` extra when numba-cuda (0.21.1
    or later: the first with `numba.cuda.extending.overload`) cannot be
    imported, or cannot find the CUDA libraries it needs.
    """
    global _cuda_ready
    if _cuda_ready:
        return
    try:
        import numba.cuda  # noqa: F401

        if not SIMULATOR:
            from numba.cuda.extending import overload  # noqa: F401
    except Exception as exc:  # ImportError, or the CUDA runtime's libraries missing
        raise ImportError(f"{CUDA_INSTALL_HINT} ({type(exc).__name__}: {exc})") from exc
    _cuda_ready = True
    if SIMULATOR:
        return
    for register in _cuda_registrations:
        register()
    _cuda_registrations.clear()
    _install_cuda_cache_locator()


def when_cuda_ready(register):
    """Run `register()` (a CUDA-target registration) now if CUDA is set up, else
    on the first CUDA use."""
    if SIMULATOR:
        return
    if _cuda_ready:
        register()
    else:
        _cuda_registrations.append(register)


def jitable(fn):
    """Make `fn` callable from CPU and CUDA kernels; it stays a Python function."""
    _cpu_register_jitable(fn)

    def register():
        from numba.cuda.extending import overload as _cuda_overload

        _cuda_overload(fn, target="cuda", strict=False)(lambda *args: fn)

    when_cuda_ready(register)
    return fn


def by_type(stub, table):
    """Give the Python function `stub` a compiled implementation per argument type.

    `table` maps a Numba type (of the first argument) to a jitable function with
    the same parameter names.  Used for small generic helpers such as `canonical`,
    whose float32 and float64 versions differ only in their constants.
    `stub.implemented_types` lists the table's types (the launchers register
    an elementwise kernel for those dtypes only).
    """
    from numba.core.extending import overload as _cpu_overload

    choose = with_arity(list(inspect.signature(stub).parameters), lambda types_: table.get(types_[0]))
    _cpu_overload(stub, target="cpu")(choose)

    def register():
        from numba.cuda.extending import overload as _cuda_overload

        _cuda_overload(stub, target="cuda")(choose)

    when_cuda_ready(register)
    stub.implemented_types = tuple(table)
    return stub


def by_target(stub, cpu, cuda):
    """Give the Python function `stub` (itself the implementation that plain
    Python and the CUDA simulator run) a compiled implementation per target:
    `cpu(arg_types)` and `cuda(arg_types)` return a jitable function with the
    same parameter names.  For code that one target can run faster with
    instructions the other lacks (the CPU's vector registers), the same
    operations in the same order."""
    from numba.core.extending import overload as _cpu_overload

    params = list(inspect.signature(stub).parameters)
    _cpu_overload(stub, target="cpu")(with_arity(params, cpu))

    def register():
        from numba.cuda.extending import overload as _cuda_overload

        _cuda_overload(stub, target="cuda")(with_arity(params, cuda))

    when_cuda_ready(register)
    return stub


def with_arity(params, choose):
    """An overload typing function with positional parameters `params` (a count,
    or a sequence of names) that calls `choose(tuple_of_arg_types)`.

    Numba rejects *args in a typing function, and wants its parameter names to
    match those of the implementation it returns.
    """
    if isinstance(params, int):
        params = "abc"[:params]
    args = ", ".join(params)
    return eval(f"lambda {args}: choose(({args},))", {"choose": choose})


def per_element(v, k):
    """v[k] for an array v, v itself for a scalar: for kernels that take a
    value once for a whole row, or per element (a block of rows, each row's
    value repeated over its elements), with one loop for both."""
    return v[k] if isinstance(v, np.ndarray) else v


def _per_element_choice(arg_types):
    if isinstance(arg_types[0], types.Array):
        return lambda v, k: v[k]
    return lambda v, k: v


by_target(per_element, _per_element_choice, _per_element_choice)


# --------------------------------------------------------------------------- bitcast

_BITCAST_PAIRS = {
    types.float32: types.uint32,
    types.uint32: types.float32,
    types.int32: types.float32,
    types.float64: types.uint64,
    types.uint64: types.float64,
    types.int64: types.float64,
}


def _bitcast_typer(typingctx, x):
    target = _BITCAST_PAIRS.get(x)
    if target is None:
        return None
    sig = target(x)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(signature.return_type))

    return sig, codegen


def _py_bitcast(x):
    """Python semantics of `bitcast` (used by the simulator and plain Python)."""
    if isinstance(x, np.float32):
        return np.array(x, dtype=np.float32).view(np.uint32)[()]
    if isinstance(x, (np.uint32, np.int32)):
        return np.array(x, dtype=np.uint32).view(np.float32)[()]
    if isinstance(x, (np.float64, float)):
        return np.array(x, dtype=np.float64).view(np.uint64)[()]
    if isinstance(x, (np.uint64, np.int64, int)):
        return np.array(x, dtype=np.uint64).view(np.float64)[()]
    raise TypeError(f"bitcast: unsupported scalar type {type(x).__name__}")


_bitcast_cpu = _cpu_intrinsic(_bitcast_typer)


def bitcast(x):
    """float32 <-> uint32 and float64 <-> uint64, bit for bit."""
    return _py_bitcast(x)


@numba.core.extending.overload(bitcast, target="cpu")
def _ov_bitcast_cpu(x):
    if x in _BITCAST_PAIRS:
        return lambda x: _bitcast_cpu(x)


def _register_bitcast_cuda():
    from numba.cuda.extending import intrinsic as _cuda_intrinsic
    from numba.cuda.extending import overload as _cuda_overload

    bitcast_cuda = _cuda_intrinsic(_bitcast_typer)

    @_cuda_overload(bitcast, target="cuda")
    def _ov_bitcast_cuda(x):
        if x in _BITCAST_PAIRS:
            return lambda x: bitcast_cuda(x)


when_cuda_ready(_register_bitcast_cuda)


_U64_MASK = (1 << 64) - 1


def wrapping_add(a, b):
    """a + b modulo 2^64 for uint64 a and b: the compiled targets' own uint64
    addition; in Python (the simulator) the same value without numpy's
    overflow warning.  For bit manipulations whose sums may wrap by design
    (a branch-free step evaluating inputs whose result it discards)."""
    return np.uint64((int(a) + int(b)) & _U64_MASK)


def wrapping_sub(a, b):
    """a - b modulo 2^64 for uint64 a and b (`wrapping_add`'s counterpart)."""
    return np.uint64((int(a) - int(b)) & _U64_MASK)


def _add_u64(a, b):
    return a + b


def _sub_u64(a, b):
    return a - b


by_target(wrapping_add, lambda arg_types: jitable(_add_u64), lambda arg_types: jitable(_add_u64))
by_target(wrapping_sub, lambda arg_types: jitable(_sub_u64), lambda arg_types: jitable(_sub_u64))


def _inline_typer(typingctx):
    def codegen(context, builder, signature, args):
        builder.function.attributes.add("alwaysinline")
        return context.get_dummy_value()

    return types.none(), codegen


_inline_cpu = _cpu_intrinsic(_inline_typer)


def inline_into_callers():
    """Called first in a jitable function: have LLVM inline that function into
    every caller (the attribute alwaysinline).  LLVM inlines only small
    functions by itself; a call left in a loop keeps the loop scalar, so
    every first step of the math functions (`<name>_fast`, `<name>_fast64`,
    which the CPU launcher runs in a vectorised loop;
    tests/test_fast_paths_vectorise.py) and their large helpers (the
    trigonometric reduction, erfc's pieces) carry this.  Inlining changes no
    bit.  Does nothing in
    plain Python (the simulator)."""


# inline="always": Numba inlines this overload's body into the calling
# function, so the intrinsic marks that function, not a wrapper of its own.
@numba.core.extending.overload(inline_into_callers, target="cpu", inline="always")
def _ov_inline_cpu():
    return lambda: _inline_cpu()


def _register_inline_cuda():
    from numba.cuda.extending import intrinsic as _cuda_intrinsic
    from numba.cuda.extending import overload as _cuda_overload

    inline_cuda = _cuda_intrinsic(_inline_typer)

    @_cuda_overload(inline_into_callers, target="cuda", inline="always")
    def _ov_inline_cuda():
        return lambda: inline_cuda()


when_cuda_ready(_register_inline_cuda)


# --------------------------------------------------------------------------- interleaved vector loops

# LLVM's loop vectoriser chooses how many vector iterations one pass of a
# loop body interleaves from the registers the body needs: for a body as
# large as a float64 first step's (double-double products and sums, a few
# hundred instructions per vector) it chooses one with 16 vector registers,
# and for the largest such bodies with 32 too.  Each vector iteration is
# then one long chain of dependent operations, and the core's reorder window
# holds little more than one iteration, so the next one barely overlaps it.
# Two iterations interleaved instruction by instruction give the core two
# independent chains.  The loop-hint metadata that asks for this per loop is
# out of reach from Numba's Python source; LLVM's option
# -force-vector-interleave asks for it in every loop compiled while it is
# set, so `interleave_vector_loops` sets it for the compilations of one
# dispatcher only, under Numba's compiler lock.

_INTERLEAVE_OPTION = "-force-vector-interleave"
_interleave_in_force = [0]  # 0: LLVM chooses


def _set_interleave(count):
    import llvmlite.binding as llvm

    llvm.set_option("", f"{_INTERLEAVE_OPTION}={count}")
    _interleave_in_force[0] = count


def interleave_vector_loops(dispatcher, count):
    """Return `dispatcher` (a CPU `njit` dispatcher), made to compile with
    LLVM's loop vectoriser interleaving `count` vector iterations of every
    loop it vectorises (LLVM's own choice again for other compilations).
    Functions compiled for the first time during its compilation (callees)
    take the same count (loops LLVM leaves scalar may be interleaved too).  The
    schedule changes, no value: each lane still performs the same IEEE
    operations on the same operands.  A kernel loaded from the on-disk cache
    is not compiled again."""
    from numba.core.compiler_lock import global_compiler_lock

    compile_as_usual = dispatcher.compile

    def compile_interleaved(signature):
        with global_compiler_lock:
            saved = _interleave_in_force[0]
            _set_interleave(count)
            try:
                return compile_as_usual(signature)
            finally:
                _set_interleave(saved)

    dispatcher.compile = compile_interleaved
    return dispatcher


# --------------------------------------------------------------------------- cache


NO_KERNELS_MARKER = b"# softrep: no kernels"


def _holds_no_kernels(source):
    return any(line.strip() == NO_KERNELS_MARKER for line in source.splitlines()[:5])


def _source_tree_hash():
    h = hashlib.sha256()
    for root, dirs, files in os.walk(_PKG_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    source = f.read()
                if _holds_no_kernels(source):
                    continue
                h.update(os.path.relpath(path, _PKG_DIR).encode())
                h.update(hashlib.sha256(source).digest())
    h.update(numba.__version__.encode())
    return h.hexdigest()[:16]


SOURCE_HASH = _source_tree_hash()


def cache_dir():
    """Where softrep keeps compiled kernels: $SOFTREP_CACHE_DIR or ~/.cache/softrep."""
    root = os.environ.get("SOFTREP_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "softrep",
    )
    return os.path.join(root, SOURCE_HASH)


def _make_locator(base):
    class SoftrepCacheLocator(base):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _PKG_DIR)
            self._cache_path = os.path.join(cache_dir(), rel)

        def ensure_cache_path(self):
            os.makedirs(self._cache_path, exist_ok=True)
            super().ensure_cache_path()

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return SOURCE_HASH

        def get_disambiguator(self):
            return os.path.splitext(os.path.basename(self._py_file))[0]

        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.abspath(py_file).startswith(_PKG_DIR + os.sep):
                return None
            return cls(py_func, py_file)

    return SoftrepCacheLocator


def _closure_key(value, seen):
    """A description of one closure variable of a softrep kernel that is the
    same in every process, for the kernel's cache key.  Numba hashes the
    pickle of a kernel's closure variables; a compiled function there (a
    Numba dispatcher, which a kernel factory captures to call it) pickles
    with a uuid drawn anew in every process, so such a kernel would never
    find itself in the cache and would compile again in every process.  Here
    a dispatcher stands for its options and its Python function, and a
    function for its module, qualified name, bytecode, its own closure
    variables and the values of the plain globals it reads (what cloudpickle
    keeps of a function defined inside another); containers go item by
    item, anything else as it is (Numba's pickle of it)."""
    from numba.core.dispatcher import Dispatcher

    if isinstance(value, Dispatcher):
        options = tuple(sorted((k, repr(v)) for k, v in value.targetoptions.items()))
        return ("dispatcher", options, _closure_key(value.py_func, seen))
    if inspect.isfunction(value):
        if id(value) in seen:
            return ("function", value.__module__, value.__qualname__)
        seen.add(id(value))
        cells = () if value.__closure__ is None else tuple(
            _closure_key(cell.cell_contents, seen) for cell in value.__closure__)
        names = value.__globals__
        plain = tuple((name, names[name]) for name in value.__code__.co_names
                      if name in names and not (inspect.ismodule(names[name]) or callable(names[name])))
        return ("function", value.__module__, value.__qualname__, value.__code__.co_code, cells, plain)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_closure_key(v, seen) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _closure_key(v, seen)) for k, v in value.items()))
    return value


def _stable_index_key(core_caching, locator_class):
    """Numba's cache index key with `_closure_key` for the closure variables of
    the functions that `locator_class` caches (softrep's); other functions keep
    Numba's own key."""
    from numba.core.serialize import dumps

    numba_key = core_caching.Cache._index_key

    def index_key(self, sig, codegen):
        py_func = self._py_func
        if py_func.__closure__ is None or not isinstance(self._impl.locator, locator_class):
            return numba_key(self, sig, codegen)
        cells = tuple(_closure_key(cell.cell_contents, set()) for cell in py_func.__closure__)
        return (sig, codegen.magic_tuple(), (hashlib.sha256(py_func.__code__.co_code).hexdigest(),
                                             hashlib.sha256(dumps(cells)).hexdigest()))

    core_caching.Cache._index_key = index_key


class _RandomIds:
    """An endless iterator of random 64-bit integers, from the operating
    system's generator (whatever seed a user gives Python's `random`)."""

    def __iter__(self):
        return self

    def __next__(self):
        return secrets.randbits(64)


def _random_function_ids():
    """Give every function Numba compiles a random id instead of the next
    number of a per-process counter.

    The id is part of the function's symbol (the ABI tag v<id> of its mangled
    name).  A kernel factory's closures share one qualified name: two of them
    compiled in two processes, each the n-th function that process compiled,
    get byte-identical symbols for different code, and both are cached (their
    index keys differ).  A third process that loads both links one symbol to
    one body, LLVM merging the weak definitions: softrep.exp ran log's loop
    when exp's and log's kernels had each been compiled first in a process of
    their own (the same happens to parallel loops' gufuncs, whose symbols
    carry the id too).  With 64 random bits no two symbols meet.  The
    counter is Numba's, so every function compiled in the process gets a
    random id, not only softrep's; an id only names a symbol."""
    from numba.core.bytecode import FunctionIdentity

    FunctionIdentity._unique_ids = _RandomIds()


def _install_cache_locators():
    from numba.core import caching as core_caching

    locator = _make_locator(core_caching._CacheLocator)
    core_caching.CacheImpl._locator_classes.insert(0, locator)
    _stable_index_key(core_caching, locator)
    _random_function_ids()


def _install_cuda_cache_locator():
    from numba.cuda.core import caching as cuda_caching

    cuda_caching.CacheImpl._locator_classes.insert(0, _make_locator(cuda_caching._CacheLocator))


_install_cache_locators()


# --------------------------------------------------------------------------- kernel registries


@dataclass(frozen=True)
class Kernel:
    """A kernel a backend launches.  `build()` returns what the target compiles
    (a Numba dispatcher on the CPU, the Python function on CUDA) and the
    argument types (a tuple of Numba types) of every launch it can get."""

    name: str
    build: object

    def signatures(self):
        return self.build()[1]


class KernelRegistry(dict):
    """name -> Kernel, for one target: what the kernel audit compiles and checks
    (softrep/tools/kernel_audit.py)."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def add(self, name, build):
        """Register `build() -> (compiled object, signatures)` under `name`; returns the Kernel."""
        if name in self:
            raise ValueError(f"a {self.target} kernel named {name!r} is already registered; "
                             "kernel names must be unique")
        self[name] = Kernel(name, build)
        return self[name]

    def register(self, name, build):
        """Register a kernel launched with one signature: `build() -> (compiled object, argument types)`."""

        def build_all():
            compiled, argtypes = build()
            return compiled, (tuple(argtypes),)

        return self.add(name, build_all)
