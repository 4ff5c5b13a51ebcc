#!/usr/bin/env bash
# Check softrep's "same bits on ARM" claim on an x86-64 machine, under qemu.
#
# On an x86-64 Debian/Ubuntu host (root for apt, network access to the Debian
# archive and PyPI) this script
#   1. installs qemu-user-static and mmdebstrap (apt-get, only if missing),
#   2. unpacks a minimal Debian 12 "bookworm" arm64 root (Python 3.11, libstdc++)
#      with `mmdebstrap --variant=extract` -- no binfmt_misc, no chroot needed,
#   3. puts aarch64 wheels (numpy, numba, llvmlite, torch CPU, scikit-learn,
#      pytest, ...; the exact pins are below) into that root's site-packages
#      with the host's pip (`--platform manylinux_2_28_aarch64 --no-deps`),
#   4. runs, under `qemu-aarch64-static -L <root>` from the repository root
#      (softrep comes from the checkout through PYTHONPATH):
#        a. the demo:                 python -m softrep demo --no-progress
#           (it must print the README's reference fingerprints),
#        b. the golden-vector tests:  python -m pytest -q tests -k "golden and not
#           test_twice_in_one_process_and_golden" (that one trains the full CNN and
#           transformer twice, an hour or more under emulation; the tiny-config
#           training golden test runs the same code paths),
#   5. prints a summary and exits non-zero if anything failed.
#
# Everything is cached in $SOFTREP_ARM_DIR (default ~/.cache/softrep-arm, about
# 2 GiB), so a second run skips steps 1-3.  The log goes to
# $SOFTREP_ARM_DIR/arm-check.log as well as to the terminal.
#
# Usage: bash scripts/arm-check.sh [extra pytest args]
#
# Environment:
#   SOFTREP_ARM_DIR      cache directory (default ~/.cache/softrep-arm)
#   ARM_CHECK_TESTS      pytest -k expression (default "golden and not
#                        test_twice_in_one_process_and_golden"; "golden" for all
#                        golden tests; "" skips the tests)
#   ARM_CHECK_DEMO=0     skip the demo
#   ARM_CHECK_CPU        an LLVM CPU name for Numba's code generation (NUMBA_CPU_NAME),
#                        e.g. neoverse-v2; default: what LLVM detects, which under
#                        qemu-user is "generic" (baseline ARMv8-A)
#   ARM_CHECK_FRESH=1    drop the compiled-kernel cache first (everything is
#                        compiled again for aarch64)
#   ARM_CHECK_TIMEOUT    seconds allowed for each of the two steps (default 5400)
#   DEBIAN_MIRROR        default http://deb.debian.org/debian
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${SOFTREP_ARM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/softrep-arm}
ROOT=$DIR/root
SUITE=bookworm
PYVER=3.11
SITE=$ROOT/usr/local/lib/python$PYVER/dist-packages
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
K=${ARM_CHECK_TESTS-golden and not test_twice_in_one_process_and_golden}
TIMEOUT=${ARM_CHECK_TIMEOUT:-5400}

# aarch64 wheels, pinned so that every run checks the same thing.  torch 2.10.0
# is the newest release whose PyPI aarch64 wheel is CPU-only (later ones are
# CUDA builds of 400 MiB that need NVIDIA's libraries).  numba-cuda needs the
# CUDA runtime library (nvidia-cuda-runtime) at import, even with no GPU.
WHEELS="
numpy==2.4.6 numba==0.68.1 llvmlite==0.50.0 torch==2.10.0
numba-cuda==0.30.4 cuda-bindings==13.5.0 cuda-core==1.2.2 cuda-pathfinder==1.9.1
nvidia-cuda-runtime==13.5.37 cloudpickle==3.1.3 packaging==26.4
filelock==4.3.1 fsspec==2026.9.0 jinja2==3.1.6 markupsafe==3.0.4 networkx==3.6.1
sympy==1.14.0 mpmath==1.3.0 typing-extensions==4.16.0 tqdm==4.70.1
scikit-learn==1.9.1 scipy==1.17.1 joblib==1.6.0 threadpoolctl==3.8.0 narwhals==2.29.0
pytest==9.2.0 iniconfig==2.3.1 pluggy==1.7.0 pygments==2.21.0
hypothesis==6.170.17 sortedcontainers==2.4.0 gmpy2==2.3.2 ml-dtypes==0.6.0
"
PLATFORMS="--platform manylinux_2_28_aarch64 --platform manylinux_2_27_aarch64
 --platform manylinux_2_24_aarch64 --platform manylinux_2_17_aarch64
 --platform manylinux2014_aarch64 --platform linux_aarch64"
