#!/usr/bin/env bash
# The test suite: set up, build (tests on), and run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
bash scripts/build.sh -DOSPREY_BUILD_TESTS=ON -DOSPREY_BUILD_BENCH=ON -DOSPREY_BUILD_EXAMPLES=ON "$@"
ctest --test-dir "${OSPREY_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)" --timeout 600
