//! `analyze --tap` (interfaces.md §6.8) against the generator's truth: every scenario of
//! `generator/scenarios/` captured at both points (seeds 1, 2, 3, 7, 42; clocks ±1 s apart and
//! 1 µs of jitter on some), both taps written and analyzed as a user would. Each tap's report
//! equals its own truth, and per flow `between_taps` equals the truth of what happened between
//! the taps: counts exactly, delays within 2 µs. Then the ways `--tap` can be misused.

use std::path::Path;
use std::process::Command;

use rocescope::analyze::AnalyzeConfig;
use rocescope::analyze::taps;
use rocescope::config::AnalyzeFormat;
use rocescope::generate::{GenerateConfig, run};
use rocescope::replay::Replay;
use rocescope::replay::between::Between;
use rocescope_generator::Scenario;
use serde_json::Value;

mod common;
use common::{Rng, check, find, random_scenario, scenarios};

/// The counts of `between_taps`, equal to the truth's.
const COUNTS: [&str; 6] = [
    "matched",
    "dropped",
    "corrupted",
    "appeared",
    "reordered",
    "ecn_marked",
];

/// Delays may differ from the truth by the clock estimate's error and the jitter.
const DELAY_TOLERANCE_NS: i64 = 2_000;

/// `text` with `[capture] point = "both"` and the given clock offset and jitter.
fn both(text: &str, offset_ns: i64, jitter_ns: u64) -> String {
    let settings =
        format!("point = \"both\"\nclock_offset_ns = {offset_ns}\njitter_ns = {jitter_ns}\n");
    match text.find("[capture]") {
        Some(at) => {
            let (head, tail) = text.split_at(at + "[capture]".len());
            // the table's own settings of these, if it has them, are replaced
            let tail: String = tail
                .lines()
                .scan(true, |in_table, line| {
                    if line.trim_start().starts_with('[') {
                        *in_table = false;
                    }
                    let ours = ["point", "clock_offset_ns", "jitter_ns"]
                        .iter()
                        .any(|k| line.trim_start().starts_with(k));
                    Some(if *in_table && ours {
                        String::new()
                    } else {
                        format!("{line}\n")
                    })
                })
                .collect();
            format!("{head}\n{settings}{tail}")
        }
        None => format!("{text}\n[capture]\n{settings}"),
    }
}

/// Generate `text` at both points into `dir`; analyze the two taps; (report, truth).
fn run_both(dir: &Path, text: &str, seed: u64) -> (Value, Value) {
    let scenario_path = dir.join("both.toml");
    std::fs::write(&scenario_path, text).unwrap();
    let scenario = Scenario::from_toml(text, "both.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let truth_path = dir.join("truth.json");
    let cfg = GenerateConfig {
        scenario: scenario_path,
        output: dir.join("cap.pcap"),
        second_output: None,
        seed,
        truth: Some(truth_path.clone()),
    };
    run(&cfg).unwrap();
    let mut a = AnalyzeConfig::new(Vec::new());
    a.taps = vec![dir.join("cap.tx.pcap"), dir.join("cap.rx.pcap")];
    a.format = AnalyzeFormat::Json;
    a.link_bps = scenario.link_bps;
    let (replays, between) = taps::analyze(&a).unwrap();
    let out = json_laid_out_as_serde(&a, &replays, &between);
    let truth = serde_json::from_slice(&std::fs::read(truth_path).unwrap()).unwrap();
    (serde_json::from_slice(&out).unwrap(), truth)
}

fn check_between(name: &str, got: &Value, truth: &Value, diffs: &mut Vec<String>) {
    for (i, tap_truth) in truth["taps"].as_array().unwrap().iter().enumerate() {
        check(
            &format!("{name}.taps[{i}]"),
            &got["taps"][i],
            tap_truth,
            diffs,
        );
    }
    let flows = got["flows"].as_array().unwrap();
    for tf in truth["flows"].as_array().unwrap() {
        let at = format!(
            "{name}.flow[{} > {} qp {}]",
            tf["src"], tf["dst"], tf["destqp"]
        );
        let Some(gf) = find(flows, tf, &["src", "dst", "destqp"]) else {
            diffs.push(format!("{at}: not found"));
            continue;
        };
        if gf["upstream"] != tf["upstream"] {
            diffs.push(format!(
                "{at}.upstream: truth {}, analyze {}",
                tf["upstream"], gf["upstream"]
            ));
        }
        let (t, g) = (&tf["between_taps"], &gf["between_taps"]);
        for k in COUNTS {
            if t[k] != g[k] {
                diffs.push(format!("{at}.{k}: truth {}, analyze {}", t[k], g[k]));
            }
        }
        let (td, gd) = (&t["delay_ns"], &g["delay_ns"]);
        if td["samples"] != gd["samples"] {
            diffs.push(format!(
                "{at}.delay_ns.samples: truth {}, analyze {}",
                td["samples"], gd["samples"]
            ));
        }
        for k in ["p50", "p99", "max"] {
            let close = match (td[k].as_i64(), gd[k].as_i64()) {
                (Some(a), Some(b)) => (a - b).abs() <= DELAY_TOLERANCE_NS,
                (None, None) => true,
                _ => false,
            };
            if !close {
                diffs.push(format!(
                    "{at}.delay_ns.{k}: truth {}, analyze {}",
                    td[k], gd[k]
                ));
            }
        }
    }
}

#[test]
fn every_scenario_at_both_points_matches_its_truth() {
    let mut diffs = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    for path in scenarios() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        // (seed, clock offset of the receiver side, jitter)
        for (seed, offset, jitter) in [
            (1, 0, 0),
            (2, 1_000_000_000, 1_000),
            (3, -1_000_000_000, 1_000),
            (7, 250_000, 0),
            (42, -1_000_000_000, 0),
        ] {
            let (got, truth) = run_both(dir.path(), &both(&text, offset, jitter), seed);
            check_between(&format!("{name}#{seed}"), &got, &truth, &mut diffs);
        }
    }
    common::assert_no_differences(&diffs);
}

