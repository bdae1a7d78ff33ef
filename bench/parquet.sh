#!/usr/bin/env bash
# `dissect -f parquet` against `dissect -f jsonl` on a 1 GB capture, both writing a file, in
# paired runs (bench/paired.sh): wall time, the ratio, and each one's peak RSS (issue 16: the
# Parquet writer at least as fast as JSONL, under 100 MiB). The capture (about 1.8 M frames: 1 KiB
# RC WRITEs and their ACKs over 16 QPs) is generated once into bench/.parquet/.
#   bench/parquet.sh            RUNS=N (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin rocescope
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/rocescope")
dir=bench/.parquet
mkdir -p "$dir"
cap=$dir/big.pcap
if [ ! -s "$cap" ]; then
  {
    printf '[link]\nspeed_gbps = 100\nstop_ns = 3600000000000\nmax_frames = 100000000\n'
    printf '[[host]]\nname = "a"\nmac = "02:00:00:00:00:01"\nip = "10.0.0.1"\n'
    printf '[[host]]\nname = "b"\nmac = "02:00:00:00:00:02"\nip = "10.0.0.2"\n'
    for i in $(seq 0 15); do
      printf '[[connection]]\nname = "c%d"\ntransport = "rc"\nrequester = "a"\nresponder = "b"\n' "$i"
      printf 'requester_qpn = %d\nresponder_qpn = %d\npmtu = 1024\nack_every = 1\n' $((4096 + i)) $((8192 + i))
      printf '[[traffic]]\nconnection = "c%d"\nop = "write"\nsize = 32768\nmessages = 1800\n' "$i"
    done
  } >"$dir/big.toml"
  "$bin" -q generate "$dir/big.toml" -o "$cap"
fi
echo "capture: $cap, $(stat -c %s "$cap") bytes"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. bench/paired.sh
echo "A: dissect -f parquet, B: dissect -f jsonl"
paired "${RUNS:-5}" "$bin dissect -q -f parquet -o $out/f.parquet $cap" "$bin dissect -q -f jsonl -o $out/f.jsonl $cap"
ls -la "$out"
