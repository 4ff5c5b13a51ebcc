"""Kernels compile once: a second process loads them from the on-disk cache,
and the cache key follows the softrep source tree."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, torch, softrep
from softrep.primitives import rounding as R
from softrep.cpu import launch
softrep.add(torch.ones(100000), torch.ones(100000), rounding="up")  # above the serial path's size
d = launch.elementwise(R.add_ru, 2)
print(json.dumps({"hits": sum(d.stats.cache_hits.values()), "misses": sum(d.stats.cache_misses.values()),
                  "dir": softrep.primitives.jit.cache_dir()}))
"""


def _run(cache_dir):
    env = dict(os.environ, SOFTREP_CACHE_DIR=str(cache_dir))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_kernels_from_cache(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert first["misses"] == 1 and first["hits"] == 0
    assert second["misses"] == 0 and second["hits"] == 1
    assert first["dir"].startswith(str(tmp_path))


def test_cache_directory_is_keyed_by_the_source_hash(tmp_path):
    import softrep

    assert softrep.primitives.jit.cache_dir().endswith(softrep.primitives.jit.SOURCE_HASH)
    assert len(softrep.primitives.jit.SOURCE_HASH) == 16


def test_only_modules_marked_no_kernels_are_left_out_of_the_source_hash():
    from softrep.primitives import jit as _jit

    marked = b'# softrep: no kernels\n"""Layers."""\n'
    assert _jit._holds_no_kernels(marked)
    assert not _jit._holds_no_kernels(b'"""Kernels."""\n' + b"x = 1\n" * 5 + b"# softrep: no kernels\n")
    assert not _jit._holds_no_kernels(b"# softrep: no kernels in here? no: this is prose\n")
    # Every module that defines or launches a kernel stays in the hash.
    import pathlib

    for path in pathlib.Path(_jit._PKG_DIR).rglob("*.py"):
        source = path.read_bytes()
        if _jit._holds_no_kernels(source):
            assert b"jitable" not in source and b"numba" not in source, path


KEYS = r"""
import json
from softrep.tools.kernel_audit import load_kernels
keys = {}
for name, k in load_kernels(("cpu",))["cpu"].items():
    dispatcher, signatures = k.build()
    cache = getattr(dispatcher, "_cache", None)
    if hasattr(cache, "_index_key"):
        keys[name] = [repr(cache._index_key(s, dispatcher.targetctx.codegen())) for s in signatures]
print(json.dumps(keys))
"""


def test_every_kernel_has_one_cache_key_in_every_process():
    """The key a kernel is cached under (signature, CPU, bytecode, closure
    variables) is the same in two processes, for every registered CPU kernel.
    Kernels made by a factory capture compiled functions in their closures,
    whose pickle Numba hashes; a key that changed from one process to the
    next would compile the kernel again in every process (seconds for each
    math function, about 14 s for the parallel tree product)."""
    runs = []
    for _ in range(2):
        env = dict(os.environ)
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        out = subprocess.run([sys.executable, "-c", KEYS], env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert len(runs[0]) > 200 and "linalg.tree_blocks.float32" in runs[0]
    changed = sorted(name for name in runs[0] if runs[0][name] != runs[1].get(name))
    assert not changed, f"{len(changed)} kernels get a new cache key in every process: {changed[:5]}"


def test_closures_of_one_factory_compiled_apart_load_together(tmp_path):
    """Two closures of one kernel factory (the math launchers' parallel loops),
    each compiled first thing in a process of its own, are both cached; a
    process that loads both runs each one's own code.  With Numba's
    per-process function counter their symbols were the same, and softrep.exp
    ran log's loop in the last process."""
    env = dict(os.environ, SOFTREP_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    prelude = "import torch, softrep\nx = torch.rand(10**6) + 0.5\n"
    steps = ["softrep.add(x, x); softrep.sum(x)",  # what both processes below then load
             "softrep.exp(x)", "softrep.log(x)",
             "assert torch.allclose(softrep.log(x), torch.log(x)), 'log'\n"
             "assert torch.allclose(softrep.exp(x), torch.exp(x)), 'exp'\nprint('ok')"]
    for step in steps:
        out = subprocess.run([sys.executable, "-c", prelude + step], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "ok"


AUDIT_FIRST = r"""
import re, softrep
from softrep.cpu.launch import KERNELS
from softrep.tools.kernel_audit import cpu_llvm
compiled, signatures = KERNELS["linalg.serial_product.float32"].build()
print(len(re.findall(r"call [^@\n]*@llvm\.fma\.v\d+f32\(", cpu_llvm(compiled, signatures[0]))))
"""


def test_the_micro_kernels_vectorise_whoever_compiles_them_first(tmp_path):
    """The kernels that run the micro-kernel need LLVM's SLP vectorizer while
    they compile (softrep.cpu.linalg.compiled_with_slp), and what compiles
    first is cached for every later process.  Compiled first by the kernel
    audit, in a fresh cache, the serial product still gets vector fmas (it
    had none when only its callers turned the vectorizer on)."""
    env = dict(os.environ, SOFTREP_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", AUDIT_FIRST], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip().splitlines()[-1]) > 0
