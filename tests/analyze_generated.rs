//! Every scenario of `generator/scenarios/` generated (seeds 1, 2, 3, 7, 42) and analyzed: the analyze JSON
//! report must equal the generator's truth on every key the truth states (interfaces.md §8:
//! the truth leaves out what §6 leaves to judgement).

use std::path::Path;

use rocescope::analyze::{AnalyzeConfig, json};
use rocescope::capture::{Frame, LinkType};
use rocescope::cli::AnalyzeFormat;
use rocescope::dissect::FrameView;
use rocescope::replay::{Engine, EngineConfig};
use rocescope_dissectors::stack::Options;
use rocescope_generator::{Generator, MAX_FRAME_LEN, Scenario};
use serde_json::Value;

/// Analyze a generated scenario in memory; returns (report JSON, truth JSON).
fn run(path: &Path, seed: u64) -> (Value, Value) {
    let text = std::fs::read_to_string(path).unwrap();
    let scenario = Scenario::from_toml(&text, &path.display().to_string()).unwrap();
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
            link: LinkType::ETHERNET,
            data: &buf[..out.len],
        };
        engine.frame(&FrameView::new(frame, &options, 0));
    }
    let truth = serde_json::to_value(g.truth()).unwrap();
    let replay = engine.finish();
    let mut cfg = AnalyzeConfig::new(vec![path.to_path_buf()]);
    cfg.format = AnalyzeFormat::Json;
    cfg.link_bps = scenario.link_bps;
    let mut out = Vec::new();
    json::write(&cfg, &replay, &mut out).unwrap();
    (serde_json::from_slice(&out).unwrap(), truth)
}

/// Every key of `truth` must be in `got` with the same value (objects compared recursively).
fn compare(at: &str, truth: &Value, got: &Value, diffs: &mut Vec<String>) {
    match (truth, got) {
        (Value::Object(t), Value::Object(g)) => {
            for (k, tv) in t {
                match g.get(k) {
                    Some(gv) => compare(&format!("{at}.{k}"), tv, gv, diffs),
                    None => diffs.push(format!("{at}.{k}: missing (truth {tv})")),
                }
            }
        }
        _ if truth == got => {}
        _ => diffs.push(format!("{at}: truth {truth}, analyze {got}")),
    }
}

fn find<'v>(rows: &'v [Value], row: &Value, keys: &[&str]) -> Option<&'v Value> {
    rows.iter().find(|r| keys.iter().all(|k| r[k] == row[k]))
}

#[test]
fn generated_scenarios_match_truth() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    let mut diffs = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        for seed in [1, 2, 3, 7, 42] {
            let name = format!("{name}#{seed}");
            let (got, truth) = run(path, seed);
            compare(
                &format!("{name}.capture"),
                &truth["capture"],
                &got["capture"],
                &mut diffs,
            );
            let got_flows = got["flows"].as_array().unwrap();
            let truth_flows = truth["flows"].as_array().unwrap();
            if got_flows.len() != truth_flows.len() {
                diffs.push(format!(
                    "{name}: {} flows, truth {}",
                    got_flows.len(),
                    truth_flows.len()
                ));
            }
            for tf in truth_flows {
                let at = format!(
                    "{name}.flow[{} > {} qp {}]",
                    tf["src"], tf["dst"], tf["destqp"]
                );
                match find(got_flows, tf, &["src", "dst", "destqp"]) {
                    Some(gf) => compare(&at, tf, gf, &mut diffs),
                    None => diffs.push(format!("{at}: not found")),
                }
            }
            let got_pfc = got["pfc"].as_array().unwrap();
            for tp in truth["pfc"].as_array().unwrap() {
                let at = format!("{name}.pfc[{} p{}]", tp["src_mac"], tp["priority"]);
                match find(got_pfc, tp, &["src_mac", "priority"]) {
                    Some(gp) => compare(&at, tp, gp, &mut diffs),
                    None => diffs.push(format!("{at}: not found")),
                }
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
