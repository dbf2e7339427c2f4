#!/usr/bin/env bash
# Configures and builds osprey into ${OSPREY_BUILD_DIR:-build}. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${OSPREY_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DOSPREY_WERROR=${OSPREY_WERROR:-OFF} "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
