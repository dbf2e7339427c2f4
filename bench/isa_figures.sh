#!/usr/bin/env bash
# Issue 41's figures, per ISA cap, side by side with PyTorch 1.13 in the same run (interleaved):
# float32 train and predict, mixed_bfloat16 train and accuracy, int8 predict and accuracy, for the
# MLP and CNN, under AVX2, AVX512_CORE and uncapped. Run on a quiet machine (no build or test
# beside it); about 25 minutes on 2 cores.
#   bench/isa_figures.sh [REPS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for isa in AVX2 AVX512_CORE native; do
  cap=(); [[ $isa == native ]] || cap=(--isa "$isa")
  echo "## $isa"
  bench/compare_torch --reps "$reps" --what train,predict,int8 --int8-epochs 2 "${cap[@]}"
  bench/compare_mixed --reps "$reps" --what train "${cap[@]}"
done
echo "## AVX2: mixed_bfloat16 accuracy against float32"
bench/compare_mixed --what accuracy --seeds 2 --epochs 3 --isa AVX2
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
