//! The malformed cases of interfaces.md §2 and §6.5, through the binary: a UDP length past
//! the IP payload, a PadCnt larger than the payload, an unknown opcode on a known transport.
//! Each keeps every layer that parsed (the lax view), says what disagrees with both numbers,
//! and has no ICRC verdict (null value, computed and valid); `analyze` counts it malformed
//! and names it in an event with the same text.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{frames_of, write_pcap};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

fn clean_write() -> Vec<Vec<u8>> {
    frames_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/clean_write.pcap"))
}

fn one_frame(dir: &Path, name: &str, frame: Vec<u8>) -> (Value, Value, String) {
    let pcap = dir.join(format!("{name}.pcap"));
    write_pcap(&pcap, &[frame]);
    let out = Command::new(bin())
        .args(["dissect", "-f", "jsonl"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = Command::new(bin())
        .args(["-q", "analyze", "-f", "json"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = Command::new(bin())
        .arg("dissect")
        .arg(&pcap)
        .output()
        .unwrap();
    (
        json,
        report,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The frame has no ICRC verdict and exactly this one error, and analyze says so too.
fn check(json: &Value, report: &Value, line: &str, error: &str) {
    assert_eq!(json["errors"], serde_json::json!([error]), "{json}");
    assert_eq!(
        json["icrc"],
        serde_json::json!({"value": null, "computed": null, "valid": null}),
        "{json}"
    );
    assert_eq!(json["truncated"], false);
    assert!(line.contains("[MALFORMED]"), "{line}");
    assert_eq!(report["capture"]["malformed_frames"], 1, "{report}");
    assert_eq!(report["capture"]["icrc_errors"], 0, "{report}");
    let events: Vec<&Value> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "malformed")
        .collect();
    assert_eq!(events.len(), 1, "{report}");
    assert_eq!(events[0]["detail"], error);
}

#[test]
fn udp_length_past_the_ip_payload_keeps_udp_and_the_bth() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = clean_write()[0].clone();
    // IPv4 total length 1084 - 20 = 1064 bytes of UDP; the UDP header claims 1068
    assert_eq!(u16::from_be_bytes([f[38], f[39]]), 1064);
    f[38..40].copy_from_slice(&1068u16.to_be_bytes());
    let (json, report, line) = one_frame(dir.path(), "udp", f.clone());
    check(
        &json,
        &report,
        &line,
        "malformed UDP at offset 34: length field says 1068 bytes, more than the 1064 bytes of the IP payload",
    );
    assert_eq!(json["udp"]["len"], 1068);
    assert_eq!(json["bth"]["opcode_name"], "RC_RDMA_WRITE_FIRST");
    assert_eq!(json["bth"]["psn"], 1000);
    assert_eq!(json["reth"]["dmalen"], 16384);
    // the flow is still seen (frames counted), nothing sequenced from it
    assert_eq!(report["flows"][0]["frames"], 1, "{report}");
    // tshark agrees the frame is broken
    let pcap = dir.path().join("udp.pcap");
    if let Ok(t) = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args(["-Y", "_ws.malformed || _ws.expert.severity >= error"])
        .output()
    {
        assert_eq!(String::from_utf8_lossy(&t.stdout).lines().count(), 1);
    }
}

#[test]
fn pad_count_past_the_payload_keeps_the_aeth() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = clean_write()[8].clone();
    // RC_ACKNOWLEDGE: BTH + AETH + ICRC, no payload; PadCnt 3 leaves no room
    assert_eq!(f[42], 0x11);
    f[43] |= 0x30;
    let (json, report, line) = one_frame(dir.path(), "pad", f);
    check(
        &json,
        &report,
        &line,
        "malformed BTH at offset 42: pad count 3 larger than the 0 bytes between the headers and the ICRC",
    );
    assert_eq!(json["bth"]["padcnt"], 3);
    assert_eq!(json["aeth"]["kind"], "ack");
    assert_eq!(json["aeth"]["msn"], 0);
}

#[test]
fn unknown_opcode_on_a_known_transport_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = clean_write()[1].clone();
    // RC 0x1A: between RC's defined opcodes, none of them
    f[42] = 0x1A;
    let (json, report, line) = one_frame(dir.path(), "op", f);
    check(
        &json,
        &report,
        &line,
        "malformed BTH at offset 42: opcode 0x1a is not defined for RC",
    );
    assert_eq!(json["bth"]["opcode_name"], "UNKNOWN(0x1a)");
    assert_eq!(json["payload_len"], 1024);
    assert!(line.contains("UNKNOWN(0x1a)"), "{line}");
}
