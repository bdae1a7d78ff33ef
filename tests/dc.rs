//! NVIDIA DC on the RD opcode range (interfaces.md §3, capture-formats.md §3): decoded in
//! tshark 4.0's layout by default, as IBA RD with `--rd-as rd`; DC flows counted, not
//! sequenced.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::jsonl;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

fn real(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/captures/real")
        .join(name);
    p.exists().then_some(p)
}

/// The real DC capture (capture-formats.md §3.5): a WRITE's RETH length is the 8 bytes it
/// carries (not the 4 GB an RD reading makes of DC's bytes), the DC header holds the
/// sender's QPN in bytes 1-3, and the ACKs are `DC_ACKNOWLEDGE` with the AETH at BTH + 20.
#[test]
fn real_dc_capture_in_tsharks_layout() {
    let Some(p) = real("sniffer-dc-vendor-opcodes.pcap") else {
        return;
    };
    let f = jsonl(&p, &[]);
    let writes: Vec<&Value> = f
        .iter()
        .filter(|x| x["bth"]["opcode_name"] == "DC_RDMA_WRITE_ONLY")
        .collect();
    assert!(!writes.is_empty());
    for w in &writes {
        assert_eq!(w["reth"]["dmalen"], 8, "{w}");
        assert_eq!(w["payload_len"], 8);
        assert_eq!(w["dc"]["sid_owner"], true);
        // bytes 1-3: near the DCI's QPN 0x009035 (capture-formats.md §3.5)
        assert_eq!(w["dc"]["sid"].as_u64().unwrap() >> 8, 0x90, "{w}");
        assert_eq!(w["deth"]["srcqp"], 0);
    }
    let acks: Vec<&Value> = f
        .iter()
        .filter(|x| x["bth"]["opcode_name"] == "DC_ACKNOWLEDGE")
        .collect();
    assert!(!acks.is_empty());
    for a in &acks {
        assert!(a.get("rdeth").is_none(), "tshark parses only the AETH: {a}");
        assert_eq!(a["dc"]["sid_owner"], false);
    }
    // --rd-as rd reads the same bytes as IBA RD: the RDETH and DETH right after the BTH
    let rd = jsonl(&p, &["--rd-as", "rd"]);
    let w = rd
        .iter()
        .find(|x| x["bth"]["opcode_name"] == "RD_RDMA_WRITE_ONLY")
        .unwrap();
    assert!(w.get("dc").is_none());
    assert_ne!(w["reth"]["dmalen"], 8);
    // analyze counts DC flows, without sequencing them
    let out = Command::new(bin())
        .args(["analyze", "-f", "json", "-q"])
        .arg(&p)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for fl in v["flows"].as_array().unwrap() {
        assert_eq!(fl["transport"], "DC", "{fl}");
        assert_eq!(fl["psn_gaps"], 0);
    }
}

/// The generated DC capture: every opcode named DC_*, the layout's headers present, and the
/// filters reach the DC fields.
#[test]
fn generated_dc_capture() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/dc.pcap");
    let f = jsonl(&p, &[]);
    assert!(f.len() > 100);
    for x in &f {
        let name = x["bth"]["opcode_name"].as_str().unwrap();
        assert!(name.starts_with("DC_"), "{name}");
        assert!(x.get("dc").is_some());
        assert_eq!(x["icrc"]["valid"], true);
    }
    let reads = jsonl(&p, &["-Y", "dc && opcode == DC_RDMA_READ_REQUEST"]);
    assert!(!reads.is_empty());
    let owners = jsonl(&p, &["-Y", "dc.sid_owner"]);
    assert!(owners.iter().all(|x| x["ipv4"]["src"] == "10.0.18.1"));
}
