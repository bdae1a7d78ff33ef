#!/usr/bin/env bash
# Seed the fuzz corpora from real captures: every frame of every pcap becomes
# one corpus file (named by its SHA-1, like libFuzzer does).
#
#   fuzz/seed.sh [PCAP_DIR...]
#
# Defaults: ../shared/captures/real (relative to the repo root) and, when it
# holds pcaps, the repo's own captures/. Writes
#   corpus/dissect_frame/   whole Ethernet frames
#   corpus/parse_cm_mad/    the bytes after Eth+IPv4+UDP+BTH+DETH (offset 62)
#                           of frames whose byte there+1 is the CM class 0x07
# corpus/ is git-ignored: never commit it (the captures are not ours to ship).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
if [ "$#" -eq 0 ]; then
    set -- "$root/../shared/captures/real"
    if compgen -G "$root/captures/*.pcap" >/dev/null; then
        set -- "$@" "$root/captures"
    fi
fi
mkdir -p "$here/corpus/dissect_frame" "$here/corpus/parse_cm_mad"
python3 - "$here/corpus" "$@" <<'PY'
import hashlib, os, struct, sys

out, dirs = sys.argv[1], sys.argv[2:]
MAD_AT = 14 + 20 + 8 + 12 + 8  # Ethernet, IPv4, UDP, BTH, DETH


def frames(path):
    """Frames of a classic pcap (either byte order, us or ns timestamps)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        print(f"skip {path}: not a classic pcap", file=sys.stderr)
        return
    (linktype,) = struct.unpack(end + "I", data[20:24])
    if linktype != 1:
        print(f"skip {path}: link type {linktype}, not Ethernet", file=sys.stderr)
        return
    at = 24
    while at + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[at : at + 16])
        at += 16
        yield data[at : at + incl]
        at += incl


def put(target, blob):
    name = hashlib.sha1(blob).hexdigest()
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(blob)


count = {"dissect_frame": 0, "parse_cm_mad": 0}
for d in dirs:
    for name in sorted(os.listdir(d)):
        if not name.endswith(".pcap"):
            continue
        for frame in frames(os.path.join(d, name)):
            put("dissect_frame", frame)
            count["dissect_frame"] += 1
            mad = frame[MAD_AT:]
            if len(mad) > 1 and mad[1] == 0x07:
                put("parse_cm_mad", mad)
                count["parse_cm_mad"] += 1
for target, n in count.items():
    print(f"{target}: {n} frames -> {len(os.listdir(os.path.join(out, target)))} files")
PY
