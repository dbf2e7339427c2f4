#!/usr/bin/env bash
# osprey tune --command (cli/tune_command.h) end to end, one case per ctest test:
#   stdout         reports on stdout; 21 random trials cover the space and find x=3, y=0.5; the
#                  trials with x=5 crash (exit 3, "boom: bad lr") and are failed with that, while
#                  the study goes on; {{ }} are literal braces; a rerun resumes the finished study;
#   hypertune      reports in cloudml-hypertune's format ($CLOUD_ML_HP_METRIC_FILE rewritten whole
#                  per report, values as strings, global_step 0-based), --quiet echoes nothing;
#   epochs         a report's epoch=E counts from 1: epoch=1..3 with the best at epoch=2 is
#                  "best epoch 2" in the summary and best_step 1 in trial.json; a program that
#                  counts from 0 (epoch=0) fails its trial with a message that says so;
#   report_metric  a C++ program using tune::report_metric: its stdout line, its JSON line under
#                  OSPREY_METRIC_FILE, a refused name, and a study over it;
#   pruner         --pruner median kills slow, bad trials: a pruned trial's "finished" marker is
#                  absent and its trial.json says pruned;
#   timeout_resume --trial-timeout fails a trial that runs too long; SIGTERM to osprey stops the
#                  running trial's program and a rerun resumes that trial;
#   parent         hyperband: a promoted trial gets its parent's folder as {parent_trial_dir} and
#                  $OSPREY_PARENT_TRIAL_DIR, a trial without a parent an empty one;
#   distributed    osprey launch --tuners 2: a chief serves the oracle, two workers run 8 trials
#                  between them, each with other values.
# Usage: tune_command_test.sh OSPREY TRIAL_PROGRAM CASE WORK_PARENT
set -u
osprey=$1
cxx_trial=$2
case_name=$3
here=$(cd "$(dirname "$0")" && pwd)
py_trial="$here/data/tune_command_trial.py"
# The interpreter itself, not a wrapper (a pyenv shim takes half a second a trial).
python=$(python3 -c 'import sys; print(sys.executable)')
space="$here/data/tune_command_space.toml"
mkdir -p "$4"
tmp=$(mktemp -d "$4/tune_command_${case_name}.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && tail -n 15 "$tmp/out"; failures=$((failures + 1)); }
common=(--metric loss --space "$space" --seed 7)

# check_study DIR PYTHON: runs PYTHON with `trials` (every trial.json of the study in DIR, by id)
# and `d` (DIR); it prints what is wrong, nothing when all is well.
check_study() {
  local problems
  problems=$("$python" - "$1" "$2" <<'EOF'
import glob, json, math, os, sys
d, code = sys.argv[1], sys.argv[2]
trials = {}
for f in sorted(glob.glob(os.path.join(d, "trial_*", "trial.json"))):
    t = json.load(open(f))
    trials[t["trial_id"]] = t
def values(t):
    return t["hyperparameters"]["values"]
def best(trials):
    done = [t for t in trials.values() if t["status"] == "completed" and t["score"] is not None]
    return min(done, key=lambda t: t["score"]) if done else None
exec(code)
EOF
  )
  [ -z "$problems" ] || fail "$problems"
}

# The best trial of a 21-trial study over tune_command_space.toml with 3 epochs is x=3, y=0.5,
# scored at its last epoch: 1/3.
check_optimum() {
  grep -q '^best hyperparameters: {"x":3,"y":0.5}$' "$tmp/out" ||
    fail "$1: the printed best is not x=3, y=0.5"
  check_study "$2" '
b = best(trials)
if len(trials) != 21: print(f"{len(trials)} trial.json files, expected 21")
if b is None: print("no completed trial")
elif values(b) != {"x": 3, "y": 0.5} or abs(b["score"] - 1 / 3) > 1e-12 or b["best_step"] != 2:
    print("best trial:", values(b), "score", b["score"], "best_step", b["best_step"])
'
}

case "$case_name" in
stdout)
  cmd="$python $py_trial --x {x} --y {y} --epochs {epochs} --trial-dir {trial_dir} --crash-x 5 && echo 'literal {{braces}}'"
  "$osprey" tune --command "$cmd" "${common[@]}" --tuner random --max-trials 21 --epochs 3 \
    --max-consecutive-failed-trials 5 --directory "$tmp/s" >"$tmp/out" 2>&1 || fail "stdout run: exit code $?"
  check_optimum stdout "$tmp/s/command_study"
  check_study "$tmp/s/command_study" '
