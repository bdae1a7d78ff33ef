//! Every scenario of `generator/scenarios/` generated (seeds 1, 2, 3, 7, 42) and analyzed: the analyze JSON
//! report must equal the generator's truth on every key the truth states (interfaces.md §8:
//! the truth leaves out what §6 leaves to judgement).

use std::path::Path;

use rocescope::analyze::AnalyzeConfig;
use rocescope::capture::Frame;
use rocescope::config::AnalyzeFormat;
use rocescope::frame::FrameView;
use rocescope::replay::{Engine, EngineConfig};
use rocescope_dissectors::stack::DissectOptions as Options;
use rocescope_generator::{Generator, MAX_FRAME_LEN, Scenario};
use serde_json::Value;

mod common;
use common::{Rng, check, compare, random_scenario, scenarios};

/// Analyze a generated scenario in memory; returns (report JSON, truth JSON).
fn run(path: &Path, seed: u64) -> (Value, Value) {
    let text = std::fs::read_to_string(path).unwrap();
    run_text(&text, path, seed)
}

/// [`run`] for scenario text (`path` names it in messages).
fn run_text(text: &str, path: &Path, seed: u64) -> (Value, Value) {
    let scenario = Scenario::from_toml(text, &path.display().to_string())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut g = Generator::new(&scenario, seed);
    let mut buf = vec![0u8; MAX_FRAME_LEN];
    // analyze is told the link speed, as `--link-speed` would (PFC quanta to time)
    let mut engine = Engine::new(EngineConfig {
        link_bps: scenario.link_bps,
        ..EngineConfig::default()
    });
    let options = Options::default();
    let mut number = 0;
    while let Some(r) = g.next_frame(&mut buf) {
        let out = r.unwrap();
        number += 1;
        let frame = Frame {
            number,
            time_ns: out.time_ns,
            caplen: u32::try_from(out.len).unwrap(),
            orig_len: u32::try_from(out.orig_len).unwrap(),
            link: g.link_type(),
            input: 0,
            data: &buf[..out.len],
        };
        engine.frame(&FrameView::new(&frame, &options, 0));
    }
    let truth = serde_json::to_value(g.truth()).unwrap();
    let replay = engine.finish();
    let mut cfg = AnalyzeConfig::new(vec![path.to_path_buf()]);
    cfg.format = AnalyzeFormat::Json;
    cfg.link_bps = scenario.link_bps;
    let out = common::json_report(&cfg, &replay, &path.display().to_string());
    (serde_json::from_slice(&out).unwrap(), truth)
}

#[test]
fn generated_scenarios_match_truth() {
    let paths = scenarios();
    assert!(!paths.is_empty());
    let mut diffs = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        for seed in [1, 2, 3, 7, 42] {
            let name = format!("{name}#{seed}");
            let (got, truth) = run(path, seed);
            check(&name, &got, &truth, &mut diffs);
        }
    }
    common::assert_no_differences(&diffs);
}

/// interfaces.md §6 against the generator's truth on scenarios nobody wrote by
/// hand: [`RANDOM_SCENARIOS`] of them, each with its own seed.
#[test]
fn random_fault_placement_matches_truth() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut diffs = Vec::new();
    // what the truths stated, summed: the faults must have had consequences
    let keys = [
        "psn_gaps",
        "lost",
        "duplicates",
        "retransmissions",
        "out_of_order",
        "implied_timeouts",
        "ecn_ce",
        "icrc_errors",
        "not_captured",
    ];
    let mut totals = [0u64; 9];
    let mut native = 0;
    let mut conformance = std::collections::BTreeMap::<String, u64>::new();
    let (mut flows, mut unreliable, mut timed) = (0, 0, 0);
    for i in 0..RANDOM_SCENARIOS {
        let text = random_scenario(&mut rng, i);
        let name = format!("random#{i}");
        let (got, truth) = run_text(&text, Path::new(&name), 1000 + i);
        let before = diffs.len();
        for tf in truth["flows"].as_array().unwrap() {
            flows += 1;
            for (k, t) in keys.iter().zip(totals.iter_mut()) {
                *t += tf[*k].as_u64().unwrap_or(0);
            }
            if let Some(c) = tf["conformance"].as_object() {
                for (k, v) in c {
                    *conformance.entry(k.clone()).or_default() += v.as_u64().unwrap();
                }
            }
            if tf["recovery_ns"]["samples"].as_u64().unwrap_or(0) > 0 {
                timed += 1;
            }
        }
        if truth["capture"]["icrc_unreliable"] == true {
            unreliable += 1;
        }
        if truth["capture"]["ib_frames"].as_u64().unwrap_or(0) > 0 {
            native += 1;
        }
        check(&name, &got, &truth, &mut diffs);
        if diffs.len() > before {
            diffs.push(format!("{name} was:\n{text}"));
        }
    }
    common::assert_no_differences(&diffs);
    eprintln!(
        "random scenarios: {flows} flows, {keys:?} = {totals:?}, conformance {conformance:?}, \
         {unreliable} with unreliable ICRCs, {timed} flows with recovery samples"
    );
    assert!(flows >= 2 * RANDOM_SCENARIOS, "{flows} flows");
    for (k, t) in keys.iter().zip(totals) {
        assert!(t > 0, "no scenario produced any {k}");
    }
    assert!(unreliable > 0 && timed > 0);
    assert!(native >= 10, "{native} native InfiniBand scenarios");
    // the knobs' findings, each at least once
    for k in [
        "repeated_nak",
        "ack_regression",
        "msn_regression",
        "response_after_fatal_nak",
    ] {
        assert!(
            conformance.get(k).copied().unwrap_or(0) > 0,
            "no {k}: {conformance:?}"
        );
    }
}

