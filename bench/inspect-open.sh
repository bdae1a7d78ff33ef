#!/usr/bin/env bash
# Measures `rocescope inspect` on a large generated capture: the time to the first screen and
# the time `G` takes to show the last frame. Needs tmux.
#   bench/inspect-open.sh [SIZE_MESSAGES]   (default 130000 16-KiB writes at PMTU 4096 ≈ 2.2 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
msgs=${1:-130000}
tmp=$(mktemp -d /tmp/inspect-bench.XXXXXX)
sock="inspect-bench-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
cargo build --release -q
bin=$PWD/target/release/rocescope
cat > "$tmp/big.toml" <<TOML
[link]
speed_gbps = 100
delay_ns = 1000
[capture]
point = "receiver"
[[host]]
name = "a"
mac = "02:00:00:00:06:01"
ip = "10.0.6.1"
[[host]]
name = "b"
mac = "02:00:00:00:06:02"
ip = "10.0.6.2"
[[connection]]
name = "c"
transport = "rc"
requester = "a"
responder = "b"
requester_qpn = 0x600
responder_qpn = 0x601
start_psn = 0
pmtu = 4096
ack_every = 8
load = 0.5
[[traffic]]
connection = "c"
op = "write"
size = 16384
messages = $msgs
[[fault]]
kind = "drop"
psn = 1000
TOML
"$bin" generate "$tmp/big.toml" -o "$tmp/big.pcap" --seed 1 -q
size=$(stat -c %s "$tmp/big.pcap")
echo "capture: $size bytes"
cat "$tmp/big.pcap" > /dev/null   # warm the page cache, as for a file just written

now() { date +%s%N; }
screen() { tmux -L "$sock" capture-pane -p -t b; }
t0=$(now)
tmux -L "$sock" new-session -d -s b -x 120 -y 40 "$bin inspect $tmp/big.pcap"
until screen | grep -q 'Frames 1/'; do sleep 0.005; done
t1=$(now)
tmux -L "$sock" send-keys -t b G
t2=$(now)
# Done when the title shows the last row selected (N/N) and indexing has finished.
until screen | grep -Eq 'Frames ([0-9]+)/\1 ' && ! screen | grep -q 'indexing'; do sleep 0.005; done
t3=$(now)
last=$(screen | grep -Eo 'Frames [0-9]+/[0-9]+' | head -1)
tmux -L "$sock" send-keys -t b q
printf 'first screen: %d ms\n' $(((t1 - t0) / 1000000))
printf 'G (last frame, %s): %d ms\n' "$last" $(((t3 - t2) / 1000000))
