#!/usr/bin/env bash
# `analyze --each` over 20 captures against analyzing them one after another (a process per
# capture, as a shell loop would), in paired runs (bench/paired.sh; RUNS=5 by default). The
# captures are generated once into bench/.each/ (20 × 65 MiB of RC WRITEs with drops and
# go-back-N, each with its own seed). FORMAT=parquet times `--each -f parquet -o DIR` against
# the loop writing each capture's tables.
#   bench/each.sh [CAPTURES]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
cargo build --release --quiet --bin rocescope
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/rocescope")
dir=bench/.each
mkdir -p "$dir"
cat >"$dir/lossy.toml" <<'TOML'
[link]
speed_gbps = 100
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
messages = 60
[[fault]]
kind = "drop"
psn = 1000
[[fault]]
kind = "drop"
psn = 5000
TOML
for i in $(seq 1 "$n"); do
  f=$(printf '%s/cap%02d.pcap' "$dir" "$i")
  [ -e "$f" ] || "$bin" -q generate "$dir/lossy.toml" -o "$f" --seed "$i"
done
caps=$(ls "$dir"/cap*.pcap | head -n "$n" | tr '\n' ' ')
. bench/paired.sh
if [ "${FORMAT:-json}" = parquet ]; then
  out=$(mktemp -d)
  loop="for f in $caps; do $bin analyze -q -f parquet -o $out/loop/capture=\$(basename \$f) \$f || exit 1; done"
  each="$bin analyze -q --each -f parquet -o $out/each $caps"
  echo "A: one after another, B: --each (-f parquet)"
  paired "${RUNS:-5}" "$loop" "$each"
  rm -rf "$out"
else
  loop="for f in $caps; do $bin analyze -f json \$f >/dev/null || exit 1; done"
  each="$bin analyze --each -f json $caps"
  echo "A: one after another, B: --each (-f json)"
  paired "${RUNS:-5}" "$loop" "$each"
fi
