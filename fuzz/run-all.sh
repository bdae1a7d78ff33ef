#!/usr/bin/env bash
# Run every fuzz target for its share of SECONDS, seeding the corpora first, and print a
# summary table (target, runs, corpus size, crashes) at the end.
#
#   fuzz/run-all.sh SECONDS            # e.g. 8400: 14 targets x 10 minutes
#   JOBS=2 fuzz/run-all.sh SECONDS     # two targets at a time (SECONDS is still the CPU budget)
#   SANITIZER=address fuzz/run-all.sh SECONDS
#   TARGETS="filter_text replay_packets" fuzz/run-all.sh 1200    # only these
#
# Seeds: ../shared/captures/real/ and captures/ (frames for the frame targets, whole or cut
# captures for the capture targets), generator/scenarios/ (the scenario target), the display
# filters of the test suite's examples (the filter target). Corpora and artifacts are
# git-ignored (the real captures are not ours to ship).
#
# The sanitizer is off by default: the targets hold no unsafe code, and without AddressSanitizer
# libFuzzer runs about five times more inputs in the same time (fuzz/README.md). A crash is
# saved under artifacts/TARGET/ and counted; it becomes a regression test before it is fixed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
total="${1:?usage: fuzz/run-all.sh SECONDS}"
jobs="${JOBS:-1}"
sanitizer="${SANITIZER:-none}"
cd "$here"

targets=${TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^rocescope')}
n=$(echo $targets | wc -w)
share=$((total / n))
[ "$share" -ge 1 ] || { echo "run-all: $total s is less than a second per target" >&2; exit 2; }

# --- seeds -------------------------------------------------------------------------------
real="$root/../shared/captures/real"
dirs=("$root/captures")
[ -d "$real" ] && dirs+=("$real")
./seed.sh "${dirs[@]}" >/dev/null
python3 - "$here/corpus" "$root/generator/scenarios" "${dirs[@]}" <<'PY'
import hashlib, os, struct, sys

out, scenarios, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
CUT = 16 << 10  # a capture's first bytes: records are cut there, as a truncated file
# parquet_rows' link selectors (its LINKS table) by pcap link type
LINKS = {1: 0, 113: 1, 276: 2, 0: 3, 108: 4, 101: 5, 12: 6, 14: 7, 228: 8, 229: 9, 197: 10, 247: 11, 242: 12}


def rows_seed(data):
    """A pcap's first frames as parquet_rows records: [link][flags][len/4][bytes]."""
    if len(data) < 24 or data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        return None
    link = LINKS.get(struct.unpack("<I", data[20:24])[0] & 0xFFFF, 0)
    at, records = 24, []
    while at + 16 <= len(data) and len(records) < 24:
        incl = struct.unpack("<I", data[at + 8 : at + 12])[0]
        frame = data[at + 16 : at + 16 + incl][: 1020 // 4 * 4]
        at += 16 + incl
        k = len(frame) // 4 * 4
        n = len(records)
        records.append(bytes([link | (0x80 if n % 7 == 6 else 0), 0x20 | n % 31, k // 4]) + frame[:k])
    return b"".join(records)


def put(target, blob):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, hashlib.sha1(blob).hexdigest()), "wb") as f:
        f.write(blob)


for d in dirs:
    for name in sorted(os.listdir(d)):
        if not name.endswith((".pcap", ".pcapng")):
            continue
        with open(os.path.join(d, name), "rb") as f:
            data = f.read(CUT)
        for target in ("capture_bytes", "replay_captures", "index_split"):
            put(target, data)
        seed = rows_seed(data)
        if seed:
            put("parquet_rows", seed)
for name in sorted(os.listdir(scenarios)):
    if name.endswith(".toml"):
        with open(os.path.join(scenarios, name), "rb") as f:
            put("scenario_toml", f.read())
for text in [
    "roce && bth.psn > 10",
    "infiniband.bth.opcode == RC_ACKNOWLEDGE || nak",
    "ip.src == 10.0.0.0/8 and not (udp.dstport in {4791 4792})",
    "vlan.pcp == 3 && pfc",
    "icrc.valid == false",
    "qp == 0x11 && psn >= 0xfffff0",
    'aeth.kind == "rnr_nak"',
    "erspan.spanid == 7 || vxlan.vni == 100 || mpls.label",
    "loss || retrans",
    "!malformed && frame.len > 1000",
]:
    put("filter_text", text.encode())
PY

# --- runs --------------------------------------------------------------------------------
# Built once, then run straight from the binaries: edits to the sources during a long run
# do not rebuild (or break) the targets still to come.
cargo +nightly fuzz build -s "$sanitizer" >/dev/null 2>&1 || cargo +nightly fuzz build -s "$sanitizer"
bins="$here/target/$(rustc -vV | sed -n 's/^host: //p')/release"
logs="$here/target/run-all"
mkdir -p "$logs"

run_one() {
    local t="$1"
    mkdir -p "corpus/$t" "artifacts/$t"
    ls "artifacts/$t" | sort >"$logs/$t.before"
    local max_len=4096
    case "$t" in capture_bytes | replay_captures | index_split | scenario_toml) max_len=65536 ;; esac
    # -fork keeps going past a crash (each one still saved) instead of stopping the share
    "$bins/$t" "corpus/$t" -artifact_prefix="artifacts/$t/" \
        -max_total_time="$share" -max_len="$max_len" -print_final_stats=1 \
        -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        >"$logs/$t.log" 2>&1 || true
}

echo "run-all: $n targets x ${share} s, $jobs at a time, sanitizer $sanitizer"
running=0
for t in $targets; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

# --- summary -----------------------------------------------------------------------------
set +e # a missing log or count prints "?" rather than ending the table
printf '\n| %-18s | %12s | %8s | %7s |\n' target runs corpus crashes
printf '|%s|%s|%s|%s|\n' -------------------- -------------- ---------- ---------
failed=0
for t in $targets; do
    # -fork prints its running total as "#N ... exec/s"; the last such line is the total
    runs=$(grep -Eo '^#[0-9]+' "$logs/$t.log" 2>/dev/null | tail -1 | tr -d '#')
    corpus=$(find "corpus/$t" -type f | wc -l)
    crashes=$(comm -13 "$logs/$t.before" <(ls "artifacts/$t" | sort) | grep -cE '^(crash|timeout|oom|leak)-')
    [ "${crashes:-0}" -eq 0 ] || failed=1
    printf '| %-18s | %12s | %8s | %7s |\n' "$t" "${runs:-?}" "$corpus" "$crashes"
done
echo
echo "logs: $logs/TARGET.log; crashes: artifacts/TARGET/"
exit "$failed"
