"""Kernel audit: compile every kernel softrep can launch, for the CPU and for
CUDA, and reject any instruction that could make a result depend on the
machine, the compiler's mood or the launch (`python -m softrep audit-kernels`,
docs/audit.md).  No GPU is needed.

The kernels are those of the backends' registries (`softrep.cpu.launch.KERNELS`,
`softrep.cuda.launch.KERNELS`), each with the argument types of every launch it
can get; `load_kernels` imports the package so that every kernel has been
registered.

CPU: the optimized LLVM IR of each kernel (what Numba turns into machine code,
the parallel loop bodies and every function it calls included) must have

* no fast-math flag (`fast`, `contract`, `reassoc`, `afn`, `nnan`, `ninf`,
  `nsz`, `arcp`) on any instruction, and no fast-math function attribute
  (`"unsafe-fp-math"="true"`, ...);
* no denormal mode other than IEEE (`"denormal-fp-math"="preserve-sign"` is
  flush-to-zero);
* no `llvm.minnum` / `maxnum` / `minimum` / `maximum` (or their vector
  reductions);
* no call to a libm function (`exp`, `expf`, `pow`, ...), to an LLVM float
  intrinsic other than `llvm.fma`, `llvm.sqrt`, `llvm.fabs`, `llvm.copysign`,
  or to any other external function that takes or returns a float (but the
  Python C API, with which the kernel's Python entry point unboxes a float
  argument);
* no float arithmetic outside the plain IEEE instructions (`frem`, float
  `atomicrmw`).

CUDA, for each compute capability in CCS: the LLVM IR numba-cuda hands to NVVM
(what the source asked for), and the PTX NVVM makes of it (what the GPU runs):

* LLVM: no bare `fadd`/`fsub`/`fmul`/`fdiv`/`frem` on floats (NVVM contracts a
  bare multiply and add into an fma: with none left, every PTX fma was asked
  for); no fast-math flag (a `tail call fast` included); no LLVM math
  intrinsic (`llvm.fma`, `llvm.sqrt`, `llvm.exp`, ..., `llvm.minnum`, ...); no
  libdevice function other than the explicitly rounded arithmetic and bit casts,
  and no other external function (C++ linked in later, such as cuda_fp16's
  `__hadd`, is invisible to the audit); no `half`/`bfloat` value;
* PTX: every f32/f64 `add`, `sub`, `mul`, `div`, `fma`, `sqrt`, `rcp` carries a
  rounding modifier (`.rn`, `.rz`, `.rm`, `.rp`); no `.approx`, no `.ftz`, no
  approximate-only instruction (`ex2`, `lg2`, `sin`, `cos`, `tanh`, `rsqrt`);
  no float `mad`; no float `min`/`max`; no `.f16`/`.bf16` instruction.

* ptxas: the PTX assembles for the compute capability (nvJitLink, which
  numba-cuda's cu13 extra installs, runs ptxas without a GPU).  A kernel it
  refuses, such as one with more than 64 KiB of constant data, would not load
  on any GPU.

Compiling a CUDA kernel that calls device functions asks numba-cuda for the
current device's compute capability, which fails on a machine without a GPU;
`compute_capability(cc)` supplies it for the duration of the audit.
"""

import contextlib
import importlib
import pkgutil
import re
from dataclasses import dataclass

TARGETS = ("cpu", "cuda")
CCS = ((7, 5), (8, 0), (9, 0))  # CUDA 13's NVVM no longer targets 7.0 (Volta)

# --------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    kernel: str
    target: str  # "cpu" or "cuda"
    where: str  # "cpu", or the compute capability, "sm_90"
    signature: str  # the argument dtypes of the compiled launch
    stage: str  # "llvm", "ptx" or "ptxas"
    why: str
    line: str

    def __str__(self):
        return (f"{self.target} {self.kernel} ({self.signature}; {self.where}, {self.stage}): "
                f"{self.why}: {self.line.strip()}")


# --------------------------------------------------------------------------- LLVM IR rules

FAST_MATH_FLAGS = ("fast", "contract", "reassoc", "afn", "nnan", "ninf", "nsz", "arcp")
_FLAG_WORD = re.compile(r"\b(" + "|".join(FAST_MATH_FLAGS) + r")\b")
_FAST_MATH_ATTRIBUTE = re.compile(
    r'"(unsafe-fp-math|no-nans-fp-math|no-infs-fp-math|no-signed-zeros-fp-math|approx-func-fp-math|'
    r'less-precise-fpmad)"="true"')
