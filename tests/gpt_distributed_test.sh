#!/usr/bin/env bash
# The GPT (osprey train --model gpt) across processes and through BackupAndRestore, as the CNN is
# tested in gloo_launch_test.sh, backup_restore_test.sh and backup_multi_worker_test.sh (issue 43).
# A tiny GPT (2 layers, n_embd 32, block 32) on the first 100 kB of Tiny Shakespeare:
#   - 2 workers over Gloo, each process given its TF_CONFIG by hand (loopback, no mpirun), and 2
#     workers over MPI (mpirun -np 2) save the weights of the one-process run at the same global
#     batch within 1e-5 relative (SGD: another reduction order, no amplified rounding);
#   - kill -9 of a one-process run after its first backup (mid-epoch, with dropout and AdamW),
#     relaunch: the saved model and optimizer are byte for byte the uninterrupted run's;
#   - 2 Gloo workers, rank 1 killed inside an all-reduce (OSPREY_FAULT_INJECT): worker 0 fails
#     naming the lost peer, and the relaunched job resumes from the chief's backup and saves the
#     uninterrupted 2-worker run's bytes.
# Usage: gpt_distributed_test.sh path/to/osprey path/to/tinyshakespeare.txt mpi|no-mpi
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
set -u
osprey=$1
with_mpi=$3
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/worker_tmp"
export TMPDIR=$tmp/worker_tmp  # where the non-chief worker stages the saves it throws away
head -c 100000 "$2" >"$tmp/text.txt"
failures=0
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/last_out "$tmp"/last_err "$tmp"/worker_1; do
    [ -f "$f" ] && { echo "--- $f:"; tail -n 20 "$f"; }
  done
  failures=$((failures + 1))
}
gpt=(train --model gpt --data "$tmp/text.txt" --block-size 32 --n-layer 2 --n-head 2 --n-embd 32
  --batch-size 16 --seed 3)
