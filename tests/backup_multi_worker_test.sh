#!/usr/bin/env bash
# BackupAndRestore across processes (issue 20; ctest label mpi), each check comparing final
# weights with the uninterrupted 2-worker run:
#   - 2 MPI workers, rank 1 killed with kill -9 after the first backup; the relaunched job
#     resumes from the chief's backup and saves the same bytes;
#   - elastic: the backup of the killed 2-worker job resumed on 1 worker with 2 virtual devices
#     and on 1 worker with 1 device, equal within 1e-5 relative (another reduction order);
#   - osprey launch --max-restarts restarts the job after a rank dies, and it resumes;
#   - the kill matrix's multi-worker rows (issue 27): each rank killed inside an all-reduce
#     (OSPREY_FAULT_INJECT=allreduce:N, once every rank has entered it) and inside a backup of
#     its own (write:N in the third backup); the relaunched job resumes from the last whole
#     backup and saves the same bytes;
#   - chief-only writing: after a 2-worker run only the chief's model exists, and the other
#     worker's temporary save folder is gone.
# Usage: backup_multi_worker_test.sh path/to/osprey
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
set -u
osprey=$1
if ! command -v mpirun >/dev/null; then echo "backup_multi_worker_test: skipped, no mpirun"; exit 77; fi
tmp=$(mktemp -d)
bg=""
cleanup() {
  if [ -n "$bg" ]; then kill -9 "$bg" 2>/dev/null; fi
  pkill -9 -f -- "--backup $tmp/" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/worker_tmp" "$tmp/run"
export TMPDIR=$tmp/worker_tmp  # where a non-chief worker stages the saves it throws away
failures=0
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/last_out "$tmp"/last_err; do [ -f "$f" ] && { echo "--- $f:"; tail -n 20 "$f"; }; done
  failures=$((failures + 1))
}
# SGD: the elastic comparison needs an optimizer that does not amplify rounding. Adam's update
# m / sqrt(v) gives a weight with a near-zero gradient a step of about lr whose sign is rounding
# noise, so 1 device and 2 devices part by 0.4 relative after 240 steps even from scratch; SGD's
# stay within 3e-6.
common=(--optimizer sgd --lr 0.05 --epochs 3 --steps-per-epoch 80 --batch-size 64 --seed 5)
args=(train --strategy multi_worker "${common[@]}")
launch2() {  # launch2 ARGS...: 2 workers of osprey train; $rc
  "$osprey" launch --launcher mpirun -n 2 -- "$osprey" "${args[@]}" "$@" >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
}
# max relative difference of two model.safetensors (float32), as the distribute tests measure it
max_rel_diff() { /usr/bin/python3 "$tests_dir/max_rel_diff.py" "$1" "$2"; }

launch2 --output "$tmp/run/ref"
[ "$rc" = 0 ] || fail "reference 2-worker run: exit code $rc"
# Chief-only writing: the model, nothing else, and no leftover of worker 1's throwaway save.
[ "$(ls "$tmp/run")" = ref ] || fail "after a 2-worker run $tmp/run holds: $(ls "$tmp/run")"
[ -z "$(ls "$tmp/worker_tmp")" ] || fail "worker temporary folders left: $(ls "$tmp/worker_tmp")"

# ---- kill -9 of rank 1 after the first backup, relaunch: bitwise equal --------------------------
"$osprey" launch --launcher mpirun -n 2 --max-restarts 0 -- "$osprey" "${args[@]}" \
  --backup "$tmp/backup" --backup-freq 30 --output "$tmp/run/out" >"$tmp/last_out" 2>"$tmp/last_err" &
bg=$!
for _ in $(seq 1 6000); do
  [ -d "$tmp/backup/ckpt-000000000030" ] && break
  sleep 0.01
done
killed=""
for p in $(pgrep -f -- "--backup $tmp/backup"); do
  # the worker itself, not the osprey launch-worker that watches it
  grep -q "launch-worker" "/proc/$p/cmdline" 2>/dev/null && continue
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then
    kill -9 "$p" && killed=$p
  fi
done
[ -n "$killed" ] || fail "no rank 1 worker to kill"
wait "$bg"
rc=$?
bg=""
[ "$rc" = 137 ] || fail "killed job: exit code $rc, expected 137"
grep -q "rank 1 was killed by signal 9" "$tmp/last_err" || fail "killed job: the launcher did not name rank 1"
[ -e "$tmp/run/out" ] && fail "the killed job saved its model"
cp -r "$tmp/backup" "$tmp/backup_elastic2"
cp -r "$tmp/backup" "$tmp/backup_elastic1"
launch2 --backup "$tmp/backup" --backup-freq 30 --output "$tmp/run/out"
[ "$rc" = 0 ] || fail "relaunch: exit code $rc"
grep -q "resumed from the backup $tmp/backup/ckpt-" "$tmp/last_out" || fail "relaunch: it did not resume"
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$tmp/run/ref/$f" "$tmp/run/out/$f" || fail "2 workers, kill and relaunch: $f differs"
done

