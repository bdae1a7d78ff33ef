#!/usr/bin/env bash
# rocescope dissect vs tshark on a capture of >= 1 million frames.
#
# The capture: until `rocescope generate` can write one, the real capture
# ../shared/captures/real/mlx-rocev2-32qp.pcap (708 RoCEv2 frames: RC SEND FIRST/MIDDLE/LAST and
# coalesced ACKs, ~830 bytes per frame on average) is concatenated with `mergecap -a` until it
# holds at least FRAMES frames (default 1,000,000). It is written once to $BENCH_DIR (default
# target/bench) and reused.
#
# Timed, one after the other, output to /dev/null:
#   tshark -r F -T fields -e frame.number -e infiniband.bth.psn
#   rocescope dissect -f jsonl F
#   rocescope dissect -f text F
# Printed: wall time, frames/s, the ratio to tshark, and peak RSS (/usr/bin/time -v when
# installed, else the kernel's VmHWM read by a polling loop).
# Targets: jsonl >= 30x tshark -T fields; peak RSS < 64 MiB.
#
# Usage: bench/dissect-vs-tshark.sh [FRAMES]   (builds rocescope in release mode first)
set -euo pipefail
cd "$(dirname "$0")/.."

FRAMES=${1:-1000000}
SRC=${SRC:-../shared/captures/real/mlx-rocev2-32qp.pcap}
BENCH_DIR=${BENCH_DIR:-target/bench}
CAP="$BENCH_DIR/bench-${FRAMES}.pcap"

for tool in tshark mergecap capinfos; do
  command -v "$tool" >/dev/null || { echo "bench: $tool not installed (apt-get install tshark)"; exit 2; }
done
[ -f "$SRC" ] || { echo "bench: $SRC not found"; exit 2; }

cargo build --release --quiet --bin rocescope
ROCESCOPE=${CARGO_TARGET_DIR:-target}/release/rocescope

mkdir -p "$BENCH_DIR"
if [ ! -f "$CAP" ]; then
  per=$(capinfos -M -c -T "$SRC" | awk -F'\t' 'NR==2{print $2}')
  # 32 copies into one chunk, then enough chunks to reach FRAMES
  chunk="$BENCH_DIR/chunk32.pcap"
  args=(); for _ in $(seq 32); do args+=("$SRC"); done
  mergecap -F pcap -a -w "$chunk" "${args[@]}"
  n=$(( (FRAMES + per * 32 - 1) / (per * 32) ))
  args=(); for _ in $(seq "$n"); do args+=("$chunk"); done
  mergecap -F pcap -a -w "$CAP" "${args[@]}"
  rm -f "$chunk"
fi
frames=$(capinfos -M -c -T "$CAP" | awk -F'\t' 'NR==2{print $2}')
bytes=$(stat -c %s "$CAP")
echo "capture: $CAP, $frames frames, $bytes bytes"
cat "$CAP" >/dev/null # warm the page cache

# measure CMD...: prints "wall_seconds cpu_seconds peak_rss_kib" (cpu = user + system; on a
# loaded machine it is the steadier figure, so ratios are printed for both)
measure() {
  local out="$BENCH_DIR/time.$$"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v -o "$out" "$@" >/dev/null 2>"$BENCH_DIR/stderr.$$"
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$out")
    rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$out")
    cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{print s}' "$out")
    # h:mm:ss or m:ss.cc -> seconds
    secs=$(echo "$wall" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    rm -f "$out"
    echo "$secs $cpu $rss"
  else
    local start end pid peak=0 hwm
    start=$(date +%s.%N)
    "$@" >/dev/null 2>"$BENCH_DIR/stderr.$$" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
      [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
      sleep 0.05
    done
    wait "$pid"
    end=$(date +%s.%N)
    local w; w=$(echo "$end - $start" | bc)
    echo "$w $w $peak"
  fi
  rm -f "$BENCH_DIR/stderr.$$"
}

read -r t_tshark c_tshark rss_tshark < <(measure tshark -r "$CAP" -T fields -e frame.number -e infiniband.bth.psn)
read -r t_jsonl c_jsonl rss_jsonl < <(measure "$ROCESCOPE" dissect -f jsonl "$CAP")
read -r t_text c_text rss_text < <(measure "$ROCESCOPE" dissect -f text "$CAP")

report() { # name wall cpu rss_kib
  awk -v n="$1" -v t="$2" -v c="$3" -v r="$4" -v f="$frames" -v bt="$t_tshark" -v bc="$c_tshark" \
    'BEGIN { printf "%-31s wall %6.2f s %9.0f frames/s %6.1fx | cpu %6.2f s %9.0f frames/s %6.1fx | peak RSS %6.1f MiB\n", n, t, f/t, bt/t, c, f/c, bc/c, r/1024 }'
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
report "tshark -T fields (frame, psn)" "$t_tshark" "$c_tshark" "$rss_tshark"
report "rocescope dissect -f jsonl" "$t_jsonl" "$c_jsonl" "$rss_jsonl"
report "rocescope dissect -f text" "$t_text" "$c_text" "$rss_text"
echo
awk -v a="$t_tshark" -v b="$t_jsonl" -v ca="$c_tshark" -v cb="$c_jsonl" -v r="$rss_jsonl" 'BEGIN {
  printf "target jsonl >= 30x tshark: wall %s (%.1fx), cpu %s (%.1fx)\n", (a/b >= 30 ? "met" : "NOT met"), a/b, (ca/cb >= 30 ? "met" : "NOT met"), ca/cb
  printf "target peak RSS < 64 MiB:   %s (%.1f MiB)\n", (r/1024 < 64 ? "met" : "NOT met"), r/1024 }'
