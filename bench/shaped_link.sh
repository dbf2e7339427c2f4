#!/usr/bin/env bash
# Two workers on the test network (scripts/testnet.sh: two namespaces joined by a tbf-shaped veth),
# talking Gloo over a real, rate-limited TCP link (issue 19):
#   bench/shaped_link.sh [RATE=1gbit] [STEPS=200]
# For f32 and bf16 all-reduce it prints bench_multi_worker's step time and throughput, the bytes
# that crossed the link per step (the veth's counters) against the gradient bytes of the model,
# and the time to 85% test accuracy. Needs root; the network is taken down at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-1gbit}
steps=${2:-200}
bin=$(realpath "${OSPREY_BUILD_DIR:-build}/bench/bench_multi_worker")
bash scripts/testnet.sh up --rate "$rate" >/dev/null
trap 'bash scripts/testnet.sh down >/dev/null 2>&1 || true' EXIT
cluster='{"worker": ["10.213.0.1:29500", "10.213.0.2:29500"]}'
# Runs bench_multi_worker on both "hosts"; prints worker 0's output.
job() {
  local i out=$(mktemp -d)
  for i in 0 1; do
    ip netns exec "osprey-h$i" env OSPREY_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"worker\", \"index\": $i}}" \
      OSPREY_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE "$bin" "$@" >"$out/$i" 2>&1 &
  done
  wait
  cat "$out/0"
  rm -rf "$out"
}
tx_bytes() { ip netns exec osprey-h0 cat /sys/class/net/eth0/statistics/tx_bytes; }
model_bytes=$((535818 * 4))
for c in none bf16; do
  before=$(tx_bytes)
  line=$(job --steps "$steps" --compression "$c" --bucket-bytes $((4 << 20)) | grep '^workers')
  after=$(tx_bytes)
  # The run also makes 20 warm-up steps and the start-up exchanges; count per step over all.
  echo "$rate $c: $line"
  awk -v b=$((after - before)) -v s=$((steps + 20)) -v m=$model_bytes \
    'BEGIN { printf "  link bytes sent by worker 0 per step: %.2f MB (model gradients %.2f MB, ratio %.2f)\n", b / s / 1e6, m / 1e6, b / s / m }'
done
for c in none bf16; do
  echo "$rate $c time to 85%: $(job --target-accuracy 0.85 --max-epochs 6 --compression "$c" --bucket-bytes $((4 << 20)) | grep '^workers')"
done
