#!/usr/bin/env bash
# The model zoo (issue 14) on the H200, one phase per device call (each fits in ~540 s):
#
#     bash docs/gpu/zoo_h200.sh f32      # float32: the fallback ops' GPU tests, then the zoo
#     bash docs/gpu/zoo_h200.sh bf16     # bfloat16: the zoo
#
# Every zoo model (aoti_shim.smoke.zoo: resnet18, mobilenet_v3_small, vit_tiny, gpt2,
# bert, llama) on both routes plus the control, in the zero-fallback compile (the smoke's
# autotuned one) and the default compile (`aoti-shim smoke --compile default`: Inductor
# without autotuning and with PyTorch's own attention, so the shims' cuBLAS, cuDNN and
# attention fallbacks run). The two compiles run side by side, one per GPU where there are
# two, each compiling every model and route at once (docs/gpu/zoo_run.py);
# AOTI_SHIM_ZOO_POLICIES picks them ("default" alone, say). AOTI_SHIM_ZOO_BENCH=1 then runs
# bench/shim_latency.py's (a)/(b) on the default compile's blobs (AOTI_SHIM_ZOO_BENCH_MODELS,
# default: every zoo model; AOTI_SHIM_ZOO_BENCH_ARGS adds options, e.g. --no-graph). Installs aoti-shim into $SITE first unless it is importable
# (run_h200.sh's install, for a fresh machine). What comes back in $OUT (flat):
#   zoo_00_run.log                  header, installs, step summary
#   zoo_<phase>.log                 the fallback ops' tests (f32), the zoo runs' progress and tables
#   zoo_<phase>_zero-fallback.json  per model: compiles (seconds, fallbacks), smoke rows
#   zoo_<phase>_default.json        the same for the default compile
#   zoo_<phase>_bench.log, .json    the bench on the default compile (AOTI_SHIM_ZOO_BENCH=1)
#
# CPU rehearsal (small subset, this machine's python):
#     AOTI_SHIM_GPU_DEVICE=cpu AOTI_SHIM_GPU_PYTHON=.venv/bin/python AOTI_SHIM_ZOO_MODELS="gpt2 bert" \
#         bash docs/gpu/zoo_h200.sh f32
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/aoti-shim-gpu-out}
BUDGET_S=${AOTI_SHIM_GPU_BUDGET_S:-540}
SITE=${AOTI_SHIM_GPU_SITE:-/tmp/site}
WORK=${AOTI_SHIM_GPU_WORK:-/tmp/aoti-shim-gpu-work}
CACHE=${AOTI_SHIM_GPU_CACHE:-/tmp/aoti-shim-gpu-cache}
DEVICE=${AOTI_SHIM_GPU_DEVICE:-cuda}
PYTHON=${AOTI_SHIM_GPU_PYTHON:-python3}
MODELS=${AOTI_SHIM_ZOO_MODELS:-}  # empty: every zoo model
POLICIES=${AOTI_SHIM_ZOO_POLICIES:-zero-fallback default}
START=$(date +%s)
mkdir -p "$OUT" "$WORK" "$CACHE"
RUN_LOG=$OUT/zoo_00_run.log
declare -a SUMMARY=()

# remaining, step: the steps' shared time budget.
STEP_NAME_WIDTH=34
source "$REPO/docs/gpu/steps.sh"

# aoti-shim is importable and its shims are this checkout's (same manifest: an older
# install in $SITE would lack the zoo's fallback ops).
installed() {
  "$PYTHON" - "$REPO/shims/manifest.txt" > /dev/null 2>&1 <<'EOF'
import sys
from pathlib import Path
from aoti_shim.paths import shim_library
ours = (shim_library().parent / "aoti_shim_manifest.txt").read_text()
sys.exit(0 if ours == Path(sys.argv[1]).read_text() else 1)
EOF
}

install_all() {
  # As run_h200.sh: the carried wheels, then aoti-shim without build isolation (no network).
  local cuda_home=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$cuda_home/bin/nvcc" ] || cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
  if compgen -G "$REPO/.whl/*.whl" > /dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$REPO"/.whl/*.whl || return $?
  fi
  CUDAToolkit_ROOT=$cuda_home CMAKE_BUILD_PARALLEL_LEVEL=16 \
    "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --upgrade --target "$SITE" "$REPO" || return $?
  "$PYTHON" -c "from aoti_shim.paths import shim_library; print('installed shims:', shim_library())"
}

