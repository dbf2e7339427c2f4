#!/usr/bin/env bash
# `osprey run --budget 1m` (the main job, cli/run.cpp): a whole run finishes within its budget,
# prints its table and writes its page (report.html), its folders from the AIP_* variables; a run killed part-way (SIGKILL, after the
# tuning stage) resumes on the next call without redoing the finished stages, and finishes too.
# Usage: run_main_job_test.sh OSPREY
set -euo pipefail
osprey=$1
work=$(mktemp -d)
trap 'if [[ -n "${pid:-}" ]]; then kill -9 "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }

# A whole run: every stage's row, the report file, the artefacts, the budget kept. As a Vertex AI
# job: the output folder and the TensorBoard logs come from AIP_MODEL_DIR and AIP_TENSORBOARD_LOG_DIR.
AIP_MODEL_DIR="$work/a" AIP_TENSORBOARD_LOG_DIR="$work/tb" "$osprey" run --budget 1m >"$work/a.log" 2>&1 ||
  fail "run exited $?"
ls "$work"/tb/tune/trial_0000/execution_0/validation/events.out.tfevents.* >/dev/null ||
  fail "no TensorBoard run of the first trial in AIP_TENSORBOARD_LOG_DIR/tune"
ls "$work"/tb/member_0/train/events.out.tfevents.* >/dev/null ||
  fail "no TensorBoard run of the first member in AIP_TENSORBOARD_LOG_DIR"
grep -q "^plan: retraining ends [0-9]* s before the budget" "$work/a.log" ||
  fail "no plan line for the stages after retraining"
for stage in tune retrain ensemble quantize; do
  grep -q "^| $stage |" "$work/a.log" || fail "no $stage row in the table"
done
grep -q "^| quantize |" "$work/a/report.md" || fail "report.md lacks the table"
grep -q '<section id="stages">' "$work/a/report.html" || fail "report.html lacks the stage table"
[[ -s "$work/a/retrain/member_0/history.json" ]] || fail "no history.json for the report's curves"
for d in retrain/member_0 ensemble ensemble_int8; do
  [[ -d "$work/a/$d" ]] || fail "no $d folder"
done
total=$(sed -n 's/^total: \([0-9]*\):\([0-9]*\) of a.*/\1 \2/p' "$work/a.log")
read -r mm ss <<<"$total"
# A sanitized build runs the stages after the budget (ensemble, quantize, report) several times
# slower: its allowance grows by the scale it gives test limits (scripts/sanitize.sh).
allowed=$((90 * ${OSPREY_TEST_TIME_SCALE:-1}))
(( 10#$mm * 60 + 10#$ss <= allowed )) || fail "took $total for a 1-minute budget (allowed: $allowed s)"

# Killed after the tuning stage, then resumed.
"$osprey" run --budget 1m --output "$work/b" >"$work/b1.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '"tune"' "$work/b/run.json" 2>/dev/null && grep -q '"row"' "$work/b/run.json" && break
  sleep 0.1
done
grep -q '"row"' "$work/b/run.json" || fail "the tuning stage never finished"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
"$osprey" run --budget 1m --output "$work/b" >"$work/b2.log" 2>&1 || fail "resumed run exited $?"
grep -q "resuming after" "$work/b2.log" || fail "the second call did not resume"
grep -q "stage 1/4: tune" "$work/b2.log" && fail "the resumed run tuned again"
grep -q "^| quantize |" "$work/b2.log" || fail "the resumed run did not finish"

# Another budget on the same folder is refused, naming the option.
if "$osprey" run --budget 2m --output "$work/b" >"$work/c.log" 2>&1; then fail "budget change accepted"; fi
grep -q "budget_seconds" "$work/c.log" || fail "the refusal does not name the budget"
echo "ok"
