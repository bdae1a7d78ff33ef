#!/usr/bin/env bash
# Instructions a frame of one rocescope command over a capture (callgrind), for changes too
# small to see in wall time: on the 2-core machines here the same run's CPU time varies by a
# tenth and more from run to run (a compute-only sha256sum's by a third between its fastest
# and slowest), while this count does not. The command runs pinned to one core, where the
# frame driver reads in place instead of on a second thread, so the count is the same every
# run (with the reading thread, how much it dissects depends on timing).
#
#   bench/replay-instructions.sh CAPTURE [COMMAND ARGS...]    # default: analyze -f json
#   ROCESCOPE=BINARY bench/replay-instructions.sh …           # another build (bench/binary.sh)
#
# The reading thread's share (what it prepares for the engine) only runs on two threads:
# `analyze -f json --split reader` reads on a second thread that dissects every frame, so
# that count repeats too (the default split depends on timing).
#
# Prints the total and the total divided by the capture's frames (start-up included: about a
# million instructions, next to billions for the scale captures). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/binary.sh
. bench/instructions.sh
rocescope_binary dist
capture=$1
shift
[ $# -gt 0 ] || set -- analyze -f json
frames=$("$bin" -q analyze -f json "$capture" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["capture"]["frames"])')
# the subshell pins itself, and so the command, to the first core
total=$(taskset -cp 0 "$BASHPID" >/dev/null && instructions "$bin" -q "$@" "$capture")
echo "$* $capture: $total instructions, $frames frames, $((total / frames)) a frame"