_DENORMAL_ATTRIBUTE = re.compile(r'"(denormal-fp-math(?:-f32)?)"="([^"]*)"')
_QUOTED = re.compile(r'c?"(?:[^"\\]|\\.)*"')
_NAME = re.compile(r'[%@!#$][-\w.$]*')
_CALLEE = re.compile(r'\b(?:call|invoke)\b[^@]*@("(?:[^"\\]|\\.)*"|[-\w.$]+)\s*\(')
_FLOAT_TYPE = re.compile(r"\b(half|bfloat|float|double|x86_fp80|fp128|ppc_fp128)\b")
_MIN_MAX_INTRINSIC = re.compile(
    r"^llvm\.(minnum|maxnum|minimum|maximum|minimumnum|maximumnum|vector\.reduce\.f(min|max|minimum|maximum))\.")
_INTRINSIC_FLOAT_SUFFIX = re.compile(r"\.(v\d+)?(f16|bf16|f32|f64|f80|f128)\b")
# Intrinsics on floats a CPU kernel may call: IEEE 754 operations that are
# correctly rounded or exact, and moves of float data that compute nothing.
CPU_FLOAT_INTRINSICS = re.compile(
    r"^llvm\.(fma|sqrt|fabs|copysign|masked\.(load|store|gather|scatter|expandload|compressstore)|"
    r"vector\.(insert|extract|reverse|splice|interleave\d*|deinterleave\d*)|experimental\.vector\.\w+|"
    r"is\.fpclass)\.")
LIBM = frozenset(
    name + suffix
    for name in ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb", "pow", "sqrt", "cbrt",
                 "hypot", "sin", "cos", "tan", "sincos", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
                 "asinh", "acosh", "atanh", "erf", "erfc", "tgamma", "lgamma", "fmod", "remainder", "remquo",
                 "fma", "fmin", "fmax", "fdim", "ldexp", "frexp", "scalbn", "modf", "floor", "ceil", "trunc",
                 "round", "rint", "nearbyint", "lround", "lrint", "nextafter")
    for suffix in ("", "f", "l")
)
# The Python entry point of a kernel unboxes a float argument with
# PyFloat_AsDouble (exact); the kernel itself never calls the C API.
_PYTHON_C_API = re.compile(r"^_?Py[A-Z]\w*$")
_FLOAT_INSTRUCTION = re.compile(
    r"=\s*(frem)\b|\batomicrmw\b(?:\s+volatile)?\s+(fadd|fsub|fmax|fmin|fmaximum|fminimum)\b")


def _code(line):
    """An IR line without its string constants, names and comment: what is left
    are keywords, flags, types and literal numbers."""
    return _NAME.sub(" ", _QUOTED.sub(" ", line).split(";")[0])


def _is_instruction(line):
    stripped = line.lstrip()
    return bool(stripped) and line[:1].isspace() and not stripped.startswith((";", "!"))


