//! The field tree of a dissected frame: one walk that names every field
//! (with the JSON keys of interfaces.md §4), gives its value and the bytes it
//! came from. `dissect -f verbose`, JSONL, display filters and the
//! inspector's detail pane are all [`Visitor`]s of it, so a field is named in
//! exactly one place. The walk allocates nothing.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::Range;

use crate::ethernet::Address;
use crate::ib::aeth::{self, AethKind};
use crate::ib::opcode::ExtHeader;
use crate::icrc::IcrcStatus;
use crate::mac_control::MacControlOpcode;
use crate::stack::{Dissected, Network, Roce};

/// A field's value. Integers are JSON numbers whatever their display base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Shown in decimal.
    Uint(u64),
    /// Shown in hex with at least this many digits.
    Hex(u64, u8),
    Bool(bool),
    Str(&'a str),
    Mac(Address),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    /// JSON `null` (a value that cannot be known, like an unverifiable ICRC).
    Null,
}

impl Value<'_> {
    /// The integer behind a numeric or boolean value.
    #[must_use]
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Uint(v) | Value::Hex(v, _) => Some(v),
            Value::Bool(b) => Some(u64::from(b)),
            _ => None,
        }
    }
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Uint(v) => write!(f, "{v}"),
            Value::Hex(v, digits) => write!(f, "{v:#0width$x}", width = usize::from(digits) + 2),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => f.write_str(s),
            Value::Mac(a) => write!(f, "{a}"),
            Value::Ipv4(a) => write!(f, "{a}"),
            Value::Ipv6(a) => write!(f, "{a}"),
            Value::Null => f.write_str("null"),
        }
    }
}

/// Receives the field tree. Layers and list items nest; a field inside a
/// list has an empty key.
pub trait Visitor {
    /// A layer (JSON object) opens: `key` is its JSON key, `title` what a person reads.
    fn begin(&mut self, key: &'static str, title: &'static str, range: Range<usize>);
    fn end(&mut self);
    /// A list (JSON array) opens; its items are layers or fields with key "".
    fn begin_list(&mut self, key: &'static str, title: &'static str, range: Range<usize>);
    fn end_list(&mut self);
    /// One field: JSON key, human label, value, bytes of the frame it lives in.
    fn field(
        &mut self,
        key: &'static str,
        label: &'static str,
        value: Value<'_>,
        range: Range<usize>,
    );
}

