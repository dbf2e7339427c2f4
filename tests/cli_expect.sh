# Shared by the CLI shell tests that check osprey's exit codes and messages (sourced, not run).
# The sourcing script sets $osprey (the binary) and $tmp (a scratch folder) first; `failures`
# counts what fail() reports, and the script exits with it.
failures=0
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && tail -n 5 "$tmp/out"; failures=$((failures + 1)); }
# expect CODE PATTERN LABEL -- ARGS...: osprey ARGS exits CODE and prints PATTERN (grep -F).
expect() {
  local code=$1 pattern=$2 label=$3
  shift 4
  "$osprey" "$@" >"$tmp/out" 2>&1
  local rc=$?
  [ "$rc" = "$code" ] || fail "$label: exit $rc, expected $code"
  grep -qF -- "$pattern" "$tmp/out" || fail "$label: '$pattern' not in the output"
}
