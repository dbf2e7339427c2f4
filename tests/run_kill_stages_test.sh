#!/usr/bin/env bash
# `osprey run` killed (as kill -9 does) in each of its stages, then resumed (issue 27). One run,
# --budget 1m --members 2, in a fresh --output, goes through these sessions, each resuming the last:
#   1. tune      OSPREY_FAULT_INJECT=rename:20: at the end of the second trial's first epoch, while
#                run.json is being replaced (trial 0000 is complete by then);
#   2. retrain   SIGKILL once member_0 is saved (its history.json written), while member_1 trains;
#   3. retrain   SIGKILL at the first rename after member_1's folder is in place (its history.json
#                when that is written on its own, else run.json's retrain row), by LD_PRELOAD of a
#                small rename shim compiled here (skipped without a C compiler);
#   4. ensemble  SIGKILL as soon as the retrain row is in run.json (the ensemble being fitted);
#   5. ensemble  OSPREY_FAULT_INJECT=rename:8, half-way through saving ensemble/ (a session that
#                starts at the ensemble makes the same renames each time: 15 for the stage with
#                2 members, 15 for the quantization, then report.md and report.html);
#   6. quantize  rename:23 (15 + 8), half-way through saving ensemble_int8/;
#   7. report    rename:17 (15 + 2), at report.html, report.md written;
#   8. the last session, which must finish.
# Timed kills freeze the process (SIGSTOP) first and check that the stage is still under way, so a
# kill that came too late fails the test instead of testing the wrong stage.
# After each kill: run.json and every other JSON file (but the temporaries) parses, each model
# folder has its config.json and model.safetensors, and the kill left what was expected (the
# stages with a row, the staging folder of the save it interrupted). The next session says it
# resumes and redoes no finished stage (no "== stage" line for it), no completed trial and no
# saved member. At the end: exit 0, every stage's row in the table, report.md and report.html (the
# stage table, every member's curves), the folders retrain/member_<i>, ensemble and ensemble_int8
# complete, no *.tmp-* left anywhere; and for every kill, the stages finished before it have the
# same run.json entry (row, timings, notes such as the tuner's best hyperparameters) and
# byte-identical artefacts at the end, as have the trials and members kept (a member's with its
# history.json, which the report's curves need).
# One line per kill: "run_kill_stages: killed in <stage>: <what was kept>, resumed OK".
# Usage: run_kill_stages_test.sh path/to/osprey
set -euo pipefail
osprey=$1
budget=1m
members=2  # the rename numbers above count the saves of 2 networks and an XGBoost member
work=$(mktemp -d)
out=$work/run
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/s*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 25 "$f"; }; done
  exit 1
}
stages=(tune retrain ensemble quantize)
declare -A folder=([tune]=tune [retrain]=retrain [ensemble]=ensemble [quantize]=ensemble_int8)
declare -A number=([tune]=1 [retrain]=2 [ensemble]=3 [quantize]=4)

