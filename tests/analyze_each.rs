//! `analyze --each` (interfaces.md §10): every capture on its own, several at once, the reports
//! in the order the captures were named, each equal to what `analyze` of that capture alone
//! reports.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn demo() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    all.sort();
    all
}

fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap()
}

/// `text` (JSON) without the layout: whitespace outside strings taken out.
fn minified(text: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !c.is_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[test]
fn each_line_is_the_report_of_its_capture_alone() {
    let captures = demo();
    assert!(captures.len() >= 20);
    let out = Command::new(BIN)
        .args(["analyze", "--each", "-f", "json"])
        .args(&captures)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), captures.len());
    for (line, capture) in lines.iter().zip(&captures) {
        let alone = Command::new(BIN)
            .args(["analyze", "-f", "json"])
            .arg(capture)
            .output()
            .unwrap();
        assert_eq!(
            json(line.as_bytes()),
            json(&alone.stdout),
            "{}",
            capture.display()
        );
        // and the same text, keys in the same order, less the layout
        assert_eq!(
            *line,
            minified(&String::from_utf8_lossy(&alone.stdout)),
            "{}",
            capture.display()
        );
    }
}

#[test]
fn a_bad_capture_is_its_own_line_and_exit_2() {
    let good = demo().remove(0);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("not-a-capture.pcap");
    std::fs::write(&bad, b"hello").unwrap();
    let report = dir.path().join("each.jsonl");
    let out = Command::new(BIN)
        .args(["analyze", "--each", "-f", "json", "-o"])
        .arg(&report)
        .arg(&bad)
        .arg(&good)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("1 of 2 captures could not be analyzed") && err.lines().count() == 1,
        "{err}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| json(l.as_bytes())).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["capture"]["files"][0], bad.display().to_string());
    assert!(
        lines[0]["error"]
            .as_str()
            .unwrap()
            .contains("not a pcap or pcapng file")
    );
    assert!(lines[1]["flows"].is_array());
}

#[test]
fn fail_on_matches_across_the_captures_and_text_reports_are_headed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let out = Command::new(BIN)
        .args(["analyze", "--each", "--fail-on", "loss"])
        .arg(dir.join("clean_write.pcap"))
        .arg(dir.join("loss_gbn.pcap"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(heads.len(), 2, "{text}");
    assert!(heads[0].ends_with("clean_write.pcap") && heads[1].ends_with("loss_gbn.pcap"));
    let clean = Command::new(BIN)
        .args(["analyze", "--each", "--fail-on", "loss"])
        .arg(dir.join("clean_write.pcap"))
        .output()
        .unwrap();
    assert_eq!(clean.status.code(), Some(0));
}
