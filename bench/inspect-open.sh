#!/usr/bin/env bash
# Measures `rocescope inspect` on a large capture: the time to the first screen, the time `G`
# takes to show the last frame, the inspector's peak resident memory then and once its replay is
# done, and how long a key press takes in the flow table (every flow of the capture). Needs tmux.
#   bench/inspect-open.sh [SIZE_MESSAGES]   a generated capture of SIZE_MESSAGES 16-KiB writes at
#                                           PMTU 4096 (default 130000 ≈ 2.2 GB, one QP)
#   bench/inspect-open.sh CAPTURE           that capture (bench/scale.sh passes its 2 GB of small
#                                           frames over 400,000 flows)
set -euo pipefail
cd "$(dirname "$0")/.."
given=
if [ -f "${1:-}" ]; then given=$(realpath "$1"); fi
msgs=${1:-130000}
tmp=$(mktemp -d /tmp/inspect-bench.XXXXXX)
sock="inspect-bench-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
# ROCESCOPE=BINARY measures another build (bench/binary.sh)
. bench/binary.sh
rocescope_binary release
if [ -n "$given" ]; then
  cap=$given
else
  cap=$tmp/big.pcap
cat > "$tmp/big.toml" <<TOML
[link]
speed_gbps = 100
delay_ns = 1000
[capture]
point = "receiver"
[[host]]
name = "a"
mac = "02:00:00:00:06:01"
ip = "10.0.6.1"
[[host]]
name = "b"
mac = "02:00:00:00:06:02"
ip = "10.0.6.2"
[[connection]]
name = "c"
transport = "rc"
requester = "a"
responder = "b"
requester_qpn = 0x600
responder_qpn = 0x601
start_psn = 0
pmtu = 4096
ack_every = 8
load = 0.5
[[traffic]]
connection = "c"
op = "write"
size = 16384
messages = $msgs
[[fault]]
kind = "drop"
psn = 1000
TOML
"$bin" generate "$tmp/big.toml" -o "$cap" --seed 1 -q
fi
size=$(stat -c %s "$cap")
echo "capture: $size bytes"
cat "$cap" > /dev/null   # warm the page cache, as for a file just written

now() { date +%s%N; }
screen() { tmux -L "$sock" capture-pane -p -t b; }
t0=$(now)
tmux -L "$sock" new-session -d -s b -x 120 -y 40 "exec $bin inspect $cap"
# One tmux client per look and no grep: on two cores, the polling itself takes CPU from the
# inspector it times.
until [[ $(screen) == *'Frames 1/'* ]]; do sleep 0.005; done
t1=$(now)
tmux -L "$sock" send-keys -t b G
t2=$(now)
# Done when the title shows the last row selected (N/N) and indexing has finished.
landed() {
  local s
  s=$(screen)
  [[ $s =~ Frames\ ([0-9]+)/([0-9]+)\  ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
    && [[ $s != *indexing* ]]
}
until landed; do sleep 0.005; done
t3=$(now)
last=$(screen | grep -Eo 'Frames [0-9]+/[0-9]+' | head -1)
# the pane runs the inspector itself (exec): its high-water mark of resident memory
pid=$(tmux -L "$sock" list-panes -t b -F '#{pane_pid}')
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
# and once the replay behind the PSN chart and the findings is done (the status line then
# counts flows), up to two minutes
for _ in $(seq 2400); do screen | grep -q ' flows · ' && break; sleep 0.05; done
done_hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
screen | grep -q ' flows · ' || echo "(the replay had not finished after two minutes)"
# then the flow table (every flow of the capture): how long a key press takes to move its
# selection (the highlight is seen in the pane's escapes), and the memory after it
styled() { tmux -L "$sock" capture-pane -e -p -t b; }
tmux -L "$sock" send-keys -t b 2
until [[ $(screen) == *'Flows ('[0-9]* ]]; do sleep 0.005; done
before=$(styled)
t4=$(now)
tmux -L "$sock" send-keys -t b j
until [[ $(styled) != "$before" ]]; do sleep 0.005; done
t5=$(now)
flows_hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
tmux -L "$sock" send-keys -t b q
printf 'first screen: %d ms\n' $(((t1 - t0) / 1000000))
printf 'G (last frame, %s): %d ms\n' "$last" $(((t3 - t2) / 1000000))
printf 'peak RSS: %d MiB at G, %d MiB once the replay is done\n' $((hwm / 1024)) $((done_hwm / 1024))
printf 'flow table: a key press %d ms, peak RSS then %d MiB\n' $(((t5 - t4) / 1000000)) $((flows_hwm / 1024))
