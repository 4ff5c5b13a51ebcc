"""Every branch-free first step of the math functions compiles to a vector loop.

The CPU launcher runs `<name>_fast` (float32) or `<name>_fast64` (float64)
over a chunk in a loop that LLVM vectorises (softrep/cpu/launch.py).  A
helper that LLVM declines to inline stays a call in that loop, and the loop
stays scalar: the results are the same bits, only several times slower.
This compiles each first step in the launcher's loop form and checks the
optimised IR for vector arithmetic and for calls into softrep.
"""

import re

import numpy as np
import pytest
from numba import njit

import softrep.algorithms.math as AM
import softrep.cpu.launch as launch
from numba.core import config as numba_config
from softrep.cpu.launch import _decided_chunk, host_prefers_scalar_loads, prefer_host_table_reads, prefer_host_vectors

TWO_ARGUMENTS = ("pow", "hypot")
FAST = sorted(n for n in dir(AM) if n.endswith(("_fast", "_fast64")))


def _loop(fast, nin):
    """The decided-first launcher's first loop (softrep/cpu/launch.py)."""
    if nin == 1:
        def loop(out, x, lo, hi):
            prefer_host_table_reads()
            undecided = np.uint32(0)
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i])
                out[i] = r
                undecided |= np.uint32(0) if ok else np.uint32(1)
            return undecided
    else:
        def loop(out, x, lo, hi):
            prefer_host_table_reads()
            undecided = np.uint32(0)
            for i in range(np.uint64(lo), np.uint64(hi)):
                r, ok = fast(x[i], x[i])
                out[i] = r
                undecided |= np.uint32(0) if ok else np.uint32(1)
            return undecided
    return njit(error_model="numpy")(loop)


@pytest.mark.parametrize("name", FAST)
def test_first_step_loop_is_vectorised(name):
    dtype = np.float64 if name.endswith("64") else np.float32
    nin = 2 if name.split("_")[0] in TWO_ARGUMENTS else 1
    loop = _loop(getattr(AM, name), nin)
    x = np.linspace(0.5, 2.0, 64).astype(dtype)
    loop(np.empty_like(x), x, 0, x.size)
    ir = "\n".join(loop.inspect_llvm().values())
    calls = set(re.findall(r"call [^@\n]*@(_ZN7softrep[^(\s]*)", ir))
    assert not calls, f"{name}: calls left in the loop: {sorted(calls)}"
    lanes = "double" if dtype == np.float64 else "float"
    assert re.search(rf"<\d+ x {lanes}>", ir), f"{name}: no vector arithmetic"


def _function_ir(ir, fragment):
    """The body of the function whose defining line contains `fragment`."""
    for part in ir.split("\ndefine ")[1:]:
        if fragment in part.split("\n", 1)[0]:
            return part.split("\n}\n", 1)[0]
    raise AssertionError(f"no function {fragment} in the IR")


FIRST_STEPS = sorted([(k.name, "float32") for k in AM.KERNELS.values() if k.fast is not None]
                     + [(k.name, "float64") for k in AM.KERNELS.values() if k.f64_fast is not None])


@pytest.mark.parametrize("name,dtype", FIRST_STEPS)
def test_launcher_first_loop_is_vectorised(name, dtype):
    """The launcher's chunk function itself (softrep/cpu/launch.py, compiled
    again without the cache so that its IR can be read) has vector arithmetic
    for every first step: the form of its loop decides whether LLVM
    vectorises a step with branches (float64 rsqrt's once ran 24 times slower
    in a form it did not vectorise, with the same step)."""
    k = AM.KERNELS[name]
    f, fast = (k.f32, k.fast) if dtype == "float32" else (k.f64, k.f64_fast)
    chunk = njit(error_model="numpy")(_decided_chunk(f, fast, k.arity).py_func)
    x = np.linspace(0.5, 2.0, 64).astype(dtype)
    chunk(np.empty_like(x), *([x] * k.arity), 0, x.size)
    body = _function_ir("\n".join(chunk.inspect_llvm().values()), "_decided_chunk")
    lanes = "double" if dtype == "float64" else "float"
    assert re.search(rf"<\d+ x {lanes}>", body), f"{name} ({dtype}): the launcher's first loop is not vectorised"


