//! Any bytes -> whole-frame dissection (Ethernet, and straight at IPv4/IPv6),
//! then everything a consumer touches: `Display` of every layer and Repr,
//! every accessor, the ICRC verdict, the extension headers, the CM message.
//!
//! Invariants checked (each follows from `stack.rs`, see the comments):
//! - strict `dissect` agrees with `dissect_lax`;
//! - every view and slice lies inside the frame, at the offset it reports;
//! - a frame without error has its ICRC captured, and a verifiable ICRC
//!   means every RoCE layer was there (only an IP length may run past the end);
//! - `roce.cm()` is exactly `parse_mad(payload)` for a UD SEND to QP1;
//! - dissecting from the EtherType gives the same result, shifted by 14 bytes.
#![no_main]

use core::fmt::{Display, Write as _};
use core::net::IpAddr;

use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::cm::{self, CmMessage};
use rocescope_dissectors::ethernet::{self, EtherType};
use rocescope_dissectors::ib::opcode::{ExtHeader, Operation};
use rocescope_dissectors::ib::{
    aeth, atomic_ack_eth, atomic_eth, bth, cnp, deth, feth, ieth, immdt, rdeth, reth, xrceth,
};
use rocescope_dissectors::icrc::{ICRC_LEN, IcrcStatus};
use rocescope_dissectors::stack::{
    self, DissectOptions, Dissected, MAX_VLANS, Network, Roce, RoceVersion, Start,
};
use rocescope_dissectors::{Layer, Qpn, WireError, grh, ipv4, ipv6, mac_control, udp, vlan};

fuzz_target!(|data: &[u8]| {
    let mut sink = String::new();

    let (d, err) = stack::dissect_lax(data);
    check(data, &d, err, Start::Ethernet, &mut sink);
    // strict mode stops at the same first problem and otherwise sees the same layers
    match stack::dissect(data) {
        Ok(strict) => {
            assert!(err.is_none(), "strict Ok but lax error {err:?}");
            assert_eq!(strict, d);
        }
        Err(e) => assert_eq!(Some(e), err),
    }

    for ethertype in [EtherType::IPV4, EtherType::IPV6] {
        let start = Start::EtherType(ethertype);
        let (d2, err2) = stack::dissect_with(data, start, &DissectOptions::default());
        check(data, &d2, err2, start, &mut sink);
    }
    // the raw-IP, loopback, ERF and native InfiniBand link types start on the same bytes
    for start in [
        Start::Erf,
        Start::Infiniband,
        Start::RawIp,
        Start::Null {
            network_order: false,
        },
        Start::Null {
            network_order: true,
        },
        Start::Ipoib,
    ] {
        let (d2, err2) = stack::dissect_with(data, start, &DissectOptions::default());
        check(data, &d2, err2, start, &mut sink);
        // raw IP is the EtherType walk of its first nibble
        if start == Start::RawIp {
            if let Some(t) = match data.first().map(|b| b >> 4) {
                Some(4) => Some(EtherType::IPV4),
                Some(6) => Some(EtherType::IPV6),
                _ => None,
            } {
                let (d3, err3) =
                    stack::dissect_with(data, Start::EtherType(t), &DissectOptions::default());
                // the same layers (the views differ only in the start they remember)
                assert_eq!(
                    (
                        d3.ethertype,
                        d3.network_offset,
                        d3.network,
                        d3.udp,
                        d3.udp_offset
                    ),
                    (
                        d2.ethertype,
                        d2.network_offset,
                        d2.network,
                        d2.udp,
                        d2.udp_offset
                    )
                );
                assert_eq!((d3.roce, d3.tcp), (d2.roce, d2.tcp));
                assert_eq!(err3, err2);
            }
        }
    }

    // A UDP datagram that is not on 4791: dissect it again as RoCE on its port.
    if let (Some(u), None) = (d.udp, d.roce) {
        let ports = [u.dst_port()];
        let options = DissectOptions {
            roce_ports: &ports,
            ..DissectOptions::default()
        };
        let (d3, err3) = stack::dissect_with(data, Start::Ethernet, &options);
        check(data, &d3, err3, Start::Ethernet, &mut sink);
        assert!(d3.roce.is_some() || err3.is_some());
    }

    // Ethernet without VLAN tags then IPv4/IPv6 is the same walk as starting at
    // the EtherType 14 bytes in: every offset moves by 14, nothing else changes.
    // (a tunnel's inner Ethernet header is not at byte 0: not this case)
    if let Some(eth) = d.eth.filter(|_| !d.is_encapsulated()) {
        let t = eth.ethertype();
        if t == EtherType::IPV4 || t == EtherType::IPV6 {
            let inner = &data[ethernet::HEADER_LEN..];
            let (d2, err2) =
                stack::dissect_with(inner, Start::EtherType(t), &DissectOptions::default());
            let shift = ethernet::HEADER_LEN;
            assert_eq!(err2.map(|e| e.rebased(shift)), err);
            assert_eq!(d2.ethertype, d.ethertype);
            assert_eq!(d2.network_offset + shift, d.network_offset);
            assert_eq!(d2.network, d.network);
            assert_eq!(d2.udp, d.udp);
            if d.udp.is_some() {
                assert_eq!(d2.udp_offset + shift, d.udp_offset);
            }
            assert_eq!(d2.roce.is_some(), d.roce.is_some());
            if let (Some(a), Some(b)) = (d2.roce, d.roce) {
                assert_eq!(a.bth, b.bth);
                assert_eq!(a.bth_offset + shift, b.bth_offset);
                assert_eq!(a.payload, b.payload);
                assert_eq!(a.payload_offset + shift, b.payload_offset);
                assert_eq!(a.payload_len, b.payload_len);
                assert_eq!(a.pad, b.pad);
                assert_eq!(a.icrc, b.icrc);
                assert_eq!(a.cm(), b.cm());
                assert_eq!(a.icrc_status(), b.icrc_status());
            }
        }
    }
    std::hint::black_box(&sink);
});

