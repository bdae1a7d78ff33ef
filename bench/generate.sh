#!/usr/bin/env bash
# Generation speed: `rocescope generate` of a bulk RC WRITE scenario with 1 KiB PMTU payloads
# (1086-byte frames) into /dev/null with the release binary; prints frames/s.
#   bench/generate.sh [MESSAGES]     (default 5000 messages of 1 MiB = 5,200,000 frames)
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-5000}
cargo build --release --quiet --bin rocescope
bin=${CARGO_TARGET_DIR:-target}/release/rocescope
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/bulk.toml" <<TOML
[link]
speed_gbps = 400
stop_ns = 3600000000000
max_frames = 100000000
[[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
[[connection]]
name = "c"
transport = "rc"
requester = "a"
responder = "b"
requester_qpn = 17
responder_qpn = 18
pmtu = 1024
[[traffic]]
connection = "c"
op = "write"
size = 1048576
messages = $messages
TOML
start=$(date +%s.%N)
out=$("$bin" generate "$dir/bulk.toml" -o /dev/null 2>&1)
end=$(date +%s.%N)
frames=$(sed -n 's/.*wrote \([0-9]*\) frames.*/\1/p' <<<"$out")
awk -v f="$frames" -v s="$start" -v e="$end" 'BEGIN {
    t = e - s; printf "generate: %d frames in %.3f s: %.0f frames/s (%.2f M frames/s)\n", f, t, f / t, f / t / 1e6 }'
