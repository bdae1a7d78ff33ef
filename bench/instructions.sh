# Sourced by the bench scripts that count instructions (dissect-instructions.sh,
# replay-instructions.sh): `instructions COMMAND [ARGS...]` prints how many instructions
# callgrind counted over the whole command, its output discarded. Needs valgrind. POSIX sh.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
