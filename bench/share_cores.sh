#!/usr/bin/env bash
# Sharing a machine (issue 19): two osprey trainings of 2 threads each on this 2-core machine, at
# the same time, against one alone, for each way OpenMP's idle threads can wait:
#   default: libgomp spins up to 300,000 times before sleeping (OMP_WAIT_POLICY unset)
#   GOMP_SPINCOUNT=N: spins N times, then sleeps on a futex
#   PASSIVE: sleeps at once (OMP_WAIT_POLICY=PASSIVE)
# For each policy, ROUNDS times: a solo run, then a concurrent pair; reports the median samples/s
# of the solo runs, of each member of the pairs, pair/solo (target >= 0.40), and solo against the
# default policy's solo (target: at most 3% slower).
#   bench/share_cores.sh [ROUNDS=3] [STEPS=300]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
steps=${2:-300}
bin=${OSPREY_BUILD_DIR:-build}/bench/bench_multi_worker
run() {  # env assignments..., then runs one training; prints its samples/s
  env OSPREY_NUM_THREADS=2 OMP_NUM_THREADS=2 "$@" "$bin" --steps "$steps" 2>/dev/null | awk '/^workers/ {print $8}'
}
declare -A solo pair
for policy in default GOMP_SPINCOUNT=10000 GOMP_SPINCOUNT=1000 OMP_WAIT_POLICY=PASSIVE; do
  envs=()
  [[ $policy != default ]] && envs=("$policy")
  s=(); p=()
  for ((i = 0; i < rounds; ++i)); do
    s+=("$(run "${envs[@]}")")
    a=$(mktemp); b=$(mktemp)
    run "${envs[@]}" >"$a" & run "${envs[@]}" >"$b" & wait
    p+=("$(cat "$a")" "$(cat "$b")"); rm -f "$a" "$b"
  done
  solo[$policy]="${s[*]}"; pair[$policy]="${p[*]}"
  echo "$policy: solo ${s[*]} | pair ${p[*]}"
done
python3 - "${solo[default]}" <<PY
import statistics, sys
base = statistics.median(float(v) for v in sys.argv[1].split())
rows = {$(for k in "${!solo[@]}"; do printf '"%s": ("%s", "%s"), ' "$k" "${solo[$k]}" "${pair[$k]}"; done)}
print(f"{'policy':<26} {'solo samples/s':>15} {'pair each':>10} {'pair/solo':>10} {'solo vs default':>16}")
for k, (s, p) in rows.items():
    ms, mp = statistics.median(float(v) for v in s.split()), statistics.median(float(v) for v in p.split())
    print(f"{k:<26} {ms:>15.0f} {mp:>10.0f} {mp / ms:>10.2f} {ms / base - 1:>+15.1%}")
PY
