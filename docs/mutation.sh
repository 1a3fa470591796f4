#!/usr/bin/env bash
# Mutation testing: mutmut over the checker's rules and prefix logic, the plugin's prefix
# logic and the gate, the wheel reader, the output formats, the smoke's oracle and
# rewrite-imports, against the fast tests that exercise them (docs/mutation.md has the
# last score and what each surviving mutant is).
#
#     bash docs/mutation.sh                      # every module below
#     bash docs/mutation.sh checks/rules/table.py      # some of them (paths inside the installed package)
#     AOTI_SHIM_MUTATION_SELECT='aoti_shim.checks.inputs.collect.x_open_wheel__mutmut_*' \
#         bash docs/mutation.sh checks/inputs/collect.py # some mutants (mutmut's names, fnmatch globs)
#
# The tests import the installed package, and the clone's folders are not that package
# (the wheel maps checks/, plugin/ and src/aoti_shim/ into one), so the run stages a copy
# of the installed aoti_shim with tests/ and fixtures/ beside it, and mutmut mutates that
# copy. Reinstall first (pip install --no-deps --force-reinstall .) so the copy is the tree.
# Each run stages into a folder of its own (mktemp -d under $AOTI_SHIM_MUTATION_STAGE, else
# $TMPDIR), removed when the run ends (AOTI_SHIM_MUTATION_KEEP=1 keeps it, for `mutmut show`):
# two runs on one machine no longer remove each other's. AOTI_SHIM_MUTATION_DRY=1 only makes
# the stage, prints its path and removes it once standard input closes (what the tests run).
# Niced, one worker by default (AOTI_SHIM_MUTATION_JOBS=2 for two); the default run is all the
# modules below, about 3800 mutants: hours on 2 cores (docs/mutation.md records each run's time).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
JOBS=${AOTI_SHIM_MUTATION_JOBS:-1}
MODULES=("$@")
[ ${#MODULES[@]} -gt 0 ] || MODULES=(checks/rules/table.py checks/abi/prefix.py plugin/prefix.py plugin/gate.py
    checks/inputs/collect.py checks/report/model.py checks/formats/__init__.py checks/formats/text.py
    checks/formats/json_report.py checks/formats/sarif.py checks/formats/junit.py checks/formats/github.py
    smoke/compare.py smoke/rewrite.py smoke/rewrite_worker.py)
# The fast tests that exercise those modules (no pip, CMake or torch compile).
TESTS=(tests/test_rule_matrix.py tests/test_abi_prefix.py tests/test_check.py tests/test_check_soundness.py
    tests/test_plugin_prefix.py tests/test_plugin_settings.py tests/test_gate.py
    tests/test_inputs.py tests/test_check_bounds.py tests/test_wheel_tables_at_end.py tests/test_robustness.py
    tests/test_report_model.py tests/test_formats.py tests/test_hostile_names.py tests/test_finding_batches.py
    tests/test_compare.py tests/test_rewrite.py)
[ -z "${AOTI_SHIM_MUTATION_TESTS:-}" ] || read -r -a TESTS <<< "$AOTI_SHIM_MUTATION_TESTS"
# Mutant names to run (globs); empty: every mutant of the modules.
read -r -a SELECT <<< "${AOTI_SHIM_MUTATION_SELECT:-}"

# This run's own stage folder, printed on standard output.
make_stage() {
  local parent=${AOTI_SHIM_MUTATION_STAGE:-${TMPDIR:-/tmp}}
  mkdir -p "$parent"
  mktemp -d "$parent/aoti-shim-mutation.XXXXXX"
}
remove_stage() {
  if [ -n "${AOTI_SHIM_MUTATION_KEEP:-}" ]; then
    echo "mutation.sh: stage kept: $STAGE" >&2
  else
    rm -rf "$STAGE"
  fi
}

STAGE=$(make_stage)
# Ctrl-C and SIGTERM end the run through EXIT, so the stage goes either way.
trap remove_stage EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -n "${AOTI_SHIM_MUTATION_DRY:-}" ]; then
  echo "$STAGE"
  read -r _ || true
  exit 0
fi
"$PY" -m mutmut --version >/dev/null 2>&1 || { echo "mutation.sh: mutmut is not installed in $PY (pip install mutmut)" >&2; exit 2; }
SITE=$("$PY" -c 'import aoti_shim, os; print(os.path.dirname(aoti_shim.__file__))')
cp -r "$SITE" "$STAGE/aoti_shim"
cp -r "$REPO/tests" "$REPO/fixtures" "$STAGE/"
# tests/test_check.py and tests/test_plugin_settings.py read docs/reference.md
mkdir -p "$STAGE/docs" && cp "$REPO/docs/reference.md" "$STAGE/docs/"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
toml_list() { local out="" x; for x in "$@"; do out+="\"$x\", "; done; echo "[${out%, }]"; }
mutate=() ; for m in "${MODULES[@]}"; do mutate+=("aoti_shim/$m"); done
cat > "$STAGE/pyproject.toml" <<EOF
[tool.pytest.ini_options]
pythonpath = ["tests"]
addopts = "--import-mode=importlib -p no:cacheprovider -m 'not slow'"
markers = ["slow: pip/CMake builds", "torch: needs torch", "gpu: needs a GPU"]

[tool.mutmut]
source_paths = $(toml_list "${mutate[@]}")
pytest_add_cli_args_test_selection = $(toml_list "${TESTS[@]}")
also_copy = ["aoti_shim", "tests", "fixtures", "docs"]
EOF
cd "$STAGE"
# Each mutant's test session would compile the fixtures again: compile them once.
export AOTI_SHIM_COMPILE_CACHE="$STAGE/compile-cache"
nice -n 10 "$PY" -m mutmut run --max-children "$JOBS" ${SELECT[@]+"${SELECT[@]}"} || true
"$PY" -m mutmut results
