#!/usr/bin/env bash
# End-to-end test of `osprey launch` under mpirun (ctest label mpi): rank-prefixed output on the
# right stream, each worker's thread share, the exit code and message when a rank fails or is
# killed, and restarts of the whole job (--max-restarts), never after a usage error (exit 2) or a
# program that cannot run (127). Usage: launch_test.sh path/to/osprey
set -u
osprey=$1
if ! command -v mpirun >/dev/null; then echo "launch_test: skipped, no mpirun on PATH"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# launch ARGS...: runs osprey launch (mpirun forced, as these workers read OMPI_COMM_WORLD_RANK);
# leaves stdout in $tmp/out, stderr in $tmp/err and the exit code in $rc.
launch() {
  "$osprey" launch --launcher mpirun "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
fail() {
  echo "FAIL: $*"
  echo "--- stdout:"; cat "$tmp/out"
  echo "--- stderr:"; cat "$tmp/err"
  failures=$((failures + 1))
}
expect_line() {  # expect_line FILE LINE
  grep -qxF -- "$2" "$tmp/$1" || fail "$1 lacks the line '$2'"
}

launch -n 2 -- sh -c 'echo hello from $OMPI_COMM_WORLD_RANK; echo warning $OMPI_COMM_WORLD_RANK >&2'
[ "$rc" = 0 ] || fail "hello: exit code $rc, expected 0"
expect_line out "[rank 0] hello from 0"
expect_line out "[rank 1] hello from 1"
expect_line err "[rank 0] warning 0"
expect_line err "[rank 1] warning 1"
grep -q warning "$tmp/out" && fail "a worker's stderr reached stdout"

# Each worker's share of this host's cores, at least 1; an explicit count wins; the user's
# OMP_WAIT_POLICY is kept, a short spin (GOMP_SPINCOUNT=1000) otherwise.
share=$(( $(nproc) / 2 )); [ "$share" -ge 1 ] || share=1
launch -n 2 -- sh -c 'echo threads $OSPREY_NUM_THREADS $OMP_NUM_THREADS ${OMP_WAIT_POLICY:-spin} $GOMP_SPINCOUNT'
expect_line out "[rank 0] threads $share $share spin 1000"
expect_line out "[rank 1] threads $share $share spin 1000"
OMP_WAIT_POLICY=ACTIVE launch -n 2 --threads-per-worker 3 -- sh -c 'echo threads $OSPREY_NUM_THREADS $OMP_NUM_THREADS $OMP_WAIT_POLICY'
expect_line out "[rank 0] threads 3 3 ACTIVE"
expect_line out "[rank 1] threads 3 3 ACTIVE"

launch -n 2 -- sh -c 'exit $((OMPI_COMM_WORLD_RANK*3))'
[ "$rc" = 3 ] || fail "exit 3: exit code $rc, expected 3"
expect_line err "osprey launch: rank 1 failed with exit code 3"

launch -n 2 -- sh -c '[ $OMPI_COMM_WORLD_RANK = 1 ] && kill -9 $$; sleep 1'
[ "$rc" = 137 ] || fail "kill -9: exit code $rc, expected 137"
expect_line err "osprey launch: rank 1 was killed by signal 9 (Killed)"

# Restarts (--max-restarts, default 3): the whole job again after a failure, each attempt's ending
# printed with its rank; the budget counts attempts of the job, whichever rank failed.
launch -n 2 -- sh -c 'if [ $OMPI_COMM_WORLD_RANK = 1 ] && [ ! -e '"$tmp"'/once ]; then touch '"$tmp"'/once; exit 5; fi; echo ran'
[ "$rc" = 0 ] || fail "restart then success: exit code $rc, expected 0"
expect_line err "osprey launch: attempt 1 of 4 ended: rank 1 failed with exit code 5; restarting the job (3 restarts left)"
expect_line err "osprey launch: attempt 2 of 4 succeeded"
expect_line out "[rank 1] ran"
launch -n 2 --max-restarts 1 -- sh -c 'exit $((OMPI_COMM_WORLD_RANK*4))'
[ "$rc" = 4 ] || fail "max-restarts 1: exit code $rc, expected 4"
expect_line err "osprey launch: attempt 1 of 2 ended: rank 1 failed with exit code 4; restarting the job (1 restart left)"
expect_line err "osprey launch: rank 1 failed with exit code 4"
[ "$(grep -c "attempt" "$tmp/err")" = 1 ] || fail "max-restarts 1: not exactly one restart"
launch -n 2 --max-restarts 0 -- sh -c 'exit 6'
[ "$rc" = 6 ] || fail "max-restarts 0: exit code $rc, expected 6"
grep -q "attempt" "$tmp/err" && fail "max-restarts 0 restarted"

# Deterministic failures are never restarted: a usage error (exit 2) and a program that cannot run
# (127, its name said by the worker) would fail again, so launch says so once and ends.
launch -n 2 -- sh -c 'echo ran >> '"$tmp"'/runs; exit $((OMPI_COMM_WORLD_RANK*2))'
[ "$rc" = 2 ] || fail "usage error: exit code $rc, expected 2"
expect_line err "osprey launch: rank 1 failed with exit code 2 (a usage error); not restarting: the same command would fail again"
[ "$(wc -l <"$tmp/runs")" = 2 ] || fail "usage error: the job ran $(wc -l <"$tmp/runs") times on 2 ranks, expected once"
grep -q "attempt" "$tmp/err" && fail "usage error: the job was restarted"
launch -n 1 -- "$tmp/no-such-program" --flag
[ "$rc" = 127 ] || fail "no such program: exit code $rc, expected 127"
expect_line err "[rank 0] osprey launch: cannot run $tmp/no-such-program: No such file or directory"
expect_line err "osprey launch: rank 0 failed with exit code 127 (the program was not found or could not be started); not restarting: the same command would fail again"
[ "$(grep -c "cannot run" "$tmp/err")" = 1 ] || fail "no such program: tried more than once"

launch -n 0 -- true
[ "$rc" = 2 ] || fail "-n 0: exit code $rc, expected 2"
launch -n 2
[ "$rc" = 2 ] || fail "no PROGRAM: exit code $rc, expected 2"

if [ "$failures" = 0 ]; then echo "launch_test: all checks passed"; fi
[ "$failures" = 0 ]
