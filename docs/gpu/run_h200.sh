#!/usr/bin/env bash
# The GPU run of issue 7, in one device call on the H200 (torch 2.11+cu130, Python 3.12
# at python3, CUDA 13.0 toolkit, no network). Run from anywhere inside the checkout:
#
#     bash docs/gpu/run_h200.sh        # with the git-ignored .whl/ carried along
#
# A CPU rehearsal (no GPU, no .whl/): a venv with aoti-shim's build and test dependencies
# first on PATH, and scratch folders of one's own (the defaults are shared under /tmp):
#
#     PATH=$PWD/.venv/bin:$PATH AOTI_SHIM_GPU_DEVICE=cpu AOTI_SHIM_GPU_SITE=/tmp/me/site \
#       AOTI_SHIM_GPU_WORK=/tmp/me/work AOTI_SHIM_GPU_CACHE=/tmp/me/cache OUT=/tmp/me/out \
#       AOTI_SHIM_GPU_BUDGET_S=3000 bash docs/gpu/run_h200.sh core
#
# The "tests" phase alone, with AOTI_SHIM_GPU_SITE naming the venv's site-packages (where
# aoti-shim is installed, so nothing is installed): tests/test_gpu_kit.py runs that in CI.
#
# Every step is time-limited and the script goes on past a failing one; each step's
# exit status is logged and summarised at the end of 00_run.log. What comes back in
# $OUT (8 files at most, flat):
#   00_run.log             header (date, GPU, driver, versions), installs, summary
#   01_shim_tests.log      the shims' C++ unit tests, CUDA ones included
#   02_smoke.log           compile prewarm, aoti-shim smoke float32 and bfloat16
#   smoke.json             aoti-shim smoke --device cuda --json (float32)
#   smoke_bf16.json        the same for the bfloat16 variants
#   03_gpu_tests.log       pytest tests/gpu (CUDA kernels vs torch, caller-stream contract, concurrent blobs, two GPUs)
#   04_bench.log           bench/shim_latency.py --device cuda (intervals, shim profile table)
#   cuda_artefacts.tar.gz  the CUDA MLP's package_cpp_only package (for CPU-side tests), bench.json
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/aoti-shim-gpu-out}       # the device call sets OUT
BUDGET_S=${AOTI_SHIM_GPU_BUDGET_S:-540}  # the device call allows 600 s
SITE=${AOTI_SHIM_GPU_SITE:-/tmp/site}    # carried wheels and aoti-shim are installed here (--target)
# Scratch folder for the Python steps' files.
WORK=${AOTI_SHIM_GPU_WORK:-/tmp/aoti-shim-gpu-work}
CACHE=${AOTI_SHIM_GPU_CACHE:-/tmp/aoti-shim-gpu-cache}  # the smoke compile cache, shared by every step
DEVICE=${AOTI_SHIM_GPU_DEVICE:-cuda}  # cpu: a rehearsal of the whole script on a machine without a GPU
WHEELS=${AOTI_SHIM_GPU_WHEELS:-$REPO/.whl}  # the carried wheels (the device call's carry=[".whl"])
START=$(date +%s)
mkdir -p "$OUT" "$WORK" "$CACHE"
RUN_LOG=$OUT/00_run.log
: > "$RUN_LOG"
declare -a SUMMARY=()

# remaining, step: the steps' shared time budget.
source "$REPO/docs/gpu/steps.sh"

header() {
  echo "# aoti-shim GPU run (issue 7)"
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  # The device copy's .git can lag the tree it was sent: the caller may name the commit.
  echo "commit: ${AOTI_SHIM_COMMIT:-$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "host: $(uname -a)"
  nvidia-smi || echo "nvidia-smi failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  nvcc --version 2>&1 | tail -2 || echo "no nvcc"
  cmake --version | head -1 || echo "no cmake"
  echo "ninja $(ninja --version 2>/dev/null || echo missing)"
  python3 - <<'EOF'
import importlib.metadata as md, platform, sys
import torch
print(f"python {platform.python_version()} at {sys.executable}")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU visible: {torch.cuda.is_available()}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"device 0: {p.name}, {p.multi_processor_count} SMs, capability {p.major}.{p.minor}")
for name in ("cuda-bindings", "cuda-python", "nvidia-cuda-runtime", "triton", "pytest", "cmake", "ninja", "scikit-build-core"):
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name}: not installed")
EOF
}

