//! Whole-frame dissection (`stack.rs`): the published ICRC vectors of
//! protocol.md §4.3, VLAN tags, truncation at every layer, malformed length
//! fields, unknown opcodes, port options, SLL starts, CM MADs and a
//! never-panics property.
//!
//! Expected values come from protocol.md or are worked out by hand in the
//! comments; none is copied from the dissector's own output.

use core::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use rocescope_dissectors::builder::{
    ExtReprs, L2, MacControlFrame, NetworkRepr, Policy, RoceFrame, VlanTag as BuildTag,
};
use rocescope_dissectors::cm::{self, CmAttribute, CmMessage};
use rocescope_dissectors::ethernet::{self, Address, EtherType};
use rocescope_dissectors::ib::{aeth, deth, reth};
use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::stack::{
    self, DissectOptions as Options, MAX_VLANS, Network, RoceVersion, Start, dissect, dissect_lax,
    dissect_with,
};
use rocescope_dissectors::{
    BthRepr, ExtHeader, Layer, Malformed, Opcode, Psn, Qpn, WireError, grh, ipv4, mac_control, vlan,
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

/// protocol.md §4.3 vector A: RoCEv2 CNP captured on a ConnectX-4 Lx (74 bytes).
fn vector_a() -> Vec<u8> {
    hex(
        "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b7\
         002800008100ffff40000118000000000000000000000000000000000000000082fd002a",
    )
}

/// protocol.md §4.3 vector B: UC SEND_ONLY, PadCnt 2, MigReq 1 (78 bytes).
fn vector_b() -> Vec<u8> {
    hex("248a07a8fa22248a07a8fa220800 45010040047840004011b4d5c0a80007c0a80007
         c00012b7002caca2 2460ffff000000d300cf1710 4630818be28935d90e9a95505401be885e500000 78f353f3")
}

fn mac(last: u8) -> Address {
    Address([0x02, 0, 0, 0, 0, last])
}

fn eth() -> ethernet::Repr {
    ethernet::Repr {
        dst_addr: mac(1),
        src_addr: mac(2),
        ethertype: EtherType(0),
    }
}

fn ip4() -> ipv4::Repr {
    ipv4::Repr {
        src_addr: Ipv4Addr::new(10, 0, 0, 1),
        dst_addr: Ipv4Addr::new(10, 0, 0, 2),
        next_header: ipv4::IpProtocol(0),
        payload_len: 0,
        hop_limit: 64,
        dscp: 26,
        ecn: 2,
        ident: 0x1234,
        dont_frag: true,
    }
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
        dest_qp: Qpn::new_masked(0x00_0456),
        ack_req: true,
        psn: Psn::new_masked(0x00_0010),
    }
}

fn v4_frame(opcode: Opcode, exts: ExtReprs, payload_len: usize) -> RoceFrame {
    RoceFrame {
        l2: L2::untagged(eth()),
        network: NetworkRepr::Ipv4 {
            ip: ip4(),
            src_port: 0xc123,
            dst_port: 4791,
        },
        bth: bth(opcode),
        exts,
        payload_len,
    }
}

/// Payload byte `i` of the built frames.
fn pattern(i: usize) -> u8 {
    #[allow(clippy::cast_possible_truncation)]
    let b = (i * 7 + 3) as u8;
    b
}

fn build(frame: &RoceFrame) -> Vec<u8> {
    build_with(frame, &Policy::default())
}

fn build_with(frame: &RoceFrame, policy: &Policy) -> Vec<u8> {
    let mut buf = vec![0xAAu8; frame.buffer_len()];
    let n = frame
        .emit(&mut buf, policy, |p| {
            for (i, b) in p.iter_mut().enumerate() {
                *b = pattern(i);
            }
        })
        .expect("build");
    buf.truncate(n);
    buf
}

fn malformed(err: Option<WireError>) -> (Layer, Malformed) {
    match err {
        Some(WireError::Malformed { layer, reason, .. }) => (layer, reason),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

// ---------------------------------------------------------------- vectors A and B

#[test]
fn vector_a_cnp_dissects_strictly() {
    let frame = vector_a();
    assert_eq!(frame.len(), 74);
    let d = dissect(&frame).expect("vector A is a valid frame");

    let eth = d.eth.expect("Ethernet");
    assert_eq!(
        eth.dst_addr(),
        Address([0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2])
    );
    assert_eq!(
        eth.src_addr(),
        Address([0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32])
    );
    assert_eq!(eth.ethertype(), EtherType::IPV4);
    assert_eq!(d.vlans().count(), 0);
    assert_eq!(d.ethertype, Some(EtherType::IPV4));
    assert_eq!(d.network_offset, 14);

    let ip = d.ipv4().expect("IPv4");
    assert_eq!(ip.version(), 4);
    assert_eq!(ip.header_len(), 20);
    // TOS 0xC2 = DSCP 0x30 (48) << 2 | ECN 0b10
    assert_eq!(ip.dscp(), 48);
    assert_eq!(ip.ecn(), 0b10);
    assert_eq!(ip.total_len(), 60);
    assert_eq!(ip.ident(), 0x718c);
    assert!(ip.dont_frag());
    assert!(!ip.more_frags());
    assert_eq!(ip.hop_limit(), 64);
    assert_eq!(ip.next_header(), ipv4::IpProtocol::UDP);
    assert_eq!(ip.checksum(), 0x9161);
    assert!(ip.verify_checksum());
    assert_eq!(ip.src_addr(), Ipv4Addr::new(10, 0, 17, 1));
    assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 0, 18, 1));

    let udp = d.udp.expect("UDP");
    assert_eq!(d.udp_offset, 34);
    assert_eq!(udp.src_port(), 0);
    assert_eq!(udp.dst_port(), 4791);
    assert_eq!(udp.len(), 40);
    assert_eq!(udp.checksum(), 0);

    let roce = d.roce.expect("RoCE");
    assert_eq!(roce.version, RoceVersion::V2);
    assert_eq!(roce.bth_offset, 42);
    assert_eq!(roce.opcode(), Opcode(0x81));
    assert_eq!(roce.opcode().to_string(), "CNP");
    assert_eq!(roce.info.map(|i| i.name), Some("CNP"));
    let b = roce.bth;
    assert!(b.becn());
    assert!(!b.fecn());
    assert!(!b.solicited_event());
    assert!(!b.mig_req());
    assert_eq!(b.pad_count(), 0);
    assert_eq!(b.tver(), 0);
    assert_eq!(b.pkey(), 0xffff);
    assert_eq!(b.dest_qp(), Qpn::new_masked(0x118));
    assert!(!b.ack_req());
    assert_eq!(b.psn(), Psn::new_masked(0));
    assert_eq!(roce.exts.list(), &[ExtHeader::CnpPad]);
    let (range, _) = roce.exts.locate(ExtHeader::CnpPad).expect("CNP pad");
    assert_eq!(range, 54..70);
    assert!(roce.exts.cnp().is_some());
    assert_eq!(roce.payload_offset, 70);
    assert_eq!(roce.payload_len, 0);
    assert!(roce.payload.is_empty());
    assert!(roce.pad.is_empty());
    assert_eq!(roce.icrc, Some([0x82, 0xfd, 0x00, 0x2a]));
    assert_eq!(roce.icrc_value(), Some(0x2A00_FD82));
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
    assert_eq!(roce.cm(), None);
}

#[test]
fn vector_b_uc_send_only_with_pad_dissects_strictly() {
    let frame = vector_b();
    assert_eq!(frame.len(), 78);
    let d = dissect(&frame).expect("vector B is a valid frame");

    let eth = d.eth.expect("Ethernet");
    let addr = Address([0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22]);
    assert_eq!(eth.dst_addr(), addr);
    assert_eq!(eth.src_addr(), addr);

    let ip = d.ipv4().expect("IPv4");
    // TOS 0x01: DSCP 0, ECN 1
    assert_eq!(ip.dscp(), 0);
    assert_eq!(ip.ecn(), 1);
    assert_eq!(ip.total_len(), 64);
    assert_eq!(ip.ident(), 1144);
    assert!(ip.dont_frag());
    assert_eq!(ip.hop_limit(), 64);
    assert_eq!(ip.checksum(), 0xB4D5);
    assert!(ip.verify_checksum());
    assert_eq!(ip.src_addr(), Ipv4Addr::new(192, 168, 0, 7));
    assert_eq!(ip.dst_addr(), Ipv4Addr::new(192, 168, 0, 7));

    let udp = d.udp.expect("UDP");
    assert_eq!(udp.src_port(), 49152);
    assert_eq!(udp.dst_port(), 4791);
    // 8 + 12 + 20 + 4
    assert_eq!(udp.len(), 44);
    assert_eq!(udp.checksum(), 0xACA2);
    let a = core::net::IpAddr::V4(Ipv4Addr::new(192, 168, 0, 7));
    assert!(udp.verify_checksum(&a, &a));

    let roce = d.roce.expect("RoCE");
    assert_eq!(roce.opcode(), Opcode(0x24));
    assert_eq!(roce.opcode().to_string(), "UC_SEND_ONLY");
    let b = roce.bth;
    assert!(b.mig_req());
    assert_eq!(b.pad_count(), 2);
    assert_eq!(b.pkey(), 0xffff);
    assert_eq!(b.dest_qp(), Qpn::new_masked(211));
    assert_eq!(b.psn(), Psn::new_masked(13_571_856));
    assert!(roce.exts.list().is_empty());
    // 20 bytes after the BTH = 18 payload + 2 pad
    assert_eq!(roce.payload_len, 18);
    assert_eq!(roce.payload_offset, 54);
    assert_eq!(
        roce.payload,
        &hex("4630818be28935d90e9a95505401be885e50")[..]
    );
    assert_eq!(roce.pad, &[0, 0]);
    assert_eq!(roce.icrc, Some([0x78, 0xf3, 0x53, 0xf3]));
    assert_eq!(roce.icrc_value(), Some(0xF353_F378));
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
}

#[test]
fn vector_a_flipped_payload_bit_is_invalid_not_an_error() {
    let mut frame = vector_a();
    frame[60] ^= 0x01; // a CNP reserved byte, covered by the ICRC
    let d = dissect(&frame).expect("a bad ICRC is a finding, not a parse error");
    match d.icrc_status() {
        IcrcStatus::Invalid { expected, found } => {
            assert_eq!(found, 0x2A00_FD82);
            assert_ne!(expected, found);
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    // TTL, TOS and the IP checksum are masked: changing them keeps the ICRC valid.
    let mut frame = vector_a();
    frame[14 + 1] = 0x03; // TOS
    frame[14 + 8] = 1; // TTL
    frame[14 + 10] = 0; // checksum
    frame[42 + 4] = 0x80; // FECN instead of BECN
    assert_eq!(dissect(&frame).unwrap().icrc_status(), IcrcStatus::Valid);
}

// ---------------------------------------------------------------- VLAN

fn tag(tpid: EtherType, pcp: u8, vid: u16) -> Option<BuildTag> {
    Some(BuildTag {
        tpid,
        tag: vlan::Repr {
            pcp,
            dei: false,
            vid: vlan::VlanId::new_masked(vid),
            ethertype: EtherType(0),
        },
    })
}

fn tagged(vlans: [Option<BuildTag>; 2]) -> Vec<u8> {
    let mut f = v4_frame(Opcode(0x04), ExtReprs::default(), 10);
    f.l2.vlans = vlans;
    build(&f)
}

#[test]
fn single_8021q_tag_with_pcp_3() {
    let frame = tagged([tag(EtherType::VLAN, 3, 100), None]);
    // TPID 0x8100, TCI = 3 << 13 | 100 = 0x6000 | 0x0064, then IPv4
    assert_eq!(&frame[12..18], &[0x81, 0x00, 0x60, 0x64, 0x08, 0x00]);
    let d = dissect(&frame).expect("tagged frame");
    let tags: Vec<_> = d.vlans().collect();
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].tpid, EtherType::VLAN);
    assert_eq!(tags[0].offset, 12);
    assert_eq!(tags[0].header.pcp(), 3);
    assert!(!tags[0].header.dei());
    assert_eq!(tags[0].header.vid().value(), 100);
    assert_eq!(tags[0].header.ethertype(), EtherType::IPV4);
    assert_eq!(d.ethertype, Some(EtherType::IPV4));
    assert_eq!(d.network_offset, 18);
    assert_eq!(d.udp_offset, 38);
    assert_eq!(d.roce.unwrap().bth_offset, 46);
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
}

#[test]
fn qinq_88a8_then_8100() {
    let frame = tagged([tag(EtherType::QINQ, 5, 0xABC), tag(EtherType::VLAN, 3, 7)]);
    // 88a8 | TCI 5<<13|0xabc = 0xaabc | 8100 | TCI 3<<13|7 = 0x6007 | 0800
    assert_eq!(
        &frame[12..22],
        &[0x88, 0xa8, 0xaa, 0xbc, 0x81, 0x00, 0x60, 0x07, 0x08, 0x00]
    );
    let d = dissect(&frame).expect("QinQ frame");
    let tags: Vec<_> = d.vlans().collect();
    assert_eq!(tags.len(), 2);
    assert_eq!(tags[0].tpid, EtherType::QINQ);
    assert_eq!(tags[0].offset, 12);
    assert_eq!(tags[0].header.pcp(), 5);
    assert_eq!(tags[0].header.vid().value(), 0xABC);
    assert_eq!(tags[1].tpid, EtherType::VLAN);
    assert_eq!(tags[1].offset, 16);
    assert_eq!(tags[1].header.pcp(), 3);
    assert_eq!(tags[1].header.vid().value(), 7);
    assert_eq!(d.network_offset, 22);
    assert!(d.ipv4().is_some());
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
}

#[test]
fn legacy_9100_outer_tag() {
    let frame = tagged([
        tag(EtherType::QINQ_LEGACY, 1, 10),
        tag(EtherType::VLAN, 0, 20),
    ]);
    assert_eq!(&frame[12..14], &[0x91, 0x00]);
    let d = dissect(&frame).expect("0x9100 frame");
    let tags: Vec<_> = d.vlans().collect();
    assert_eq!(tags.len(), 2);
    assert_eq!(tags[0].tpid, EtherType(0x9100));
    assert_eq!(tags[0].header.vid().value(), 10);
    assert_eq!(tags[1].header.vid().value(), 20);
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);

    let frame = tagged([tag(EtherType::QINQ_LEGACY, 2, 30), None]);
    let d = dissect(&frame).expect("single 0x9100 tag");
    assert_eq!(d.vlans().count(), 1);
    assert_eq!(d.vlans().next().unwrap().header.pcp(), 2);
    assert!(d.roce.is_some());
}