/// Random fault placements (the analyze tests' scenarios: drops of requests and responses,
/// duplicates, reordering, corruption, ECN marks, capture drops, NIC knobs, native IB,
/// mirrors) captured at both points: `between_taps` and each tap equal the truth, and
/// between them every kind of finding occurs.
#[test]
fn random_fault_placement_at_both_points_matches_truth() {
    let mut rng = Rng(0x7A95_1234_5678_9ABC);
    let dir = tempfile::tempdir().unwrap();
    let mut diffs = Vec::new();
    let mut totals = std::collections::BTreeMap::<String, u64>::new();
    for i in 0..RANDOM_SCENARIOS {
        let offset = [0, 1_000_000_000, -1_000_000_000][usize::try_from(i % 3).unwrap()];
        let text = both(&random_scenario(&mut rng, i), offset, 1_000 * (i % 2));
        let name = format!("random#{i}");
        let (got, truth) = run_both(dir.path(), &text, 2000 + i);
        let before = diffs.len();
        check_between(&name, &got, &truth, &mut diffs);
        if diffs.len() > before {
            diffs.push(format!("{name} was:\n{text}"));
        }
        for f in truth["flows"].as_array().unwrap() {
            for (k, v) in f["between_taps"].as_object().unwrap() {
                if let Some(n) = v.as_u64() {
                    *totals.entry(k.clone()).or_default() += n;
                }
            }
        }
    }
    common::assert_no_differences(&diffs);
    eprintln!("random scenarios at both points: {totals:?}");
    for k in COUNTS {
        assert!(
            totals.get(k).copied().unwrap_or(0) > 0,
            "no {k}: {totals:?}"
        );
    }
}

/// Every demo capture given as both taps: nothing happened between them. Every packet is
/// matched to itself, at no delay and no clock offset (the two copies of an acknowledgement
/// come at the same instant, whichever tap is its flow's upstream).
#[test]
fn every_capture_given_as_both_taps_is_matched_to_itself() {
    let captures = common::pcaps(&Path::new(env!("CARGO_MANIFEST_DIR")).join("captures"));
    let mut diffs = Vec::new();
    let matched: u64 = captures
        .iter()
        .map(|cap| matched_to_itself(cap, &mut diffs))
        .sum();
    common::assert_no_differences(&diffs);
    assert!(
        matched > 5_000,
        "only {matched} packets matched over {} captures",
        captures.len()
    );
}

/// A capture of many more packets than a tap's replay hands the matcher at a time (4,096), so
/// that batches go back and forth between the threads many times over: still every packet
/// matched to itself.
#[test]
fn a_capture_of_many_batches_given_as_both_taps_is_matched_to_itself() {
    let dir = tempfile::tempdir().unwrap();
    // 3,000 connections of 4 messages of two packets, an ACK every packet: about 48,000 frames
    let cap = common::many_connections(dir.path(), 3000, 1, 4, 0.0);
    let mut diffs = Vec::new();
    let matched = matched_to_itself(&cap, &mut diffs);
    common::assert_no_differences(&diffs);
    assert!(matched > 10 * 4096, "only {matched} packets matched");
    // each tap's 6,000 flows, many chunks formatted on several threads, indented for their
    // depth: laid out as serde lays out the report
    let mut a = AnalyzeConfig::new(Vec::new());
    a.taps = vec![cap.clone(), cap];
    a.format = AnalyzeFormat::Json;
    let (replays, between) = taps::analyze(&a).unwrap();
    assert!(
        replays.iter().all(|r| r.flows.len() > 8 * 256),
        "too few flows"
    );
    json_laid_out_as_serde(&a, &replays, &between);
}

