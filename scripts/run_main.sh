#!/usr/bin/env bash
# The main job: set up, build, print `osprey info`, then `osprey run` (cli/run.cpp): tune, retrain,
# ensemble and quantize on Fashion-MNIST within a budget (15 minutes unless --budget says).
# Arguments go to `osprey run`; rerun to resume an interrupted run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./"${OSPREY_BUILD_DIR:-build}"/cli/osprey info
./"${OSPREY_BUILD_DIR:-build}"/cli/osprey run "$@"