/// An untagged frame with `n` 0x8100 tags inserted after the source MAC.
fn with_raw_tags(n: usize) -> Vec<u8> {
    let inner = vector_a();
    let mut frame = inner[..12].to_vec();
    for i in 0..n {
        frame.extend_from_slice(&[0x81, 0x00, 0x00, u8::try_from(i + 1).unwrap()]);
    }
    frame.extend_from_slice(&inner[12..]);
    frame
}

#[test]
fn max_vlans_tags_decode_and_one_more_is_unsupported() {
    assert_eq!(MAX_VLANS, 4);
    let frame = with_raw_tags(MAX_VLANS);
    let d = dissect(&frame).expect("four tags are fine");
    assert_eq!(d.vlans().count(), 4);
    // VIDs 1, 2, 3, 4 in order, each TPID 4 bytes further
    for (i, t) in d.vlans().enumerate() {
        assert_eq!(usize::from(t.header.vid().value()), i + 1);
        assert_eq!(t.offset, 12 + 4 * i);
    }
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);

    let frame = with_raw_tags(MAX_VLANS + 1);
    // the fifth TPID sits at 12 + 4 * 4 = 28
    let expected = WireError::Unsupported {
        layer: Layer::Vlan,
        offset: 28,
        value: 0x8100,
    };
    assert_eq!(dissect(&frame).unwrap_err(), expected);
    let (d, err) = dissect_lax(&frame);
    assert_eq!(err, Some(expected));
    assert_eq!(d.vlans().count(), 4);
    assert!(d.eth.is_some());
    assert!(d.roce.is_none());
}

