#!/usr/bin/env bash
# Issue 38's H200 run, one device call: build the shims (CMake + Ninja, the toolkit's nvcc),
# lay out an aoti_shim package around them in $SITE (no pip: the package's Python files as
# the wheel maps them), then the attention tests and the speed table of
# tests/gpu/test_cuda_nn_gpu.py. Logs in $OUT as attn_run<N>_*.log. From the checkout root:
#
#     OUT=/tmp/out bash docs/gpu/results-2026-12-03/attn_h200.sh <N>
set -u
N=${1:-1}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
OUT=${OUT:-/tmp/attn-out}
SITE=${AOTI_SHIM_GPU_SITE:-/tmp/attn-site}
BUILD=${AOTI_SHIM_GPU_BUILD:-/tmp/attn-build}
mkdir -p "$OUT"
LOG=$OUT/attn_run${N}_00_build.log
export PYTHONUNBUFFERED=1
{
  echo "# issue 38 attention run $N, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit ${AOTI_SHIM_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -m pip list 2>/dev/null | grep -iE "^(hypothesis|pytest|cuda-bindings|scikit-build-core|cmake|ninja) " || true
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  echo "nvcc: $nvcc_bin"
  start=$(date +%s)
  rm -rf "$BUILD" "$SITE"
  timeout 300 cmake -S "$REPO/shims" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_FLAGS=--split-compile=0 -DCMAKE_CUDA_COMPILER="$nvcc_bin" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc_bin")")" &&
    timeout 300 cmake --build "$BUILD" -j 16 &&
    cmake --install "$BUILD" --prefix "$SITE" > /dev/null
  echo "build rc=$? in $(($(date +%s) - start)) s"
  # The wheel's package map (pyproject.toml's wheel.packages) by hand.
  cp -r "$REPO/src/aoti_shim/." "$SITE/aoti_shim/"
  for sub in checks plugin smoke; do cp -r "$REPO/$sub" "$SITE/aoti_shim/$sub"; done
  ls -la "$SITE/aoti_shim/lib"
} > "$LOG" 2>&1
tail -3 "$LOG"
export PYTHONPATH=$SITE
cd "$REPO" || exit 1
pytest_run() {  # name, timeout, pytest args...
  local name=$1 limit=$2
  shift 2
  timeout "$limit" python3 -m pytest -p no:cacheprovider -q -rs -s --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$@" > "$OUT/attn_run${N}_$name.log" 2>&1
  echo "$name rc=$?"
  grep -E "^(FAILED|ERROR) |passed|failed|error" "$OUT/attn_run${N}_$name.log" | tail -15
}
# The attention tests, then the speed table (it prints the worst errors of every group run before it).
pytest_run tests "${AOTI_SHIM_ATTN_TEST_S:-360}" tests/gpu/test_cuda_nn_gpu.py -k "sdpa or speed"
grep -E "^sdpa|^conv2d|^# worst" "$OUT/attn_run${N}_tests.log" | cut -c1-3000
