//! interfaces.md §6.7's RC conformance findings: each one driven by the generator's NIC
//! misbehaviour knob (`generator/scenarios/nic_*.toml`, committed as `captures/nic_*.pcap`),
//! its event's frame and PSN located in the capture by reading the frames themselves; none
//! on any scenario without a knob, nor on any real capture. Also `--fail-on` over the new
//! groups, and every finding kind listed in `analyze --help`.

use std::path::{Path, PathBuf};
use std::process::Command;

use rocescope::analyze::{self, AnalyzeConfig};
use rocescope::capture::CaptureReader;
use rocescope::config::AnalyzeFormat;
use rocescope::replay::Kind;
use rocescope_dissectors::ib::aeth::{AethKind, NakCode};
use rocescope_dissectors::ib::opcode::Operation;
use rocescope_dissectors::stack;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn demo(name: &str) -> PathBuf {
    root().join("captures").join(format!("{name}.pcap"))
}

fn report(path: &Path) -> Value {
    let mut cfg = AnalyzeConfig::new(vec![path.to_path_buf()]);
    cfg.format = AnalyzeFormat::Json;
    serde_json::from_str(&analyze::report_string(&cfg).unwrap()).unwrap()
}

/// One RoCE frame as the dissector reads it.
#[derive(Debug, Clone, Copy)]
struct Row {
    frame: u64,
    time_ns: u64,
    operation: Option<Operation>,
    psn: u32,
    /// AETH (syndrome kind, MSN), when the frame has one.
    aeth: Option<(AethKind, u32)>,
}

impl Row {
    fn is_request(&self) -> bool {
        self.operation.is_some_and(Operation::is_request)
    }
    fn is_seq_nak(&self) -> bool {
        matches!(
            self.aeth,
            Some((AethKind::Nak(NakCode::PSN_SEQUENCE_ERROR), _))
        ) && self.operation == Some(Operation::Acknowledge)
    }
    fn is_ack(&self) -> bool {
        matches!(self.aeth, Some((AethKind::Ack { .. }, _)))
            && self.operation == Some(Operation::Acknowledge)
    }
}

fn rows(path: &Path) -> Vec<Row> {
    let mut reader = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(frame) = reader.next_frame() {
        let frame = frame.unwrap();
        let (d, _) = stack::dissect_lax(frame.data);
        let Some(roce) = d.roce else { continue };
        out.push(Row {
            frame: frame.number,
            time_ns: frame.time_ns,
            operation: roce.info.map(|i| i.operation),
            psn: roce.bth.psn().value(),
            aeth: roce.exts.aeth().map(|a| (a.syndrome().kind(), a.msn())),
        });
    }
    out
}

/// The events of `kind`, as (frame, psn).
fn events(v: &Value, kind: &str) -> Vec<(u64, u64)> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| (e["frame"].as_u64().unwrap(), e["psn"].as_u64().unwrap()))
        .collect()
}

/// Sum of one conformance counter over the flows.
fn counter(v: &Value, kind: &str) -> u64 {
    v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["conformance"][kind].as_u64().unwrap())
        .sum()
}

/// Every conformance counter of every flow, except `allowed`, is zero.
fn only(v: &Value, allowed: &str) {
    for f in v["flows"].as_array().unwrap() {
        for (k, n) in f["conformance"].as_object().unwrap() {
            if k != allowed {
                assert_eq!(n, 0, "{k} in flow {}", f["id"]);
            }
        }
    }
}

#[test]
fn wrong_resend_is_gbn_wrong_start() {
    let path = demo("nic_wrong_resend");
    let v = report(&path);
    let rows = rows(&path);
    // the NAK names the dropped PSN 120; the first go-back after it starts two PSNs late
    let nak = rows.iter().find(|r| r.is_seq_nak()).expect("a NAK");
    assert_eq!(nak.psn, 120);
    let mut prev = None;
    let mut wrong = None;
    for r in rows.iter().filter(|r| r.is_request()) {
        if r.frame > nak.frame && prev.is_some_and(|p| r.psn <= p) {
            wrong = Some(*r);
            break;
        }
        prev = Some(r.psn);
    }
    let wrong = wrong.expect("a go-back");
    assert_eq!(wrong.psn, 122);
    // PSN 120 never comes again before the capture ends
    assert!(
        !rows
            .iter()
            .any(|r| r.is_request() && r.psn == 120 && r.frame > nak.frame)
    );
    assert_eq!(events(&v, "gbn_wrong_start"), [(wrong.frame, 122)]);
    assert_eq!(counter(&v, "gbn_wrong_start"), 1);
    only(&v, "gbn_wrong_start");
}

