# Sourced by the bench scripts: `paired RUNS 'COMMAND A' 'COMMAND B'` runs A and B in turn
# (A B A B …, after one warm-up of each), each as a whole process under /usr/bin/time, and
# prints for each its median wall seconds and peak RSS, then the median of the pair-by-pair
# wall ratios A/B. The commands are run by sh; their output is thrown away.
#
# `paired_runs RUNS 'COMMAND A' 'COMMAND B'` makes the same runs and prints nothing: it leaves
# them in the file $paired_log (a line per pair: A's wall seconds and peak RSS in KiB, then
# B's; the caller removes it) and their figures in $paired_a and $paired_b (median wall
# seconds), $paired_rss_a and $paired_rss_b (peak RSS, KiB), $paired_ratio (the median of
# the pair-by-pair wall ratios A/B) and $paired_ratio_lo and $paired_ratio_hi (their first and
# third quartiles: the middle half of the pairs, which shows how far the machine moved them;
# 0 with fewer than 3 pairs, where quartiles say nothing).
#
# `timed FILE CMD...` times one run (below); bench/scale.sh measures with it too.
#
# Before every timed run, the capture files a command names (arguments ending in .pcap or
# .pcapng) are read whole, so that each run finds them in the page cache as issue 13's figures
# assume: on the machines these figures come from, the page cache drains while a file is not
# being read (a 1.1 GB capture went from all to a third resident in a minute, with no memory
# pressure), and a run right after tshark's 14 s found part of its capture gone.
# warm ARG...: read whole each argument that names a capture file.
warm() {
  local a
  for a in "$@"; do
    case $a in
      *.pcap | *.pcapng) [ -f "$a" ] && cat "$a" >/dev/null ;;
    esac
  done
  return 0
}

# warm_cmd 'COMMAND': `warm` the words of a command line (split as the shell would, the
# backslash escapes of `printf %q` included; nothing in it is run).
warm_cmd() {
  local words
  # shellcheck disable=SC2162 # without -r, on purpose: `a\ b` is one word
  read -a words <<<"$1"
  warm "${words[@]}"
}

paired_runs() {
  local runs=$1 a=$2 b=$3 i ta tb t
  paired_log=$(mktemp)
  t=$(mktemp)
  sh -c "$a" >/dev/null 2>&1 || true
  sh -c "$b" >/dev/null 2>&1 || true
  for i in $(seq "$runs"); do
    warm_cmd "$a"
    timed "$t" sh -c "$a" >/dev/null 2>&1 || true
    ta=$(tail -1 "$t")
    warm_cmd "$b"
    timed "$t" sh -c "$b" >/dev/null 2>&1 || true
    tb=$(tail -1 "$t")
    echo "$ta $tb" >>"$paired_log"
  done
  rm -f "$t"
  read -r paired_a paired_b paired_rss_a paired_rss_b paired_ratio paired_ratio_lo paired_ratio_hi < <(
    python3 - "$paired_log" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
ratios = [r[0] / r[2] for r in rows if r[2] > 0] or [0.0]
lo, _, hi = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) >= 3 else (0, 0, 0)
print(statistics.median([r[0] for r in rows]), statistics.median([r[2] for r in rows]),
      int(max(r[1] for r in rows)), int(max(r[3] for r in rows)), statistics.median(ratios), lo, hi)
PY
  )
}

paired() {
  paired_runs "$@"
  python3 - "$paired_log" "$2" "$3" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = lambda xs: statistics.median(xs)
for name, cmd, w, m in (("A", sys.argv[2], 0, 1), ("B", sys.argv[3], 2, 3)):
    print(f"{name}: wall median {med([r[w] for r in rows]):.3f} s "
          f"(min {min(r[w] for r in rows):.3f}, max {max(r[w] for r in rows):.3f}), "
          f"peak RSS {max(r[m] for r in rows) / 1024:.1f} MiB   {cmd}")
ratios = [r[0] / r[2] for r in rows if r[2] > 0]
print(f"wall A/B: median {med(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}) over {len(rows)} pairs")
PY
  rm -f "$paired_log"
}

# timed FILE CMD...: runs CMD under /usr/bin/time for its peak RSS and writes "WALL RSS" to
# FILE: WALL in seconds from bash's microsecond clock (time's own %e counts in steps of 10 ms,
# a fifth of cat's run over a 424 MB file), RSS in KiB. Returns CMD's status.
timed() {
  local file=$1 t0 t1 rc=0
  shift
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$file.rss" -f '%M' "$@" || rc=$?
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", b-a}') $(tail -1 "$file.rss")" >"$file"
  rm -f "$file.rss"
  return "$rc"
}