/// Walk every decoded field of `d` in wire order, then `payload_len` and `icrc`.
pub fn visit(d: &Dissected<'_>, v: &mut impl Visitor) {
    let frame_len = d.frame.len();
    let at = |from: usize, len: usize| from.min(frame_len)..(from + len).min(frame_len);
    if let Some(eth) = &d.eth {
        v.begin("eth", "Ethernet II", at(0, d.network_offset));
        v.field("src", "Source", Value::Mac(eth.src_addr()), at(6, 6));
        v.field("dst", "Destination", Value::Mac(eth.dst_addr()), at(0, 6));
        if let Some(t) = d.ethertype {
            v.field(
                "type",
                "Type",
                Value::Hex(u64::from(t.0), 4),
                at(d.network_offset.saturating_sub(2), 2),
            );
        }
        if d.vlans().next().is_some() {
            v.begin_list(
                "vlan",
                "802.1Q Virtual LAN",
                at(12, d.network_offset.saturating_sub(12)),
            );
            for tag in d.vlans() {
                let o = tag.offset;
                v.begin("", "802.1Q tag", at(o, 6));
                v.field(
                    "tpid",
                    "TPID",
                    Value::Hex(u64::from(tag.tpid.0), 4),
                    at(o, 2),
                );
                v.field(
                    "pcp",
                    "Priority",
                    Value::Uint(u64::from(tag.header.pcp())),
                    at(o + 2, 1),
                );
                v.field("dei", "DEI", Value::Bool(tag.header.dei()), at(o + 2, 1));
                v.field(
                    "vid",
                    "ID",
                    Value::Uint(u64::from(tag.header.vid().value())),
                    at(o + 2, 2),
                );
                v.end();
            }
            v.end_list();
        }
        v.end();
    }
    let n = d.network_offset;
    match &d.network {
        Some(Network::MacControl(p)) => mac_control(p, n, v, &at),
        Some(Network::Ipv4(ip)) => {
            v.begin(
                "ipv4",
                "Internet Protocol Version 4",
                at(n, usize::from(ip.header_len())),
            );
            v.field(
                "src",
                "Source Address",
                Value::Ipv4(ip.src_addr()),
                at(n + 12, 4),
            );
            v.field(
                "dst",
                "Destination Address",
                Value::Ipv4(ip.dst_addr()),
                at(n + 16, 4),
            );
            v.field(
                "dscp",
                "Differentiated Services Codepoint",
                Value::Uint(u64::from(ip.dscp())),
                at(n + 1, 1),
            );
            v.field(
                "ecn",
                "Explicit Congestion Notification",
                Value::Uint(u64::from(ip.ecn())),
                at(n + 1, 1),
            );
            v.field(
                "ttl",
                "Time to Live",
                Value::Uint(u64::from(ip.hop_limit())),
                at(n + 8, 1),
            );
            v.field(
                "id",
                "Identification",
                Value::Hex(u64::from(ip.ident()), 4),
                at(n + 4, 2),
            );
            v.field(
                "len",
                "Total Length",
                Value::Uint(u64::from(ip.total_len())),
                at(n + 2, 2),
            );
            v.field(
                "proto",
                "Protocol",
                Value::Uint(u64::from(ip.next_header().0)),
                at(n + 9, 1),
            );
            v.end();
        }
        Some(Network::Ipv6(ip)) => {
            v.begin("ipv6", "Internet Protocol Version 6", at(n, 40));
            v.field(
                "src",
                "Source Address",
                Value::Ipv6(ip.src_addr()),
                at(n + 8, 16),
            );
            v.field(
                "dst",
                "Destination Address",
                Value::Ipv6(ip.dst_addr()),
                at(n + 24, 16),
            );
            v.field(
                "dscp",
                "Differentiated Services Codepoint",
                Value::Uint(u64::from(ip.dscp())),
                at(n, 2),
            );
            v.field(
                "ecn",
                "Explicit Congestion Notification",
                Value::Uint(u64::from(ip.ecn())),
                at(n + 1, 1),
            );
            v.field(
                "flow_label",
                "Flow Label",
                Value::Hex(u64::from(ip.flow_label()), 5),
                at(n + 1, 3),
            );
            v.field(
                "hop_limit",
                "Hop Limit",
                Value::Uint(u64::from(ip.hop_limit())),
                at(n + 7, 1),
            );
            v.field(
                "len",
                "Payload Length",
                Value::Uint(u64::from(ip.payload_len())),
                at(n + 4, 2),
            );
            v.field(
                "next",
                "Next Header",
                Value::Uint(u64::from(ip.next_header().0)),
                at(n + 6, 1),
            );
            v.end();
        }
        Some(Network::Grh(g)) => {
            v.begin("grh", "Global Route Header", at(n, 40));
            v.field("sgid", "Source GID", Value::Ipv6(g.sgid()), at(n + 8, 16));
            v.field(
                "dgid",
                "Destination GID",
                Value::Ipv6(g.dgid()),
                at(n + 24, 16),
            );
            v.field(
                "tclass",
                "Traffic Class",
                Value::Uint(u64::from(g.tclass())),
                at(n, 2),
            );
            v.field(
                "flow_label",
                "Flow Label",
                Value::Hex(u64::from(g.flow_label()), 5),
                at(n + 1, 3),
            );
            v.field(
                "hop_limit",
                "Hop Limit",
                Value::Uint(u64::from(g.hop_limit())),
                at(n + 7, 1),
            );
            v.field(
                "next",
                "Next Header",
                Value::Hex(u64::from(g.next_header()), 2),
                at(n + 6, 1),
            );
            v.end();
        }
        None => {}
    }
    if let Some(udp) = &d.udp {
        let u = d.udp_offset;
        v.begin("udp", "User Datagram Protocol", at(u, 8));
        v.field(
            "srcport",
            "Source Port",
            Value::Uint(u64::from(udp.src_port())),
            at(u, 2),
        );
        v.field(
            "dstport",
            "Destination Port",
            Value::Uint(u64::from(udp.dst_port())),
            at(u + 2, 2),
        );
        v.field(
            "len",
            "Length",
            Value::Uint(u64::from(udp.len())),
            at(u + 4, 2),
        );
        v.end();
    }
    if let Some(tcp) = &d.tcp {
        tcp_fields(d, tcp, v, &at);
    }
    if let Some(roce) = &d.roce {
        transport(roce, v, &at);
    }
}

