//! Display filters (interfaces.md §5): every operator, field kind, alias and bare word, and the
//! column of a filter that does not parse. Frames are built by hand below.

use rocescope::filter::{Filter, FrameFacts, Marks};
use rocescope_dissectors::icrc::{self, Encapsulation};
use rocescope_dissectors::stack::{DissectOptions as Options, Start, dissect_with};

/// Ethernet + one 802.1Q tag (PCP 3, VID 100) + IPv4 (ECN `ecn`) + UDP 4791 + BTH + `ext` + payload + ICRC.
fn roce_frame(opcode: u8, ext: &[u8], payload: &[u8], ecn: u8, good_icrc: bool) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x02, // dst
        0x02, 0, 0, 0, 0, 0x01, // src
        0x81, 0x00, // TPID
        0x60, 0x64, // PCP 3, DEI 0, VID 100
        0x08, 0x00, // IPv4
    ];
    let ip_at = f.len();
    let udp_len = 8 + 12 + ext.len() + payload.len() + 4;
    let total = 20 + udp_len;
    f.extend_from_slice(&[
        0x45,
        (26 << 2) | ecn, // DSCP 26
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34, // id
        0x40,
        0,
        64, // ttl
        17, // UDP
        0,
        0, // checksum (not checked)
        10,
        0,
        0,
        1, // src
        10,
        0,
        1,
        2, // dst
    ]);
    f.extend_from_slice(&[
        0xC0,
        0x00, // srcport 49152
        0x12,
        0xB7, // 4791
        (udp_len >> 8) as u8,
        udp_len as u8,
        0,
        0,
    ]);
    f.extend_from_slice(&[
        opcode, 0x40, // M
        0xFF, 0xFF, // pkey
        0x40, // BECN
        0x00, 0x00, 0x11, // destqp 0x11
        0x80, // AckReq
        0x00, 0x04, 0xD2, // psn 1234
    ]);
    f.extend_from_slice(ext);
    f.extend_from_slice(payload);
    let crc = icrc::compute(Encapsulation::Ipv4 { header_len: 20 }, &f[ip_at..]).unwrap();
    let crc = if good_icrc { crc } else { !crc };
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

fn write_only() -> Vec<u8> {
    let mut reth = Vec::new();
    reth.extend_from_slice(&0x7fee_260f_b000u64.to_be_bytes());
    reth.extend_from_slice(&0x2b8u32.to_be_bytes());
    reth.extend_from_slice(&8u32.to_be_bytes());
    roce_frame(0x0A, &reth, &[0xAA; 8], 3, true)
}

fn nak() -> Vec<u8> {
    // AETH: NAK PSN sequence error (0x60), MSN 9
    roce_frame(0x11, &[0x60, 0, 0, 9], &[], 2, false)
}

fn rnr() -> Vec<u8> {
    // AETH: RNR NAK timer code 14 (1.28 ms), MSN 9
    roce_frame(0x11, &[0x2E, 0, 0, 9], &[], 0, true)
}

