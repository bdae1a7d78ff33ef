//! TCP and `tcp_bth` through the whole stack: builder -> dissect -> field tree.

use core::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use rocescope_dissectors::builder::{IcrcPolicy, L2, Policy, TcpFrame, TcpNetwork};
use rocescope_dissectors::ethernet::{self, Address, EtherType};
use rocescope_dissectors::icrc::IcrcStatus;
use rocescope_dissectors::ipv4::IpProtocol;
use rocescope_dissectors::pretty::{self, TreeWriter};
use rocescope_dissectors::stack::{
    DissectOptions as Options, Start, dissect, dissect_lax, dissect_with,
};
use rocescope_dissectors::tcp::{self, Flags};
use rocescope_dissectors::tcp_bth::{self, Core, IcrcAlgorithm, V1};
use rocescope_dissectors::{Layer, Malformed, Opcode, WireError, ipv4, ipv6};

fn l2() -> L2 {
    L2::untagged(ethernet::Repr {
        dst_addr: Address([2, 0, 0, 0, 0, 2]),
        src_addr: Address([2, 0, 0, 0, 0, 1]),
        ethertype: EtherType(0),
    })
}

fn v4() -> TcpNetwork {
    TcpNetwork::Ipv4(ipv4::Repr {
        src_addr: Ipv4Addr::new(10, 0, 0, 1),
        dst_addr: Ipv4Addr::new(10, 0, 0, 2),
        next_header: IpProtocol::TCP,
        payload_len: 0,
        hop_limit: 64,
        dscp: 0,
        ecn: 0,
        ident: 7,
        dont_frag: true,
    })
}

fn v6() -> TcpNetwork {
    TcpNetwork::Ipv6(ipv6::Repr {
        src_addr: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1),
        dst_addr: Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2),
        next_header: IpProtocol::TCP,
        payload_len: 0,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0x12345,
    })
}

/// §c.10 vector 1 as a segment: the ICRC field is left 0 in the Repr and filled by the builder.
fn vector1(network: TcpNetwork) -> TcpFrame {
    TcpFrame {
        l2: l2(),
        network,
        tcp: tcp::Repr {
            src_port: 40000,
            dst_port: 7471,
            seq_number: 1000,
            ack_number: 2000,
            flags: Flags::PSH.union(Flags::ACK),
            window_len: 501,
            urgent_at: 0,
            options: tcp::Options {
                timestamps: Some((0x0102_0304, 0x0a0b_0c0d)),
                tcp_bth: Some(tcp_bth::Repr::V1(V1 {
                    kind: 254,
                    exid: 0xEFAB,
                    core: Core {
                        flags: 1,
                        opcode: Opcode(5),
                        msn: 1,
                        mbo_lo: 0,
                        seg: 0,
                        icrc: 0,
                    },
                    imm: 0xDEAD_BEEF,
                    mlen: 11,
                    mbo_hi: 0,
                    rsvd8: 0,
                    rsvd16: 0,
                })),
                ..tcp::Options::default()
            },
            payload_len: 11,
        },
        icrc_algorithm: IcrcAlgorithm::Crc32Ieee,
    }
}

fn build(f: &TcpFrame, policy: &Policy) -> Vec<u8> {
    let mut buf = vec![0xAA; f.buffer_len()];
    let n = f
        .emit(&mut buf, policy, |p| p.copy_from_slice(b"hello world"))
        .unwrap();
    buf.truncate(n);
    buf
}

const VECTOR1_OPTIONS: &str = "0101080a010203040a0b0c0dfe1cefab0105000100000000515961\
59deadbeef0000000b00000000";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn test_vector1_frame_ipv4() {
    let frame = build(&vector1(v4()), &Policy::default());
    // 14 Ethernet + 20 IPv4 + 60 TCP + 11 payload
    assert_eq!(frame.len(), 105);
    assert_eq!(&frame[54..94], &hex(VECTOR1_OPTIONS)[..]);
    let d = dissect(&frame).unwrap();
    let t = d.tcp.unwrap();
    assert_eq!(d.tcp_offset, 34);
    assert_eq!(
        (t.src_port(), t.seq_number(), t.header_len()),
        (40000, 1000, 60)
    );
    let ip = d.ipv4().unwrap();
    assert!(ip.verify_checksum());
    let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
    assert!(t.verify_checksum(&src, &dst));
    let bth = d.tcp_bth().unwrap();
    assert_eq!(bth.offset, 66);
    assert_eq!(bth.header.icrc(), 0x5159_6159);
    assert_eq!(bth.icrc_status(IcrcAlgorithm::Crc32Ieee), IcrcStatus::Valid);
    assert_eq!(d.tcp_payload_len(), 11);
    assert!(d.roce.is_none() && d.udp.is_none());

    let mut tree = TreeWriter::new(String::new());
    pretty::visit(&d, &mut tree);
    let text = tree.into_inner();
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Transmission"))
        .collect();
    assert_eq!(
        tail,
        [
            "Transmission Control Protocol (tcp) [34..94]",
            "    Source Port (srcport): 40000",
            "    Destination Port (dstport): 7471",
            "    Sequence Number (seq): 1000",
            "    Acknowledgment Number (ack): 2000",
            "    Flags (flags): 0x018",
            "    Window (window): 501",
            "    Timestamp Value (ts_val): 16909060",
            "    Timestamp Echo Reply (ts_ecr): 168496141",
            "tcp_bth RDMA Framing Option (tcp_bth) [66..94]",
            "    Format (format): v1",
            "    Experiment ID (exid): 0xefab",
            "    Opcode (opcode): 5",
            "    Opcode Name (opcode_name): RC_SEND_ONLY_WITH_IMMEDIATE",
            "    Message Sequence Number (msn): 1",
            "    Message Byte Offset (mbo): 0",
            "    Segment (seg): 0",
            "    More Segments (more): false",
            "    Immediate Data (imm): 0xdeadbeef",
            "    Message Length (mlen): 11",
            "    ICRC (icrc): 0x51596159",
            "    ICRC Valid (icrc_valid): true",
            "Payload Length (payload_len): 11",
        ]
    );
}

