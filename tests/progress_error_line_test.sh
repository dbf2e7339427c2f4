#!/usr/bin/env bash
# An error that ends fit mid-epoch starts on its own line (issue 48): on a terminal the progress
# bar redraws its line in place, without a newline, and `osprey: error: ...` used to be glued to
# its end. `script` gives osprey train a terminal; the error is the strategy's refusal of the
# epoch's last batch (4001 rows in batches of 2: one row left, for 2 replicas), some 2000 steps
# into the epoch, when the bar has been drawn. Usage: progress_error_line_test.sh path/to/osprey
set -u
osprey=$1
if ! command -v script >/dev/null; then echo "progress_error_line_test: skipped, no script(1)"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; tr '\r' '\n' <"$tmp/out" | tail -n 5; failures=$((failures + 1)); }

awk 'BEGIN { print "a,b,c,y"; for (i = 0; i < 4001; i++) printf "%d,%d,%d,%d\n", i % 7, i % 5, i % 3, i % 2 }' >"$tmp/train.csv"
cat >"$tmp/net.json" <<'JSON'
{"class_name": "Sequential", "config": {"build_input_shape": [null, 3], "layers": [
  {"class_name": "Dense", "config": {"units": 2, "activation": "softmax"}}]}}
JSON
cat >"$tmp/run.sh" <<EOF
exec "$osprey" train --model "$tmp/net.json" --data "$tmp/train.csv" --label-column y \
  --strategy mirrored --devices 2 --batch-size 2 --epochs 1 --output ""
EOF
script -qec "bash $tmp/run.sh" /dev/null >"$tmp/out" 2>&1 </dev/null
rc=$?
[ "$rc" = 1 ] || fail "exit code $rc, expected 1 (the error in fit)"
# The terminal ends lines with \r\n; the bar redraws with \r: both become line breaks here.
tr '\r' '\n' <"$tmp/out" >"$tmp/lines"
grep -q '/2001 \[' "$tmp/lines" || fail "the bar was never drawn on the terminal"
grep -q "^osprey: error: MirroredStrategy: the global batch size 1 is not divisible by the 2 replicas in sync" "$tmp/lines" ||
  fail "the error does not start its own line"

[ "$failures" = 0 ] && echo "progress_error_line_test: all checks passed"
exit "$failures"
