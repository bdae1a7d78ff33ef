//! The raw-IP and loopback link types (capture-formats.md §5: RAW 101 and its platform
//! numbers 12/14, IPV4 228, IPV6 229, NULL 0, LOOP 108, IPOIB 242): demo captures rewritten into each
//! (the Ethernet header replaced by what the link type carries) dissect like tshark reads
//! them and analyze exactly like the Ethernet original.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocescope::capture::CaptureReader;
use serde_json::Value;

mod common;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

/// What one link type puts before the IP packet.
#[derive(Debug, Clone, Copy)]
enum Prefix {
    None,
    /// BSD address family, little-endian (a NULL capture made on x86).
    FamilyLe,
    /// Network order (LOOP, or NULL from a big-endian host).
    FamilyBe,
    /// IPOIB (242): a 40-byte pseudo GRH (source QPN, GIDs), then the 4-byte IPoIB header.
    Ipoib,
}

/// Rewrite `src` (an Ethernet pcap of untagged IPv4/IPv6 frames) as link type `link`.
fn rewrite(src: &Path, dst: &Path, link: u32, prefix: Prefix) -> usize {
    let mut reader = CaptureReader::open(src).unwrap();
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes()); // nanosecond pcap
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&link.to_le_bytes());
    let mut n = 0;
    while let Some(frame) = reader.next_frame() {
        let frame = frame.unwrap();
        let data = frame.data;
        let ethertype = u16::from_be_bytes([data[12], data[13]]);
        let family: u32 = match ethertype {
            0x0800 => 2,
            0x86DD => 28,
            other => panic!("{}: EtherType {other:#x}", src.display()),
        };
        let mut body = Vec::new();
        match prefix {
            Prefix::None => {}
            Prefix::FamilyLe => body.extend_from_slice(&family.to_le_bytes()),
            Prefix::FamilyBe => body.extend_from_slice(&family.to_be_bytes()),
            Prefix::Ipoib => {
                // version 6, payload length, next header 0x1B, hop limit, SGID, DGID
                let mut grh = vec![0x60, 0, 0, 0];
                let pay = u16::try_from(4 + data.len() - 14).unwrap_or(u16::MAX);
                grh.extend_from_slice(&pay.to_be_bytes());
                grh.extend_from_slice(&[0x1B, 64]);
                grh.extend_from_slice(&[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1]);
                grh.extend_from_slice(&[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 2]);
                body.extend_from_slice(&grh);
                body.extend_from_slice(&ethertype.to_be_bytes());
                body.extend_from_slice(&[0, 0]);
            }
        }
        body.extend_from_slice(&data[14..]);
        let secs = u32::try_from(frame.time_ns / 1_000_000_000).unwrap();
        let nanos = u32::try_from(frame.time_ns % 1_000_000_000).unwrap();
        let len = u32::try_from(body.len()).unwrap();
        let orig = frame.orig_len - 14 + (len - (frame.caplen - 14));
        for v in [secs, nanos, len, orig] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&body);
        n += 1;
    }
    std::fs::write(dst, out).unwrap();
    n
}