fn pfc() -> Vec<u8> {
    let mut f = vec![
        0x01, 0x80, 0xC2, 0, 0, 0x01, // dst
        0x02, 0, 0, 0, 0, 0x09, // src
        0x88, 0x08, // MAC Control
        0x01, 0x01, // PFC
        0x00, 0x18, // enable p3, p4
    ];
    for q in [0u16, 0, 0, 65535, 0, 0, 0, 0] {
        f.extend_from_slice(&q.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

fn eval(filter: &str, frame: &[u8]) -> bool {
    eval_facts(filter, frame, FrameFacts::default())
}

fn eval_facts(filter: &str, frame: &[u8], facts: FrameFacts) -> bool {
    let f = Filter::compile(filter).unwrap_or_else(|e| panic!("{e}"));
    let (d, _) = dissect_with(frame, Start::Ethernet, &Options::default());
    f.matches(&facts, Some(&d))
}

#[test]
fn operators() {
    let w = write_only();
    assert!(eval("psn == 1234", &w));
    assert!(!eval("psn != 1234", &w));
    assert!(eval("psn != 1", &w));
    assert!(eval(
        "psn < 1235 && psn <= 1234 && psn > 1233 && psn >= 1234",
        &w
    ));
    assert!(!eval("psn < 1234", &w));
    assert!(eval("psn eq 1234 and psn ne 5", &w));
    assert!(eval("psn == 1 || psn == 1234", &w));
    assert!(eval("psn == 1 or qp == 0x11", &w));
    assert!(eval("!(psn == 1)", &w));
    assert!(eval("not psn == 1", &w));
    assert!(eval("!psn == 1 && (qp == 17 || qp == 18)", &w));
    assert!(eval("psn in {1 2 1234}", &w));
    assert!(eval("psn in {1, 2, 1234}", &w));
    assert!(eval("psn in {1000..2000}", &w));
    assert!(!eval("psn in {1, 2}", &w));
    // precedence: && binds tighter than ||
    assert!(eval("psn == 1234 || psn == 1 && qp == 99", &w));
    assert!(!eval("(psn == 1234 || psn == 1) && qp == 99", &w));
}

#[test]
fn field_kinds() {
    let w = write_only();
    // integers, decimal and hex
    assert!(eval("infiniband.bth.destqp == 0x000011", &w));
    assert!(eval("infiniband.reth.dmalen == 8", &w));
    assert!(eval("infiniband.reth.va == 0x7fee260fb000", &w));
    assert!(eval("reth.rkey == 696", &w));
    assert!(eval("udp.dstport == 4791 && udp.srcport == 49152", &w));
    assert!(eval("udp.port == 4791", &w));
    assert!(eval("ip.dsfield.dscp == 26 && ip.dsfield.ecn == 3", &w));
    assert!(eval(
        "ip.ttl == 64 && ip.id == 0x1234 && ip.proto == 17",
        &w
    ));
    assert!(eval("payload_len == 8", &w));
    // booleans: alone, == 1, == true
    assert!(eval("infiniband.bth.a", &w));
    assert!(eval("infiniband.bth.a == 1 && bth.ackreq == true", &w));
    assert!(eval("bth.becn && !bth.fecn && bth.m && !bth.se", &w));
    assert!(eval("icrc.valid", &w));
    // MAC addresses
    assert!(eval("eth.src == 02:00:00:00:00:01", &w));
    assert!(eval("eth.dst == 02-00-00-00-00-02", &w));
    assert!(eval("eth.addr == 02:00:00:00:00:02", &w));
    assert!(!eval("eth.src == 02:00:00:00:00:02", &w));
    // IPv4 addresses and CIDR
    assert!(eval("ip.src == 10.0.0.1 && ip.dst == 10.0.1.2", &w));
    assert!(eval("ip.src == 10.0.0.0/24", &w));
    assert!(!eval("ip.dst == 10.0.0.0/24", &w));
    assert!(eval("ip.addr == 10.0.1.0/24", &w));
    assert!(eval("ip.src in {10.0.0.1 10.0.0.2}", &w));
    assert!(eval("ipv4.src == 10.0.0.1", &w));
    // IPv6 fields are absent: comparisons are false, != is true
    assert!(!eval("ipv6.src == ::1", &w));
    assert!(eval("ipv6.src != fe80::/10", &w));
    // strings
    assert!(eval("bth.opcode_name == RC_RDMA_WRITE_ONLY", &w));
    assert!(eval("bth.opcode_name == \"RC_RDMA_WRITE_ONLY\"", &w));
    // VLAN, through Wireshark's and the JSON's names
    assert!(eval(
        "vlan.pcp == 3 && vlan.priority == 3 && vlan.id == 100",
        &w
    ));
    assert!(eval("eth.vlan.vid == 100 && !vlan.dei", &w));
    // presence of layers
    assert!(eval("reth && udp && ip && eth && vlan && infiniband", &w));
    assert!(!eval("aeth || deth || ipv6 || pfc", &w));
    // frame metadata
    let facts = FrameFacts {
        number: 7,
        len: 100,
        caplen: 100,
        ..FrameFacts::default()
    };
    assert!(eval_facts(
        "frame.number == 7 && frame.len >= 100",
        &w,
        facts
    ));
}

#[test]
fn aliases() {
    let w = write_only();
    assert!(eval("qp == 0x11 && psn == 1234", &w));
    assert!(eval("opcode == 10", &w));
    assert!(eval("opcode == RC_RDMA_WRITE_ONLY", &w));
    assert!(eval("opcode == rc_rdma_write_only", &w));
    assert!(eval("infiniband.bth.opcode == RC_RDMA_WRITE_ONLY", &w));
    assert!(eval("opcode in {RC_SEND_ONLY RC_RDMA_WRITE_ONLY}", &w));
    assert!(eval("opcode == RC_ACKNOWLEDGE", &nak()));
    assert!(!eval("opcode == RC_ACKNOWLEDGE", &w));
}

#[test]
fn bare_words() {
    let w = write_only();
    let n = nak();
    let r = rnr();
    let p = pfc();
    assert!(eval(
        "roce && rocev2 && !rocev1 && !cnp && !pfc && !pause && !cm",
        &w
    ));
    assert!(eval("ce", &w) && !eval("ce", &n));
    assert!(eval("icrc_bad", &n) && !eval("icrc_bad", &w));
    assert!(eval("nak", &n) && !eval("rnr", &n));
    assert!(eval("rnr", &r) && !eval("nak", &r));
    assert!(eval(
        "aeth.kind == nak && infiniband.aeth.syndrome == 0x60",
        &n
    ));
    assert!(eval("infiniband.aeth.msn == 9", &r));
    assert!(!eval("tcp_bth", &w));
    assert!(eval("pfc && !roce", &p));
    assert!(eval("macc.opcode == 0x0101", &p));
    assert!(eval("macc.cbfc.pause_time.c3 == 65535", &p));
    assert!(eval("macc.cbfc.pause_time.c4 == 0", &p));
    assert!(eval(
        "macc.cbfc.enbv.c3 && macc.cbfc.enbv.c4 && !macc.cbfc.enbv.c0",
        &p
    ));
    assert!(eval("pfc.quanta == 65535 && pfc.enable == 0x18", &p));
    assert!(!eval("macc.cbfc.pause_time.c0 == 65535", &p));
    let facts = FrameFacts {
        truncated: true,
        ..FrameFacts::default()
    };
    assert!(eval_facts("truncated && !malformed", &w, facts));
    assert!(!eval("truncated", &w));
    // the replay engine's marks need `analyze`
    for word in ["loss", "ooo", "dup", "retrans"] {
        let e = Filter::compile(&format!("roce && {word}")).unwrap_err();
        assert_eq!(e.column, 9, "{e}");
        assert!(e.to_string().contains("analyze"), "{e}");
    }
}

#[test]
fn bad_filters_name_the_column() {
    for (filter, column) in [
        ("ip.src == ", 11),
        ("psn == 1 )", 10),
        ("(psn == 1", 10),
        ("psn === 1", 7),
        ("psn == 1 &&", 12),
        ("nosuch.field == 1", 1),
        ("psn == 1 && bogus", 13),
        ("ip.src == 5", 11),
        ("ip.src == 10.0.0.0/33", 11),
        ("eth.src == 02:00:00", 12),
        ("opcode == NOT_AN_OPCODE", 11),
        ("eth.src < 02:00:00:00:00:01", 9),
        ("udp == 3", 1),
        ("psn in {}", 9),
        ("", 1),
        ("truncated == 1", 1),
    ] {
        let e = Filter::compile(filter).expect_err(filter);
        assert_eq!(e.column, column, "{filter}: {e}");
        assert!(!e.to_string().contains('\n'));
    }
}

/// §c.10 vector 1 as an IPv4 segment (the option block is the vector's, bytes verbatim).
fn tcp_bth_frame() -> Vec<u8> {
    use core::net::Ipv4Addr;
    use rocescope_dissectors::builder::{L2, Policy, TcpFrame, TcpNetwork};
    use rocescope_dissectors::ethernet::{self, Address, EtherType};
    use rocescope_dissectors::ipv4::{self, IpProtocol};
    use rocescope_dissectors::tcp::{self, Flags};
    use rocescope_dissectors::tcp_bth::{self, Core, IcrcAlgorithm, V1};
    let f = TcpFrame {
        l2: L2::untagged(ethernet::Repr {
            dst_addr: Address([2, 0, 0, 0, 0, 2]),
            src_addr: Address([2, 0, 0, 0, 0, 1]),
            ethertype: EtherType(0),
        }),
        network: TcpNetwork::Ipv4(ipv4::Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            next_header: IpProtocol::TCP,
            payload_len: 0,
            hop_limit: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_frag: true,
        }),
        tcp: tcp::Repr {
            src_port: 40000,
            dst_port: 7471,
            seq_number: 1000,
            ack_number: 2000,
            flags: Flags::ACK,
            window_len: 501,
            urgent_at: 0,
            options: tcp::Options {
                timestamps: Some((0x0102_0304, 0x0a0b_0c0d)),
                tcp_bth: Some(tcp_bth::Repr::V1(V1 {
                    kind: 254,
                    exid: 0xEFAB,
                    core: Core {
                        flags: 1,
                        opcode: rocescope_dissectors::Opcode(5),
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
    };
    let mut buf = vec![0; f.buffer_len()];
    let n = f
        .emit(&mut buf, &Policy::default(), |p| {
            p.copy_from_slice(b"hello world");
        })
        .unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn tcp_bth_fields() {
    let t = tcp_bth_frame();
    assert!(eval("tcp_bth", &t) && !eval("roce", &t));
    assert!(eval(
        "tcp.seq == 1000 && tcp.ack == 2000 && tcp.port == 7471",
        &t
    ));
    assert!(eval("tcp.options.timestamp.tsval == 0x01020304", &t));
    assert!(eval(
        "tcp_bth.msn == 1 && tcp_bth.mlen == 11 && tcp_bth.imm == 0xdeadbeef",
        &t
    ));
    assert!(eval(
        "tcp_bth.opcode == RC_SEND_ONLY_WITH_IMMEDIATE && tcp_bth.icrc_valid",
        &t
    ));
    assert!(eval("tcp_bth.format == \"v1\" && !tcp_bth.more", &t));
    assert!(!eval("tcp_bth.msn == 2", &t));
    assert!(!eval("tcp_bth", &write_only()));
}

/// The replay-engine marks: `dissect` cannot decide them (an error naming the
/// column), the inspector compiles with them and passes each frame's marks.
#[test]
fn replay_marks() {
    let err = Filter::compile("qp == 0x11 && retrans").unwrap_err();
    assert_eq!(err.column, 15);
    assert!(err.message.contains("replay engine"), "{}", err.message);

    let f = Filter::compile_with_marks("loss || (ooo && !dup)").unwrap();
    assert!(f.uses_marks());
    assert!(
        !Filter::compile_with_marks("qp == 0x11")
            .unwrap()
            .uses_marks()
    );
    let frame = write_only();
    let d = dissect_with(&frame, Start::Ethernet, &Options::default()).0;
    let facts = FrameFacts::default();
    let with = |m: Marks| f.matches_marked(&facts, m, Some(&d));
    assert!(with(Marks::LOSS));
    assert!(with(Marks::OOO));
    let mut ooo_dup = Marks::OOO;
    ooo_dup.insert(Marks::DUP);
    assert!(!with(ooo_dup));
    assert!(!with(Marks::RETRANS));
    assert!(!with(Marks::default()));
    // without marks (what `matches` passes) no mark holds
    assert!(!f.matches(&facts, Some(&d)));
    // marks combine with fields
    let g = Filter::compile_with_marks("retrans && infiniband.bth.opcode == 10").unwrap();
    assert!(g.matches_marked(&facts, Marks::RETRANS, Some(&d)));
}

/// Found by the `filter_text` fuzz target: a newline (or another control character) inside a
/// quoted value was copied into the error, which then took two lines on stderr.
#[test]
fn errors_are_one_line_whatever_the_filter_holds() {
    for text in [
        "qp == \"f0/\nq\"",
        "\u{b}\n\u{b}qp == \"f0/\u{b}\n\u{b}q\"",
        "mpls == \" =\0\0\u{e}jr_nak\"",
        "ip.src == \"a\rb\"",
        "nosuch\n.field",
    ] {
        let e = rocescope::filter::Filter::compile(text)
            .unwrap_err()
            .to_string();
        assert_eq!(e.lines().count(), 1, "{e:?}");
        assert!(!e.chars().any(char::is_control), "{e:?}");
    }
}