install_wheels() {
  # The carried wheels: lief, pyelftools, scikit-build-core 1.1.2, nvidia-cuda-crt.
  # A CPU rehearsal without .whl/ runs with a venv's python3 first on PATH instead.
  if ! ls "$WHEELS"/*.whl > /dev/null 2>&1; then
    echo "no carried wheels in $WHEELS: nothing to install"
    return 0
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl
}

# A GPU machine has no network: without the carried wheels (or a python3 that has LIEF and
# pyelftools already) every binary-route step fails at its rewrite, minutes in. Stop first.
wheels_or_stop() {
  if [ "$DEVICE" != cuda ] || ls "$WHEELS"/lief-*.whl > /dev/null 2>&1 ||
     python3 -c "import lief, elftools" > /dev/null 2>&1; then
    return 0
  fi
  echo "stopped before any step: no lief wheel in $WHEELS and python3 cannot import lief and elftools;" \
       "carry the wheels (the device call's carry=[\".whl\"])" | tee -a "$RUN_LOG" >&2
  exit 2
}

install_aoti_shim() {
  # No network: no build isolation; the shims find the system CUDA 13 toolkit.
  local cuda_home=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$cuda_home/bin/nvcc" ] || cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
  echo "CUDA toolkit: $cuda_home"
  # The shims' kernels: no nvcc wheels here (no network), so the toolkit's nvcc, named outright.
  local cudacxx=${CUDACXX:-}
  [ -n "$cudacxx" ] || [ ! -x "$cuda_home/bin/nvcc" ] || cudacxx=$cuda_home/bin/nvcc
  CUDAToolkit_ROOT=$cuda_home CUDACXX=$cudacxx CMAKE_BUILD_PARALLEL_LEVEL=16 \
    python3 -m pip install --no-index --no-deps --no-build-isolation --no-cache-dir --upgrade \
    --target "$SITE" "$REPO" || return $?
  python3 -c "from aoti_shim.paths import shim_library; print('installed shims:', shim_library())" || return $?
  ldd "$SITE/aoti_shim/lib/libaoti_shim.so" | grep -i cuda || true
  python3 -m aoti_shim --version
}

shim_unit_tests() {
  local build=/tmp/aoti-shim-shim-tests
  local cuda_home=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$cuda_home/bin/nvcc" ] || cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
  rm -rf "$build"
  CUDAToolkit_ROOT=$cuda_home cmake -S "$REPO/shims/tests" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DAOTI_SHIM_LIBRARY="$SITE/aoti_shim/lib/libaoti_shim.so" \
    -DAOTI_SHIM_INCLUDE_DIR="$SITE/aoti_shim/include" || return $?
  cmake --build "$build" -j 16 || return $?
  # All groups: core copy ops streams cuda (cuda ones run: a GPU is visible). Told that a GPU
  # is expected, the harness fails, not skips, the CUDA tests if the library's device count says none.
  AOTI_SHIM_TESTS_GPU=$([ "$DEVICE" = cuda ] && echo 1 || echo 0) "$build/aoti_shim_tests"
}

# smoke_f32 [rest]: the float32 smoke on the models the prewarm finished (JSON to
# smoke.json); with "rest", on those it did not (they compile here; table in the log).
smoke_f32() {
  local ready models=() m
  ready=$(python3 "$REPO/docs/gpu/prewarm.py" --cache-dir "$CACHE" --device "$DEVICE" --list-cached mlp block convnet) || return $?
  if [ "${1:-}" = rest ]; then
    for m in mlp block convnet; do [[ " $ready " == *" $m "* ]] || models+=(--model "$m"); done
    [ ${#models[@]} -gt 0 ] || { echo "every float32 model was in the first smoke run"; return 0; }
    python3 -m aoti_shim smoke --device "$DEVICE" --cache-dir "$CACHE" "${models[@]}"
    return $?
  fi
  [ -n "$ready" ] || { echo "the prewarm finished no model: the smoke compiles them all"; ready="mlp block convnet"; }
  for m in $ready; do models+=(--model "$m"); done
  echo "float32 models compiled: $ready"
  python3 -m aoti_shim smoke --device "$DEVICE" --cache-dir "$CACHE" --json "$OUT/smoke.json" "${models[@]}"
}

bf16_smoke() {
  local ready models=()
  ready=$(python3 "$REPO/docs/gpu/prewarm.py" --cache-dir "$CACHE" --device "$DEVICE" --list-cached \
    bf16_models:mlp_bf16 bf16_models:block_bf16 bf16_models:convnet_bf16) || return $?
  [ -n "$ready" ] || { echo "no bfloat16 model finished compiling"; return 1; }
  for m in $ready; do models+=(--model "$m"); done
  echo "bfloat16 models compiled: $ready"
  python3 -m aoti_shim smoke --device "$DEVICE" --cache-dir "$CACHE" --json "$OUT/smoke_bf16.json" "${models[@]}"
}

snapshot_torch() {
  # The reference snapshot of this machine's torch, made from its real libraries.
  local lib version
  lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') || return $?
  version=$(python3 -c 'import torch; print(torch.__version__)') || return $?
  python3 -m aoti_shim snapshot "$lib" --torch-version "$version" -o "$WORK/torch-$version.json.gz"
}

pack_artefacts() {
  # The CUDA MLP's package_cpp_only package: CI can build the CUDA blob from it and check its names;
  # and the torch snapshot, if one was made.
  local pkg snap
  pkg=$(ls -d "$CACHE"/mlp-"$DEVICE"-source-*/ 2>/dev/null | head -1)
  [ -n "$pkg" ] || { echo "no CUDA source-route package in $CACHE"; return 1; }
  cp -r "$pkg" "$WORK/package-mlp-$DEVICE"
  snap=$(cd "$WORK" && ls torch-*.json.gz bench.json 2>/dev/null)
  tar -C "$WORK" -czf "$OUT/${DEVICE}_artefacts.tar.gz" "package-mlp-$DEVICE" $snap
  tar -tzvf "$OUT/${DEVICE}_artefacts.tar.gz"
}

