//! Native InfiniBand (capture-formats.md §1, §2): the two worked vectors of §1.5 in ERF
//! records (link type 197, as ibdump writes them) and as raw `LINKTYPE_INFINIBAND` (247)
//! packets: decoded as tshark decodes them, both CRCs verified, Wireshark's field names in
//! filters (in tshark's byte order), flows keyed by LIDs or GIDs.

use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{jsonl, write_pcap_link as pcap};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// §1.5 vector A: LNH 2, an RC ACKNOWLEDGE, 30 bytes.
fn vector_a() -> Vec<u8> {
    hex("00020012 0007000c 1140ffff 00000029 005e0c45 00000001 fc272caf 8fa5")
}

/// Vector B: LNH 3, a UD SEND ONLY carrying an IPoIB ARP, 134 bytes.
fn vector_b() -> Vec<u8> {
    hex("00 03 c0 00 00 21 00 06 60 00 00 00 00 54 1b 00
         fe 80 00 00 00 00 00 00 08 c0 eb 03 00 ea 51 2e
         ff 12 40 1b ff ff 00 00 00 00 00 00 ff ff ff ff
         64 40 ff ff 00 ff ff ff 00 07 61 28 00 00 0b 1b
         00 00 01 ce 08 06 00 00 00 20 08 00 14 04 00 01
         20 00 01 ce fe 80 00 00 00 00 00 00 08 c0 eb 03
         00 ea 51 2e ac 10 f2 33 00 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00 00 00 00 00 ac 10 f2 4b
         55 67 46 f7 e6 b7")
}

#[test]
fn vectors_decode_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    for link in [197, 247] {
        let p = dir.path().join(format!("v{link}.pcap"));
        pcap(&p, link, &[vector_a(), vector_b()]);
        let f = jsonl(&p, &[]);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0]["len"], 30,
            "ERF's header is a pseudo-header, as in tshark"
        );
        assert_eq!(f[0]["lrh"]["lnh"], 2);
        assert_eq!(f[0]["lrh"]["dlid"], 0x12);
        assert_eq!(f[0]["lrh"]["slid"], 0x0c);
        assert_eq!(f[0]["bth"]["opcode_name"], "RC_ACKNOWLEDGE");
        assert_eq!(f[0]["icrc"]["value"], 0xAF2C_27FCu32);
        assert_eq!(f[0]["icrc"]["valid"], true);
        assert_eq!(f[0]["vcrc"]["value"], 0xA58F);
        assert_eq!(f[0]["vcrc"]["valid"], true);
        assert_eq!(f[1]["lrh"]["lnh"], 3);
        assert_eq!(f[1]["grh"]["sgid"], "fe80::8c0:eb03:ea:512e");
        assert_eq!(f[1]["deth"]["qkey"], 0xb1b);
        assert_eq!(f[1]["icrc"]["value"], 0xF746_6755u32);
        assert_eq!(f[1]["icrc"]["valid"], true);
        assert_eq!(f[1]["vcrc"]["valid"], true);
        assert_eq!(f[0]["errors"], serde_json::json!([]), "{}", f[0]);
        assert_eq!(f[1]["errors"], serde_json::json!([]), "{}", f[1]);
        // Wireshark's names, in tshark's byte order (wire bytes read big-endian)
        let hits = jsonl(&p, &["-Y", "infiniband.invariant.crc == 0xfc272caf"]);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0]["frame"], 1);
        let hits = jsonl(&p, &["-Y", "infiniband.variant.crc == 0xe6b7"]);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0]["frame"], 2);
        let hits = jsonl(
            &p,
            &[
                "-Y",
                "infiniband.lrh.dlid == 0x12 && infiniband.lrh.lnh == 2",
            ],
        );
        assert_eq!(hits.len(), 1);
    }
}

#[test]
fn bad_crcs_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = vector_a();
    a[17] ^= 0x01; // the AETH MSN: covered by both CRCs
    let mut b = vector_b();
    b[133] ^= 0x80; // the VCRC itself
    let mut c = vector_a();
    c[0] |= 0x30; // VL 3: masked by the ICRC, covered by the VCRC
    let p = dir.path().join("bad.pcap");
    pcap(&p, 197, &[a, b, c]);
    let f = jsonl(&p, &[]);
    assert_eq!(f[0]["icrc"]["valid"], false);
    assert_eq!(f[0]["vcrc"]["valid"], false);
    assert_eq!(f[1]["icrc"]["valid"], true);
    assert_eq!(f[1]["vcrc"]["valid"], false);
    assert_eq!(f[2]["icrc"]["valid"], true);
    assert_eq!(f[2]["vcrc"]["valid"], false);
    // analyze counts a corrupted packet whichever CRC failed, and native IB in ib_frames
    let out = Command::new(bin())
        .args(["analyze", "-f", "json", "-q", "--icrc", "trust"])
        .arg(&p)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["capture"]["ib_frames"], 3);
    assert_eq!(v["capture"]["roce_frames"], 0);
    assert_eq!(v["capture"]["icrc_errors"], 3);
}