for t in trials.values():
    if values(t)["x"] == 5:
        if t["status"] != "failed" or "exit status 3" not in t["message"] or "boom: bad lr" not in t["message"]:
            print("crashing trial", t["trial_id"], t["status"], repr(t["message"]))
    elif t["status"] != "completed" or len(t["executions"][0]) != 3:
        print("trial", t["trial_id"], t["status"], repr(t["message"]))
'
  grep -q '^\[trial [0-9]*\] literal {braces}$' "$tmp/out" || fail "{{braces}} did not reach the shell as {braces}"
  grep -q '^\[trial [0-9]*\] training x=' "$tmp/out" || fail "the trials' stdout was not echoed"
  # Rerun: the study is over (21 of 21 trials), nothing runs, the best is the same.
  "$osprey" tune --command "$cmd" "${common[@]}" --tuner random --max-trials 21 --epochs 3 \
    --directory "$tmp/s" >"$tmp/out" 2>&1 || fail "resumed run: exit code $?"
  grep -q "resuming .*: 21 trials already there" "$tmp/out" || fail "the rerun did not resume"
  grep -q '^\[trial' "$tmp/out" && fail "the rerun of a finished study ran a trial"
  grep -q '^best hyperparameters: {"x":3,"y":0.5}$' "$tmp/out" || fail "the rerun lost the best"
  ;;
hypertune)
  cmd="$python $py_trial --x {x} --y {y} --epochs {epochs} --trial-dir {trial_dir} --report hypertune"
  "$osprey" tune --command "$cmd" "${common[@]}" --tuner random --max-trials 21 --epochs 3 --quiet \
    --directory "$tmp/h" >"$tmp/out" 2>&1 || fail "hypertune run: exit code $?"
  check_optimum hypertune "$tmp/h/command_study"
  check_study "$tmp/h/command_study" '
for t in trials.values():
    epochs = [r["epoch"] for r in t["executions"][0]] if t["executions"] else []
    if t["status"] != "completed" or epochs != [0, 1, 2]:
        print("trial", t["trial_id"], t["status"], "epochs", epochs, repr(t["message"]))
'
  grep -q '^\[trial' "$tmp/out" && fail "--quiet echoed the trials' output"
  ;;
epochs)
  cmd="printf 'osprey-metric loss=0.5 epoch=1\\nosprey-metric loss=0.25 epoch=2\\nosprey-metric loss=0.375 epoch=3\\n'"
  "$osprey" tune --command "$cmd" "${common[@]}" --max-trials 1 --epochs 3 \
    --directory "$tmp/e" >"$tmp/out" 2>&1 || fail "epochs run: exit code $?"
  grep -q '^Best trial 0000: score 0.25 (best epoch 2): ' "$tmp/out" ||
    fail "the summary does not say best epoch 2"
  check_study "$tmp/e/command_study" '
t = trials["0000"]
epochs = [r["epoch"] for r in t["executions"][0]]
if t["status"] != "completed" or epochs != [0, 1, 2] or t["best_step"] != 1 or t["score"] != 0.25:
    print("trial 0000:", t["status"], "epochs", epochs, "best_step", t["best_step"], "score", t["score"])
'
  "$osprey" tune --command "echo 'osprey-metric loss=0.5 epoch=0'" "${common[@]}" --max-trials 1 \
    --directory "$tmp/z" >"$tmp/out" 2>&1
  [ $? = 1 ] || fail "a study whose only trial reported epoch=0 did not exit 1"
  grep -q "epoch must be an integer >= 1 (epochs count from 1: the first is epoch=1). Received: '0'" "$tmp/out" ||
    fail "epoch=0 was not refused with its message"
  ;;