fn tcp_fields(
    d: &Dissected<'_>,
    tcp: &crate::tcp::Packet<&[u8]>,
    v: &mut impl Visitor,
    at: &impl Fn(usize, usize) -> Range<usize>,
) {
    let t = d.tcp_offset;
    v.begin(
        "tcp",
        "Transmission Control Protocol",
        at(t, tcp.header_len()),
    );
    v.field(
        "srcport",
        "Source Port",
        Value::Uint(u64::from(tcp.src_port())),
        at(t, 2),
    );
    v.field(
        "dstport",
        "Destination Port",
        Value::Uint(u64::from(tcp.dst_port())),
        at(t + 2, 2),
    );
    v.field(
        "seq",
        "Sequence Number",
        Value::Uint(u64::from(tcp.seq_number())),
        at(t + 4, 4),
    );
    v.field(
        "ack",
        "Acknowledgment Number",
        Value::Uint(u64::from(tcp.ack_number())),
        at(t + 8, 4),
    );
    v.field(
        "flags",
        "Flags",
        Value::Hex(u64::from(tcp.flags().0), 3),
        at(t + 12, 2),
    );
    v.field(
        "window",
        "Window",
        Value::Uint(u64::from(tcp.window_len())),
        at(t + 14, 2),
    );
    let mut opt_at = crate::tcp::HEADER_LEN;
    let mut it = tcp.options();
    while let Some(opt) = it.next() {
        if let Ok(crate::tcp::TcpOption::Timestamps { tsval, tsecr }) = opt {
            let o = t + opt_at;
            v.field(
                "ts_val",
                "Timestamp Value",
                Value::Uint(u64::from(tsval)),
                at(o + 2, 4),
            );
            v.field(
                "ts_ecr",
                "Timestamp Echo Reply",
                Value::Uint(u64::from(tsecr)),
                at(o + 6, 4),
            );
            break;
        }
        opt_at = crate::tcp::HEADER_LEN + tcp.options_bytes().len() - it.remaining();
    }
    v.end();
    if let Some(bth) = d.tcp_bth() {
        tcp_bth_fields(&bth, v, at);
    }
    let payload_at = t + tcp.header_len();
    v.field(
        "payload_len",
        "Payload Length",
        Value::Uint(d.tcp_payload_len() as u64),
        at(payload_at, tcp.payload().len()),
    );
}