# Sessions: session $n logs to $work/s$n.log; kill $n is session $n's end.
n=0
start() {  # start [VAR=VALUE...]: the next session, in the background
  n=$((n + 1))
  env "$@" "$osprey" run --budget "$budget" --members "$members" --output "$out" \
    >"$work/s$n.log" 2>&1 &
  pid=$!
}
reap() {  # the session's exit code in $rc
  rc=0
  wait "$pid" 2>/dev/null || rc=$?  # (no "Killed" line from bash)
  pid=""
}
running() {  # not exited (a zombie not yet reaped counts as exited)
  local state
  state=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null) && [[ $state != Z ]]
}
wait_for() {  # wait_for WHAT COMMAND...: polls COMMAND while the session runs
  local what=$1 deadline=$((SECONDS + 300))
  shift
  until "$@"; do
    running || fail "session $n ended before $what"
    ((SECONDS < deadline)) || fail "session $n: no $what within 5 minutes"
    sleep 0.05
  done
}
killed() {  # killed STAGE: freezes the session, checks that STAGE is under way, kills it (kill -9)
  kill -STOP "$pid"
  if has_row "$1" || ! running; then fail "session $n: the $1 stage ended before the kill"; fi
  kill -9 "$pid"
  reap
}
has_row() { [[ -f $out/run.json ]] && jq -e --arg s "$1" '.stages[$s].row != null' "$out/run.json" >/dev/null 2>&1; }
finished() {  # the stages run.json has a row for, in order
  jq -r '. as $r | ["tune", "retrain", "ensemble", "quantize"]
         | map(select($r.stages[.].row != null)) | join(" ")' "$out/run.json"
}
check_model() {  # check_model DIR WHEN
  [[ -s $1/config.json && -s $1/model.safetensors ]] ||
    fail "$2: ${1#"$out"/} lacks config.json or model.safetensors"
}
check_ensemble() {  # check_ensemble DIR WHEN: ensemble.json and each member it names
  local p
  jq empty "$1/ensemble.json" 2>/dev/null || fail "$2: ${1#"$out"/}/ensemble.json does not parse"
  for p in $(jq -r '.members[].path' "$1/ensemble.json"); do
    if [[ -e $1/$p/model.json ]]; then check_model "$1/$p/features" "$2"; else check_model "$1/$p" "$2"; fi
  done
}
check_untorn() {  # check_untorn WHEN: nothing half-written outside the temporaries
  local f
  jq empty "$out/run.json" 2>/dev/null || fail "$1: run.json is missing or does not parse"
  while IFS= read -r -d '' f; do
    jq empty "$f" >/dev/null 2>&1 || fail "$1: ${f#"$out"/} does not parse"
  done < <(find "$out" -name '*.json' ! -path '*.tmp-*' -print0)
  for f in "$out"/retrain/member_* "$out"/tune/trial_*/checkpoint; do
    [[ -e $f && $f != *.tmp-* ]] && check_model "$f" "$1"
  done
  for f in "$out"/ensemble "$out"/ensemble_int8; do
    [[ -e $f ]] && check_ensemble "$f" "$1"
  done
  return 0
}
expect_stages() {  # expect_stages WHEN STAGES: run.json's finished stages are exactly STAGES
  local got
  got=$(finished)
  [[ $got == "$2" ]] || fail "$1: run.json has rows for '$got', expected '$2'"
}
tmp_exists() { compgen -G "$out/$1.tmp-*" >/dev/null; }

# What each kill left, checked again at the end: kill_stage[k], kept_text[k], the completed trials
# and saved members of the stage under way (kept_trials[k], kept_members[k]); $work/k$k.json is
# run.json then, and $work/k$k.md5 the checksums of what must not change.
declare -a kill_stage kill_how kept_text kept_trials kept_members
record_kill() {  # record_kill STAGE HOW: after session $n was killed in STAGE
  local s d f trials="" mem="" text="" done_stages
  [[ $rc == 137 ]] || fail "session $n ($2) exited $rc, not 137 (killed)"
  check_untorn "after the kill in $1 ($2)"
  done_stages=$(finished)
  cp "$out/run.json" "$work/k$n.json"
  : >"$work/k$n.md5"
  for s in $done_stages; do
    (cd "$out" && find "${folder[$s]}" -type f ! -path '*.tmp-*' -print0 | sort -z | xargs -0 -r md5sum) >>"$work/k$n.md5"
  done
  if [[ $1 == tune ]]; then  # the trials completed before the kill
    for f in "$out"/tune/trial_*/trial.json; do
      [[ $(jq -r .status "$f") == completed ]] || continue
      d=$(dirname "$f")
      trials+="$(jq -r .trial_id "$f") "
      text+="${text:+, }trial $(jq -r '"\(.trial_id) (score \(.score))"' "$f")"
      (cd "$out" && find "tune/${d##*/}" -type f ! -path '*.tmp-*' -print0 | sort -z | xargs -0 -r md5sum) >>"$work/k$n.md5"
    done
    [[ -z $text ]] || text="completed $text"
  fi
  if [[ $1 == retrain ]]; then  # the members saved before the kill
    for d in "$out"/retrain/member_*; do
      [[ -e $d/config.json && $d != *.tmp-* ]] || continue
      mem+="${d##*_} "
      text+="${text:+, }${d##*/}"
      (cd "$out" && find "retrain/${d##*/}" -type f ! -path '*.tmp-*' -print0 | sort -z | xargs -0 -r md5sum) >>"$work/k$n.md5"
    done
    [[ -z $text ]] || text="saved $text"
  fi
  local rows=""
  for s in $done_stages; do
    rows+="${rows:+, }$s ($(jq -r --arg s "$s" '.stages[$s].row | "\(.test_accuracy * 1000 | round / 10)%, \(.seconds * 10 | round / 10) s"' "$out/run.json"))"
  done
  [[ -z $rows ]] || text+="${text:+; }run.json rows kept: $rows"
  kill_stage[n]=$1 kill_how[n]=$2 kept_text[n]=${text:-nothing} kept_trials[n]=${trials% } kept_members[n]=${mem% }
}

