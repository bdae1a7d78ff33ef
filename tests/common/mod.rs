//! Helpers shared by integration tests: writing hand-made frames as a pcap, reading one,
//! running `rocescope dissect -f jsonl` on it.

use std::path::Path;
use std::process::Command;

use rocescope::capture::CaptureReader;
use serde_json::Value;

/// A little-endian pcap global header (version 2.4, snaplen 65535): nanosecond or
/// microsecond timestamps, link type `link`.
#[allow(dead_code)]
pub fn pcap_header(nanos: bool, link: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
    out.extend_from_slice(&magic.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&link.to_le_bytes());
    out
}

#[allow(dead_code)]
/// A nanosecond Ethernet pcap of these frames (1 µs apart).
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = pcap_header(true, 1);
    for (i, f) in frames.iter().enumerate() {
        let len = u32::try_from(f.len()).unwrap();
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&(u32::try_from(i).unwrap() * 1000).to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

#[allow(dead_code)]
/// Every frame's captured bytes.
pub fn frames_of(path: &Path) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(f) = r.next_frame() {
        v.push(f.unwrap().data.to_vec());
    }
    v
}

/// A microsecond pcap of `packets` with link type `link`, one second apart; for ERF (197)
/// each packet gets an ibdump record header (type 21 InfiniBand, flags 4, rlen = 16 + wlen).
#[allow(dead_code)]
pub fn write_pcap_link(path: &Path, link: u32, packets: &[Vec<u8>]) {
    let mut out = pcap_header(false, link);
    for (i, p) in packets.iter().enumerate() {
        let secs = 1_700_000_000 + u32::try_from(i).unwrap();
        let mut rec = Vec::new();
        if link == 197 {
            rec.extend_from_slice(&(u64::from(secs) << 32).to_le_bytes());
            let wlen = u16::try_from(p.len()).unwrap();
            rec.extend_from_slice(&[21, 4]);
            rec.extend_from_slice(&(16 + wlen).to_be_bytes());
            rec.extend_from_slice(&0u16.to_be_bytes());
            rec.extend_from_slice(&wlen.to_be_bytes());
        }
        rec.extend_from_slice(p);
        let n = u32::try_from(rec.len()).unwrap();
        for v in [secs, 0, n, n] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&rec);
    }
    std::fs::write(path, out).unwrap();
}

/// `rocescope dissect -f jsonl ARGS PATH`, one JSON value per frame (the run must succeed).
#[allow(dead_code)]
pub fn jsonl(path: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "-f", "jsonl"])
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every key of `truth` must be in `got` with the same value (objects compared recursively).
#[allow(dead_code)]
pub fn compare(at: &str, truth: &Value, got: &Value, diffs: &mut Vec<String>) {
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

#[allow(dead_code)]
pub fn find<'v>(rows: &'v [Value], row: &Value, keys: &[&str]) -> Option<&'v Value> {
    rows.iter().find(|r| keys.iter().all(|k| r[k] == row[k]))
}

/// Every key the truth states, for the capture, each flow, each PFC row and each
/// `tcp_bth` direction.
#[allow(dead_code)]
pub fn check(name: &str, got: &Value, truth: &Value, diffs: &mut Vec<String>) {
    compare(
        &format!("{name}.capture"),
        &truth["capture"],
        &got["capture"],
        diffs,
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
            Some(gf) => compare(&at, tf, gf, diffs),
            None => diffs.push(format!("{at}: not found")),
        }
    }
    if let Some(rows) = truth.get("tcp_bth").and_then(Value::as_array) {
        let got_rows = got["tcp_bth"].as_array().unwrap();
        for tr in rows {
            let at = format!(
                "{name}.tcp_bth[{}:{} > {}:{}]",
                tr["src"], tr["srcport"], tr["dst"], tr["dstport"]
            );
            match find(got_rows, tr, &["src", "srcport", "dst", "dstport"]) {
                Some(gr) => compare(&at, tr, gr, diffs),
                None => diffs.push(format!("{at}: not found")),
            }
        }
    }
    let got_pfc = got["pfc"].as_array().unwrap();
    for tp in truth["pfc"].as_array().unwrap() {
        let at = format!("{name}.pfc[{} p{}]", tp["src_mac"], tp["priority"]);
        match find(got_pfc, tp, &["src_mac", "priority"]) {
            Some(gp) => compare(&at, tp, gp, diffs),
            None => diffs.push(format!("{at}: not found")),
        }
    }
}
