//! Frame builders (`builder.rs`): the published vectors of protocol.md §4.3
//! rebuilt byte for byte, the generator -> dissect round trip of style.md
//! §2.9, checksum/ICRC policies, build errors and MAC Control frames.
//!
//! Expected values come from protocol.md or are worked out by hand in the
//! comments; none is copied from the builder's own output.

use core::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;
use rocescope_dissectors::builder::{
    BuildError, ExtReprs, IcrcPolicy, L2, MIN_FRAME_LEN, MacControlFrame, NetworkRepr, Policy,
    RoceFrame, UdpChecksum, VlanTag,
};
use rocescope_dissectors::checksum::ChecksumMode;
use rocescope_dissectors::ethernet::{self, Address, EtherType};
use rocescope_dissectors::ib::{
    aeth, atomic_ack_eth, atomic_eth, deth, feth, ieth, immdt, rdeth, reth, xrceth,
};
use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::stack::{
    DissectOptions, Network, RoceVersion, Start, dissect, dissect_with,
};
use rocescope_dissectors::{
    BthRepr, ExtHeader, Opcode, Psn, Qpn, grh, ipv4, ipv6, mac_control, strategy, udp, vlan,
};

// ---------------------------------------------------------------- helpers

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    assert_eq!(s.len() % 2, 0, "odd hex string");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn bth(opcode: Opcode) -> BthRepr {
    BthRepr {
        opcode,
        solicited_event: false,
        mig_req: false,
        pad_count: 0,
        tver: 0,
        pkey: 0xffff,
        fecn: false,
        becn: false,
        dest_qp: Qpn::new_masked(0),
        ack_req: false,
        psn: Psn::new_masked(0),
    }
}

/// protocol.md §4.3 vector A as builder input.
fn vector_a_frame() -> RoceFrame {
    RoceFrame {
        l2: L2::untagged(ethernet::Repr {
            dst_addr: Address([0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]),
            src_addr: Address([0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32]),
            ethertype: EtherType(0),
        }),
        network: NetworkRepr::Ipv4 {
            ip: ipv4::Repr {
                src_addr: Ipv4Addr::new(10, 0, 17, 1),
                dst_addr: Ipv4Addr::new(10, 0, 18, 1),
                next_header: ipv4::IpProtocol(0),
                payload_len: 0,
                hop_limit: 64,
                // TOS 0xC2 = DSCP 48 (0x30 << 2 = 0xC0) | ECN 0b10
                dscp: 48,
                ecn: 0b10,
                ident: 0x718c,
                dont_frag: true,
            },
            src_port: 0,
            dst_port: 4791,
        },
        bth: BthRepr {
            becn: true,
            dest_qp: Qpn::new_masked(0x118),
            ..bth(Opcode(0x81))
        },
        exts: ExtReprs::default(),
        payload_len: 0,
    }
}

const VECTOR_A: &str = "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201\
     000012b7002800008100ffff40000118000000000000000000000000000000000000000082fd002a";

/// 18 payload bytes of vector B (the 20 bytes after its BTH less 2 pad bytes).
const VECTOR_B_PAYLOAD: &str = "4630818be28935d90e9a95505401be885e50";

fn vector_b_frame() -> RoceFrame {
    let mac = Address([0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22]);
    let host = Ipv4Addr::new(192, 168, 0, 7);
    RoceFrame {
        l2: L2::untagged(ethernet::Repr {
            dst_addr: mac,
            src_addr: mac,
            ethertype: EtherType(0),
        }),
        network: NetworkRepr::Ipv4 {
            ip: ipv4::Repr {
                src_addr: host,
                dst_addr: host,
                next_header: ipv4::IpProtocol(0),
                payload_len: 0,
                hop_limit: 64,
                // TOS 0x01: DSCP 0, ECN 1
                dscp: 0,
                ecn: 1,
                ident: 1144,
                dont_frag: true,
            },
            src_port: 49152,
            dst_port: 4791,
        },
        bth: BthRepr {
            mig_req: true,
            dest_qp: Qpn::new_masked(211),
            psn: Psn::new_masked(13_571_856),
            ..bth(Opcode(0x24))
        },
        exts: ExtReprs::default(),
        payload_len: 18,
    }
}

const VECTOR_B: &str = "248a07a8fa22248a07a8fa220800 45010040047840004011b4d5c0a80007c0a80007
     c00012b7002caca2 2460ffff000000d300cf1710 4630818be28935d90e9a95505401be885e500000 78f353f3";

fn emit(frame: &RoceFrame, policy: &Policy, payload: &[u8]) -> Result<Vec<u8>, BuildError> {
    let mut buf = vec![0xA5u8; frame.buffer_len()];
    let n = frame.emit(&mut buf, policy, |p| p.copy_from_slice(payload))?;
    buf.truncate(n);
    Ok(buf)
}

// ---------------------------------------------------------------- vectors

#[test]
fn builds_vector_a_byte_for_byte() {
    let f = vector_a_frame();
    // 14 + 20 + 8 + 12 + 16 + 4
    assert_eq!(f.buffer_len(), 74);
    let built = emit(&f, &Policy::default(), &[]).unwrap();
    assert_eq!(built, hex(VECTOR_A));
}

