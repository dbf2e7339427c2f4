#!/usr/bin/env bash
# osprey train --model gpt|lstm on a text file and osprey generate (issue 43), tiny runs on the
# vendored Tiny Shakespeare: the GPT learns (its validation loss falls below the uniform guess,
# ln 65 = 4.17), is saved with its tokenizer, and generates the same text with and without the
# key/value cache, and so does its int8 form (osprey quantize keeps the tokenizer); the LSTM
# trains and generates too (its window re-run each step); two mirrored replicas match one device
# and mixed_bfloat16 trains; a GPT on a SentencePiece BPE vocabulary generates from its saved
# folder alone; and each bad input gets its
# error (a bad --tokenizer spec among them):
#   --model gpt without --data; an empty text file;
#   a tokenizer.json that does not fit the model; a prompt with a character the tokenizer lacks.
# Usage: text_models_test.sh path/to/osprey path/to/tinyshakespeare.txt
set -u
osprey=$(realpath "$1")  # absolute: one check runs from another folder
text=$2
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
source "$(dirname "$0")/cli_expect.sh"
small=(--block-size 32 --n-layer 2 --n-head 2 --n-embd 32 --epochs 2 --steps-per-epoch 40
  --batch-size 16 --lr 3e-3 --seed 3)

expect 0 "saved to $tmp/gpt/" "gpt trains" -- train --model gpt --data "$text" "${small[@]}" \
  --optimizer adamw --output "$tmp/gpt"
val=$(sed -n 's/^validation loss: \([0-9.]*\).*/\1/p' "$tmp/out")
awk -v v="${val:-9}" 'BEGIN { exit !(v < 3.3) }' || fail "gpt: validation loss '$val' not below 3.3"
for f in config.json model.safetensors tokenizer.json; do
  [ -f "$tmp/gpt/$f" ] || fail "gpt: $f not saved"
done
for args in "--temperature 0" "--temperature 0.9 --top-k 10 --seed 5" "--top-p 0.8 --seed 2"; do
  # shellcheck disable=SC2086 # the options split on purpose
  "$osprey" generate "$tmp/gpt" --prompt "ROMEO:" --max-new-tokens 40 $args >"$tmp/cached" 2>&1
  # shellcheck disable=SC2086
  "$osprey" generate "$tmp/gpt" --prompt "ROMEO:" --max-new-tokens 40 $args --no-cache \
    >"$tmp/uncached" 2>&1
  cmp -s "$tmp/cached" "$tmp/uncached" || fail "generate $args: cached and uncached text differ"
  head -c 6 "$tmp/cached" | grep -qF "ROMEO:" || fail "generate $args: the prompt is not echoed"
  [ "$(wc -c <"$tmp/cached")" -ge 40 ] || fail "generate $args: fewer than 40 characters"
done

# The int8 GPT (every projection and the tied embedding table in int8) generates from its folder,
# the same text with and without the cache.
expect 0 "saved $tmp/gpt_int8 (int8)" "gpt quantizes" -- quantize "$tmp/gpt" --output "$tmp/gpt_int8"
grep -qF "quantized gpt/block_1/self_attention/attention_output/kernel" "$tmp/out" ||
  fail "quantize: the attention's output projection is not listed"
[ -f "$tmp/gpt_int8/tokenizer.json" ] || fail "quantize: tokenizer.json not saved with the model"
"$osprey" generate "$tmp/gpt_int8" --prompt "ROMEO:" --max-new-tokens 40 --temperature 0 \
  >"$tmp/cached" 2>&1
"$osprey" generate "$tmp/gpt_int8" --prompt "ROMEO:" --max-new-tokens 40 --temperature 0 \
  --no-cache >"$tmp/uncached" 2>&1
cmp -s "$tmp/cached" "$tmp/uncached" || fail "int8 generate: cached and uncached text differ"
head -c 6 "$tmp/cached" | grep -qF "ROMEO:" || fail "int8 generate: the prompt is not echoed"
[ "$(wc -c <"$tmp/cached")" -ge 40 ] || fail "int8 generate: fewer than 40 characters"

# A BPE vocabulary that SentencePiece trains on the text (issue 43): the GPT learns on its ids (below
# the uniform guess, ln 384 = 5.95), is saved with it, and the saved folder alone, copied
# elsewhere and read from another working directory, generates text from a prompt.
expect 0 "(text, bpe tokenizer): " "gpt with bpe" -- train --model gpt --data "$text" \
  --tokenizer bpe:384 --block-size 32 --n-layer 2 --n-head 2 --n-embd 32 --epochs 1 \
  --steps-per-epoch 40 --batch-size 16 --lr 3e-3 --seed 3 --output "$tmp/bpe"
