#!/bin/sh
# Per-frame instruction counts of whole-frame dissect (callgrind), for frames the criterion
# bench (`cargo bench -p rocescope-dissectors`) times: an ACK, a 1 KiB WRITE, and the same
# WRITE mirrored through ERSPAN III; each plain and with the ICRC verified. Counts are
# (instructions for N=11000 - for N=1000) / 10000, so start-up is excluded. Stable from run
# to run, unlike timings on a shared machine. Needs valgrind.
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p rocescope-dissectors --example dissect_count
bin=${CARGO_TARGET_DIR:-target}/release/examples/dissect_count
. bench/instructions.sh
printf '%-8s %8s %8s\n' frame plain icrc
for kind in ack write erspan; do
    row=$kind
    for mode in plain icrc; do
        a=$(instructions "$bin" "$kind" 1000 "$mode")
        b=$(instructions "$bin" "$kind" 11000 "$mode")
        row="$row $(( (b - a) / 10000 ))"
    done
    printf '%-8s %8s %8s\n' $row
done