#[test]
fn builds_vector_b_byte_for_byte_with_udp_checksum() {
    let f = vector_b_frame();
    // 14 + 20 + 8 + 12 + 18 + 2 + 4
    assert_eq!(f.buffer_len(), 78);
    let policy = Policy {
        udp_checksum: UdpChecksum::Fill,
        ..Policy::default()
    };
    let built = emit(&f, &policy, &hex(VECTOR_B_PAYLOAD)).unwrap();
    assert_eq!(built, hex(VECTOR_B));
    // the UDP checksum covers the ICRC, so it must have been filled after it
    assert_eq!(&built[40..42], &[0xac, 0xa2]);

    // without the UDP checksum policy the field stays 0 and nothing else changes
    let plain = emit(&f, &Policy::default(), &hex(VECTOR_B_PAYLOAD)).unwrap();
    let mut expected = hex(VECTOR_B);
    expected[40..42].fill(0);
    assert_eq!(plain, expected);
}

#[test]
fn caller_pad_count_is_ignored() {
    // PadCnt comes from the payload length (-18 & 3 = 2), whatever the Repr says
    let mut f = vector_b_frame();
    f.bth.pad_count = 1;
    let policy = Policy {
        udp_checksum: UdpChecksum::Fill,
        ..Policy::default()
    };
    assert_eq!(
        emit(&f, &policy, &hex(VECTOR_B_PAYLOAD)).unwrap(),
        hex(VECTOR_B)
    );
}

// ---------------------------------------------------------------- policies and errors

proptest! {
    #[test]
    fn corrupt_icrc_is_invalid_by_exactly_x(x in 1u32..=u32::MAX) {
        let f = vector_a_frame();
        let policy = Policy { icrc: IcrcPolicy::Corrupt(x), ..Policy::default() };
        let built = emit(&f, &policy, &[]).unwrap();
        // only the ICRC bytes differ from the published frame
        let good = hex(VECTOR_A);
        prop_assert_eq!(&built[..70], &good[..70]);
        let d = dissect(&built).unwrap();
        match d.icrc_status() {
            IcrcStatus::Invalid { expected, found } => {
                prop_assert_eq!(expected, 0x2A00_FD82);
                prop_assert_eq!(found ^ expected, x);
            }
            other => prop_assert!(false, "expected Invalid, got {:?}", other),
        }
    }
}

#[test]
fn corrupt_ipv4_checksum_keeps_the_icrc_valid() {
    let f = vector_a_frame();
    let policy = Policy {
        corrupt_ipv4_checksum: true,
        ..Policy::default()
    };
    let built = emit(&f, &policy, &[]).unwrap();
    // published checksum 0x9161, flipped: 0x6e9e
    assert_eq!(&built[24..26], &[0x6e, 0x9e]);
    let d = dissect(&built).expect("a bad IP checksum is not a parse error");
    assert!(!d.ipv4().unwrap().verify_checksum());
    // the IP checksum is masked in the ICRC
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
    assert_eq!(&built[70..], &[0x82, 0xfd, 0x00, 0x2a]);
}

#[test]
fn ipv4_checksum_mode_none_leaves_zero() {
    let f = vector_a_frame();
    for mode in [ChecksumMode::None, ChecksumMode::Rx] {
        let policy = Policy {
            ipv4_checksum: mode,
            ..Policy::default()
        };
        let built = emit(&f, &policy, &[]).unwrap();
        let mut expected = hex(VECTOR_A);
        expected[24..26].fill(0);
        assert_eq!(built, expected, "{mode:?}");
    }
}

#[test]
fn buffer_too_small() {
    let f = vector_a_frame();
    let mut buf = [0u8; 73];
    assert_eq!(
        f.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::BufferTooSmall { need: 74, have: 73 })
    );
    // a short frame still needs the 60-byte minimum
    let mut ack = vector_a_frame();
    ack.bth.opcode = Opcode::RC_SEND_ONLY; // 14 + 20 + 8 + 12 + 4 = 58
    let mut buf = [0u8; 59];
    assert_eq!(
        ack.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::BufferTooSmall { need: 60, have: 59 })
    );
    // a larger buffer is fine; the returned length says how much was written
    let mut buf = [0xEEu8; 100];
    assert_eq!(f.emit(&mut buf, &Policy::default(), |_| {}), Ok(74));
    assert_eq!(&buf[..74], &hex(VECTOR_A)[..]);
    assert!(buf[74..].iter().all(|&b| b == 0xEE), "wrote past the frame");
}