#[test]
fn second_nak_is_repeated_nak() {
    let path = demo("nic_double_nak");
    let v = report(&path);
    let rows = rows(&path);
    let naks: Vec<&Row> = rows.iter().filter(|r| r.is_seq_nak()).collect();
    assert_eq!(naks.len(), 2);
    assert_eq!(naks[0].psn, naks[1].psn);
    // no request at the NAK's PSN between the two
    assert!(!rows.iter().any(|r| r.is_request()
        && r.psn == naks[0].psn
        && r.frame > naks[0].frame
        && r.frame < naks[1].frame));
    assert_eq!(
        events(&v, "repeated_nak"),
        [(naks[1].frame, u64::from(naks[1].psn))]
    );
    // on the response flow: the responder broke the rule
    let flow = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["conformance"]["repeated_nak"] == 1)
        .unwrap();
    assert_eq!(flow["naks"]["psn_seq_err"], 2);
    only(&v, "repeated_nak");
}

#[test]
fn acks_going_back_are_ack_and_msn_regressions() {
    let path = demo("nic_ack_regression");
    let v = report(&path);
    let acks: Vec<Row> = rows(&path).into_iter().filter(Row::is_ack).collect();
    // the ACK after the one of PSN 40047 acknowledges PSN 40044
    let i = acks.iter().position(|r| r.psn == 40047).unwrap();
    let back = acks[i + 1];
    assert_eq!(back.psn, 40044);
    assert_eq!(events(&v, "ack_regression"), [(back.frame, 40044)]);
    // the ACK of PSN 40079 carries an MSN below the previous ACK's
    let j = acks.iter().position(|r| r.psn == 40079).unwrap();
    let (msn, prev_msn) = (acks[j].aeth.unwrap().1, acks[j - 1].aeth.unwrap().1);
    assert!(msn < prev_msn, "{msn} {prev_msn}");
    assert_eq!(events(&v, "msn_regression"), [(acks[j].frame, 40079)]);
    for f in v["flows"].as_array().unwrap() {
        let c = &f["conformance"];
        for (k, n) in c.as_object().unwrap() {
            if k != "ack_regression" && k != "msn_regression" {
                assert_eq!(n, 0, "{k}");
            }
        }
    }
    assert_eq!(counter(&v, "ack_regression"), 1);
    assert_eq!(counter(&v, "msn_regression"), 1);
}

#[test]
fn read_reissued_from_its_first_psn_is_read_wrong_restart() {
    let path = demo("nic_read_wrong_restart");
    let v = report(&path);
    let rows = rows(&path);
    // the READ at 9019 got its responses up to 9029 (9030 was lost before the capture
    // point), then comes again from 9019
    let reads: Vec<&Row> = rows
        .iter()
        .filter(|r| r.operation == Some(Operation::ReadRequest) && r.psn == 9019)
        .collect();
    assert!(reads.len() >= 2);
    let got: Vec<u32> = rows
        .iter()
        .filter(|r| {
            r.operation == Some(Operation::ReadResponse)
                && r.frame < reads[1].frame
                && (9019..9035).contains(&r.psn)
        })
        .map(|r| r.psn)
        .collect();
    assert!(got.contains(&9029) && !got.contains(&9030), "{got:?}");
    assert_eq!(events(&v, "read_wrong_restart"), [(reads[1].frame, 9019)]);
    only(&v, "read_wrong_restart");
}

#[test]
fn requests_after_a_fatal_nak_are_response_after_fatal_nak() {
    let path = demo("nic_fatal_nak");
    let v = report(&path);
    let rows = rows(&path);
    let nak = rows
        .iter()
        .find(|r| {
            matches!(
                r.aeth,
                Some((AethKind::Nak(NakCode::REMOTE_ACCESS_ERROR), _))
            )
        })
        .expect("a fatal NAK");
    let late = rows
        .iter()
        .find(|r| r.is_request() && r.time_ns > nak.time_ns + 1_000_000)
        .expect("a request more than 1 ms later");
    assert_eq!(
        events(&v, "response_after_fatal_nak"),
        [(late.frame, u64::from(late.psn))]
    );
    // one finding per connection, however many requests follow
    assert!(
        rows.iter()
            .filter(|r| r.is_request() && r.frame > late.frame)
            .count()
            > 1
    );
    assert_eq!(counter(&v, "response_after_fatal_nak"), 1);
    only(&v, "response_after_fatal_nak");
}