def _vector_steps(ir):
    """The element counts by which the vector loops of optimised IR advance."""
    return [int(n) for n in re.findall(r"%index\.next\S* = add (?:nuw )?(?:nsw )?i64 %index\S*, (\d+)", ir)]


def _widest_lanes(ir, element):
    """The most lanes of any vector of `element` ("double", "float") in the IR."""
    return max((int(n) for n in re.findall(rf"<(\d+) x {element}>", ir)), default=0)


def _scale_and_square(out, x):
    for i in range(np.uint64(x.size)):
        out[i] = x[i] * 3.0 + x[i] * x[i]


def test_interleave_vector_loops_holds_for_one_dispatcher():
    """A dispatcher given an interleave count compiles its vector loops with
    it (3: a count LLVM never picks itself, its choices are powers of two),
    and the next dispatcher compiled gets LLVM's own choice again."""
    from numba.core import types

    from softrep.primitives.jit import interleave_vector_loops
    from softrep.tools.kernel_audit import cpu_llvm

    signature = (types.Array(types.float64, 1, "C"),) * 2
    forced = _vector_steps(cpu_llvm(interleave_vector_loops(njit(error_model="numpy")(_scale_and_square), 3),
                                    signature))
    plain = _vector_steps(cpu_llvm(njit(error_model="numpy")(_scale_and_square), signature))
    # the main loop advances the farthest (a vectorised epilogue may follow it)
    assert forced and max(forced) % 3 == 0, forced
    assert plain and max(plain) % 3 != 0, plain


@pytest.mark.parametrize("name", sorted(n for n in launch.KERNELS if n.endswith(".decided_first64")))
def test_float64_first_loops_interleave(name):
    """The float64 launchers' first loops interleave FLOAT64_INTERLEAVE vector
    iterations: the chunk function's main vector loop advances by that many
    vectors of doubles (the widest in it: LLVM picks the width by its cost
    model, which need not be the register's).  LLVM alone takes one at a
    time in loops this large with 16 vector registers (AVX2), and in sin's,
    tan's and erfc's with 32 (AVX-512);
    `test_float64_first_loops_interleave_on_avx2` checks the AVX2 path on an
    AVX-512 host."""
    from softrep.tools.kernel_audit import cpu_llvm

    dispatcher, signatures = launch.KERNELS[name].build()
    body = _function_ir(cpu_llvm(dispatcher, signatures[0]), "_decided_chunk")
    steps = _vector_steps(body)
    assert steps and max(steps) == launch.FLOAT64_INTERLEAVE * _widest_lanes(body, "double"), steps


@pytest.mark.parametrize("scalar_loads", (False, True))
def test_table_reads_follow_scalar_loads(monkeypatch, scalar_loads):
    """The launcher's loops ask for scalar table loads exactly where
    SCALAR_LOADS says so, and with them LLVM emits no gather: float64 exp2's
    first step reads two table words per element, which LLVM reads with
    AVX-512 gathers unless told otherwise."""
    monkeypatch.setattr(launch, "SCALAR_LOADS", scalar_loads)
    k = AM.KERNELS["exp2"]
    chunk = njit(error_model="numpy")(_decided_chunk(k.f64, k.f64_fast).py_func)
    x = np.linspace(0.5, 2.0, 64)
    chunk(np.empty_like(x), x, 0, x.size)
    ir = "\n".join(chunk.inspect_llvm().values())
    define = next(line for line in ir.splitlines() if line.startswith("define") and "_decided_chunk" in line)
    groups = re.findall(r"#(\d+)", define)
    attributes = "".join(re.findall(rf"^attributes #(?:{'|'.join(groups)}) = (.*)$", ir, re.M))
    assert ("prefer-no-gather" in attributes) == scalar_loads
    if launch.VECTOR_BITS == 512:
        body = _function_ir(ir, "_decided_chunk")
        assert ("@llvm.masked.gather" in body) == (not scalar_loads)