#[test]
fn missing_extension_header_is_invalid_repr() {
    let mut f = vector_a_frame();
    f.bth.opcode = Opcode::RC_RDMA_WRITE_FIRST;
    f.payload_len = 8;
    let mut buf = vec![0u8; f.buffer_len()];
    assert!(matches!(
        f.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::InvalidRepr(_))
    ));
    // a DETH does not stand in for the RETH
    f.exts.deth = Some(deth::Repr {
        qkey: 1,
        src_qp: Qpn::new_masked(2),
    });
    assert!(matches!(
        f.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::InvalidRepr(_))
    ));
    f.exts.reth = Some(reth::Repr {
        va: 0,
        rkey: 0,
        dma_len: 8,
    });
    assert!(f.emit(&mut buf, &Policy::default(), |_| {}).is_ok());
    // UD SEND without DETH, ATOMIC ACK with AETH but no AtomicAckETH
    let mut ud = vector_a_frame();
    ud.bth.opcode = Opcode::UD_SEND_ONLY;
    let mut buf = vec![0u8; ud.buffer_len()];
    assert!(matches!(
        ud.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::InvalidRepr(_))
    ));
    let mut ack = vector_a_frame();
    ack.bth.opcode = Opcode(0x12);
    ack.exts.aeth = Some(aeth::Repr {
        syndrome: aeth::Syndrome(0),
        msn: 0,
    });
    let mut buf = vec![0u8; ack.buffer_len()];
    assert!(matches!(
        ack.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::InvalidRepr(_))
    ));
}

#[test]
fn payload_too_large_for_one_packet() {
    let mut f = vector_a_frame();
    f.bth.opcode = Opcode::RC_SEND_ONLY;
    // 20 + 8 + 12 + 65500 + 4 > 65535
    f.payload_len = 65_500;
    let mut buf = vec![0u8; f.buffer_len()];
    assert!(matches!(
        f.emit(&mut buf, &Policy::default(), |_| {}),
        Err(BuildError::InvalidRepr(_))
    ));
    // payload + pad may be at most 65535 - 20 - 8 - 12 - 4 = 65491; the largest
    // multiple of 4 below is 65488 (PadCnt 0), total length 65535 - 3 = 65532
    f.payload_len = 65_488;
    let mut buf = vec![0u8; f.buffer_len()];
    let n = f.emit(&mut buf, &Policy::default(), |_| {}).unwrap();
    let d = dissect(&buf[..n]).unwrap();
    assert_eq!(d.ipv4().unwrap().total_len(), 65_532);
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
}

// ---------------------------------------------------------------- MAC Control

fn mac_control_l2(vlans: [Option<VlanTag>; 2]) -> L2 {
    L2 {
        eth: ethernet::Repr {
            dst_addr: mac_control::PAUSE_DST,
            src_addr: Address([0x02, 0, 0, 0, 0, 0x33]),
            ethertype: EtherType(0),
        },
        vlans,
    }
}

#[test]
fn pfc_frame_is_60_bytes_and_dissects_back() {
    let quanta = [0xffff, 1, 2, 0x0300, 0, 0x8000, 6, 7];
    let frame = MacControlFrame {
        l2: mac_control_l2([None; 2]),
        body: mac_control::Repr::Pfc {
            enable: 0x00A5,
            quanta,
        },
    };
    assert_eq!(frame.buffer_len(), 60);
    let mut buf = [0xEEu8; 60];
    assert_eq!(frame.emit(&mut buf), Ok(60));
    // DA 01:80:c2:00:00:01, EtherType 0x8808, opcode 0x0101, PEV 0x00a5,
    // time[n] big-endian at 18 + 2n, zero padding from 34 to 60
    let mut expected = hex("0180c2000001 020000000033 8808 0101 00a5
                            ffff 0001 0002 0300 0000 8000 0006 0007");
    expected.resize(60, 0);
    assert_eq!(&buf[..], &expected[..]);

    let d = dissect(&buf).expect("PFC frame");
    assert!(matches!(d.network, Some(Network::MacControl(_))));
    let p = d.mac_control().unwrap();
    assert_eq!(p.pfc_enable(), 0x00A5);
    // 0xA5 = 1010_0101: priorities 0, 2, 5, 7
    let enabled: Vec<u8> = (0..8).filter(|&n| p.priority_enabled(n)).collect();
    assert_eq!(enabled, [0, 2, 5, 7]);
    assert_eq!(p.pfc_quanta_all(), quanta);
    assert_eq!(
        mac_control::Repr::parse(p).unwrap(),
        mac_control::Repr::Pfc {
            enable: 0x00A5,
            quanta
        }
    );
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
}

#[test]
fn pause_frame_is_60_bytes_and_dissects_back() {
    let frame = MacControlFrame {
        l2: mac_control_l2([None; 2]),
        body: mac_control::Repr::Pause { quanta: 0x1234 },
    };
    let mut buf = [0xEEu8; 64];
    assert_eq!(frame.emit(&mut buf), Ok(60));
    let mut expected = hex("0180c2000001 020000000033 8808 0001 1234");
    expected.resize(60, 0);
    assert_eq!(&buf[..60], &expected[..]);
    assert_eq!(&buf[60..], &[0xEE; 4]);
    let d = dissect(&buf[..60]).unwrap();
    assert_eq!(
        mac_control::Repr::parse(d.mac_control().unwrap()).unwrap(),
        mac_control::Repr::Pause { quanta: 0x1234 }
    );

    let mut small = [0u8; 59];
    assert_eq!(
        frame.emit(&mut small),
        Err(BuildError::BufferTooSmall { need: 60, have: 59 })
    );
}

#[test]
fn tagged_pfc_frame_round_trips() {
    let tag = VlanTag {
        tpid: EtherType::VLAN,
        tag: vlan::Repr {
            pcp: 7,
            dei: false,
            vid: vlan::VlanId::new_masked(0),
            ethertype: EtherType(0),
        },
    };
    let body = mac_control::Repr::Pfc {
        enable: 0x0008,
        quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
    };
    let frame = MacControlFrame {
        l2: mac_control_l2([Some(tag), None]),
        body,
    };
    let mut buf = [0u8; 60];
    assert_eq!(frame.emit(&mut buf), Ok(60));
    assert_eq!(
        &buf[12..20],
        &[0x81, 0x00, 0xe0, 0x00, 0x88, 0x08, 0x01, 0x01]
    );
    let d = dissect(&buf).unwrap();
    assert_eq!(
        mac_control::Repr::parse(d.mac_control().unwrap()).unwrap(),
        body
    );
}

// ---------------------------------------------------------------- round trip

/// Opcodes of protocol.md §2.3, typed in from the table.
const TABLE: &[u8] = &[
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D, //
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, //
    0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F,
    0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x5C, 0x5D, //
    0x64, 0x65, 0x81, //
    0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,
    0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB6, 0xB7,
];

/// Extension-header sizes of protocol.md §2.2.
fn wire_len(h: ExtHeader) -> usize {
    match h {
        ExtHeader::Rdeth
        | ExtHeader::XrcEth
        | ExtHeader::Aeth
        | ExtHeader::ImmDt
        | ExtHeader::Ieth
        | ExtHeader::Feth => 4,
        ExtHeader::Deth | ExtHeader::AtomicAckEth | ExtHeader::Dc => 8,
        ExtHeader::Reth | ExtHeader::CnpPad | ExtHeader::Dcceth => 16,
        ExtHeader::AtomicEth => 28,
    }
}

fn headers(opcode: Opcode) -> &'static [ExtHeader] {
    opcode.info().and_then(|i| i.headers).unwrap_or(&[])
}

