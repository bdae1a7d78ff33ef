//! Structure-aware: ERF records (any type, extension-header chains, hostile rlen/wlen)
//! carrying native InfiniBand packets (LRH with any LNH and PktLen, a GRH by LNH 3, a BTH
//! with any opcode, the extension headers and payload as arbitrary bytes, a VCRC), plus the
//! same packet as LINKTYPE_INFINIBAND (no ERF header).
//!
//! Invariants:
//! - never a panic; errors name offsets inside the record;
//! - an ERF record is recognised whenever its 16-byte header is there, and its extension
//!   headers end inside the record;
//! - a native packet's LRH is at the end of the ERF headers; its VCRC, when located, ends
//!   at LRH + PktLen words + 2; native RoCE layers only follow an LRH and never UDP;
//! - the same packet read as LINKTYPE_INFINIBAND gives the same LRH, BTH (shifted) and
//!   ICRC/VCRC verdicts as inside the ERF record;
//! - a well-formed packet (PktLen right, BTH opcode from the table) decodes its BTH.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::erf;
use rocescope_dissectors::ib::lrh::{self, NextHeader};
use rocescope_dissectors::pretty;
use rocescope_dissectors::stack::{self, DissectOptions, RoceVersion, Start};
use rocescope_dissectors::visit::{Value, Visitor};

#[derive(Debug, Arbitrary)]
struct Input {
    record_type: u8,
    /// Extension header types (the chain's "more" bit set on all but the last).
    ext: Vec<u8>,
    flags: u8,
    lctr: u16,
    /// Added to the true lengths (wrapping): hostile rlen / wlen.
    rlen_delta: Option<u16>,
    wlen_delta: Option<u16>,
    lnh: u8,
    sl: u8,
    vl: u8,
    dlid: u16,
    slid: u16,
    /// PktLen wrong by this many words.
    pkt_len_delta: Option<i8>,
    grh_next: u8,
    opcode: u8,
    /// Everything after the BTH's first byte (BTH rest, extension headers, payload, ICRC).
    body: Vec<u8>,
    /// Bytes appended after the VCRC (ERF padding or garbage).
    trailer: Vec<u8>,
}

struct Walk {
    len: usize,
    depth: isize,
}

impl Visitor for Walk {
    fn begin(&mut self, _: &'static str, _: &'static str, r: core::ops::Range<usize>) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "{r:?} past {}",
            self.len
        );
        self.depth += 1;
    }
    fn end(&mut self) {
        self.depth -= 1;
        assert!(self.depth >= 0);
    }
    fn begin_list(&mut self, _: &'static str, _: &'static str, r: core::ops::Range<usize>) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "{r:?} past {}",
            self.len
        );
        self.depth += 1;
    }
    fn end_list(&mut self) {
        self.depth -= 1;
        assert!(self.depth >= 0);
    }
    fn field(
        &mut self,
        _: &'static str,
        _: &'static str,
        _: Value<'_>,
        r: core::ops::Range<usize>,
    ) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "{r:?} past {}",
            self.len
        );
    }
}

fn walk(frame: &[u8], d: &stack::Dissected<'_>) {
    let mut w = Walk {
        len: frame.len(),
        depth: 0,
    };
    pretty::visit(d, &mut w);
    assert_eq!(w.depth, 0);
}

