#!/usr/bin/env bash
# End-to-end fault tolerance of `osprey train` (issue 20), each check comparing final weights:
#   - kill -9 mid-epoch of `osprey train --backup`, relaunch: the saved model is byte for byte the
#     uninterrupted run's, on one device and mirrored on 2 virtual devices;
#   - a kill injected at each write, fsync and rename (OSPREY_FAULT_INJECT) never leaves a torn
#     backup: the relaunch resumes from an older backup or the new one, warns about nothing, and
#     ends byte for byte equal;
#   - a destination that cannot be written fails before any training, with the path in the error;
#     a full disk is a clear error and the previous save is untouched (root: mount namespaces);
#   - the side-car evaluator (osprey evaluate --watch) evaluates each epoch checkpoint.
# Usage: backup_restore_test.sh path/to/osprey
set -u
osprey=$1
tmp=$(mktemp -d)
bg=""
cleanup() {
  if [ -n "$bg" ]; then kill -9 "$bg" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/last_out "$tmp"/last_err; do [ -f "$f" ] && { echo "--- $f:"; tail -n 20 "$f"; }; done
  failures=$((failures + 1))
}
# train ARGS...: a short osprey train (3 epochs of 80 steps unless ARGS say otherwise);
# output in $tmp/last_out and last_err, exit code in $rc.
train() {
  local defaults=()
  case " $* " in *" --epochs "*) ;; *) defaults+=(--epochs 3) ;; esac
  case " $* " in *" --steps-per-epoch "*) ;; *) defaults+=(--steps-per-epoch 80) ;; esac
  "$osprey" train "${defaults[@]}" --batch-size 64 --seed 5 "$@" >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
}
same_model() {  # same_model DIR_A DIR_B WHAT
  for f in model.safetensors optimizer.safetensors; do
    cmp -s "$1/$f" "$2/$f" || fail "$3: $f differs from the uninterrupted run's"
  done
}

# ---- kill -9 mid-epoch, relaunch: bitwise equal -------------------------------------------------
for mode in one_device mirrored; do
  extra=()
  [ "$mode" = mirrored ] && extra=(--strategy mirrored --devices 2)
  train "${extra[@]}" --output "$tmp/ref_$mode"
  [ "$rc" = 0 ] || fail "$mode reference run: exit code $rc"
  "$osprey" train --epochs 3 --steps-per-epoch 80 --batch-size 64 --seed 5 "${extra[@]}" \
    --backup "$tmp/backup_$mode" --backup-freq 30 --output "$tmp/out_$mode" \
    >"$tmp/last_out" 2>"$tmp/last_err" &
  bg=$!
  # Kill as soon as the first backup (step 30 of 240) is complete.
  for _ in $(seq 1 3000); do
    [ -d "$tmp/backup_$mode/ckpt-000000000030" ] && break
    sleep 0.01
  done
  kill -9 "$bg" 2>/dev/null
  wait "$bg"
  rc=$?
  bg=""
  [ "$rc" = 137 ] || fail "$mode: the run was not killed mid-training (exit code $rc)"
  [ -e "$tmp/out_$mode" ] && fail "$mode: the killed run saved its model"
  train "${extra[@]}" --backup "$tmp/backup_$mode" --backup-freq 30 --output "$tmp/out_$mode"
  [ "$rc" = 0 ] || fail "$mode relaunch: exit code $rc"
  grep -q "resumed from the backup $tmp/backup_$mode/ckpt-0000000" "$tmp/last_out" ||
    fail "$mode relaunch: it did not resume from a backup"
  # It says so as training starts, before the first epoch's line.
  [ "$(grep -m1 -n -e "resumed from the backup" -e "^Epoch " "$tmp/last_out" | cut -d: -f2-)" \
    = "$(grep -m1 "resumed from the backup" "$tmp/last_out")" ] ||
    fail "$mode relaunch: 'resumed' came after an epoch: $(head -c 600 "$tmp/last_out")"
  same_model "$tmp/ref_$mode" "$tmp/out_$mode" "$mode kill -9 and relaunch"
  [ -e "$tmp/backup_$mode" ] && fail "$mode: the finished run left its backups"
done