#[test]
fn vlan_tag_cut_short_is_truncated_vlan() {
    let frame = with_raw_tags(1);
    // Ethernet (14) + 2 of the 4 TCI/EtherType bytes
    let (d, err) = dissect_lax(&frame[..16]);
    assert!(d.eth.is_some());
    match err {
        Some(WireError::Truncated { layer, offset, .. }) => {
            assert_eq!(layer, Layer::Vlan);
            assert_eq!(offset, 14);
        }
        other => panic!("expected Truncated VLAN, got {other:?}"),
    }
}

#[test]
fn tagged_pfc_frame_decodes() {
    let pfc = MacControlFrame {
        l2: L2 {
            eth: ethernet::Repr {
                dst_addr: mac_control::PAUSE_DST,
                src_addr: mac(9),
                ethertype: EtherType(0),
            },
            vlans: [tag(EtherType::VLAN, 7, 0), None],
        },
        body: mac_control::Repr::Pfc {
            enable: 0x0009,
            quanta: [0xffff, 0, 0, 0x1234, 0, 0, 0, 0],
        },
    };
    let mut buf = [0u8; 64];
    let n = pfc.emit(&mut buf).unwrap();
    assert_eq!(n, 60);
    // 8100 | TCI 7<<13 = 0xe000 | 8808 | opcode 0101 | PEV 0009 | time[0] ffff
    assert_eq!(
        &buf[12..24],
        &[
            0x81, 0x00, 0xe0, 0x00, 0x88, 0x08, 0x01, 0x01, 0x00, 0x09, 0xff, 0xff
        ]
    );
    let d = dissect(&buf[..n]).expect("tagged PFC");
    assert_eq!(d.vlans().count(), 1);
    assert_eq!(d.ethertype, Some(EtherType::MAC_CONTROL));
    let p = d.mac_control().expect("MAC Control");
    assert_eq!(p.opcode(), mac_control::MacControlOpcode::PFC);
    assert_eq!(p.pfc_enable(), 0x0009);
    assert!(p.priority_enabled(0));
    assert!(p.priority_enabled(3));
    assert!(!p.priority_enabled(1));
    assert_eq!(p.pfc_quanta(0), 0xffff);
    assert_eq!(p.pfc_quanta(3), 0x1234);
    assert!(d.roce.is_none());
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
}

// ---------------------------------------------------------------- truncation

/// RC_RDMA_WRITE_FIRST over IPv4, untagged, payload 6 (PadCnt 2):
/// Ethernet 0..14, IPv4 14..34, UDP 34..42, BTH 42..54, RETH 54..70,
/// payload 70..76, pad 76..78, ICRC 78..82.
fn write_first() -> Vec<u8> {
    let exts = ExtReprs {
        reth: Some(reth::Repr {
            va: 0x1122_3344_5566_7788,
            rkey: 0xdead_beef,
            dma_len: 4096,
        }),
        ..ExtReprs::default()
    };
    build(&v4_frame(Opcode::RC_RDMA_WRITE_FIRST, exts, 6))
}

