#!/usr/bin/env bash
# Deadlines (issue 20; ctest label mpi): a worker of `osprey train --strategy multi_worker` stopped
# with SIGSTOP mid-training makes the others fail, within the deadline and its grace period, with
# an error naming the stopped rank, instead of hanging:
#   - 3 MPI workers under mpirun, rank 2 stopped: rank 0 or 1 (the first to report ends the job)
#     names rank 2 and says where the other waits;
#   - 2 Gloo workers started by hand with OSPREY_CONFIG, worker 1 stopped: worker 0 names rank 1;
#   - the same with the chief (rank 0, which serves the rendezvous store) stopped: worker 1 names
#     rank 0 as the chief.
# Usage: deadline_test.sh path/to/osprey
set -u
osprey=$1
if ! command -v mpirun >/dev/null; then echo "deadline_test: skipped, no mpirun"; exit 77; fi
tmp=$(mktemp -d)
cleanup() {
  pkill -9 -f -- "--output $tmp/" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f:"; tail -c 2000 "$f"; echo; }; done
  failures=$((failures + 1))
}
timeout_s=3
grace_s=1.5     # comm::liveness_grace(3 s)
slack_s=15      # start-up of the error path and mpirun's teardown on 2 loaded cores
bound=$(/usr/bin/python3 -c "print($timeout_s + $grace_s + $slack_s)")
export OSPREY_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
train=(train --strategy multi_worker --timeout "$timeout_s" --optimizer sgd --epochs 50
  --steps-per-epoch 400 --batch-size 60)

# The pid of the `osprey train` whose environment has NAME=VALUE, once it trains (its job's log
# shows a progress bar); empty after 120 s.
worker_pid() {  # worker_pid OUTPUT_DIR NAME=VALUE LOG
  for _ in $(seq 1 1200); do
    if grep -q "Epoch 1/" "$3" 2>/dev/null; then
      for p in $(pgrep -f -- "--output $1"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "$2"; then
          echo "$p"
          return
        fi
      done
    fi
    sleep 0.1
  done
}

# Waits for PID (a child of this shell) to end, at most 120 s; sets rc, and took to the seconds
# since START.
wait_from() {  # wait_from START PID
  for _ in $(seq 1 2400); do kill -0 "$2" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$2" 2>/dev/null && kill -9 "$2"
  wait "$2"
  rc=$?
  took=$(/usr/bin/python3 -c "import time; print(round(time.time() - $1, 1))")
}

within_bound() { /usr/bin/python3 -c "import sys; sys.exit(0 if $1 <= $bound else 1)"; }

# Stops VICTIM with SIGSTOP a second into training, waits for the job process WAITED to end;
# sets rc and took, and checks took against the bound.
stop_and_time() {  # stop_and_time LABEL VICTIM WAITED
  sleep 1
  local start
  start=$(/usr/bin/python3 -c "import time; print(time.time())")
  kill -STOP "$2"
  wait_from "$start" "$3"
  echo "$1 ended with exit code $rc after $took s"
  within_bound "$took" || fail "$1 took $took s to fail (bound $bound s)"
}

# ---- MPI: 3 workers, rank 2 stopped -----------------------------------------------------------
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 3 -x OSPREY_NUM_THREADS \
  -x OMP_NUM_THREADS -x OMP_WAIT_POLICY "$osprey" "${train[@]}" --output "$tmp/mpi" \
  >"$tmp/mpi.log" 2>&1 &
job=$!
victim=$(worker_pid "$tmp/mpi" OMPI_COMM_WORLD_RANK=2 "$tmp/mpi.log")
if [ -z "$victim" ]; then
  fail "MPI: rank 2 never started training"
  kill -9 "$job"
else
  stop_and_time "MPI: rank 2 stopped; mpirun" "$victim" "$job"
  [ "$rc" != 0 ] || fail "MPI: the job succeeded with rank 2 stopped"
  # The first of ranks 0 and 1 to report ends the job (osprey calls MPI_Abort on an error), so
  # the other's report may never be printed. Each step has two collectives (the gradients'
  # all-reduce, the metrics' all-gather of outputs); rank 2 may stop before either.
  grep -Eq "passed its deadline of 3000 ms on rank [01] of 3: rank 2 did not respond within 1500 ms" \
    "$tmp/mpi.log" || fail "MPI: no rank named the stopped rank 2"
  grep -Eq "rank 2 did not respond within 1500 ms \(stopped, hung, or busy outside any collective\); rank [01] is waiting in (all_reduce on 'gradients'|all_gather on 'outputs') \(call [0-9]+\)" \
    "$tmp/mpi.log" || fail "MPI: the report did not say where the other alive rank waits"
  kill -9 "$victim" 2>/dev/null
fi

# ---- Gloo: 2 workers started by hand, worker STOPPED (1, then the chief 0) --------------------
for stopped in 1 0; do
  other=$((1 - stopped))
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cluster="{\"worker\": [\"127.0.0.1:${port}\", \"127.0.0.1:$((port + 1))\"]}"
  out="$tmp/gloo$stopped"
  for i in 0 1; do
    OSPREY_CONFIG="{\"cluster\": ${cluster}, \"task\": {\"type\": \"worker\", \"index\": $i}}" \
      OSPREY_TEST_WORKER=$i "$osprey" "${train[@]}" --output "$out" >"$tmp/gloo${stopped}_$i.log" 2>&1 &
    pids[$i]=$!
  done
  victim=$(worker_pid "$out" "OSPREY_TEST_WORKER=$stopped" "$tmp/gloo${stopped}_0.log")
  if [ -z "$victim" ]; then
    fail "Gloo: worker $stopped never started training"
    kill -9 "${pids[0]}" "${pids[1]}"
    continue
  fi
  stop_and_time "Gloo: worker $stopped stopped; worker $other" "$victim" "${pids[$other]}"
  [ "$rc" = 1 ] || fail "Gloo: worker $other exit code $rc with worker $stopped stopped, expected 1"
  if [ "$stopped" = 1 ]; then
    want="passed its deadline of 3000 ms on rank 0 of 2: rank 1 did not respond within 1500 ms"
  else
    want="on rank 1 of 2: rank 0 (the chief, serving the rendezvous at 127.0.0.1:$port) did not respond within 1500 ms"
  fi
  grep -qF "$want" "$tmp/gloo${stopped}_$other.log" ||
    fail "Gloo: worker $other did not name the stopped worker $stopped ('$want')"
  kill -9 "$victim" 2>/dev/null
  wait "${pids[$stopped]}" 2>/dev/null
done

if [ "$failures" = 0 ]; then echo "deadline_test: all checks passed"; fi
[ "$failures" = 0 ]
