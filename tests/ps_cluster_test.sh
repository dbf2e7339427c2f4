#!/usr/bin/env bash
# Parameter-server training as separate processes (issue 21): `osprey launch --workers 2 --ps 2`
# runs `osprey train --strategy parameter_server` as the chief and two workers beside two
# `osprey ps` tasks, all on loopback.
#   1. Worker 1 is killed (SIGKILL) mid-training: the chief re-schedules its step on worker 0,
#      launch restarts worker 1, which rejoins, and the job finishes with a trained model.
#   2. ps 1 is killed (SIGKILL) after its first checkpoint: launch restarts it, it restores its
#      shard from the checkpoint, and the job finishes with a trained model.
# Usage: ps_cluster_test.sh path/to/osprey
set -u
osprey=$1
tmp=$(mktemp -d)
launch_pid=
cleanup() {
  [ -n "$launch_pid" ] && kill "$launch_pid" 2>/dev/null && wait "$launch_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && tail -n 30 "$tmp/out"; failures=$((failures + 1)); }

# The pid of the task whose OSPREY_CONFIG says it is TYPE INDEX ("worker" 1). One scan of /proc
# can miss it while both cores are busy (once in 30 runs of scripts/stress_tests.sh: pgrep's
# list and the read of each environment race the tasks' own work), so it looks again for up to
# 5 s; the epoch it must be killed in lasts longer than that.
task_pid() {
  local want="\"task\":{\"index\":$2,\"type\":\"$1\"}"
  for _ in $(seq 50); do
    for p in $(pgrep -f "osprey (train|ps)"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^OSPREY_CONFIG=.*$want" && { echo "$p"; return; }
    done
    sleep 0.1
  done
}

# Waits (up to 120 s) until the job's output matches the pattern.
wait_for() {
  for _ in $(seq 1200); do
    grep -q "$1" "$tmp/out" 2>/dev/null && return 0
    kill -0 "$launch_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# 150 steps an epoch (about 2 s here): the kill comes a poll, a pgrep and a read of every
# candidate's environment after "Epoch 2/4", and the restarted worker must start and rejoin
# before the job ends. With 40 steps, under load, the job could end first (CI failed so once).
run_job() {  # extra osprey train flags...
  "$osprey" launch --workers 2 --ps 2 --ps-checkpoint-dir "$tmp/ckpt" --max-restarts 2 -- \
    "$osprey" train --strategy parameter_server --epochs 4 --steps-per-epoch 150 --batch-size 64 \
    --optimizer sgd --lr 0.05 --timeout 60 --output "$tmp/model" "$@" >"$tmp/out" 2>&1 &
  launch_pid=$!
}

finish_job() {  # name
  wait "$launch_pid"
  local code=$?
  launch_pid=
  [ "$code" = 0 ] || fail "$1: launch exited with $code"
  local acc
  acc=$(sed -n 's/.*\[chief\] test loss: [0-9.]* - test accuracy: \([0-9.]*\).*/\1/p' "$tmp/out")
  [ -n "$acc" ] || fail "$1: no test accuracy from the chief"
  awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.6) }' || fail "$1: test accuracy $acc, expected above 0.6"
  [ -s "$tmp/model/model.safetensors" ] || fail "$1: no model saved"
}

# kill_during NAME TYPE INDEX: runs the job, kills task TYPE INDEX with SIGKILL once epoch 2 has
# started (after the first epoch's ps checkpoints), and checks the job still ends trained and that
# launch restarted the task.
kill_during() {
  rm -rf "$tmp/ckpt" "$tmp/model"
  run_job
  if wait_for "Epoch 2/4"; then
    pid=$(task_pid "$2" "$3")
    if [ -n "$pid" ]; then kill -9 "$pid"; else fail "$1: $2 $3 not found"; fi
  else
    fail "$1: training did not reach epoch 2"
  fi
  finish_job "$1"
  grep -q "osprey launch: $2 $3 was killed by signal 9 (Killed); restarting it" "$tmp/out" ||
    fail "$1: launch did not restart $2 $3"
}

# 1. A worker killed mid-training: its step runs elsewhere, it rejoins.
kill_during "worker kill" worker 1
grep -q "worker 1 at .* failed during step .*; the step is re-scheduled on another worker" "$tmp/out" ||
  fail "worker kill: worker 1's step was not re-scheduled"
grep -q "worker 1 at .* is back after .* s: it rejoins" "$tmp/out" || fail "worker kill: worker 1 did not rejoin"

# 2. A ps killed after its first checkpoint (the chief asks for one at each epoch's end).
kill_during "ps kill" ps 1
grep -q "\[ps 1\].*restored" "$tmp/out" || fail "ps kill: ps 1 did not restore its shard"

[ "$failures" = 0 ] && echo "ps_cluster_test: all checks passed"
exit "$failures"
