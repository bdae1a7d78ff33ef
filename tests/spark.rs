//! examples/spark/fleet_loss.py in Spark's local mode: the executors run `rocescope analyze
//! --each -f parquet` on their shares of the captures, the job reads the Hive partitions back and
//! sums loss per QP across the fleet. Its table must equal what `analyze -f json` of each
//! capture says, summed here. Skipped with a notice where Java or pyspark is missing (`.ci/run`
//! installs both).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn present(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

type Qp = (String, String, u64);
/// Lost, not captured, and the captures that saw the QP.
type Sums = (u64, u64, BTreeSet<String>);

/// Per QP: lost, not_captured and the captures that saw it, from each capture's JSON report.
fn expected(captures: &[PathBuf]) -> Vec<serde_json::Value> {
    let mut sums: BTreeMap<Qp, Sums> = BTreeMap::new();
    for c in captures {
        let out = Command::new(BIN)
            .args(["analyze", "-q", "-f", "json"])
            .arg(c)
            .output()
            .unwrap();
        assert!(out.status.success());
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        for f in report["flows"].as_array().unwrap() {
            let key = (
                f["src"].as_str().unwrap().to_owned(),
                f["dst"].as_str().unwrap().to_owned(),
                f["destqp"].as_u64().unwrap(),
            );
            let e = sums.entry(key).or_default();
            e.0 += f["lost"].as_u64().unwrap();
            e.1 += f["not_captured"].as_u64().unwrap();
            e.2.insert(name.clone());
        }
    }
    let mut rows: Vec<(Qp, Sums)> = sums
        .into_iter()
        .filter(|(_, (lost, missed, _))| *lost > 0 || *missed > 0)
        .collect();
    // worst first: lost, then not_captured, then the QP
    rows.sort_by(|a, b| (b.1.0, b.1.1).cmp(&(a.1.0, a.1.1)).then(a.0.cmp(&b.0)));
    rows.into_iter()
        .map(|((src, dst, destqp), (lost, missed, seen))| {
            serde_json::json!({
                "src": src, "dst": dst, "destqp": destqp, "lost": lost,
                "not_captured": missed, "captures": seen.into_iter().collect::<Vec<_>>(),
            })
        })
        .collect()
}

#[test]
fn the_spark_job_sums_loss_per_qp_as_the_reports_say() {
    if !present("java", &["-version"]) || !present("python3", &["-c", "import pyspark"]) {
        eprintln!("notice: Java or pyspark not found; the Spark example is not run");
        return;
    }
    let mut captures: Vec<PathBuf> = [
        "loss_gbn",
        "loss_gbn_sender",
        "mixed",
        "capture_drop",
        "clean_write",
        "reorder",
    ]
    .iter()
    .map(|n| root().join(format!("captures/{n}.pcap")))
    .collect();
    let real = root().join("../shared/captures/real/mlx-rocev2-32qp.pcap");
    if real.exists() {
        captures.push(real);
    }
    let out = tempfile::tempdir().unwrap();
    let run = Command::new("python3")
        .arg(root().join("examples/spark/fleet_loss.py"))
        .args(["--rocescope", BIN, "--shares", "3", "--out"])
        .arg(out.path())
        .args(&captures)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let got: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want = expected(&captures);
    assert!(want.len() >= 3, "the captures have lossy QPs: {want:?}");
    assert_eq!(got, want);
    // every capture has its partition, and the job's own table was written
    for c in &captures {
        let name = c.file_name().unwrap().to_string_lossy();
        assert!(
            out.path()
                .join(format!("capture={name}/flows.parquet"))
                .exists()
        );
    }
    assert!(out.path().join("_fleet_loss").is_dir());
}
