"""Run a benchmark with softrep and torch both limited to AVX2, on an AVX-512 host.

    python benchmarks/isa.py avx2 benchmarks/bench_training.py --steps 20

Both sides then run their AVX2 code on the same machine, in the same run:
* softrep: Numba compiles the kernels for the host CPU with every AVX-512
  (and AMX) feature turned off (`NUMBA_CPU_FEATURES`), so the products take
  the AVX2 register block and the vectorised loops 256-bit registers
  (`softrep.cpu.launch.host_vector_bits`, `softrep.cpu.linalg`);
* torch: its AVX2 kernels (`ATEN_CPU_CAPABILITY=avx2`), oneDNN's AVX2 code for
  convolutions (`ONEDNN_MAX_CPU_ISA=AVX2`) and MKL's for products
  (`MKL_ENABLE_INSTRUCTIONS=AVX2`);
* numpy, the reference where torch has no such function (float64 cbrt): its
  AVX-512 dispatch targets turned off (`NPY_DISABLE_CPU_FEATURES`), so that
  it runs its AVX2 code, or its scalar code where it has no AVX2 version.

The cores, caches and clock stay the host's: the ratios are those of the two
AVX2 code paths, which an AVX2 machine of another microarchitecture need not
reproduce exactly.  Before the benchmark, one line says which vector width
each side actually took.  Kernels compiled for these features are cached
beside the host's own (Numba keys its cache by CPU features).
"""

import os
import subprocess
import sys

from llvmlite import binding as llvm

ISAS = ("avx2",)
_WIDER = ("avx512", "amx", "avx10")  # feature-name prefixes above AVX2


def avx2_environment(environ):
    """`environ` with the variables that limit Numba and torch to AVX2."""
    features = llvm.get_host_cpu_features()
    if not features.get("avx2") or not features.get("fma"):
        raise SystemExit("isa.py avx2: this CPU has no AVX2 and FMA; nothing to limit")
    for name in features:
        if name.startswith(_WIDER):
            features[name] = False
    env = dict(environ)
    env["NUMBA_CPU_NAME"] = llvm.get_host_cpu_name()
    env["NUMBA_CPU_FEATURES"] = features.flatten()
    env["ATEN_CPU_CAPABILITY"] = "avx2"
    env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    env["MKL_ENABLE_INSTRUCTIONS"] = "AVX2"
    env["NPY_DISABLE_CPU_FEATURES"] = " ".join(numpy_wider_targets())
    return env


def numpy_wider_targets():
    """numpy's dispatch targets above AVX2 on this build: "X86_V4" and the
    "AVX512_*" groups (numpy >= 2.4), or "AVX512F", "AVX512_SKX", ... (older
    releases)."""
    return [name for name in _numpy_simd().__cpu_dispatch__ if name == "X86_V4" or name.startswith("AVX512")]


def _numpy_simd():
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath
    return _multiarray_umath


def describe():
    """Print the vector code each side takes in this process."""
    import torch
    from softrep.cpu.launch import VECTOR_BITS
    wider = [name for name in numpy_wider_targets() if _numpy_simd().__cpu_features__.get(name)]
    print(f"softrep: {VECTOR_BITS}-bit vectors; torch: {torch.backends.cpu.get_cpu_capability()}; "
          f"numpy: {' '.join(wider) if wider else 'up to AVX2'}")


def main(argv):
    if len(argv) < 2 or argv[0] not in ISAS:
        raise SystemExit(f"usage: python benchmarks/isa.py {{{','.join(ISAS)}}} SCRIPT [ARGS...]")
    env = avx2_environment(os.environ)
    check = f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import isa; isa.describe()"
    subprocess.run([sys.executable, "-c", check], env=env, check=True)
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *argv[1:]], env)


if __name__ == "__main__":
    main(sys.argv[1:])