#[test]
fn truncation_at_every_length() {
    let frame = write_first();
    assert_eq!(frame.len(), 82);
    let whole = dissect(&frame).expect("whole frame");
    assert_eq!(whole.icrc_status(), IcrcStatus::Valid);
    assert_eq!(whole.roce.unwrap().payload_len, 6);
    assert_eq!(whole.roce.unwrap().pad, &[0, 0]);

    for len in 0..frame.len() {
        let cut = &frame[..len];
        let (d, err) = dissect_lax(cut);
        let Some(WireError::Truncated {
            layer,
            offset,
            need,
            have,
        }) = err
        else {
            panic!("cut at {len}: expected Truncated, got {err:?}");
        };
        // (layer, offset of the layer, bytes it needs)
        let (want_layer, want_offset, want_need) = match len {
            0..14 => (Layer::Ethernet, 0, 14),
            14..34 => (Layer::Ipv4, 14, 20),
            34..42 => (Layer::Udp, 34, 8),
            42..54 => (Layer::Bth, 42, 12),
            54..70 => (Layer::Reth, 54, 16),
            // total length 68 = 20 + 8 + 12 + 16 + 6 + 2 + 4 from offset 14
            _ => (Layer::Ipv4, 14, 68),
        };
        assert_eq!(layer, want_layer, "cut at {len}: {err:?}");
        assert_eq!(offset, want_offset, "cut at {len}: {err:?}");
        assert_eq!(need, want_need, "cut at {len}: {err:?}");
        assert_eq!(have, len - want_offset, "cut at {len}: {err:?}");
        assert!(dissect(cut).is_err(), "strict must fail at {len}");

        assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable, "cut at {len}");
        // the layers before the cut are there
        assert_eq!(d.eth.is_some(), len >= 14, "Ethernet at {len}");
        assert_eq!(d.ipv4().is_some(), len >= 34, "IPv4 at {len}");
        assert_eq!(d.udp.is_some(), len >= 42, "UDP at {len}");
        assert_eq!(d.roce.is_some(), len >= 54, "BTH at {len}");
        if let Some(roce) = d.roce {
            assert_eq!(roce.opcode(), Opcode::RC_RDMA_WRITE_FIRST);
            assert_eq!(roce.bth.psn(), Psn::new_masked(0x10));
            assert_eq!(roce.exts.reth().is_some(), len >= 70, "RETH at {len}");
            // the payload length comes from the headers, the bytes from the capture
            assert_eq!(roce.payload_len, 6);
            assert_eq!(
                roce.payload.len(),
                len.clamp(70, 76) - 70,
                "payload at {len}"
            );
            assert_eq!(roce.pad.len(), len.clamp(76, 78) - 76, "pad at {len}");
            assert_eq!(roce.icrc, None, "ICRC at {len}");
            if let Some(r) = roce.exts.reth() {
                assert_eq!(r.va(), 0x1122_3344_5566_7788);
                assert_eq!(r.rkey(), 0xdead_beef);
            }
        }
    }
}

#[test]
fn truncated_ipv6_and_grh_frames_report_their_length_field() {
    // Vector D (IPv6, RC_SEND_ONLY, 5-byte payload, PadCnt 3), 106 bytes.
    let frame = hex(
        "02000000000202000000000186dd6681234500201140fe800000000000000000000000000001\
         fe800000000000000000000000000002c12312b7002000000430ffff0000012380abcdef0102\
         0304050000004c406c64",
    );
    // 14 + 40 + 8 + 12 + 5 + 3 + 4
    assert_eq!(frame.len(), 86);
    let d = dissect(&frame).expect("vector D");
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
    assert_eq!(d.roce.unwrap().payload_len, 5);
    // cut in the payload: IPv6 payload length 32 points past the end
    let (d, err) = dissect_lax(&frame[..frame.len() - 6]);
    assert_eq!(
        err,
        Some(WireError::Truncated {
            layer: Layer::Ipv6,
            offset: 14,
            need: 40 + 32,
            have: 40 + 32 - 6,
        })
    );
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
    assert!(d.roce.is_some());
    // cut in the IPv6 header
    let (_, err) = dissect_lax(&frame[..14 + 39]);
    assert!(matches!(
        err,
        Some(WireError::Truncated {
            layer: Layer::Ipv6,
            offset: 14,
            need: 40,
            ..
        })
    ));
}

// ---------------------------------------------------------------- malformed

#[test]
fn udp_length_below_8_is_malformed_udp() {
    let mut frame = vector_a();
    frame[38..40].copy_from_slice(&4u16.to_be_bytes());
    let (d, err) = dissect_lax(&frame);
    let (layer, reason) = malformed(err);
    assert_eq!(
        (layer, reason),
        (Layer::Udp, Malformed::LengthTooShort { value: 4, need: 8 })
    );
    assert_eq!(
        err.unwrap().to_string(),
        "malformed UDP at offset 34: length field says 4 bytes, less than the 8 bytes of the headers it carries"
    );
    assert!(d.ipv4().is_some());
}

#[test]
fn udp_length_below_bth_plus_icrc_is_length_too_short() {
    // 8 + 12 + 4 = 24 is the smallest RoCEv2 UDP length; 20 and 23 are too short.
    for udp_len in [8u16, 20, 23] {
        let mut frame = vector_a();
        frame[38..40].copy_from_slice(&udp_len.to_be_bytes());
        let (d, err) = dissect_lax(&frame);
        let (layer, reason) = malformed(err);
        // BTH (12) + CNP (16) + ICRC (4) = 32 bytes after the UDP header; an empty one
        // cannot even hold the BTH and its ICRC (16)
        let transport = u32::from(udp_len) - 8;
        let need = if transport < 12 { 16 } else { 32 };
        assert_eq!(
            reason,
            Malformed::LengthTooShort {
                value: transport,
                need
            },
            "UDP length {udp_len}"
        );
        assert!(
            matches!(layer, Layer::Udp | Layer::Bth),
            "UDP length {udp_len}: {layer:?}"
        );
        assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
        assert!(dissect(&frame).is_err());
    }
    // A CNP needs 8 + 12 + 16 + 4 = 40; 36 leaves no room for the ICRC.
    let mut frame = vector_a();
    frame[38..40].copy_from_slice(&36u16.to_be_bytes());
    let (layer, reason) = malformed(dissect_lax(&frame).1);
    assert_eq!(
        (layer, reason),
        (
            Layer::Bth,
            Malformed::LengthTooShort {
                value: 28,
                need: 32
            }
        )
    );
}

#[test]
fn udp_length_beyond_ip_payload_is_malformed() {
    let mut frame = vector_a();
    // IP says 40 bytes of UDP; UDP claims 44
    frame[38..40].copy_from_slice(&44u16.to_be_bytes());
    let (d, err) = dissect_lax(&frame);
    let (layer, reason) = malformed(err);
    assert_eq!(
        (layer, reason),
        (
            Layer::Udp,
            Malformed::LengthPastPayload {
                value: 44,
                room: 40
            }
        )
    );
    assert_eq!(
        err.unwrap().to_string(),
        "malformed UDP at offset 34: length field says 44 bytes, more than the 40 bytes of the IP payload"
    );
    // the lax view keeps the UDP header and the BTH after it, read as far as the IP
    // payload goes; the ICRC is not verifiable
    let udp = d.udp.expect("still a UDP header");
    assert_eq!(udp.len(), 44);
    let roce = d.roce.expect("the BTH after it is still decoded");
    assert_eq!(roce.opcode(), Opcode::CNP);
    assert_eq!(roce.bth.dest_qp().value(), 0x000118);
    assert!(roce.exts.cnp().is_some());
    assert_eq!(roce.icrc, None);
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
    assert_eq!(dissect(&frame).unwrap_err(), err.unwrap());
}

