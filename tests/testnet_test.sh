#!/usr/bin/env bash
# Checks scripts/testnet.sh: the two namespace hosts reach each other, and a TCP transfer between
# them runs at the shaped rate (1gbit: 0.5-1.1 Gbit/s measured). Exit 77 (ctest: skipped) where
# namespaces cannot be made. OSPREY_TESTNET_RATE / OSPREY_TESTNET_MB measure other rates and sizes
# (the rate is then only reported, not checked).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testnet=$here/../scripts/testnet.sh
rate=${OSPREY_TESTNET_RATE:-1gbit}
mbytes=${OSPREY_TESTNET_MB:-50}
port=5201

command -v ping >/dev/null || { echo "testnet_test: skipped: ping is not installed (Debian: iputils-ping)" >&2; exit 77; }

trap '"$testnet" down' EXIT
up_rc=0
"$testnet" up --rate "$rate" || up_rc=$?
((up_rc == 0)) || { trap - EXIT; exit "$up_rc"; }  # 77: no namespaces here, nothing to take down

ip netns exec osprey-h0 ping -c 2 -i 0.2 -W 2 -q 10.213.0.2

# Receiver in h0: times from the first byte to the sender's EOF (connection setup and the
# client's start-up are no part of the link's rate), then prints Gbit/s.
receiver='
import socket, sys, time
n_expected = int(sys.argv[1])
srv = socket.create_server(("10.213.0.1", int(sys.argv[2])))
srv.settimeout(20)
conn, _ = srv.accept()
conn.settimeout(20)
buf = bytearray(1 << 20)
got = conn.recv_into(buf)
t0 = time.perf_counter()
first = got
while True:
    k = conn.recv_into(buf)
    if k == 0:
        break
    got += k
dt = time.perf_counter() - t0
if got != n_expected:
    sys.exit(f"received {got} bytes, expected {n_expected}")
print(f"{(got - first) * 8 / dt / 1e9:.3f} Gbit/s ({got / 1e6:.0f} MB in {dt:.3f} s)")
'
sender='
import socket, sys, time
n, port = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 10
while True:  # the receiver may not be listening yet
    try:
        s = socket.create_connection(("10.213.0.1", port), timeout=20)
        break
    except (ConnectionRefusedError, socket.timeout):
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
chunk = bytes(1 << 20)
while n > 0:
    k = min(n, len(chunk))
    s.sendall(chunk[:k])
    n -= k
s.close()
'
nbytes=$((mbytes * 1000 * 1000))
out=$(mktemp)
trap 'rm -f "$out"; "$testnet" down' EXIT
# timeout: a link that stalls must fail the test, not hang it (50 MB at 1gbit takes 0.4 s).
timeout 60 ip netns exec osprey-h0 python3 -c "$receiver" "$nbytes" "$port" >"$out" &
recv_pid=$!
timeout 60 ip netns exec osprey-h1 python3 -c "$sender" "$nbytes" "$port"
wait "$recv_pid"
result=$(<"$out")
echo "testnet_test: h1 -> h0 at $rate: $result"

[[ $rate == 1gbit ]] || exit 0
gbits=${result%% *}
if ! awk -v r="$gbits" 'BEGIN { exit !(r >= 0.5 && r <= 1.1) }'; then
  echo "testnet_test: FAIL: $gbits Gbit/s is outside 0.5-1.1 for a 1gbit link" >&2
  exit 1
fi
echo "testnet_test: ok"
