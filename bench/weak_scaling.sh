#!/usr/bin/env bash
# Weak scaling of the Fashion-MNIST MLP from 1 to 2 single-thread workers under mpirun (issue 19):
# runs bench_multi_worker with -np 1 and -np 2 alternately ROUNDS times (load from elsewhere hits
# both alike) and prints the median samples/s of each and efficiency = samples/s(2) / (2 x (1)).
#   bench/weak_scaling.sh [ROUNDS] [extra bench_multi_worker args...]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; shift || true
bin=${OSPREY_BUILD_DIR:-build}/bench/bench_multi_worker
run() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$1" -x OSPREY_NUM_THREADS=1 -x OMP_NUM_THREADS=1 \
    -x OMP_WAIT_POLICY=PASSIVE "$bin" "${@:2}" 2>/dev/null | grep '^workers'
}
one=(); two=()
for ((i = 0; i < rounds; ++i)); do
  l1=$(run 1 "$@"); l2=$(run 2 "$@"); echo "$l1"; echo "$l2"
  one+=("$(awk '{print $8}' <<<"$l1")"); two+=("$(awk '{print $8}' <<<"$l2")")
done
python3 - "${one[*]}" "${two[*]}" <<'PY'
import statistics, sys
one = [float(v) for v in sys.argv[1].split()]; two = [float(v) for v in sys.argv[2].split()]
m1, m2 = statistics.median(one), statistics.median(two)
print(f"median samples/s: 1 worker {m1:.0f}, 2 workers {m2:.0f}; weak-scaling efficiency {m2 / (2 * m1):.3f}")
PY
