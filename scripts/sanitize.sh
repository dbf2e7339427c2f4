#!/usr/bin/env bash
# Builds the whole suite (library, command, tests, examples; no benchmarks) under sanitizers
# and runs it with ctest, as issue 27 asks before a release (docs/reliability.md):
#   bash scripts/sanitize.sh address             # AddressSanitizer + UBSan + LeakSanitizer
#   bash scripts/sanitize.sh thread              # ThreadSanitizer
#   bash scripts/sanitize.sh thread -R Gloo      # extra arguments go to ctest
# Builds into ${OSPREY_SANITIZE_BUILD_DIR:-build-asan or build-tsan}. Each takes about half an
# hour to build and longer to run on 2 cores, so CI runs only the fuzz targets under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case $kind in
  address) sanitize="address;undefined" ;;
  thread) sanitize="thread" ;;
  *) echo "sanitize: the first argument is 'address' or 'thread', not '$kind'" >&2; exit 2 ;;
esac
shift
build=${OSPREY_SANITIZE_BUILD_DIR:-build-${kind:0:1}san}
root=$PWD
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DOSPREY_UNITY_BUILD=ON \
  "-DOSPREY_SANITIZE=$sanitize" -DOSPREY_BUILD_TESTS=ON -DOSPREY_BUILD_BENCH=OFF \
  -DOSPREY_BUILD_EXAMPLES=ON -DOSPREY_TEST_TIMEOUT_SCALE=4 >/dev/null
cmake --build "$build" -j"$(nproc)"

# A report ends the process with an error, so ctest counts it as a failure; the report itself is
# in the test's output (--output-on-failure). Sanitized code runs 2-15 times slower: each test's
# limit is 4 times its usual one (OSPREY_TEST_TIMEOUT_SCALE), 50 minutes where it has none.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest_args=(--test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 3000)
if [[ $kind == thread ]]; then
  # gRPC, protobuf and the OpenMP runtime are not built with TSan: scripts/tsan.supp and
  # core/thread_sanitizer.h say what it cannot see and how osprey tells it. OpenMP runs on one
  # thread (several are slow under TSan); the tests that ask for more get them, and are checked.
  export TSAN_OPTIONS="ignore_noninstrumented_modules=1 suppressions=$root/scripts/tsan.supp halt_on_error=1 second_deadlock_stack=1"
  export OMP_NUM_THREADS=1
  ctest "${ctest_args[@]}" "$@"
  exit
fi
# The tests that start Python or Chromium run uninstrumented programs, which
# verify_asan_link_order would refuse when the variables reach them.
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp:print_suppressions=0
status=0
ctest "${ctest_args[@]}" -LE 'mpi|slurm' "$@" || status=1
# Open MPI keeps part of what MPI_Init allocates until exit (scripts/lsan.supp), and at
# MPI_Finalize unloads the plugins that allocated it, so LeakSanitizer could name neither the
# plugin nor a caller and no suppression would match. For the tests that start MPI ranks, a
# preloaded dlclose that does nothing keeps the plugins mapped, and the slow unwinder follows
# the stacks through Open MPI's frames (built without frame pointers).
shim=$(cd "$build" && pwd)/keep_plugins_loaded
printf 'int dlclose(void* handle) { (void)handle; return 0; }\n' >"$shim.c"
cc -shared -fPIC -o "$shim.so" "$shim.c"
LD_PRELOAD=$shim.so ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0 \
  ctest "${ctest_args[@]}" -L 'mpi|slurm' "$@" || status=1
exit $status