def _functions(ir):
    """(names defined in the module, {declared name: its declaration line})."""
    defined, declared = set(), {}
    for line in ir.splitlines():
        if line.startswith(("define ", "declare ")):
            m = re.search(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)\s*\(', line)
            if m:
                name = m.group(1).strip('"')
                if line.startswith("define "):
                    defined.add(name)
                else:
                    declared[name] = line
    return defined, declared


def _fast_math_findings(ir):
    """(why, line) for every fast-math flag on an instruction, and every
    fast-math or flush-to-zero function attribute."""
    out = []
    for line in ir.splitlines():
        if line.startswith("attributes #"):
            for m in _FAST_MATH_ATTRIBUTE.finditer(line):
                out.append((f"fast-math function attribute {m.group(1)}", line))
            for m in _DENORMAL_ATTRIBUTE.finditer(line):
                if any(mode not in ("ieee", "") for mode in m.group(2).split(",")):
                    out.append((f"flush-to-zero ({m.group(1)}={m.group(2)})", line))
        elif _is_instruction(line):
            m = _FLAG_WORD.search(_code(line))
            if m:
                out.append((f"fast-math flag '{m.group(1)}'", line))
    return out


def check_cpu_llvm(ir):
    """(why, line) for every CPU rule the optimized LLVM IR `ir` breaks."""
    out = _fast_math_findings(ir)
    defined, declared = _functions(ir)
    for line in ir.splitlines():
        if not _is_instruction(line):
            continue
        m = _FLOAT_INSTRUCTION.search(_code(line))
        if m:
            what = m.group(1) or f"atomicrmw {m.group(2)}"
            why = "float remainder (frem)" if m.group(1) else f"float atomic ({what})"
            out.append((why, line))
        for callee in _CALLEE.findall(line):
            callee = callee.strip('"')
            if callee in defined:
                continue
            on_floats = bool(_FLOAT_TYPE.search(_code(declared.get(callee, ""))))
            if callee.startswith("llvm."):
                if _MIN_MAX_INTRINSIC.match(callee):
                    out.append((f"min/max intrinsic {callee}", line))
                elif ((on_floats or _INTRINSIC_FLOAT_SUFFIX.search(callee))
                      and not CPU_FLOAT_INTRINSICS.match(callee)):
                    out.append((f"LLVM float intrinsic {callee}", line))
            elif callee in LIBM:
                out.append((f"libm function {callee}", line))
            elif on_floats and not _PYTHON_C_API.match(callee):
                out.append((f"external function on floats {callee}", line))
    return out


_ALLOWED_LIBDEVICE = re.compile(
    r"__nv_(f|d)(add|sub|mul|div|sqrt|rcp)_r[ndzu]|__nv_fmaf?_r[ndzu]|"
    r"__nv_(float_as_int|int_as_float|double_as_longlong|longlong_as_double)"
)
_IR_BARE_FLOAT = re.compile(r"=\s*(fadd|fsub|fmul|fdiv|frem)\b[^=]*\b(float|double|half|bfloat)\b")
_IR_LLVM_MATH = re.compile(
    r"@\"?llvm\.(fma|fmuladd|sqrt|exp|exp2|exp10|log|log2|log10|sin|cos|pow|powi|tan|tanh|"
    r"minnum|maxnum|minimum|maximum|minimumnum|maximumnum|nvvm\.f(?:min|max))\.")
_IR_HALF = re.compile(r"\b(half|bfloat)\b")


def check_cuda_llvm(ir):
    """(why, line) for every CUDA rule the LLVM IR `ir` (before NVVM) breaks."""
    out = _fast_math_findings(ir)
    defined, _ = _functions(ir)
    for line in ir.splitlines():
        if not _is_instruction(line):
            continue
        if _IR_BARE_FLOAT.search(line):
            out.append(("bare float arithmetic (contractible)", line))
        m = _IR_LLVM_MATH.search(line)
        if m:
            out.append((f"LLVM math intrinsic llvm.{m.group(1)}", line))
        m = _IR_HALF.search(_code(line))
        if m:
            out.append((f"half-precision value ({m.group(1)})", line))
        for callee in _CALLEE.findall(line):
            callee = callee.strip('"')
            if callee in defined or callee.startswith("llvm."):
                continue
            if callee.startswith("__nv_"):
                if not _ALLOWED_LIBDEVICE.fullmatch(callee):
                    out.append((f"libdevice function {callee}", line))
            else:
                out.append((f"external function {callee} (code linked after the audit)", line))
    return out


# --------------------------------------------------------------------------- PTX rules

_PTX_FLOAT_OP = re.compile(r"^\s*(?:@!?%\w+\s+)?(add|sub|mul|div|fma|sqrt|rcp)((?:\.\w+)*)\.(f32|f64)\b")
_PTX_APPROX_ONLY = re.compile(r"^\s*(?:@!?%\w+\s+)?(ex2|lg2|sin|cos|tanh|rsqrt)\.")
_PTX_FLOAT_MAD = re.compile(r"^\s*(?:@!?%\w+\s+)?mad(?:\.\w+)*\.(f16|f16x2|bf16|bf16x2|f32|f64)\b")
_PTX_FLOAT_MIN_MAX = re.compile(r"^\s*(?:@!?%\w+\s+)?(min|max)(?:\.\w+)*\.(f16|f16x2|bf16|bf16x2|f32|f64)\b")
_PTX_HALF = re.compile(r"\.(b?f16(x2)?)\b")
_ROUNDING = {".rn", ".rz", ".rm", ".rp"}


def check_ptx(ptx):
    """(why, line) for every rule the PTX `ptx` breaks."""
    out = []
    for line in ptx.splitlines():
        code = line.split("//")[0]
        if ".approx" in code:
            out.append(("approximate instruction", line))
        if ".ftz" in code:
            out.append(("flush-to-zero", line))
        if _PTX_APPROX_ONLY.match(code):
            out.append(("approximate-only instruction", line))
        m = _PTX_FLOAT_OP.match(code)
        if m and not (set(re.findall(r"\.\w+", m.group(2))) & _ROUNDING):
            out.append(("float arithmetic without a rounding modifier", line))
        if _PTX_FLOAT_MAD.match(code):
            out.append(("float mad (contracted multiply-add)", line))
        if _PTX_FLOAT_MIN_MAX.match(code):
            out.append(("float min/max", line))
        m = _PTX_HALF.search(code)
        if m:
            out.append((f"half-precision instruction (.{m.group(1)})", line))
    return out


def assemble_ptx(ptx, cc):
    """(why, line) for every error ptxas reports on `ptx` assembled for compute
    capability cc (nvJitLink; no GPU needed); [] when it assembles.  ptxas
    runs without optimisation (-O0), which is quicker: what makes it refuse a
    kernel (its constant data, an instruction the architecture lacks, a
    malformed line) does not depend on how hard it optimises."""
    from cuda.bindings import nvjitlink

    options = [f"-arch=sm_{cc[0]}{cc[1]}{'a' if tuple(cc) >= (9, 0) else ''}", "-O0"]
    handle = nvjitlink.create(len(options), options)
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel.ptx")
        nvjitlink.complete(handle)
        return []
    except nvjitlink.nvJitLinkError:
        log = bytearray(nvjitlink.get_error_log_size(handle))
        nvjitlink.get_error_log(handle, log)
        lines = [line for line in bytes(log).decode(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()] or lines or ["(no log)"]
        return [("ptxas refuses the kernel", line) for line in errors]
    finally:
        nvjitlink.destroy(handle)


# --------------------------------------------------------------------------- compilation


def cpu_llvm(dispatcher, signature):
    """The optimized LLVM IR of a CPU kernel for `signature`: the module Numba
    compiles to machine code, with the parallel loop bodies and every function
    the kernel calls linked in.  Compiles the kernel if it is not compiled yet.

    Numba disables inspection of a kernel loaded from its on-disk cache, but
    the cache entry keeps this module (as the bitcode other kernels link
    against), and the library hands it out for linking."""
    signature = tuple(signature)
    dispatcher.compile(signature)
    library = dispatcher.overloads[signature].library
    return str(library._get_module_for_linking())


@contextlib.contextmanager
def compute_capability(cc):
    """Let CUDA device functions compile for `cc` on a machine without a GPU."""
    import numba.cuda.dispatcher as dispatcher

    class _Device:
        compute_capability = tuple(cc)

    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Device()
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


def cuda_compile(py_func, signature, cc):
    """(LLVM IR before NVVM, PTX) of a CUDA kernel's Python source for compute capability cc."""
    from numba.core import types
    from numba.cuda.compiler import compile_cuda

    with compute_capability(cc):
        cres = compile_cuda(py_func, types.void, tuple(signature), cc=cc, nvvm_options={"opt": 3})
        ir = cres.library.get_llvm_str()
        ptx = cres.library.get_asm_str(cc=(cc[0], cc[1], "a" if cc >= (9, 0) else ""))
    return ir, ptx


# --------------------------------------------------------------------------- the audit


def load_kernels(targets=TARGETS):
    """{target: {name: Kernel}}: every kernel registered once every module of
    the layers that build or launch kernels is imported (the ops get their
    launchers when they are defined; hand-written kernels are in the backends).
    Auditing CUDA needs numba-cuda (ImportError naming `softrep[cuda]` otherwise)."""
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise ValueError(f"targets must be among {', '.join(TARGETS)}; got {unknown}")
    from softrep import cpu, cuda, nn, ops, optim
    from softrep.cpu import launch as cpu_launch
    from softrep.cuda import launch as cuda_launch
    from softrep.primitives.jit import require_cuda

    packages = [cpu, ops, nn, optim]
    if "cuda" in targets:
        require_cuda()
        packages.append(cuda)
    for package in packages:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    registries = {"cpu": cpu_launch.KERNELS, "cuda": cuda_launch.KERNELS}
    return {t: dict(registries[t]) for t in targets}


def describe(signature):
    """'float32, float32' for a signature of float32 arrays."""
    return ", ".join(str(getattr(t, "dtype", t)) for t in signature)


def audit(targets=TARGETS, names=None, ccs=CCS, progress=None):
    """Compile and check the registered kernels of `targets` (only those named in
    `names`, when given); CUDA ones for each compute capability in `ccs`.
    `progress(target, name)` is called after each kernel.

    Returns (number of compilations, findings)."""
    kernels = load_kernels(targets)
    findings, count = [], 0
    for target in targets:
        for name in sorted(kernels[target]):
            if names is not None and name not in names:
                continue
            function, signatures = kernels[target][name].build()
            for signature in signatures:
                sig = describe(signature)
                if target == "cpu":
                    findings += [Finding(name, target, "cpu", sig, "llvm", why, line)
                                 for why, line in check_cpu_llvm(cpu_llvm(function, signature))]
                    count += 1
                    continue
                for cc in ccs:
                    ir, ptx = cuda_compile(function, signature, cc)
                    where = f"sm_{cc[0]}{cc[1]}"
                    findings += [Finding(name, target, where, sig, "llvm", why, line)
                                 for why, line in check_cuda_llvm(ir)]
                    findings += [Finding(name, target, where, sig, "ptx", why, line)
                                 for why, line in check_ptx(ptx)]
                    findings += [Finding(name, target, where, sig, "ptxas", why, line)
                                 for why, line in assemble_ptx(ptx, cc)]
                    count += 1
            if progress is not None:
                progress(target, name)
    return count, findings
