#!/usr/bin/env python
"""SHA-256 of a math function's float32 outputs over all 2^32 inputs, computed
by the code of an arbitrary commit.

`python -m softrep verify FUNC --hash` compares the current code's outputs with
softrep/tools/data/mathlib_output_sha256.json.  This script computes the same
digest (the outputs as little-endian uint32, input i = the float32 with bits i)
with the package as it was at COMMIT, through its public op `softrep.FUNC` on
the CPU, so that an exhaustive proof recorded on an older commit can be tied to
the recorded hash: equal digests mean the proven outputs are today's outputs.

Usage:  python scripts/hash-at-commit.py COMMIT FUNC [FUNC ...]

It checks COMMIT out into a temporary git worktree, runs there with its own
kernel cache, and prints one line per function: commit, function, digest, and
whether it equals the recorded hash.  Exit status 1 if any digest differs.
Unary functions only (pow and hypot have no exhaustive proof).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HASH_FILE = os.path.join(ROOT, "softrep", "tools", "data", "mathlib_output_sha256.json")
CHUNK = 1 << 24

# Runs inside the checked-out commit: only its public API is used.
CHILD = r"""
import hashlib, sys, time
import numpy as np, torch
import softrep
name, chunk = sys.argv[1], int(sys.argv[2])
fn = getattr(softrep, name)
digest = hashlib.sha256()
t0 = time.time()
for start in range(0, 2**32, chunk):
    bits = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32)
    out = fn(torch.from_numpy(bits.view(np.float32))).numpy()
    assert out.dtype == np.float32 and out.shape == bits.shape
    digest.update(np.ascontiguousarray(out).view(np.uint32).astype("<u4").tobytes())
print(digest.hexdigest(), round(time.time() - t0))
"""


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    commit, names = argv[0], argv[1:]
    with open(HASH_FILE) as f:
        recorded = json.load(f)["sha256"]
    unknown = [n for n in names if n not in recorded]
    if unknown:
        sys.exit(f"hash-at-commit: no recorded hash for {', '.join(unknown)}")
    full = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", commit + "^{commit}"],
                          capture_output=True, text=True)
    if full.returncode:
        sys.exit(f"hash-at-commit: unknown commit {commit!r}")
    commit = full.stdout.strip()
    failed = False
    with tempfile.TemporaryDirectory(prefix="softrep-hash-") as tmp:
        tree = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", tree, commit], check=True)
        try:
            env = dict(os.environ, PYTHONPATH=tree, SOFTREP_CACHE_DIR=os.path.join(tmp, "cache"),
                       XDG_CACHE_HOME=os.path.join(tmp, "xdg"))
            for name in names:
                out = subprocess.run([sys.executable, "-c", CHILD, name, str(CHUNK)], cwd=tree, env=env,
                                     capture_output=True, text=True)
                if out.returncode:
                    print(f"{commit[:7]} {name}: failed\n{out.stderr[-2000:]}", flush=True)
                    failed = True
                    continue
                digest, seconds = out.stdout.split()[-2:]
                same = digest == recorded[name]
                failed |= not same
                verdict = "equals the recorded hash" if same else f"DIFFERS from the recorded {recorded[name]}"
                print(f"{commit[:7]} {name:8s} {digest}  {verdict}  ({seconds} s)", flush=True)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], check=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
