#!/usr/bin/env bash
# Top-speed transmit: `rocescope send` vs `tcpreplay --topspeed`, the same frames on the same veth
# pair inside a private network namespace (nothing leaves it). Needs root, iproute2, tcpreplay.
#   bench/send-vs-tcpreplay.sh [MESSAGES]   (default 200 messages of 1 MiB = 208,000 1086-byte frames)
# `send` runs twice a round: as a user runs it (an AF_XDP socket in copy mode where one opens)
# and with `--tx packet` (the AF_PACKET socket, `sendmmsg`), so that each round gives both paths.
# The receiving end's work (rx0's softirq) runs on the sending core. Moved to the other core
# with RPS (rx0's rps_cpus), it slowed both tools (rocescope 687k -> 629k pps, tcpreplay
# --preload-pcap 512k -> 450k; 3 rounds each) and left their ratio within its noise (1.34 ->
# 1.40), so the pair is left as the kernel sets it up. Measured again on an AMD EPYC machine
# through AF_XDP (208,000 frames, 3 rounds a mask): rocescope 660k pps with no RPS, 430k-600k
# with rps_cpus 1, 2 or 3; tcpreplay --preload-pcap 380k, then 240k-375k.
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-200}
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, raw sockets)" >&2; exit 2; }
command -v tcpreplay >/dev/null || { echo "tcpreplay is not installed" >&2; exit 2; }
# ROCESCOPE=BINARY measures another build (bench/binary.sh)
. bench/binary.sh
rocescope_binary release
dir=$(mktemp -d)
ns=rocescope-bench-$$
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
. bench/bulk.sh
bulk_scenario "$dir/bulk.toml" "$messages"
"$bin" -q generate "$dir/bulk.toml" -o "$dir/bulk.pcap"

ip netns add "$ns"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link add tx0 mtu 9000 type veth peer name rx0 mtu 9000
ip -n "$ns" link set tx0 up
ip -n "$ns" link set rx0 up

# Alternate the two tools, several rounds, and compare medians: one run each
# (always in the same order) is at the mercy of whatever else the machine does.
rounds=${ROUNDS:-5}
tcpreplay_pps() {
  ip netns exec "$ns" tcpreplay --topspeed "$@" -i tx0 "$dir/bulk.pcap" 2>&1 \
    | awk '/Rated:/ { for (i = 1; i <= NF; i++) if ($i == "pps") printf "%d", $(i - 1) }'
}
send_pps() {
  ip netns exec "$ns" "$bin" send "$dir/bulk.toml" --iface tx0 "$@" | grep -o '[0-9]* pps' | cut -d' ' -f1
}
# the paths taken (a fallback from AF_XDP says why), from a first run of each that is not counted
for tx in auto packet; do
  out=$(ip netns exec "$ns" "$bin" send "$dir/bulk.toml" --iface tx0 --tx "$tx")
  echo "rocescope send --tx $tx went out through: ${out#*on tx0 }"
done
ours=(); packet=(); theirs=(); preload=()
for r in $(seq "$rounds"); do
  o=$(send_pps)
  k=$(send_pps --tx packet)
  t=$(tcpreplay_pps)
  p=$(tcpreplay_pps --preload-pcap)
  echo "round $r: rocescope send $o pps (--tx packet $k), tcpreplay --topspeed $t pps, tcpreplay --topspeed --preload-pcap $p pps"
  ours+=("$o"); packet+=("$k"); theirs+=("$t"); preload+=("$p")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mo=$(median "${ours[@]}"); mk=$(median "${packet[@]}"); mt=$(median "${theirs[@]}"); mp=$(median "${preload[@]}")
echo "median over $rounds alternating rounds: rocescope send $mo pps (--tx packet $mk), tcpreplay --topspeed $mt pps, tcpreplay --topspeed --preload-pcap $mp pps"
awk -v o="$mo" -v k="$mk" -v t="$mt" -v p="$mp" 'BEGIN { printf "rocescope / tcpreplay --topspeed = %.3f, / with --preload-pcap = %.3f (issue 13 target: >= 2 with --preload-pcap); --tx packet: %.3f, %.3f\n", o / t, o / p, k / t, k / p }'
