#!/usr/bin/env bash
# Counts instructions per call of every bench_ops case under callgrind (one thread) and prints
# osprey's count against the bare oneDNN primitive's: the framework overhead without the timing
# noise of a shared VM (instruction counts repeat exactly, whatever else the machine runs).
#   bench/count_overhead.sh [path/to/bench_ops] [case filters...]   e.g. 128x256x10 conv_fwd
# Valgrind runs code ~50x slower: the 1024^3 cases take many minutes; filter them out on a busy box.
set -euo pipefail
BIN=${1:-build/bench/bench_ops}
shift || true
FILTERS=("$@")
((${#FILTERS[@]})) || FILTERS=("")
DIR=$(mktemp -d /tmp/osprey_callgrind.XXXXXX)
for i in "${!FILTERS[@]}"; do
  OMP_NUM_THREADS=1 OSPREY_NUM_THREADS=1 valgrind --tool=callgrind --collect-atstart=no \
    --callgrind-out-file="$DIR/cg$i.out" "$BIN" --count "${FILTERS[$i]}" >/dev/null 2>"$DIR/valgrind$i.log"
done
echo "callgrind dumps: $DIR"
python3 - "$DIR" <<'PY'
import glob, os, re, sys
counts = {}
for f in glob.glob(os.path.join(sys.argv[1], "cg*.out*")):
    text = open(f).read()
    name = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
    total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if name and total:
        counts[name.group(1)] = int(total.group(1)) / 10.0  # 10 calls per dump
pairs = [("matmul_kernel", "matmul_dnnl"), ("matmul_osprey", "matmul_dnnl"), ("linear_osprey", "linear_dnnl"),
         ("linear_autograd", "linear_dnnl"), ("conv_fwd_osprey", "conv_fwd_dnnl"),
         ("conv_bwd_data_osprey", "conv_bwd_data_dnnl"), ("conv_bwd_weights_osprey", "conv_bwd_weights_dnnl")]
print(f"{'case':40s} {'osprey instr':>14s} {'oneDNN instr':>14s} {'overhead':>9s}")
for mine, ref in pairs:
    for name in sorted(k for k in counts if k.startswith(mine + "/")):
        shape = name.split("/", 1)[1]
        other = f"{ref}/{shape}"
        if other in counts:
            o, r = counts[name], counts[other]
            print(f"{name:40s} {o:14.0f} {r:14.0f} {100.0 * (o - r) / r:+8.2f}%")
PY
