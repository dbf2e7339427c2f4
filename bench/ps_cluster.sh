#!/usr/bin/env bash
# Parameter-server training over the shaped test link (issue 21): the ps tasks on one "host"
# (namespace osprey-h0), the chief and the workers on the other (osprey-h1), joined by a veth
# shaped with tc tbf (scripts/testnet.sh), each task an `osprey train --strategy
# parameter_server` (or `osprey ps`) process with its OSPREY_CONFIG. Prints, per run, the chief's
# step time, final test accuracy and the link bytes per step against the model's bytes:
#   bench/ps_cluster.sh [RATE=1gbit]
#   1. sync (3 of 3), sync with 1 backup (2 of 3), async: 3 workers, worker 2 slowed 3x
#      (OSPREY_PS_SLOWDOWN), 1 ps;
#   2. bytes per step with f32 and bf16 gradients (sync, 2 workers, 1 ps);
#   3. the ps link's saturation: step time with 1, 2, 3 and 4 workers on 1 ps.
# Needs root; the network is taken down at the end. Runs ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-1gbit}
osprey=$(realpath "${OSPREY_BUILD_DIR:-build}/cli/osprey")
bash scripts/testnet.sh up --rate "$rate" >/dev/null
trap 'bash scripts/testnet.sh down >/dev/null 2>&1 || true' EXIT
model_bytes=$((535818 * 4))
tmp=$(mktemp -d)

rx_bytes() { ip netns exec osprey-h0 cat /sys/class/net/eth0/statistics/rx_bytes; }
tx_bytes() { ip netns exec osprey-h0 cat /sys/class/net/eth0/statistics/tx_bytes; }

# job WORKERS PS STEPS TRAIN_FLAGS...: prints the chief's step time (ms), test accuracy and the
# link bytes per step (both directions).
job() {
  local workers=$1 nps=$2 steps=$3
  shift 3
  local cluster chief="\"10.213.0.2:29400\"" w="" p="" i pids=()
  for ((i = 0; i < workers; i++)); do w+="${w:+, }\"10.213.0.2:$((29410 + i))\""; done
  for ((i = 0; i < nps; i++)); do p+="${p:+, }\"10.213.0.1:$((29500 + i))\""; done
  cluster="{\"chief\": [$chief], \"worker\": [$w], \"ps\": [$p]}"
  config() { echo "{\"cluster\": $cluster, \"task\": {\"type\": \"$1\", \"index\": $2}}"; }
  for ((i = 0; i < nps; i++)); do
    ip netns exec osprey-h0 env OSPREY_NUM_THREADS=1 OMP_NUM_THREADS=1 \
      "$osprey" ps --listen "10.213.0.1:$((29500 + i))" >"$tmp/ps$i" 2>&1 &
    pids+=($!)
  done
  local train=(train --strategy parameter_server --epochs 2 --steps-per-epoch "$steps"
    --optimizer sgd --lr 0.05 --output '' "$@")
  for ((i = 0; i < workers; i++)); do
    ip netns exec osprey-h1 env OSPREY_CONFIG="$(config worker "$i")" OSPREY_NUM_THREADS=1 \
      OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE "$osprey" "${train[@]}" >"$tmp/w$i" 2>&1 &
    pids+=($!)
  done
  local rx0 tx0
  rx0=$(rx_bytes)
  tx0=$(tx_bytes)
  ip netns exec osprey-h1 env OSPREY_CONFIG="$(config chief 0)" OSPREY_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 "$osprey" "${train[@]}" >"$tmp/chief" 2>&1 || { cat "$tmp/chief" >&2; return 1; }
  local rx1 tx1
  rx1=$(rx_bytes)
  tx1=$(tx_bytes)
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  # Epoch 2's step time (epoch 1 includes start-up), the test accuracy, bytes per step.
  local ms acc
  ms=$(grep -a -o '[0-9]*ms/step' "$tmp/chief" | tail -1 | tr -dc 0-9)
  acc=$(sed -n 's/.*test accuracy: \([0-9.]*\).*/\1/p' "$tmp/chief")
  awk -v ms="$ms" -v acc="$acc" -v b=$(((rx1 - rx0) + (tx1 - tx0))) -v s=$((2 * steps)) -v m=$model_bytes \
    'BEGIN { printf "%s ms/step (%.1f steps/s), test accuracy %s, link %.2f MB/step = %.2f x model\n", ms, 1000 / ms, acc, b / s / 1e6, b / s / m }'
}

echo "== $rate, 3 workers (worker 2 slowed 3x), 1 ps, global batch 96, 2 x 100 steps"
export OSPREY_PS_SLOWDOWN=2:3
echo "sync 3 of 3:        $(job 3 1 100 --batch-size 96)"
echo "sync 2 of 3:        $(job 3 1 100 --batch-size 96 --replicas-to-aggregate 2)"
echo "async:              $(job 3 1 100 --batch-size 96 --ps-mode async)"
unset OSPREY_PS_SLOWDOWN
echo "no straggler, sync: $(job 3 1 100 --batch-size 96)"
echo "== bytes per step, sync, 2 workers, 1 ps, global batch 64"
echo "f32 gradients:  $(job 2 1 50 --batch-size 64)"
echo "bf16 gradients: $(job 2 1 50 --batch-size 64 --compression bf16)"
echo "== workers per ps (sync, per-worker batch 64, 1 ps)"
for n in 1 2 3 4; do
  echo "$n workers: $(job "$n" 1 50 --batch-size $((64 * n)))"
done
rm -rf "$tmp"