#[test]
fn unknown_opcode_on_a_known_transport_is_malformed() {
    // vector B's RC SEND with the opcode replaced: UD 0x7F and RC 0x1A are not defined
    for (op, transport) in [(0x7Fu8, "UD"), (0x1A, "RC"), (0x3F, "UC"), (0xBF, "XRC")] {
        let mut frame = vector_b();
        frame[42] = op;
        let (d, err) = dissect_lax(&frame);
        let (layer, reason) = malformed(err);
        assert_eq!(
            (layer, reason),
            (
                Layer::Bth,
                Malformed::UnknownOpcode {
                    opcode: op,
                    transport
                }
            )
        );
        assert_eq!(
            err.unwrap().to_string(),
            format!("malformed BTH at offset 42: opcode {op:#04x} is not defined for {transport}")
        );
        let roce = d.roce.expect("the BTH is kept");
        assert_eq!(roce.opcode(), Opcode(op));
        // no layout: the bytes after the BTH are kept as payload, the ICRC not judged
        assert!(roce.exts.list().is_empty());
        assert!(roce.payload_len > 0);
        assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
    }
    // vendor and reserved opcodes are shown as unknown without a finding
    for op in [0xC5u8, 0xE0, 0xFF] {
        let mut frame = vector_b();
        frame[42] = op;
        let (d, err) = dissect_lax(&frame);
        assert!(
            !matches!(err, Some(WireError::Malformed { .. })),
            "{op:#x}: {err:?}"
        );
        assert!(d.roce.is_some());
    }
}

#[test]
fn ipv4_ihl_below_5_is_header_length() {
    for ihl in 0u8..5 {
        let mut frame = vector_a();
        frame[14] = 0x40 | ihl;
        let (d, err) = dissect_lax(&frame);
        assert_eq!(
            err,
            Some(WireError::Malformed {
                layer: Layer::Ipv4,
                offset: 14,
                reason: Malformed::HeaderLength {
                    value: u16::from(ihl) * 4,
                    min: 20
                }
            }),
            "IHL {ihl}"
        );
        assert!(d.eth.is_some());
        assert!(d.udp.is_none());
    }
}

#[test]
fn ipv4_total_length_below_header_length() {
    for total in [0u16, 19] {
        let mut frame = vector_a();
        frame[16..18].copy_from_slice(&total.to_be_bytes());
        let (layer, reason) = malformed(dissect_lax(&frame).1);
        let want = Malformed::LengthTooShort {
            value: u32::from(total),
            need: 20,
        };
        assert_eq!((layer, reason), (Layer::Ipv4, want));
    }
    // IHL 6 (24 bytes) with total length 22
    let mut frame = vector_a();
    frame[14] = 0x46;
    frame[16..18].copy_from_slice(&22u16.to_be_bytes());
    let (layer, reason) = malformed(dissect_lax(&frame).1);
    let want = Malformed::LengthTooShort {
        value: 22,
        need: 24,
    };
    assert_eq!((layer, reason), (Layer::Ipv4, want));
}

#[test]
fn ip_total_length_exactly_headers_leaves_no_udp() {
    // IPv4 total length 20: no UDP header inside the datagram
    let mut frame = vector_a();
    frame[16..18].copy_from_slice(&20u16.to_be_bytes());
    let (layer, reason) = malformed(dissect_lax(&frame).1);
    let want = Malformed::LengthTooShort { value: 0, need: 8 };
    assert_eq!((layer, reason), (Layer::Udp, want));
}

#[test]
fn pad_count_larger_than_payload_room() {
    // RC_SEND_ONLY with an empty payload: 12 + 0 + 4 = 16 bytes of transport,
    // so any PadCnt > 0 does not fit.
    let frame = build(&v4_frame(Opcode::RC_SEND_ONLY, ExtReprs::default(), 0));
    let bth_at = 42;
    for pad in 1u8..4 {
        let mut f = frame.clone();
        f[bth_at + 1] = (f[bth_at + 1] & !0x30) | (pad << 4);
        let (d, err) = dissect_lax(&f);
        assert_eq!(
            err,
            Some(WireError::Malformed {
                layer: Layer::Bth,
                offset: bth_at,
                reason: Malformed::PadCount { pad, room: 0 }
            }),
            "PadCnt {pad}"
        );
        let roce = d.roce.expect("the BTH itself is kept");
        assert_eq!(roce.bth.pad_count(), pad);
        assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
        assert_eq!(
            err.unwrap().to_string(),
            format!(
                "malformed BTH at offset 42: pad count {pad} larger than the 0 bytes between the headers and the ICRC"
            )
        );
    }
    // an ACKNOWLEDGE (BTH + AETH + ICRC, no payload) with PadCnt 2: the AETH is still shown
    let ack = ExtReprs {
        aeth: Some(aeth::Repr {
            syndrome: aeth::Syndrome(0x1F),
            msn: 9,
        }),
        ..ExtReprs::default()
    };
    let mut f = build(&v4_frame(Opcode::RC_ACKNOWLEDGE, ack, 0));
    f[bth_at + 1] = (f[bth_at + 1] & !0x30) | (2 << 4);
    let (d, err) = dissect_lax(&f);
    assert_eq!(
        malformed(err),
        (Layer::Bth, Malformed::PadCount { pad: 2, room: 0 })
    );
    let roce = d.roce.expect("the BTH is kept");
    let a = roce.exts.aeth().expect("the AETH is kept");
    assert_eq!((a.syndrome().0, a.msn()), (0x1F, 9));
    assert_eq!(roce.icrc, None);
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
    // payload 1 (PadCnt 3 on the wire): 1 + 3 = 4 bytes of room; PadCnt is 2 bits, so
    // room is exceeded only with a shorter payload. Vector B: payload+pad = 20, fine.
    let mut b = vector_b();
    b[43] |= 0x30; // PadCnt 3 instead of 2: 17 payload bytes, still fits
    let (d, err) = dissect_lax(&b);
    assert_eq!(err, None);
    assert_eq!(d.roce.unwrap().payload_len, 17);
}

#[test]
fn ip_version_mismatch() {
    // EtherType IPv4, version nibble 6
    let mut frame = vector_a();
    frame[14] = 0x65;
    let (layer, reason) = malformed(dissect_lax(&frame).1);
    let want = Malformed::Version {
        found: 6,
        expected: 4,
    };
    assert_eq!((layer, reason), (Layer::Ipv4, want));

    // EtherType IPv6 carrying an IPv4 header (padded to 40 bytes)
    let mut frame = vector_a();
    frame[12..14].copy_from_slice(&[0x86, 0xdd]);
    let (d, err) = dissect_lax(&frame);
    assert_eq!(
        err,
        Some(WireError::Malformed {
            layer: Layer::Ipv6,
            offset: 14,
            reason: Malformed::Version {
                found: 4,
                expected: 6
            }
        })
    );
    assert!(d.network.is_none());

    // EtherType RoCEv1 with a version-4 header
    let mut frame = vector_a();
    frame[12..14].copy_from_slice(&[0x89, 0x15]);
    let (layer, reason) = malformed(dissect_lax(&frame).1);
    let want = Malformed::Version {
        found: 4,
        expected: 6,
    };
    assert_eq!((layer, reason), (Layer::Grh, want));
}

