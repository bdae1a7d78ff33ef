#!/usr/bin/env bash
# `analyze --tap A --tap B` on two captures of one run (about 1 M frames each: 1 KiB RC WRITEs
# and their ACKs over 16 QPs, drops, ECN marks and reordering between the taps, the second
# tap's clock 1 s ahead with 1 us of jitter) against `analyze` of one of them, in paired runs
# (bench/paired.sh): wall time, the ratio, and each one's peak RSS (issue 14: at most 2.5x one
# tap, under 100 MiB). The captures are generated once into bench/.taps/.
#   bench/taps.sh            RUNS=N (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin rocescope
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/rocescope")
dir=bench/.taps
mkdir -p "$dir"
if [ ! -s "$dir/cap.rx.pcap" ]; then
  {
    printf '[link]\nspeed_gbps = 100\nmax_frames = 100000000\n'
    printf '[capture]\npoint = "both"\nclock_offset_ns = 1000000000\njitter_ns = 1000\n'
    printf '[[host]]\nname = "a"\nmac = "02:00:00:00:00:01"\nip = "10.0.0.1"\necn = 2\n'
    printf '[[host]]\nname = "b"\nmac = "02:00:00:00:00:02"\nip = "10.0.0.2"\n'
    for i in $(seq 0 15); do
      printf '[[connection]]\nname = "c%d"\ntransport = "rc"\nrequester = "a"\nresponder = "b"\n' "$i"
      printf 'requester_qpn = %d\nresponder_qpn = %d\npmtu = 1024\nack_every = 8\n' $((4096 + i)) $((8192 + i))
      printf '[[traffic]]\nconnection = "c%d"\nop = "write"\nsize = 65536\nmessages = 900\n' "$i"
    done
    printf '[[fault]]\nkind = "drop"\nprobability = 0.0005\n'
    printf '[[fault]]\nkind = "ecn_ce"\nevery = 500\n'
    printf '[[fault]]\nkind = "reorder"\nevery = 2000\ndelay_ns = 3000\n'
  } >"$dir/both.toml"
  "$bin" -q generate "$dir/both.toml" -o "$dir/cap.pcap"
fi
ls -la "$dir"/cap.tx.pcap "$dir"/cap.rx.pcap
. bench/paired.sh
echo "A: analyze --tap tx --tap rx, B: analyze tx"
paired "${RUNS:-5}" \
  "$bin analyze -q -f json -o /dev/null --tap $dir/cap.tx.pcap --tap $dir/cap.rx.pcap" \
  "$bin analyze -q -f json -o /dev/null $dir/cap.tx.pcap"
