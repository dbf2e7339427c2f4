#!/usr/bin/env bash
# osprey tune --hypermodel transformer|lstm on a text file (issue 43), tiny searches on the first
# 20 kB of the vendored Tiny Shakespeare: two trials of each text hypermodel, a small one fixed by
# a --space file, run to completion and kept in the study folder (a trial checkpoint each); the
# best trial learned (its val_loss, the default objective, is below the uniform guess ln V); its
# model is saved with the tokenizer and `osprey generate` samples from it; a rerun resumes the
# study; and each bad combination gets its error:
#   --hypermodel transformer without --data or with a folder; an unknown --hypermodel;
#   --tokenizer without a text hypermodel; osprey ensemble on a text study.
# Usage: tune_text_test.sh path/to/osprey path/to/tinyshakespeare.txt
set -u
osprey=$(realpath "$1")
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
head -c 20000 "$2" >"$tmp/small.txt"
text=$tmp/small.txt
spaces=$(dirname "$0")/data
source "$(dirname "$0")/cli_expect.sh"
small=(--epochs 1 --train-samples 480 --val-samples 40 --block-size 32 --batch-size 16 --seed 3
  --directory "$tmp/studies")

for model in transformer lstm; do
  study=$tmp/studies/text_hyper_$model
  expect 0 "best model saved to $study/best_model/" "$model tunes" -- tune --hypermodel "$model" \
    --data "$text" --space "$spaces/tune_text_${model}_space.toml" --max-trials 2 "${small[@]}"
  grep -qF "random of the $model hypermodel on 480 training windows of 32 tokens per epoch / 40 validation windows, objective val_loss (min)" "$tmp/out" ||
    fail "$model: the search's line is not in the output"
  grep -qF "2 trials: 2 completed, 0 failed" "$tmp/out" || fail "$model: not 2 completed trials"
  for f in oracle.json trial_0000/trial.json trial_0001/trial.json \
    trial_0000/checkpoint/model.safetensors trial_0001/checkpoint/model.safetensors \
    best_model/config.json best_model/model.safetensors best_model/tokenizer.json; do
    [ -f "$study/$f" ] || fail "$model: $f not in the study folder"
  done
  # The best trial's val_loss (the summary's first score) is below the uniform guess ln V.
  vocab=$(sed -n 's/.*vocabulary \([0-9]*\),.*/\1/p' "$tmp/out")
  best=$(sed -n 's/^ *Score: \([0-9.]*\).*/\1/p' "$tmp/out" | head -n 1)
  awk -v b="${best:-9}" -v v="${vocab:-1}" 'BEGIN { exit !(b < log(v)) }' ||
    fail "$model: best val_loss '$best' not below ln $vocab"
  for args in "--temperature 0" "--seed 5 --top-k 10"; do
    # shellcheck disable=SC2086 # the options split on purpose
    "$osprey" generate "$study/best_model" --prompt "ROMEO:" --max-new-tokens 40 $args \
      >"$tmp/sample" 2>&1 || fail "$model: generate $args failed"
    head -c 6 "$tmp/sample" | grep -qF "ROMEO:" || fail "$model: generate $args: no prompt"
    [ "$(wc -c <"$tmp/sample")" -ge 46 ] || fail "$model: generate $args: under 40 characters"
  done
done
# The transformer's study resumes: its 2 trials are kept and a third runs.
expect 0 "resuming $tmp/studies/text_hyper_transformer: 2 trials already there" "resume" -- \
  tune --hypermodel transformer --data "$text" --space "$spaces/tune_text_transformer_space.toml" \
  --max-trials 3 "${small[@]}"
grep -qF "3 trials: 3 completed" "$tmp/out" || fail "resume: not 3 completed trials"

expect 2 "osprey tune: --hypermodel transformer needs --data FILE, a text file to learn from" \
  "no data" -- tune --hypermodel transformer --directory "$tmp/unused"
expect 2 "osprey tune: --hypermodel lstm needs --data FILE, a text file to learn from; $tmp is a folder" \
  "folder" -- tune --hypermodel lstm --data "$tmp" --directory "$tmp/unused"
expect 2 "--hypermodel: gpt not in {mlp,cnn,transformer,lstm}" "unknown hypermodel" -- \
  tune --hypermodel gpt --data "$text" --directory "$tmp/unused"
expect 2 "osprey tune: --tokenizer is for the text hypermodels (--hypermodel transformer or lstm)" \
  "tokenizer for images" -- tune --hypermodel cnn --tokenizer byte --directory "$tmp/unused"
expect 2 "osprey ensemble: --hypermodel transformer: ensembles are of Fashion-MNIST classifiers" \
  "ensemble of a text study" -- ensemble --from-tuner "$tmp/studies/text_hyper_transformer" \
  --hypermodel transformer --output "$tmp/unused"

if [ "$failures" -eq 0 ]; then echo "tune_text_test: all checks passed"; else exit 1; fi
