#!/usr/bin/env bash
# Parallel trials (issue 24): wall time of one distributed study, `osprey launch --tuners N --
# osprey tune`, with 2 tuner workers (one core each) against 1 worker on one core and 1 worker
# on both cores. Each trial runs in its own process seeded by --seed, so every configuration
# trains the same trials to the same weights and ends with the same best value: the script checks
# that and reports the median time of ROUNDS runs of each and the speed-ups.
#   bench/tuner_workers.sh [ROUNDS=3] [TRIALS=8] [EPOCHS=3] [TRAIN_SAMPLES=6000]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
trials=${2:-8}
epochs=${3:-3}
samples=${4:-6000}
osprey=$(realpath "${OSPREY_BUILD_DIR:-build}/cli/osprey")
work=$(mktemp -d /tmp/osprey-tuner-workers.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() {  # tuners threads_per_tuner -> "seconds best_score"
  local dir="$work/study-$1-$2"
  rm -rf "$dir"
  local start end
  start=$(date +%s.%N)
  "$osprey" launch --tuners "$1" --threads-per-worker "$2" -- "$osprey" tune --tuner random \
    --max-trials "$trials" --epochs "$epochs" --train-samples "$samples" --val-samples 2000 \
    --seed 7 --directory "$dir" >"$work/log" 2>&1
  end=$(date +%s.%N)
  local best
  best=$(grep -m1 '^\[chief\] Score:' "$work/log" | awk '{print $3}')
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}') $best"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -a one_core two_workers one_two_cores
bests=()
for ((r = 0; r < rounds; ++r)); do
  read -r t b <<<"$(run 1 1)"; one_core+=("$t"); bests+=("$b")
  read -r t b <<<"$(run 2 1)"; two_workers+=("$t"); bests+=("$b")
  read -r t b <<<"$(run 1 2)"; one_two_cores+=("$t"); bests+=("$b")
  echo "round $((r + 1)): 1 worker x 1 core ${one_core[-1]} s, 2 workers x 1 core ${two_workers[-1]} s, 1 worker x 2 cores ${one_two_cores[-1]} s"
done
distinct=$(printf '%s\n' "${bests[@]}" | sort -u | wc -l)
echo "best val_accuracy of every run: $(printf '%s\n' "${bests[@]}" | sort -u | tr '\n' ' ')($distinct distinct)"
m1=$(median "${one_core[@]}"); m2=$(median "${two_workers[@]}"); m3=$(median "${one_two_cores[@]}")
echo "median wall time, $trials trials x $epochs epochs, $samples images: 1 worker x 1 core $m1 s," \
  "2 workers x 1 core $m2 s, 1 worker x 2 cores $m3 s"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo "speed-up of 2 workers: $(ratio "$m1" "$m2")x over 1 worker on 1 core," \
  "$(ratio "$m3" "$m2")x over 1 worker on both cores"
[[ $distinct == 1 ]] || { echo "FAIL: the runs ended with different best values"; exit 1; }
