#!/usr/bin/env bash
# find_package(osprey) as a user's project does it (issue 26): installs this build to a temporary
# prefix, configures examples/consumer (a CMake project of its own) against it with the
# components this build has, builds and runs it; then checks that asking for a component the
# install lacks fails at configure time, naming it.
# Usage: consumer_test.sh CMAKE BUILD_DIR SOURCE_DIR COMPONENT,COMPONENT,... [SANITIZER,...]
# (the sanitizers the install was built with: the consumer must be built with them too)
set -u
cmake=$1 build=$2 src=$3 components=${4//,/;} sanitizers=${5:-}
flags=()
if [ -n "$sanitizers" ]; then
  flags=(-DCMAKE_CXX_FLAGS="-fsanitize=$sanitizers" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitizers")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }
# Nothing of the build or source tree may leak into the installed package.
if grep -rl -e "$build" -e "$src/src" "$tmp/prefix/lib/cmake/osprey"; then
  echo "FAIL: the package config refers to the build or source tree"
  exit 1
fi
"$cmake" -S "$src/examples/consumer" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DOSPREY_CONSUMER_COMPONENTS="$components" "${flags[@]}" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; echo "FAIL: configure the consumer"; exit 1; }
grep "osprey 0" "$tmp/configure.log"
"$cmake" --build "$tmp/b" -j2 >"$tmp/build.log" 2>&1 ||
  { tail -50 "$tmp/build.log"; echo "FAIL: build the consumer"; exit 1; }
"$tmp/b/consumer" || { echo "FAIL: the consumer ran with exit code $?"; exit 1; }
if "$cmake" -S "$src/examples/consumer" -B "$tmp/b2" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DOSPREY_CONSUMER_COMPONENTS="mpi;tpu" >"$tmp/refuse.log" 2>&1; then
  echo "FAIL: find_package(osprey COMPONENTS tpu) succeeded"
  exit 1
fi
grep -q "tpu" "$tmp/refuse.log" || { cat "$tmp/refuse.log"; echo "FAIL: the refusal does not name tpu"; exit 1; }
echo "consumer_test: ok"