grep -qF "vocabulary 384," "$tmp/out" || fail "bpe: the vocabulary is not 384"
val=$(sed -n 's/^validation loss: \([0-9.]*\).*/\1/p' "$tmp/out")
awk -v v="${val:-9}" 'BEGIN { exit !(v < 5.0) }' || fail "bpe: validation loss '$val' not below 5.0"
grep -Eq '"kind": *"bpe"' "$tmp/bpe/tokenizer.json" || fail "bpe: tokenizer.json is not a bpe one"
mkdir -p "$tmp/elsewhere/cwd" && cp -r "$tmp/bpe" "$tmp/elsewhere/model" && rm -rf "$tmp/bpe"
(cd "$tmp/elsewhere/cwd" && "$osprey" generate ../model --prompt "ROMEO: the king" \
  --max-new-tokens 30 --seed 5) >"$tmp/bpe_text" 2>&1 || fail "bpe: generate failed"
head -c 15 "$tmp/bpe_text" | grep -qF "ROMEO: the king" || fail "bpe: the prompt is not echoed"
[ "$(wc -c <"$tmp/bpe_text")" -ge 45 ] || fail "bpe: fewer than 30 characters generated"
iconv -f UTF-8 -t UTF-8 "$tmp/bpe_text" >/dev/null || fail "bpe: the generated text is not UTF-8"
expect 2 "--tokenizer: the vocabulary size N of bpe:N must be a positive integer. Received: 'bpe:x'" \
  "bpe:x" -- train --model gpt --data "$text" --tokenizer bpe:x --output ""
expect 2 "tokenizer 'unigram:100': SentencePieceTokenizer (unigram): vocab_size must be more than 258" \
  "unigram:100" -- train --model gpt --data "$text" --tokenizer unigram:100 --output ""

expect 0 "saved to $tmp/lstm/" "lstm trains" -- train --model lstm --data "$text" \
  --block-size 32 --n-layer 1 --units 64 --n-embd 32 --epochs 1 --steps-per-epoch 20 \
  --batch-size 16 --output "$tmp/lstm"

# Strategies and policies take the GPT as they take the CNN: two mirrored replicas reach the
# one-device run's validation loss (same global batch), and mixed_bfloat16 trains.
tiny=(--block-size 32 --n-layer 1 --n-head 2 --n-embd 32 --epochs 1 --steps-per-epoch 5 --seed 4
  --output "")
val_of() { sed -n 's/^validation loss: \([0-9.]*\).*/\1/p' "$tmp/out"; }
expect 0 "validation loss" "one device" -- train --model gpt --data "$text" "${tiny[@]}"
one=$(val_of)
expect 0 "validation loss" "mirrored" -- train --model gpt --data "$text" "${tiny[@]}" \
  --strategy mirrored --devices 2
two=$(val_of)
awk -v a="${one:-0}" -v b="${two:-9}" 'BEGIN { d = a - b; exit !(d < 0.002 && d > -0.002) }' ||
  fail "mirrored: validation loss $two, one device $one"
expect 0 "validation loss" "mixed_bfloat16" -- train --model gpt --data "$text" "${tiny[@]}" \
  --dtype-policy mixed_bfloat16
awk -v v="$(val_of)" 'BEGIN { exit !(v > 0 && v < 4.2) }' || fail "mixed_bfloat16: '$(val_of)'"

expect 2 "osprey train: --model gpt needs --data FILE, a text file to learn from" "no data" -- \
  train --model gpt --output ""
: >"$tmp/empty.txt"
expect 1 "$tmp/empty.txt: the text file is empty" "empty text" -- \
  train --model gpt --data "$tmp/empty.txt" --output ""
# The LSTM is a causal language model over windows too: generate samples from it, each step
# re-running the window.
expect 0 "ROMEO:" "lstm generates" -- generate "$tmp/lstm" --prompt "ROMEO:" --max-new-tokens 40
head -c 6 "$tmp/out" | grep -qF "ROMEO:" || fail "lstm generate: the prompt is not echoed"
[ "$(wc -c <"$tmp/out")" -ge 46 ] || fail "lstm generate: fewer than 40 characters"
echo '{"kind": "byte"}' >"$tmp/gpt/tokenizer.json"
expect 1 "osprey generate: $tmp/gpt/tokenizer.json has 256 tokens; the model's vocabulary has 65" \
  "tokenizer mismatch" -- generate "$tmp/gpt"
expect 1 "load_model: $tmp/nothing/config.json does not exist" "missing model" -- \
  generate "$tmp/nothing"

if [ "$failures" -eq 0 ]; then echo "text_models_test: all checks passed"; else exit 1; fi
