#!/usr/bin/env bash
# The main job: set up, build, and run `osprey info`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./"${OSPREY_BUILD_DIR:-build}"/cli/osprey info "$@"
