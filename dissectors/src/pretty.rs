//! The field tree of a dissected frame: [`visit`] walks its layers in wire order, each
//! header rendering its own fields (`visit_fields`, built on its `mod field`), then
//! `payload_len` and `icrc`. The vocabulary ([`Visitor`], [`Value`]) is in
//! [`crate::visit`]; [`TreeWriter`] is the visitor behind `dissect -f verbose`. The walk
//! allocates nothing.

// Indexing cannot panic here: hex dumps index 16-byte rows cut with `min(len)`; tables are indexed
// by a nibble.
#![allow(clippy::indexing_slicing)]

use core::fmt;
use core::ops::Range;

use crate::ib::opcode::ExtHeader;
use crate::icrc::IcrcStatus;
use crate::stack::{Dissected, Network, Roce};
pub use crate::visit::{Value, Visitor};

/// Walk every decoded field of `d` in wire order, then `payload_len` and `icrc`.
pub fn visit(d: &Dissected<'_>, v: &mut impl Visitor) {
    let frame_len = d.frame.len();
    let at = |from: usize, len: usize| from.min(frame_len)..(from + len).min(frame_len);
    if let Some(erf) = d.erf() {
        v.begin(
            "erf",
            "Extensible Record Format",
            at(0, usize::from(d.link_header_len)),
        );
        erf.visit_fields(0, v);
        v.end();
    }
    if let Some(h) = d.ipoib() {
        let o = crate::ipoib::PSEUDO_LEN;
        h.visit(at(o, crate::ipoib::HEADER_LEN), v);
    }
    if let Some((o, lrh)) = d.lrh() {
        v.begin(
            "lrh",
            "Local Route Header",
            at(o, crate::ib::lrh::HEADER_LEN),
        );
        lrh.visit_fields(o, v);
        v.end();
    }
    if d.is_encapsulated() {
        outer(d, v);
    }
    if let Some(eth) = &d.eth {
        // after an ERF record header or an encapsulation, not always at byte 0
        let e = usize::from(d.eth_at);
        v.begin(
            "eth",
            "Ethernet II",
            at(e, d.network_offset.saturating_sub(e)),
        );
        eth.visit_fields(e, v);
        if let Some(t) = d.ethertype {
            let type_at = at(d.network_offset.saturating_sub(2), 2);
            v.field("type", "Type", Value::Hex(u64::from(t.0), 4), type_at);
        }
        if d.vlans().next().is_some() {
            let tags_at = at(e + 12, d.network_offset.saturating_sub(e + 12));
            v.begin_list("vlan", "802.1Q Virtual LAN", tags_at);
            for tag in d.vlans() {
                let o = tag.offset;
                v.begin("", "802.1Q tag", at(o, 6));
                v.field(
                    "tpid",
                    "TPID",
                    Value::Hex(u64::from(tag.tpid.0), 4),
                    at(o, 2),
                );
                tag.header.visit_fields(o + 2, v);
                v.end();
            }
            v.end_list();
        }
        v.end();
    }
    let n = d.network_offset;
    match &d.network {
        Some(Network::MacControl(p)) => p.visit(n, v),
        Some(Network::Ipv4(ip)) => {
            let title = "Internet Protocol Version 4";
            v.begin("ipv4", title, at(n, usize::from(ip.header_len())));
            ip.visit_fields(n, v);
            v.end();
        }
        Some(Network::Ipv6(ip)) => {
            v.begin("ipv6", "Internet Protocol Version 6", at(n, 40));
            ip.visit_fields(n, v);
            v.end();
        }
        Some(Network::Grh(g)) => {
            v.begin("grh", "Global Route Header", at(n, 40));
            g.visit_fields(n, v);
            v.end();
        }
        None => {}
    }
    if let Some(udp) = &d.udp {
        let u = d.udp_offset;
        v.begin("udp", "User Datagram Protocol", at(u, 8));
        udp.visit_fields(u, v);
        v.end();
    }
    if let Some(tcp) = &d.tcp {
        let t = d.tcp_offset;
        let title = "Transmission Control Protocol";
        v.begin("tcp", title, at(t, tcp.header_len()));
        tcp.visit_fields(t, v);
        v.end();
        if let Some(bth) = d.tcp_bth() {
            let icrc = bth.icrc_status(crate::tcp_bth::IcrcAlgorithm::Crc32Ieee);
            bth.header.visit(bth.offset, icrc, v);
        }
        let payload_at = t + tcp.header_len();
        let len = Value::Uint(d.tcp_payload_len() as u64);
        let range = at(payload_at, tcp.payload().len());
        v.field("payload_len", "Payload Length", len, range);
    }
    if let Some(roce) = &d.roce {
        transport(roce, v, &at);
    }
    if let Some((o, wire)) = d.vcrc() {
        vcrc(d, at(o, 2), wire, v);
    }
}

