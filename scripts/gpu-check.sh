#!/usr/bin/env bash
# The one prepared check for a machine with an NVIDIA GPU; docs/gpu-report.md
# says how to run it and records its results.
#
#   1. environment: GPU, driver, package versions
#   2. the test suite on real CUDA tensors (SOFTREP_BACKEND=cuda): golden
#      vectors, CPU/GPU bit equality, op tests -- the same golden files the CPU
#      and the simulator reproduce
#   3. the demo with --device cuda: the published fingerprints, on a GPU
#   4. benchmarks/bench_gpu.py: softrep's CUDA kernels against torch on the same GPU
#
# Usage: bash scripts/gpu-check.sh [extra pytest args]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
pip install -q -e ".[cuda,test,demo]" || exit 1
echo "== environment"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || exit 1
python - <<'PY'
import numba, numba.cuda, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "| numba", numba.__version__,
      "| numba-cuda", getattr(numba.cuda, "__version__", "?"))
print("device:", torch.cuda.get_device_name(0), "cc", torch.cuda.get_device_capability(0))
PY
echo "== tests on the GPU (SOFTREP_BACKEND=cuda, CUDA tensors)"
SOFTREP_BACKEND=cuda SOFTREP_TEST_DEVICE=cuda python -m pytest -q -x -k "golden or bits or gpu" "$@" tests
tests_rc=$?
echo "== demo on the GPU (must print the README's reference fingerprints)"
timeout 300 python -m softrep demo --device cuda --no-progress
demo_rc=$?
echo "== GPU benchmarks (softrep vs torch on the same GPU)"
timeout 300 python benchmarks/bench_gpu.py || echo "(bench_gpu.py failed or timed out)"
echo "== summary: tests exit code $tests_rc, demo exit code $demo_rc"
[ "$tests_rc" -eq 0 ] && [ "$demo_rc" -eq 0 ]
