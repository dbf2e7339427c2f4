#!/usr/bin/env bash
# Repeats tests while every core is kept busy, to find waits that depend on timing: a test that
# passes on a quiet machine but fails when a build or another job shares its cores (CI's case).
#   bash scripts/stress_tests.sh [--build DIR] [--repeat N] [--load K] REGEX
# runs `ctest -R REGEX` N times (default 30) in BUILD (default build), each test until it fails,
# with K busy processes beside it (default: one per core). Exits 1 on the first failure, naming
# the test and its round; the failing output is in BUILD/Testing/Temporary/LastTest.log.
set -euo pipefail
build=build
repeat=30
load=$(nproc)
while [[ $# -gt 1 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    *) echo "stress_tests: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -eq 1 ]] || { echo "usage: stress_tests.sh [--build DIR] [--repeat N] [--load K] REGEX" >&2; exit 2; }
regex=$1
[[ -d $build ]] || { echo "stress_tests: no build folder $build" >&2; exit 2; }
pids=()
stop_load() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_load EXIT
# Busy loops as `stress --cpu K` runs them: pure computation, one per process.
for ((i = 0; i < load; ++i)); do
  (while :; do :; done) &
  pids+=($!)
done
echo "stress_tests: $load busy processes; ctest -R '$regex' x $repeat in $build"
start=$(date +%s)
if ! ctest --test-dir "$build" -R "$regex" --repeat "until-fail:$repeat" --output-on-failure; then
  echo "stress_tests: a test failed under load (see above)" >&2
  exit 1
fi
echo "stress_tests: all passed $repeat times under load in $(($(date +%s) - start)) s"