PIPFLAGS="--no-deps --only-binary=:all: --python-version $PYVER --implementation cp --abi cp${PYVER/./}"

mkdir -p "$DIR" || exit 1
LOG=$DIR/arm-check.log
exec > >(tee "$LOG") 2>&1
TEE_PID=$!
# let tee write the last lines to the log before the script exits
trap 'exec >&- 2>&-; wait "$TEE_PID" 2>/dev/null' EXIT
T0=$(date +%s)
say() { echo "== $*"; }
die() { echo "arm-check: FAILED: $*"; exit 1; }
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

say "arm-check: repository $REPO, cache $DIR"
[ "$(uname -m)" = x86_64 ] || echo "(host is $(uname -m), not x86_64: going on anyway)"

# ---- 1. host tools -------------------------------------------------------
need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]} (apt-get)"
    [ "$(id -u)" -eq 0 ] || die "need root to apt-get install ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null \
        || die "apt-get install ${need[*]}"
fi
QEMU=$(command -v qemu-aarch64-static)
QEMU_VERSION=$("$QEMU" --version | head -1)

# ---- 2. Debian arm64 root --------------------------------------------------
if [ ! -x "$ROOT/usr/bin/python$PYVER" ]; then
    say "unpacking a Debian $SUITE arm64 root into $ROOT (mmdebstrap --variant=extract)"
    rm -rf "$ROOT"
    mmdebstrap --variant=extract --arch=arm64 \
        --include="base-files,python$PYVER-minimal,libpython$PYVER-stdlib,libstdc++6,libgcc-s1,libgomp1,libgfortran5" \
        "$SUITE" "$ROOT" "$MIRROR" >"$DIR/mmdebstrap.log" 2>&1 \
        || { tail -20 "$DIR/mmdebstrap.log"; die "mmdebstrap (log: $DIR/mmdebstrap.log)"; }
fi

# ---- 3. aarch64 wheels -------------------------------------------------------
stamp=$(echo "$WHEELS" | sha256sum | cut -c1-16)
if [ "$(cat "$SITE/.arm-check-stamp" 2>/dev/null)" != "$stamp" ]; then
    say "downloading aarch64 wheels into $DIR/wheels"
    rm -rf "$SITE"
    # shellcheck disable=SC2086
    python3 -m pip download -q -d "$DIR/wheels" $PIPFLAGS $PLATFORMS $WHEELS 2>&1 \
        | grep -v "^WARNING: Location .* is ignored"
    [ "${PIPESTATUS[0]}" -eq 0 ] || die "pip download of the aarch64 wheels"
    say "installing them into $SITE"
    # one pip call into an empty target: pip --target replaces whole top-level
    # folders, so installing the cuda-* namespace packages one by one loses files
    # shellcheck disable=SC2086
    python3 -m pip install -q --target "$SITE" --no-index --find-links "$DIR/wheels" \
        $PIPFLAGS $PLATFORMS $WHEELS 2>&1 | grep -v "^WARNING: \(Location .* is ignored\|Running pip as the 'root' user\)"
    [ "${PIPESTATUS[0]}" -eq 0 ] || die "pip install --target of the aarch64 wheels"
    echo "$stamp" >"$SITE/.arm-check-stamp"
fi

# ---- the emulated interpreter ------------------------------------------------
cat >"$DIR/python" <<EOF
#!/bin/sh
# aarch64 Python 3.11 from the Debian arm64 root, under qemu-user
exec "$QEMU" -L "$ROOT" "$ROOT/usr/bin/python$PYVER" "\$@"
EOF
chmod +x "$DIR/python"
PY=$DIR/python
[ "${ARM_CHECK_FRESH:-0}" = 1 ] && rm -rf "$DIR/kernels"
export PYTHONPATH=$REPO                     # softrep from this checkout
export SOFTREP_CACHE_DIR=$DIR/kernels       # aarch64 kernels, kept out of ~/.cache/softrep
export NUMBA_CACHE_DIR=$DIR/numba-cache
export PYTHONPYCACHEPREFIX=$DIR/pycache     # no aarch64 .pyc files in the checkout
export SOFTREP_BACKEND=cpu
export PYTHONUNBUFFERED=1 PYTHONNOUSERSITE=1
unset NUMBA_ENABLE_CUDASIM SOFTREP_TEST_DEVICE
[ -n "${ARM_CHECK_CPU:-}" ] && export NUMBA_CPU_NAME=$ARM_CHECK_CPU
cd "$REPO" || exit 1

