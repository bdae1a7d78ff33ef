//! Parquet outputs (interfaces.md §10) read back with DuckDB, an engine nobody here wrote:
//! `dissect -f parquet` and `analyze -f parquet` of every demo and real capture equal the
//! JSONL/JSON of the same run (tests/parquet/check.py), and `analyze --each -f parquet`'s Hive
//! partitions answer the spec's query. Skipped with a notice where Python's duckdb package is
//! missing (`.ci/run` installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn pcaps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut all: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    all.sort();
    all
}

fn duckdb_present() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("notice: python3 with the duckdb package not found; Parquet read-back skipped");
    }
    ok
}

fn check(args: &[&str], captures: &[PathBuf]) -> String {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(root().join("tests/parquet/check.py"))
        .args(args)
        .arg(BIN)
        .arg(work.path())
        .args(captures)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn every_capture_reads_back_equal_to_its_json() {
    if !duckdb_present() {
        return;
    }
    let mut captures = pcaps(&root().join("captures"));
    let demo = captures.len();
    assert!(demo >= 20);
    let real = pcaps(&root().join("../shared/captures/real"));
    if real.is_empty() {
        eprintln!("notice: ../shared/captures/real/ not found; demo captures only");
    }
    captures.extend(real);
    let out = check(&[], &captures);
    let ok = out.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(ok, captures.len(), "{out}");
    assert!(
        out.contains(&format!("{} passed, 0 failed", captures.len())),
        "{out}"
    );
}

#[test]
fn each_writes_hive_partitions_that_one_query_spans() {
    if !duckdb_present() {
        return;
    }
    let captures = pcaps(&root().join("captures"));
    let out = check(&["--each"], &captures);
    assert!(
        out.contains(&format!("{} partitions", captures.len())),
        "{out}"
    );
    assert!(out.contains("1 passed, 0 failed"), "{out}");
    // the demo set has lossy flows (loss_gbn, mixed, …): the query finds them
    assert!(!out.contains(" 0 lossy flows"), "{out}");
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn parquet_needs_a_destination_and_leaves_nothing_on_error() {
    let out = Command::new(BIN)
        .args(["dissect", "-f", "parquet"])
        .arg(root().join("captures/mixed.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-o FILE"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let out = Command::new(BIN)
        .args(["analyze", "-f", "parquet"])
        .arg(root().join("captures/mixed.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o DIR"));

    // a capture that cannot be read: no file under the name, no temporary file left
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pcap");
    std::fs::write(&bad, b"not a capture at all").unwrap();
    let dest = dir.path().join("frames.parquet");
    let out = Command::new(BIN)
        .args(["dissect", "-f", "parquet", "-o"])
        .arg(&dest)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(names_in(dir.path()), ["bad.pcap"]);

    // a capture cut inside a record, after many frames: the frame pass and the marks replay
    // both stop there; one line, exit 2, nothing left (not even with groups waiting for marks)
    // (mixed.pcap's frames 30 times: 21,870 frames, more than one row group before the cut)
    let frames = common::frames_of(&root().join("captures/mixed.pcap"));
    let many: Vec<Vec<u8>> = (0..30).flat_map(|_| frames.iter().cloned()).collect();
    let cut = dir.path().join("cut.pcap");
    common::write_pcap(&cut, &many);
    let whole = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &whole[..whole.len() - 7]).unwrap();
    let out = Command::new(BIN)
        .args(["dissect", "-f", "parquet", "-o"])
        .arg(&dest)
        .arg(&cut)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cut.pcap"), "{err}");
    assert_eq!(names_in(dir.path()), ["bad.pcap", "cut.pcap"]);

    // --each: two captures with one file name would share a partition
    let a = dir.path().join("a");
    std::fs::create_dir(&a).unwrap();
    std::fs::copy(root().join("captures/mixed.pcap"), a.join("mixed.pcap")).unwrap();
    let out = Command::new(BIN)
        .args(["analyze", "--each", "-f", "parquet", "-o"])
        .arg(dir.path().join("fleet"))
        .arg(root().join("captures/mixed.pcap"))
        .arg(a.join("mixed.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("two captures are named mixed.pcap"));
}

/// A report whose flows fill more than one row group (the report's tables are written
/// `REPORT_ROW_GROUP` rows at a time) reads back equal to its JSON, every group in order.
#[test]
fn a_flows_table_of_several_row_groups_reads_back_equal() {
    if !duckdb_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // 2 flows per connection, losses here and there: rows that differ from one another
    let connections = 2600;
    let pcap = common::many_connections(tmp.path(), connections, 1, 2, 0.003);
    assert!(2 * connections as usize > rocescope::analyze::parquet::REPORT_ROW_GROUP);
    let out = check(&[], &[pcap]);
    assert!(out.contains("1 passed, 0 failed"), "{out}");
    assert!(out.contains("5200 flows in 2 row groups"), "{out}");
}
