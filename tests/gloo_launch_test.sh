#!/usr/bin/env bash
# --communication gloo under mpirun (issue 48, item 8; ctest label mpi): Gloo's rendezvous goes
# through MPI, so `osprey launch -n 2 -- osprey train --strategy multi_worker --communication gloo`
# and plain `mpirun -np 2 osprey train ...` both train over Gloo and save the same weights as the
# job over MPI (1e-5 relative); so does OSPREY_GLOO_RENDEZVOUS=host:port given by hand. Ranks on
# two hosts (rank 1 in a UTS namespace of its own, with another host name) are refused naming
# OSPREY_GLOO_RENDEZVOUS; without mpirun and without an address (2 Slurm tasks started with no
# PMIx), Gloo is refused naming what to set.
# Usage: gloo_launch_test.sh path/to/osprey
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
set -u
osprey=$1
if ! command -v mpirun >/dev/null; then echo "gloo_launch_test: skipped, no mpirun"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/last_out "$tmp"/last_err; do [ -f "$f" ] && { echo "--- $f:"; tail -n 20 "$f"; }; done
  failures=$((failures + 1))
}
train=(train --strategy multi_worker --optimizer sgd --lr 0.05 --epochs 1 --steps-per-epoch 3
  --batch-size 64 --seed 5)
launch2() {  # launch2 COMMUNICATION OUTPUT: osprey launch of 2 workers; $rc
  "$osprey" launch --launcher mpirun -n 2 --max-restarts 0 -- "$osprey" "${train[@]}" \
    --communication "$1" --output "$2" >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
}
# max relative difference of two model.safetensors (float32), as the distribute tests measure it
max_rel_diff() { /usr/bin/python3 "$tests_dir/max_rel_diff.py" "$1" "$2"; }
same_weights() {  # same_weights WHAT DIR: DIR's model within 1e-5 of the MPI job's
  local diff
  diff=$(max_rel_diff "$2/model.safetensors" "$tmp/mpi/model.safetensors") ||
    { fail "$1: cannot compare $2/model.safetensors"; return; }
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$diff') <= 1e-5 else 1)" ||
    fail "$1: weights differ from the MPI job's by $diff relative"
}

mpirun2() {  # mpirun2 ARGS...: plain mpirun (its -np and programs in ARGS); $rc
  OSPREY_NUM_THREADS=1 OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    -x OSPREY_NUM_THREADS -x OMP_NUM_THREADS "$@" >"$tmp/last_out" 2>"$tmp/last_err"
  rc=$?
}

launch2 mpi "$tmp/mpi"
[ "$rc" = 0 ] || fail "MPI job: exit code $rc"
grep -q "MultiWorkerMirroredStrategy: 2 workers over mpi" "$tmp/last_err" ||
  fail "MPI job: not 2 workers over mpi"

launch2 gloo "$tmp/gloo"
[ "$rc" = 0 ] || fail "osprey launch with Gloo: exit code $rc, expected 0"
grep -q "MultiWorkerMirroredStrategy: 2 workers over gloo" "$tmp/last_err" ||
  fail "osprey launch with Gloo: not 2 workers over gloo"
same_weights "osprey launch with Gloo" "$tmp/gloo"

# plain mpirun, as a user without osprey launch writes it
mpirun2 -np 2 "$osprey" "${train[@]}" --communication gloo --output "$tmp/plain"
[ "$rc" = 0 ] || fail "plain mpirun with Gloo: exit code $rc, expected 0"
grep -q "MultiWorkerMirroredStrategy: 2 workers over gloo" "$tmp/last_err" ||
  fail "plain mpirun with Gloo: not 2 workers over gloo"
same_weights "plain mpirun with Gloo" "$tmp/plain"

# An address given by hand, as across hosts
port=$(/usr/bin/python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
OSPREY_GLOO_RENDEZVOUS=127.0.0.1:$port mpirun2 -np 2 -x OSPREY_GLOO_RENDEZVOUS "$osprey" \
  "${train[@]}" --communication gloo --output "$tmp/by_hand"
[ "$rc" = 0 ] || fail "OSPREY_GLOO_RENDEZVOUS: exit code $rc, expected 0"
grep -q "MultiWorkerMirroredStrategy: 2 workers over gloo" "$tmp/last_err" ||
  fail "OSPREY_GLOO_RENDEZVOUS: not 2 workers over gloo"
same_weights "OSPREY_GLOO_RENDEZVOUS" "$tmp/by_hand"

# Two host names: loopback would not reach rank 0, so Gloo is refused naming the variable.
if unshare --uts true 2>/dev/null; then
  mpirun2 -np 1 "$osprey" "${train[@]}" --communication gloo : -np 1 unshare --uts \
    sh -c 'hostname osprey-other-host && exec "$@"' sh "$osprey" "${train[@]}" --communication gloo
  [ "$rc" = 2 ] || fail "two hosts: exit code $rc, expected 2 (bad usage)"
  grep -qF "MultiWorkerMirroredStrategy: Gloo under mpirun finds its rendezvous through MPI on one host only, and the ranks run on 2 hosts ($(hostname), osprey-other-host). Set OSPREY_GLOO_RENDEZVOUS=host:port (an address of rank 0's host, $(hostname), that every host reaches, and a free port), or use --communication mpi" "$tmp/last_err" ||
    fail "two hosts: not refused naming OSPREY_GLOO_RENDEZVOUS"
else
  echo "gloo_launch_test: two-host refusal not checked (no UTS namespace here)"
fi

# No MPI launcher and no address: 2 Slurm tasks (srun without PMIx) cannot meet over Gloo.
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK SLURM_PROCID=0 SLURM_NTASKS=2 \
  "$osprey" "${train[@]}" --communication gloo >"$tmp/last_out" 2>"$tmp/last_err"
rc=$?
[ "$rc" = 2 ] || fail "Gloo without an address: exit code $rc, expected 2 (bad usage)"
grep -qF "MultiWorkerMirroredStrategy: Gloo needs a rendezvous address, and none was given: set OSPREY_CONFIG or TF_CONFIG (the chief's host:port) or OSPREY_GLOO_RENDEZVOUS=host:port, or start the job with mpirun (osprey launch) so the address goes through MPI" "$tmp/last_err" ||
  fail "Gloo without an address: not refused naming what to set"

if [ "$failures" = 0 ]; then echo "gloo_launch_test: all checks passed"; fi
[ "$failures" = 0 ]