/// The two-tap JSON report, held to serde_json's layout of it byte for byte
/// (`write_json_through_serde`).
fn json_laid_out_as_serde(a: &AnalyzeConfig, replays: &[Replay], between: &Between) -> Vec<u8> {
    let mut out = Vec::new();
    taps::write_report(a, replays, between, &mut out).unwrap();
    let mut oracle = Vec::new();
    taps::write_json_through_serde(a, replays, between, &mut oracle).unwrap();
    assert!(
        out == oracle,
        "the two-tap JSON report differs from serde_json's layout of it"
    );
    out
}

/// `cap` given as both taps: what differs from every packet matched to itself goes to `diffs`;
/// the packets matched.
fn matched_to_itself(cap: &Path, diffs: &mut Vec<String>) -> u64 {
    let cap = cap.display().to_string();
    let out = rocescope(&["-q", "analyze", "-f", "json", "--tap", &cap, "--tap", &cap]);
    assert!(
        out.status.success(),
        "{cap}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let offset = &report["clock"]["offset_ns"];
    if !(offset.is_null() || offset == 0) {
        diffs.push(format!("{cap}: clock offset {offset}"));
    }
    let mut matched = 0;
    for f in report["flows"].as_array().unwrap() {
        let b = &f["between_taps"];
        let n = &f["packets"][0];
        let mut wrong: Vec<String> = COUNTS
            .iter()
            .filter(|&&k| k != "matched" && b[k] != 0)
            .map(|k| format!("{k} {}", b[k]))
            .collect();
        if b["matched"] != *n || f["packets"][1] != *n {
            wrong.push(format!("matched {} of {}", b["matched"], f["packets"]));
        }
        let delay = &b["delay_ns"];
        if delay["samples"] != 0 && (delay["p50"] != 0 || delay["max"] != 0) {
            wrong.push(format!("delay {delay}"));
        }
        if !wrong.is_empty() {
            diffs.push(format!(
                "{cap} flow {} -> {} qp {}: {}",
                f["src"],
                f["dst"],
                f["destqp"],
                wrong.join(", ")
            ));
        }
        matched += b["matched"].as_u64().unwrap_or(0);
    }
    matched
}

/// How many random scenarios [`random_fault_placement_at_both_points_matches_truth`] runs.
const RANDOM_SCENARIOS: u64 = 60;

fn rocescope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn misuse_is_one_line_or_said_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cap = |n: &str| root.join("captures").join(n).display().to_string();
    // one tap, three taps: one line, exit 2 (the inspector says so before taking the screen)
    for (cmd, taps) in [
        ("analyze", vec![cap("mixed.pcap")]),
        ("analyze", vec![cap("mixed.pcap"); 3]),
        ("inspect", vec![cap("mixed.pcap")]),
    ] {
        let mut args = vec![cmd];
        for t in &taps {
            args.extend(["--tap", t.as_str()]);
        }
        let out = rocescope(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("two captures"), "{err}");
    }
    // no flow in common (and different link types: Ethernet against native IB in ERF)
    for other in ["ud.pcap", "ib_fabric.pcap"] {
        let out = rocescope(&[
            "analyze",
            "--tap",
            &cap("mixed.pcap"),
            "--tap",
            &cap(other),
            "-f",
            "json",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("no packet of one is in the other"), "{err}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let flows = report["flows"].as_array().unwrap();
        assert!(!flows.is_empty());
        assert!(
            flows
                .iter()
                .all(|f| f["upstream"].is_null() && f["between_taps"]["matched"] == 0)
        );
        assert_eq!(report["clock"]["source"], "none");
        assert_eq!(report["capture"].as_array().unwrap().len(), 2);
    }
    // standard input, and Parquet: refused before anything is read
    for (args, says) in [
        (
            vec!["analyze", "--tap", "-", "--tap", "x.pcap"],
            "standard input",
        ),
        (
            vec![
                "analyze", "--tap", "a.pcap", "--tap", "b.pcap", "-f", "parquet", "-o", "d",
            ],
            "-f parquet",
        ),
    ] {
        let out = rocescope(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
    // a tap that is not a capture
    let junk = dir.path().join("junk.pcap");
    std::fs::write(&junk, b"not a capture").unwrap();
    let out = rocescope(&[
        "analyze",
        "--tap",
        &cap("mixed.pcap"),
        "--tap",
        &junk.display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("junk.pcap"), "{err}");
}