/// A native packet's VCRC: the value (wire bytes little-endian, how the CRC is stored; the
/// filter's `infiniband.variant.crc` swaps it to tshark's wire order), the computed value
/// and the verdict.
fn vcrc(d: &Dissected<'_>, range: Range<usize>, wire: [u8; 2], v: &mut impl Visitor) {
    v.begin("vcrc", "Variant CRC", range.clone());
    let value = u64::from(u16::from_le_bytes(wire));
    v.field("value", "VCRC", Value::Hex(value, 4), range.clone());
    let (computed, valid) = match d.vcrc_status() {
        IcrcStatus::Valid => (Value::Hex(value, 4), Value::Bool(true)),
        IcrcStatus::Invalid { expected, .. } => {
            (Value::Hex(u64::from(expected), 4), Value::Bool(false))
        }
        IcrcStatus::NotVerifiable => (Value::Null, Value::Null),
    };
    v.field("computed", "Computed VCRC", computed, range.clone());
    v.field("valid", "Valid", valid, range);
    v.end();
}

/// The layers an encapsulated frame is wrapped in: `outer: [{eth: ..}, {ipv4: ..}, ..]`,
/// outermost first (interfaces.md §4).
fn outer(d: &Dissected<'_>, v: &mut impl Visitor) {
    use crate::encap::{erspan, gre, mpls, vxlan};
    use crate::stack::OuterKind;
    let layers = d.outer_layers();
    let end = layers.iter().last().map_or(0, |l| l.offset + l.bytes.len());
    v.begin_list("outer", "Encapsulation", 0..end);
    for l in layers.iter() {
        let o = l.offset;
        let r = o..o + l.bytes.len();
        v.begin("", "Outer layer", r.clone());
        match l.kind {
            OuterKind::Ethernet => {
                v.begin("eth", "Ethernet II", r);
                let e = crate::ethernet::Frame::new_unchecked(l.bytes);
                e.visit_fields(o, v);
                let t = crate::ethernet::EtherType(u16::from_be_bytes([
                    l.bytes[l.bytes.len() - 2],
                    l.bytes[l.bytes.len() - 1],
                ]));
                v.field(
                    "type",
                    "Type",
                    Value::Hex(u64::from(t.0), 4),
                    o + l.bytes.len() - 2..o + l.bytes.len(),
                );
                v.end();
            }
            OuterKind::Ipv4 => {
                v.begin("ipv4", "Internet Protocol Version 4", r);
                crate::ipv4::Packet::new_unchecked(l.bytes).visit_fields(o, v);
                v.end();
            }
            OuterKind::Ipv6 => {
                v.begin("ipv6", "Internet Protocol Version 6", r);
                crate::ipv6::Packet::new_unchecked(l.bytes).visit_fields(o, v);
                v.end();
            }
            OuterKind::Udp => {
                v.begin("udp", "User Datagram Protocol", r);
                crate::udp::Packet::new_unchecked(l.bytes).visit_fields(o, v);
                v.end();
            }
            OuterKind::Gre => {
                v.begin("gre", "Generic Routing Encapsulation", r);
                gre::Header::new_unchecked(l.bytes).visit_fields(o, v);
                v.end();
            }
            OuterKind::Erspan => {
                v.begin("erspan", "Encapsulated Remote SPAN", r);
                erspan::Header::new_unchecked(l.bytes).visit_fields(o, v);
                v.end();
            }
            OuterKind::Vxlan => {
                v.begin("vxlan", "Virtual eXtensible Local Area Network", r);
                if let Ok(x) = vxlan::Vxlan::new_checked(l.bytes) {
                    x.visit_fields(o, v);
                }
                v.end();
            }
            OuterKind::Geneve => {
                v.begin("geneve", "Generic Network Virtualization Encapsulation", r);
                if let Ok(g) = vxlan::Geneve::new_checked(l.bytes) {
                    g.visit_fields(o, v);
                }
                v.end();
            }
            OuterKind::Mpls => {
                v.begin_list("mpls", "MultiProtocol Label Switching", r);
                for (i, e) in mpls::entries(l.bytes).enumerate() {
                    let eo = o + i * mpls::ENTRY_LEN;
                    v.begin("", "Label stack entry", eo..eo + mpls::ENTRY_LEN);
                    e.visit_fields(eo, v);
                    v.end();
                }
                v.end_list();
            }
        }
        v.end();
    }
    v.end_list();
}

