#!/usr/bin/env bash
# Fuzzes osprey's parsers of outside bytes with libFuzzer under ASan and UBSan (fuzz/, issue 27).
# Builds ${OSPREY_FUZZ_BUILD_DIR:-build-fuzz} with clang (OSPREY_FUZZ=ON), then runs each target
# for SECONDS on its seed corpus (fuzz/corpus/<name>) plus what earlier runs found
# (BUILD/corpus/<name>), two targets at a time. Any finding fails the run: the input is kept as
# BUILD/findings/<name>-crash-<sha1> (copy it to fuzz/regressions/<name>/, which ctest replays).
# One line per target goes to BUILD/fuzz-summary.tsv: target, seconds, runs, runs/s, coverage
# (edges), features, corpus size, findings.
#   bash scripts/fuzz.sh                    # every target, 30 s each (what CI runs)
#   bash scripts/fuzz.sh --seconds 600 csv  # one target, 10 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30
targets=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "fuzz: --seconds takes a positive integer, not '$seconds'" >&2; exit 2; }
build=${OSPREY_FUZZ_BUILD_DIR:-build-fuzz}
# Line tables, not full debug information (sanitizer reports still name file and line), and a
# unity build: together about a third of the compile time.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" -DOSPREY_UNITY_BUILD=ON \
  -DOSPREY_FUZZ=ON "-DOSPREY_SANITIZE=address;undefined" -DOSPREY_BUILD_TESTS=OFF \
  -DOSPREY_BUILD_BENCH=OFF -DOSPREY_BUILD_EXAMPLES=OFF >/dev/null
all=$(cat "$build/fuzz/targets.txt")
((${#targets[@]})) || read -r -a targets <<<"$all"
for t in "${targets[@]}"; do
  [[ " $all " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (the targets: $all)" >&2; exit 2; }
done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

mkdir -p "$build/findings" "$build/logs"
: >"$build/fuzz-summary.tsv"
run_one() {
  local t=$1 build=$2 seconds=$3
  local work="$build/corpus/$t" log="$build/logs/$t.log"
  mkdir -p "$work"
  # worker_service's harness trains on a thread of its own beside gRPC's pool, whose threads come
  # and go; libFuzzer's leak check after each input can stop them mid-exit and report what their
  # frames still held. For it LeakSanitizer looks once, at exit.
  local leaks=1
  [[ $t == worker_service ]] && leaks=0
  # -malloc_limit_mb: no single allocation past 256 MB from inputs of at most 64 KB (the bound
  # issue 27 asks for); -rss_limit_mb: the whole process under 2 GB; -timeout: a hang is a
  # finding after 10 s on one input.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    OMP_NUM_THREADS=1 TMPDIR=/dev/shm \
    "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=65536 -malloc_limit_mb=256 \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -detect_leaks=$leaks \
    -artifact_prefix="$build/findings/$t-" "$work" "fuzz/corpus/$t" >"$log" 2>&1
  local rc=$?
  local runs rate cov ft size
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  size=$(find "$work" -type f | wc -l)
  local findings
  findings=$(find "$build/findings" -name "$t-*" -type f | wc -l)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$seconds" "${runs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "$size" "$findings" >>"$build/fuzz-summary.tsv"
  if ((rc != 0 || findings > 0)); then
    echo "fuzz: $t: FINDING (exit $rc); the log is $log:" >&2
    grep -m 20 -E 'ERROR|SUMMARY|==[0-9]+==|terminate|runtime error|Test unit written' "$log" >&2 || tail -20 "$log" >&2
    return 1
  fi
  echo "fuzz: $t: ${runs:-?} runs in $seconds s (${rate:-?}/s), cov ${cov:-?}, no finding"
}
export -f run_one
rm -f "$build"/findings/*
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one "$@"' _ {} "$build" "$seconds" || status=1
column -t "$build/fuzz-summary.tsv"
exit $status
