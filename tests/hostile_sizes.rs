//! A record or block that claims gigabytes must not make the reader allocate them (issue 15).
//!
//! Each hostile capture is tiny; the binary reads it and must fail in one line, and the peak
//! resident memory of the children (getrusage, RUSAGE_CHILDREN: the largest of this process's
//! waited-for children, so this file holds one test) stays small. The reader refuses records
//! over 64 MiB outright, and grows its buffer only as bytes arrive, so a claim just under that
//! costs no more than a claim of a few bytes.

use std::path::Path;
use std::process::Command;

use nix::sys::resource::{UsageWho, getrusage};

mod common;

/// Peak RSS allowed for any run (KiB): the binary's own baseline is about 10 MiB.
const MAX_RSS_KIB: i64 = 48 << 10;

fn pcap(link: u32, caplen: u32) -> Vec<u8> {
    let mut out = common::pcap_header(false, link);
    // one honest 60-byte record, then the hostile one and a little data
    for (len, data) in [(60u32, vec![0u8; 60]), (caplen, vec![0xab; 100])] {
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&data);
    }
    out
}

fn pcapng(block_len: u32) -> Vec<u8> {
    let mut out = Vec::new();
    // SHB
    out.extend_from_slice(&0x0A0D_0D0Au32.to_le_bytes());
    out.extend_from_slice(&28u32.to_le_bytes());
    out.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&[0xff; 8]);
    out.extend_from_slice(&28u32.to_le_bytes());
    // IDB
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&20u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&20u32.to_le_bytes());
    // an EPB that claims `block_len`
    out.extend_from_slice(&6u32.to_le_bytes());
    out.extend_from_slice(&block_len.to_le_bytes());
    out.extend_from_slice(&[0x11; 100]);
    out
}

fn run(path: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?} {}: {err}",
        path.display()
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
    let peak = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    assert!(
        peak < MAX_RSS_KIB,
        "{args:?} {}: peak RSS {peak} KiB ({err})",
        path.display()
    );
}

#[test]
fn records_and_blocks_claiming_gigabytes_are_not_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("pcap-4g.pcap", pcap(1, 0xFFFF_FFF0)),
        ("pcap-64m.pcap", pcap(1, (64 << 20) - 16)),
        ("pcap-erf-4g.pcap", pcap(197, u32::MAX)),
        ("ng-4g.pcapng", pcapng(0xFFFF_FFF0)),
        ("ng-64m.pcapng", pcapng(64 << 20)),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        for args in [
            &["dissect", "-f", "jsonl"][..],
            &["analyze", "-f", "json"],
            &["dissect", "-f", "text"],
        ] {
            run(&path, args);
        }
    }
}
