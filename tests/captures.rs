//! The committed demo captures are exactly what the generator makes from
//! their scenarios: regenerate each and compare bytes.

use std::path::{Path, PathBuf};

use rocescope::generate::{GenerateConfig, run};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scenarios() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("generator/scenarios"))
        .expect("scenarios dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    out.sort();
    out
}

#[test]
fn regenerating_reproduces_committed_captures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenarios = scenarios();
    assert!(scenarios.len() >= 12, "only {} scenarios", scenarios.len());
    for scenario in scenarios {
        let name = scenario
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let output = dir.path().join(format!("{name}.pcap"));
        let cfg = GenerateConfig {
            scenario: scenario.clone(),
            output: output.clone(),
            second_output: None,
            seed: 1,
            truth: None,
        };
        // one capture, or a scenario's two capture points (NAME.tx.pcap, NAME.rx.pcap)
        for (written, _) in run(&cfg).unwrap_or_else(|e| panic!("{name}: {e:#}")) {
            let file = written
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            let committed = root().join("captures").join(&file);
            let want = std::fs::read(&committed)
                .unwrap_or_else(|e| panic!("{}: {e}", committed.display()));
            let got = std::fs::read(&written).expect("read generated");
            assert!(
                want == got,
                "{name}: regenerated capture differs from captures/{file}"
            );
            assert!(
                want.len() < 2 << 20,
                "{file}: {} bytes, over 2 MB",
                want.len()
            );
        }
    }
}

#[test]
fn every_committed_capture_has_a_scenario() {
    let names: Vec<String> = scenarios()
        .iter()
        .map(|p| p.file_stem().expect("stem").to_string_lossy().into_owned())
        .collect();
    for entry in std::fs::read_dir(root().join("captures")).expect("captures dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "pcap") {
            let stem = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            // a scenario's two capture points: NAME.tx, NAME.rx
            let stem = stem
                .strip_suffix(".tx")
                .or_else(|| stem.strip_suffix(".rx"))
                .unwrap_or(&stem)
                .to_owned();
            assert!(
                names.contains(&stem),
                "captures/{stem}.pcap has no generator/scenarios/{stem}.toml"
            );
        }
    }
}
