#!/usr/bin/env bash
# Relaunch of a killed `osprey train --backup` as a whole process (issue 20): what the user waits
# for between typing the command again and training going on. Per round:
#   fresh:    `osprey train` of 100 steps (process start, reading Fashion-MNIST, 100 steps, the
#             test-set evaluation);
#   relaunch: the same command line as a job of 200 steps that was killed (kill -9) right after
#             its backup at step 100, so it resumes at step 100 and also runs 100 steps;
#   first:    `osprey train` of 1 step: start, data, one step, evaluation (an upper bound of the
#             time to a first step).
# relaunch - fresh is what restoring costs a process; first + that is the time from relaunch to
# the first resumed step. Prints each round and the medians.
#   bench/relaunch_time.sh [ROUNDS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
osprey=${OSPREY_BUILD_DIR:-build}/cli/osprey
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(train --epochs 1 --batch-size 128 --output "" --seed 3)
wall() {  # wall CMD...: seconds the command took
  local s e
  s=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  e=$(date +%s.%N)
  python3 -c "print(round($e - $s, 3))"
}
f=(); r=(); o=()
for ((i = 0; i < rounds; ++i)); do
  rm -rf "$tmp/b"
  "$osprey" "${common[@]}" --steps-per-epoch 200 --backup "$tmp/b" --backup-freq 100 >/dev/null 2>&1 &
  job=$!
  while [ ! -d "$tmp/b/ckpt-000000000100" ] && kill -0 "$job" 2>/dev/null; do sleep 0.002; done
  kill -9 "$job" 2>/dev/null || true
  wait "$job" 2>/dev/null || true
  [ -d "$tmp/b/ckpt-000000000100" ] || { echo "no backup at step 100"; exit 1; }
  o+=("$(wall "$osprey" "${common[@]}" --steps-per-epoch 1)")
  f+=("$(wall "$osprey" "${common[@]}" --steps-per-epoch 100)")
  r+=("$(wall "$osprey" "${common[@]}" --steps-per-epoch 200 --backup "$tmp/b" --backup-freq 1000)")
  echo "round $((i + 1)): first step run ${o[-1]} s, fresh 100 steps ${f[-1]} s, relaunch 100 steps ${r[-1]} s"
done
python3 - "${o[*]}" "${f[*]}" "${r[*]}" <<'EOF'
import statistics, sys
o, f, r = ([float(x) for x in a.split()] for a in sys.argv[1:])
d = [b - a for a, b in zip(f, r)]
print(f"median: 1-step run {statistics.median(o):.3f} s, fresh {statistics.median(f):.3f} s, "
      f"relaunch {statistics.median(r):.3f} s, relaunch - fresh {statistics.median(d) * 1000:.0f} ms")
EOF