#[test]
fn every_table_opcode_is_known() {
    for &op in TABLE {
        assert!(Opcode(op).info().is_some(), "{op:#04x} missing");
    }
    // spot checks of the header column: hdr bytes incl. BTH from the table
    for (op, hdr_bytes) in [
        (0x0Bu8, 32),
        (0x12, 24),
        (0x1C, 32),
        (0x4B, 44),
        (0x53, 52),
        (0x65, 24),
        (0x81, 28),
        (0xAB, 36),
        (0xB7, 20),
    ] {
        let sum: usize = 12
            + headers(Opcode(op))
                .iter()
                .map(|&h| wire_len(h))
                .sum::<usize>();
        assert_eq!(sum, hdr_bytes, "{op:#04x}");
    }
}

/// Every extension header with random contents; the opcode picks which go in.
#[derive(Debug, Clone)]
struct AllExts {
    rdeth: rdeth::Repr,
    deth: deth::Repr,
    xrceth: xrceth::Repr,
    reth: reth::Repr,
    atomic_eth: atomic_eth::Repr,
    aeth: aeth::Repr,
    atomic_ack_eth: atomic_ack_eth::Repr,
    immdt: immdt::Repr,
    ieth: ieth::Repr,
    feth: feth::Repr,
}

fn all_exts() -> impl Strategy<Value = AllExts> {
    (
        (
            strategy::rdeth(),
            strategy::deth(),
            strategy::xrceth(),
            strategy::reth(),
            strategy::atomic_eth(),
        ),
        (
            strategy::aeth(),
            strategy::atomic_ack_eth(),
            strategy::immdt(),
            strategy::ieth(),
            strategy::feth(),
        ),
    )
        .prop_map(
            |(
                (rdeth, deth, xrceth, reth, atomic_eth),
                (aeth, atomic_ack_eth, immdt, ieth, feth),
            )| {
                AllExts {
                    rdeth,
                    deth,
                    xrceth,
                    reth,
                    atomic_eth,
                    aeth,
                    atomic_ack_eth,
                    immdt,
                    ieth,
                    feth,
                }
            },
        )
}

/// Only the headers `list` calls for.
fn pick(all: &AllExts, list: &[ExtHeader]) -> ExtReprs {
    let mut e = ExtReprs::default();
    for h in list {
        match h {
            ExtHeader::Rdeth => e.rdeth = Some(all.rdeth),
            ExtHeader::Deth => e.deth = Some(all.deth),
            ExtHeader::XrcEth => e.xrceth = Some(all.xrceth),
            ExtHeader::Reth => e.reth = Some(all.reth),
            ExtHeader::AtomicEth => e.atomic_eth = Some(all.atomic_eth),
            ExtHeader::Aeth => e.aeth = Some(all.aeth),
            ExtHeader::AtomicAckEth => e.atomic_ack_eth = Some(all.atomic_ack_eth),
            ExtHeader::ImmDt => e.immdt = Some(all.immdt),
            ExtHeader::Ieth => e.ieth = Some(all.ieth),
            ExtHeader::Feth => e.feth = Some(all.feth),
            // the table's rows (RD on the RD range) never carry NVIDIA DC's headers
            ExtHeader::CnpPad | ExtHeader::Dc | ExtHeader::Dcceth => {}
        }
    }
    e
}