cuda_kernel_tests() {
  # Issue 17: the shims' kernels (copy_ converting/broadcasting/strided, fill_, zero_) against
  # torch, a large converting copy timed, and the cuda = true fixture's kernel, from the
  # wheel built on the CPU machine with no toolkit (docs/gpu/build_cuda_fixture_wheel.sh
  # puts it in .whl/; install_wheels installs it), else built here with the toolkit.
  python3 -c "import plugin_cuda, sys; print('plugin_cuda from', plugin_cuda.__file__)" 2>/dev/null ||
    echo "plugin_cuda: no CPU-built wheel installed; the test builds the fixture here"
  AOTI_SHIM_GPU_DEVICE="$DEVICE" python3 -m pytest -p no:cacheprovider -v -s -rs --rootdir "$REPO" \
    -c "$REPO/pyproject.toml" "$REPO/tests/gpu/test_cuda_kernels_gpu.py"
}

two_gpu_tests() {
  # Issue 16: a blob on cuda:1, copies between GPUs against a busy source stream, pinned
  # memory from both GPUs, two blobs on two GPUs from two threads. Below two GPUs there is
  # nothing to run: a clean skip (exit 0), not a failed step.
  local gpus
  gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())') || return $?
  if [ "$gpus" -lt 2 ]; then
    echo "skipped: fewer than two GPUs ($gpus visible)"
    return 0
  fi
  nvidia-smi topo -m 2>/dev/null || true
  AOTI_SHIM_SMOKE_CACHE="$CACHE" python3 -m pytest -p no:cacheprovider -v -rs --rootdir "$REPO" \
    -c "$REPO/pyproject.toml" "$REPO/tests/gpu/test_two_gpus_gpu.py"
}

bench_latency() {
  # Issue 16: (a) ours / (b) the same blob through libtorch's shims, (b') the
  # link_libtorch=True twin, (c) eager, (g) CUDA-graph replay, the profile on/off, each
  # with a 95% interval from interleaved rounds; the per-inference shim profile table;
  # allocation pairs. The slow compile (block) last: a bench cut short still printed its
  # first rows. JSON into the artefacts tarball (the 8 files back are taken). Arguments
  # go to the bench: the runs pass a stream of their own unless "--stream default".
  # AOTI_SHIM_PEER_SHIMS (and AOTI_SHIM_PEER_NAME): another runtime's prefixed shim library,
  # built before the kit runs, as the bench's (p) (issue 38: ExecuTorch's, the peer anchor).
  local peer=()
  if [ -n "${AOTI_SHIM_PEER_SHIMS:-}" ]; then
    peer=(--peer-shims "$AOTI_SHIM_PEER_SHIMS" --peer-name "${AOTI_SHIM_PEER_NAME:-peer}")
  fi
  python3 "$REPO/bench/shim_latency.py" --device "$DEVICE" --cache-dir "$CACHE" \
    --model mlp --model convnet --model block --rounds "${AOTI_SHIM_BENCH_ROUNDS:-40}" \
    --iterations "${AOTI_SHIM_BENCH_ITERATIONS:-40}" --json "$WORK/bench.json" "${peer[@]}" "$@"
}

