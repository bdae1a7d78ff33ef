#!/usr/bin/env bash
# Generation speed: `rocescope generate` of a bulk RC WRITE scenario with 1 KiB PMTU payloads
# (1086-byte frames) into /dev/null with the release binary; prints frames/s.
#   bench/generate.sh [MESSAGES]     (default 5000 messages of 1 MiB = 5,200,000 frames)
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-5000}
# ROCESCOPE=BINARY measures another build (bench/binary.sh)
. bench/binary.sh
rocescope_binary release
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. bench/bulk.sh
bulk_scenario "$dir/bulk.toml" "$messages"
start=$(date +%s.%N)
out=$("$bin" generate "$dir/bulk.toml" -o /dev/null 2>&1)
end=$(date +%s.%N)
frames=$(sed -n 's/.*wrote \([0-9]*\) frames.*/\1/p' <<<"$out")
awk -v f="$frames" -v s="$start" -v e="$end" 'BEGIN {
    t = e - s; printf "generate: %d frames in %.3f s: %.0f frames/s (%.2f M frames/s)\n", f, t, f / t, f / t / 1e6 }'