DEBVER=$(cat "$ROOT/etc/debian_version" 2>/dev/null || echo "$SUITE")
REV=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
git --no-optional-locks diff --quiet HEAD -- 2>/dev/null || REV="$REV + uncommitted changes"
say "checkout $REV"
say "emulated environment ($QEMU_VERSION, Debian $DEBVER arm64)"
"$PY" - <<'PY' 2>&1 | tee "$DIR/env.out"
import os, platform, sys
import numpy, numba, llvmlite, llvmlite.binding as ll, torch, sklearn
print("machine", platform.machine(), "| python", platform.python_version(),
      "| numpy", numpy.__version__, "| numba", numba.__version__,
      "| llvmlite", llvmlite.__version__, "(LLVM %d.%d.%d)" % ll.llvm_version_info,
      "| torch", torch.__version__, "| scikit-learn", sklearn.__version__)
print("LLVM host CPU:", ll.get_host_cpu_name(),
      "| NUMBA_CPU_NAME:", os.environ.get("NUMBA_CPU_NAME", "(not set)"),
      "| torch threads:", torch.get_num_threads())
if platform.machine() != "aarch64":
    sys.exit("not running on aarch64")
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the emulated Python cannot import numpy/numba/torch"
ENV_LINE=$(grep '^machine ' "$DIR/env.out" | sed 's/^machine aarch64 | //')

# ---- a. the demo -----------------------------------------------------------------
demo_rc=0 demo_line="skipped" demo_match=""
if [ "${ARM_CHECK_DEMO:-1}" != 0 ]; then
    say "a. python -m softrep demo --no-progress under emulation"
    t=$(date +%s)
    rm -f "$DIR/demo.out"
    timeout "$TIMEOUT" "$PY" -m softrep demo --no-progress 2>&1 | tee "$DIR/demo.out"
    demo_rc=${PIPESTATUS[0]}
    # the README's table: | initial model | `<sha256>` |
    n_ref=0 n_seen=0
    while read -r ref; do
        n_ref=$((n_ref + 1))
        if grep -q "$ref" "$DIR/demo.out"; then n_seen=$((n_seen + 1)); fi
    done < <(grep -E '^\| (initial model|trained model|test logits) \|' README.md | grep -oE '[0-9a-f]{64}')
    demo_match="$n_seen of $n_ref README fingerprints printed"
    [ "$n_ref" -eq 3 ] && [ "$n_seen" -eq 3 ] || { [ "$demo_rc" -eq 0 ] && demo_rc=1; }
    demo_line="exit code $demo_rc, $demo_match [$(elapsed "$t")]"
fi

# ---- b. golden-vector tests ----------------------------------------------------
tests_rc=0 tests_line="skipped"
if [ -n "$K" ]; then
    say "b. golden-vector tests under emulation: pytest tests -k \"$K\" $*"
    t=$(date +%s)
    rm -f "$DIR/pytest.out"
    timeout "$TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider -rfE --durations=10 \
        tests -k "$K" "$@" 2>&1 | tee "$DIR/pytest.out"
    tests_rc=${PIPESTATUS[0]}
    [ "$tests_rc" -eq 124 ] && echo "(timed out after ${TIMEOUT}s)"
    tests_line="$(grep -E '^=* ?[0-9]+ (passed|failed|error)|(passed|failed|error).* in [0-9.]+s' "$DIR/pytest.out" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//') [$(elapsed "$t")]"
    failed_tests=$(grep -E '^(FAILED|ERROR) ' "$DIR/pytest.out" | sed 's/ - .*//')
fi

# ---- summary ---------------------------------------------------------------------
say "summary (aarch64 under $QEMU_VERSION; $ENV_LINE; total $(elapsed "$T0"))"
echo "demo: $demo_line"
[ "$demo_line" != skipped ] && grep -iE '[0-9a-f]{64}' "$DIR/demo.out" | sed 's/^/    /'
echo "tests (-k \"$K\"): exit code $tests_rc: $tests_line"
[ -n "${failed_tests:-}" ] && echo "$failed_tests" | sed 's/^/    /'
if [ "$tests_rc" -eq 0 ] && [ "$demo_rc" -eq 0 ]; then
    echo "arm-check: PASSED"
else
    echo "arm-check: FAILED"
    exit 1
fi
