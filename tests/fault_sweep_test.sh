#!/usr/bin/env bash
# Crash consistency of every writer (issue 27), swept exhaustively with OSPREY_FAULT_INJECT
# (core/fault_injection.h): for each command below, a first run with `count` says how many writes,
# fsyncs and renames (W, F, R) it makes; then for EVERY n in 1..W, 1..F and 1..R the run is
#   killed at the n-th call (exit 137, as kill -9 would): what is left is the earlier result or the
#     new one, complete, never a torn file; the same command relaunched exits 0, warns about no
#     damaged file, leaves no temporary, and its result equals an uninterrupted run's, byte for byte;
#   failed at the n-th call (EIO): the command exits 1 (no crash) with `osprey: error: <path>: ...`,
#     leaves no *.tmp-* file or folder, and the earlier result is intact or wholly replaced by the
#     new one; then a relaunch exits 0 and equals the uninterrupted run's result.
# Every run starts from a copy of an earlier, different result in its destination, so that a save
# that lost or half-overwrote it shows. The number of kills and of failures injected must each be
# W + F + R: every point was reached and hit. The commands, on tiny data made here (a CSV of 8
# features, and Fashion-MNIST-shaped IDX files of 10,200 + 100 images; runs take a fraction of a
# second):
#   train     osprey train --output, --checkpoint-dir (ModelCheckpoint) and --backup --backup-freq 2
#             (BackupAndRestore) on 3 steps: the final model is bitwise the uninterrupted run's;
#   tune      osprey tune resuming a study of 1 completed trial to 2 (trial.json, oracle.json, the
#             trial checkpoint and validation predictions): the study ends with 2 completed trials,
#             each trial completed before the kill or failure keeps its exact score, and the study
#             equals an uninterrupted resume's;
#   ensemble  osprey ensemble --models A --output DIR (ensemble.json and members/A/; one member keeps
#             the sweep short, a second would repeat the first's writes);
#   report    osprey report STUDY --output PAGE (one HTML file);
#   ps        an `osprey ps --checkpoint-dir` alone injected, serving a parameter-server job of a
#             chief and a worker for an epoch of 3 steps, which asks it for a checkpoint at the
#             epoch's end: the checkpoint is the earlier one or the new one, whole. A failed write
#             is no error of the job: the chief warns that the ps could not save and trains on.
# Usage: fault_sweep_test.sh path/to/osprey
set -u
osprey=$1
python=/usr/bin/python3  # Debian's, with numpy (scripts/setup.sh --tests)
# A RAM file system when there is one: the sweep makes some 750 runs, each with dozens of fsyncs.
tmp=$(mktemp -d -p /dev/shm fault_sweep.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp"' EXIT
work=$tmp/work  # where each swept run writes
failures=0
fail() {
  local log
  echo "FAIL: $*"
  if [ "$failures" -lt 20 ]; then  # the first failures in full; a systematic one repeats
    for log in "$tmp/out" "$tmp/err"; do [ -s "$log" ] && { echo "--- $log:"; tail -n 6 "$log"; }; done
  fi
  failures=$((failures + 1))
}
# run SPEC FUNCTION: FUNCTION (a scenario's command) with OSPREY_FAULT_INJECT=SPEC ('' for none);
# its output in $tmp/out and $tmp/err, its exit code in $rc.
run() {
  OSPREY_FAULT_INJECT=$1 "$2" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# same_tree A B: the same files with the same bytes, but for the temporaries a killed run leaves.
same_tree() { diff -r -q -x '*.tmp-*' "$1" "$2" >/dev/null 2>&1; }
# leftovers WHAT: no temporary (*.tmp-*) under the work folder (a glob: no process per check).
shopt -s globstar nullglob dotglob
leftovers() {
  local left=("$work"/**/*.tmp-*)
  [ "${#left[@]}" = 0 ] || fail "$1: temporaries left: ${left[*]:0:3}"
}
# trial_scores STUDY: "ID STATUS SCORE" per trial.json, from its top-level fields (2 spaces in,
# sorted: score, status, trial_id).
trial_scores() {
  awk '/^  "score": /{s=$2} /^  "status": /{st=$2}
       /^  "trial_id": /{t=$2; gsub(/[",]/, "", s); gsub(/[",]/, "", st); gsub(/[",]/, "", t); print t, st, s}' \
    "$1"/trial_*/trial.json
}

# ---- tiny data, models and earlier results -------------------------------------------------------
"$python" - "$tmp" <<'PY' || { echo "FAIL: cannot write the test data"; exit 1; }
import json, os, struct, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
# 8 features; the class is the sign of the first.
for name, n in (("train", 256), ("test", 64)):
    x = rng.normal(size=(n, 8)).astype("f4")
    with open(f"{d}/{name}.csv", "w") as f:
        f.write(",".join(f"f{i}" for i in range(8)) + ",label\n")
        for row, label in zip(x, (x[:, 0] > 0).astype(int)):
            f.write(",".join(f"{v:.5f}" for v in row) + f",{label}\n")
dense = lambda units, act: {"class_name": "Dense", "config": {"units": units, "activation": act}}
json.dump({"class_name": "Sequential", "config": {"build_input_shape": [None, 8],
           "layers": [dense(8, "relu"), dense(2, "softmax")]}}, open(f"{d}/net.json", "w"))
json.dump({"class_name": "Sequential", "config": {"build_input_shape": [None, 28, 28],
           "layers": [{"class_name": "Flatten"}, dense(10, "softmax")]}}, open(f"{d}/fnet.json", "w"))
# Fashion-MNIST's four IDX files (osprey tune holds out the last 10,000 training images): class c
# is a bright band of rows 3c..3c+2 on noise.
os.makedirs(f"{d}/fmnist")
def idx(path, a):
    header = struct.pack(">BBBB", 0, 0, 0x08, a.ndim) + b"".join(struct.pack(">I", s) for s in a.shape)
    open(path, "wb").write(header + a.tobytes())
for name, n in (("train", 10200), ("t10k", 100)):
    y = rng.integers(0, 10, size=n).astype("u1")
    band = (np.arange(28)[None, :] // 3 == y[:, None])[:, :, None]
    x = (rng.integers(0, 60, size=(n, 28, 28)) + 150 * band).astype("u1")
    idx(f"{d}/fmnist/{name}-images-idx3-ubyte", x)
    idx(f"{d}/fmnist/{name}-labels-idx1-ubyte", y)
open(f"{d}/space.toml", "w").write("""
[units]
type = "int"
min = 8
max = 16
step = 8

[layers]
type = "fixed"
value = 1

[learning_rate]
type = "float"
min = 1e-3
max = 1e-2
sampling = "log"
""")
PY
# setup WHAT CMD...: a run the sweeps need, which must succeed.
setup() {
  local what=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err" || { rc=$?; fail "setup: $what: exit code $rc"; exit 1; }
}

# ---- the sweep -----------------------------------------------------------------------------------
# A scenario NAME is four functions:
#   NAME_cmd      the command, writing under $work;
#   NAME_prepare  $work as each run starts: a copy of an earlier, different result;
#   NAME_after    WHAT: checks of what an injected run left (the earlier result or the new one);
#   NAME_result   WHAT: checks of a finished run's result (equal to the uninterrupted run's).
total_kills=0
total_fails=0
sweep() {
  local name=$1 before=$failures counts w f r mode point n max what spec want line
  local -A injected=([kill]=0 [fail]=0)
  "${name}_prepare"
  run count "${name}_cmd"
  [ "$rc" = 0 ] || fail "$name: the counting run: exit code $rc"
  "${name}_result" "$name: the counting run"
  counts=$(sed -n 's/^osprey: fault points reached: write=\([0-9]*\) fsync=\([0-9]*\) rename=\([0-9]*\) .*/\1 \2 \3/p' "$tmp/err")
  read -r w f r <<<"${counts:-0 0 0}"
  [ "$w" -gt 0 ] && [ "$f" -gt 0 ] && [ "$r" -gt 0 ] || fail "$name: the counting run reached write=$w fsync=$f rename=$r"
  for mode in kill fail; do
    for point in write fsync rename; do
      case $point in write) max=$w ;; fsync) max=$f ;; rename) max=$r ;; esac
      for ((n = 1; n <= max; n++)); do
        what="$name: $mode at $point #$n"
        "${name}_prepare"
        # kill: exit 137 and the injection's line; fail: exit 1, its line, and the error.
        spec=$point:$n want=137 line="osprey: fault injection: killed at $point #$n (OSPREY_FAULT_INJECT)"
        [ "$mode" = fail ] &&
          spec=$point:$n:fail want=1 line="osprey: fault injection: failed $point #$n with EIO (OSPREY_FAULT_INJECT)"
        run "$spec" "${name}_cmd"
        # A scenario whose command survives a failed write (the ps) names its own exit code.
        [ "$mode" = fail ] && declare -F "${name}_failed" >/dev/null && want=$rc
        if [ "$rc" = "$want" ] && grep -qxF "$line" "$tmp/err"; then
          injected[$mode]=$((injected[$mode] + 1))
        else
          fail "$what: exit code $rc, expected $want with the injection's line"
        fi
        if [ "$mode" = fail ]; then
          # The error names the path (under the work folder) that could not be written; a
          # scenario whose command goes on after a failed write says how in NAME_failed.
          if declare -F "${name}_failed" >/dev/null; then
            "${name}_failed" "$what"
          else
            grep -q "^osprey: error: $work\(/[^:]*\)\{0,1\}: .*Input/output error" "$tmp/err" ||
              fail "$what: no 'osprey: error: <path>: ... Input/output error'"
          fi
          leftovers "$what"
        fi
        "${name}_after" "$what"
        # The relaunch, without injection.
        run "" "${name}_cmd"
        [ "$rc" = 0 ] || fail "$what: the relaunch: exit code $rc"
        grep -Eiq "warning|damaged|corrupt|torn|truncated" "$tmp/out" "$tmp/err" &&
          fail "$what: the relaunch read a damaged file"
        "${name}_result" "$what: the relaunch"
        leftovers "$what: the relaunch"
      done
    done
    [ "${injected[$mode]}" = $((w + f + r)) ] ||
      fail "$name: ${injected[$mode]} injected in $mode mode, expected $((w + f + r))"
  done
  total_kills=$((total_kills + injected[kill]))
  total_fails=$((total_fails + injected[fail]))
  if [ "$failures" = "$before" ]; then
    echo "fault_sweep: $name: write=$w fsync=$f rename=$r: ${injected[kill]} kills and ${injected[fail]} failures injected, all recovered"
  else
    echo "fault_sweep: $name: write=$w fsync=$f rename=$r: ${injected[kill]} kills and ${injected[fail]} failures injected, $((failures - before)) checks FAILED"
  fi
}

# ---- train: the final save, ModelCheckpoint and BackupAndRestore -------------------------------
# One epoch of 3 steps, a backup after step 2: the relaunch resumes at the exact step.
train_args=(train --model "$tmp/net.json" --data "$tmp/train.csv" --test-data "$tmp/test.csv"
  --epochs 1 --steps-per-epoch 3 --batch-size 64)
train_cmd() {
  "$osprey" "${train_args[@]}" --seed 5 --output "$work/model" --checkpoint-dir "$work/ckpt" \
    --backup "$work/backup" --backup-freq 2
}
setup "train reference" "$osprey" "${train_args[@]}" --seed 5 --output "$tmp/train_ref/model" \
  --checkpoint-dir "$tmp/train_ref/ckpt"
setup "train earlier result" "$osprey" "${train_args[@]}" --seed 6 --output "$tmp/train_prev/model" \
  --checkpoint-dir "$tmp/train_prev/ckpt"
same_tree "$tmp/train_prev/model" "$tmp/train_ref/model" && fail "train: the earlier model is the reference's"
train_prepare() { rm -rf "$work" && mkdir -p "$work" && cp -r "$tmp/train_prev/model" "$tmp/train_prev/ckpt" "$work/"; }
train_after() {
  if ! same_tree "$tmp/train_prev/model" "$work/model" && ! same_tree "$tmp/train_ref/model" "$work/model"; then
    if [ ! -e "$work/model/history.json" ] && diff -r -q -x '*.tmp-*' -x history.json "$tmp/train_ref/model" "$work/model" >/dev/null 2>&1; then
      fail "$1: $work/model holds the new model without its history.json: the earlier model is lost and the new one is incomplete"
    else
      fail "$1: $work/model is neither the earlier model nor the new one: $(ls "$work/model" 2>&1 | tr '\n' ' ')"
    fi
  fi
  same_tree "$tmp/train_prev/ckpt" "$work/ckpt" || same_tree "$tmp/train_ref/ckpt" "$work/ckpt" ||
    fail "$1: $work/ckpt/epoch_1 is neither the earlier checkpoint nor the new one"
}
train_resumes=0  # relaunches that resumed from a backup: at least one must
train_result() {
  grep -q "resumed from the backup $work/backup/ckpt-" "$tmp/out" && train_resumes=$((train_resumes + 1))
  same_tree "$tmp/train_ref/model" "$work/model" || fail "$1: the model differs from the uninterrupted run's"
  same_tree "$tmp/train_ref/ckpt" "$work/ckpt" || fail "$1: the checkpoints differ from the uninterrupted run's"
  [ -e "$work/backup" ] && fail "$1: the finished run left its backups"
}

# ---- tune: trial.json, oracle.json, trial checkpoints ------------------------------------------
# A study of 1 completed trial (earlier), resumed to 2: trial 0000 must keep its exact score.
tune_cmd() {
  "$osprey" tune --space "$tmp/space.toml" --max-trials 2 --epochs 1 --train-samples 100 \
    --val-samples 20 --batch-size 32 --data "$tmp/fmnist" --seed 4 --directory "$work/study"
}
study=study/fmnist_mlp
setup "tune earlier study" "$osprey" tune --space "$tmp/space.toml" --max-trials 1 --epochs 1 \
  --train-samples 100 --val-samples 20 --batch-size 32 --data "$tmp/fmnist" --seed 4 \
  --directory "$tmp/tune_prev/study"
tune_prepare() { rm -rf "$work" && mkdir -p "$work" && cp -r "$tmp/tune_prev/study" "$work/"; }
tune_prepare
setup "tune reference" tune_cmd
mv "$work" "$tmp/tune_ref"
grep -q "completed" "$tmp/tune_prev/$study/trial_0000/trial.json" || { fail "tune: the earlier trial did not complete"; exit 1; }
completed_before=""
tune_after() {
  same_tree "$tmp/tune_prev/$study/trial_0000" "$work/$study/trial_0000" ||
    fail "$1: the completed trial 0000 was changed"
  # The trials completed when the run stopped: the relaunch must keep their scores.
  completed_before=$(trial_scores "$work/$study" | grep " completed ")
}
tune_result() {
  local now line
  grep -q "^2 trials: 2 completed, 0 failed" "$tmp/out" || fail "$1: the study did not end with 2 completed trials"
  now=$(trial_scores "$work/$study")
  [ "$now" = "$(trial_scores "$tmp/tune_ref/$study")" ] || fail "$1: trials (id status score): $now"
  while read -r line; do
    [[ -z "$line" || $'\n'$now$'\n' == *$'\n'"$line"$'\n'* ]] || fail "$1: the trial completed before, '$line', is now: $now"
  done <<<"$completed_before"
  same_tree "$tmp/tune_ref/$study" "$work/$study" || fail "$1: the study differs from the uninterrupted run's"
  completed_before=""
}

# ---- ensemble: its output folder -----------------------------------------------------------------
for s in 1 2; do
  setup "Fashion-MNIST model $s" "$osprey" train --model "$tmp/fnet.json" --data "$tmp/fmnist" \
    --epochs 1 --steps-per-epoch 2 --batch-size 32 --seed "$s" --output "$tmp/fm_model_$s"
done
ensemble_args=(ensemble --combiner average --holdout 50 --data "$tmp/fmnist")
ensemble_cmd() { "$osprey" "${ensemble_args[@]}" --models "$tmp/fm_model_1" --output "$work/ensemble"; }
setup "ensemble earlier result" "$osprey" "${ensemble_args[@]}" --models "$tmp/fm_model_2" \
  --output "$tmp/ensemble_prev/ensemble"
ensemble_prepare() { rm -rf "$work" && mkdir -p "$work" && cp -r "$tmp/ensemble_prev/ensemble" "$work/"; }
ensemble_prepare
setup "ensemble reference" ensemble_cmd
mv "$work" "$tmp/ensemble_ref"
same_tree "$tmp/ensemble_prev/ensemble" "$tmp/ensemble_ref/ensemble" && fail "ensemble: the earlier ensemble is the reference's"
ensemble_after() {
  same_tree "$tmp/ensemble_prev/ensemble" "$work/ensemble" || same_tree "$tmp/ensemble_ref/ensemble" "$work/ensemble" ||
    fail "$1: $work/ensemble is neither the earlier ensemble nor the new one"
}
ensemble_result() {
  same_tree "$tmp/ensemble_ref/ensemble" "$work/ensemble" || fail "$1: the ensemble differs from the uninterrupted run's"
}

# ---- report: its HTML page -----------------------------------------------------------------------
report_cmd() { "$osprey" report "$tmp/tune_ref/$study" --output "$work/report.html"; }
setup "earlier report" "$osprey" report "$tmp/tune_prev/$study" --output "$tmp/report_prev.html"
setup "report reference" "$osprey" report "$tmp/tune_ref/$study" --output "$tmp/report_ref.html"
cmp -s "$tmp/report_prev.html" "$tmp/report_ref.html" && fail "report: the earlier page is the reference's"
report_prepare() { rm -rf "$work" && mkdir -p "$work" && cp "$tmp/report_prev.html" "$work/report.html"; }
report_after() {
  cmp -s "$tmp/report_prev.html" "$work/report.html" || cmp -s "$tmp/report_ref.html" "$work/report.html" ||
    fail "$1: $work/report.html is neither the earlier page nor the new one"
}
report_result() { cmp -s "$tmp/report_ref.html" "$work/report.html" || fail "$1: the page differs from the reference"; }

# ---- ps: a parameter server's shard checkpoints ---------------------------------------------------
# The ps starts from an earlier job's checkpoint (which it restores, then the new job's chief
# registers anew, with overwrite), so a write that lost it shows.
free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ps_train=(train --strategy parameter_server --model "$tmp/net.json" --data "$tmp/train.csv"
  --epochs 1 --steps-per-epoch 3 --batch-size 64 --optimizer sgd --lr 0.05 --timeout 3)
# ps_job DIR SEED: the job; only the ps inherits OSPREY_FAULT_INJECT. Its exit code is the ps's
# when that is not 0 (killed at the injection), else the chief's; the ps's stderr follows the
# chief's.
ps_job() {
  local dir=$1 seed=$2 ps_pid worker_pid address spec chief_rc ps_rc
  : >"$tmp/ps_err"
  timeout 60 "$osprey" ps --listen 127.0.0.1:0 --checkpoint-dir "$dir/ps" 2>"$tmp/ps_err" &
  ps_pid=$!
  for _ in $(seq 600); do
    address=$(sed -n 's/^osprey ps: serving .* on \(127\.0\.0\.1:[0-9]*\)$/\1/p' "$tmp/ps_err")
    [ -n "$address" ] || ! kill -0 "$ps_pid" 2>/dev/null && break
    sleep 0.05
  done
  if [ -z "$address" ]; then
    wait "$ps_pid"
    ps_rc=$?
    cat "$tmp/ps_err" >&2
    return $((ps_rc == 0 ? 1 : ps_rc))
  fi
  spec="{\"chief\":[\"127.0.0.1:$(free_port)\"],\"worker\":[\"127.0.0.1:$(free_port)\"],\"ps\":[\"$address\"]}"
  env -u OSPREY_FAULT_INJECT OSPREY_CONFIG="{\"cluster\":$spec,\"task\":{\"type\":\"worker\",\"index\":0}}" \
    timeout 60 "$osprey" "${ps_train[@]}" --seed "$seed" >/dev/null 2>&1 &
  worker_pid=$!
  env -u OSPREY_FAULT_INJECT OSPREY_CONFIG="{\"cluster\":$spec,\"task\":{\"type\":\"chief\",\"index\":0}}" \
    timeout 60 "$osprey" "${ps_train[@]}" --seed "$seed" --output "$dir/model"
  chief_rc=$?
  wait "$worker_pid"
  kill -TERM "$ps_pid" 2>/dev/null
  wait "$ps_pid"
  ps_rc=$?
  cat "$tmp/ps_err" >&2
  [ "$ps_rc" != 0 ] && return "$ps_rc"
  return "$chief_rc"
}
ps_cmd() { ps_job "$work" 5; }
setup "ps earlier checkpoint" ps_job "$tmp/ps_prev" 6
ps_prepare() { rm -rf "$work" && mkdir -p "$work" && cp -r "$tmp/ps_prev/ps" "$work/"; }
ps_prepare
setup "ps reference" ps_cmd
mv "$work" "$tmp/ps_ref"
same_tree "$tmp/ps_prev/ps" "$tmp/ps_ref/ps" && fail "ps: the earlier checkpoint is the reference's"
ps_after() {
  same_tree "$tmp/ps_prev/ps" "$work/ps" || same_tree "$tmp/ps_ref/ps" "$work/ps" ||
    fail "$1: $work/ps is neither the earlier checkpoint nor the new one: $(ls "$work/ps" 2>&1 | tr '\n' ' ')"
}
ps_failed() {
  # The ps answered the chief's Checkpoint call with the error, naming the file; the chief warned
  # and finished, and the ps served on.
  [ "$rc" = 0 ] || fail "$1: exit code $rc: a failed checkpoint must not end the job"
  grep -q "a parameter server could not save its checkpoint: .*$work.*Input/output error" "$tmp/err" ||
    fail "$1: the chief did not warn that the ps could not save its checkpoint, naming the file"
}
# same_shard A B: the same checkpoint but for its version, which counts on across jobs (a ps that
# restored a later checkpoint than the reference's first is ahead by the pushes in between).
same_shard() {
  cmp -s "$1/shard.safetensors" "$2/shard.safetensors" &&
    diff -q <(grep -v '^  "version": ' "$1/manifest.json") <(grep -v '^  "version": ' "$2/manifest.json") >/dev/null
}
ps_result() {
  same_shard "$tmp/ps_ref/ps" "$work/ps" || fail "$1: the ps checkpoint differs from the uninterrupted run's"
  same_tree "$tmp/ps_ref/model" "$work/model" || fail "$1: the model differs from the uninterrupted run's"
}

# FAULT_SWEEP_SCENARIOS="tune report" runs only those.
for scenario in ${FAULT_SWEEP_SCENARIOS:-train tune ensemble report ps}; do
  sweep "$scenario"
  if [ "$scenario" = train ] && [ "$train_resumes" = 0 ]; then fail "train: no relaunch resumed from a backup"; fi
done

if [ "$failures" = 0 ]; then
  echo "fault_sweep: total: $total_kills kills and $total_fails failures injected, all recovered"
  echo "fault_sweep_test: all checks passed"
else
  echo "fault_sweep: total: $total_kills kills and $total_fails failures injected, $failures checks FAILED"
fi
[ "$failures" = 0 ]