fn tpid() -> impl Strategy<Value = EtherType> {
    prop::sample::select(vec![
        EtherType(0x8100),
        EtherType(0x88A8),
        EtherType(0x9100),
        EtherType(0x9200),
        EtherType(0x9300),
    ])
}

fn vlan_tags() -> impl Strategy<Value = [Option<VlanTag>; 2]> {
    fn tag() -> impl Strategy<Value = VlanTag> {
        (tpid(), strategy::vlan()).prop_map(|(tpid, tag)| VlanTag { tpid, tag })
    }
    (prop::option::of(tag()), prop::option::of(tag())).prop_map(|(a, b)| [a, b])
}

fn network() -> impl Strategy<Value = NetworkRepr> {
    prop_oneof![
        (strategy::ipv4(), any::<u16>()).prop_map(|(ip, src_port)| NetworkRepr::Ipv4 {
            ip,
            src_port,
            dst_port: 4791
        }),
        (strategy::ipv6(), any::<u16>()).prop_map(|(ip, src_port)| NetworkRepr::Ipv6 {
            ip,
            src_port,
            dst_port: 4791
        }),
        strategy::grh().prop_map(NetworkRepr::RoceV1),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    frame: RoceFrame,
    payload: Vec<u8>,
    all: AllExts,
}

fn case() -> impl Strategy<Value = Case> {
    (
        strategy::ethernet(),
        vlan_tags(),
        network(),
        (prop::sample::select(TABLE), strategy::bth()),
        all_exts(),
        prop::collection::vec(any::<u8>(), 0..4096),
    )
        .prop_map(|(eth, vlans, network, (op, bth), all, payload)| {
            let opcode = Opcode(op);
            let frame = RoceFrame {
                l2: L2 { eth, vlans },
                network,
                bth: BthRepr { opcode, ..bth },
                exts: pick(&all, headers(opcode)),
                payload_len: payload.len(),
            };
            Case {
                frame,
                payload,
                all,
            }
        })
}

#[allow(clippy::too_many_lines)]
fn check_round_trip(c: &Case) -> Result<(), TestCaseError> {
    let f = &c.frame;
    let built = emit(f, &Policy::default(), &c.payload).expect("build");
    // the table's RD rows, read as IBA RD (NVIDIA DC is the default on that range)
    let options = DissectOptions {
        rd_as_rd: true,
        ..DissectOptions::default()
    };
    let (d, err) = dissect_with(&built, Start::Ethernet, &options);
    if let Some(e) = err {
        return Err(TestCaseError::fail(format!("dissect: {e}")));
    }

    // lengths worked out from the table sizes
    let list = headers(f.bth.opcode);
    let ext_len: usize = list.iter().map(|&h| wire_len(h)).sum();
    let pad = c.payload.len().wrapping_neg() & 3;
    prop_assert!((c.payload.len() + pad) % 4 == 0);
    let transport_len = 12 + ext_len + c.payload.len() + pad + 4;
    let tags: Vec<VlanTag> = f.l2.vlans.iter().flatten().copied().collect();
    let (inner, net_len) = match f.network {
        NetworkRepr::Ipv4 { .. } => (EtherType::IPV4, 20 + 8),
        NetworkRepr::Ipv6 { .. } => (EtherType::IPV6, 40 + 8),
        NetworkRepr::RoceV1(_) => (EtherType::ROCEV1, 40),
        // the strategy draws RoCE frames; native ones have their own test below
        NetworkRepr::Ib { .. } => return Ok(()),
    };
    let l2_len = 14 + 4 * tags.len();
    prop_assert_eq!(
        built.len(),
        (l2_len + net_len + transport_len).max(MIN_FRAME_LEN)
    );

    // L2: each EtherType field names what follows it
    let next = |i: usize| tags.get(i).map_or(inner, |t| t.tpid);
    let eth = ethernet::Repr::parse(&d.eth.unwrap())?;
    prop_assert_eq!(
        eth,
        ethernet::Repr {
            ethertype: next(0),
            ..f.l2.eth
        }
    );
    let parsed_tags: Vec<_> = d.vlans().collect();
    prop_assert_eq!(parsed_tags.len(), tags.len());
    for (i, (t, p)) in tags.iter().zip(&parsed_tags).enumerate() {
        prop_assert_eq!(p.tpid, t.tpid);
        prop_assert_eq!(p.offset, 12 + 4 * i);
        prop_assert_eq!(
            vlan::Repr::parse(&p.header)?,
            vlan::Repr {
                ethertype: next(i + 1),
                ..t.tag
            }
        );
    }
    prop_assert_eq!(d.ethertype, Some(inner));
    prop_assert_eq!(d.network_offset, l2_len);

    // network
    let udp_len = 8 + transport_len;
    match f.network {
        NetworkRepr::Ipv4 {
            ip,
            src_port,
            dst_port,
        } => {
            let p = d.ipv4().expect("IPv4");
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(
                ipv4::Repr::parse(p)?,
                ipv4::Repr {
                    next_header: ipv4::IpProtocol::UDP,
                    payload_len: udp_len,
                    ..ip
                }
            );
            let u = d.udp.expect("UDP");
            prop_assert_eq!(
                udp::Repr::parse(&u)?,
                udp::Repr {
                    src_port,
                    dst_port,
                    payload_len: transport_len
                }
            );
            prop_assert_eq!(u.checksum(), 0);
            prop_assert!(u.verify_checksum(&IpAddr::V4(ip.src_addr), &IpAddr::V4(ip.dst_addr)));
        }
        NetworkRepr::Ipv6 {
            ip,
            src_port,
            dst_port,
        } => {
            let p = d.ipv6().expect("IPv6");
            prop_assert_eq!(
                ipv6::Repr::parse(p)?,
                ipv6::Repr {
                    next_header: ipv4::IpProtocol::UDP,
                    payload_len: udp_len,
                    ..ip
                }
            );
            prop_assert_eq!(
                udp::Repr::parse(&d.udp.expect("UDP"))?,
                udp::Repr {
                    src_port,
                    dst_port,
                    payload_len: transport_len
                }
            );
        }
        NetworkRepr::RoceV1(g) => {
            let Some(Network::Grh(p)) = d.network else {
                return Err(TestCaseError::fail("no GRH"));
            };
            prop_assert_eq!(
                grh::Repr::parse(&p)?,
                grh::Repr {
                    payload_len: u16::try_from(transport_len).unwrap(),
                    ..g
                }
            );
            prop_assert!(d.udp.is_none());
        }
        NetworkRepr::Ib { .. } => {}
    }

    // transport
    let roce = d.roce.expect("RoCE");
    prop_assert_eq!(
        roce.version,
        if matches!(f.network, NetworkRepr::RoceV1(_)) {
            RoceVersion::V1
        } else {
            RoceVersion::V2
        }
    );
    prop_assert_eq!(roce.bth_offset, l2_len + net_len);
    prop_assert_eq!(
        BthRepr::parse(&roce.bth)?,
        BthRepr {
            pad_count: u8::try_from(pad).unwrap(),
            ..f.bth
        }
    );
    prop_assert_eq!(roce.exts.list(), list);
    let mut at = roce.bth_offset + 12;
    for &h in list {
        let (range, bytes) = roce.exts.locate(h).expect("header present");
        prop_assert_eq!(range.clone(), at..at + wire_len(h));
        at = range.end;
        let a = &c.all;
        match h {
            ExtHeader::Rdeth => {
                prop_assert_eq!(rdeth::Repr::parse(&roce.exts.rdeth().unwrap())?, a.rdeth);
            }
            ExtHeader::Deth => {
                prop_assert_eq!(deth::Repr::parse(&roce.exts.deth().unwrap())?, a.deth);
            }
            ExtHeader::XrcEth => {
                prop_assert_eq!(xrceth::Repr::parse(&roce.exts.xrceth().unwrap())?, a.xrceth);
            }
            ExtHeader::Reth => {
                prop_assert_eq!(reth::Repr::parse(&roce.exts.reth().unwrap())?, a.reth);
            }
            ExtHeader::AtomicEth => prop_assert_eq!(
                atomic_eth::Repr::parse(&roce.exts.atomic_eth().unwrap())?,
                a.atomic_eth
            ),
            ExtHeader::Aeth => {
                prop_assert_eq!(aeth::Repr::parse(&roce.exts.aeth().unwrap())?, a.aeth);
            }
            ExtHeader::AtomicAckEth => prop_assert_eq!(
                atomic_ack_eth::Repr::parse(&roce.exts.atomic_ack_eth().unwrap())?,
                a.atomic_ack_eth
            ),
            ExtHeader::ImmDt => {
                prop_assert_eq!(immdt::Repr::parse(&roce.exts.immdt().unwrap())?, a.immdt);
            }
            ExtHeader::Ieth => {
                prop_assert_eq!(ieth::Repr::parse(&roce.exts.ieth().unwrap())?, a.ieth);
            }
            ExtHeader::Feth => {
                prop_assert_eq!(feth::Repr::parse(&roce.exts.feth().unwrap())?, a.feth);
            }
            ExtHeader::CnpPad => {
                prop_assert!(roce.exts.cnp().is_some());
                prop_assert!(bytes.iter().all(|&b| b == 0));
            }
            ExtHeader::Dc | ExtHeader::Dcceth => {
                return Err(TestCaseError::fail("the table's rows have no DC headers"));
            }
        }
    }
    prop_assert_eq!(roce.payload_offset, at);
    prop_assert_eq!(roce.payload_len, c.payload.len());
    prop_assert_eq!(roce.payload, &c.payload[..]);
    prop_assert_eq!(roce.pad.len(), pad);
    prop_assert!(roce.pad.iter().all(|&b| b == 0));
    prop_assert!(roce.icrc.is_some());
    prop_assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
    // Ethernet padding after the ICRC is zero
    let end = roce.bth_offset + transport_len;
    prop_assert!(built[end..].iter().all(|&b| b == 0));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct("proptest-regressions/tests/builder.txt"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn generator_then_dissect_gives_back_the_reprs(c in case()) {
        check_round_trip(&c)?;
    }
}

#[test]
fn round_trip_of_every_table_opcode_over_each_network() {
    // deterministic sweep so every opcode is seen at least once per network
    let all = AllExts {
        rdeth: rdeth::Repr {
            ee_context: 0x00_abcd,
        },
        deth: deth::Repr {
            qkey: 0x8001_0000,
            src_qp: Qpn::new_masked(0x12_3456),
        },
        xrceth: xrceth::Repr { xrc_srqn: 0x77 },
        reth: reth::Repr {
            va: 0x0102_0304_0506_0708,
            rkey: 0x0a0b_0c0d,
            dma_len: 0x1000,
        },
        atomic_eth: atomic_eth::Repr {
            va: 0x1111,
            rkey: 0x2222,
            swap_add: 0x3333,
            compare: 0x4444,
        },
        aeth: aeth::Repr {
            syndrome: aeth::Syndrome(0x1f),
            msn: 5,
        },
        atomic_ack_eth: atomic_ack_eth::Repr {
            orig_remote_data: 0xdead_beef_cafe_f00d,
        },
        immdt: immdt::Repr {
            imm_data: 0x1234_5678,
        },
        ieth: ieth::Repr { rkey: 0x8765_4321 },
        feth: feth::Repr {
            placement_type: 3,
            selectivity_level: 1,
        },
    };
    let base = vector_b_frame();
    let networks = [
        base.network,
        NetworkRepr::Ipv6 {
            ip: ipv6::Repr {
                src_addr: "fe80::1".parse().unwrap(),
                dst_addr: "fe80::2".parse().unwrap(),
                next_header: ipv4::IpProtocol(0),
                payload_len: 0,
                hop_limit: 64,
                traffic_class: 0x68,
                flow_label: 0x12345,
            },
            src_port: 0xc123,
            dst_port: 4791,
        },
        NetworkRepr::RoceV1(grh::Repr {
            tclass: 0x68,
            flow_label: 0x12345,
            payload_len: 0,
            next_header: grh::NEXT_HEADER_IBA,
            hop_limit: 64,
            sgid: "fe80::1".parse().unwrap(),
            dgid: "fe80::2".parse().unwrap(),
        }),
    ];
    for network in networks {
        for &op in TABLE {
            for len in [0usize, 1, 7, 256] {
                let opcode = Opcode(op);
                let frame = RoceFrame {
                    network,
                    bth: BthRepr { opcode, ..base.bth },
                    exts: pick(&all, headers(opcode)),
                    payload_len: len,
                    ..base
                };
                #[allow(clippy::cast_possible_truncation)]
                let payload: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
                let c = Case {
                    frame,
                    payload,
                    all: all.clone(),
                };
                if let Err(e) = check_round_trip(&c) {
                    panic!("{op:#04x} len {len} over {network:?}: {e}");
                }
            }
        }
    }
}

/// A zero UDP checksum is illegal over IPv6 (RFC 8200 §8.1; tshark flags it as
/// an error), so the default policy computes it there and leaves it zero over IPv4.
#[test]
fn default_policy_fills_udp_checksum_over_ipv6_only() {
    let v6 = hex(VECTOR_D);
    let d = dissect(&v6).unwrap();
    let ip = d.ipv6().unwrap();
    let roce = d.roce.unwrap();
    let frame = RoceFrame {
        l2: L2::untagged(ethernet::Repr::parse(&d.eth.unwrap()).unwrap()),
        network: NetworkRepr::Ipv6 {
            ip: ipv6::Repr::parse(ip).unwrap(),
            src_port: d.udp.unwrap().src_port(),
            dst_port: 4791,
        },
        bth: BthRepr::parse(&roce.bth).unwrap(),
        exts: ExtReprs::default(),
        payload_len: roce.payload_len,
    };
    let mut buf = [0u8; 128];
    let n = frame
        .emit(&mut buf, &Policy::default(), |p| {
            p.copy_from_slice(roce.payload)
        })
        .unwrap();
    let built = dissect(&buf[..n]).unwrap();
    let udp = built.udp.unwrap();
    let (src, dst) = (IpAddr::V6(ip.src_addr()), IpAddr::V6(ip.dst_addr()));
    assert_ne!(udp.checksum(), 0);
    assert!(udp.verify_checksum(&src, &dst));
    // everything but the UDP checksum equals the published vector (which carries 0)
    let mut expected = v6.clone();
    expected[14 + 40 + 6..14 + 40 + 8].copy_from_slice(&udp.checksum().to_be_bytes());
    assert_eq!(&buf[..n], &expected[..]);

    let zero = Policy {
        udp_checksum: UdpChecksum::Zero,
        ..Policy::default()
    };
    let n = frame
        .emit(&mut buf, &zero, |p| p.copy_from_slice(roce.payload))
        .unwrap();
    assert_eq!(&buf[..n], &v6[..]);
}

/// protocol.md §4.3 vector D (IPv6 RC_SEND_ONLY, PadCnt 3; UDP checksum 0).
const VECTOR_D: &str = "02000000000202000000000186dd6681234500201140fe800000000000000000000000000001fe800000000000000000000000000002c12312b7002000000430ffff0000012380abcdef01020304050000004c406c64";

// ---------------------------------------------------------------- native InfiniBand

/// capture-formats.md §1.5 vector A (LNH 2, an RC ACKNOWLEDGE) rebuilt byte for byte from
/// its fields: the LRH (PktLen and LNH set by the builder), BTH, AETH, the ICRC under the
/// local-route masks and the VCRC.
#[test]
fn native_ib_vector_a_rebuilt() {
    use rocescope_dissectors::ib::lrh;
    use rocescope_dissectors::stack::{DissectOptions, Start, dissect_with};
    let frame = RoceFrame {
        l2: L2::untagged(ethernet::Repr {
            dst_addr: Address([0; 6]),
            src_addr: Address([0; 6]),
            ethertype: EtherType(0),
        }),
        network: NetworkRepr::Ib {
            lrh: lrh::Repr {
                vl: 0,
                lver: 0,
                sl: 0,
                lnh: lrh::NextHeader::Raw, // the builder sets it
                dlid: 0x0012,
                pkt_len: 0, // and this
                slid: 0x000c,
            },
            grh: None,
        },
        bth: BthRepr {
            mig_req: true,
            dest_qp: Qpn::new_masked(0x29),
            psn: Psn::new_masked(0x5e0c45),
            ..bth(Opcode(0x11))
        },
        exts: ExtReprs {
            aeth: Some(aeth::Repr {
                syndrome: aeth::Syndrome(0),
                msn: 1,
            }),
            ..ExtReprs::default()
        },
        payload_len: 0,
    };
    let mut buf = [0u8; 64];
    let n = frame.emit(&mut buf, &Policy::default(), |_| {}).unwrap();
    assert_eq!(
        &buf[..n],
        &hex("00020012 0007000c 1140ffff 00000029 005e0c45 00000001 fc272caf 8fa5")[..]
    );
    // a global route between GIDs: a GRH, LNH 3, and the whole LRH masked (SL and the LIDs
    // change nothing in the ICRC, everything in the VCRC)
    let global = |sl: u8, dlid: u16| RoceFrame {
        network: NetworkRepr::Ib {
            lrh: lrh::Repr {
                vl: 0,
                lver: 0,
                sl,
                lnh: lrh::NextHeader::Raw,
                dlid,
                pkt_len: 0,
                slid: 6,
            },
            grh: Some(grh::Repr {
                tclass: 0,
                flow_label: 0,
                payload_len: 0,
                next_header: grh::NEXT_HEADER_IBA,
                hop_limit: 0,
                sgid: "fe80::8c0:eb03:ea:512e".parse().unwrap(),
                dgid: "ff12:401b:ffff::ffff:ffff".parse().unwrap(),
            }),
        },
        ..frame
    };
    let mut a = [0u8; 128];
    let mut b = [0u8; 128];
    let na = global(0, 0xc000)
        .emit(&mut a, &Policy::default(), |_| {})
        .unwrap();
    let nb = global(7, 0x1234)
        .emit(&mut b, &Policy::default(), |_| {})
        .unwrap();
    assert_eq!(na, 8 + 40 + 12 + 4 + 4 + 2);
    let icrc = |x: &[u8], n: usize| x[n - 6..n - 2].to_vec();
    assert_eq!(icrc(&a, na), icrc(&b, nb));
    assert_ne!(a[na - 2..na], b[nb - 2..nb]);
    for (x, n) in [(&a[..na], na), (&b[..nb], nb)] {
        let (d, err) = dissect_with(x, Start::Infiniband, &DissectOptions::default());
        assert_eq!(err, None);
        let roce = d.roce.unwrap();
        assert_eq!(roce.version, RoceVersion::Ib);
        assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
        assert_eq!(d.vcrc_status(), IcrcStatus::Valid);
        assert_eq!(d.lrh().unwrap().1.pkt_len() as usize * 4 + 2, n);
        assert!(matches!(d.network, Some(Network::Grh(_))));
    }
    // a corrupted ICRC stays corrupted, and the VCRC covers it (still valid over it)
    let policy = Policy {
        icrc: IcrcPolicy::Corrupt(1),
        ..Policy::default()
    };
    let n = frame.emit(&mut buf, &policy, |_| {}).unwrap();
    let (d, _) = dissect_with(&buf[..n], Start::Infiniband, &DissectOptions::default());
    assert!(matches!(
        d.roce.unwrap().icrc_status(),
        IcrcStatus::Invalid { .. }
    ));
    assert_eq!(d.vcrc_status(), IcrcStatus::Valid);
}
