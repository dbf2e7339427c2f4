#!/usr/bin/env bash
# What docs/multi_worker.md tells a laptop user to do with scripts/slurm_local.sh (issue 48): `up`
# prints the SLURM_CONF line on stdout, `env` prints it again, and with nothing but that line in
# the environment the documented `srun -n 4 --mpi=pmix osprey train --strategy multi_worker` runs
# (here one short epoch) and ends within a timeout, on a machine of 2 cores too. Exit 77 (ctest:
# skipped) when this machine cannot run Slurm; the cluster is taken down on every exit.
#   slurm_local_test.sh OSPREY
set -uo pipefail
osprey=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
slurm_local=$here/../scripts/slurm_local.sh
DIR=${OSPREY_SLURM_DIR:-/tmp/osprey-slurm}
export OSPREY_SLURM_DIR=$DIR
unset SLURM_CONF  # the point: the printed line alone must be enough
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

check_rc=0
"$slurm_local" check || check_rc=$?
((check_rc == 0)) || exit "$check_rc"

# One cluster per directory at a time (tests/slurm_run.sh takes the same lock).
exec 9>"$DIR.lock"
flock -w 600 9 || { echo "slurm_local_test: $DIR is busy (lock $DIR.lock held for 10 min)"; exit 1; }
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  local rc=$?
  "$slurm_local" down 9>&- || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

up_out=$("$slurm_local" up 9>&- 2>"$DIR.up.err") || { cat "$DIR.up.err"; exit 1; }
[[ $up_out == "export SLURM_CONF=$DIR/slurm.conf" ]] ||
  fail "up printed on stdout '$up_out', expected 'export SLURM_CONF=$DIR/slurm.conf'"
grep -q "in your shell run:" "$DIR.up.err" || fail "up did not say what to run: $(cat "$DIR.up.err")"
env_out=$("$slurm_local" env)
[[ $env_out == "$up_out" ]] || fail "env printed '$env_out', up printed '$up_out'"
eval "$up_out"
[[ ${SLURM_CONF:-} == "$DIR/slurm.conf" ]] || fail "eval of up's output left SLURM_CONF='${SLURM_CONF:-}'"
cpus=$(sinfo -h -N -o %c)
((cpus >= 4)) || fail "the node offers $cpus CPUs; the documented srun -n 4 needs 4"

export OMPI_MCA_btl_tcp_if_include=127.0.0.1/8 OMPI_MCA_oob_tcp_if_include=127.0.0.1/8
# The documented command, shortened to one epoch of 2 steps; timeout: a job Slurm cannot place
# waits in the queue for good instead of failing.
timeout 240 srun -n 4 --mpi=pmix "$osprey" train --strategy multi_worker --epochs 1 \
  --steps-per-epoch 2 --output "" 9>&- >"$DIR.srun.out" 2>&1
rc=$?
grep -q "4 replicas in sync" "$DIR.srun.out" || fail "srun -n 4 did not train 4 replicas"
((rc == 0)) || fail "srun -n 4 exited $rc: $(tail -n 20 "$DIR.srun.out")"

rm -f "$DIR.up.err" "$DIR.srun.out"
((failures == 0)) && echo "slurm_local_test: all checks passed"
exit "$failures"
