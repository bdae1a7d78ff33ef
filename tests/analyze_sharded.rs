//! The sharded replay (flows spread over several engines, each on its thread) reports exactly
//! what one engine does, byte for byte in the JSON report: every capture of `captures/` and
//! `../shared/captures/real/`, every scenario of `generator/scenarios/`, random scenarios
//! with faults, and all of those merged (many host pairs, so many shards at work, and files
//! whose ICRCs are judged unreliable while the others' packets step, §6.5).

use std::path::{Path, PathBuf};
use std::process::Command;

use rocescope::analyze::{AnalyzeConfig, replay_sharded, replay_with, write_report};
use rocescope::config::AnalyzeFormat;
use rocescope::source::Threads;

mod common;

fn json(cfg: &AnalyzeConfig, replay: &rocescope::replay::Replay) -> String {
    let mut out = Vec::new();
    write_report(cfg, replay, &mut out, false).unwrap();
    String::from_utf8(out).unwrap()
}

/// Compares the sharded reports of `set` with the single engine's; returns how many shards
/// (of three) its flows fall in.
fn check(set: &[PathBuf]) -> usize {
    let mut cfg = AnalyzeConfig::new(set.to_vec());
    cfg.format = AnalyzeFormat::Json;
    let one = replay_with(&cfg, None).unwrap();
    let want = json(&cfg, &one);
    for (shards, threads) in [(2, Threads::One), (3, Threads::Two), (5, Threads::One)] {
        let got = json(&cfg, &replay_sharded(&cfg, shards, threads).unwrap());
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{set:?}, {shards} shards ({threads:?}): the report differs from one engine's \
                 from line {}:\n  sharded: {:?}\n  one:     {:?}",
                line + 1,
                got.lines().nth(line),
                want.lines().nth(line)
            );
        }
    }
    let mut used: Vec<usize> = one.flows.iter().map(|f| one.key(f).shard(3)).collect();
    used.sort_unstable();
    used.dedup();
    used.len()
}

/// `rocescope generate SCENARIO --seed SEED` into `dir`: the capture file(s) it wrote.
fn generate(scenario: &Path, text: Option<&str>, seed: u64, dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let path = match text {
        Some(t) => {
            let p = dir.join("scenario.toml");
            std::fs::write(&p, t).unwrap();
            p
        }
        None => scenario.to_path_buf(),
    };
    let status = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["-q", "generate", "--seed", &seed.to_string(), "-o"])
        .arg(dir.join("out.pcap"))
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "generate {}", scenario.display());
    let files = common::pcaps(dir);
    assert!(
        !files.is_empty(),
        "{}: nothing generated",
        scenario.display()
    );
    files
}

#[test]
fn demo_and_real_captures_sharded_report_the_same() {
    let files = common::demo_and_real_captures();
    for f in &files {
        check(std::slice::from_ref(f));
    }
    // merged: the demo captures' host pairs side by side
    let spread = check(&files);
    assert!(
        spread >= 2,
        "the merged captures' flows all fell in one shard"
    );
}

#[test]
fn generated_scenarios_sharded_report_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    for (i, scenario) in common::scenarios().iter().enumerate() {
        let files = generate(scenario, None, 1, &tmp.path().join(format!("s{i}")));
        for f in &files {
            check(std::slice::from_ref(f));
        }
        all.extend(files);
    }
    let mut rng = common::Rng(0x5EED_0F5A_4D5C_0013);
    let mut random = Vec::new();
    for i in 0..24 {
        let text = common::random_scenario(&mut rng, i);
        let files = generate(
            Path::new(&format!("random #{i}")),
            Some(&text),
            i + 1,
            &tmp.path().join(format!("r{i}")),
        );
        for f in &files {
            check(std::slice::from_ref(f));
        }
        random.extend(files);
    }
    // merged, each random scenario between hosts of its own: every shard at work, and some
    // files' ICRCs judged a sniffer's while the others step
    let spread = check(&random);
    assert!(
        spread == 3,
        "the random scenarios' flows fell in {spread} of 3 shards"
    );
    check(&all);
}
