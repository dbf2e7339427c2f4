#!/usr/bin/env bash
# Configures and builds osprey into ${OSPREY_BUILD_DIR:-build}. Extra arguments go to cmake.
# The library compiles as a unity build (OSPREY_UNITY_BUILD, about half the time on 2 cores);
# -DOSPREY_UNITY_BUILD=OFF compiles file by file, as a development build does.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${OSPREY_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DOSPREY_WERROR=${OSPREY_WERROR:-OFF} \
  -DOSPREY_UNITY_BUILD=ON "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
