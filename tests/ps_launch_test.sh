#!/usr/bin/env bash
# The first hour with a parameter-server cluster (issue 48), `osprey launch --workers M --ps N`:
#   1. A chief that fails ends the job within seconds, with its exit code: the workers and the ps
#      are stopped at once (launch used to give them a minute first).
#   2. A --batch-size the replicas in sync do not divide is refused by every task before any
#      training, exit 2, naming the nearest valid values; the workers' usage errors are not
#      restarted.
#   3. The README's command runs as written: the default batch, 128, becomes 129 for 3 workers.
# Usage: ps_launch_test.sh path/to/osprey
set -u
osprey=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  echo "--- output:"; tail -n 40 "$tmp/out"
  failures=$((failures + 1))
}
expect_line() {  # expect_line LINE
  grep -qxF -- "$1" "$tmp/out" || fail "no line '$1'"
}

# 1. The chief fails a second in; the workers would wait for steps for ever (`exec sleep`, so that
# SIGTERM reaches the sleep itself) and the ps (real `osprey ps` tasks) serve nobody.
start=$(date +%s%N)
"$osprey" launch --workers 2 --ps 2 -- sh -c \
  'case "$OSPREY_CONFIG" in *"\"type\":\"chief\""*) sleep 1; echo chief fails >&2; exit 3;; *) exec sleep 300;; esac' \
  >"$tmp/out" 2>&1
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
[ "$rc" = 3 ] || fail "chief failure: exit code $rc, expected the chief's 3"
expect_line "osprey launch: the chief exited with code 3"
[ "$took_ms" -lt 8000 ] || fail "chief failure: launch took $took_ms ms to end, expected a few seconds"
grep -q "killing it" "$tmp/out" && fail "chief failure: a task needed SIGKILL"
grep -q "restarting" "$tmp/out" && fail "chief failure: a task was restarted"

# 2. 128 is not a multiple of 3 workers: every task refuses it before reading any data.
"$osprey" launch --workers 3 --ps 2 -- "$osprey" train --strategy parameter_server \
  --replicas-to-aggregate 2 --batch-size 128 >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "batch 128: exit code $rc, expected 2 (a usage error)"
expect_line "[chief] osprey: error: osprey train: --batch-size 128 is not divisible by the 3 replicas in sync (the global batch is split evenly among them); use --batch-size 126 or 129"
expect_line "osprey launch: the chief exited with code 2 (a usage error)"
grep -q "^\[chief\] data:" "$tmp/out" && fail "batch 128: the chief read its data before refusing"
grep -q "restarting it" "$tmp/out" && fail "batch 128: a worker's usage error was restarted"

# 3. The README's command, shortened to 3 steps.
"$osprey" launch --workers 3 --ps 2 --ps-checkpoint-dir "$tmp/ps" -- \
  "$osprey" train --strategy parameter_server --replicas-to-aggregate 2 \
  --epochs 1 --steps-per-epoch 3 --output "" >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "README command: exit code $rc, expected 0"
grep -qF "[chief] strategy: ParameterServerStrategy(chief, 3 workers, 2 ps, sync 2 of 3), 3 replicas in sync, global batch 129 (the default 128 rounded to a multiple of 3)" "$tmp/out" ||
  fail "README command: no strategy line with the global batch 129"
grep -q "^\[chief\] test loss: " "$tmp/out" || fail "README command: no test loss"

[ "$failures" = 0 ] && echo "ps_launch_test: all checks passed"
exit "$failures"
