#!/usr/bin/env bash
# Live capture at `rocescope send`'s full rate: `rocescope capture` on one end of a veth pair
# (two private network namespaces, nothing leaves them), `send` of bulk RDMA WRITEs on the
# other. Prints the rate achieved, the frames captured and the drops: the socket's own (the
# kernel's PACKET_STATISTICS, what capture reports) and the receive backlog's before any socket
# sees a frame (/proc/net/softnet_stat). Checks that sent = captured + socket drops + backlog
# drops, i.e. that capture reports exactly what the kernel counted. Needs root and iproute2.
#   bench/live-capture.sh [MESSAGES]   (default 300 messages of 1 MiB = 312,000 1086-byte frames)
#   BACKEND=libpcap (a build with --features libpcap), ROUNDS=N (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-300}
backend=${BACKEND:-packet}
rounds=${ROUNDS:-3}
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, raw sockets)" >&2; exit 2; }
features=()
[ "$backend" = libpcap ] && features=(--features libpcap)
cargo build --release --quiet --bin rocescope "${features[@]}"
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/rocescope")
dir=$(mktemp -d)
tx=rocescope-live-tx-$$
rx=rocescope-live-rx-$$
cleanup() { ip netns del "$tx" 2>/dev/null || true; ip netns del "$rx" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
. bench/bulk.sh
bulk_scenario "$dir/bulk.toml" "$messages"
ip netns add "$tx"
ip netns add "$rx"
for ns in "$tx" "$rx"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip link add tx0 netns "$tx" mtu 9000 type veth peer name rx0 netns "$rx" mtu 9000
ip -n "$tx" link set tx0 up
ip -n "$rx" link set rx0 up

# column 2 of /proc/net/softnet_stat, summed over the CPUs: frames the backlog dropped
backlog_drops() { local s=0 d; while read -r _ d _; do s=$((s + 16#$d)); done </proc/net/softnet_stat; echo "$s"; }
for r in $(seq "$rounds"); do
  out=$dir/cap-$r.pcapng
  ip netns exec "$rx" "$bin" capture -i rx0 --backend "$backend" -w "$out" 2>"$dir/cap-$r.err" &
  pid=$!
  until grep -q "capturing on" "$dir/cap-$r.err" 2>/dev/null; do sleep 0.05; done
  b0=$(backlog_drops)
  sent=$(ip netns exec "$tx" "$bin" send "$dir/bulk.toml" --iface tx0)
  sleep 0.5
  b1=$(backlog_drops)
  kill -INT "$pid"; wait "$pid"
  line=$(tail -1 "$dir/cap-$r.err")
  n_sent=$(echo "$sent" | awk '{ print $2 }')
  pps=$(echo "$sent" | grep -o '[0-9]* pps' | cut -d' ' -f1)
  gbps=$(echo "$sent" | grep -o '[0-9.]* Gbit/s' | cut -d' ' -f1)
  captured=$(echo "$line" | grep -o '[0-9]* frames captured' | cut -d' ' -f1)
  drops=$(echo "$line" | grep -o '[0-9]* dropped by the kernel' | cut -d' ' -f1)
  in_file=$("$bin" dissect -q "$out" -f csv | tail -n +2 | wc -l)
  backlog=$((b1 - b0))
  verdict=ok
  [ $((captured + drops + backlog)) -eq "$n_sent" ] || verdict="MISMATCH"
  [ "$in_file" -eq "$captured" ] || verdict="$verdict, file holds $in_file"
  echo "round $r ($backend): sent $n_sent frames at $pps pps ($gbps Gbit/s); captured $captured, socket drops $drops, backlog drops $backlog: sent = captured + drops: $verdict"
done