// ---------------------------------------------------------------- lengths from headers

#[test]
fn ethernet_padding_and_fcs_are_not_roce_bytes() {
    let mut frame = vector_a();
    frame.extend_from_slice(&[0; 6]); // Ethernet padding
    frame.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // FCS
    let d = dissect(&frame).expect("padding and FCS are ignored");
    let roce = d.roce.unwrap();
    assert_eq!(roce.payload_len, 0);
    // UDP ends at 34 + 40 = 74: the ICRC is 70..74, not the last 4 bytes
    assert_eq!(roce.icrc, Some([0x82, 0xfd, 0x00, 0x2a]));
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
    assert_eq!(d.ipv4().unwrap().payload().len(), 40);
    assert_eq!(d.udp.unwrap().payload().len(), 32);

    let mut frame = vector_b();
    frame.extend_from_slice(&[0x55; 6]);
    frame.extend_from_slice(&[1, 2, 3, 4]);
    let d = dissect(&frame).unwrap();
    let roce = d.roce.unwrap();
    assert_eq!(roce.payload_len, 18);
    assert_eq!(roce.payload.len(), 18);
    assert_eq!(roce.pad, &[0, 0]);
    assert_eq!(roce.icrc, Some([0x78, 0xf3, 0x53, 0xf3]));
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
}

#[test]
fn short_frame_padded_to_60_then_fcs() {
    // RC ACK: 14 + 20 + 8 + 12 + 4 (AETH) + 4 = 62 > 60; RC_SEND_ONLY with no
    // payload is 14 + 20 + 8 + 12 + 4 = 58, padded with 2 zero bytes to 60.
    let mut frame = build(&v4_frame(Opcode::RC_SEND_ONLY, ExtReprs::default(), 0));
    assert_eq!(frame.len(), 60);
    assert_eq!(&frame[58..], &[0, 0]);
    frame.extend_from_slice(&[9, 9, 9, 9]);
    let d = dissect(&frame).unwrap();
    assert_eq!(d.roce.unwrap().payload_len, 0);
    assert_eq!(d.icrc_status(), IcrcStatus::Valid);
}

// ---------------------------------------------------------------- unknown opcodes

#[test]
fn unknown_and_vendor_opcodes_keep_bytes_as_payload() {
    // (reserved and vendor ranges; an undefined opcode of a known transport is malformed,
    // see unknown_opcode_on_a_known_transport_is_malformed)
    for (code, shown) in [(0xC5u8, "UNKNOWN(0xc5)"), (0xE3, "UNKNOWN(0xe3)")] {
        // payload 20 (a multiple of 4, PadCnt 0): every byte after the BTH up to the ICRC
        let frame = build(&v4_frame(Opcode(code), ExtReprs::default(), 20));
        // 14 + 20 + 8 + 12 + 20 + 4
        assert_eq!(frame.len(), 78);
        let d = dissect(&frame).expect("unknown opcodes are not errors");
        let roce = d.roce.expect("RoCE");
        assert_eq!(roce.opcode(), Opcode(code));
        assert_eq!(roce.info, None);
        assert!(roce.exts.list().is_empty());
        assert_eq!(roce.payload_offset, 54);
        assert_eq!(roce.payload_len, 20);
        assert_eq!(roce.payload, &frame[54..74]);
        assert_eq!(roce.opcode().to_string(), shown);
        assert!(roce.bth.to_string().contains(shown), "{}", roce.bth);
        assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
    }
}

#[test]
fn unknown_opcode_with_extension_like_bytes_is_not_misparsed() {
    // 0xC5 followed by 16 bytes that would be a RETH for 0x06: still payload
    let mut frame = write_first();
    frame[42] = 0xC5;
    let d = dissect(&frame).expect("still a frame");
    let roce = d.roce.unwrap();
    assert_eq!(roce.info, None);
    assert!(roce.exts.reth().is_none());
    // 68 - 20 - 8 - 12 - PadCnt 2 - 4 = 22: RETH (16) + payload (6)
    assert_eq!(roce.payload_len, 22);
    assert_eq!(roce.payload, &frame[54..76]);
    // the opcode is covered by the ICRC
    assert!(matches!(roce.icrc_status(), IcrcStatus::Invalid { .. }));
}

// ---------------------------------------------------------------- ports and starts

fn with_ports(src: u16, dst: u16) -> Vec<u8> {
    let mut f = v4_frame(Opcode::RC_SEND_ONLY, ExtReprs::default(), 8);
    f.network = NetworkRepr::Ipv4 {
        ip: ip4(),
        src_port: src,
        dst_port: dst,
    };
    build(&f)
}

#[test]
fn roce_ports_option_adds_a_port() {
    let frame = with_ports(0xc000, 4792);
    let d = dissect(&frame).expect("plain UDP is fine");
    assert!(d.udp.is_some());
    assert_eq!(d.udp.unwrap().dst_port(), 4792);
    assert!(d.roce.is_none(), "4792 is not RoCE by default");
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);

    let (d, err) = dissect_with(
        &frame,
        Start::Ethernet,
        &Options {
            roce_ports: &[4792],
            ..Options::default()
        },
    );
    assert_eq!(err, None);
    let roce = d.roce.expect("4792 is RoCE when asked");
    assert_eq!(roce.opcode(), Opcode::RC_SEND_ONLY);
    assert_eq!(roce.payload_len, 8);
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);

    // 4791 stays RoCE with the option set
    let frame = with_ports(0xc000, 4791);
    let (d, _) = dissect_with(
        &frame,
        Start::Ethernet,
        &Options {
            roce_ports: &[4792],
            ..Options::default()
        },
    );
    assert!(d.roce.is_some());
}

#[test]
fn source_port_69_to_4791_is_roce_not_tftp() {
    let frame = with_ports(69, 4791);
    let d = dissect(&frame).unwrap();
    assert_eq!(d.udp.unwrap().src_port(), 69);
    let roce = d.roce.expect("destination 4791 decides");
    assert_eq!(roce.opcode(), Opcode::RC_SEND_ONLY);
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);

    // and 4791 as *source* port only is not RoCE
    let frame = with_ports(4791, 69);
    assert!(dissect(&frame).unwrap().roce.is_none());
}