#[test]
fn test_vector1_frame_ipv6_and_corrupt() {
    let frame = build(&vector1(v6()), &Policy::default());
    let d = dissect(&frame).unwrap();
    let bth = d.tcp_bth().unwrap();
    assert_eq!(bth.header.icrc(), 0x5159_6159); // the ICRC covers no IP field
    let ip = d.ipv6().unwrap();
    let t = d.tcp.unwrap();
    assert!(t.verify_checksum(&ip.src_addr().into(), &ip.dst_addr().into()));

    let bad = build(
        &vector1(v4()),
        &Policy {
            icrc: IcrcPolicy::Corrupt(1),
            ..Policy::default()
        },
    );
    let d = dissect(&bad).unwrap();
    assert_eq!(
        d.tcp_bth().unwrap().icrc_status(IcrcAlgorithm::Crc32Ieee),
        IcrcStatus::Invalid {
            expected: 0x5159_6159,
            found: 0x5159_6158
        }
    );
    // the TCP checksum is still right: it was filled after the corruption
    let ip = d.ipv4().unwrap();
    assert!(
        d.tcp
            .unwrap()
            .verify_checksum(&ip.src_addr().into(), &ip.dst_addr().into())
    );
}

#[test]
fn test_exid_configurable() {
    let frame = build(&vector1(v4()), &Policy::default());
    let other = Options {
        tcp_bth_exid: 0xEB9F,
        ..Options::default()
    };
    let (d, err) = dissect_with(&frame, Start::Ethernet, &other);
    assert_eq!(err, None);
    assert!(d.tcp.is_some() && d.tcp_bth().is_none());
}

#[test]
fn test_snaplen_icrc_not_verifiable() {
    let frame = build(&vector1(v4()), &Policy::default());
    let (d, err) = dissect_lax(&frame[..100]);
    assert!(matches!(
        err,
        Some(WireError::Truncated {
            layer: Layer::Ipv4,
            ..
        })
    ));
    let bth = d.tcp_bth().unwrap();
    assert_eq!(
        bth.icrc_status(IcrcAlgorithm::Crc32Ieee),
        IcrcStatus::NotVerifiable
    );
    assert_eq!(d.tcp_payload_len(), 11);
}

#[test]
fn test_bad_option_length_is_malformed() {
    let mut frame = build(&vector1(v4()), &Policy::default());
    frame[57] = 40; // TS option length past the area
    let (d, err) = dissect_lax(&frame);
    assert!(
        matches!(
            err,
            Some(WireError::Malformed {
                layer: Layer::Tcp,
                offset: 56,
                reason: Malformed::OptionLength {
                    kind: 8,
                    value: 40,
                    ..
                }
            })
        ),
        "{err:?}"
    );
    let text = err.unwrap().to_string();
    assert!(
        text.starts_with(
            "malformed TCP at offset 56: option kind 8 with length 40, impossible with "
        ),
        "{text}"
    );
    assert!(d.tcp.is_some() && d.tcp_bth().is_none());
    // data offset 4
    frame[46] = 0x40;
    let (_, err) = dissect_lax(&frame);
    assert_eq!(
        err,
        Some(WireError::Malformed {
            layer: Layer::Tcp,
            offset: 46,
            reason: Malformed::HeaderLength { value: 16, min: 20 }
        })
    );
}

proptest! {
    #[test]
    fn roundtrip_tcp_frame(repr in rocescope_dissectors::strategy::tcp(), six in any::<bool>(), byte in any::<u8>()) {
        let f = TcpFrame { l2: l2(), network: if six { v6() } else { v4() }, tcp: repr, icrc_algorithm: IcrcAlgorithm::Crc32Ieee };
        let mut buf = vec![0u8; f.buffer_len()];
        let n = f.emit(&mut buf, &Policy::default(), |p| p.fill(byte)).unwrap();
        let (d, err) = dissect_lax(&buf[..n]);
        prop_assert_eq!(err, None);
        let t = d.tcp.unwrap();
        let parsed = tcp::Repr::parse(&t).unwrap();
        // the builder fills a v1 ICRC; everything else comes back as given
        let mut want = repr;
        if let (Some(tcp_bth::Repr::V1(v)), Some(tcp_bth::Repr::V1(got))) = (&mut want.options.tcp_bth, parsed.options.tcp_bth) {
            v.core.icrc = got.core.icrc;
            let status = d.tcp_bth().unwrap().icrc_status(IcrcAlgorithm::Crc32Ieee);
            prop_assert_eq!(status, IcrcStatus::Valid);
        }
        prop_assert_eq!(parsed, want);
        prop_assert_eq!(d.tcp_bth().is_some(), repr.options.tcp_bth.is_some());
    }
}
