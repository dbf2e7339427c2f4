#!/usr/bin/env bash
# Installs the Debian packages osprey's build and main job need; with --tests, also what the test
# suite and the benchmarks need (GoogleTest, Google Benchmark, Slurm, PyTorch, numpy, protobuf
# for Python, the style tools). Skips what is there.
set -euo pipefail
# ocl-icd-opencl-dev: Debian's dnnl-config.cmake calls find_package(OpenCL) (its GPU runtime is OCL);
# apt only recommends it, and --no-install-recommends skips it.
# Multi-worker training: Open MPI (mpirun, srun), Gloo (TF_CONFIG-started jobs), a one-node Slurm
# and network namespaces (iproute2, ping) for the tests.
# libopenblas0-pthread: Debian's python3-torch calls whatever libblas.so.3 is installed; the netlib
# reference BLAS it gets otherwise makes PyTorch ~30x slower and bench/compare_torch meaningless.
# libxgboost-dev, libnlopt-dev: ensembles (gradient-boosted tree members; Nelder-Mead weights).
# clang-format-14, clang-tidy-14: the style gate (scripts/check_style.sh), pinned to one version.
# libprotobuf-dev, protobuf-compiler: TensorBoard event files; python3-protobuf reads them back in
# the tests. libgrpc++-dev, protobuf-compiler-grpc: parameter servers (osprey ps) and their
# clients. libstb-dev: stb_image, which decodes folders of images (osprey train --data DIR/).
# libsentencepiece-dev: the BPE and unigram tokenizers (osprey train --tokenizer bpe:N|unigram:N).
# clang-14, libclang-rt-14-dev, libomp-14-dev (tests only): the libFuzzer build of the fuzz targets
# (scripts/fuzz.sh) under ASan and UBSan; clang's OpenMP is libomp.
# ccache: a rebuild (CI's clean clone on the same machine) reuses earlier compilations.
# valgrind (tests only): bench_ops counts instructions through callgrind's client requests
# (valgrind/callgrind.h), and the test command builds the benchmarks.
# chromium (tests only): osprey report's pages are loaded in headless Chromium, which must log no
# console message, and screenshotted (tests/report_chromium_test.py).
packages=(
  build-essential cmake pkg-config ccache
  libdnnl-dev ocl-icd-opencl-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev libtomlplusplus-dev zlib1g-dev libstb-dev
  libsentencepiece-dev
  dataset-fashion-mnist
  libopenmpi-dev openmpi-bin libgloo-dev
  libxgboost-dev libnlopt-dev libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
)
if [[ ${1:-} == --tests ]]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    slurm-wlm munge iproute2 iputils-ping
    python3 python3-numpy python3-torch python3-protobuf libopenblas0-pthread
    clang-format-14 clang-tidy-14 valgrind clang-14 libclang-rt-14-dev libomp-14-dev
    chromium
  )
elif [[ -n ${1:-} ]]; then
  echo "setup: unknown option $1 (--tests adds what the tests need)" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
