#!/usr/bin/env bash
# Makes the venv of the current PyTorch release that the benchmarks compare against beside
# Debian's PyTorch 1.13 (bench/gpt_figures.py --torch2 .venv-torch2/bin/python): PyPI's wheel,
# pinned so figures stay comparable. It pulls the CUDA runtime wheels too (PyPI's Linux wheel
# needs them to import; about 3 GB), though the benchmarks run on the CPU. Not part of the test
# set-up: nothing in the suite needs it.
#   bash scripts/bench_venv.sh [DIR]     (default .venv-torch2)
set -euo pipefail
dir=${1:-.venv-torch2}
if [[ ! -x $dir/bin/python ]]; then
  python3 -m venv "$dir"
fi
"$dir/bin/pip" install --quiet torch==2.5.1 numpy
"$dir/bin/python" -c "import torch; print('bench_venv:', torch.__version__, 'in $dir')"