fn analyze(path: &Path) -> Value {
    let out = Command::new(bin())
        .args(["analyze", "-f", "json", "-q"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The cases: (name, link type, prefix, source capture).
fn cases() -> Vec<(&'static str, u32, Prefix, &'static str)> {
    vec![
        ("raw", 101, Prefix::None, "clean_write"),
        ("raw_v6", 101, Prefix::None, "ipv6"),
        ("raw_dlt12", 12, Prefix::None, "clean_write"),
        ("raw_dlt14", 14, Prefix::None, "loss_gbn"),
        ("ipv4", 228, Prefix::None, "loss_gbn"),
        ("ipv6", 229, Prefix::None, "ipv6"),
        ("null_le", 0, Prefix::FamilyLe, "loss_gbn"),
        ("null_be", 0, Prefix::FamilyBe, "ipv6"),
        ("loop", 108, Prefix::FamilyBe, "clean_write"),
        ("ipoib", 242, Prefix::Ipoib, "loss_gbn"),
        ("ipoib_v6", 242, Prefix::Ipoib, "ipv6"),
    ]
}

fn rewritten(dir: &Path) -> Vec<(&'static str, PathBuf, PathBuf)> {
    cases()
        .into_iter()
        .map(|(name, link, prefix, src)| {
            let src = root().join("captures").join(format!("{src}.pcap"));
            let dst = dir.join(format!("{name}.pcap"));
            assert!(rewrite(&src, &dst, link, prefix) > 100);
            (name, src, dst)
        })
        .collect()
}

/// The analysis does not depend on the link layer: every flow and capture counter but the
/// byte counts equals the Ethernet original's.
#[test]
fn analysis_equals_the_ethernet_original() {
    let dir = tempfile::tempdir().unwrap();
    for (name, src, dst) in rewritten(dir.path()) {
        let (a, b) = (analyze(&src), analyze(&dst));
        let mut fa = a["flows"].clone();
        let mut fb = b["flows"].clone();
        for f in fa
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .chain(fb.as_array_mut().unwrap().iter_mut())
        {
            f.as_object_mut().unwrap().remove("bytes");
        }
        assert_eq!(fa, fb, "{name}");
        assert_eq!(a["events"], b["events"], "{name}");
        for k in ["frames", "roce_frames", "icrc_errors", "truncated_frames"] {
            assert_eq!(a["capture"][k], b["capture"][k], "{name}: {k}");
        }
        assert_eq!(b["capture"]["malformed_frames"], 0, "{name}");
    }
}

/// IP, UDP and BTH fields as tshark reads them from the same files.
#[test]
fn fields_agree_with_tshark() {
    if Command::new("tshark").arg("--version").output().is_err() {
        println!("notice: tshark not installed, differential test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fields = [
        ("ip.src", "ipv4/src"),
        ("ipv6.src", "ipv6/src"),
        ("udp.dstport", "udp/dstport"),
        ("infiniband.bth.opcode", "bth/opcode"),
        ("infiniband.bth.destqp", "bth/destqp"),
        ("infiniband.bth.psn", "bth/psn"),
        ("ipoib.type", "ipoib/type"),
    ];
    let mut compared = 0;
    for (name, _, dst) in rewritten(dir.path()) {
        let ours = common::jsonl(&dst, &[]);
        let mut cmd = Command::new("tshark");
        cmd.arg("-r").arg(&dst).args(["-T", "fields"]);
        for (f, _) in fields {
            cmd.args(["-e", f]);
        }
        let out = cmd.stderr(Stdio::null()).output().unwrap();
        assert!(out.status.success(), "tshark on {name}");
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), ours.len(), "{name}");
        for (row, frame) in rows.iter().zip(&ours) {
            for (col, (tf, path)) in row.split('\t').zip(fields) {
                let mut v = frame;
                for seg in path.split('/') {
                    v = &v[seg];
                }
                let mine = match v {
                    Value::Null => String::new(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let theirs = match col.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap().to_string(),
                    None => col.to_owned(),
                };
                assert_eq!(theirs, mine, "{name} frame {}: {tf}", frame["frame"]);
                compared += 1;
            }
        }
    }
    assert!(compared > 5000, "{compared}");
}

/// Every frame of each rewritten file decodes: no `?` summary lines, and the link type is
/// named in `dissect`'s verbose tree.
#[test]
fn text_lines_decode() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _, dst) in rewritten(dir.path()) {
        let out = Command::new(bin())
            .args(["dissect"])
            .arg(&dst)
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines()
                .all(|l| l.contains("RoCEv2") && !l.contains("unsupported")),
            "{name}: {}",
            text.lines().find(|l| !l.contains("RoCEv2")).unwrap_or("")
        );
    }
}