#[test]
fn flows_are_keyed_by_lids_or_gids() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.pcap");
    pcap(&p, 197, &[vector_a(), vector_b()]);
    let out = Command::new(bin())
        .args(["analyze", "-f", "json", "-q"])
        .arg(&p)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let flows = v["flows"].as_array().unwrap();
    let keys: Vec<(String, String)> = flows
        .iter()
        .map(|f| {
            (
                f["src"].as_str().unwrap().to_owned(),
                f["dst"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        keys.contains(&("lid:0x000c".into(), "lid:0x0012".into())),
        "{keys:?}"
    );
    assert!(
        keys.contains(&(
            "fe80::8c0:eb03:ea:512e".into(),
            "ff12:401b:ffff::ffff:ffff".into()
        )),
        "{keys:?}"
    );
    assert_eq!(v["capture"]["ib_frames"], 2);
}

/// tshark reads ERF (it cannot read 247): every LRH, GRH, BTH, DETH, AETH and CRC field it
/// shows for the vectors, we show the same.
#[test]
fn fields_agree_with_tshark() {
    if Command::new("tshark").arg("--version").output().is_err() {
        println!("notice: tshark not installed, differential test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.pcap");
    pcap(&p, 197, &[vector_a(), vector_b()]);
    let fields = [
        ("frame.len", "len"),
        ("erf.types.type", "erf/type"),
        ("erf.wlen", "erf/wlen"),
        ("erf.rlen", "erf/rlen"),
        ("infiniband.lrh.vl", "lrh/vl"),
        ("infiniband.lrh.lver", "lrh/lver"),
        ("infiniband.lrh.sl", "lrh/sl"),
        ("infiniband.lrh.lnh", "lrh/lnh"),
        ("infiniband.lrh.dlid", "lrh/dlid"),
        ("infiniband.lrh.pktlen", "lrh/pktlen"),
        ("infiniband.lrh.slid", "lrh/slid"),
        ("infiniband.grh.sgid", "grh/sgid"),
        ("infiniband.grh.dgid", "grh/dgid"),
        ("infiniband.grh.nxthdr", "grh/next"),
        ("infiniband.bth.opcode", "bth/opcode"),
        ("infiniband.bth.p_key", "bth/pkey"),
        ("infiniband.bth.destqp", "bth/destqp"),
        ("infiniband.bth.psn", "bth/psn"),
        ("infiniband.deth.q_key", "deth/qkey"),
        ("infiniband.deth.srcqp", "deth/srcqp"),
        ("infiniband.aeth.msn", "aeth/msn"),
        ("erf.flags", "erf/flags"),
        // vector B's UD SEND carries IP over InfiniBand (an ARP)
        ("ipoib.type", "ipoib/type"),
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(&p).args(["-T", "fields"]);
    for (f, _) in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.stderr(Stdio::null()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let ours = jsonl(&p, &[]);
    let mut compared = 0;
    for (row, frame) in text.lines().zip(&ours) {
        for (col, (tf, path)) in row.split('\t').zip(fields) {
            if col.is_empty() {
                continue;
            }
            let mut v = frame;
            for seg in path.split('/') {
                v = &v[seg];
            }
            let mine = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let theirs = match col.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap().to_string(),
                None => col.to_owned(),
            };
            assert_eq!(theirs, mine, "frame {}: {tf}", frame["frame"]);
            compared += 1;
        }
    }
    // tshark's wire-order ICRC equals the filter field's
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&p)
        .args(["-T", "fields", "-e", "infiniband.invariant.crc"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let crcs: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(crcs, ["0xfc272caf", "0x556746f7"]);
    assert!(compared >= 35, "{compared}");
}

/// The bare words: `ib` for native packets, `rocev1` only for RoCEv1 (a native packet has a
/// GRH and a BTH too).
#[test]
fn bare_words_tell_native_from_rocev1() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.pcap");
    pcap(&p, 197, &[vector_a(), vector_b()]);
    assert_eq!(jsonl(&p, &["-Y", "ib"]).len(), 2);
    assert_eq!(jsonl(&p, &["-Y", "rocev1"]).len(), 0);
    assert_eq!(jsonl(&p, &["-Y", "ib && grh"]).len(), 1);
}
