# Sourced by run_h200.sh and zoo_h200.sh: a time budget shared by the steps of one device
# call. The caller sets BUDGET_S, START (date +%s) and the array SUMMARY, and may set
# STEP_NAME_WIDTH (the summary's name column).

remaining() { echo $((BUDGET_S - ($(date +%s) - START))); }

# step NAME CAP_S LOG COMMAND...: run with a timeout of min(CAP_S, what is left), log
# everything to LOG, record the exit status (124: timed out).
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left limit began rc width=${STEP_NAME_WIDTH:-28}
  left=$(remaining)
  limit=$((cap < left ? cap : left))
  if ((limit < 5)); then
    SUMMARY+=("$(printf "%-${width}s SKIPPED (time budget spent)" "$name")")
    echo "== $name: SKIPPED, time budget spent" >> "$log"
    return
  fi
  echo "== $name (limit ${limit}s) $(date -u +%H:%M:%S)" >> "$log"
  echo "\$ $*" >> "$log"
  began=$(date +%s)
  # timeout runs programs, not shell functions: functions go through bash -c (the caller exports them).
  if declare -F "$1" > /dev/null; then
    timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >> "$log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  fi
  rc=$?
  SUMMARY+=("$(printf "%-${width}s exit %-3s %4ss (limit %ss)" "$name" "$rc" "$(($(date +%s) - began))" "$limit")")
  echo "== $name: exit $rc after $(($(date +%s) - began))s" >> "$log"
}
