#!/usr/bin/env bash
# The main job: set up, build, print `osprey info`, then train the default Fashion-MNIST MLP.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./"${OSPREY_BUILD_DIR:-build}"/cli/osprey info
./"${OSPREY_BUILD_DIR:-build}"/cli/osprey train "$@"
