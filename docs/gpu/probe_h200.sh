#!/usr/bin/env bash
# Why the bfloat16 source route failed on the H200 (issue 7): one device call, with the
# git-ignored .whl/ carried, from anywhere inside the checkout:
#
#     bash docs/gpu/probe_h200.sh
#
# 1. run_h200.sh's bf16 phase: install, the bfloat16 compiles in parallel (fresh cache),
#    the smoke on them (at commit 200fb13, whose aoti_shim_add_model aligned the kernels).
# 2. kernel_alignment_probe.py load: one kernel loaded from 16 host offsets, and each
#    bfloat16 package's kernels from 6.
# 3. kernel_alignment_probe.py relink: each bfloat16 package linked as torch's objects
#    are (three pads) and as aoti_shim_add_model links it, each blob run by the smoke.
# 4. Any source row that still fails: once more under compute-sanitizer (memcheck).
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/aoti-shim-gpu-out}
mkdir -p "$OUT"
START=$(date +%s)
AOTI_SHIM_GPU_BUDGET_S=280 bash "$REPO/docs/gpu/run_h200.sh" bf16
export PYTHONPATH=/tmp/site:$REPO/docs/gpu PYTHONUNBUFFERED=1
export AOTI_SHIM_MAX_MM_CONFIGS=${AOTI_SHIM_MAX_MM_CONFIGS:-4}  # as run_h200.sh: part of the cache key
CACHE=/tmp/aoti-shim-gpu-cache
cd /tmp/aoti-shim-gpu-work || exit 1
MODELS=(--model bf16_models:mlp_bf16 --model bf16_models:block_bf16 --model bf16_models:convnet_bf16)
echo "== load probe $(date -u +%H:%M:%S)"
timeout 90 python3 "$REPO/docs/gpu/kernel_alignment_probe.py" load --cache-dir "$CACHE" "${MODELS[@]}" \
  > "$OUT/05_alignment_load.log" 2>&1
echo "load probe: exit $?"
echo "== relink probe $(date -u +%H:%M:%S)"
timeout 240 python3 "$REPO/docs/gpu/kernel_alignment_probe.py" relink --cache-dir "$CACHE" "${MODELS[@]}" \
  --pad 0 --pad 1 --pad 4 > "$OUT/06_alignment_relink.log" 2>&1
echo "relink probe: exit $?"
: > "$OUT/07_sanitizer.log"
failing=$(python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print(" ".join(r["model"] for r in rows if r["route"] == "source" and not r["ok"]))' "$OUT/smoke_bf16.json" 2>/dev/null)
for model in $failing; do
  left=$((570 - ($(date +%s) - START)))
  ((left > 20)) || break
  echo "== compute-sanitizer $model (limit $((left < 90 ? left : 90))s)" >> "$OUT/07_sanitizer.log"
  timeout $((left < 90 ? left : 90)) compute-sanitizer --tool memcheck --print-limit 5 --target-processes all \
    python3 -m aoti_shim smoke --device cuda --cache-dir "$CACHE" --model "$model" --route source --no-control \
    --iterations 2 >> "$OUT/07_sanitizer.log" 2>&1
  echo "== exit $?" >> "$OUT/07_sanitizer.log"
done
echo "failing source rows after the fix: ${failing:-none}"
echo; cat "$OUT/05_alignment_load.log"; echo; cat "$OUT/06_alignment_relink.log"
echo; tail -40 "$OUT/07_sanitizer.log"
echo "total $(($(date +%s) - START))s"