/// How many random scenarios [`random_fault_placement_matches_truth`] runs.
const RANDOM_SCENARIOS: u64 = 120;

/// tcp_bth_faults (tcp_bth.md §d.2's three failure modes of `roce_test.c`, plus a
/// corrupted ICRC): the `tcp_bth` rows equal the truth's, and the events are
/// exactly the ones the faults call for, on every seed.
#[test]
fn tcp_bth_faults_events() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios/tcp_bth_faults.toml");
    for seed in [1, 2, 3, 7, 42] {
        let (got, truth) = run(&path, seed);
        let mut diffs = Vec::new();
        compare("tcp_bth", &truth["tcp_bth"], &got["tcp_bth"], &mut diffs);
        assert!(diffs.is_empty(), "seed {seed}: {diffs:?}");
        let kinds: Vec<String> = got["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .filter(|k| k.starts_with("tcp_bth_"))
            .map(str::to_owned)
            .collect();
        // the dropped FIRST of MSN 2 (segment 3): a hole, then its MIDDLE with no
        // FIRST; the MIDDLE/LAST swap of MSN 4: a hole, SEG 0 -> 2, the late
        // MIDDLE (older TSval, so reordered) with SEG 2 -> 1; the duplicated
        // MIDDLE of MSN 5 (same TSval); the bad ICRC; then the FIRST of MSN 2
        // resent with a newer TSval, repairing the hole.
        let want = [
            "tcp_bth_gap",
            "tcp_bth_missing_first",
            "tcp_bth_gap",
            "tcp_bth_seg_continuity",
            "tcp_bth_out_of_order",
            "tcp_bth_seg_continuity",
            "tcp_bth_duplicate",
            "tcp_bth_icrc_error",
            "tcp_bth_retransmission",
        ];
        assert_eq!(kinds, want, "seed {seed}");
    }
}

/// tcp_bth.md §d.1 step 4 on generated traffic: segments the capture point misses
/// (`capture_drop`, delivered to the server, which ACKs them) are `not_captured` holes,
/// a dropped one that is never resent would stay `unrecovered`; a missed FIRST makes its
/// message partial. Rows equal the truth's on every seed.
#[test]
fn tcp_bth_capture_drops_match_truth() {
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios/tcp_bth_clean.toml"),
    )
    .unwrap();
    let text = format!(
        "{base}\n[[fault]]\nkind = \"capture_drop\"\nconnection = \"rdma\"\nevery = 7\n\
         [[fault]]\nkind = \"capture_drop\"\nconnection = \"rdma\"\npsn = 0\n"
    );
    let mut nocap = 0;
    for seed in [1, 2, 3, 7, 42] {
        let (got, truth) = run_text(&text, Path::new("tcp_bth_capture_drop"), seed);
        let mut diffs = Vec::new();
        compare("tcp_bth", &truth["tcp_bth"], &got["tcp_bth"], &mut diffs);
        assert!(diffs.is_empty(), "seed {seed}: {diffs:?}");
        let row = &got["tcp_bth"][0];
        assert_eq!(row["unrecovered"], 0, "seed {seed}: {row}");
        // the first data segment (a WRITE FIRST or ONLY) is never captured
        assert!(row["partial_messages"].as_u64().unwrap() >= 1, "{row}");
        nocap += row["not_captured"].as_u64().unwrap();
        let events = got["events"].as_array().unwrap();
        let n = events
            .iter()
            .filter(|e| e["kind"] == "not_captured")
            .count();
        assert_eq!(n as u64, row["not_captured"].as_u64().unwrap());
    }
    assert!(nocap >= 5, "{nocap}");
}
