#!/usr/bin/env bash
# Builds fixtures/packages/plugin_cuda (a shim project with a .cu kernel and
# [tool.aoti-shim] cuda = true) into .whl/ on the CPU machine: an isolated pip wheel
# whose nvcc comes from NVIDIA's wheels, with every nvcc taken off PATH (no toolkit).
# docs/gpu/run_h200.sh installs it from .whl/ and tests/gpu/test_cuda_kernels_gpu.py
# runs its kernel on the H200. Run from the checkout, with the venv of `pip install ".[test]"`:
#
#     bash docs/gpu/build_cuda_fixture_wheel.sh
#
# Offline: the build requirements (aoti-shim as installed in the venv, scikit-build-core,
# the CUDA wheels) come from a wheelhouse repacked from the venv, as the tests make it.
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
if ! "$PYTHON" -c "import importlib.metadata as m; [m.distribution(d) for d in ('aoti-shim', 'nvidia-cuda-nvcc', 'nvidia-nvvm', 'nvidia-cuda-cccl')]" 2> /dev/null; then
  echo "build_cuda_fixture_wheel: $PYTHON lacks aoti-shim or the nvcc wheels: $PYTHON -m pip install '.[test]' first (or set PYTHON)" >&2
  exit 2
fi
# PATH without any folder that holds an nvcc.
NO_NVCC=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -n "$d" ] && [ ! -x "$d/nvcc" ] && printf '%s:' "$d"; done)
mkdir -p "$REPO/.whl"
rm -f "$REPO"/.whl/plugin_cuda-*.whl
WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT
PYTHONPATH=$REPO/tests "$PYTHON" -c "
import sys
from pathlib import Path
from plugin_support import assemble_wheelhouse
from cuda_support import add_cuda_wheels
add_cuda_wheels(assemble_wheelhouse(Path(sys.argv[1])))
" "$WHEELS"
start=$(date +%s)
PATH=${NO_NVCC%:} PIP_NO_INDEX=1 PIP_FIND_LINKS=$WHEELS "$PYTHON" -m pip wheel -v --no-deps -w "$REPO/.whl" \
  "$REPO/fixtures/packages/plugin_cuda" 2>&1 | grep -E "aoti-shim:|CUDA compiler identification|plugin_cuda:|OK:|Successfully|ERROR|error" || true
ls -l "$REPO"/.whl/plugin_cuda-*.whl
echo "built in $(($(date +%s) - start)) s"