/// Address of a slice's first byte relative to the frame, when it points into it.
fn offset_in(frame: &[u8], part: &[u8]) -> usize {
    let base = frame.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    assert!(
        at >= base && at + part.len() <= base + frame.len(),
        "slice of {} bytes outside the frame",
        part.len()
    );
    at - base
}

/// A non-empty `part` starts at `offset` of `frame`.
fn assert_at(frame: &[u8], part: &[u8], offset: usize) {
    if !part.is_empty() {
        assert_eq!(offset_in(frame, part), offset);
    }
}

fn show(out: &mut String, value: &dyn Display) {
    let _ = write!(out, "{value} ");
}

fn check<'a>(
    frame: &'a [u8],
    d: &Dissected<'a>,
    err: Option<WireError>,
    start: Start,
    out: &mut String,
) {
    out.clear();
    assert_eq!(d.frame, frame);
    if let Some(e) = err {
        show(out, &e);
        show(out, &e.layer());
        let _ = e.is_truncated();
        // every error names a place the walk reached
        assert!(
            e.offset() <= frame.len(),
            "{e:?} past a {}-byte frame",
            frame.len()
        );
    }

    // ---- Ethernet and VLAN tags
    match start {
        Start::Ethernet => {
            // (an MPLS or IP-in-IP tunnel's inner frame has no Ethernet header)
            if err.is_none_or(|e| e.layer() != Layer::Ethernet) {
                assert!(d.eth.is_some() || d.is_encapsulated());
            }
        }
        // (an Ethernet header there is a tunnel's inner frame)
        Start::EtherType(_) => assert!(d.eth.is_none() || d.is_encapsulated()),
        // a cooked capture header, never an Ethernet one; its length is recorded once read
        Start::Sll | Start::Sll2 | Start::Null { .. } | Start::Ipoib => {
            assert!(d.eth.is_none() || d.is_encapsulated());
            assert!(d.link_header_len == 0 || usize::from(d.link_header_len) <= frame.len());
        }
        Start::RawIp => {
            assert!(d.eth.is_none() || d.is_encapsulated());
            assert_eq!(d.link_header_len, 0);
        }
        Start::Erf => assert!(d.erf().is_some() || err.is_some_and(|e| e.layer() == Layer::Erf)),
        Start::Infiniband => {
            assert!((d.eth.is_none() || d.is_encapsulated()) && d.erf().is_none());
            assert!(d.lrh().is_some() || err.is_some_and(|e| e.layer() == Layer::Lrh));
        }
    }
    // a native packet's LRH, VCRC and their verdict lie in the frame
    if let Some((at, lrh)) = d.lrh() {
        assert_at(frame, lrh.into_inner(), at);
        show(out, &lrh);
        let _ = (
            lrh.vl(),
            lrh.lver(),
            lrh.sl(),
            lrh.reserved2(),
            lrh.reserved5(),
        );
        if let Some((end, _)) = d.vcrc() {
            assert!(end + 2 <= frame.len());
            assert_eq!(end, at + lrh.pkt_bytes());
        }
        let _ = d.vcrc_status();
    }
    if let Some(erf) = d.erf() {
        show(out, &erf);
        let _ = (
            erf.time_ns(),
            erf.rlen(),
            erf.wlen(),
            erf.lctr(),
            erf.ext_types().count(),
        );
        assert!(usize::from(d.link_header_len) <= frame.len());
    }
    if let Some(eth) = d.eth {
        let bytes = eth.into_inner();
        // the Ethernet header runs to the frame's end, from byte 0 or from where an ERF
        // record or a tunnel put it
        assert_eq!(offset_in(frame, bytes) + bytes.len(), frame.len());
        let repr = ethernet::Repr::parse(&ethernet::Frame::new_unchecked(bytes))
            .expect("a dissected Ethernet header parses");
        assert_eq!(repr.ethertype, eth.ethertype());
        assert_eq!(eth.payload().len(), bytes.len() - ethernet::HEADER_LEN);
        for a in [eth.dst_addr(), eth.src_addr()] {
            let _ = (
                a.is_multicast(),
                a.is_broadcast(),
                a.is_unicast(),
                a.is_local(),
            );
            show(out, &a);
        }
        show(out, &eth);
        show(out, &repr);
        show(out, &eth.ethertype());
    }
    let mut tags = 0;
    // without Ethernet (cooked, IPoIB), the first tag's TPID was the link header's type
    let mut last_type = d
        .eth
        .map(|e| e.ethertype())
        .or_else(|| d.vlans().next().map(|t| t.tpid));
    for tag in d.vlans() {
        tags += 1;
        assert!(tag.tpid.is_vlan_tpid());
        assert_eq!(Some(tag.tpid), last_type);
        let bytes = tag.header.into_inner();
        assert_eq!(bytes.len(), vlan::HEADER_LEN);
        let tci_at = offset_in(frame, bytes);
        if tci_at >= 2 {
            // the TPID is the two bytes in front of the tag (else it was the start EtherType)
            assert_eq!(tag.offset + 2, tci_at);
            assert_eq!(frame[tag.offset..tci_at], tag.tpid.0.to_be_bytes());
        } else {
            assert_eq!(tag.offset, 0);
        }
        let repr = vlan::Repr::parse(&vlan::Header::new_unchecked(bytes)).expect("VLAN parses");
        assert!(repr.pcp <= 7 && repr.vid.value() <= 0x0FFF);
        assert_eq!(
            (repr.pcp, repr.dei, repr.vid, repr.ethertype),
            (
                tag.header.pcp(),
                tag.header.dei(),
                tag.header.vid(),
                tag.header.ethertype()
            )
        );
        show(out, &tag.header);
        show(out, &repr);
        last_type = Some(tag.header.ethertype());
    }
    assert!(tags <= MAX_VLANS);
    if let Some(t) = d.ethertype {
        show(out, &t);
        let _ = t.name();
        // (an MPLS or IP-in-IP inner packet's type comes from the tunnel, not a header)
        if start == Start::Ethernet && d.eth.is_some() {
            assert_eq!(Some(t), last_type);
        }
    }
    assert!(d.network_offset <= frame.len());

    // ---- network layer
    let mut addrs: Option<(IpAddr, IpAddr)> = None;
    match d.network {
        Some(Network::Ipv4(p)) => {
            let bytes = p.into_inner();
            assert_at(frame, bytes, d.network_offset);
            assert_eq!(p.version(), 4);
            assert!(usize::from(p.header_len()) >= ipv4::HEADER_LEN);
            assert!(bytes.len() >= usize::from(p.header_len()));
            assert!(bytes.len() <= usize::from(p.total_len()));
            let _ = (
                p.dscp(),
                p.ecn(),
                p.ident(),
                p.reserved_flag(),
                p.dont_frag(),
            );
            let _ = (p.more_frags(), p.frag_offset(), p.hop_limit(), p.checksum());
            let _ = (p.options(), p.payload(), p.verify_checksum());
            show(out, &p.next_header());
            let _ = p.next_header().name();
            addrs = Some((IpAddr::V4(p.src_addr()), IpAddr::V4(p.dst_addr())));
            show(out, &p);
            match ipv4::Repr::parse(&p) {
                Ok(repr) => show(out, &repr),
                Err(e) => {
                    // the dissector checked everything but the captured length
                    assert!(e.is_truncated(), "{e:?}");
                    show(out, &e);
                }
            }
            assert!(d.ipv4().is_some() && d.ipv6().is_none() && d.mac_control().is_none());
        }
        Some(Network::Ipv6(p)) => {
            let bytes = p.into_inner();
            assert_at(frame, bytes, d.network_offset);
            assert_eq!(p.version(), 6);
            assert!(bytes.len() >= ipv6::HEADER_LEN);
            assert!(bytes.len() <= ipv6::HEADER_LEN + usize::from(p.payload_len()));
            let _ = (
                p.traffic_class(),
                p.dscp(),
                p.ecn(),
                p.flow_label(),
                p.hop_limit(),
            );
            let _ = p.payload();
            show(out, &p.next_header());
            addrs = Some((IpAddr::V6(p.src_addr()), IpAddr::V6(p.dst_addr())));
            show(out, &p);
            match ipv6::Repr::parse(&p) {
                Ok(repr) => show(out, &repr),
                Err(e) => assert!(e.is_truncated(), "{e:?}"),
            }
            assert!(d.ipv6().is_some() && d.ipv4().is_none());
        }
        Some(Network::Grh(p)) => {
            let bytes = p.into_inner();
            assert_at(frame, bytes, d.network_offset);
            // RoCEv1 checks IPVer; a native packet's GRH is announced by the LRH's LNH and
            // read whatever its IPVer says, as tshark does
            if d.lrh().is_none() {
                assert_eq!(p.ip_version(), grh::VERSION);
            }
            assert!(bytes.len() >= grh::HEADER_LEN);
            let _ = (p.tclass(), p.flow_label(), p.next_header(), p.hop_limit());
            let _ = (p.sgid(), p.dgid());
            assert!(p.payload().len() <= usize::from(p.payload_len()));
            show(out, &p);
            match grh::Repr::parse(&p) {
                Ok(repr) => show(out, &repr),
                // (a native GRH's IPVer is not checked by the walk, the Repr checks it)
                Err(e) => assert!(e.is_truncated() || d.lrh().is_some(), "{e:?}"),
            }
        }
        Some(Network::MacControl(p)) => {
            assert_at(frame, p.into_inner(), d.network_offset);
            let op = p.opcode();
            let _ = (op.name(), op.body_len(), p.pause_quanta(), p.pfc_enable());
            for priority in 0..=9 {
                let _ = (p.priority_enabled(priority), p.pfc_quanta(priority));
            }
            let quanta = p.pfc_quanta_all();
            let _ = p.padding();
            for bps in [0, 1, 10_000_000_000, u64::MAX] {
                let _ = mac_control::quanta_to_ns(p.pause_quanta(), bps);
                let _ = mac_control::quanta_to_ns(quanta[7], bps);
            }
            show(out, &op);
            show(out, &p);
            // the dissector used new_checked: the Repr always parses
            let repr = mac_control::Repr::parse(&p).expect("checked MAC Control parses");
            assert_eq!(repr.opcode(), op);
            show(out, &repr);
            assert!(d.mac_control().is_some());
        }
        None => {}
    }

    // ---- UDP
    if let Some(u) = d.udp {
        assert!(matches!(
            d.network,
            Some(Network::Ipv4(_) | Network::Ipv6(_))
        ));
        let bytes = u.into_inner();
        assert!(bytes.len() >= udp::HEADER_LEN);
        assert!(bytes.len() <= usize::from(u.len()));
        assert_eq!(offset_in(frame, bytes), d.udp_offset);
        let _ = (u.src_port(), u.dst_port(), u.checksum(), u.payload());
        if let Some((src, dst)) = addrs {
            let _ = u.verify_checksum(&src, &dst);
        }
        show(out, &u);
        match udp::Repr::parse(&u) {
            Ok(repr) => {
                let _ = repr.is_rocev2();
                show(out, &repr);
            }
            Err(e) => assert!(e.is_truncated(), "{e:?}"),
        }
    }

    // ---- RoCE
    if let Some(roce) = d.roce {
        check_roce(frame, d, &roce, err, out);
    } else {
        assert_eq!(d.icrc_status(), IcrcStatus::NotVerifiable);
    }
}