# SGD for the comparisons across processes (backup_multi_worker_test.sh says why not Adam).
sgd=("${gpt[@]}" --optimizer sgd --lr 0.5 --epochs 2 --steps-per-epoch 15)
# max relative difference of two model.safetensors (float32), as the distribute tests measure it
max_rel_diff() { /usr/bin/python3 "$tests_dir/max_rel_diff.py" "$1" "$2"; }
close_to_one_process() {  # close_to_one_process WHAT DIR: DIR's model within 1e-5 of $tmp/one's
  local diff
  diff=$(max_rel_diff "$2/model.safetensors" "$tmp/one/model.safetensors") ||
    { fail "$1: cannot compare $2/model.safetensors"; return; }
  echo "$1: max relative difference $diff from one process"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$diff') <= 1e-5 else 1)" ||
    fail "$1: weights differ from the one-process run's by $diff relative"
}
same_bytes() {  # same_bytes DIR_A DIR_B WHAT
  for f in model.safetensors optimizer.safetensors; do
    cmp -s "$1/$f" "$2/$f" || fail "$3: $f differs from the uninterrupted run's"
  done
}
# gloo2 [FAULT] ARGS...: osprey ARGS in 2 worker processes over Gloo, each with its TF_CONFIG
# (worker 0 the chief at a free loopback port); FAULT, when given as fault=SPEC, is worker 1's
# OSPREY_FAULT_INJECT. Worker 0's output in last_out and last_err, worker 1's in worker_1; exit
# codes in $rc0 and $rc1.
gloo2() {
  local fault=""
  case $1 in fault=*) fault=${1#fault=}; shift ;; esac
  local port
  port=$(/usr/bin/python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  local cluster="{\"worker\": [\"127.0.0.1:$port\", \"127.0.0.1:$((port + 1))\"]}"
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"worker\", \"index\": 0}}" \
    OSPREY_NUM_THREADS=1 "$osprey" "$@" --strategy multi_worker --communication gloo \
    >"$tmp/last_out" 2>"$tmp/last_err" &
  pids=($!)
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"worker\", \"index\": 1}}" \
    OSPREY_NUM_THREADS=1 OSPREY_FAULT_INJECT=$fault "$osprey" "$@" --strategy multi_worker \
    --communication gloo >"$tmp/worker_1" 2>&1 &
  pids+=($!)
  wait "${pids[0]}"
  rc0=$?
  wait "${pids[1]}"
  rc1=$?
  pids=()
}

# ---- one process, 2 Gloo workers (TF_CONFIG), 2 MPI workers: the same weights -----------------
"$osprey" "${sgd[@]}" --output "$tmp/one" >"$tmp/last_out" 2>"$tmp/last_err"
rc=$?
[ "$rc" = 0 ] || fail "one process: exit code $rc"

gloo2 "${sgd[@]}" --output "$tmp/gloo"
[ "$rc0$rc1" = 00 ] || fail "2 Gloo workers: exit codes $rc0 and $rc1, expected 0"
grep -q "MultiWorkerMirroredStrategy: 2 workers over gloo" "$tmp/last_err" ||
  fail "2 Gloo workers: not 2 workers over gloo"
close_to_one_process "2 Gloo workers (TF_CONFIG)" "$tmp/gloo"
[ "$(ls "$tmp/worker_tmp")" = "" ] || fail "worker 1 left its throwaway save: $(ls "$tmp/worker_tmp")"

if [ "$with_mpi" = mpi ] && command -v mpirun >/dev/null; then
  OSPREY_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    -x OSPREY_NUM_THREADS -np 2 "$osprey" "${sgd[@]}" --strategy multi_worker \
    --communication mpi --output "$tmp/mpi" >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
  [ "$rc" = 0 ] || fail "2 MPI workers: exit code $rc"
  grep -q "MultiWorkerMirroredStrategy: 2 workers over mpi" "$tmp/last_err" ||
    fail "2 MPI workers: not 2 workers over mpi"
  close_to_one_process "2 MPI workers (mpirun)" "$tmp/mpi"
else
  echo "gpt_distributed_test: the MPI job not run (no mpirun, or osprey built without MPI)"
fi

# ---- BackupAndRestore: kill -9 after the first backup, relaunch: bitwise equal -----------------
# 3 epochs of 40 steps, a backup every 20: the kill lands in epoch 1, mid-epoch.
adamw=("${gpt[@]}" --dropout 0.1 --optimizer adamw --lr 3e-3 --epochs 3 --steps-per-epoch 40)
"$osprey" "${adamw[@]}" --output "$tmp/ref" >"$tmp/last_out" 2>"$tmp/last_err"
rc=$?
[ "$rc" = 0 ] || fail "uninterrupted run: exit code $rc"
"$osprey" "${adamw[@]}" --backup "$tmp/backup" --backup-freq 20 --output "$tmp/out" \
  >"$tmp/last_out" 2>"$tmp/last_err" &
pids=($!)
for _ in $(seq 1 3000); do
  [ -d "$tmp/backup/ckpt-000000000020" ] && break
  sleep 0.01
done
kill -9 "${pids[0]}" 2>/dev/null
wait "${pids[0]}"
rc=$?
pids=()
[ "$rc" = 137 ] || fail "kill -9: the run was not killed mid-training (exit code $rc)"
[ -e "$tmp/out" ] && fail "kill -9: the killed run saved its model"
"$osprey" "${adamw[@]}" --backup "$tmp/backup" --backup-freq 20 --output "$tmp/out" \
  >"$tmp/last_out" 2>"$tmp/last_err"
rc=$?
[ "$rc" = 0 ] || fail "relaunch: exit code $rc"
grep -q "resumed from the backup $tmp/backup/ckpt-0000000" "$tmp/last_out" ||
  fail "relaunch: it did not resume from a backup"
same_bytes "$tmp/ref" "$tmp/out" "one process, kill -9 and relaunch"
[ -e "$tmp/backup" ] && fail "one process: the finished run left its backups"

# ---- BackupAndRestore across 2 Gloo workers: rank 1 killed inside an all-reduce ----------------
# A backup every 5 steps; worker 1's 40th all-reduce (gradients, metrics and validation count)
# falls in epoch 2, after the backup at step 20.
gloo2 fault=allreduce:40 "${sgd[@]}" --backup "$tmp/backup2" --backup-freq 5 --output "$tmp/gloo_out"
[ "$rc1" = 137 ] || fail "killed worker 1: exit code $rc1, expected 137"
grep -q "fault injection: killed at allreduce #40" "$tmp/worker_1" ||
  fail "killed worker 1: it was not killed at allreduce #40"
[ "$rc0" = 1 ] || fail "worker 0: exit code $rc0, expected 1"
grep -q "failed on rank 0 of 2: rank 1 died or left the job" "$tmp/last_err" ||
  fail "worker 0 did not name the lost rank 1"
[ -e "$tmp/gloo_out" ] && fail "the killed job saved its model"
gloo2 "${sgd[@]}" --backup "$tmp/backup2" --backup-freq 5 --output "$tmp/gloo_out"
[ "$rc0$rc1" = 00 ] || fail "relaunched 2 Gloo workers: exit codes $rc0 and $rc1, expected 0"
grep -q "resumed from the backup $tmp/backup2/ckpt-" "$tmp/last_out" ||
  fail "relaunched 2 Gloo workers: they did not resume"
echo "2 Gloo workers: rank 1 killed at allreduce #40, $(grep -o "resumed from the backup .*ckpt-[0-9]*" "$tmp/last_out" | head -1)"
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$tmp/gloo/$f" "$tmp/gloo_out/$f" ||
    fail "2 Gloo workers, kill and relaunch: $f differs from the uninterrupted 2-worker run's"
done

if [ "$failures" = 0 ]; then echo "gpt_distributed_test: all checks passed"; fi
[ "$failures" = 0 ]