# A rename shim for kill 3: SIGKILL at the first rename after one onto a path that ends with
# $KILL_AFTER_RENAME_TO.
cat >"$work/kill_at_rename.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
static int armed;
int rename(const char* from, const char* to) {
  if (armed) raise(SIGKILL);
  const char* want = getenv("KILL_AFTER_RENAME_TO");
  size_t n = want ? strlen(want) : 0, m = strlen(to);
  int (*real)(const char*, const char*) = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  int rc = real(from, to);
  if (rc == 0 && n > 0 && m >= n && strcmp(to + m - n, want) == 0) armed = 1;
  return rc;
}
EOF
shim=""
if "${CC:-cc}" -shared -fPIC -o "$work/kill_at_rename.so" "$work/kill_at_rename.c" -ldl 2>"$work/cc.err"; then
  shim=$work/kill_at_rename.so
else
  echo "run_kill_stages: no C compiler (${CC:-cc}): kill 3 (right after a member's save) skipped"
fi

# 1. tune: at the 20th rename, the second trial's first epoch recorded in run.json.
start OSPREY_FAULT_INJECT=rename:20
reap
grep -q "killed at rename #20" "$work/s$n.log" || fail "session $n was not killed at rename 20"
expect_stages "the kill in tune" ""
[[ -s $out/tune/trial_0000/trial.json ]] || fail "the kill in tune came before trial 0000"
record_kill tune "OSPREY_FAULT_INJECT=rename:20"
[[ -n ${kept_trials[n]} ]] || fail "the kill in tune came before any trial completed"

# 2. retrain: SIGKILL once member_0 is whole, member_1 in training.
start
wait_for "member_0's history.json" test -e "$out/retrain/member_0/history.json"
killed retrain
record_kill retrain "kill -9 after member_0"
expect_stages "the kill in retrain" "tune"

# 3. retrain: at the first rename after member_1's folder is in place.
if [[ -n $shim && ! -e $out/retrain/member_1/config.json ]]; then
  # verify_asan_link_order=0: an ASan build of osprey accepts the shim ahead of its runtime.
  start LD_PRELOAD="$shim" KILL_AFTER_RENAME_TO=/retrain/member_1 \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
  reap
  expect_stages "the kill after member_1's save" "tune"
  [[ -e $out/retrain/member_1/config.json ]] || fail "session $n was killed before member_1's save"
  record_kill retrain "kill -9 at the first rename after member_1's save"
fi

# 4. ensemble: SIGKILL once the retrain row is recorded and the ensemble stage announced.
start
ensemble_started() { has_row retrain && grep -q "== stage 3/4: ensemble" "$work/s$n.log"; }
wait_for "the ensemble stage" ensemble_started
killed ensemble
expect_stages "the kill in ensemble" "tune retrain"
record_kill ensemble "kill -9 while fitting"

# 5-7. From here each session starts at a known stage: the renames are the same every time.
# rename_kill N STAGE "STAGES WITH A ROW" FOLDER WHAT: a session killed at its N-th rename, half-way
# through FOLDER's save (its staging sibling exists, FOLDER itself does not unless it is a file).
rename_kill() {
  local at=$1 stage=$2 rows=$3 target=$4 what=$5
  start OSPREY_FAULT_INJECT=rename:$at
  reap
  grep -q "killed at rename #$at" "$work/s$n.log" || fail "session $n was not killed at rename $at"
  expect_stages "the kill in $stage" "$rows"
  tmp_exists "$target" || fail "the kill at rename $at left no $target.tmp-* (not in its save)"
  [[ $target == *.html || ! -e $out/$target ]] || fail "$target/ exists after a kill half-way through its save"
  record_kill "$stage" "OSPREY_FAULT_INJECT=rename:$at, $what"
}
rename_kill 8 ensemble "tune retrain" ensemble saving
rename_kill 23 quantize "tune retrain ensemble" ensemble_int8 saving
rename_kill 17 report "tune retrain ensemble quantize" report.html report.html
kills=$n

