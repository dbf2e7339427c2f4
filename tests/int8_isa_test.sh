#!/usr/bin/env bash
# The same int8 model gives the same logits, bit for bit, under every ISA cap this CPU supports
# (docs/cpus_and_determinism.md): int8 sums are exact everywhere, u8 x s8 without VNNI included,
# and the inputs here have negative values, so the two-pass path runs too.
#   int8_isa_test.sh PROBE WORKDIR CAP...
set -euo pipefail
probe=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
"$probe" write "$work/model"
OSPREY_MAX_CPU_ISA=ALL "$probe" predict "$work/model" > "$work/native.txt"
for cap in "$@"; do
  OSPREY_MAX_CPU_ISA=$cap "$probe" predict "$work/model" > "$work/$cap.txt"
  if ! cmp -s "$work/native.txt" "$work/$cap.txt"; then
    echo "int8 logits under OSPREY_MAX_CPU_ISA=$cap differ from the uncapped ones:"
    diff <(fold -w 80 "$work/native.txt") <(fold -w 80 "$work/$cap.txt") | head -20
    exit 1
  fi
  echo "$cap: the same bits as uncapped ($(tail -1 "$work/$cap.txt" | cut -c1-16)...)"
done
rm -rf "$work"