bench_latency_zoo() {
  # Issue 16: the zoo models (smoke/zoo.py) whose float32 binary route is already compiled
  # in $CACHE, through the same bench; no twin (a second compile each), fewer rounds.
  local models=() m listed
  listed=$(python3 -c '
import sys
from pathlib import Path
from aoti_shim.smoke.compile import CompileRequest, is_cached
from aoti_shim.smoke.zoo import MODELS
cache, device = Path(sys.argv[1]), sys.argv[2]
specs = [f"aoti_shim.smoke.zoo:{m}" for m in MODELS]
print(" ".join(s for s in specs if is_cached(CompileRequest(s, device, "binary"), cache)))
' "$CACHE" "$DEVICE") || return $?
  for m in $listed; do models+=(--model "$m"); done
  [ ${#models[@]} -gt 0 ] || { echo "no zoo model compiled in $CACHE: nothing to measure"; return 0; }
  python3 "$REPO/bench/shim_latency.py" --device "$DEVICE" --cache-dir "$CACHE" "${models[@]}" --no-twin \
    --rounds 20 --iterations 20 --alloc-seconds 0.02
}

# The GPU test modules after the smoke (they reuse its compiles): stream contract,
# concurrent blobs, two GPUs. The "tests" phase runs them, with the CUDA kernels first,
# alone: a CPU rehearsal (AOTI_SHIM_GPU_DEVICE=cpu) in seconds, which tests/test_gpu_kit.py
# runs in CI so that the script cannot rot unseen.
gpu_test_steps() {
  step "gpu tests: stream contract" 120 "$OUT/03_gpu_tests.log" env AOTI_SHIM_SMOKE_CACHE="$CACHE" \
    python3 -m pytest -p no:cacheprovider -v -rs --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$REPO/tests/gpu/test_stream_contract_gpu.py"
  step "gpu tests: concurrent blobs" 120 "$OUT/03_gpu_tests.log" env AOTI_SHIM_SMOKE_CACHE="$CACHE" \
    python3 -m pytest -p no:cacheprovider -v -rs --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$REPO/tests/gpu/test_concurrent_blobs_gpu.py"
  step "gpu tests: two GPUs" 120 "$OUT/03_gpu_tests.log" two_gpu_tests
  # Issue 38: the fused attention kernel against float64 math, and its speed beside torch's.
  step "gpu tests: attention" 150 "$OUT/03_gpu_tests.log" env AOTI_SHIM_SMOKE_CACHE="$CACHE" \
    python3 -m pytest -p no:cacheprovider -v -s -rs --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$REPO/tests/gpu/test_cuda_nn_gpu.py" -k "sdpa or speed"
}

export REPO OUT SITE WORK CACHE DEVICE WHEELS
export -f install_wheels install_aoti_shim shim_unit_tests snapshot_torch pack_artefacts smoke_f32 bf16_smoke
export -f two_gpu_tests bench_latency bench_latency_zoo cuda_kernel_tests

# Phases: "core" (install, shim tests, float32 smoke, GPU tests, bench, artefacts) and
# "bf16" (the bfloat16 smoke). Default: both, core first. "latency" (issue 16, after core:
# "core latency"): the bench twice more, each a process of its own, so that the intervals
# are seen across runs (compiles cached by core). "tests": the GPU test modules alone.
# "streams" (issue 38, after core): the bench with a caller stream, then the default stream.
PHASES=${*:-core bf16}
cd "$WORK" || exit 1
header >> "$RUN_LOG" 2>&1
echo "phases: $PHASES, time budget ${BUDGET_S}s" >> "$RUN_LOG"
wheels_or_stop
export PYTHONPATH=$SITE:$REPO/docs/gpu
export PYTHONUNBUFFERED=1
# Few GEMM autotuning candidates: compile minutes, not kernel speed, are what this run is short of.
export AOTI_SHIM_MAX_MM_CONFIGS=${AOTI_SHIM_MAX_MM_CONFIGS:-4}
if [[ " $PHASES " == *" core "* || ! -f $SITE/aoti_shim/lib/libaoti_shim.so ]]; then
  step "install carried wheels" 60 "$RUN_LOG" install_wheels
  step "install aoti-shim" 180 "$RUN_LOG" install_aoti_shim
fi
if [[ " $PHASES " == *" core "* ]]; then
  step "shim C++ unit tests" 120 "$OUT/01_shim_tests.log" shim_unit_tests
  step "gpu tests: CUDA kernels" 150 "$OUT/03_gpu_tests.log" cuda_kernel_tests
  # Compiles first, all models at once (one thread each): the later steps find them cached.
  step "prewarm float32 compiles" 240 "$OUT/02_smoke.log" \
    python3 "$REPO/docs/gpu/prewarm.py" --cache-dir "$CACHE" --device "$DEVICE" mlp convnet block
  step "smoke float32" 150 "$OUT/02_smoke.log" smoke_f32
  gpu_test_steps
  step "bench shim latency" 150 "$OUT/04_bench.log" bench_latency
  step "snapshot torch" 60 "$RUN_LOG" snapshot_torch
  # The shipped snapshot of this machine's torch (2.11.0+cu130) against binutils' nm on its libraries.
  step "shipped snapshot vs nm" 60 "$OUT/03_gpu_tests.log" \
    python3 -m pytest -p no:cacheprovider -v -rs --rootdir "$REPO" -c "$REPO/pyproject.toml" \
    "$REPO/tests/test_snapshot.py" -k agrees_with_nm
  step "pack CUDA artefacts" 30 "$RUN_LOG" pack_artefacts
  step "smoke float32, the rest" 150 "$OUT/02_smoke.log" smoke_f32 rest
fi
if [[ " $PHASES " == *" tests "* ]]; then
  step "gpu tests: CUDA kernels" 150 "$OUT/03_gpu_tests.log" cuda_kernel_tests
  gpu_test_steps
fi
if [[ " $PHASES " == *" shims "* ]]; then
  # The shims' C++ tests alone (after a shim change, before another script's phase).
  step "shim C++ unit tests" 120 "$OUT/01_shim_tests.log" shim_unit_tests
fi
if [[ " $PHASES " == *" streams "* ]]; then
  # Issue 38: the bench with a caller stream and with the legacy default stream, back to back.
  step "bench shim latency, caller stream" 150 "$OUT/04_bench.log" bench_latency
  step "bench shim latency, default stream" 150 "$OUT/04_bench.log" bench_latency --stream default
fi
if [[ " $PHASES " == *" latency "* ]]; then
  step "bench shim latency, run 2" 150 "$OUT/04_bench.log" bench_latency
  step "bench shim latency, run 3" 150 "$OUT/04_bench.log" bench_latency
  # Issue 38: the legacy default stream beside the caller stream the runs above pass.
  step "bench shim latency, default stream" 150 "$OUT/04_bench.log" bench_latency --stream default
  step "bench shim latency, zoo" 120 "$OUT/04_bench.log" bench_latency_zoo
fi
if [[ " $PHASES " == *" bf16 "* ]]; then
  # The smoke CLI has no dtype option: the bfloat16 variants come in as user models.
  step "prewarm bfloat16 compiles" 240 "$OUT/02_smoke.log" \
    python3 "$REPO/docs/gpu/prewarm.py" --cache-dir "$CACHE" --device "$DEVICE" --only-bf16 mlp block convnet
  step "smoke bfloat16" 180 "$OUT/02_smoke.log" bf16_smoke
fi

{
  echo
  echo "# summary (exit 124 = timed out), total $(($(date +%s) - START))s of ${BUDGET_S}s"
  printf '%s\n' "${SUMMARY[@]}"
} >> "$RUN_LOG"
# What the device call's output shows (its last 12,000 characters come back): the result
# tables, then the step summary last, so that a long output never cuts the summary.
if [ -f "$OUT/02_smoke.log" ]; then
  awk '/^device [a-z]+, torch/ {on = 1} /^== / {on = 0} on' "$OUT/02_smoke.log"
  echo
fi
if [ -f "$OUT/03_gpu_tests.log" ]; then
  # Per pytest run: its summary line, and the failures and skips it names.
  grep -E '^(FAILED|ERROR|SKIPPED) |^=+ .*(passed|failed|skipped|error).* in [0-9.]+s' "$OUT/03_gpu_tests.log"
  echo
fi
if [ -f "$OUT/04_bench.log" ]; then
  if grep -q '^# shim latency benchmark' "$OUT/04_bench.log"; then
    # Every bench run's latencies and ratios, its shims' share per model and the allocation
    # ratio; the profile tables stay in the file.
    awk '/^# shim latency benchmark/ {n++} /^date: / && n {print "bench run " n ", " $0}
         /^stream: / && n {print "bench run " n ", " $0}
         /^one inference, median/ {on = 1} /^shim profile, |^allocation:|^== / {on = 0}
         on && !/^max abs error/ && !/^-+$/' "$OUT/04_bench.log"
    grep -E '^shim profile, |^  \(shim total|^  shims. share|^  time per pair' "$OUT/04_bench.log" | sed 's/ per inference of (a), means over / over /'
  else
    grep '^bench: row' "$OUT/04_bench.log"  # cut short: the rows it measured
  fi
  echo
fi
sed -n '/^# summary/,$p' "$RUN_LOG"