#[test]
fn start_at_ethertype_dissects_sll_payload() {
    let frame = vector_a();
    let (d, err) = dissect_with(
        &frame[14..],
        Start::EtherType(EtherType::IPV4),
        &Options::default(),
    );
    assert_eq!(err, None);
    assert!(d.eth.is_none());
    assert_eq!(d.vlans().count(), 0);
    assert_eq!(d.ethertype, Some(EtherType::IPV4));
    assert_eq!(d.network_offset, 0);
    assert_eq!(d.ipv4().unwrap().src_addr(), Ipv4Addr::new(10, 0, 17, 1));
    assert_eq!(d.udp_offset, 20);
    let roce = d.roce.unwrap();
    assert_eq!(roce.bth_offset, 28);
    assert_eq!(roce.opcode(), Opcode::CNP);
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);

    // IPv6 start (vector D without its Ethernet header)
    let v6 = hex("6681234500201140fe800000000000000000000000000001\
         fe800000000000000000000000000002c12312b7002000000430ffff0000012380abcdef0102\
         0304050000004c406c64");
    let (d, err) = dissect_with(&v6, Start::EtherType(EtherType::IPV6), &Options::default());
    assert_eq!(err, None);
    let ip = d.ipv6().unwrap();
    assert_eq!(ip.flow_label(), 0x12345);
    assert_eq!(ip.src_addr(), "fe80::1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(d.roce.unwrap().icrc_status(), IcrcStatus::Valid);

    // a VLAN tag as the start EtherType is followed too
    let mut tagged_v4 = vec![0x20, 0x05, 0x08, 0x00];
    tagged_v4.extend_from_slice(&frame[14..]);
    let (d, err) = dissect_with(
        &tagged_v4,
        Start::EtherType(EtherType::VLAN),
        &Options::default(),
    );
    assert_eq!(err, None);
    let t = d.vlans().next().unwrap();
    assert_eq!(t.header.vid().value(), 5);
    assert_eq!(t.offset, 0, "the TPID is not in the frame");
    assert_eq!(d.roce.unwrap().icrc_status(), IcrcStatus::Valid);
}

// ---------------------------------------------------------------- CM

#[test]
fn ud_send_to_qp1_carries_a_cm_mad() {
    let msg = CmMessage {
        local_comm_id: 0x1234_5678,
        service_id: Some(0x0000_0000_0106_4791),
        local_qpn: Some(Qpn::new_masked(0x00_00a5)),
        local_eecn: Some(0),
        starting_psn: Some(Psn::new_masked(0x00ab_cdef)),
        pkey: Some(0xffff),
        path_mtu_code: Some(5),
        path_mtu: Some(4096),
        transport_service_type: Some(cm::transport_service::RC),
        retry_count: Some(7),
        rnr_retry_count: Some(7),
        responder_resources: Some(16),
        initiator_depth: Some(16),
        primary_local_lid: Some(0xffff),
        primary_remote_lid: Some(0xffff),
        primary_local_gid: Some(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()),
        primary_remote_gid: Some(Ipv4Addr::new(10, 0, 0, 2).to_ipv6_mapped()),
        ..CmMessage::new(CmAttribute::CONNECT_REQUEST, 0x0102_0304_0506_0708)
    };
    let mad = msg.to_bytes();
    assert_eq!(mad.len(), cm::MAD_LEN);
    let mut f = v4_frame(
        Opcode::UD_SEND_ONLY,
        ExtReprs {
            deth: Some(deth::Repr {
                qkey: 0x8001_0000,
                src_qp: Qpn::new_masked(1),
            }),
            ..ExtReprs::default()
        },
        mad.len(),
    );
    f.bth.dest_qp = Qpn::GSI;
    let mut buf = vec![0u8; f.buffer_len()];
    let n = f
        .emit(&mut buf, &Policy::default(), |p| p.copy_from_slice(&mad))
        .unwrap();
    // 14 + 20 + 8 + 12 + 8 (DETH) + 256 + 4
    assert_eq!(n, 322);
    let d = dissect(&buf[..n]).expect("UD SEND");
    let roce = d.roce.unwrap();
    assert_eq!(roce.exts.deth().unwrap().qkey(), 0x8001_0000);
    assert_eq!(roce.payload_len, 256);
    assert_eq!(roce.cm(), Some(msg));
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);

    // the same MAD to another QP is just payload
    f.bth.dest_qp = Qpn::new_masked(2);
    let n = f
        .emit(&mut buf, &Policy::default(), |p| p.copy_from_slice(&mad))
        .unwrap();
    assert_eq!(dissect(&buf[..n]).unwrap().roce.unwrap().cm(), None);
}

// ---------------------------------------------------------------- RoCEv1

#[test]
fn rocev1_grh_frame() {
    let f = RoceFrame {
        l2: L2::untagged(eth()),
        network: NetworkRepr::RoceV1(grh::Repr {
            tclass: 0x68,
            flow_label: 0x12345,
            payload_len: 0,
            next_header: grh::NEXT_HEADER_IBA,
            hop_limit: 64,
            sgid: "fe80::1".parse().unwrap(),
            dgid: "fe80::2".parse().unwrap(),
        }),
        bth: bth(Opcode::RC_SEND_ONLY),
        exts: ExtReprs::default(),
        payload_len: 5,
    };
    let frame = build(&f);
    // 14 + 40 + 12 + 5 + 3 + 4
    assert_eq!(frame.len(), 78);
    assert_eq!(&frame[12..14], &[0x89, 0x15]);
    let d = dissect(&frame).unwrap();
    assert!(matches!(d.network, Some(Network::Grh(_))));
    assert!(d.udp.is_none());
    let roce = d.roce.unwrap();
    assert_eq!(roce.version, RoceVersion::V1);
    assert_eq!(roce.bth_offset, 54);
    assert_eq!(roce.payload_len, 5);
    assert_eq!(roce.pad, &[0, 0, 0]);
    assert_eq!(roce.icrc_status(), IcrcStatus::Valid);
}

// ---------------------------------------------------------------- never panics

fn exercise(d: &stack::Dissected<'_>) {
    let _ = d.icrc_status();
    let _ = d.vlans().count();
    if let Some(roce) = &d.roce {
        let _ = roce.opcode().to_string();
        let _ = roce.bth.to_string();
        let _ = roce.icrc_value();
        let e = &roce.exts;
        let _ = (e.rdeth(), e.deth(), e.xrceth(), e.reth(), e.atomic_eth());
        let _ = (
            e.aeth(),
            e.atomic_ack_eth(),
            e.immdt(),
            e.ieth(),
            e.feth(),
            e.cnp(),
        );
        for &h in e.list() {
            if let Some((range, bytes)) = e.locate(h) {
                assert_eq!(&d.frame[range], bytes);
            }
        }
        assert!(roce.payload.len() <= roce.payload_len);
        assert!(roce.pad.len() <= usize::from(roce.bth.pad_count()));
        if !roce.payload.is_empty() {
            assert_eq!(
                &d.frame[roce.payload_offset..roce.payload_offset + roce.payload.len()],
                roce.payload
            );
        }
    }
    if let Some(p) = d.mac_control() {
        let _ = p.to_string();
    }
}