fn transport(roce: &Roce<'_>, v: &mut impl Visitor, at: &impl Fn(usize, usize) -> Range<usize>) {
    let b = roce.bth_offset;
    v.begin("bth", "Base Transport Header", at(b, 12));
    roce.bth.visit_fields_named(b, roce.info.map(|i| i.name), v);
    v.end();
    let exts = &roce.exts;
    for &ext in exts.list() {
        let Some((range, _)) = exts.locate(ext) else {
            break; // cut short: the rest is not in the capture
        };
        let o = range.start;
        match ext {
            ExtHeader::Rdeth => {
                if let Some(x) = exts.rdeth() {
                    v.begin(
                        "rdeth",
                        "Reliable Datagram Extended Transport Header",
                        range,
                    );
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::Deth => {
                if let Some(x) = exts.deth() {
                    v.begin("deth", "Datagram Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::XrcEth => {
                if let Some(x) = exts.xrceth() {
                    v.begin("xrceth", "XRC Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::Reth => {
                if let Some(x) = exts.reth() {
                    v.begin("reth", "RDMA Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::AtomicEth => {
                if let Some(x) = exts.atomic_eth() {
                    v.begin("atomiceth", "Atomic Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::Aeth => {
                if let Some(x) = exts.aeth() {
                    v.begin("aeth", "ACK Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::AtomicAckEth => {
                if let Some(x) = exts.atomic_ack_eth() {
                    v.begin(
                        "atomicacketh",
                        "Atomic ACK Extended Transport Header",
                        range,
                    );
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::Feth => {
                if let Some(x) = exts.feth() {
                    v.begin("feth", "Flush Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            // single values: fields of the transport, not layers
            ExtHeader::ImmDt => {
                if let Some(x) = exts.immdt() {
                    x.visit_fields(o, v);
                }
            }
            ExtHeader::Ieth => {
                if let Some(x) = exts.ieth() {
                    x.visit_fields(o, v);
                }
            }
            ExtHeader::CnpPad => {
                v.begin("cnp", "Congestion Notification Packet", range);
                v.end();
            }
            ExtHeader::Dc => {
                if let Some(x) = exts.dc() {
                    v.begin("dc", "Dynamically Connected Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
            ExtHeader::Dcceth => {
                if let Some(x) = exts.dcceth() {
                    v.begin("dcceth", "DC Connect Extended Transport Header", range);
                    x.visit_fields(o, v);
                    v.end();
                }
            }
        }
    }
    let payload_range = at(roce.payload_offset, roce.payload.len());
    if let Some(h) = roce.ipoib() {
        h.visit(at(roce.payload_offset, crate::ipoib::HEADER_LEN), v);
    }
    if let Some(m) = roce.mad() {
        m.visit_mad(payload_range.clone(), v);
    }
    if let Some(cm) = roce.cm() {
        cm.visit(payload_range.clone(), v);
    }
    let len = Value::Uint(roce.payload_len as u64);
    v.field("payload_len", "Payload Length", len, payload_range);
    let icrc_at = at(roce.payload_offset + roce.payload_len + roce.pad.len(), 4);
    icrc(roce, icrc_at, v);
}

/// The ICRC as received, as computed, and the verdict; nulls where it cannot be checked.
fn icrc(roce: &Roce<'_>, at: Range<usize>, v: &mut impl Visitor) {
    v.begin("icrc", "Invariant CRC", at.clone());
    let (value, computed, valid) = match roce.icrc_status() {
        IcrcStatus::Valid => {
            let value = roce
                .icrc_value()
                .map_or(Value::Null, |x| Value::Hex(u64::from(x), 8));
            (value, value, Value::Bool(true))
        }
        IcrcStatus::Invalid { expected, found } => (
            Value::Hex(u64::from(found), 8),
            Value::Hex(u64::from(expected), 8),
            Value::Bool(false),
        ),
        IcrcStatus::NotVerifiable => (Value::Null, Value::Null, Value::Null),
    };
    v.field("value", "ICRC", value, at.clone());
    v.field("computed", "Computed ICRC", computed, at.clone());
    v.field("valid", "Valid", valid, at);
    v.end();
}

/// A [`Visitor`] that writes the indented tree `dissect -f verbose` shows.
pub struct TreeWriter<W: fmt::Write> {
    out: W,
    depth: usize,
    pub result: fmt::Result,
}

impl<W: fmt::Write> TreeWriter<W> {
    pub fn new(out: W) -> Self {
        TreeWriter {
            out,
            depth: 0,
            result: Ok(()),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, args: fmt::Arguments<'_>) {
        if self.result.is_ok() {
            self.result = (|| {
                for _ in 0..self.depth {
                    self.out.write_str("    ")?;
                }
                self.out.write_fmt(args)?;
                self.out.write_char('\n')
            })();
        }
    }
}

impl<W: fmt::Write> Visitor for TreeWriter<W> {
    fn begin(&mut self, key: &'static str, title: &'static str, range: Range<usize>) {
        if key.is_empty() {
            self.line(format_args!("{title} [{}..{}]", range.start, range.end));
        } else {
            self.line(format_args!(
                "{title} ({key}) [{}..{}]",
                range.start, range.end
            ));
        }
        self.depth += 1;
    }
    fn end(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
    fn begin_list(&mut self, key: &'static str, title: &'static str, range: Range<usize>) {
        self.begin(key, title, range);
    }
    fn end_list(&mut self) {
        self.end();
    }
    fn field(
        &mut self,
        key: &'static str,
        label: &'static str,
        value: Value<'_>,
        _range: Range<usize>,
    ) {
        if key.is_empty() {
            self.line(format_args!("{label}: {value}"));
        } else {
            self.line(format_args!("{label} ({key}): {value}"));
        }
    }
}