# zoo_phase DTYPE PHASE: both compiles side by side (one GPU each when there are two).
zoo_phase() {
  local dtype=$1 phase=$2 left budget gpus second pids=() policy gpu
  left=$(remaining)
  # Leave time for the smoke runs after the compiles (about 10 s per model and policy).
  budget=$((left - 150))
  ((budget > ${AOTI_SHIM_ZOO_COMPILE_BUDGET:-330})) && budget=${AOTI_SHIM_ZOO_COMPILE_BUDGET:-330}
  ((budget < 30)) && budget=30
  gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2> /dev/null || echo 0)
  second=0
  ((gpus > 1)) && second=1
  for policy in $POLICIES; do
    gpu=0
    [ "$policy" = default ] && gpu=$second
    # shellcheck disable=SC2086 # MODELS is a list of names
    CUDA_VISIBLE_DEVICES=$gpu TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-2} \
      "$PYTHON" "$REPO/docs/gpu/zoo_run.py" --device "$DEVICE" --dtype "$dtype" --policy "$policy" \
      --cache-dir "$CACHE" --json "$OUT/zoo_${phase}_${policy}.json" --jobs "${AOTI_SHIM_ZOO_JOBS:-10}" \
      --compile-budget "$budget" $MODELS > "$WORK/zoo_${phase}_${policy}.out" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  for policy in $POLICIES; do
    echo "---- $dtype, $policy compile"
    cat "$WORK/zoo_${phase}_${policy}.out"
  done
  return $rc
}

fallback_tests() {
  # -s: the nn tests print their worst errors and their speed against torch's kernels.
  "$PYTHON" -m pytest -p no:cacheprovider -q -rs -s --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$REPO/tests/gpu/test_cublas_fallbacks_gpu.py" "$REPO/tests/gpu/test_cuda_nn_gpu.py"
}

# The bench's (a)/(b) on the default compile's blobs (the zoo filled the cache).
default_bench() {
  local dtype=$1 phase=$2 name args=()
  for name in ${AOTI_SHIM_ZOO_BENCH_MODELS:-${MODELS:-resnet18 mobilenet_v3_small vit_tiny gpt2 bert llama}}; do
    args+=(--model "aoti_shim.smoke.zoo:$name$([ "$dtype" = bfloat16 ] && echo _bf16)")
  done
  "$PYTHON" "$REPO/bench/shim_latency.py" --device "$DEVICE" --compile default --cache-dir "$CACHE" --no-twin \
    --rounds "${AOTI_SHIM_ZOO_BENCH_ROUNDS:-20}" --iterations 20 ${AOTI_SHIM_ZOO_BENCH_ARGS:-} "${args[@]}" --json "$OUT/zoo_${phase}_bench.json"
}

export REPO OUT SITE WORK CACHE DEVICE PYTHON MODELS POLICIES START BUDGET_S
export -f remaining install_all zoo_phase fallback_tests default_bench installed

PHASE=${1:-f32}
case $PHASE in
  f32) DTYPE=float32 ;;
  bf16) DTYPE=bfloat16 ;;
  *) echo "zoo_h200.sh: phase must be f32 or bf16, got $PHASE" >&2; exit 2 ;;
esac
cd "$WORK" || exit 1
export PYTHONPATH=$SITE:$REPO/docs/gpu${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
{
  echo "# aoti-shim zoo run (issue 14), phase $PHASE"
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: ${AOTI_SHIM_COMMIT:-$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  "$PYTHON" - <<'EOF'
import importlib.metadata as md
for name in ("torch", "torchvision", "timm", "transformers", "triton", "nvidia-cublas", "nvidia-cublas-cu12"):
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name}: not installed")
EOF
} >> "$RUN_LOG" 2>&1
installed || step "install aoti-shim" 200 "$RUN_LOG" install_all
LOG=$OUT/zoo_$PHASE.log
[ "$PHASE" = f32 ] && [ "$DEVICE" = cuda ] && step "gpu tests: fallback ops" 150 "$LOG" fallback_tests
step "zoo $DTYPE ($POLICIES)" "${AOTI_SHIM_ZOO_STEP_S:-600}" "$LOG" zoo_phase "$DTYPE" "$PHASE"
[ "${AOTI_SHIM_ZOO_BENCH:-0}" = 1 ] && step "bench (a)/(b), default compile" 300 "$OUT/zoo_${PHASE}_bench.log" default_bench "$DTYPE" "$PHASE"

{
  echo
  echo "# summary (exit 124 = timed out), total $(($(date +%s) - START))s of ${BUDGET_S}s"
  printf '%s\n' "${SUMMARY[@]}"
} >> "$RUN_LOG"
sed -n '/^# summary/,$p' "$RUN_LOG"
# The tables (zoo_run.py prints each after its "# zoo" line).
awk '/^# zoo / {on = 1} /^zoo: / {on = 0} /^(----|==) / {on = 0} on' "$LOG"