fn check_both(frame: &[u8], start: Start) {
    let (d, err) = dissect_with(frame, start, &Options::default());
    exercise(&d);
    if start == Start::Ethernet {
        // strict and lax agree on whether there was a problem
        assert_eq!(dissect(frame).is_ok(), err.is_none());
        let (lax, lax_err) = dissect_lax(frame);
        assert_eq!(lax, d);
        assert_eq!(lax_err, err);
    }
    if let Some(e) = err {
        let _ = e.to_string();
        assert!(e.offset() <= frame.len() || !e.is_truncated());
    }
}

/// Ethernet + optional VLAN + IPv4 + UDP to 4791, lengths either consistent
/// with `tail` or random, then `tail`.
fn v4_prefix(tail: &[u8], vlan: bool, consistent: bool, lens: (u16, u16), ihl: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    if vlan {
        f.extend_from_slice(&[0x81, 0x00, 0x60, 0x01]);
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let (total, udp_len) = if consistent {
        let t = u16::try_from(28 + tail.len()).unwrap();
        (t, t - 20)
    } else {
        lens
    };
    f.push(0x40 | ihl);
    f.push(0x02);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&0xc000u16.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(tail);
    f
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2048,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct("proptest-regressions/tests/stack.txt"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn dissect_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        check_both(&bytes, Start::Ethernet);
        for t in [EtherType::IPV4, EtherType::IPV6, EtherType::ROCEV1, EtherType::MAC_CONTROL, EtherType::VLAN] {
            check_both(&bytes, Start::EtherType(t));
        }
    }

    #[test]
    fn dissect_roce_prefix_then_random_never_panics(
        opcode in prop_oneof![any::<u8>(), (0u8..0xB8)],
        flags in any::<u8>(),
        rest in proptest::collection::vec(any::<u8>(), 0..600),
        vlan in any::<bool>(),
        consistent in prop::bool::weighted(0.7),
        lens in (any::<u16>(), any::<u16>()),
        ihl in prop_oneof![Just(5u8), 0u8..16],
        cut in any::<prop::sample::Index>(),
    ) {
        // BTH opcode and flags first, so that every opcode's headers get a turn
        let mut tail = vec![opcode, flags];
        tail.extend_from_slice(&rest);
        let frame = v4_prefix(&tail, vlan, consistent, lens, ihl);
        check_both(&frame, Start::Ethernet);
        let at = cut.index(frame.len() + 1);
        check_both(&frame[..at], Start::Ethernet);
        // and the same as RoCEv1 / IPv6 network headers
        let l2 = if vlan { 18 } else { 14 };
        check_both(&frame[l2..], Start::EtherType(EtherType::IPV6));
        check_both(&frame[l2..], Start::EtherType(EtherType::ROCEV1));
    }
}

// ---------------------------------------------------------------- IPv4 details

#[test]
fn ipv4_fragments_are_not_dissected_as_roce() {
    // MF set (first fragment), then a non-zero fragment offset
    for (flags_hi, flags_lo) in [(0x20u8, 0x00u8), (0x00, 0x01)] {
        let mut frame = vector_a();
        frame[20] = flags_hi;
        frame[21] = flags_lo;
        let (d, err) = dissect_lax(&frame);
        assert_eq!(err, None);
        assert!(d.ipv4().is_some());
        assert!(d.udp.is_none());
        assert!(d.roce.is_none());
    }
}

#[test]
fn ipv4_options_move_the_udp_header() {
    // vector A with four NOP options: IHL 6, total length 64, UDP at 14 + 24
    let a = vector_a();
    let mut frame = a[..34].to_vec();
    frame.extend_from_slice(&[1, 1, 1, 1]);
    frame.extend_from_slice(&a[34..]);
    frame[14] = 0x46;
    frame[16..18].copy_from_slice(&64u16.to_be_bytes());
    let d = dissect(&frame).expect("options are allowed");
    assert_eq!(d.ipv4().unwrap().header_len(), 24);
    assert_eq!(d.ipv4().unwrap().options(), &[1, 1, 1, 1]);
    assert_eq!(d.udp_offset, 38);
    let roce = d.roce.unwrap();
    assert_eq!(roce.bth_offset, 46);
    assert_eq!(roce.opcode(), Opcode::CNP);
    assert_eq!(roce.icrc, Some([0x82, 0xfd, 0x00, 0x2a]));
    // the options are covered by the ICRC (Scapy), so the published value no longer fits
    assert!(matches!(roce.icrc_status(), IcrcStatus::Invalid { .. }));
}

/// Fuzz regression (dissect_frame, crash-58668e76): a 1-byte IPoIB (242) record named an
/// error offset past its end.
#[test]
fn short_ipoib_record_errors_inside_the_frame() {
    for len in [0usize, 1, 39, 40, 43] {
        let frame = vec![0x4A; len];
        let (d, err) = dissect_with(&frame, Start::Ipoib, &Options::default());
        let e = err.expect("too short for the pseudo and IPoIB headers");
        assert!(e.offset() <= frame.len(), "{e:?} past a {len}-byte frame");
        assert_eq!(
            e,
            WireError::Truncated {
                layer: Layer::Ipoib,
                offset: 0,
                need: 44,
                have: len
            }
        );
        assert!(d.network.is_none());
    }
}

/// Fuzz regression (dissect_frame, 2026-12-01): a tunnel whose outer UDP length points past
/// the outer IP payload is malformed, so the inner RoCE packet's ICRC is not judged either.
#[test]
fn malformed_outer_udp_leaves_the_inner_icrc_unverifiable() {
    let inner = vector_b();
    assert_eq!(dissect(&inner).unwrap().icrc_status(), IcrcStatus::Valid);
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_payload = 8 + 8 + inner.len();
    let total = u16::try_from(20 + ip_payload).unwrap();
    f.extend_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2,
    ]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    let udp_len = u16::try_from(ip_payload + 100).unwrap(); // past the IP payload
    f.extend_from_slice(&[0xC0, 0x01, 0x12, 0xB5]);
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x08, 0, 0, 0, 0, 0x13, 0x89, 0]);
    f.extend_from_slice(&inner);
    let (d, err) = dissect_lax(&f);
    assert_eq!(
        malformed(err),
        (
            Layer::Udp,
            Malformed::LengthPastPayload {
                value: u32::from(udp_len),
                room: u32::try_from(ip_payload).unwrap()
            }
        )
    );
    assert!(d.is_encapsulated());
    let roce = d.roce.expect("the inner packet is still decoded");
    assert_eq!(roce.icrc, None);
    assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
}