fuzz_target!(|input: Input| {
    // the native packet: LRH, GRH by LNH, BTH, body, VCRC
    let lnh = match input.lnh & 3 {
        0 => NextHeader::Raw,
        1 => NextHeader::Ipv6,
        2 => NextHeader::IbaLocal,
        _ => NextHeader::IbaGlobal,
    };
    let mut pkt = vec![0u8; lrh::HEADER_LEN];
    if lnh == NextHeader::IbaGlobal {
        // version 6, payload length, next header, hop limit, GIDs
        let mut g = vec![0x60, 0, 0, 0, 0, 0, input.grh_next, 64];
        g.extend_from_slice(&[0xFE; 32]);
        pkt.extend_from_slice(&g);
    }
    pkt.push(input.opcode);
    pkt.extend_from_slice(&input.body[..input.body.len().min(4096)]);
    // pad to whole words, as PktLen counts 4-byte words
    while pkt.len() % 4 != 0 {
        pkt.push(0);
    }
    let words = i32::try_from(pkt.len() / 4).unwrap();
    let pkt_len = (words + i32::from(input.pkt_len_delta.unwrap_or(0))).clamp(0, 0x7FF);
    lrh::Repr {
        vl: input.vl & 0x0F,
        lver: 0,
        sl: input.sl & 0x0F,
        lnh,
        dlid: input.dlid,
        pkt_len: u16::try_from(pkt_len).unwrap(),
        slid: input.slid,
    }
    .emit(&mut lrh::Header::new_unchecked(&mut pkt[..]));
    if lnh == NextHeader::IbaGlobal {
        let pay = u16::try_from(pkt.len() - lrh::HEADER_LEN - 40 + 2).unwrap_or(u16::MAX);
        pkt[lrh::HEADER_LEN + 4..lrh::HEADER_LEN + 6].copy_from_slice(&pay.to_be_bytes());
    }
    pkt.extend_from_slice(&[0, 0]); // VCRC (any value passes in the fuzzing build)
    let well_formed = input.pkt_len_delta.unwrap_or(0) == 0;
    pkt.extend_from_slice(&input.trailer[..input.trailer.len().min(64)]);

    // the ERF record around it
    let ext: Vec<u8> = input.ext.iter().take(6).copied().collect();
    let mut rec = vec![0u8; erf::HEADER_LEN];
    for (i, t) in ext.iter().enumerate() {
        let more = if i + 1 < ext.len() { 0x80 } else { 0 };
        rec.extend_from_slice(&[(t & 0x7F) | more, 1, 2, 3, 4, 5, 6, 7]);
    }
    let record_type = if input.record_type & 1 == 0 {
        erf::types::INFINIBAND
    } else {
        input.record_type & 0x7F
    };
    let rlen = u16::try_from(rec.len() + pkt.len())
        .unwrap_or(u16::MAX)
        .wrapping_add(input.rlen_delta.unwrap_or(0));
    let wlen = u16::try_from(pkt.len())
        .unwrap_or(u16::MAX)
        .wrapping_add(input.wlen_delta.unwrap_or(0));
    erf::Repr {
        timestamp: 0x1234_5678_9ABC,
        record_type,
        flags: input.flags,
        rlen,
        lctr: input.lctr,
        wlen,
    }
    .emit(&mut erf::Header::new_unchecked(&mut rec[..erf::HEADER_LEN]));
    if !ext.is_empty() {
        rec[8] |= 0x80; // "an extension header follows"
    }
    let ext_end = rec.len();
    rec.extend_from_slice(&pkt);

    let options = DissectOptions::default();
    let (d, err) = stack::dissect_with(&rec, Start::Erf, &options);
    if let Some(e) = err {
        assert!(e.offset() <= rec.len(), "{e:?}");
        let _ = e.to_string();
    }
    let erf_header = d.erf().expect("a whole ERF header is always read");
    let _ = (
        erf_header.rlen(),
        erf_header.wlen(),
        erf_header.ext_types().count(),
    );
    assert!(usize::from(d.link_header_len) <= rec.len());
    walk(&rec, &d);
    let _ = d.vcrc_status();
    let _ = d.icrc_status();
    if let Some(r) = &d.roce {
        // native RoCE layers follow an LRH, never UDP; Ethernet records carry RoCEv1/v2
        if r.version == RoceVersion::Ib {
            assert!(d.lrh().is_some() && d.udp.is_none());
        }
    }

    if record_type != erf::types::INFINIBAND {
        return;
    }
    let Some((at, lrh)) = d.lrh() else {
        // no LRH: only because the record ended (or lied about its extension headers)
        assert!(err.is_some(), "an IB record without an LRH and no error");
        return;
    };
    assert_eq!(at, ext_end, "the LRH starts after the ERF headers");
    if let Some((end, _)) = d.vcrc() {
        assert_eq!(end, at + lrh.pkt_bytes());
        assert!(end + 2 <= rec.len());
    }

    // the same packet without the ERF header: LINKTYPE_INFINIBAND (compared when the
    // record's lengths are true and nothing trails the packet)
    let lengths_true = input.rlen_delta.unwrap_or(0) == 0
        && input.wlen_delta.unwrap_or(0) == 0
        && input.trailer.is_empty();
    if !lengths_true {
        return;
    }
    let (d2, err2) = stack::dissect_with(&pkt, Start::Infiniband, &options);
    walk(&pkt, &d2);
    let (at2, lrh2) = d2.lrh().expect("the LRH at byte 0");
    assert_eq!(at2, 0);
    assert_eq!(lrh2.into_inner(), lrh.into_inner());
    assert_eq!(d2.vcrc().map(|(e, v)| (e + ext_end, v)), d.vcrc());
    assert_eq!(d2.vcrc_status(), d.vcrc_status());
    assert_eq!(d2.roce.is_some(), d.roce.is_some());
    if let (Some(a), Some(b)) = (&d2.roce, &d.roce) {
        assert_eq!(a.bth, b.bth);
        assert_eq!(a.bth_offset + ext_end, b.bth_offset);
        assert_eq!(a.icrc, b.icrc);
        assert_eq!(a.icrc_status(), b.icrc_status());
    }
    assert_eq!(err2.map(|e| e.rebased(ext_end)), err);

    // a well-formed local or global packet with a table opcode decodes its BTH
    let bth_ok = input.body.len() >= 11;
    let routed = match lnh {
        NextHeader::IbaLocal => true,
        NextHeader::IbaGlobal => input.grh_next == 0x1B,
        _ => false,
    };
    if well_formed && bth_ok && routed {
        let r = d.roce.as_ref().expect("a BTH after a well-formed LRH");
        assert_eq!(r.bth.opcode().0, input.opcode);
        assert_eq!(r.version, RoceVersion::Ib);
    }
});
