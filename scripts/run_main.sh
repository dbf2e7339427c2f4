#!/usr/bin/env bash
# The main job: set up, build, print `osprey info`, then `osprey run` (cli/run.cpp): tune, retrain,
# ensemble and quantize on Fashion-MNIST within a budget (15 minutes unless --budget says).
# Arguments go to `osprey run`; rerun to resume an interrupted run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The main job needs neither the tests, the benchmarks nor the examples (nor GoogleTest and PyTorch
# to build them).
bash scripts/build.sh -DOSPREY_BUILD_TESTS=OFF -DOSPREY_BUILD_BENCH=OFF -DOSPREY_BUILD_EXAMPLES=OFF
# The build folder may be relative (to the repository) or absolute.
osprey=${OSPREY_BUILD_DIR:-build}/cli/osprey
"$osprey" info
"$osprey" run "$@"
