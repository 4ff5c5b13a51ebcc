#!/usr/bin/env bash
# Dependency matrix: the same bits from every supported compiler.
#
# For each row of a small matrix of pinned numba / llvmlite (LLVM) / numpy /
# numba-cuda / torch versions, this script
#
#   1. creates (or reuses) a virtual environment under $SOFTREP_DEPS_DIR,
#   2. installs exactly the pinned versions, then softrep itself from this
#      checkout with `pip install --no-deps -e .` (so the pins are what is tested),
#   3. prints the versions actually installed, including the LLVM version that
#      llvmlite was built with,
#   4. runs the golden-vector tests   python -m pytest -q -p no:cacheprovider tests -k golden
#      then the golden vectors of the CUDA kernels under Numba's CUDA simulator
#      (NUMBA_ENABLE_CUDASIM=1; `-k golden` alone skips them, they need their
#      own process), then `python -m softrep demo --no-progress`, which prints
#      the published fingerprints and exits non-zero if one differs.
#
# Every row starts from an empty softrep kernel cache (SOFTREP_CACHE_DIR inside
# the row's environment), so each row's kernels are compiled by that row's LLVM.
#
# Usage:
#   bash scripts/deps-matrix.sh                 # rows "oldest" and "newest"
#   bash scripts/deps-matrix.sh oldest          # one row
#   bash scripts/deps-matrix.sh 'mine=numba==0.61.2 llvmlite==0.44.0 numpy==2.0.2 numba-cuda[cu13]==0.22.2'
#                                               # a custom row: name=pip requirements
#
# Environment:
#   SOFTREP_DEPS_DIR        where the environments live (default ~/.cache/softrep-deps)
#   SOFTREP_DEPS_PYTHON     interpreter the environments are made from (default python3)
#   SOFTREP_DEPS_TORCH      torch requirement for every row (default torch==2.13.0)
#   SOFTREP_DEPS_FRESH=1    delete and recreate each row's environment
#   SOFTREP_DEPS_SIMULATOR=0  skip the simulator golden vectors
#
# Exit status: 0 when every row passes, 1 otherwise.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${SOFTREP_DEPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/softrep-deps}
PYTHON=${SOFTREP_DEPS_PYTHON:-python3}
TORCH=${SOFTREP_DEPS_TORCH:-torch==2.13.0}
SIMULATOR=${SOFTREP_DEPS_SIMULATOR:-1}
# What the golden tests and the demo import besides softrep's own dependencies.
TEST_DEPS="pytest hypothesis mpmath gmpy2 ml_dtypes scikit-learn tqdm"
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

PYVER=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || {
    echo "deps-matrix: cannot run $PYTHON" >&2
    exit 2
}

# The declared floors, as far as wheels exist for this Python:
#   numba 0.60.0 (llvmlite 0.43.0, LLVM 14) has wheels for Python 3.9-3.12;
#   numpy 1.24/1.25 have no wheels for 3.12 (1.26.0 is the first), and for
#   3.13 the first wheels are numba 0.61.0 (llvmlite 0.44.0) and numpy 2.1.0.
#   numba-cuda 0.21.1 is the oldest release with numba.cuda.extending.overload,
#   which softrep's jit helpers use (0.20.x fails at `import softrep`).
case "$PYVER" in
    3.10 | 3.11) OLDEST="numba==0.60.0 llvmlite==0.43.0 numpy==1.24.0 numba-cuda[cu13]==0.21.1" ;;
    3.12) OLDEST="numba==0.60.0 llvmlite==0.43.0 numpy==1.26.0 numba-cuda[cu13]==0.21.1" ;;
    3.13) OLDEST="numba==0.61.0 llvmlite==0.44.0 numpy==2.1.0 numba-cuda[cu13]==0.21.1" ;;
    *) OLDEST="" ;;  # not worked out for this Python: give a custom row
esac
# Newest: whatever pip resolves today (installed with --upgrade).
NEWEST="numba llvmlite numpy numba-cuda[cu13]"

row_reqs() {
    case "$1" in
        oldest) [ -n "$OLDEST" ] && echo "$OLDEST" ;;
        newest) echo "$NEWEST" ;;
        *=*) echo "${1#*=}" ;;
        *) return 1 ;;
    esac
}

# pytest's last line: "40 passed, 8 skipped, 1577 deselected in 150.2s".
summary() {
    local line
    line=$(grep -E " in [0-9.]+s" "$1" | tail -1 | sed -E 's/^=+ //; s/ =+$//; s/ in [0-9.]+s.*$//')
    echo "${line:-no pytest summary, see $1}"
}

