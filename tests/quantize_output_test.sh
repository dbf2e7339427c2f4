#!/usr/bin/env bash
# `osprey quantize DIR` never writes over DIR unless told to (issue 48): the quantized model goes
# to DIR_int8 (DIR_float8), the float32 model, its optimizer state and history stay as they
# were, an existing DIR_int8 is refused unless --output names it, and --output may name DIR.
#   quantize_output_test.sh OSPREY WORKDIR
set -uo pipefail
osprey=$1 work=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
rm -rf "$work" && mkdir -p "$work"
"$osprey" train --epochs 1 --steps-per-epoch 20 --output "$work/m" >"$work/train.out" 2>&1 ||
  { cat "$work/train.out"; exit 1; }
cp -r "$work/m" "$work/m_before"

"$osprey" quantize "$work/m/" >"$work/q1.out" 2>&1 || fail "quantize DIR/ exited $?: $(cat "$work/q1.out")"
grep -q "saved $work/m_int8 (int8)" "$work/q1.out" || fail "quantize DIR/ did not save DIR_int8: $(cat "$work/q1.out")"
diff -r "$work/m" "$work/m_before" >/dev/null || fail "quantize DIR changed DIR"
[ -f "$work/m/history.json" ] && [ -f "$work/m/optimizer.safetensors" ] || fail "DIR lost its history or optimizer state"
grep -q '"QuantizedDense"' "$work/m_int8/config.json" || fail "DIR_int8 holds no QuantizedDense layer"

"$osprey" quantize "$work/m" >"$work/q2.out" 2>&1
code=$?
[ "$code" = 2 ] || fail "a second quantize DIR exited $code, expected 2 (usage)"
grep -q "osprey quantize: $work/m_int8 exists; to replace it, name it: --output $work/m_int8" "$work/q2.out" ||
  fail "a second quantize DIR: $(cat "$work/q2.out")"

"$osprey" quantize "$work/m" --output "$work/m_int8" >"$work/q3.out" 2>&1 || fail "--output DIR_int8 exited $?"
"$osprey" quantize "$work/m" --mode float8 >"$work/q4.out" 2>&1 || fail "--mode float8 exited $?"
[ -f "$work/m_float8/config.json" ] || fail "--mode float8 did not save DIR_float8"
# A float8 model trains (issue 48): osprey train rebuilds its Float8Dense layers from the config
# it reads; evaluate and predict load its weights. An int8 one is refused by train, naming why.
"$osprey" train --model "$work/m_float8/config.json" --epochs 1 --steps-per-epoch 2 --output "" \
  >"$work/t8.out" 2>&1 || fail "train --model DIR_float8/config.json exited $?: $(tail -n 5 "$work/t8.out")"
grep -q "^Epoch 1/1" "$work/t8.out" || fail "train --model DIR_float8/config.json trained no epoch: $(cat "$work/t8.out")"
"$osprey" train --model "$work/m_float8" --epochs 1 --steps-per-epoch 2 --output "$work/m_float8_retrained" \
  >"$work/t9.out" 2>&1 || fail "train --model DIR_float8 exited $?: $(tail -n 5 "$work/t9.out")"
grep -q '"Float8Dense"' "$work/m_float8_retrained/config.json" || fail "the retrained model holds no Float8Dense layer"
"$osprey" evaluate "$work/m_float8" >"$work/e8.out" 2>&1 || fail "evaluate DIR_float8 exited $?: $(cat "$work/e8.out")"
"$osprey" predict "$work/m_float8" --count 2 >"$work/p8.out" 2>&1 || fail "predict DIR_float8 exited $?: $(cat "$work/p8.out")"
"$osprey" train --model "$work/m_int8" --epochs 1 --steps-per-epoch 2 --output "" >"$work/t10.out" 2>&1
code=$?
[ "$code" = 2 ] || fail "train --model DIR_int8 exited $code, expected 2 (usage)"
want="osprey train: --model $work/m_int8 holds int8-quantized layers (dense, dense_1, dense_2); int8 models are for inference only (osprey evaluate, osprey predict). Train the float32 model, then quantize it again (osprey quantize DIR --mode int8); or quantize it with --mode float8, which trains"
grep -qxF "osprey: error: $want" "$work/t10.out" ||
  fail "train --model DIR_int8 printed: $(cat "$work/t10.out")"
"$osprey" quantize "$work/m" --output "$work/m" >"$work/q5.out" 2>&1 || fail "--output DIR exited $?"
grep -q '"QuantizedDense"' "$work/m/config.json" || fail "--output DIR did not replace DIR"

[ "$failures" = 0 ] && echo "quantize_output_test: all checks passed" && rm -rf "$work"
exit "$failures"
