#!/usr/bin/env bash
# Throughput of `rocescope analyze` against tshark and cat on one large capture.
#
# Generates (with `rocescope generate`) a capture of >= 2 million ~1 KiB RoCEv2 frames over
# 1,000 RC QPs (2,000 WRITE ONLY of 1024 payload bytes per QP, each answered by an ACK: 4M frames), then times in one run:
#   rocescope analyze -f json            (the whole replay and the JSON report)
#   tshark -T fields -e frame.number -e infiniband.bth.destqp -e infiniband.bth.psn
#   cat FILE > /dev/null                 (the floor: reading the bytes)
# and prints frames/s, bytes/s, the ratios and the peak RSS of each.
#
# Targets (issue 5): analyze >= 50x tshark frames/s, >= 25 % of cat's bytes/s, RSS < 100 MiB.
#
# Usage: bench/analyze-vs-tshark.sh [WORKDIR]   (default: a temp dir; QPS=, MSGS= override)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
qps=${QPS:-1000}
msgs=${MSGS:-2000}
mkdir -p "$work"
scenario=$work/bench.toml
pcap=$work/bench.pcap

command -v tshark >/dev/null || { echo "tshark not found (apt-get install tshark)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (apt-get install time)" >&2; exit 2; }

(cd "$root" && cargo build --release --quiet)
bin=${CARGO_TARGET_DIR:-$root/target}/release/rocescope

if [ ! -s "$pcap" ]; then
  {
    printf '[link]\nspeed_gbps = 100\ndelay_ns = 500\nstop_ns = 60000000000\nmax_frames = 100000000\n\n'
    printf '[capture]\npoint = "receiver"\n\n'
    printf '[[host]]\nname = "a"\nmac = "02:00:00:00:00:01"\nip = "10.0.0.1"\n\n'
    printf '[[host]]\nname = "b"\nmac = "02:00:00:00:00:02"\nip = "10.0.0.2"\n\n'
    for i in $(seq 0 $((qps - 1))); do
      printf '[[connection]]\nname = "c%d"\ntransport = "rc"\nrequester = "a"\nresponder = "b"\n' "$i"
      printf 'requester_qpn = %d\nresponder_qpn = %d\nstart_psn = %d\npmtu = 1024\nack_every = 64\nload = 0.0009\n\n' \
        $((0x1000 + i)) $((0x8000 + i)) $((i * 7919 % 16777216))
      printf '[[traffic]]\nconnection = "c%d"\nop = "write"\nsize = 1024\nmessages = %d\n\n' "$i" "$msgs"
    done
  } > "$scenario"
  echo "generating $pcap ($qps QPs x $msgs messages) ..."
  "$bin" generate "$scenario" -o "$pcap"
fi

frames=$(capinfos -c -M "$pcap" | awk -F: '/Number of packets/ {gsub(/ /, "", $2); print $2}')
bytes=$(stat -c %s "$pcap")
echo "capture: $pcap: $frames frames, $bytes bytes"

# run NAME CMD...: wall seconds and peak RSS (KiB) into $secs and $rss
run() {
  local name=$1; shift
  local log=$work/$name.time
  /usr/bin/time -v -o "$log" "$@" > /dev/null
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
}

cat "$pcap" > /dev/null # warm the page cache
run cat cat "$pcap";                                      cat_s=$secs; cat_rss=$rss
run analyze "$bin" analyze -q -f json "$pcap";            an_s=$secs;  an_rss=$rss
run tshark tshark -n -r "$pcap" -T fields -e frame.number -e infiniband.bth.destqp -e infiniband.bth.psn
ts_s=$secs; ts_rss=$rss

awk -v f="$frames" -v b="$bytes" -v a="$an_s" -v t="$ts_s" -v c="$cat_s" \
    -v ar="$an_rss" -v tr="$ts_rss" -v cr="$cat_rss" 'BEGIN {
  if (a <= 0) a = 0.001; if (t <= 0) t = 0.001; if (c <= 0) c = 0.001;
  printf "%-10s %10s %14s %14s %12s\n", "tool", "seconds", "frames/s", "MB/s", "peak RSS";
  printf "%-10s %10.2f %14.0f %14.1f %9.1f MiB\n", "analyze", a, f/a, b/a/1e6, ar/1024;
  printf "%-10s %10.2f %14.0f %14.1f %9.1f MiB\n", "tshark", t, f/t, b/t/1e6, tr/1024;
  printf "%-10s %10.2f %14.0f %14.1f %9.1f MiB\n", "cat", c, f/c, b/c/1e6, cr/1024;
  printf "analyze vs tshark: %.1fx frames/s (target >= 50x)\n", t/a;
  printf "analyze vs cat:    %.1f%% of bytes/s (target >= 25%%)\n", 100*c/a;
  printf "analyze peak RSS:  %.1f MiB (target < 100 MiB)\n", ar/1024;
}'