report_metric)
  out=$("$cxx_trial" 3 0.5 3)
  [ "$(echo "$out" | tail -n 1)" = "osprey-metric loss=0.33333333333333331 epoch=3" ] ||
    fail "report_metric on stdout: $out"
  out=$(OSPREY_METRIC_FILE="$tmp/m.jsonl" "$cxx_trial" 3 0.5 3)
  [ -z "$out" ] || fail "report_metric printed with OSPREY_METRIC_FILE set: $out"
  [ "$(wc -l <"$tmp/m.jsonl")" = 3 ] && [ "$(tail -n 1 "$tmp/m.jsonl")" = '{"loss": 0.33333333333333331, "epoch": 3}' ] ||
    fail "report_metric's file: $(cat "$tmp/m.jsonl")"
  out=$("$cxx_trial" 3 0.5 1 "val loss" 2>&1)
  [ $? = 2 ] && echo "$out" | grep -q "a metric name may not hold whitespace or '='. Received: 'val loss'" ||
    fail "report_metric took the name 'val loss': $out"
  "$osprey" tune --command "$cxx_trial {x} {y} {epochs}" "${common[@]}" --max-trials 21 --epochs 3 \
    --directory "$tmp/r" >"$tmp/out" 2>&1 || fail "report_metric study: exit code $?"
  check_optimum report_metric "$tmp/r/command_study"
  [ "$(wc -l <"$tmp/r/command_study/trial_0000/metrics.jsonl")" = 3 ] ||
    fail "trial 0000 did not report through its metric file"
  ;;
pruner)
  # Trials with loss above 2 (most of them) train 5 x slower: 6 epochs of 0.25 s.
  cmd="$python $py_trial --x {x} --y {y} --epochs {epochs} --trial-dir {trial_dir} --sleep 0.05 --slow-above 2"
  "$osprey" tune --command "$cmd" "${common[@]}" --pruner median --max-trials 10 --epochs 6 \
    --directory "$tmp/p" >"$tmp/out" 2>&1 || fail "pruner run: exit code $?"
  check_study "$tmp/p/command_study" '
pruned = [t for t in trials.values() if "pruned" in t["message"]]
if not pruned: print("no trial was pruned")
for t in trials.values():
    finished = os.path.exists(os.path.join(d, "trial_" + t["trial_id"], "finished"))
    if t["status"] != "completed": print("trial", t["trial_id"], t["status"])
    if t in pruned and (finished or len(t["executions"][0]) >= 6):
        print("pruned trial", t["trial_id"], "ran to its end")
    if t not in pruned and not finished: print("trial", t["trial_id"], "did not finish")
'
  ;;
timeout_resume)
  start=$(date +%s)
  "$osprey" tune --command "$python $py_trial --x {x} --y {y} --epochs 1 --trial-dir {trial_dir} --sleep 60" \
    "${common[@]}" --max-trials 1 --trial-timeout 1 --directory "$tmp/t" >"$tmp/out" 2>&1
  rc=$?
  [ $rc = 1 ] || fail "a study whose only trial timed out: exit code $rc, expected 1"
  [ $(($(date +%s) - start)) -lt 20 ] || fail "the timed-out trial was not stopped"
  grep -q "osprey tune: search ended without a completed trial (1 failed); the last, trial 0000, failed with: timed out after 1 s" "$tmp/out" || fail "no 'search ended without a completed trial' message naming the timeout"
  check_study "$tmp/t/command_study" '
t = trials["0000"]
if t["status"] != "failed" or not t["message"].startswith("timed out after 1 s"):
    print("timed-out trial:", t["status"], repr(t["message"]))
'
  # SIGTERM to osprey mid-trial: the program stops too, the trial stays running, a rerun
  # resumes it to the end.
  cmd="$python $py_trial --x {x} --y {y} --epochs {epochs} --trial-dir {trial_dir} --sleep 1"
  "$osprey" tune --command "$cmd" "${common[@]}" --max-trials 1 --epochs 3 --directory "$tmp/k" \
    >"$tmp/out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q '"epoch": 0' "$tmp/k/command_study/trial_0000/trial.json" 2>/dev/null && break
    sleep 0.2
  done
  kill -TERM $pid
  wait $pid
  rc=$?
  [ $rc = 143 ] || fail "osprey after SIGTERM: exit code $rc, expected 143"
  sleep 0.5
  pgrep -f "$tmp/k/command_study/trial_0000" >/dev/null && fail "the trial's program outlived osprey"
  check_study "$tmp/k/command_study" '
