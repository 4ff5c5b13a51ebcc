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
