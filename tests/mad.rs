//! Management datagrams on QP0/QP1 (interfaces.md §3): the common header of every class with
//! class, method and attribute named, on native InfiniBand (in ERF records, as ibdump writes
//! them) and on RoCEv2; the CM MADs in full on native InfiniBand too. The header fields are
//! compared with tshark's `infiniband.mad.*`; the names with the IBA tables (13.4.4-13.4.5,
//! 14.2.5, 15.2.5, 16.1.3), written out here by hand.

use std::process::{Command, Stdio};

use rocescope_dissectors::builder::{ExtReprs, L2, NetworkRepr, Policy, RoceFrame};
use rocescope_dissectors::cm::{CmAttribute, CmMessage};
use rocescope_dissectors::ethernet::{self, Address, EtherType};
use rocescope_dissectors::ib::lrh::{self, NextHeader};
use rocescope_dissectors::ib::{bth, deth};
use rocescope_dissectors::{Opcode, Psn, Qpn};

mod common;
use common::{jsonl, write_pcap_link};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

/// A 256-byte MAD: the 24-byte common header, then zeros.
fn mad(
    class: u8,
    class_version: u8,
    method: u8,
    attribute: u16,
    tid: u64,
    modifier: u32,
) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[0] = 1;
    m[1] = class;
    m[2] = class_version;
    m[3] = method;
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&attribute.to_be_bytes());
    m[20..24].copy_from_slice(&modifier.to_be_bytes());
    m
}

/// A UD SEND ONLY to `qp` carrying `payload`: native (LRH, VL15 for QP0) or RoCEv2 over IPv4.
fn packet(native: bool, qp: u32, payload: &[u8]) -> Vec<u8> {
    let network = if native {
        NetworkRepr::Ib {
            lrh: lrh::Repr {
                vl: if qp == 0 { 15 } else { 0 },
                lver: 0,
                sl: 0,
                lnh: NextHeader::IbaLocal,
                dlid: 0x0012,
                pkt_len: 0,
                slid: 0x0001,
            },
            grh: None,
        }
    } else {
        NetworkRepr::Ipv4 {
            ip: rocescope_dissectors::ipv4::Repr {
                src_addr: "10.0.0.1".parse().unwrap(),
                dst_addr: "10.0.0.2".parse().unwrap(),
                next_header: rocescope_dissectors::ipv4::IpProtocol::UDP,
                payload_len: 0,
                hop_limit: 64,
                dscp: 0,
                ecn: 0,
                ident: 0,
                dont_frag: true,
            },
            src_port: 0xC000,
            dst_port: 4791,
        }
    };
    let frame = RoceFrame {
        l2: L2::untagged(ethernet::Repr {
            dst_addr: Address([2, 0, 0, 0, 0, 2]),
            src_addr: Address([2, 0, 0, 0, 0, 1]),
            ethertype: EtherType::IPV4,
        }),
        network,
        bth: bth::Repr {
            opcode: Opcode::UD_SEND_ONLY,
            solicited_event: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: Qpn::new_masked(qp),
            ack_req: false,
            psn: Psn::new_masked(7),
        },
        exts: ExtReprs {
            deth: Some(deth::Repr {
                qkey: if qp == 0 { 0 } else { 0x8001_0000 },
                src_qp: Qpn::new_masked(qp),
            }),
            ..ExtReprs::default()
        },
        payload_len: payload.len(),
    };
    let mut buf = vec![0u8; frame.buffer_len()];
    let n = frame
        .emit(&mut buf, &Policy::default(), |p| p.copy_from_slice(payload))
        .unwrap();
    buf.truncate(n);
    buf
}

/// (class, version, method, attribute, what rocescope must call them)
const CASES: &[(u8, u8, u8, u16, &str, &str, &str)] = &[
    (0x01, 1, 0x01, 0x0011, "SMP", "Get", "NodeInfo"),
    (
        0x81,
        1,
        0x81,
        0x0015,
        "SMP (directed route)",
        "GetResp",
        "PortInfo",
    ),
    (0x03, 2, 0x12, 0x0035, "SA", "GetTable", "PathRecord"),
    (
        0x03,
        2,
        0x92,
        0x0038,
        "SA",
        "GetTableResp",
        "MCMemberRecord",
    ),
    (0x04, 1, 0x01, 0x0012, "PerfMgt", "Get", "PortCounters"),
    (
        0x04,
        1,
        0x81,
        0x001D,
        "PerfMgt",
        "GetResp",
        "PortCountersExtended",
    ),
    (0x06, 1, 0x01, 0x0001, "DevMgt", "Get", "ClassPortInfo"),
    (0x21, 2, 0x02, 0x0042, "CC", "Set", "Unknown"),
];