fn tcp_bth_fields(
    bth: &crate::stack::TcpBth<'_>,
    v: &mut impl Visitor,
    at: &impl Fn(usize, usize) -> Range<usize>,
) {
    use crate::tcp_bth::{Format, IcrcAlgorithm};
    let h = &bth.header;
    let o = bth.offset;
    let Some(format) = h.format() else {
        return;
    };
    v.begin(
        "tcp_bth",
        "tcp_bth RDMA Framing Option",
        at(o, format.len()),
    );
    v.field("format", "Format", Value::Str(format.name()), at(o + 1, 1));
    v.field(
        "exid",
        "Experiment ID",
        Value::Hex(u64::from(h.exid()), 4),
        at(o + 2, 2),
    );
    if format != Format::Syn {
        v.field(
            "opcode",
            "Opcode",
            Value::Uint(u64::from(h.opcode().0)),
            at(o + 5, 1),
        );
        let mut name = OpcodeName::default();
        v.field(
            "opcode_name",
            "Opcode Name",
            Value::Str(name.of(h.opcode())),
            at(o + 5, 1),
        );
        v.field(
            "msn",
            "Message Sequence Number",
            Value::Uint(u64::from(h.msn())),
            at(o + 6, 2),
        );
        v.field(
            "mbo",
            "Message Byte Offset",
            Value::Uint(u64::from(h.mbo())),
            at(o + 8, 3),
        );
        v.field(
            "seg",
            "Segment",
            Value::Uint(u64::from(h.seg())),
            at(o + 11, 1),
        );
        v.field("more", "More Segments", Value::Bool(h.more()), at(o + 4, 1));
        if format == Format::V1 {
            v.field(
                "imm",
                "Immediate Data",
                Value::Hex(u64::from(h.imm()), 8),
                at(o + 16, 4),
            );
            v.field(
                "mlen",
                "Message Length",
                Value::Uint(u64::from(h.mlen())),
                at(o + 20, 4),
            );
        }
        v.field(
            "icrc",
            "ICRC",
            Value::Hex(u64::from(h.icrc()), 8),
            at(o + 12, 4),
        );
        let valid = match bth.icrc_status(IcrcAlgorithm::Crc32Ieee) {
            IcrcStatus::Valid => Value::Bool(true),
            IcrcStatus::Invalid { .. } => Value::Bool(false),
            IcrcStatus::NotVerifiable => Value::Null,
        };
        v.field("icrc_valid", "ICRC Valid", valid, at(o + 12, 4));
    }
    v.end();
}

fn mac_control(
    p: &crate::mac_control::Packet<&[u8]>,
    n: usize,
    v: &mut impl Visitor,
    at: &impl Fn(usize, usize) -> Range<usize>,
) {
    match p.opcode() {
        MacControlOpcode::PAUSE => {
            v.begin("pause", "MAC Control PAUSE", at(n, 4));
            v.field(
                "quanta",
                "Pause Time",
                Value::Uint(u64::from(p.pause_quanta())),
                at(n + 2, 2),
            );
            v.end();
        }
        MacControlOpcode::PFC => {
            v.begin("pfc", "MAC Control Priority Flow Control", at(n, 20));
            v.field(
                "enable",
                "Priority Enable Vector",
                Value::Hex(u64::from(p.pfc_enable()), 4),
                at(n + 2, 2),
            );
            v.begin_list("quanta", "Pause Quanta", at(n + 4, 16));
            for (i, q) in p.pfc_quanta_all().iter().enumerate() {
                v.field(
                    "",
                    PRIORITY_LABELS[i],
                    Value::Uint(u64::from(*q)),
                    at(n + 4 + 2 * i, 2),
                );
            }
            v.end_list();
            v.end();
        }
        other => {
            v.begin("macc", "MAC Control", at(n, 2));
            v.field(
                "opcode",
                "Opcode",
                Value::Hex(u64::from(other.0), 4),
                at(n, 2),
            );
            v.end();
        }
    }
}

const PRIORITY_LABELS: [&str; 8] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];