/// No scenario without a knob shows a finding (a false positive is a bug in the rule or
/// the code), whatever its network faults.
#[test]
fn no_conformance_findings_without_a_knob() {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("generator/scenarios")).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name.starts_with("nic_") {
            continue;
        }
        // one capture, or the two of a scenario captured at both points
        let captures = match demo(&name) {
            one if one.exists() => vec![one],
            _ => ["tx", "rx"].map(|t| demo(&format!("{name}.{t}"))).to_vec(),
        };
        for capture in captures {
            let v = report(&capture);
            for f in v["flows"].as_array().unwrap() {
                for (k, c) in f["conformance"].as_object().unwrap() {
                    assert_eq!(c, 0, "{name}: {k} in flow {}", f["id"]);
                }
            }
        }
        n += 1;
    }
    assert!(n >= 15, "{n}");
}

#[test]
fn no_conformance_findings_on_real_captures() {
    let dir = root().join("../shared/captures/real");
    if !dir.is_dir() {
        eprintln!("skipping: {} is absent", dir.display());
        return;
    }
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "pcap") {
            continue;
        }
        let v = report(&path);
        for f in v["flows"].as_array().unwrap() {
            for (k, c) in f["conformance"].as_object().unwrap() {
                assert_eq!(c, 0, "{}: {k} in flow {}", path.display(), f["id"]);
            }
        }
        n += 1;
    }
    assert!(n >= 10, "{n}");
}

fn exit_code(args: &[&str]) -> Option<i32> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .unwrap();
    out.status.code()
}

/// §6.6: `loss` does not fire on gaps that were only capture drops; `capture` does;
/// `conformance` fires on a knob's capture and not on a clean one.
#[test]
fn fail_on_groups() {
    let p = |n: &str| demo(n).to_string_lossy().into_owned();
    let drops = p("capture_drop");
    let v = report(&demo("capture_drop"));
    let flows = v["flows"].as_array().unwrap();
    assert!(flows.iter().any(|f| f["psn_gaps"].as_u64().unwrap() > 0));
    assert!(flows.iter().all(|f| f["lost"] == 0));
    assert_eq!(
        exit_code(&["analyze", "-q", "--fail-on", "loss", &drops]),
        Some(0)
    );
    assert_eq!(
        exit_code(&["analyze", "-q", "--fail-on", "capture", &drops]),
        Some(1)
    );
    // a NAKed loss
    let gbn = p("loss_gbn");
    assert_eq!(
        exit_code(&["analyze", "-q", "--fail-on", "loss", &gbn]),
        Some(1)
    );
    assert_eq!(
        exit_code(&["analyze", "-q", "--fail-on", "capture", &gbn]),
        Some(0)
    );
    for name in [
        "nic_wrong_resend",
        "nic_double_nak",
        "nic_ack_regression",
        "nic_read_wrong_restart",
        "nic_fatal_nak",
    ] {
        assert_eq!(
            exit_code(&["analyze", "-q", "--fail-on", "conformance", &p(name)]),
            Some(1),
            "{name}"
        );
    }
    let clean = p("clean_write");
    assert_eq!(
        exit_code(&["analyze", "-q", "--fail-on", "conformance", &clean]),
        Some(0)
    );
}

#[test]
fn help_lists_every_kind() {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for kind in Kind::ALL {
        assert!(help.contains(kind.name()), "{} missing", kind.name());
    }
    for group in ["loss", "nak", "pfc", "integrity", "capture", "conformance"] {
        assert!(help.contains(group), "group {group} missing");
    }
}

/// The frames `dissect -Y <mark>` shows.
fn marked(path: &Path, filter: &str) -> Vec<u64> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "-f", "jsonl", "-Y", filter])
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["frame"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// §5's `not_captured` and `conformance` marks select the frames of those events.
#[test]
fn not_captured_and_conformance_marks() {
    let drops = demo("capture_drop");
    let v = report(&drops);
    let mut want: Vec<u64> = events(&v, "not_captured").iter().map(|e| e.0).collect();
    want.dedup();
    assert!(!want.is_empty());
    assert_eq!(marked(&drops, "not_captured"), want);
    assert_eq!(marked(&drops, "conformance"), Vec::<u64>::new());
    let nak = demo("nic_double_nak");
    let v = report(&nak);
    let want: Vec<u64> = events(&v, "repeated_nak").iter().map(|e| e.0).collect();
    assert_eq!(want.len(), 1);
    assert_eq!(marked(&nak, "conformance"), want);
    assert_eq!(marked(&nak, "conformance && !not_captured"), want);
}
