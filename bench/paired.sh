# Sourced by the bench scripts: `paired RUNS 'COMMAND A' 'COMMAND B'` runs A and B in turn
# (A B A B …, after one warm-up of each), each as a whole process under /usr/bin/time, and
# prints for each its median wall seconds and peak RSS, then the median of the pair-by-pair
# wall ratios A/B. The commands are run by sh; their output is thrown away.
paired() {
  local runs=$1 a=$2 b=$3 i ta tb
  local log t
  log=$(mktemp)
  t=$(mktemp)
  sh -c "$a" >/dev/null 2>&1 || true
  sh -c "$b" >/dev/null 2>&1 || true
  for i in $(seq "$runs"); do
    /usr/bin/time -o "$t" -f '%e %M' sh -c "$a" >/dev/null 2>&1 || true
    ta=$(tail -1 "$t")
    /usr/bin/time -o "$t" -f '%e %M' sh -c "$b" >/dev/null 2>&1 || true
    tb=$(tail -1 "$t")
    echo "$ta $tb" >>"$log"
  done
  python3 - "$log" "$a" "$b" <<'PY'
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
  rm -f "$log" "$t"
}