# 8. The last session finishes. From here on the checks go on after a failure, to show them all.
start
reap
final=$work/s$n.log
[[ $rc == 0 ]] || fail "the last session exited $rc"
check_untorn "at the end"
failures=0
declare -a kill_failed
bad() {  # a failed check; of kill $k when k > 0
  echo "FAIL: $*"
  failures=$((failures + 1))
  if ((k > 0)); then kill_failed[k]=1; fi
}
k=0
for s in "${stages[@]}"; do
  grep -q "^| $s |" "$final" || bad "no $s row in the last session's table"
  grep -q "^| $s |" "$out/report.md" || bad "report.md lacks the $s row"
done
grep -q '<section id="stages">' "$out/report.html" || bad "report.html lacks the stage table"
[[ -d $out/ensemble && -d $out/ensemble_int8 ]] || bad "no ensemble or ensemble_int8 folder at the end"
for ((i = 0; i < members; i++)); do
  check_model "$out/retrain/member_$i" "at the end"
  grep -q "member_$i/history.json" "$out/report.html" || bad "report.html lacks member_$i's curves"
done

# Each resume: said so, redid no finished stage, trial or member; kept everything it had.
for ((k = 1; k <= kills; k++)); do
  next=$work/s$((k + 1)).log what="the kill in ${kill_stage[k]} (${kill_how[k]})"
  grep -q "resuming after" "$next" || bad "session $((k + 1)) after $what did not resume"
  for s in $(jq -r '. as $r | ["tune", "retrain", "ensemble", "quantize"] | map(select($r.stages[.].row != null)) | .[]' "$work/k$k.json"); do
    if grep -q "== stage ${number[$s]}/4: $s " "$next"; then
      bad "session $((k + 1)) after $what did the finished $s stage again"
    fi
    jq -e --arg s "$s" --slurpfile was "$work/k$k.json" '.stages[$s] == $was[0].stages[$s]' "$out/run.json" >/dev/null ||
      bad "run.json's $s entry changed after $what: was $(jq -c --arg s "$s" '.stages[$s].row' "$work/k$k.json"), now $(jq -c --arg s "$s" '.stages[$s].row' "$out/run.json")"
  done
  for t in ${kept_trials[k]}; do
    if grep -q "^$t " "$next"; then bad "session $((k + 1)) after $what ran the completed trial $t again"; fi
  done
  for m in ${kept_members[k]}; do
    if grep -q "^member $((m + 1))/$members:" "$next"; then
      bad "session $((k + 1)) after $what retrained the saved member_$m"
    fi
    [[ -s $out/retrain/member_$m/history.json ]] ||
      bad "member_$m, saved before $what, has no history.json at the end (the report lacks its curves)"
  done
  if [[ -s $work/k$k.md5 ]]; then
    changed=$(cd "$out" && md5sum -c --quiet "$work/k$k.md5" 2>&1 | head -5 | tr '\n' ' ') ||
      bad "artefacts kept at $what changed or vanished by the end: $changed"
  fi
done
k=0
left=$(find "$out" -name '*.tmp-*' | sed "s|^$out/||" | head -5 | tr '\n' ' ')
[[ -z $left ]] || bad "temporaries left at the end: $left"

for ((k = 1; k <= kills; k++)); do
  echo "run_kill_stages: killed in ${kill_stage[k]} (${kill_how[k]}): ${kept_text[k]}, $([[ -z ${kill_failed[k]:-} ]] && echo "resumed OK" || echo "resume FAILED (above)")"
done
((failures == 0)) || fail "$failures check(s) failed"
echo "run_kill_stages: ok"
