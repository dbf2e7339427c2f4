#!/usr/bin/env bash
# osprey train's callback flags and the managed-job variables (issue 26), each from a run:
#   --tensorboard DIR --histogram-freq 1: event files in DIR/train and DIR/validation;
#   --csv-log FILE: a header and one row per epoch, with the validation columns;
#   the saved model's history.json (both epochs), which osprey report plots;
#   --early-stopping 0 with a learning rate that cannot improve: stops after epoch 2 and says so;
#   AIP_MODEL_DIR, AIP_CHECKPOINT_DIR, AIP_TENSORBOARD_LOG_DIR: the model, checkpoints and logs go
#   there when no flag says otherwise, and a flag wins;
#   --profile DIR --profile-steps 1-2: DIR/trace.json with the window's spans, DIR/summary.txt;
#   --histogram-freq without --tensorboard: bad usage.
# Usage: train_callbacks_test.sh path/to/osprey
set -u
osprey=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && tail -n 5 "$tmp/out"; failures=$((failures + 1)); }
small=(--epochs 2 --steps-per-epoch 3 --batch-size 32)

"$osprey" train "${small[@]}" --validation-split 0.1 --tensorboard "$tmp/tb" --histogram-freq 1 \
  --csv-log "$tmp/log.csv" --output "$tmp/model" >"$tmp/out" 2>&1 || fail "tensorboard run: exit code $?"
for run in train validation; do
  n=$(ls "$tmp/tb/$run" 2>/dev/null | grep -c '^events\.out\.tfevents\.')
  [ "$n" = 1 ] || fail "$tmp/tb/$run holds $n event files, expected 1"
done
[ "$(head -n 1 "$tmp/log.csv")" = "epoch,loss,accuracy,val_loss,val_accuracy" ] ||
  fail "csv header: $(head -n 1 "$tmp/log.csv")"
[ "$(wc -l <"$tmp/log.csv")" = 3 ] || fail "csv rows: $(wc -l <"$tmp/log.csv") lines, expected 3"
# The curves osprey report plots: history.json beside the model, one record per epoch.
/usr/bin/python3 -c 'import json, sys; h = json.load(open(sys.argv[1]))
assert [e["epoch"] for e in h["epochs"]] == [0, 1], h
assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(h["epochs"][1]["metrics"]), h' \
  "$tmp/model/history.json" || fail "history.json: not 2 epochs of the fit's logs"
"$osprey" report "$tmp/model" --output "$tmp/model.html" >"$tmp/out" 2>&1 &&
  grep -q '<svg' "$tmp/model.html" || fail "osprey report of the trained model: no plot"

# --profile DIR --profile-steps 1-2: a Chrome trace of steps 1 and 2 (one per epoch here is 3)
# with op, backward, layer, optimizer and data spans, and the summary table.
"$osprey" train "${small[@]}" --profile "$tmp/prof" --profile-steps 1-2 --output "$tmp/pm" \
  >"$tmp/out" 2>&1 || fail "profile run: exit code $?"
/usr/bin/python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))
x = [e for e in t["traceEvents"] if e["ph"] == "X"]
cats = {e["cat"] for e in x}
assert {"op", "op_backward", "layer", "optimizer", "data", "step"} <= cats, cats
assert sorted(e["args"]["step"] for e in x if e["cat"] == "step") == ["1", "2"], "steps"
assert any(e["ph"] == "C" and e["name"] == "bytes_in_use" for e in t["traceEvents"]), "memory"' \
  "$tmp/prof/trace.json" || fail "profile: trace.json lacks the spans of steps 1-2"
grep -q "^Self time total: " "$tmp/prof/summary.txt" || fail "profile: no summary.txt table"

# SGD with a learning rate of 1e-9 leaves the loss where it is: no epoch improves on the first.
"$osprey" train --epochs 10 --steps-per-epoch 2 --batch-size 32 --optimizer sgd --lr 1e-9 \
  --early-stopping 0 --output "$tmp/es" >"$tmp/out" 2>&1 || fail "early stopping run: exit code $?"
grep -q "early stopping after epoch 2: loss did not improve for 1 epochs (best: epoch 1)" "$tmp/out" ||
  fail "early stopping: no report of the stop after epoch 2"
grep -q "Epoch 3/10" "$tmp/out" && fail "early stopping: epoch 3 ran"

AIP_MODEL_DIR="$tmp/aip/model" AIP_CHECKPOINT_DIR="$tmp/aip/ckpt" AIP_TENSORBOARD_LOG_DIR="$tmp/aip/tb" \
  "$osprey" train "${small[@]}" >"$tmp/out" 2>&1 || fail "AIP run: exit code $?"
[ -s "$tmp/aip/model/model.safetensors" ] || fail "AIP_MODEL_DIR: no model saved there"
[ -d "$tmp/aip/ckpt/epoch_2" ] || fail "AIP_CHECKPOINT_DIR: no checkpoint of epoch 2 there"
ls "$tmp/aip/tb/train" 2>/dev/null | grep -q '^events\.out\.tfevents\.' || fail "AIP_TENSORBOARD_LOG_DIR: no events there"
AIP_MODEL_DIR="$tmp/aip/model2" "$osprey" train "${small[@]}" --output "$tmp/flag_model" >"$tmp/out" 2>&1 ||
  fail "AIP run with --output: exit code $?"
[ -s "$tmp/flag_model/model.safetensors" ] && [ ! -e "$tmp/aip/model2" ] || fail "--output did not win over AIP_MODEL_DIR"

"$osprey" train --histogram-freq 2 >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--histogram-freq without --tensorboard: exit code $rc, expected 2"
grep -q "osprey train: --histogram-freq needs --tensorboard DIR" "$tmp/out" || fail "--histogram-freq: no message"

if [ "$failures" = 0 ]; then echo "train_callbacks_test: all checks passed"; fi
[ "$failures" = 0 ]