fn transport(roce: &Roce<'_>, v: &mut impl Visitor, at: &impl Fn(usize, usize) -> Range<usize>) {
    let b = roce.bth_offset;
    let h = &roce.bth;
    v.begin("bth", "Base Transport Header", at(b, 12));
    v.field(
        "opcode",
        "Opcode",
        Value::Uint(u64::from(h.opcode().0)),
        at(b, 1),
    );
    let mut name = OpcodeName::default();
    v.field(
        "opcode_name",
        "Opcode Name",
        Value::Str(name.of(h.opcode())),
        at(b, 1),
    );
    v.field(
        "se",
        "Solicited Event",
        Value::Bool(h.solicited_event()),
        at(b + 1, 1),
    );
    v.field("m", "MigReq", Value::Bool(h.mig_req()), at(b + 1, 1));
    v.field(
        "padcnt",
        "Pad Count",
        Value::Uint(u64::from(h.pad_count())),
        at(b + 1, 1),
    );
    v.field(
        "tver",
        "Transport Header Version",
        Value::Uint(u64::from(h.tver())),
        at(b + 1, 1),
    );
    v.field(
        "pkey",
        "Partition Key",
        Value::Hex(u64::from(h.pkey()), 4),
        at(b + 2, 2),
    );
    v.field("fecn", "FECN", Value::Bool(h.fecn()), at(b + 4, 1));
    v.field("becn", "BECN", Value::Bool(h.becn()), at(b + 4, 1));
    v.field(
        "destqp",
        "Destination Queue Pair",
        Value::Hex(u64::from(h.dest_qp().value()), 6),
        at(b + 5, 3),
    );
    v.field(
        "ackreq",
        "Acknowledge Request",
        Value::Bool(h.ack_req()),
        at(b + 8, 1),
    );
    v.field(
        "psn",
        "Packet Sequence Number",
        Value::Uint(u64::from(h.psn().value())),
        at(b + 9, 3),
    );
    v.end();
    for &ext in roce.exts.list() {
        let Some((range, _)) = roce.exts.locate(ext) else {
            break; // cut short: the rest is not in the capture
        };
        let o = range.start;
        match ext {
            ExtHeader::Rdeth => {
                if let Some(x) = roce.exts.rdeth() {
                    v.begin(
                        "rdeth",
                        "Reliable Datagram Extended Transport Header",
                        range,
                    );
                    v.field(
                        "eecnxt",
                        "EE Context",
                        Value::Hex(u64::from(x.ee_context()), 6),
                        at(o + 1, 3),
                    );
                    v.end();
                }
            }
            ExtHeader::Deth => {
                if let Some(x) = roce.exts.deth() {
                    v.begin("deth", "Datagram Extended Transport Header", range);
                    v.field(
                        "qkey",
                        "Queue Key",
                        Value::Hex(u64::from(x.qkey()), 8),
                        at(o, 4),
                    );
                    v.field(
                        "srcqp",
                        "Source Queue Pair",
                        Value::Hex(u64::from(x.src_qp().value()), 6),
                        at(o + 5, 3),
                    );
                    v.end();
                }
            }
            ExtHeader::XrcEth => {
                if let Some(x) = roce.exts.xrceth() {
                    v.begin("xrceth", "XRC Extended Transport Header", range);
                    v.field(
                        "srqn",
                        "XRC SRQ Number",
                        Value::Hex(u64::from(x.xrc_srqn()), 6),
                        at(o + 1, 3),
                    );
                    v.end();
                }
            }
            ExtHeader::Reth => {
                if let Some(x) = roce.exts.reth() {
                    v.begin("reth", "RDMA Extended Transport Header", range);
                    v.field("va", "Virtual Address", Value::Hex(x.va(), 16), at(o, 8));
                    v.field(
                        "rkey",
                        "Remote Key",
                        Value::Hex(u64::from(x.rkey()), 8),
                        at(o + 8, 4),
                    );
                    v.field(
                        "dmalen",
                        "DMA Length",
                        Value::Uint(u64::from(x.dma_len())),
                        at(o + 12, 4),
                    );
                    v.end();
                }
            }
            ExtHeader::AtomicEth => {
                if let Some(x) = roce.exts.atomic_eth() {
                    v.begin("atomiceth", "Atomic Extended Transport Header", range);
                    v.field("va", "Virtual Address", Value::Hex(x.va(), 16), at(o, 8));
                    v.field(
                        "rkey",
                        "Remote Key",
                        Value::Hex(u64::from(x.rkey()), 8),
                        at(o + 8, 4),
                    );
                    v.field(
                        "swap_add",
                        "Swap (or Add) Data",
                        Value::Hex(x.swap_add(), 16),
                        at(o + 12, 8),
                    );
                    v.field(
                        "compare",
                        "Compare Data",
                        Value::Hex(x.compare(), 16),
                        at(o + 20, 8),
                    );
                    v.end();
                }
            }
            ExtHeader::Aeth => {
                if let Some(x) = roce.exts.aeth() {
                    v.begin("aeth", "ACK Extended Transport Header", range);
                    let syndrome = x.syndrome();
                    v.field(
                        "syndrome",
                        "Syndrome",
                        Value::Hex(u64::from(syndrome.0), 2),
                        at(o, 1),
                    );
                    let kind = syndrome.kind();
                    v.field("kind", "Kind", Value::Str(kind.name()), at(o, 1));
                    match kind {
                        AethKind::Ack { credit_code } => {
                            v.field(
                                "credit",
                                "Credit Code",
                                Value::Uint(u64::from(credit_code)),
                                at(o, 1),
                            );
                        }
                        AethKind::RnrNak { timer_code } => {
                            let us = aeth::rnr_timer_us(timer_code);
                            v.field(
                                "timer_us",
                                "RNR Timer (us)",
                                Value::Uint(u64::from(us)),
                                at(o, 1),
                            );
                        }
                        AethKind::Nak(code) => {
                            v.field(
                                "nak_code",
                                "NAK Code",
                                Value::Uint(u64::from(code.0)),
                                at(o, 1),
                            );
                        }
                        AethKind::Reserved => {}
                    }
                    v.field(
                        "msn",
                        "Message Sequence Number",
                        Value::Uint(u64::from(x.msn())),
                        at(o + 1, 3),
                    );
                    v.end();
                }
            }
            ExtHeader::AtomicAckEth => {
                if let Some(x) = roce.exts.atomic_ack_eth() {
                    v.begin(
                        "atomicacketh",
                        "Atomic ACK Extended Transport Header",
                        range,
                    );
                    v.field(
                        "orig",
                        "Original Remote Data",
                        Value::Hex(x.orig_remote_data(), 16),
                        at(o, 8),
                    );
                    v.end();
                }
            }
            ExtHeader::ImmDt => {
                if let Some(x) = roce.exts.immdt() {
                    v.field(
                        "immdt",
                        "Immediate Data",
                        Value::Hex(u64::from(x.imm_data()), 8),
                        range,
                    );
                }
            }
            ExtHeader::Ieth => {
                if let Some(x) = roce.exts.ieth() {
                    v.field(
                        "ieth",
                        "Invalidate R_Key",
                        Value::Hex(u64::from(x.rkey()), 8),
                        range,
                    );
                }
            }
            ExtHeader::Feth => {
                if let Some(x) = roce.exts.feth() {
                    v.begin("feth", "Flush Extended Transport Header", range);
                    v.field(
                        "plt",
                        "Placement Type",
                        Value::Uint(u64::from(x.placement_type())),
                        at(o + 3, 1),
                    );
                    v.field(
                        "sel",
                        "Selectivity Level",
                        Value::Uint(u64::from(x.selectivity_level())),
                        at(o + 3, 1),
                    );
                    v.end();
                }
            }
            ExtHeader::CnpPad => {
                v.begin("cnp", "Congestion Notification Packet", range);
                v.end();
            }
        }
    }
    let payload_range = at(roce.payload_offset, roce.payload.len());
    if let Some(cm) = roce.cm() {
        cm_fields(&cm, v, payload_range.clone());
    }
    v.field(
        "payload_len",
        "Payload Length",
        Value::Uint(roce.payload_len as u64),
        payload_range,
    );
    let icrc_at = at(roce.payload_offset + roce.payload_len + roce.pad.len(), 4);
    v.begin("icrc", "Invariant CRC", icrc_at.clone());
    match roce.icrc_status() {
        IcrcStatus::Valid => {
            let value = roce
                .icrc_value()
                .map_or(Value::Null, |x| Value::Hex(u64::from(x), 8));
            v.field("value", "ICRC", value, icrc_at.clone());
            v.field("computed", "Computed ICRC", value, icrc_at.clone());
            v.field("valid", "Valid", Value::Bool(true), icrc_at);
        }
        IcrcStatus::Invalid { expected, found } => {
            v.field(
                "value",
                "ICRC",
                Value::Hex(u64::from(found), 8),
                icrc_at.clone(),
            );
            v.field(
                "computed",
                "Computed ICRC",
                Value::Hex(u64::from(expected), 8),
                icrc_at.clone(),
            );
            v.field("valid", "Valid", Value::Bool(false), icrc_at);
        }
        IcrcStatus::NotVerifiable => {
            v.field("value", "ICRC", Value::Null, icrc_at.clone());
            v.field("computed", "Computed ICRC", Value::Null, icrc_at.clone());
            v.field("valid", "Valid", Value::Null, icrc_at);
        }
    }
    v.end();
}

