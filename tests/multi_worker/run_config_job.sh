#!/usr/bin/env bash
# Starts a 2-worker job the way seed 000 does it by hand: two independent processes, each with its
# own OSPREY_CONFIG (same cluster, its own task index), no mpirun; rendezvous at worker 0's
# address on loopback. Usage: run_config_job.sh [--die] [--var NAME] PROGRAM [ARGS...]
# --die: worker 1 is expected to exit 3 mid-training and worker 0 to pass (it checks the error).
# --var: the variable that carries the cluster spec, OSPREY_CONFIG (default) or TF_CONFIG.
set -euo pipefail
die=0
var=OSPREY_CONFIG
while [[ ${1:-} == --* ]]; do
  case $1 in
    --die) die=1; shift ;;
    --var) var=$2; shift 2 ;;
    *) echo "run_config_job: unknown option $1" >&2; exit 2 ;;
  esac
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cluster="{\"worker\": [\"127.0.0.1:${port}\", \"127.0.0.1:$((port + 1))\"]}"
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT
for i in 0 1; do
  env "$var={\"cluster\": ${cluster}, \"task\": {\"type\": \"worker\", \"index\": $i}}" \
    OSPREY_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE OSPREY_TEST_DIE=$([[ $die == 1 ]] && echo 1 || true) \
    timeout 300 "$@" >"$logs/$i.log" 2>&1 &
  pids[$i]=$!
done
rc=()
for i in 0 1; do
  set +e; wait "${pids[$i]}"; rc[$i]=$?; set -e
  sed "s/^/[worker $i] /" "$logs/$i.log"
done
echo "exit codes: worker 0 ${rc[0]}, worker 1 ${rc[1]}"
if [[ $die == 1 ]]; then
  [[ ${rc[0]} == 0 && ${rc[1]} == 3 ]]
else
  [[ ${rc[0]} == 0 && ${rc[1]} == 0 ]]
fi