ROWS=("$@")
[ ${#ROWS[@]} -eq 0 ] && ROWS=(oldest newest)

mkdir -p "$CACHE" || exit 2
echo "deps-matrix: softrep at $ROOT"
echo "deps-matrix: environments under $CACHE, Python $PYVER ($("$PYTHON" -c 'import sys; print(sys.executable)'))"
echo "deps-matrix: torch requirement for every row: $TORCH"
SUMMARY=()
overall=0
t_all=$SECONDS

for spec in "${ROWS[@]}"; do
    name=${spec%%=*}
    if ! reqs=$(row_reqs "$spec"); then
        echo "deps-matrix: unknown row '$spec' (oldest, newest, or name=requirements;" \
            "oldest is defined for Python 3.10 to 3.13)" >&2
        overall=1
        SUMMARY+=("$name: unknown row")
        continue
    fi
    t_row=$SECONDS
    venv="$CACHE/$name-py$PYVER"
    logdir="$venv/logs"
    echo
    echo "================================================================ row $name"
    echo "requirements: $reqs $TORCH"
    [ "${SOFTREP_DEPS_FRESH:-0}" = 1 ] && rm -rf "$venv"
    if [ ! -x "$venv/bin/python" ]; then
        "$PYTHON" -m venv "$venv" || { SUMMARY+=("$name: venv failed"); overall=1; continue; }
    fi
    py="$venv/bin/python"
    mkdir -p "$logdir"
    upgrade=()
    [ "$name" = newest ] && upgrade=(--upgrade)
    # shellcheck disable=SC2086  # $reqs is a list of requirements
    if ! "$py" -m pip install -q "${upgrade[@]}" $reqs "$TORCH" $TEST_DEPS >"$logdir/pip.log" 2>&1 \
        || ! "$py" -m pip install -q --no-deps -e "$ROOT" >>"$logdir/pip.log" 2>&1; then
        tail -20 "$logdir/pip.log"
        echo "row $name: FAIL (install, log in $logdir/pip.log)"
        SUMMARY+=("$name: install failed")
        overall=1
        continue
    fi
    echo "install: $((SECONDS - t_row)) s"
    versions=$("$py" - <<'PY'
import importlib.metadata as md
import llvmlite.binding as llb

def v(dist):
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "-"

llvm = ".".join(map(str, llb.llvm_version_info))
print(f"numba {v('numba')} | llvmlite {v('llvmlite')} (LLVM {llvm}) | numpy {v('numpy')} | "
      f"numba-cuda {v('numba-cuda')} | torch {v('torch')}")
PY
    ) || versions="(could not import numba/llvmlite)"
    echo "versions: $versions"
    cuda_from=$("$py" -c 'import numba.cuda as c; print(c.__file__)' 2>&1 | tail -1)
    echo "numba.cuda: $cuda_from"

    # Fresh kernel cache per row: every kernel compiled by this row's LLVM.
    export SOFTREP_CACHE_DIR="$venv/softrep-cache"
    rm -rf "$SOFTREP_CACHE_DIR"
    row_ok=1
    cd "$ROOT" || exit 2

    echo "-- golden vectors (CPU): pytest tests -k golden"
    t=$SECONDS
    "$py" -m pytest -q -p no:cacheprovider tests -k golden >"$logdir/golden.log" 2>&1
    rc=$?
    golden=$(summary "$logdir/golden.log")
    echo "$golden (exit $rc, $((SECONDS - t)) s)"
    if [ $rc -ne 0 ]; then
        row_ok=0
        grep -E "^(FAILED|ERROR)|Error" "$logdir/golden.log" | head -20
    fi

    sim="skipped"
    if [ "$SIMULATOR" = 1 ]; then
        echo "-- golden vectors (CUDA simulator): NUMBA_ENABLE_CUDASIM=1 pytest -m simulator tests -k golden"
        t=$SECONDS
        NUMBA_ENABLE_CUDASIM=1 SOFTREP_BACKEND=cuda \
            "$py" -m pytest -q -p no:cacheprovider -m simulator tests -k golden >"$logdir/simulator.log" 2>&1
        rc=$?
        sim=$(summary "$logdir/simulator.log")
        echo "$sim (exit $rc, $((SECONDS - t)) s)"
        if [ $rc -ne 0 ]; then
            row_ok=0
            grep -E "^(FAILED|ERROR)|Error" "$logdir/simulator.log" | head -20
        fi
    fi

    echo "-- demo: python -m softrep demo --no-progress"
    t=$SECONDS
    "$py" -m softrep demo --no-progress >"$logdir/demo.log" 2>&1
    rc=$?
    cat "$logdir/demo.log"
    if [ $rc -eq 0 ]; then demo="fingerprints match"; else demo="FAILED (exit $rc)"; row_ok=0; fi
    echo "demo: $demo ($((SECONDS - t)) s)"

    verdict=PASS
    [ $row_ok -eq 1 ] || { verdict=FAIL; overall=1; }
    echo "row $name: $verdict ($((SECONDS - t_row)) s)"
    SUMMARY+=("$name: $verdict | $versions | golden: $golden | simulator golden: $sim | demo: $demo | $((SECONDS - t_row)) s")
done

echo
echo "================================================================ summary (Python $PYVER, $((SECONDS - t_all)) s)"
printf '%s\n' "${SUMMARY[@]}"
exit $overall
