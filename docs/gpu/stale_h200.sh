#!/usr/bin/env bash
# The stale-kernel demonstration (docs/gpu/stale_kernels_demo.py) in one device call on the
# H200, with the git-ignored .whl/ carried, from anywhere inside the checkout:
#
#     bash docs/gpu/stale_h200.sh
#
# Installs as run_h200.sh does (its header goes to $OUT/00_run.log), then runs the demo
# with the same GEMM autotuning cap; its output goes to $OUT/08_stale_kernels.log.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/aoti-shim-gpu-out}
mkdir -p "$OUT"
AOTI_SHIM_GPU_BUDGET_S=120 bash "$REPO/docs/gpu/run_h200.sh" install
cd /tmp || exit 1
set -o pipefail
PYTHONPATH=/tmp/site:$REPO/docs/gpu PYTHONUNBUFFERED=1 AOTI_SHIM_MAX_MM_CONFIGS=${AOTI_SHIM_MAX_MM_CONFIGS:-4} \
  timeout 500 python3 "$REPO/docs/gpu/stale_kernels_demo.py" 2>&1 | tee "$OUT/08_stale_kernels.log"