@pytest.mark.parametrize("name,features,expected", [
    ("znver4", "+avx2,+fma,+avx512f", True),
    ("znver5", "+avx2,+fma,+avx512f,+avx512dq", True),
    ("znver4", "+avx2,+fma,-avx512f", True),  # benchmarks/isa.py's AVX2 path
    ("znver3", "+avx2,+fma", True),
    ("sapphirerapids", "+avx2,+fma,+avx512f", False),
    ("skylake-avx512", "+avx2,+fma,+avx512f", False),
    ("haswell", "+avx2,+fma", False),
])
def test_scalar_loads_on_zen(monkeypatch, name, features, expected):
    monkeypatch.setattr(numba_config, "CPU_NAME", name)
    monkeypatch.setattr(numba_config, "CPU_FEATURES", features)
    assert host_prefers_scalar_loads() == expected


def _softmax_row_callers():
    """The fused softmax row functions of softrep.algorithms.softmax that take
    exp, each in a kernel's form (softrep/cpu/softmax.py), with float32
    arguments."""
    import softrep.algorithms.softmax as S

    def rows(out, x, partials):
        prefer_host_vectors()
        S.softmax_row(out, x, partials)

    def log_rows(out, x, partials):
        prefer_host_vectors()
        S.log_softmax_row(out, x, partials)

    def log_grad_rows(dx, g, out, partials):
        prefer_host_vectors()
        S.log_softmax_grad_row(dx, g, out, partials)

    def nll_grad_rows(dx, zeros, logp, t, kept, coef):
        prefer_host_vectors()
        S.nll_grad_row(dx, zeros, logp, t, kept, coef)

    # blocks of short rows (rows of 32): the same loops with per-element values
    def block(out, x, partials, each):
        prefer_host_vectors()
        S.softmax_block(out, x, 32, partials, each)

    def log_block(out, x, partials, each, each2):
        prefer_host_vectors()
        S.log_softmax_block(out, x, 32, partials, each, each2)

    def log_grad_block(dx, g, out, partials, each):
        prefer_host_vectors()
        S.log_softmax_grad_block(dx, g, out, 32, partials, each)

    def nll_grad_blocks(dx, zeros, logp, t, coef, each):
        prefer_host_vectors()
        S.nll_grad_block(dx, zeros, logp, 32, t, -100, coef, each)

    x = np.linspace(-3.0, 2.0, 256).astype(np.float32)
    partials = np.empty(2, np.float32)
    e = np.empty_like
    return {"softmax_row": (rows, (e(x), x, partials)),
            "log_softmax_row": (log_rows, (e(x), x, partials)),
            "log_softmax_grad_row": (log_grad_rows, (e(x), x, x, partials)),
            "nll_grad_row": (nll_grad_rows, (e(x), np.zeros_like(x), x, 3, True, np.float32(-0.5))),
            "softmax_block": (block, (e(x), x, partials, e(x))),
            "log_softmax_block": (log_block, (e(x), x, partials, e(x), e(x))),
            "log_softmax_grad_block": (log_grad_block, (e(x), x, x, partials, e(x))),
            "nll_grad_block": (nll_grad_blocks, (e(x), np.zeros_like(x), x, np.arange(8), np.float32(-0.5), e(x)))}


@pytest.mark.parametrize("name", ("softmax_row", "log_softmax_row", "log_softmax_grad_row", "nll_grad_row",
                                  "softmax_block", "log_softmax_block", "log_softmax_grad_block", "nll_grad_block"))
def test_softmax_rows_exp_loop_is_vectorised(name):
    """The loop of each row function that runs exp's first step over the row
    is a vector loop: exp's float32 first step computes in double, so the
    row's vector double arithmetic is that loop's (the row sums of float32
    rows run in float lanes).  A loop LLVM leaves scalar gives the same bits
    several times slower; the backward's did when its length was read from
    the array it stores to."""
    caller, args = _softmax_row_callers()[name]
    compiled = njit(error_model="numpy")(caller)
    compiled(*args)
    ir = "\n".join(compiled.inspect_llvm().values())
    assert re.search(r"<\d+ x double>", ir), f"{name}: exp's loop is not vectorised"