fn mads() -> Vec<(u32, Vec<u8>)> {
    CASES
        .iter()
        .enumerate()
        .map(|(i, &(class, version, method, attr, ..))| {
            // SMPs go to QP0, every other class to QP1
            let qp = u32::from(!matches!(class, 0x01 | 0x81));
            let tid = 0x1122_3344_0000_0000 | u64::try_from(i).unwrap();
            (
                qp,
                mad(
                    class,
                    version,
                    method,
                    attr,
                    tid,
                    0x10 + u32::try_from(i).unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn every_class_is_named_and_agrees_with_tshark() {
    let dir = tempfile::tempdir().unwrap();
    for native in [true, false] {
        let packets: Vec<Vec<u8>> = mads()
            .iter()
            .map(|(qp, m)| packet(native, *qp, m))
            .collect();
        let p = dir.path().join(format!("mad-{native}.pcap"));
        write_pcap_link(&p, if native { 197 } else { 1 }, &packets);
        let ours = jsonl(&p, &[]);
        assert_eq!(ours.len(), CASES.len());
        for (f, &(class, version, method, attr, class_name, method_name, attr_name)) in
            ours.iter().zip(CASES)
        {
            let m = &f["mad"];
            assert_eq!(m["base_version"], 1, "{f}");
            assert_eq!(m["mgmt_class"], class, "{f}");
            assert_eq!(m["class_name"], class_name, "{f}");
            assert_eq!(m["class_version"], version, "{f}");
            assert_eq!(m["method"], method, "{f}");
            assert_eq!(m["method_name"], method_name, "{f}");
            assert_eq!(m["attribute_id"], attr, "{f}");
            assert_eq!(m["attribute_name"], attr_name, "{f}");
            assert_eq!(f["icrc"]["valid"], true, "{f}");
            if native {
                assert_eq!(f["vcrc"]["valid"], true, "{f}");
            }
            assert!(f.get("cm").is_none(), "{f}");
        }
        // the text line names the class, method and attribute
        let out = Command::new(bin()).arg("dissect").arg(&p).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let first = text.lines().next().unwrap();
        assert!(first.contains(" MAD "), "{first}");
        assert!(
            first.contains("SMP Get(NodeInfo) TID=0x1122334400000000"),
            "{first}"
        );
        // filters: the bare word, the JSON path and tshark's names
        for (filter, n) in [
            ("mad", CASES.len()),
            ("mad.class_name == \"SA\"", 2),
            ("infiniband.mad.mgmtclass == 0x04", 2),
            ("infiniband.mad.attributeid == 0x0035", 1),
            ("infiniband.mad.method == 0x81", 2),
        ] {
            let out = Command::new(bin())
                .args(["dissect", "-Y", filter])
                .arg(&p)
                .output()
                .unwrap();
            assert!(out.status.success(), "{filter}: {out:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).lines().count(),
                n,
                "{filter}"
            );
        }

        if Command::new("tshark").arg("--version").output().is_err() {
            eprintln!("mad: tshark not installed, comparison skipped");
            continue;
        }
        let fields = [
            ("infiniband.mad.baseversion", "base_version"),
            ("infiniband.mad.mgmtclass", "mgmt_class"),
            ("infiniband.mad.classversion", "class_version"),
            ("infiniband.mad.method", "method"),
            ("infiniband.mad.status", "status"),
            ("infiniband.mad.transactionid", "tid"),
            ("infiniband.mad.attributeid", "attribute_id"),
            ("infiniband.mad.attributemodifier", "attribute_modifier"),
        ];
        let mut cmd = Command::new("tshark");
        cmd.arg("-r")
            .arg(&p)
            .args(["-T", "fields", "-E", "occurrence=f"]);
        for (f, _) in fields {
            cmd.args(["-e", f]);
        }
        let out = cmd.stderr(Stdio::null()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut compared = 0;
        for (row, f) in text.lines().zip(&ours) {
            for (col, (tf, key)) in row.split('\t').zip(fields) {
                assert!(
                    !col.is_empty(),
                    "tshark has no {tf} in frame {}",
                    f["frame"]
                );
                let theirs = match col.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => col.parse().unwrap(),
                };
                assert_eq!(
                    Some(theirs),
                    f["mad"][key].as_u64(),
                    "frame {}: {tf}",
                    f["frame"]
                );
                compared += 1;
            }
        }
        assert_eq!(compared, fields.len() * CASES.len(), "native {native}");
    }
}

/// A CM ConnectRequest on native InfiniBand is decoded in full, as on RoCE.
#[test]
fn cm_on_native_infiniband() {
    let dir = tempfile::tempdir().unwrap();
    let req = CmMessage {
        local_comm_id: 0x1234,
        local_qpn: Some(Qpn::new_masked(0x4242)),
        local_eecn: Some(0),
        starting_psn: Some(Psn::new_masked(100)),
        pkey: Some(0xFFFF),
        path_mtu_code: Some(5),
        path_mtu: Some(4096),
        transport_service_type: Some(0),
        retry_count: Some(7),
        rnr_retry_count: Some(7),
        responder_resources: Some(1),
        initiator_depth: Some(1),
        primary_local_lid: Some(0x0001),
        primary_remote_lid: Some(0x0012),
        ..CmMessage::new(CmAttribute::CONNECT_REQUEST, 0x77)
    };
    let bytes = req.to_bytes();
    let p = dir.path().join("cm.pcap");
    write_pcap_link(&p, 197, &[packet(true, 1, &bytes)]);
    let f = &jsonl(&p, &[])[0];
    assert_eq!(f["cm"]["attribute"], "ConnectRequest", "{f}");
    assert_eq!(f["cm"]["local_qpn"], 0x4242, "{f}");
    assert_eq!(f["cm"]["starting_psn"], 100, "{f}");
    assert_eq!(f["mad"]["class_name"], "CM", "{f}");
    assert_eq!(f["mad"]["attribute_name"], "ConnectRequest", "{f}");
    assert!(f.get("lrh").is_some(), "{f}");
    let out = Command::new(bin()).arg("dissect").arg(&p).output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.contains(" CM ") && line.contains("ConnectRequest"),
        "{line}"
    );
}