# ---- a kill at each write, fsync and rename of the backups --------------------------------------
# One epoch of 40 steps, a backup every 20: the points are those of two backups and the final
# save. The n-th point of each kind in turn (every rename, a sample of writes and fsyncs) until
# the run gets through.
train --epochs 1 --steps-per-epoch 40 --output "$tmp/ref_inject"
[ "$rc" = 0 ] || fail "injection reference run: exit code $rc"
injected=0
for spec in rename:1 fsync:3 write:5; do
  point=${spec%%:*}
  stride=${spec##*:}
  n=1
  while [ "$n" -le 80 ]; do
    rm -rf "$tmp/inject_out"
    OSPREY_FAULT_INJECT="$point:$n" train --epochs 1 --steps-per-epoch 40 \
      --backup "$tmp/inject_backup" --backup-freq 20 --output "$tmp/inject_out"
    [ "$rc" = 0 ] && break  # fewer than n such points: the run went through
    injected=$((injected + 1))
    [ "$rc" = 137 ] || fail "$point #$n: exit code $rc, expected 137"
    grep -q "fault injection: killed at $point #$n" "$tmp/last_err" || fail "$point #$n: no injection message"
    train --epochs 1 --steps-per-epoch 40 --backup "$tmp/inject_backup" --backup-freq 20 \
      --output "$tmp/inject_out"
    [ "$rc" = 0 ] || fail "$point #$n relaunch: exit code $rc"
    grep -q "warning" "$tmp/last_err" && fail "$point #$n relaunch: a torn backup was found"
    same_model "$tmp/ref_inject" "$tmp/inject_out" "kill at $point #$n"
    n=$((n + stride))
  done
done
[ "$injected" -ge 20 ] || fail "only $injected injected kills: the points were not reached"
echo "backup_restore_test: $injected kills injected"

# ---- destinations that cannot be written fail before training ----------------------------------
echo "not a folder" >"$tmp/a_file"
train --output "$tmp/a_file/model"
[ "$rc" = 1 ] || fail "output below a file: exit code $rc, expected 1"
grep -q "$tmp/a_file: is a file where a folder is expected" "$tmp/last_err" || fail "output below a file: message"
grep -q "Epoch 1/3" "$tmp/last_out" && fail "output below a file: it trained first"
train --output "$tmp/a_file"
grep -q "$tmp/a_file: exists and is not a directory" "$tmp/last_err" || fail "output onto a file: message"
train --backup "$tmp/a_file/backup"
grep -q "$tmp/a_file: is a file where a folder is expected" "$tmp/last_err" || fail "backup below a file: message"
grep -q "Epoch 1/3" "$tmp/last_out" && fail "backup below a file: it trained first"

if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  # A read-only file system, and a full one holding an earlier save (mount namespaces: nothing
  # outside this test sees the mounts).
  mkdir -p "$tmp/ro" "$tmp/full"
  unshare -m sh -c "mount -t tmpfs -o ro,size=1m tmpfs '$tmp/ro' && exec '$osprey' train --epochs 1 --steps-per-epoch 5 --output '$tmp/ro/model'" \
    >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
  [ "$rc" = 1 ] || fail "read-only output: exit code $rc, expected 1"
  grep -q "$tmp/ro: cannot save $tmp/ro/model here: Read-only file system" "$tmp/last_err" || fail "read-only output: message"
  grep -q "Epoch 1/1" "$tmp/last_out" && fail "read-only output: it trained first"
  unshare -m sh -c "mount -t tmpfs -o size=12m tmpfs '$tmp/full' && cp -r '$tmp/ref_inject' '$tmp/full/model' &&
    '$osprey' train --epochs 1 --steps-per-epoch 5 --output '$tmp/full/model'; echo rc=\$?;
    cmp -s '$tmp/ref_inject/model.safetensors' '$tmp/full/model/model.safetensors' && echo previous-intact;
    ls -a '$tmp/full'" >"$tmp/last_out" 2>"$tmp/last_err"
  grep -qx "rc=1" "$tmp/last_out" || fail "full disk: expected exit code 1"
  grep -q "No space left on device" "$tmp/last_err" || fail "full disk: message"
  grep -qx "previous-intact" "$tmp/last_out" || fail "full disk: the previous save was damaged"
  grep -q "model.tmp-" "$tmp/last_out" && fail "full disk: the staging folder was left behind"
else
  echo "backup_restore_test: read-only and full-disk checks need root and unshare; not run"
fi

# ---- the side-car evaluator ------------------------------------------------------------------------
# osprey evaluate --watch evaluates each epoch checkpoint as osprey train writes it, with the very
# numbers a later `osprey evaluate` of that checkpoint prints. Started before training has created
# the folder, as docs/fault_tolerance.md shows it: it waits for the folder.
"$osprey" evaluate --watch "$tmp/ckpts" --max-evaluations 3 --poll 0.2 >"$tmp/watch_out" 2>&1 &
bg=$!
for _ in $(seq 1 300); do grep -q "^watching" "$tmp/watch_out" && break; sleep 0.1; done
grep -q "it does not exist yet, waiting for it to appear" "$tmp/watch_out" ||
  fail "the watcher did not say it waits for the folder: $(head -1 "$tmp/watch_out")"
train --checkpoint-dir "$tmp/ckpts" --output ""
[ "$rc" = 0 ] || fail "training with --checkpoint-dir: exit code $rc"
for _ in $(seq 1 600); do kill -0 "$bg" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$bg" 2>/dev/null; then fail "the watcher did not stop after 3 evaluations"; fi
wait "$bg"
rc=$?
bg=""
[ "$rc" = 0 ] || fail "the watcher: exit code $rc"
for e in 1 2 3; do
  want=$("$osprey" evaluate "$tmp/ckpts/epoch_$e" 2>/dev/null)
  grep -qxF -- "$want" "$tmp/watch_out" || fail "the watcher's line for epoch_$e is not '$want'"
done

if [ "$failures" = 0 ]; then echo "backup_restore_test: all checks passed"; fi
[ "$failures" = 0 ]