# ---- osprey launch restarts the job by itself: rank 1 dies at its 6th rename (inside a backup of
# its own, thrown away) in the first attempt only; the second attempt resumes from the chief's
# backup and ends bitwise equal.
"$osprey" launch --launcher mpirun -n 2 --max-restarts 2 -- sh -c '
  if [ "$OMPI_COMM_WORLD_RANK" = 1 ] && [ ! -e "$0/failed_once" ]; then
    touch "$0/failed_once"; export OSPREY_FAULT_INJECT=rename:6
  fi
  shift; exec "$@"' "$tmp" -- "$osprey" "${args[@]}" --backup "$tmp/backup_restart" \
  --backup-freq 30 --output "$tmp/run/restarted" >"$tmp/last_out" 2>"$tmp/last_err"
rc=$?
[ "$rc" = 0 ] || fail "restarted job: exit code $rc"
grep -q "attempt 1 of 3 ended: rank 1 failed with exit code 137; restarting the job (2 restarts left)" \
  "$tmp/last_err" || fail "restarted job: the first attempt's ending was not reported"
grep -q "attempt 2 of 3 succeeded" "$tmp/last_err" || fail "restarted job: no second attempt"
grep -q "resumed from the backup $tmp/backup_restart/ckpt-" "$tmp/last_out" || fail "restarted job: it did not resume"
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$tmp/run/ref/$f" "$tmp/run/restarted/$f" || fail "restarted job: $f differs"
done

# ---- kill matrix: a rank killed mid-all-reduce and mid-checkpoint, then relaunched ---------------
# Per rank, the run reaches about 496 all-reduces (240 steps, two gradient buckets, the metrics)
# and 72 writes (8 backups and the final save; rank 1's are thrown away). allreduce:250 is in
# epoch 2; write:20 is inside the third backup (step 90), after two whole ones.
kill_case() {  # kill_case NAME RANK SPEC
  local name=$1 rank=$2 spec=$3 dir=$tmp/kill_$1
  "$osprey" launch --launcher mpirun -n 2 --max-restarts 0 -- sh -c '
    if [ "$OMPI_COMM_WORLD_RANK" = "$0" ]; then export OSPREY_FAULT_INJECT=$1; fi
    shift 2; exec "$@"' "$rank" "$spec" -- "$osprey" "${args[@]}" --backup "$dir/backup" \
    --backup-freq 30 --output "$dir/out" >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
  [ "$rc" = 137 ] || fail "$name: exit code $rc, expected 137"
  grep -q "fault injection: killed at ${spec%%:*} #${spec##*:}" "$tmp/last_err" ||
    fail "$name: rank $rank was not killed at $spec"
  grep -q "rank $rank failed with exit code 137" "$tmp/last_err" ||
    fail "$name: the launcher did not name rank $rank"
  [ -e "$dir/out" ] && fail "$name: the killed job saved its model"
  launch2 --backup "$dir/backup" --backup-freq 30 --output "$dir/out"
  [ "$rc" = 0 ] || fail "$name relaunch: exit code $rc"
  grep -q "resumed from the backup $dir/backup/ckpt-" "$tmp/last_out" || fail "$name relaunch: it did not resume"
  grep -qi "warning" "$tmp/last_err" && fail "$name relaunch: a torn backup was found"
  for f in model.safetensors optimizer.safetensors; do
    cmp -s "$tmp/run/ref/$f" "$dir/out/$f" || fail "$name, kill and relaunch: $f differs"
  done
  [ -e "$dir/backup" ] && fail "$name: the finished job left its backups"
  echo "kill matrix: $name (rank $rank at $spec): resumed from $(sed -n 's/.*resumed from the backup .*\/\(ckpt-[0-9]*\).*/\1/p' "$tmp/last_out" | head -1), bitwise equal"
}
kill_case worker_mid_all_reduce 1 allreduce:250
kill_case chief_mid_all_reduce 0 allreduce:250
kill_case chief_mid_checkpoint 0 write:20
kill_case worker_mid_checkpoint 1 write:20

# ---- elastic: the 2-worker backup resumed on 1 worker -----------------------------------------
for devices in 2 1; do
  strategy=(--strategy mirrored --devices 2)
  [ "$devices" = 1 ] && strategy=()
  "$osprey" train "${common[@]}" "${strategy[@]}" \
    --backup "$tmp/backup_elastic$devices" --backup-freq 30 --output "$tmp/elastic$devices" \
    >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
  [ "$rc" = 0 ] || fail "elastic resume on $devices device(s): exit code $rc"
  grep -q "resumed from the backup" "$tmp/last_out" || fail "elastic $devices: it did not resume"
  diff=$(max_rel_diff "$tmp/elastic$devices/model.safetensors" "$tmp/run/ref/model.safetensors")
  echo "elastic resume on 1 worker with $devices device(s): max relative difference $diff"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$diff') < 1e-5 else 1)" ||
    fail "elastic $devices: max relative difference $diff, expected below 1e-5"
done

if [ "$failures" = 0 ]; then echo "backup_multi_worker_test: all checks passed"; fi
[ "$failures" = 0 ]
