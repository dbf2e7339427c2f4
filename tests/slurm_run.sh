#!/usr/bin/env bash
# Runs one command as a Slurm job step on a throwaway one-node cluster (scripts/slurm_local.sh):
#   tests/slurm_run.sh [-n N] -- CMD ARGS...      (N tasks, default 2)
# Prints the step's output and exits with srun's exit code; 77 (ctest: skipped) when this machine
# cannot run Slurm. The cluster is taken down on every exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
slurm_local=$here/../scripts/slurm_local.sh
DIR=${OSPREY_SLURM_DIR:-/tmp/osprey-slurm}
export OSPREY_SLURM_DIR=$DIR SLURM_CONF=$DIR/slurm.conf

usage() { echo "usage: $0 [-n N] -- CMD ARGS..." >&2; exit 2; }
ntasks=2
while (($#)); do
  case $1 in
    -n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; ntasks=$2; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
(($#)) || usage

check_rc=0
"$slurm_local" check || check_rc=$?
((check_rc == 0)) || exit "$check_rc"  # 77 (no root, no Slurm): ctest counts it as skipped

# One cluster per directory at a time: two tests sharing it would take it down under each other.
exec 9>"$DIR.lock"
flock -w 600 9 || { echo "slurm_run: $DIR is busy (lock $DIR.lock held for 10 min)" >&2; exit 1; }

srun_pid=""
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  local rc=$?
  set +e  # clean up as much as can be, whatever fails
  # Interrupted: end the step first (srun passes SIGTERM on to the tasks), then the cluster.
  [[ -n $srun_pid ]] && kill -TERM "$srun_pid" 2>/dev/null && wait "$srun_pid"
  "$slurm_local" down || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

up_rc=0
# 9>&-: the daemons must not inherit the lock (one that outlived us would hold it for good).
"$slurm_local" up 9>&- || up_rc=$?
((up_rc == 0)) || exit "$up_rc"

# Open MPI's TCP transports stay on loopback (the cluster is one node at 127.0.0.1); a caller who
# wants otherwise sets these.
export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-127.0.0.1/8}
export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-127.0.0.1/8}

overcommit=()
# More tasks than CPUs: Slurm refuses to place them unless told the node may be overcommitted.
((ntasks > $(nproc))) && overcommit=(--overcommit)
# In the background with `wait`, so a SIGTERM (ctest's timeout) reaches the trap at once rather
# than after srun ends; --kill-on-bad-exit: one failing task ends the others instead of leaving
# them blocked in a collective.
srun --ntasks="$ntasks" --nodes=1 --mpi=pmix --kill-on-bad-exit=1 "${overcommit[@]}" -- "$@" 9>&- &
srun_pid=$!
rc=0
wait "$srun_pid" || rc=$?
srun_pid=""
exit "$rc"