fn check_roce<'a>(
    frame: &'a [u8],
    d: &Dissected<'a>,
    roce: &Roce<'a>,
    err: Option<WireError>,
    out: &mut String,
) {
    match roce.version {
        RoceVersion::V1 => assert!(matches!(d.network, Some(Network::Grh(_)))),
        RoceVersion::V2 => assert!(d.udp.is_some()),
        // native: after an LRH (and maybe a GRH), never over UDP
        RoceVersion::Ib => assert!(d.lrh().is_some() && d.udp.is_none()),
    }

    // BTH
    let bth_bytes = roce.bth.into_inner();
    assert_eq!(bth_bytes.len(), bth::HEADER_LEN);
    assert_eq!(offset_in(frame, bth_bytes), roce.bth_offset);
    let h = roce.bth;
    let _ = (
        h.solicited_event(),
        h.mig_req(),
        h.pad_count(),
        h.tver(),
        h.pkey(),
    );
    let _ = (h.fecn(), h.becn(), h.resv6(), h.ack_req(), h.resv7());
    show(out, &h.dest_qp());
    show(out, &h.psn());
    let repr = bth::Repr::parse(&h).expect("a dissected BTH parses");
    assert_eq!(repr.opcode, roce.opcode());
    assert!(repr.pad_count <= 3 && repr.dest_qp.value() <= 0x00FF_FFFF);
    show(out, &h);
    show(out, &repr);

    // opcode table
    let opcode = roce.opcode();
    // the RD range is read as NVIDIA DC by default (capture-formats.md §3)
    let table = if opcode.is_rd_range() {
        opcode.dc_info(h.solicited_event())
    } else {
        opcode.info()
    };
    assert_eq!(roce.info, table);
    show(out, &opcode);
    show(out, &opcode.transport());
    let _ = (opcode.name(), opcode.is_request(), opcode.is_response());
    if let Some(info) = roce.info {
        assert_eq!(info.opcode, opcode);
        let _ = (
            info.header_bytes(),
            info.position.ends_message(),
            info.operation.is_atomic(),
        );
        let list = roce.exts.list();
        // the list is the table's, or empty when the length fields left no room
        assert!(list.is_empty() || Some(list) == info.headers);
    } else {
        assert!(roce.exts.list().is_empty());
    }

    // extension headers: located ones lie in the frame and parse
    let exts = &roce.exts;
    let mut all_there = true;
    let mut end = roce.bth_offset + bth::HEADER_LEN;
    for &which in exts.list() {
        let _ = which.layer();
        match exts.locate(which) {
            Some((range, bytes)) => {
                assert_eq!(range.start, end);
                assert_eq!(range.len(), which.wire_len());
                assert_eq!(bytes.len(), which.wire_len());
                assert_eq!(offset_in(frame, bytes), range.start);
                end = range.end;
            }
            None => {
                all_there = false;
                end += which.wire_len();
            }
        }
    }
    check_ext(
        exts.rdeth(),
        exts.locate(ExtHeader::Rdeth).is_some(),
        out,
        |h| {
            let _ = (h.reserved(), h.ee_context());
            rdeth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.deth(),
        exts.locate(ExtHeader::Deth).is_some(),
        out,
        |h| {
            let _ = (h.qkey(), h.reserved(), h.src_qp());
            deth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.xrceth(),
        exts.locate(ExtHeader::XrcEth).is_some(),
        out,
        |h| {
            let _ = (h.reserved(), h.xrc_srqn());
            xrceth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.reth(),
        exts.locate(ExtHeader::Reth).is_some(),
        out,
        |h| {
            let _ = (h.va(), h.rkey(), h.dma_len());
            reth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.atomic_eth(),
        exts.locate(ExtHeader::AtomicEth).is_some(),
        out,
        |h| {
            let _ = (h.va(), h.rkey(), h.swap_add(), h.compare());
            atomic_eth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.aeth(),
        exts.locate(ExtHeader::Aeth).is_some(),
        out,
        |h| {
            let s = h.syndrome();
            let kind = s.kind();
            let _ = (
                kind.name(),
                h.msn(),
                aeth::credits(s.0),
                aeth::rnr_timer_us(s.0),
            );
            if let aeth::AethKind::Nak(code) = kind {
                let _ = (code.name(), code.to_string());
            }
            assert!(h.msn() <= aeth::MSN_MAX);
            aeth::Repr::parse(h).map(|r| format!("{r} {s}"))
        },
    );
    check_ext(
        exts.atomic_ack_eth(),
        exts.locate(ExtHeader::AtomicAckEth).is_some(),
        out,
        |h| {
            let _ = h.orig_remote_data();
            atomic_ack_eth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.immdt(),
        exts.locate(ExtHeader::ImmDt).is_some(),
        out,
        |h| {
            let _ = h.imm_data();
            immdt::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.ieth(),
        exts.locate(ExtHeader::Ieth).is_some(),
        out,
        |h| {
            let _ = h.rkey();
            ieth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.feth(),
        exts.locate(ExtHeader::Feth).is_some(),
        out,
        |h| {
            let _ = (h.placement_type(), h.selectivity_level(), h.reserved());
            feth::Repr::parse(h).map(|r| r.to_string())
        },
    );
    check_ext(
        exts.cnp(),
        exts.locate(ExtHeader::CnpPad).is_some(),
        out,
        |h| {
            let _ = (h.reserved(), h.is_zero());
            cnp::Repr::parse(h).map(|r| r.to_string())
        },
    );

    // payload, pad, ICRC: captured bytes, never more than the length fields say
    assert!(roce.payload.len() <= roce.payload_len);
    assert_at(frame, roce.payload, roce.payload_offset);
    assert!(roce.pad.len() <= usize::from(h.pad_count()));
    if !roce.pad.is_empty() {
        // bytes after the payload exist only when the whole payload was captured
        assert_eq!(roce.payload.len(), roce.payload_len);
        assert_at(frame, roce.pad, roce.payload_offset + roce.payload_len);
    }
    if let Some(icrc) = roce.icrc {
        assert!(all_there);
        assert_eq!(roce.payload.len(), roce.payload_len);
        assert_eq!(roce.pad.len(), usize::from(h.pad_count()));
        let at = roce.payload_offset + roce.payload_len + roce.pad.len();
        assert_eq!(frame.get(at..at + ICRC_LEN), Some(&icrc[..]));
        assert_eq!(roce.icrc_value(), Some(u32::from_le_bytes(icrc)));
    }
    // no error: the length fields' whole transport was captured, ICRC included
    if err.is_none() {
        assert!(roce.icrc.is_some());
    }
    let status = roce.icrc_status();
    assert_eq!(d.icrc_status(), status);
    let _ = write!(out, "{status:?} ");
    if status != IcrcStatus::NotVerifiable {
        // verifiable: BTH through ICRC were all there, so no RoCE layer failed;
        // only an IP total length longer than the UDP datagram, or a native packet's
        // VCRC after the ICRC (reported on the LRH's length), may be cut
        assert!(roce.icrc.is_some());
        if let Some(e) = err {
            assert!(
                e.is_truncated() && matches!(e.layer(), Layer::Ipv4 | Layer::Ipv6 | Layer::Lrh),
                "verifiable ICRC with {e:?}"
            );
        }
    }

    // CM: exactly the MAD of a UD SEND to QP1 whose extension headers were captured
    let is_gsi_send = roce.info.is_some_and(|i| i.operation == Operation::Send)
        && h.dest_qp() == Qpn::GSI
        && all_there;
    let want = if is_gsi_send {
        cm::parse_mad(roce.payload).ok().flatten()
    } else {
        None
    };
    let got = roce.cm();
    assert_eq!(got, want);
    if let Some(m) = got {
        check_cm(&m, out);
        show(out, &cm::Header::new_unchecked(roce.payload));
    }
}

/// An extension header accessor: present iff located; then it parses and formats.
fn check_ext<H: Display>(
    header: Option<H>,
    located: bool,
    out: &mut String,
    parse: impl FnOnce(&H) -> Result<String, WireError>,
) {
    assert_eq!(header.is_some(), located);
    if let Some(h) = header {
        show(out, &h);
        let text = parse(&h).expect("a located extension header parses");
        out.push_str(&text);
    }
}

/// A parsed CM message emits to a MAD that parses back to it.
fn check_cm(m: &CmMessage, out: &mut String) {
    show(out, m);
    show(out, &m.attribute);
    let _ = (m.attribute.name(), m.attribute.has_comm_ids());
    if let Some(reason) = m.reject_reason {
        let _ = cm::reject_reason_name(reason);
    }
    let bytes = m.to_bytes();
    assert_eq!(bytes.len(), m.buffer_len());
    assert_eq!(cm::parse_mad(&bytes), Ok(Some(*m)));
}
