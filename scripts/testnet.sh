#!/usr/bin/env bash
# Two test "hosts" on this machine: network namespaces osprey-h0 (10.213.0.1) and osprey-h1
# (10.213.0.2) joined by a veth pair whose ends are rate-limited with tc tbf, so that distributed
# runs see a real 1 or 10 Gbit/s link. Needs root; exits 77 where namespaces cannot be made.
#   scripts/testnet.sh up [--rate 1gbit|10gbit|<tc rate>] | down | status
set -euo pipefail

NS=(osprey-h0 osprey-h1)
ADDR=(10.213.0.1 10.213.0.2)
DEV=eth0  # each end is its host's eth0, as on a real machine

log() { echo "testnet: $*" >&2; }
skip() { log "skipped: $*"; exit 77; }

# tc rate ("1gbit", "800mbit", "100mbps" = bytes/s, ...) to bytes per second.
rate_bytes_per_s() {
  local r=${1,,} n unit
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(bit|bps)$ ]] || return 1
  n=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[3]}${BASH_REMATCH[4]}
  awk -v n="$n" -v u="$unit" 'BEGIN {
    m["bit"] = 1 / 8; m["kbit"] = 1e3 / 8; m["mbit"] = 1e6 / 8; m["gbit"] = 1e9 / 8; m["tbit"] = 1e12 / 8
    m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6; m["gbps"] = 1e9; m["tbps"] = 1e12
    printf "%d\n", n * m[u] }'
}

check_prereqs() {
  [[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces"
  command -v ip >/dev/null || skip "ip (iproute2) is not installed"
  command -v tc >/dev/null || skip "tc (iproute2) is not installed"
  # A throwaway namespace tells whether this machine (container, sandbox) lets us make them.
  local probe=osprey-probe-$$ err
  if ! err=$(ip netns add "$probe" 2>&1); then skip "cannot create network namespaces: $err"; fi
  ip netns del "$probe"
}

down() {
  local ns pids i
  for ns in "${NS[@]}"; do
    [[ -e /run/netns/$ns ]] || continue
    # A namespace lives on while processes are inside it (and with it its veth and addresses);
    # whatever a test left running in a test host goes with the host.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n $pids ]]; then
      log "stopping processes left in $ns: ${pids//$'\n'/ }"
      # shellcheck disable=SC2086
      kill -TERM $pids 2>/dev/null || true
      for ((i = 0; i < 20; i++)); do  # 2 s, then SIGKILL
        [[ -z $(ip netns pids "$ns" 2>/dev/null) ]] && break
        sleep 0.1
      done
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      # shellcheck disable=SC2086
      [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns"
  done
}

up() {
  local rate=1gbit
  while (($#)); do
    case $1 in
      --rate) rate=${2:?--rate needs a value}; shift 2 ;;
      *) echo "usage: $0 up [--rate 1gbit|10gbit|<tc rate>]" >&2; exit 2 ;;
    esac
  done
  local bps burst
  bps=$(rate_bytes_per_s "$rate") || { log "cannot read rate '$rate' (e.g. 1gbit, 10gbit, 500mbit)"; exit 2; }
  # tbf sends at most `burst` bytes per timer tick; with too small a bucket the link never gets to
  # its rate. The rule of thumb is rate/HZ; we take 4 ms worth (rate/250, HZ=250 kernels): 500 KB
  # at 1gbit, 5 MB at 10gbit. It must also hold a whole 64 KB TSO/GSO packet from the veth, or
  # tbf has to split each one, hence at least 128 KB. The error it adds (one bucket of extra bytes
  # at the start of a transfer) is ~1% of 50 MB at 1gbit.
  burst=$((bps / 250))
  ((burst >= 131072)) || burst=131072

  check_prereqs
  down
  ip netns add "${NS[0]}"
  ip netns add "${NS[1]}"
  # From here on a failure must not leave half a cluster behind.
  trap 'rc=$?; ((rc == 0)) || { log "up failed; removing the namespaces"; down; }' EXIT
  local i
  for i in 0 1; do
    # No IPv6: its router solicitations and DAD probes would be the only other traffic on the
    # link, noise in measurements.
    ip netns exec "${NS[i]}" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
    ip -n "${NS[i]}" link set lo up
  done
  # The pair is created inside h0 with its peer put straight into h1: it never exists in the
  # machine's own namespace.
  ip -n "${NS[0]}" link add "$DEV" type veth peer name "$DEV" netns "${NS[1]}"
  for i in 0 1; do
    ip -n "${NS[i]}" addr add "${ADDR[i]}/24" dev "$DEV"
    ip -n "${NS[i]}" link set "$DEV" up
    # Both directions shaped (each end shapes what it sends). latency bounds the queue: 20 ms of
    # traffic beyond the bucket, then drops, as a switch port would.
    tc -n "${NS[i]}" qdisc add dev "$DEV" root tbf rate "$rate" burst "$burst" latency 20ms
  done
  # Report ready only once both ends say the link is up: a test's first packets must not be lost.
  for ((i = 0; i < 50; i++)); do  # 5 s
    ip -n "${NS[0]}" link show dev "$DEV" | grep -q 'state UP' &&
      ip -n "${NS[1]}" link show dev "$DEV" | grep -q 'state UP' && break
    sleep 0.1
  done
  ((i < 50)) || { log "the veth link did not come up"; exit 1; }
  trap - EXIT
  log "up: ${NS[0]} ${ADDR[0]} <-> ${NS[1]} ${ADDR[1]}, $rate each way (tbf burst $burst bytes)"
}

status() {
  local ns found=0
  for ns in "${NS[@]}"; do
    [[ -e /run/netns/$ns ]] || { echo "$ns: not there"; continue; }
    found=1
    echo "== $ns"
    ip -n "$ns" -br addr
    tc -n "$ns" qdisc show dev "$DEV" 2>/dev/null || true
  done
  ((found)) || exit 1
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down; log "down" ;;
  status) status ;;
  *) echo "usage: $0 up [--rate 1gbit|10gbit|<tc rate>] | down | status" >&2; exit 2 ;;
esac
