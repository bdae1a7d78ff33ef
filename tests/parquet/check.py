"""Reads rocescope's Parquet outputs with DuckDB and checks them against the JSON of the same run.

    python3 check.py ROCESCOPE WORKDIR CAPTURE...
    python3 check.py --each ROCESCOPE WORKDIR CAPTURE...

For each capture:
- `dissect -f parquet` against `dissect -f jsonl`: one row per JSON line, every column equal to
  the JSON key it flattens (interfaces.md §10: top-level objects flattened with `_`, lists kept,
  an empty object as true, an absent layer as null), and no JSON key without its column;
  `marks` against `dissect -Y MARK` for each analysis mark; `file` the capture; `time` the
  same instant as `time_ns`; the file's metadata naming the schema.
- `analyze -f parquet` against `analyze -f json`: each table's rows equal the report's.
With --each: `analyze --each -f parquet -o DIR` writes one Hive partition per capture, and
interfaces.md §10's query over `DIR/*/flows.parquet` gives, per capture, the flows with `lost`
> 0 that `analyze -f json` of that capture alone reports.
Prints one line per capture and `N passed, M failed` at the end; exits 1 on any difference.
"""

import json
import subprocess
import sys
from pathlib import Path

import duckdb

MARKS = ["loss", "ooo", "dup", "retrans", "not_captured", "conformance"]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True).stdout


def flatten(obj):
    """A JSONL frame as the Parquet row it should be: top-level objects flattened with `_`."""
    row = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            if not value:
                row[key] = True  # "cnp": {}
                continue
            for sub, x in flatten(value).items():
                row[f"{key}_{sub}"] = x
        else:
            row[key] = value
    return row


def same(expected, got):
    """JSON value against a DuckDB value: structs may carry extra members that are null."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return False
        for k, v in expected.items():
            if k not in got or not same(v, got[k]):
                return False
        return all(v is None for k, v in got.items() if k not in expected)
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(expected) == len(got)
            and all(same(a, b) for a, b in zip(expected, got))
        )
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    return expected == got


def rows(con, path, exclude=()):
    rel = con.sql(f"SELECT * FROM read_parquet('{path}')")
    cols = [c for c in rel.columns if c not in exclude]
    return cols, [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def compare_table(name, expected_rows, cols, got_rows, problems):
    if len(expected_rows) != len(got_rows):
        problems.append(f"{name}: {len(expected_rows)} JSON rows, {len(got_rows)} Parquet rows")
        return
    for i, (exp, got) in enumerate(zip(expected_rows, got_rows)):
        for key in exp:
            if key not in cols:
                problems.append(f"{name} row {i + 1}: JSON key {key} has no column")
                return
        for col in cols:
            e = exp.get(col)
            if not same(e, got[col]):
                problems.append(f"{name} row {i + 1}: {col}: JSON {e!r}, Parquet {got[col]!r}")
                return


def check_dissect(bin_, work, capture, con, problems):
    out = work / "frames.parquet"
    run(bin_, "dissect", "-q", "-f", "parquet", "-o", str(out), str(capture))
    lines = run(bin_, "dissect", "-q", "-f", "jsonl", str(capture)).decode().splitlines()
    expected = [flatten(json.loads(l)) for l in lines]
    extra = ("time", "file", "marks")
    cols, got = rows(con, out, exclude=extra)
    compare_table("frames", expected, cols, got, problems)
    # time: the same instant as time_ns; file: the capture as named
    for r in con.sql(
        f"SELECT frame, epoch_ns(time) = time_ns, file FROM read_parquet('{out}')"
    ).fetchall():
        if not r[1] or r[2] != str(capture):
            problems.append(f"frames frame {r[0]}: time or file wrong ({r[2]!r})")
            break
    # marks: the frames each bare word selects, as `dissect -Y` selects them
    for mark in MARKS:
        want = run(bin_, "dissect", "-q", "-Y", mark, "-T", "fields", "-e", "frame.number", str(capture))
        want = [int(x) for x in want.split()]
        have = [
            r[0]
            for r in con.sql(
                f"SELECT frame FROM read_parquet('{out}') WHERE list_contains(marks, '{mark}') ORDER BY frame"
            ).fetchall()
        ]
        if want != have:
            problems.append(f"marks {mark}: dissect -Y gives {want[:10]}, Parquet {have[:10]}")
    meta = dict(
        (k.decode(), v.decode())
        for k, v in con.sql(f"SELECT key, value FROM parquet_kv_metadata('{out}')").fetchall()
    )
    if meta.get("rocescope.schema") != "frames/1" or "rocescope.version" not in meta:
        problems.append(f"frames metadata: {meta.get('rocescope.schema')!r}")
    return len(expected)


def check_analyze(bin_, work, capture, con, problems):
    out = work / "report"
    run(bin_, "analyze", "-q", "-f", "parquet", "-o", str(out), str(capture))
    report = json.loads(run(bin_, "analyze", "-q", "-f", "json", str(capture)))
    capture_row = dict(report["capture"], version=report["version"])
    for table, expected in [
        ("capture", [capture_row]),
        ("flows", report["flows"]),
        ("pfc", report["pfc"]),
        ("tcp_bth", report["tcp_bth"]),
        ("events", report["events"]),
    ]:
        cols, got = rows(con, out / f"{table}.parquet")
        compare_table(table, expected, cols, got, problems)
    groups = con.sql(
        f"SELECT count(DISTINCT row_group_id) FROM parquet_metadata('{out / 'flows.parquet'}')"
    ).fetchall()[0][0]
    return len(report["flows"]), groups


def check_each(bin_, work, captures, con):
    out = work / "fleet"
    run(bin_, "analyze", "-q", "--each", "-f", "parquet", "-o", str(out), *map(str, captures))
    got = sorted(
        con.sql(
            f"SELECT capture, src, dst, destqp, lost FROM read_parquet('{out}/*/flows.parquet', "
            "hive_partitioning = true) WHERE lost > 0"
        ).fetchall()
    )
    want = []
    for capture in captures:
        report = json.loads(run(bin_, "analyze", "-q", "-f", "json", str(capture)))
        want += [
            (capture.name, f["src"], f["dst"], f["destqp"], f["lost"])
            for f in report["flows"]
            if f["lost"] > 0
        ]
    want.sort()
    partitions = sorted(p.name for p in out.iterdir())
    expected = sorted(f"capture={c.name}" for c in captures)
    ok = got == want and partitions == expected
    print(f"{'ok  ' if ok else 'FAIL'} --each: {len(partitions)} partitions, {len(got)} lossy flows")
    if not ok:
        print(f"  partitions {partitions[:5]}; want {want[:5]}; got {got[:5]}")
    print(f"{int(ok)} passed, {int(not ok)} failed")
    sys.exit(0 if ok else 1)


def main():
    con = duckdb.connect()
    if sys.argv[1] == "--each":
        check_each(sys.argv[2], Path(sys.argv[3]), [Path(c) for c in sys.argv[4:]], con)
    bin_, work = sys.argv[1], Path(sys.argv[2])
    passed = failed = 0
    for capture in map(Path, sys.argv[3:]):
        problems = []
        frames = check_dissect(bin_, work, capture, con, problems)
        flows, groups = check_analyze(bin_, work, capture, con, problems)
        if problems:
            failed += 1
            print(f"FAIL {capture}: " + "; ".join(problems[:5]))
        else:
            passed += 1
            print(f"ok   {capture}: {frames} frames, {flows} flows in {groups} row groups")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