if trials["0000"]["status"] != "running": print("interrupted trial:", trials["0000"]["status"])
'
  "$osprey" tune --command "$cmd" "${common[@]}" --max-trials 1 --epochs 3 --directory "$tmp/k" \
    >"$tmp/out" 2>&1 || fail "resumed run: exit code $?"
  grep -q "resuming .*: 1 trials already there" "$tmp/out" || fail "the rerun did not resume"
  check_study "$tmp/k/command_study" '
t = trials["0000"]
if t["status"] != "completed" or len(t["executions"][0]) != 3 or len(trials) != 1:
    print("resumed trial:", t["status"], len(t["executions"][0]), "epochs", len(trials), "trials")
if not os.path.exists(os.path.join(d, "trial_0000", "finished")): print("the resumed trial did not finish")
'
  ;;
parent)
  # Unquoted: a placeholder's value arrives shell-quoted.
  cmd='printf "%s|%s" {parent_trial_dir} "$OSPREY_PARENT_TRIAL_DIR" >{trial_dir}/parent && '
  cmd+="$python $py_trial --x {x} --y {y} --epochs {epochs} --trial-dir {trial_dir}"
  "$osprey" tune --command "$cmd" "${common[@]}" --tuner hyperband --epochs 3 --quiet \
    --directory "$tmp/b" >"$tmp/out" 2>&1 || fail "hyperband run: exit code $?"
  check_study "$tmp/b/command_study" '
promoted = 0
for t in trials.values():
    parent = values(t).get("tuner/trial_id")
    want = "" if parent is None else os.path.join(d, "trial_" + parent)
    got = open(os.path.join(d, "trial_" + t["trial_id"], "parent")).read()
    if got != want + "|" + want: print("trial", t["trial_id"], "parent", repr(got), "expected", repr(want))
    if t["status"] != "completed": print("trial", t["trial_id"], t["status"], repr(t["message"]))
    promoted += parent is not None
if not promoted: print("hyperband promoted no trial")
'
  ;;
distributed)
  # A barrier: no trial trains before two have started (or 30 s have passed), so neither worker
  # can run all 8 while the other is still starting.
  mkdir "$tmp/started"
  cmd="touch $tmp/started/{trial_id} && for i in \$(seq 300); do "
  cmd+="[ \$(ls $tmp/started | wc -l) -ge 2 ] && break; sleep 0.1; done && "
  cmd+="$python $py_trial --x {x} --y {y} --epochs {epochs} --trial-dir {trial_dir}"
  "$osprey" launch --tuners 2 -- "$osprey" tune --command "$cmd" "${common[@]}" --tuner random \
    --max-trials 8 --epochs 2 --directory "$tmp/d" >"$tmp/out" 2>&1 || fail "launch: exit code $?"
  check_study "$tmp/d/command_study" '
if len(trials) != 8: print(f"{len(trials)} trial.json files, expected 8")
for t in trials.values():
    if t["status"] != "completed": print("trial", t["trial_id"], t["status"], repr(t["message"]))
seen = [json.dumps(values(t), sort_keys=True) for t in trials.values()]
if len(set(seen)) != len(seen): print("two trials with the same values:", sorted(seen))
'
  # Each worker prints a row per trial it ran; together they ran each trial once.
  for w in tuner0 tuner1; do
    grep -Eq "^\[$w\] [0-9]{4} +[0-9]+/8 +completed" "$tmp/out" || fail "$w ran no trial"
  done
  rows=$(grep -Eo '^\[tuner[01]\] [0-9]{4} +[0-9]+/8 ' "$tmp/out" | awk '{print $2}' | sort)
  [ "$(echo "$rows" | uniq | wc -l)" = 8 ] && [ "$(echo "$rows" | wc -l)" = 8 ] ||
    fail "the workers' rows do not name each of the 8 trials once: $(echo $rows)"
  ;;
*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac
[ $failures = 0 ] && echo "tune_command $case_name: all checks passed"
exit $((failures > 0))