AVX2_CHECK = """
import re, sys
import numpy as np
from numba import njit
import softrep.algorithms.math as AM
from softrep.cpu.launch import VECTOR_BITS, _decided_chunk
assert VECTOR_BITS == 256, VECTOR_BITS
for name in [a for a in sys.argv[1:] if not a.startswith("--")]:
    k = AM.KERNELS[name]
    for f, fast, dtype, lanes in ((k.f32, k.fast, np.float32, "float"), (k.f64, k.f64_fast, np.float64, "double")):
        chunk = njit(error_model="numpy")(_decided_chunk(f, fast, k.arity).py_func)
        x = np.linspace(0.5, 2.0, 64).astype(dtype)
        chunk(np.empty_like(x), *([x] * k.arity), 0, x.size)
        ir = "\\n".join(chunk.inspect_llvm().values())
        body = [p for p in ir.split("\\ndefine ")[1:] if "_decided_chunk" in p.split("\\n", 1)[0]][0]
        assert re.search(rf"<\\d+ x {lanes}>", body), (name, lanes)
        if dtype == np.float64 and "--vector-indices" in sys.argv:
            # the table indices come from the vector registers: no scalar
            # double arithmetic in the vector loop's body
            vector_body = body.split("vector.body:", 1)[1].split("\\n\\n", 1)[0]
            scalar = re.findall(r"= (?:fmul|fadd|fsub|call double @llvm.fma.f64)[^<\\n]*double ", vector_body)
            assert not scalar, (name, scalar[:3])
print("vectorised")
"""


def _avx2_environment():
    """The environment in which a child process compiles for this host
    without AVX-512 (benchmarks/isa.py's AVX2 path)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "isa.py")
    spec = importlib.util.spec_from_file_location("benchmarks_isa", path)
    isa = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(isa)
    return isa.avx2_environment(os.environ)


@pytest.mark.skipif(launch.VECTOR_BITS != 512, reason="the host's own vectors are 256 bits: the tests above check them")
def test_launcher_loops_on_avx2():
    """The launcher's first loops of rsqrt (float32 and float64), compiled for
    the host without AVX-512 in a child process (benchmarks/isa.py's AVX2
    path): with its special values as branches, rsqrt's loop stayed scalar
    there while it vectorised with AVX-512, 8 to 12 times slower.  On Zen
    cores, also float64 exp's and exp2's: their table indices are computed
    in vector registers (without the launcher's target features, LLVM
    computed each in scalar registers there, up to 64% slower)."""
    import subprocess
    import sys

    env = _avx2_environment()
    result = subprocess.run([sys.executable, "-c", AVX2_CHECK, "rsqrt"], env=env, capture_output=True, text=True)
    assert result.returncode == 0 and "vectorised" in result.stdout, result.stderr[-3000:]
    if host_prefers_scalar_loads():
        # exp's and exp2's table indices: computed in vectors, extracted for the
        # scalar loads (softrep.cpu.launch._vector_hints)
        result = subprocess.run([sys.executable, "-c", AVX2_CHECK, "exp", "exp2", "--vector-indices"], env=env,
                                capture_output=True, text=True)
        assert result.returncode == 0 and "vectorised" in result.stdout, result.stderr[-3000:]


CHUNK_IR = """
import sys
import softrep
from softrep.cpu import launch
from softrep.tools.kernel_audit import cpu_llvm
assert launch.VECTOR_BITS == 256, launch.VECTOR_BITS
dispatcher, signatures = launch.KERNELS[f"elementwise.{sys.argv[1]}_kernel.decided_first64"].build()
print(cpu_llvm(dispatcher, signatures[0]))
"""


@pytest.mark.skipif(launch.VECTOR_BITS != 512, reason="the host's own vectors are 256 bits: the test above checks them")
@pytest.mark.parametrize("name", ("exp", "cos"))
def test_float64_first_loops_interleave_on_avx2(name):
    """`test_float64_first_loops_interleave` for exp and cos compiled for the
    host without AVX-512, in a child process (benchmarks/isa.py's AVX2
    path), where the interleaving matters most: LLVM alone interleaves none
    of the float64 first loops there."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", CHUNK_IR, name], env=_avx2_environment(), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    body = _function_ir(result.stdout, "_decided_chunk")
    steps = _vector_steps(body)
    assert steps and max(steps) == launch.FLOAT64_INTERLEAVE * _widest_lanes(body, "double"), steps