fn cm_fields(cm: &crate::cm::CmMessage, v: &mut impl Visitor, range: Range<usize>) {
    let r = || range.clone();
    v.begin("cm", "Communication Management", r());
    let attr = cm.attribute;
    v.field(
        "attribute",
        "Attribute",
        Value::Str(attr.name().unwrap_or("UNKNOWN")),
        r(),
    );
    v.field(
        "attribute_id",
        "Attribute ID",
        Value::Hex(u64::from(attr.0), 4),
        r(),
    );
    v.field(
        "transaction_id",
        "Transaction ID",
        Value::Hex(cm.transaction_id, 16),
        r(),
    );
    v.field(
        "local_comm_id",
        "Local Communication ID",
        Value::Hex(u64::from(cm.local_comm_id), 8),
        r(),
    );
    v.field(
        "remote_comm_id",
        "Remote Communication ID",
        Value::Hex(u64::from(cm.remote_comm_id), 8),
        r(),
    );
    let opt = |x: Option<u64>, hex: u8| match (x, hex) {
        (Some(x), 0) => Some(Value::Uint(x)),
        (Some(x), d) => Some(Value::Hex(x, d)),
        (None, _) => None,
    };
    let fields: [(&'static str, &'static str, Option<Value<'_>>); 10] = [
        (
            "local_qpn",
            "Local QPN",
            opt(cm.local_qpn.map(|q| u64::from(q.value())), 6),
        ),
        (
            "remote_qpn",
            "Remote QPN",
            opt(cm.remote_qpn.map(|q| u64::from(q.value())), 6),
        ),
        (
            "starting_psn",
            "Starting PSN",
            opt(cm.starting_psn.map(|p| u64::from(p.value())), 0),
        ),
        ("path_mtu", "Path MTU", opt(cm.path_mtu.map(u64::from), 0)),
        ("service_id", "Service ID", opt(cm.service_id, 16)),
        ("pkey", "Partition Key", opt(cm.pkey.map(u64::from), 4)),
        (
            "retry_count",
            "Retry Count",
            opt(cm.retry_count.map(u64::from), 0),
        ),
        (
            "rnr_retry_count",
            "RNR Retry Count",
            opt(cm.rnr_retry_count.map(u64::from), 0),
        ),
        (
            "responder_resources",
            "Responder Resources",
            opt(cm.responder_resources.map(u64::from), 0),
        ),
        (
            "reject_reason",
            "Reject Reason",
            opt(cm.reject_reason.map(u64::from), 0),
        ),
    ];
    for (key, label, value) in fields {
        if let Some(value) = value {
            v.field(key, label, value, r());
        }
    }
    v.end();
}

/// Formats unknown opcodes as `UNKNOWN(0xNN)` without allocating.
#[derive(Default)]
struct OpcodeName {
    buf: [u8; 13],
}

impl OpcodeName {
    fn of(&mut self, opcode: crate::Opcode) -> &str {
        if let Some(name) = opcode.name() {
            return name;
        }
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.buf = *b"UNKNOWN(0x00)";
        self.buf[10] = HEX[usize::from(opcode.0 >> 4)];
        self.buf[11] = HEX[usize::from(opcode.0 & 0xF)];
        core::str::from_utf8(&self.buf).unwrap_or("UNKNOWN")
    }
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
